"""Forms that start pipeline jobs (pre-population, corpus alignment, retraining) and the export form
(kind, format, run, splits, seed, filters with their parameters, synthetic ratio). Each form turns
its own cleaned data into the options of its service."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, cast

from django import forms
from django.conf import settings

from accounts.params import ModelChoiceField
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
    corpus = ModelChoiceField(queryset=Corpus.objects.all())
    pair_ids = forms.CharField(required=False, label="document pairs",
                               help_text="pair ids (pair_id strings), comma separated; empty: every pair of the corpus")
    similarity = forms.ChoiceField(choices=[("tfidf", "tfidf"), ("jaccard", "jaccard"), ("c3g", "c3g")], initial="tfidf",
                                   label="sentence similarity")
    strategy = forms.ChoiceField(
        choices=[("", "by corpus kind"), ("paragraph", "inside aligned paragraphs"), ("topk", "top-k similarity")],
        required=False, label="candidate strategy",
    )
    top_k = forms.IntegerField(min_value=1, max_value=20, initial=3, label="k", help_text="top-k strategy only")

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
    corpus = ModelChoiceField(queryset=Corpus.objects.all())
    model_version = ModelChoiceField(
        queryset=ModelVersion.objects.exclude(path=""), required=False, label="model version",
        empty_label="promoted model of the language", help_text="a trained version; else the promoted one, else the method",
    )
    method = forms.ChoiceField(choices=[], required=False, label="or a baseline method",
                               help_text="used when no model version is chosen")
    chunk_size = forms.IntegerField(min_value=1, max_value=10_000, initial=20, label="chunk size",
                                    help_text="document pairs per task")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["method"]).choices = [("", "promoted model / default"), *_method_choices()]

    def model_choice(self) -> ModelChoice:
        """The model or method that aligns the corpus (raises AlignSetupError)."""
        d = self.cleaned_data
        mv = d.get("model_version")
        return resolve_model(d["corpus"], d.get("method") or None, mv.pk if mv else None)


#: Training options a web retrain may change (advanced settings); every other option keeps CRFConfig's default.
RETRAIN_ADVANCED = ("emission", "crf_epochs", "encoder_steps", "members")


def crf_defaults() -> dict[str, Any]:
    """The engine's measured training defaults (``CRFConfig()``), shown on the form."""
    from alignment_engine.crf_config import CRFConfig

    return CRFConfig().to_dict()


class RetrainForm(forms.Form):
    corpus = ModelChoiceField(queryset=Corpus.objects.all(), required=False, empty_label="every corpus of the language",
                                    help_text="the corpus whose verified labels train the model")
    language = forms.CharField(max_length=8, initial="en", help_text="used when no corpus is chosen")
    seed = forms.IntegerField(initial=0, help_text="split and training seed")
    ratios = forms.CharField(initial="0.7,0.1,0.2", help_text="train,dev,test shares of article groups")
    include_reference_labels = forms.BooleanField(required=False, label="also train on imported reference labels",
                                                  help_text="reference alignments of role 'labels'")
    baselines = forms.MultipleChoiceField(choices=[], required=False, widget=forms.CheckboxSelectMultiple,
                                          label="baselines scored on the same split")
    # advanced: initial values are CRFConfig's defaults; only values that differ from them are sent
    emission = forms.ChoiceField(choices=[], required=False, help_text="lexical: no neural encoder (fast, CPU)")
    crf_epochs = forms.IntegerField(min_value=1, required=False, label="CRF epochs")
    encoder_steps = forms.IntegerField(min_value=1, required=False, label="encoder fine-tuning steps",
                                       help_text="only with an encoder emission")
    members = forms.IntegerField(min_value=1, max_value=8, required=False, label="seed ensemble members",
                                 help_text="models of seeds seed, seed + 1, ... trained in parallel and averaged; "
                                           "1: a single model, trained and aligning faster")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from alignment_engine.crf_config import EMISSIONS

        defaults = crf_defaults()
        cast(forms.ChoiceField, self.fields["baselines"]).choices = _method_choices()
        cast(forms.ChoiceField, self.fields["emission"]).choices = [(e, e) for e in EMISSIONS]
        for name in RETRAIN_ADVANCED:
            self.fields[name].initial = defaults[name]
            default_note = f"default {defaults[name]}"
            help_text = self.fields[name].help_text
            self.fields[name].help_text = f"{help_text}; {default_note}" if help_text else default_note

    def clean_ratios(self) -> list[float]:
        try:  # one parser for every split ratio (refuses NaN, infinity and negatives)
            ratios = parse_ratios(self.cleaned_data["ratios"])
        except ValueError:
            ratios = {}
        if list(ratios) != ["train", "dev", "test"]:
            raise forms.ValidationError("three finite non-negative numbers separated by commas, e.g. 0.7,0.1,0.2")
        return list(ratios.values())

    def training_config(self) -> dict[str, Any]:
        """The options that differ from ``CRFConfig()`` (empty: the engine's measured defaults)."""
        d = self.cleaned_data
        defaults = crf_defaults()
        emission = d.get("emission") or defaults["emission"]
        config: dict[str, Any] = {}
        for name in RETRAIN_ADVANCED:
            value = d.get(name)
            if name == "emission":
                value = emission
            if name == "encoder_steps" and emission == "lexical":
                continue  # no encoder to fine-tune
            if value not in (None, "") and value != defaults[name]:
                config[name] = value
        return config

    def job_params(self) -> dict[str, Any]:
        d = self.cleaned_data
        corpus = d.get("corpus")
        return {
            "language": corpus.language if corpus else d["language"],
            "seed": d["seed"],
            "ratios": d["ratios"],
            "reference_roles": ["labels"] if d["include_reference_labels"] else [],
            "config": self.training_config(),
            "baselines": list(d.get("baselines") or []),
        }


def _default_note(name: str, key: str) -> str:
    return f"published default {DEFAULTS[name][key]}"


class ExportForm(forms.Form):
    corpus = ModelChoiceField(queryset=Corpus.objects.all())
    kind = forms.ChoiceField(choices=ExportedDataset.Kind.choices)
    format = forms.ChoiceField(choices=ExportedDataset.Format.choices, initial="tsv")
    run = ModelChoiceField(queryset=AlignmentRun.objects.select_related("corpus").defer("stats"), required=False,
                                 label="corpus run", empty_label="none (Manual, pool)",
                                 help_text="Auto: the run whose predictions are exported")
    splits = forms.CharField(initial="35/5/10", required=False, label="train/dev/test split",
                             help_text="ratios by article group; empty: one file")
    seed = forms.IntegerField(initial=0, label="split seed")
    f_identical = forms.BooleanField(required=False, label="drop identical pairs")
    f_adjacent_levels = forms.BooleanField(required=False, label="drop adjacent-level pairs (0-1, 1-2, 2-3)")
    f_gleu = forms.BooleanField(required=False, label="keep GLEU between min and max")
    gleu_min = forms.FloatField(initial=DEFAULTS["gleu"]["min"], label="GLEU min", help_text=_default_note("gleu", "min"))
    gleu_max = forms.FloatField(initial=DEFAULTS["gleu"]["max"], label="GLEU max", help_text=_default_note("gleu", "max"))
    f_flesch = forms.BooleanField(required=False, label="keep a Flesch reading-ease gain of at least")
    flesch_min_gain = forms.FloatField(initial=DEFAULTS["flesch"]["min_gain"], label="minimum gain (points)",
                                       help_text=_default_note("flesch", "min_gain"))
    f_bisect = forms.BooleanField(required=False, label="BiSECT split-and-rephrase selection (a verb in every sentence)")
    bisect_min_overlap = forms.FloatField(initial=DEFAULTS["bisect"]["min_overlap"], label="minimum lexical overlap",
                                          help_text=_default_note("bisect", "min_overlap"))
    bisect_min_bertscore = forms.FloatField(initial=DEFAULTS["bisect"]["min_bertscore"], label="minimum BERTScore",
                                            help_text=_default_note("bisect", "min_bertscore"))
    test_set = forms.FileField(required=False, label="exclude a test set",
                               help_text="complex sentences to exclude (one per line, or an alignment TSV)")
    synthetic_ratio = forms.FloatField(initial=0.0, min_value=0.0, label="synthetic ratio",
                                       help_text="synthetic rows per real training row")
    include_reference = forms.BooleanField(required=False, initial=True, label="include imported reference labels")

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
