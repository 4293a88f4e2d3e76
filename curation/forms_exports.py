"""The export form: kind, format, run, splits, seed, filters with their parameters, synthetic ratio."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings

from curation.curate.filters import DEFAULTS
from curation.curate.splits import parse_ratios
from curation.models import AlignmentRun, Corpus, ExportedDataset


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
