import numpy as np
import pytest

from alignment_engine.baselines import (
    BASELINES,
    DEFAULT_THRESHOLDS,
    BestMatchAligner,
    CatsSequenceAligner,
    JaccardAlign,
    MassAlignAligner,
    make_baseline,
    tune_threshold,
)
from alignment_engine.types import Alignment, DocPair


def test_best_match_takes_row_maximum_above_threshold():
    scores = np.array([[0.1, 0.8, 0.3], [0.2, 0.1, 0.15]])
    out = BestMatchAligner("c3g").decide(scores, 0.25)
    np.testing.assert_array_equal(out, [[False, True, False], [False, False, False]])


def test_jaccard_align_is_greedy_one_to_one():
    scores = np.array([[0.9, 0.8], [0.85, 0.3]])
    out = JaccardAlign().decide(scores, 0.2)
    np.testing.assert_array_equal(out, [[True, False], [False, True]])


def test_cats_sequence_keeps_order():
    scores = np.array([[0.1, 0.9, 0.1], [0.8, 0.1, 0.5], [0.1, 0.1, 0.2]])
    out = CatsSequenceAligner().decide(scores, 0.15)
    # row 1's best (column 0) lies before row 0's choice, so it takes column 2
    assert out[0, 1] and out[1, 2] and out[2, 2]
    assert not out[1, 0]


def test_massalign_follows_the_diagonal_and_jumps():
    scores = np.eye(6) * 0.9
    scores[3, 3] = 0.0
    scores[4, 4] = 0.0
    scores[5, 5] = 0.9
    out = MassAlignAligner(window=2).decide(scores, 0.3)
    assert out[0, 0] and out[1, 1] and out[2, 2] and out[5, 5]
    assert out.sum() == 4


def test_make_baseline_names():
    assert make_baseline("cats").name == "cats-closest"
    assert make_baseline("c3g").measure == "c3g"
    assert make_baseline("tfidf").measure == "tfidf"
    with pytest.raises(ValueError):
        make_baseline("nope")


@pytest.mark.parametrize("method", BASELINES)
def test_make_baseline_takes_the_tuned_default_threshold_of_its_name(method: str) -> None:
    aligner = make_baseline(method)
    assert aligner.threshold == DEFAULT_THRESHOLDS[aligner.name]
    assert make_baseline(method, threshold=0.42).threshold == 0.42


def test_tune_threshold_picks_best_f1():
    pair = DocPair("t", complex=[["The cat sat on the mat.", "Stocks fell sharply today."]],
                   simple=[["A cat sat on a mat.", "Birds sing today."]])
    gold = [Alignment("aligned", "t-0-0-0", "t-1-0-0")]
    aligner = BestMatchAligner("c3g")
    res = tune_threshold(aligner, [pair], gold, grid=[0.0, 0.3, 0.9])
    assert res.threshold == 0.3 and res.task1["f1"] == 1.0
    assert aligner.threshold == 0.3
    assert [t for t, _ in res.curve] == [0.0, 0.3, 0.9]


def test_empty_documents():
    for name in ("jaccard", "cats-sequence", "massalign", "tfidf", "lr"):
        assert make_baseline(name).align([DocPair("e", [], []), DocPair("f", [["One."]], [])]) == [[], []]
        out = make_baseline(name, threshold=0.0).align([DocPair("o", [["One cat."]], [["One cat."]])])
        assert [(a.simple_id, a.complex_id) for a in out[0]] == [("o-0-0-0", "o-1-0-0")]


def test_c3g_best_match_reaches_floor_on_onestop_dev(shared_data):
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl

    pairs = read_pairs_jsonl(shared_data / "onestopenglish-gold-dev" / "dev_pairs.jsonl")
    gold = read_alignment_tsv(shared_data / "onestopenglish-gold-dev" / "dev_gold.tsv")
    grid = [float(t) for t in np.arange(0.1, 0.35, 0.025)]
    res = tune_threshold(make_baseline("cats-closest"), pairs, gold, grid=grid)
    assert res.task1["f1"] == pytest.approx(0.976, abs=1e-3)
