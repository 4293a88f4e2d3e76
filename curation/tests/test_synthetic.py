"""The synthetic-pair importer: JSONL and TSV, idempotent, all-or-nothing, marked apart from the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from curation.importers.synthetic import import_synthetic
from curation.importers.types import ImportFailed
from curation.models import Corpus, SyntheticPair

pytestmark = pytest.mark.django_db


def test_tsv_with_header_and_cleaning(tmp_path: Path) -> None:
    corpus = Corpus.objects.create(name="c", language="en")
    path = tmp_path / "bt.tsv"
    path.write_text("complex\tsimple\nA  long sentence.\tShort one.\nAnother one.\tSimple.\n", encoding="utf-8")
    summary = import_synthetic(corpus, path, "bt")
    assert (summary.read, summary.created, summary.skipped_existing) == (2, 2, 0)
    assert sorted(SyntheticPair.objects.values_list("complex_text", "simple_text", "batch")) == [
        ("A  long sentence.", "Short one.", "bt"), ("Another one.", "Simple.", "bt"),
    ]
    again = import_synthetic(corpus, path, "bt")
    assert (again.created, again.skipped_existing) == (0, 2)


def test_bad_line_imports_nothing(tmp_path: Path) -> None:
    corpus = Corpus.objects.create(name="c", language="en")
    path = tmp_path / "bt.jsonl"
    path.write_text('{"complex": "One.", "simple": "1."}\n{"complex": "Two."}\n', encoding="utf-8")
    with pytest.raises(ImportFailed, match=r"bt.jsonl:2: expected an object"):
        import_synthetic(corpus, path, "bt")
    assert not SyntheticPair.objects.exists()
    path.write_text("only one column\n", encoding="utf-8")
    tsv = path.with_suffix(".tsv")
    path.rename(tsv)
    with pytest.raises(ImportFailed, match=r":1: expected complex<TAB>simple"):
        import_synthetic(corpus, tsv, "bt")
