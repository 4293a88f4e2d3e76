"""Semi-Markov (span) labelling of simple sentences: each takes null or a contiguous run of complex sentences.

One label per simple sentence (the CRFs of :mod:`alignment_engine.crf_aligner`) cannot say that a simple
sentence was written from a *run* of complex sentences (a merge, or the simple side of an m:n block). Here
a label of simple sentence ``i`` is either null or a span ``[a, a + w)`` of complex sentences with
``1 <= w <= width``. The score of a labelling is

    sum_i span[i, a_i, w_i]  +  sum over consecutive non-null spans of trans[end of previous + 1, a_i]

where ``span`` is an (m, n, width) array (``span[i, a, w - 1]`` scores span ``[a, a + w)``; spans that run
past ``n`` are ignored), a null label scores 0, and ``trans`` is an (n + 1, n) array indexed by the
previous span's end + 1 (0 before the first non-null span) and the next span's start; nulls are
skipped over, as in :mod:`alignment_engine.sequence`.

:func:`log_partition` (exact forward algorithm, log-sum-exp over every labelling) and :func:`viterbi`
(the best labelling) share one dynamic program over the state "end of the last non-null span"; both are
tested against brute-force enumeration. :func:`span_scores` turns cell log-odds into span scores (the
sum over the span's cells), which is how :func:`decode_spans` decodes the learned decoder's cell
probabilities at the group level.
"""

from __future__ import annotations

import numpy as np

NEG = -1e30


def _valid(span: np.ndarray) -> np.ndarray:
    """``span`` with spans that run past the last complex sentence set to NEG."""
    m, n, width = span.shape
    start = np.arange(n).reshape(-1, 1)
    w = np.arange(1, width + 1).reshape(1, -1)
    ok = (start + w) <= n  # (n, width)
    return np.where(ok[None, :, :], span, NEG)


def _step(last: np.ndarray, span_i: np.ndarray, trans: np.ndarray, semiring: str) -> tuple[np.ndarray, np.ndarray]:
    """One simple sentence: ``last`` (n + 1,) scores by the end + 1 of the last non-null span (0 = none).

    Returns the new (n + 1,) scores and, for Viterbi, the (n + 1, 3) backpointers of each new state:
    (previous state, start, width) or (-1, -1, -1) for "this sentence took null"."""
    n1 = last.shape[0]
    n, width = span_i.shape
    # into[p, a] = best / logsumexp over previous states p of last[p] + trans[p, a]
    cand = last[:, None] + trans  # (n + 1, n)
    if semiring == "max":
        prev = cand.argmax(axis=0)
        into = cand[prev, np.arange(n)]
    else:
        top = cand.max(axis=0)
        into = top + np.log(np.exp(cand - top).sum(axis=0))
        prev = np.zeros(n, dtype=np.int64)
    new = np.full(n1, NEG)
    back = np.full((n1, 3), -1, dtype=np.int64)
    # the span [a, a + w) ends at e = a + w, i.e. state e (1..n)
    for w in range(1, width + 1):
        a = np.arange(0, n - w + 1)
        if a.size == 0:
            continue
        score = into[a] + span_i[a, w - 1]
        e = a + w
        if semiring == "max":
            better = score > new[e]
            new[e] = np.where(better, score, new[e])
            back[e[better]] = np.stack([prev[a[better]], a[better], np.full(int(better.sum()), w)], axis=1)
        else:
            hi = np.maximum(new[e], score)
            new[e] = hi + np.log(np.exp(new[e] - hi) + np.exp(score - hi))
    # null: the state (end of the last span) is unchanged
    if semiring == "max":
        keep = last > new
        new = np.where(keep, last, new)
        back[keep] = -1
    else:
        hi = np.maximum(new, last)
        new = hi + np.log(np.exp(new - hi) + np.exp(last - hi))
    return new, back


def _check(span: np.ndarray, trans: np.ndarray) -> None:
    m, n, width = span.shape
    if trans.shape != (n + 1, n):
        raise ValueError(f"trans must have shape {(n + 1, n)}, got {trans.shape}")
    if width < 1:
        raise ValueError("width must be at least 1")


def log_partition(span: np.ndarray, trans: np.ndarray) -> float:
    """log of the sum of exp(score) over every labelling (exact forward algorithm)."""
    span = np.asarray(span, dtype=np.float64)
    trans = np.asarray(trans, dtype=np.float64)
    _check(span, trans)
    m, n, _ = span.shape
    last = np.full(n + 1, NEG)
    last[0] = 0.0
    if n == 0:
        return 0.0
    span = _valid(span)
    for i in range(m):
        last, _ = _step(last, span[i], trans, "sum")
    top = float(last.max())
    return top + float(np.log(np.exp(last - top).sum()))


def viterbi(span: np.ndarray, trans: np.ndarray) -> tuple[list[tuple[int, int] | None], float]:
    """The best labelling: per simple sentence ``(start, width)`` or None (null), and its score."""
    span = np.asarray(span, dtype=np.float64)
    trans = np.asarray(trans, dtype=np.float64)
    _check(span, trans)
    m, n, _ = span.shape
    if n == 0:
        return [None] * m, 0.0
    span = _valid(span)
    last = np.full(n + 1, NEG)
    last[0] = 0.0
    backs = []
    for i in range(m):
        last, back = _step(last, span[i], trans, "max")
        backs.append(back)
    state = int(last.argmax())
    best = float(last[state])
    labels: list[tuple[int, int] | None] = [None] * m
    for i in range(m - 1, -1, -1):
        prev, a, w = (int(x) for x in backs[i][state])
        if a >= 0:
            labels[i] = (a, w)
            state = prev
    return labels, best


def span_scores(cell: np.ndarray, width: int) -> np.ndarray:
    """(m, n, width) span scores from (m, n) cell scores: the sum over the span's cells."""
    m, n = cell.shape
    out = np.full((m, n, width), NEG)
    csum = np.concatenate([np.zeros((m, 1)), np.cumsum(cell, axis=1)], axis=1)  # (m, n + 1)
    for w in range(1, width + 1):
        if w <= n:
            out[:, : n - w + 1, w - 1] = csum[:, w:] - csum[:, : n - w + 1]
    return out


def decode_spans(prob: np.ndarray, threshold: float, width: int) -> np.ndarray:
    """(m, n) bool: every simple sentence aligned to the contiguous run of complex sentences (at most
    ``width``) that maximises the sum of its cells' log-odds against ``threshold``
    (log p/(1-p) - log t/(1-t)), or to nothing; the same over the complex sentences (runs of simple
    sentences), united. A cell at the threshold scores 0, so with ``width`` 1 this is the best cell of
    each row and of each column when above the threshold."""
    m, n = prob.shape
    out = np.zeros((m, n), dtype=bool)
    if m == 0 or n == 0:
        return out
    p = np.clip(prob, 1e-6, 1 - 1e-6)
    t = min(max(threshold, 1e-6), 1 - 1e-6)
    odds = np.log(p / (1 - p)) - np.log(t / (1 - t))
    for mat, flip in ((odds, False), (odds.T, True)):
        r, c = mat.shape
        labels, _ = viterbi(span_scores(mat, min(width, c)), np.zeros((c + 1, c)))
        for i, lab in enumerate(labels):
            if lab is not None:
                a, w = lab
                if flip:
                    out[a: a + w, i] = True
                else:
                    out[i, a: a + w] = True
    return out
