"""Curation models: the corpus (corpus.py), pipeline jobs, model versions and alignment runs
(runs.py), and exported datasets and synthetic pairs (datasets.py)."""

from curation.models.corpus import (
    AlignmentLabel,
    Article,
    Corpus,
    Document,
    DocumentPair,
    ImportRecord,
    Paragraph,
    ReferenceAlignment,
    Sentence,
)
from curation.models.datasets import ExportedDataset, SyntheticPair
from curation.models.runs import AlignmentRun, Job, ModelVersion, PredictedAlignment, RunChunk

__all__ = [
    "AlignmentLabel",
    "AlignmentRun",
    "Article",
    "Corpus",
    "Document",
    "DocumentPair",
    "ExportedDataset",
    "ImportRecord",
    "Job",
    "ModelVersion",
    "Paragraph",
    "PredictedAlignment",
    "ReferenceAlignment",
    "RunChunk",
    "Sentence",
    "SyntheticPair",
]
