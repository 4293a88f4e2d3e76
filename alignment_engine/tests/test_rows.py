"""The one builder of alignment rows from a decision matrix, used by every aligner."""

from __future__ import annotations

import numpy as np
import pytest

from alignment_engine.rows import SCORE_DIGITS, rows_from_matrix
from alignment_engine.types import DocPair

PAIR = DocPair("r", complex=[["C zero.", "C one."]], simple=[["S zero."], ["S one."]])


def test_rows_carry_ids_texts_labels_and_rounded_scores():
    chosen = np.array([[True, False], [True, True]])
    scores = np.array([[0.123456789, 0.0], [0.5, 1 / 3]])
    partial = np.array([[False, False], [True, False]])
    rows = rows_from_matrix(PAIR, chosen, scores, partial)
    assert [(r.simple_id, r.complex_id, r.label) for r in rows] == [
        ("r-0-0-0", "r-1-0-0", "aligned"), ("r-0-1-0", "r-1-0-0", "partialAligned"), ("r-0-1-0", "r-1-0-1", "aligned")]
    assert rows[0].simple_text == "S zero." and rows[2].complex_text == "C one."
    assert rows[0].score == round(0.123456789, SCORE_DIGITS) and rows[2].score == 0.333333
    assert all(r.label == "aligned" for r in rows_from_matrix(PAIR, chosen, scores))


def test_empty_and_mismatched_matrices():
    assert rows_from_matrix(DocPair("e", [], []), np.zeros((0, 0), dtype=bool), np.zeros((0, 0))) == []
    with pytest.raises(ValueError, match="do not match"):
        rows_from_matrix(PAIR, np.zeros((3, 2), dtype=bool), np.zeros((3, 2)))


def test_a_blank_sentence_is_never_aligned():
    pair = DocPair("b", complex=[["C zero.", " "], [""]], simple=[["S zero.", "\t"]])
    rows = rows_from_matrix(pair, np.ones((2, 3), dtype=bool), np.ones((2, 3)))
    assert [(r.simple_id, r.complex_id) for r in rows] == [("b-0-0-0", "b-1-0-0")]
