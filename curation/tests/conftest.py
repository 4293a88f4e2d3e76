"""Helpers for the importer, page and API tests: row counts, options, tiny corpora on disk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from curation.importers.types import ImportOptions
from curation.models import (
    Article,
    Corpus,
    Document,
    DocumentPair,
    ImportRecord,
    Paragraph,
    ReferenceAlignment,
    Sentence,
)
from curation.queries import pair_as_plain

MODELS = (Corpus, Article, Document, Paragraph, Sentence, DocumentPair, ReferenceAlignment, ImportRecord)
DEMO_DIR = Path(__file__).resolve().parents[2] / "demo" / "corpus"


def row_counts() -> dict[str, int]:
    """Rows of every corpus table: compared before/after a failed import (nothing written)."""
    return {model.__name__: model.objects.count() for model in MODELS}


def options(fmt: str, corpus: str = "Test", **kwargs: object) -> ImportOptions:
    return ImportOptions(corpus=corpus, format=fmt, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[[str, str | bytes], Path]:
    """Write text (UTF-8) or raw bytes to ``tmp_path/name`` and return the path."""

    def write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return write


@pytest.fixture
def demo_dir() -> Path:
    return DEMO_DIR


def plain_pair(pair: DocumentPair) -> dict[str, Any]:
    """``pair_as_plain`` with a type the tests can index."""
    return pair_as_plain(pair)
