"""The gold module: matrices, cells and paragraph links read with SentenceId."""

from __future__ import annotations

import numpy as np
import pytest

from alignment_engine.gold import gold_by_pair, gold_cells, gold_matrix, gold_paragraph_links, paragraph_links
from alignment_engine.types import Alignment, DocPair

PAIR = DocPair("p1", complex=[["c00", "c01"], ["c10"], ["c20"]], simple=[["s00"], ["s10", "s11"]])


def test_gold_matrix_from_rows_and_from_pairs():
    rows = [Alignment("aligned", "p1-0-1-1", "p1-1-2-0"), Alignment("partialAligned", "p1-0-0-0", "p1-1-0-1"),
            Alignment("notAligned", "p1-0-1-0", "p1-1-1-0"), Alignment("aligned", "q-0-0-0", "q-1-0-0")]
    m = gold_matrix(PAIR, rows)
    want = np.zeros((3, 4), dtype=np.int8)
    want[2, 3] = want[0, 1] = 1
    np.testing.assert_array_equal(m, want)
    strict = gold_matrix(PAIR, rows, strict=True)
    assert strict.sum() == 1 and strict[2, 3] == 1
    np.testing.assert_array_equal(gold_matrix(PAIR, {("p1-0-1-1", "p1-1-2-0"), ("p1-0-0-0", "p1-1-0-1")}), want)
    assert [(i, j) for i, j, _ in gold_cells(PAIR, rows)] == [(2, 3), (0, 1), (1, 2)]


def test_gold_by_pair_splits_documents_and_strict_labels():
    rows = [Alignment("aligned", "a-0-0-0", "a-1-0-0"), Alignment("partialAligned", "a-0-0-1", "a-1-0-0"),
            Alignment("identical", "b-0-0-0", "b-1-0-0"), Alignment("notAligned", "b-0-0-1", "b-1-0-0")]
    pos, strict = gold_by_pair(rows)
    assert pos["a"] == {("a-0-0-0", "a-1-0-0"), ("a-0-0-1", "a-1-0-0")} and strict["a"] == {("a-0-0-0", "a-1-0-0")}
    assert pos["b"] == strict["b"] == {("b-0-0-0", "b-1-0-0")}


def test_paragraph_links_parse_ids_of_pair_ids_with_underscores_and_dots():
    # pair ids may hold '_' and '.', and paragraph numbers above 9: every id goes through SentenceId
    got = paragraph_links({("amazon.adv_int-0-12-3", "amazon.adv_int-1-10-0"), ("amazon.adv_int-0-12-4", "amazon.adv_int-1-10-1")})
    assert got == [(10, 12, 1.0)]
    gold = [Alignment("aligned", "p1-0-1-0", "p1-1-2-0"), Alignment("notAligned", "p1-0-0-0", "p1-1-0-0"),
            Alignment("aligned", "q-0-0-0", "q-1-0-0")]
    assert gold_paragraph_links([PAIR], gold) == {("p1", 2, 1)}
    with pytest.raises(ValueError, match="not a sentence id"):
        paragraph_links({("broken", "p1-1-0-0")})
