import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alignment_engine.sequence import (
    SequenceAligner,
    SequenceConfig,
    adopt_orphans,
    label_pairs,
    longest_unmatched_run,
    transition_matrix,
    viterbi,
)
from alignment_engine.types import DocPair


def _path_score(labels: tuple[int, ...], scores: np.ndarray, cfg: SequenceConfig) -> float:
    trans = transition_matrix(scores.shape[1], cfg)
    total, last = 0.0, 0
    for i, a in enumerate(labels):
        if a < 0:
            continue
        total += scores[i, a] - cfg.null_threshold + trans[last, a]
        last = a + 1
    return total


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_viterbi_matches_brute_force(m, n, data):
    values = data.draw(st.lists(st.floats(0, 1, allow_nan=False), min_size=m * n, max_size=m * n))
    scores = np.array(values).reshape(m, n)
    cfg = SequenceConfig(null_relative=0.0, null_threshold=0.3, skip_cost=0.2, back_cost=0.5, repeat_cost=0.05)
    best = max(_path_score(lab, scores, cfg) for lab in itertools.product(range(-1, n), repeat=m))
    got = viterbi(scores, cfg)
    assert _path_score(tuple(int(a) for a in got), scores, cfg) == pytest.approx(best, abs=1e-9)


def test_viterbi_edge_shapes():
    cfg = SequenceConfig()
    assert viterbi(np.zeros((0, 3)), cfg).shape == (0,)
    assert list(viterbi(np.zeros((2, 0)), cfg)) == [-1, -1]


def test_sequence_aligner_split_and_labels():
    pair = DocPair(
        "s",
        complex=[["The council approved the plan on Monday, and work will start next spring.",
                  "Residents were not asked."]],
        simple=[["The council approved the plan on Monday.", "Work will start next spring.",
                 "Nobody asked the people who live there."]],
    )
    (rows,) = SequenceAligner().align([pair])
    got = {(a.simple_id, a.complex_id): a.label for a in rows}
    assert got.get(("s-0-0-0", "s-1-0-0")) == "partialAligned"
    assert got.get(("s-0-0-1", "s-1-0-0")) == "partialAligned"


def test_sequence_aligner_empty_and_one_sentence():
    calls = []
    out = SequenceAligner().align([DocPair("e", [], []), DocPair("o", [["Hello there."]], [["Hello there."]])],
                                  progress=lambda d, t: calls.append((d, t)))
    assert out[0] == []
    assert [(a.label, a.simple_id, a.complex_id) for a in out[1]] == [("aligned", "o-0-0-0", "o-1-0-0")]
    assert calls == [(1, 2), (2, 2)]


def test_adopt_orphans_attaches_the_missed_part_of_a_merge_and_a_split():
    chosen = np.zeros((3, 3), dtype=bool)
    chosen[0, 0] = True
    scores = np.array([[0.8, 0.4, 0.0],
                       [0.0, 0.1, 0.0],
                       [0.3, 0.0, 0.1]])
    got = adopt_orphans(chosen, scores, 0.25)
    # complex 1 is unaligned, its best simple sentence 0 is aligned to complex 0 beside it: a merge part
    assert got[0, 1]
    # simple 2 is unaligned and its best complex 0 is aligned, but to simple 0, not to a neighbour of simple 2
    assert not got[2, 0]
    # simple 1 is unaligned, its best complex 1 is not aligned to simple 0 or 2: no group beside it
    assert got.sum() == 1
    assert not adopt_orphans(chosen, scores, 0.5).any()  # below the minimum score
    chosen[1, 0] = True  # now simple 2 sits beside a pair of complex 0, and its best complex is 0
    assert adopt_orphans(chosen, scores, 0.25)[2, 0]


def test_partial_length_ratio_counts_words_and_runs_of_missing_words():
    simple = ["Dávila agrees.", "The plan was approved."]
    complex_ = ["This point is supported by Dávila.",
                "The plan was approved on Monday by the council of the city of Seville in a long session."]
    chosen = np.eye(2, dtype=bool)
    words_cfg = SequenceConfig()
    assert words_cfg.partial_len_unit == "words"
    full = label_pairs(chosen, simple, complex_, words_cfg)
    assert not full[0, 0] and not full[1, 1]  # 2 of 6 words, 4 of 18 words
    assert longest_unmatched_run(complex_[1], simple[1]) == 7  # "city of Seville in a long session"
    assert longest_unmatched_run(simple[1], complex_[1]) == 0
    lenient = SequenceConfig(partial_len_ratio=0.0)
    assert label_pairs(chosen, simple, complex_, lenient).tolist() == chosen.tolist()
    strict = SequenceConfig(partial_len_ratio=0.0, partial_run_words=7)
    assert label_pairs(chosen, simple, complex_, strict).tolist() == [[True, False], [False, False]]
    with pytest.raises(ValueError, match="partial_len_unit"):
        label_pairs(chosen, simple, complex_, SequenceConfig(partial_len_unit="bytes"))


@pytest.mark.parametrize(("corpus", "floor"), [("onestopenglish-gold-dev", 0.976), ("deplain-web", 0.6)])
def test_default_quality_on_dev(shared_data, corpus, floor):
    from alignment_engine.evaluation import evaluate
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl

    pairs = read_pairs_jsonl(shared_data / corpus / "dev_pairs.jsonl")
    gold = read_alignment_tsv(shared_data / corpus / "dev_gold.tsv")
    pred = [a for doc in SequenceAligner().align(pairs) for a in doc]
    assert evaluate(gold, pred, pairs)["task1"]["f1"] > floor


def test_long_documents_work():
    complex_ = [f"Sentence number {k} talks about topic {k % 37} and item {k}." for k in range(1000)]
    simple = [s.replace("talks about", "is about") for s in complex_[::20]]
    (rows,) = SequenceAligner().align([DocPair("long", [complex_], [simple])])
    got = {(a.simple_id, a.complex_id) for a in rows}
    assert ("long-0-0-1", "long-1-0-20") in got
    assert len(got) >= len(simple) - 2
