import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alignment_engine.sequence import SequenceAligner, SequenceConfig, transition_matrix, viterbi
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
