"""Forms that start pipeline jobs: pre-population, corpus alignment, retraining."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from curation.models import Corpus, ModelVersion


def _method_choices() -> list[tuple[str, str]]:
    """The engine's methods that need no trained model (the crf is chosen as a model version)."""
    from alignment_engine import api

    return [(m, m) for m in api.METHODS if m != "crf"]


class PrepopulateForm(forms.Form):
    corpus = forms.ModelChoiceField(queryset=Corpus.objects.all())
    pair_ids = forms.CharField(required=False, help_text="document pair ids (pair_id strings), comma separated; empty: all")
    similarity = forms.ChoiceField(choices=[("tfidf", "tfidf"), ("jaccard", "jaccard"), ("c3g", "c3g")], initial="tfidf")
    strategy = forms.ChoiceField(
        choices=[("", "by corpus kind"), ("paragraph", "inside aligned paragraphs"), ("topk", "top-k similarity")],
        required=False,
    )
    top_k = forms.IntegerField(min_value=1, max_value=20, initial=3)

    def selected_pairs(self) -> list[int] | None:
        raw = [p.strip() for p in self.cleaned_data.get("pair_ids", "").split(",") if p.strip()]
        if not raw:
            return None
        corpus = self.cleaned_data["corpus"]
        found = dict(corpus.pairs.filter(pair_id__in=raw).values_list("pair_id", "pk"))
        return [found[p] for p in raw if p in found]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("corpus") and data.get("pair_ids") and not self.selected_pairs():
            raise forms.ValidationError("none of those pair ids is in the corpus")
        return data


class AlignCorpusForm(forms.Form):
    corpus = forms.ModelChoiceField(queryset=Corpus.objects.all())
    model_version = forms.ModelChoiceField(
        queryset=ModelVersion.objects.exclude(path=""), required=False,
        help_text="empty: the promoted model of the corpus language, else the method below",
    )
    method = forms.ChoiceField(choices=[], required=False, help_text="a baseline, when no model version is chosen")
    chunk_size = forms.IntegerField(min_value=1, max_value=10_000, initial=20, help_text="document pairs per task")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["method"]).choices = [("", "promoted model / default"), *_method_choices()]


class RetrainForm(forms.Form):
    corpus = forms.ModelChoiceField(queryset=Corpus.objects.all(), required=False,
                                    help_text="empty: every corpus of the language")
    language = forms.CharField(max_length=8, initial="en")
    seed = forms.IntegerField(initial=0)
    ratios = forms.CharField(initial="0.7,0.1,0.2", help_text="train,dev,test shares of article groups")
    include_reference_labels = forms.BooleanField(required=False, help_text="also imported training labels")
    encoder_steps = forms.IntegerField(min_value=0, initial=300, help_text="cross-encoder fine-tuning steps (0: lexical CRF)")
    crf_epochs = forms.IntegerField(min_value=1, initial=40)
    baselines = forms.MultipleChoiceField(choices=[], required=False, widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["baselines"]).choices = _method_choices()

    def clean_ratios(self) -> list[float]:
        try:
            ratios = [float(x) for x in self.cleaned_data["ratios"].split(",")]
        except ValueError:
            raise forms.ValidationError("three numbers separated by commas") from None
        if len(ratios) != 3 or any(r < 0 for r in ratios) or sum(ratios) <= 0:
            raise forms.ValidationError("three non-negative numbers separated by commas")
        return ratios

    def job_params(self) -> dict[str, Any]:
        d = self.cleaned_data
        corpus = d.get("corpus")
        config: dict[str, Any] = {"crf_epochs": d["crf_epochs"]}
        if d["encoder_steps"]:
            config["encoder_steps"] = d["encoder_steps"]
        else:
            config["emission"] = "lexical"
        return {
            "language": corpus.language if corpus else d["language"],
            "seed": d["seed"],
            "ratios": d["ratios"],
            "reference_roles": ["labels"] if d["include_reference_labels"] else [],
            "config": config,
            "baselines": list(d.get("baselines") or []),
        }
