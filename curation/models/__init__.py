"""Curation models: the corpus (corpus.py) and imported synthetic pairs (synthetic.py).

The pipeline's records (jobs, model versions, alignment runs, exports) live in ``pipeline.models``."""

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
from curation.models.synthetic import SyntheticPair

__all__ = [
    "AlignmentLabel",
    "Article",
    "Corpus",
    "Document",
    "DocumentPair",
    "ImportRecord",
    "Paragraph",
    "ReferenceAlignment",
    "Sentence",
    "SyntheticPair",
]
