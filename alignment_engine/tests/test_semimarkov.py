"""The semi-Markov span DP against brute-force enumeration of every labelling."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from alignment_engine.semimarkov import decode_spans, log_partition, span_scores, viterbi


def _labellings(m: int, n: int, width: int) -> list[tuple[tuple[int, int] | None, ...]]:
    options: list[tuple[int, int] | None] = [None] + [(a, w) for a in range(n) for w in range(1, width + 1) if a + w <= n]
    return list(itertools.product(options, repeat=m))


def _score(lab: tuple[tuple[int, int] | None, ...], span: np.ndarray, trans: np.ndarray) -> float:
    total, state = 0.0, 0
    for i, x in enumerate(lab):
        if x is None:
            continue
        a, w = x
        total += span[i, a, w - 1] + trans[state, a]
        state = a + w
    return total


@pytest.mark.parametrize("m,n,width,seed", [(1, 1, 1, 0), (2, 3, 2, 1), (3, 3, 3, 2), (3, 4, 2, 3), (4, 2, 2, 4)])
def test_forward_and_viterbi_match_brute_force(m: int, n: int, width: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    span = rng.normal(size=(m, n, width))
    trans = rng.normal(size=(n + 1, n))
    scores = [(_score(lab, span, trans), lab) for lab in _labellings(m, n, width)]
    values = np.array([s for s, _ in scores])
    assert np.isclose(log_partition(span, trans), np.log(np.exp(values).sum()))
    labels, best = viterbi(span, trans)
    assert np.isclose(best, values.max())
    assert np.isclose(_score(tuple(labels), span, trans), values.max())


def test_span_scores_sum_cells_and_decoding_takes_runs() -> None:
    cell = np.array([[1.0, 2.0, -0.5, 4.0]])
    s = span_scores(cell, 3)
    assert s[0, 0, 0] == 1.0 and s[0, 0, 1] == 3.0 and s[0, 1, 2] == 5.5 and s[0, 3, 1] < -1e20
    # a simple sentence written from complex sentences 1-3: the middle cell is below the threshold on its
    # own but the run is worth more than its best part
    prob = np.array([[0.05, 0.9, 0.4, 0.9, 0.05], [0.05, 0.05, 0.05, 0.05, 0.8]])
    out = decode_spans(prob, threshold=0.5, width=3)
    assert out[0].tolist() == [False, True, True, True, False] and out[1].tolist() == [False] * 4 + [True]
    assert decode_spans(prob, threshold=0.5, width=1)[0].tolist() == [False, True, False, True, False]  # union
    assert not decode_spans(np.zeros((2, 3)), 0.5, 2).any() and decode_spans(np.zeros((0, 3)), 0.5, 2).shape == (0, 3)


def test_bad_shapes_are_errors() -> None:
    with pytest.raises(ValueError, match="trans must have shape"):
        viterbi(np.zeros((2, 3, 1)), np.zeros((3, 3)))
