"""Forms that start pipeline jobs (pre-population, corpus alignment, retraining) and the export form
(kind, format, run, splits, seed, filters with their parameters, synthetic ratio). Each form turns
its own cleaned data into the options of its service."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, cast

from django import forms
from django.conf import settings

from curation.curate.filters import DEFAULTS
from curation.curate.splits import parse_ratios
from curation.models import Corpus
from pipeline.models import AlignmentRun, ExportedDataset, ModelVersion
from pipeline.services.align_corpus import ModelChoice, resolve_model
from pipeline.services.prepopulate import PrepopulateOptions


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

    def options(self) -> PrepopulateOptions:
        d = self.cleaned_data
        return PrepopulateOptions(similarity=d["similarity"], strategy=d["strategy"] or None, top_k=d["top_k"])

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

    def model_choice(self) -> ModelChoice:
        """The model or method that aligns the corpus (raises AlignSetupError)."""
        d = self.cleaned_data
        mv = d.get("model_version")
        return resolve_model(d["corpus"], d.get("method") or None, mv.pk if mv else None)


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


class ExportForm(forms.Form):
    corpus = forms.ModelChoiceField(queryset=Corpus.objects.all())
    kind = forms.ChoiceField(choices=ExportedDataset.Kind.choices)
    format = forms.ChoiceField(choices=ExportedDataset.Format.choices, initial="tsv")
    run = forms.ModelChoiceField(queryset=AlignmentRun.objects.select_related("corpus"), required=False,
                                 help_text="Auto: the corpus run whose predictions are exported")
    splits = forms.CharField(initial="35/5/10", required=False, help_text="ratios by article group; empty = one file")
    seed = forms.IntegerField(initial=0)
    f_identical = forms.BooleanField(required=False, label="no identical pairs")
    f_adjacent_levels = forms.BooleanField(required=False, label="no adjacent-level pairs (0-1, 1-2, 2-3)")
    f_gleu = forms.BooleanField(required=False, label="GLEU between")
    gleu_min = forms.FloatField(initial=DEFAULTS["gleu"]["min"])
    gleu_max = forms.FloatField(initial=DEFAULTS["gleu"]["max"])
    f_flesch = forms.BooleanField(required=False, label="Flesch reading-ease gain at least")
    flesch_min_gain = forms.FloatField(initial=DEFAULTS["flesch"]["min_gain"])
    f_bisect = forms.BooleanField(required=False, label="BiSECT split-and-rephrase selection")
    bisect_min_overlap = forms.FloatField(initial=DEFAULTS["bisect"]["min_overlap"])
    bisect_min_bertscore = forms.FloatField(initial=DEFAULTS["bisect"]["min_bertscore"])
    test_set = forms.FileField(required=False, help_text="complex sentences to exclude (one per line, or an alignment TSV)")
    synthetic_ratio = forms.FloatField(initial=0.0, min_value=0.0, help_text="synthetic rows per real training row")
    include_reference = forms.BooleanField(required=False, initial=True, label="Manual: include imported reference labels")

    def clean_splits(self) -> str | None:
        value = self.cleaned_data["splits"].strip()
        if not value:
            return None
        try:
            parse_ratios(value)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return value

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("kind") == ExportedDataset.Kind.AUTO:
            run = data.get("run")
            if run is None:
                self.add_error("run", "an Auto export needs a corpus run")
            elif data.get("corpus") and run.corpus_id != data["corpus"].pk:
                self.add_error("run", "this run belongs to another corpus")
        return data

    def export_params(self) -> dict[str, Any]:
        data = self.cleaned_data
        params: dict[str, Any] = {"format": data["format"], "splits": data["splits"], "seed": data["seed"]}
        if data["kind"] == ExportedDataset.Kind.AUTO:
            filters: dict[str, Any] = {}
            if data["f_identical"]:
                filters["identical"] = {}
            if data["f_adjacent_levels"]:
                filters["adjacent_levels"] = {}
            if data["f_gleu"]:
                filters["gleu"] = {"min": data["gleu_min"], "max": data["gleu_max"]}
            if data["f_flesch"]:
                filters["flesch"] = {"min_gain": data["flesch_min_gain"]}
            if data["f_bisect"]:
                filters["bisect"] = {"min_overlap": data["bisect_min_overlap"], "min_bertscore": data["bisect_min_bertscore"]}
            upload = data.get("test_set")
            if upload:
                content = upload.read()
                folder = Path(settings.EXPORTS_DIR) / "test-sets"
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / f"{hashlib.sha256(content).hexdigest()[:16]}.txt"
                path.write_bytes(content)
                filters["test_set"] = {"path": str(path)}
            params["filters"] = filters
            params["synthetic_ratio"] = data["synthetic_ratio"]
        if data["kind"] == ExportedDataset.Kind.MANUAL:
            params["include_reference"] = bool(data["include_reference"])
        return params
