"""Imported synthetic pairs (e.g. back-translation), kept apart from the corpus and marked synthetic."""

from __future__ import annotations

from django.db import models

from curation.models.corpus import Corpus


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
