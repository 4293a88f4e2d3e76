"""The job-creation form (researchers and admins)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms

from accounts.params import ModelChoiceField
from annotation.models import LabelingJob
from annotation.models.pay import pay_form_field
from annotation.services import job_setup
from annotation.services import selection as job_selection
from curation.models import Corpus

GOLD_CHOICES = [
    ("none", "No test questions"),
    ("reference", "Gold sentence alignments imported for this corpus"),
    ("verified", "Labels verified in-house"),
    ("tsv", "Upload a TSV (label, simple id, complex id, explanation)"),
]


class PayForm(forms.Form):
    """A job's pay settings: part of the job form, and on its own on the job page (the cost ledger recounts with them)."""

    pay_per_judgment = pay_form_field("pay_per_judgment", "paid per answer (test questions included)")
    pay_per_hour = pay_form_field("pay_per_hour", "paid per hour on task, as the server measures it")
    currency = pay_form_field("currency")


class JobForm(PayForm):
    name = forms.CharField(max_length=200)
    corpus = ModelChoiceField(queryset=Corpus.objects.order_by("name"), empty_label=None)
    strategy = forms.ChoiceField(choices=LabelingJob.Strategy.choices, initial=LabelingJob.Strategy.PARAGRAPH)
    top_k = forms.IntegerField(min_value=1, max_value=10, initial=3, label="Top k (Wikipedia strategy)")
    pair_ids = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Document pair ids, one per line or comma-separated; empty = every pair of the corpus.",
    )
    selection = forms.ChoiceField(choices=job_selection.SELECTION_CHOICES, initial=job_selection.ALL, required=False,
                                  label="Pairs to label",
                                  help_text="Uncertainty strategies use the promoted CRF model of the corpus's language.")
    budget = forms.IntegerField(min_value=1, required=False, label="How many pairs (sample or uncertainty)")
    per_document = forms.IntegerField(min_value=1, required=False, label="At most this many per document pair",
                                      help_text="empty = 3 x budget / document pairs (diversity)")
    random_share = forms.FloatField(min_value=0, max_value=1, required=False, label="Share drawn at random (uncertainty)",
                                    help_text="0-1: this share of the pairs is a random sample, the rest the most "
                                              "uncertain (a mixed batch); empty = 0")
    skip_verified = forms.BooleanField(required=False, initial=True, label="Leave out pairs already verified",
                                       help_text="candidate pairs with a verified label are not labelled again")
    second_version = forms.TypedChoiceField(coerce=int, required=False, empty_value=None, choices=[],
                                            label="Second model version (disagreement of two versions)")
    judgments_per_pair = forms.IntegerField(min_value=1, max_value=50, initial=5)
    test_question_every = forms.IntegerField(
        min_value=0, max_value=50, initial=5, label="Test-question rate 1 in",
        help_text="each question is a test with probability 1/N (N is also the page size); 0 = no test questions"
    )
    min_seconds = forms.IntegerField(min_value=0, max_value=600, initial=10, label="Minimum seconds per question")
    accuracy_threshold = forms.FloatField(min_value=0, max_value=1, initial=0.85)
    min_test_questions = forms.IntegerField(min_value=1, max_value=100, initial=4, label="Test answers before the threshold applies")
    reservation_minutes = forms.IntegerField(min_value=1, max_value=240, initial=15)
    gold_source = forms.ChoiceField(choices=GOLD_CHOICES, initial="reference", label="Test questions from")
    gold_file = forms.FileField(required=False, label="Gold TSV")
    max_tests = forms.IntegerField(min_value=0, max_value=5000, initial=50, label="At most this many test questions")
    instructions = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), label="Extra instructions")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["second_version"].choices = [("", "—"), *job_selection.model_choices()]  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("gold_source") == "tsv" and not data.get("gold_file"):
            self.add_error("gold_file", "Choose a TSV file, or another source of test questions.")
        if not any(self.errors.get(f) for f in ("budget", "per_document", "random_share")):
            try:
                data["selection_options"] = self.selection_options(data)
            except job_selection.SelectionError as exc:
                field = "second_version" if "second" in str(exc) else "random_share" if "random share" in str(exc) \
                    else "budget"
                self.add_error(field, str(exc))
        return data

    @staticmethod
    def selection_options(data: dict[str, Any]) -> job_selection.Selection:
        return job_selection.Selection(strategy=data.get("selection") or job_selection.ALL, budget=data.get("budget"),
                                   per_document=data.get("per_document"), second_version=data.get("second_version"),
                                   random_share=data.get("random_share") or 0.0)

    def job_settings(self) -> job_setup.JobSettings:
        """The job's settings from the cleaned form."""
        names = ("judgments_per_pair", "test_question_every", "min_seconds", "accuracy_threshold",
                 "min_test_questions", "reservation_minutes", "top_k", "instructions")
        settings = job_setup.JobSettings(**{name: self.cleaned_data[name] for name in names},
                                         selection=self.cleaned_data.get("selection_options") or job_selection.Selection(),
                                         skip_verified=bool(self.cleaned_data.get("skip_verified")))
        settings.pay_per_judgment = self.cleaned_data.get("pay_per_judgment") or Decimal(0)
        settings.pay_per_hour = self.cleaned_data.get("pay_per_hour") or Decimal(0)
        settings.currency = self.cleaned_data.get("currency") or "USD"
        return settings

    def pair_id_list(self) -> list[str]:
        raw = self.cleaned_data.get("pair_ids") or ""
        return [p.strip() for p in raw.replace(",", "\n").splitlines() if p.strip()]
