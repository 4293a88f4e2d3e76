"""Block-level (span) lexical channels: a sentence against a contiguous *run* of sentences of the other side.

A part of a split, a source of a merge or a member of an m:n block often has a low similarity of its own
to its partner: the partner's content is spread over several sentences. Scoring a sentence against the
concatenation of a run of neighbouring sentences of the other side (and a run against a run) sees the
block as a whole. For cell ``(i, j)`` (simple ``i``, complex ``j``) and runs of at most ``widths``
(simple, complex) sentences, the channels of :data:`SPAN_EMISSION_FEATURES` are:

- ``c3g_crun``: max over the runs ``R`` of complex sentences that contain ``j`` of the C3G cosine of
  simple ``i`` and the concatenation of ``R`` (width 1 included, so at least the cell's own C3G);
- ``c3g_crun_gain``: max over the runs ``R`` of width >= 2 that contain ``j`` of what ``j`` adds to the
  run: cos(i, R) - cos(i, R without j) (0 when there is no such run);
- ``c3g_srun`` / ``c3g_srun_gain``: the same with runs of simple sentences against complex ``j``;
- ``c3g_block``: max over a run of simple sentences containing ``i`` and a run of complex sentences
  containing ``j`` of their C3G cosine (an m:n block scored as a whole);
- ``cover_crun`` / ``cover_crun_gain``: the share of simple ``i``'s word set found in the union of the
  run's words (max over runs containing ``j``), and what ``j`` adds to it;
- ``cover_srun`` / ``cover_srun_gain``: the same for complex ``j``'s words in a run of simple sentences.

The concatenation's character 3-gram vector is the sum of its sentences' vectors (3-grams across the
joins are ignored); the IDF is that of :func:`alignment_engine.similarity.c3g` (fitted on the sentences of
both texts). Sparse matrix products only: cost O(w_s^2 m + w_c^2 n) set vectors per document.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from alignment_engine.similarity import _bags_from_codes, _char_codes, _pair_bags, _word_tuple

SPAN_EMISSION_FEATURES = (
    "c3g_crun", "c3g_crun_gain", "c3g_crun_loss", "c3g_srun", "c3g_srun_gain", "c3g_srun_loss",
    "c3g_block", "c3g_block_loss", "cover_crun", "cover_crun_gain", "cover_srun", "cover_srun_gain",
)
#: Longest runs of simple sentences (splits and m:n blocks have up to 6-12 simple sentences on DEplain-web train)
#: and of complex sentences (m:n blocks have 2-3 complex sentences).
SPAN_EMISSION_WIDTHS = (6, 3)


def runs(n: int, width: int) -> list[tuple[int, int]]:
    """Every contiguous run ``(start, w)`` of ``n`` sentences with ``1 <= w <= width``."""
    return [(a, w) for w in range(1, width + 1) for a in range(0, n - w + 1)]


def _sets_matrix(sets: list[list[int]], n: int) -> sp.csr_matrix:
    """(len(sets), n) 0/1 incidence of index sets."""
    rows = np.repeat(np.arange(len(sets)), [len(s) for s in sets])
    cols = np.array([j for s in sets for j in s], dtype=np.int64)
    return sp.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(sets), max(n, 1)))


def _l2(mat: sp.csr_matrix) -> sp.csr_matrix:
    norms = np.sqrt(np.asarray(mat.multiply(mat).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.csr_matrix(sp.diags(1.0 / norms) @ mat)


class _Side:
    """Run sets of one side: the runs, and each run with one member left out."""

    def __init__(self, n: int, width: int) -> None:
        self.runs = runs(n, width)
        self.sets: list[list[int]] = [list(range(a, a + w)) for a, w in self.runs]
        # (run index, member, index of the run without that member in self.sets) for runs of width >= 2
        self.minus: list[tuple[int, int, int]] = []
        for r, (a, w) in enumerate(self.runs):
            if w < 2:
                continue
            for j in range(a, a + w):
                self.minus.append((r, j, len(self.sets)))
                self.sets.append([x for x in range(a, a + w) if x != j])
        self.matrix = _sets_matrix(self.sets, n)


def _contains(values: np.ndarray, run_list: list[tuple[int, int]], n: int) -> np.ndarray:
    """(rows, n): for column j the max of ``values`` (rows, len(run_list)) over the runs that contain j."""
    best = np.full((values.shape[0], n), -np.inf)
    for r, (a, w) in enumerate(run_list):
        best[:, a: a + w] = np.maximum(best[:, a: a + w], values[:, r: r + 1])
    return best


def _excludes(values: np.ndarray, run_list: list[tuple[int, int]], n: int) -> np.ndarray:
    """(rows, n): for column j the max of ``values`` over the runs that do not contain j (those ending at
    or before j, or starting after j; -inf when there is none)."""
    rows = values.shape[0]
    by_end = np.full((rows, n + 1), -np.inf)  # by_end[:, e]: runs [a, a + w) with a + w == e
    by_start = np.full((rows, n + 1), -np.inf)
    for r, (a, w) in enumerate(run_list):
        by_end[:, a + w] = np.maximum(by_end[:, a + w], values[:, r])
        by_start[:, a] = np.maximum(by_start[:, a], values[:, r])
    before = np.maximum.accumulate(by_end, axis=1)[:, :n]  # runs ending at or before j (end <= j)
    after = np.maximum.accumulate(by_start[:, ::-1], axis=1)[:, ::-1][:, 1:]  # runs starting after j
    return np.maximum(before, after)


def _finite(x: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(x), x, 0.0)


def _run_channels(own: np.ndarray, side: _Side, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From (m, n_sets) values of each row sentence against every set of ``side``: (m, n) max over the runs
    containing column j; max over runs of width >= 2 containing j of value(run) - value(run - j); and the
    best run containing j minus the best run not containing j (does j belong to the row's best run?)."""
    m = own.shape[0]
    n_runs = len(side.runs)
    best = _contains(own[:, :n_runs], side.runs, n)
    gain = np.full((m, n), -np.inf)
    for r, j, k in side.minus:
        gain[:, j] = np.maximum(gain[:, j], own[:, r] - own[:, k])
    excl = _excludes(own[:, :n_runs], side.runs, n)
    loss = np.where(np.isfinite(excl), best - excl, best)
    return _finite(best), _finite(gain), _finite(loss)


def span_emission_features(simple: list[str], complex: list[str],
                           widths: tuple[int, int] = SPAN_EMISSION_WIDTHS) -> np.ndarray:
    """(m, n, len(SPAN_EMISSION_FEATURES)) float32 block-level channels of every cell (module docstring);
    ``widths``: the longest runs of simple and of complex sentences."""
    m, n = len(simple), len(complex)
    out = np.zeros((m, n, len(SPAN_EMISSION_FEATURES)), dtype=np.float32)
    if m == 0 or n == 0:
        return out
    cs, cc = _bags_from_codes([_char_codes(t) for t in simple], [_char_codes(t) for t in complex])
    df = np.asarray((sp.vstack([cs, cc]) > 0).sum(axis=0)).ravel().astype(np.float64)
    idf = sp.diags(np.log((1.0 + m + n) / (1.0 + df)) + 1.0)
    ws, wc = sp.csr_matrix(cs @ idf), sp.csr_matrix(cc @ idf)
    s_side, c_side = _Side(m, max(int(widths[0]), 1)), _Side(n, max(int(widths[1]), 1))
    s_sets = _l2(sp.csr_matrix(s_side.matrix[:, :m] @ ws))  # (n_sets_s, V) run vectors
    c_sets = _l2(sp.csr_matrix(c_side.matrix[:, :n] @ wc))
    s_one, c_one = _l2(ws), _l2(wc)
    # simple sentence vs complex sets / complex sentence vs simple sets
    sim_sc = np.asarray((s_one @ c_sets.T).todense())  # (m, n_sets_c)
    sim_cs = np.asarray((c_one @ s_sets.T).todense())  # (n, n_sets_s)
    crun, crun_gain, crun_loss = _run_channels(sim_sc, c_side, n)
    srun, srun_gain, srun_loss = _run_channels(sim_cs, s_side, m)
    # run vs run: max over runs Q containing i and R containing j
    n_rs, n_rc = len(s_side.runs), len(c_side.runs)
    rr = np.asarray((s_sets[:n_rs] @ c_sets[:n_rc].T).todense())  # (runs_s, runs_c)
    block = _contains(_contains(rr, c_side.runs, n).T, s_side.runs, m).T  # (m, n): Q contains i, R contains j
    i_not_j = _contains(_excludes(rr, c_side.runs, n).T, s_side.runs, m).T  # Q contains i, R does not contain j
    j_not_i = _contains(_excludes(rr.T, s_side.runs, m).T, c_side.runs, n)  # R contains j, Q does not contain i
    other = np.maximum(i_not_j, j_not_i)
    block_loss = _finite(np.where(np.isfinite(other), block - other, block))
    block = _finite(block)
    # word covers: share of a sentence's word set found in the union of a run's words
    bs, bc = _pair_bags([_word_tuple(t) for t in simple], [_word_tuple(t) for t in complex], binary=True)
    s_union = sp.csr_matrix((s_side.matrix[:, :m] @ bs) > 0, dtype=np.float64)
    c_union = sp.csr_matrix((c_side.matrix[:, :n] @ bc) > 0, dtype=np.float64)
    s_size = np.maximum(np.asarray(bs.sum(axis=1)).ravel(), 1.0)
    c_size = np.maximum(np.asarray(bc.sum(axis=1)).ravel(), 1.0)
    cov_sc = np.asarray((bs @ c_union.T).todense()) / s_size[:, None]  # (m, n_sets_c)
    cov_cs = np.asarray((bc @ s_union.T).todense()) / c_size[:, None]  # (n, n_sets_s)
    ccov, ccov_gain, _ = _run_channels(cov_sc, c_side, n)
    scov, scov_gain, _ = _run_channels(cov_cs, s_side, m)
    for k, ch in enumerate((crun, crun_gain, crun_loss, srun.T, srun_gain.T, srun_loss.T, block, block_loss,
                            ccov, ccov_gain, scov.T, scov_gain.T)):
        out[:, :, k] = ch
    return np.clip(out, -1.0, 1.0)
