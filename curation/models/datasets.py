"""Exported datasets (Manual and Auto) and imported synthetic pairs."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from curation.models.corpus import Corpus
from curation.models.runs import AlignmentRun, Job


class ExportedDataset(models.Model):
    class Kind(models.TextChoices):
        MANUAL = "manual", "Manual (human labels)"
        AUTO = "auto", "Auto (predicted by a corpus run)"
        POOL = "pool", "Simple-sentence pool (back-translation)"

    class Format(models.TextChoices):
        TSV = "tsv", "alignment TSV"
        JSONL = "jsonl", "JSONL"
        PARQUET = "parquet", "Parquet"

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="exports")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    format = models.CharField(max_length=8, choices=Format.choices, default=Format.TSV)
    run = models.ForeignKey(AlignmentRun, on_delete=models.SET_NULL, null=True, blank=True)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="exports")
    params = models.JSONField(default=dict, blank=True, help_text="filters, splits, seed")
    path = models.CharField(max_length=500, blank=True, help_text="folder under EXPORTS_DIR")
    files = models.JSONField(default=list, blank=True, help_text="[{name, bytes, sha256, rows}]")
    card = models.JSONField(default=dict, blank=True, help_text="dataset card: counts, splits, filters, phenomena")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} export #{self.pk} of {self.corpus}"


class SyntheticPair(models.Model):
    """A machine-made pair (e.g. back-translation), kept apart and marked synthetic."""

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="synthetic_pairs")
    complex_text = models.TextField()
    simple_text = models.TextField()
    batch = models.CharField(max_length=200, help_text="import batch / generator name")
    meta = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["corpus", "complex_text", "simple_text"], name="synthetic_unique_pair")
        ]

    def __str__(self) -> str:
        return f"synthetic: {self.simple_text[:60]}"
