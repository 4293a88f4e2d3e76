"""Forms for researchers: creating a study (from an outputs file and/or an export's test
split) and editing its settings and instructions."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.evaluation.services.studies import EDITABLE
from annotation.models import Study
from annotation.models.pay import pay_form_field

SPLITS = [("test", "test"), ("dev", "dev"), ("train", "train"), ("all", "all (no splits)")]


class StudyForm(forms.Form):
    name = forms.CharField(max_length=200)
    design = forms.ChoiceField(choices=Study.Design.choices, initial=Study.Design.LIKERT)
    outputs_file = forms.FileField(
        required=False, label="System outputs (TSV or JSONL)",
        help_text="TSV with a header: item_id, source, reference…, system, output; or JSONL objects. Every item needs every system.",
    )
    export = forms.TypedChoiceField(coerce=int, required=False, empty_value=None, label="Items from an export",
                                    help_text="Complex side as source, simple side as reference; outputs are matched by item_id (the complex sentence id).")
    split = forms.ChoiceField(choices=SPLITS, initial="test")
    reference_as_system = forms.BooleanField(required=False, label="Rate the reference as a system too")
    raters_per_item = forms.IntegerField(min_value=1, max_value=50, initial=5)
    sample_size = forms.IntegerField(min_value=1, max_value=100000, initial=100, help_text="items drawn at random by the seed")
    seed = forms.IntegerField(min_value=0, initial=0)
    min_seconds = forms.IntegerField(min_value=0, max_value=600, initial=20, label="Minimum seconds per page")
    show_reference = forms.BooleanField(required=False, help_text="always on for the comparative design")
    control_threshold = forms.FloatField(min_value=0, max_value=100, initial=20.0, help_text="slider: a control scored above this fails")
    flag_share = forms.FloatField(min_value=0, max_value=1, initial=0.2, help_text="flag raters failing more than this share of control pages")
    instructions = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 6}),
                                   help_text="empty = the design's instructions with worked examples (editable later)")
    pay_per_judgment = pay_form_field("pay_per_judgment", "paid per rating: one value for one version on one dimension (control ratings included)")
    pay_per_hour = pay_form_field("pay_per_hour", "paid per hour on task, as the server measures it")
    currency = pay_form_field("currency")

    def __init__(self, *args: Any, export_choices: list[tuple[int, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["export"].choices = [("", "— none: the file has sources —"), *(export_choices or [])]  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("outputs_file") and not data.get("export"):
            raise forms.ValidationError("Upload system outputs, choose an export, or both.")
        if not data.get("outputs_file") and not data.get("reference_as_system"):
            raise forms.ValidationError("Without an outputs file, tick “Rate the reference as a system too” (there is nothing else to rate).")
        return data


class StudyEditForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Study
        fields = list(EDITABLE)
        widgets = {"instructions": forms.Textarea(attrs={"rows": 16})}
        help_texts = {"pay_per_judgment": "paid per rating: one value for one version on one dimension (control ratings included)"}
