"""The learned paragraph step: P(paragraph pair holds an aligned sentence pair), from the document CRF.

Gold paragraph links are implied by sentence gold (:func:`alignment_engine.gold.paragraph_links`). For
every pair (simple paragraph i of k, complex paragraph j of l) of a document, :func:`paragraph_features`
describes:

- both Algorithm 1 scores under C3G (average of maxima, maximum) and the reverse average (over the
  complex paragraph's sentences), and the rank / gap of the average within its row and column;
- the relative positions i/k, j/l and d(i, j) = |i/k - j/l| (1-based, as the paper);
- the sizes of both paragraphs (sentences) and their log ratio;
- the neighbours' average scores (i-1, j-1), (i+1, j+1), (i-1, j), (i+1, j), (i, j-1), (i, j+1);
- the document CRF's exact marginals summed over the paragraph pair, per direction, divided by each
  paragraph's size (the expected share of the simple / complex paragraph's sentences aligned into the
  other), their maximum, and whether a Viterbi path of either direction passes through the pair.

A gradient-boosted tree classifier (scikit-learn ``HistGradientBoostingClassifier``: well kept,
deterministic for a seed, handles the interactions between position and similarity without hand-set
rules) is fitted on these features by :mod:`alignment_engine.training`, with the CRF marginals of train
documents cross-fitted (each document decoded by a CRF that did not see it). Its probabilities feed the
sentence decision (:mod:`alignment_engine.stacking`) and, above a threshold chosen by cross-validation
on train, give the predicted paragraph links.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from alignment_engine.paragraphs import distance_matrix, paragraph_similarity_from_matrix

PARAGRAPH_FEATURES = (
    "avg", "max", "rev_avg", "row_rank", "col_rank", "row_gap", "col_gap",
    "pos_simple", "pos_complex", "dist", "size_simple", "size_complex", "log_size_ratio",
    "nb_prev_diag", "nb_next_diag", "nb_prev_simple", "nb_next_simple", "nb_prev_complex", "nb_next_complex",
    "marg_fwd_share", "marg_rev_share", "marg_max", "viterbi_any",
)


def _rank_desc(x: np.ndarray, axis: int) -> np.ndarray:
    order = np.argsort(-x, axis=axis, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(x.shape[axis]).reshape([-1 if a == axis else 1 for a in range(x.ndim)]),
                      axis=axis)
    return ranks


def _block_sum(cells: np.ndarray, s_par: np.ndarray, c_par: np.ndarray, k: int, l_: int, op: str = "sum") -> np.ndarray:
    """(k, l) reduction of an (m, n) cell matrix over paragraph blocks."""
    out = np.zeros((k, l_), dtype=np.float64)
    if cells.size == 0:
        return out
    if op == "sum":
        rows = np.zeros((k, cells.shape[1]))
        np.add.at(rows, s_par, cells)
        np.add.at(out.T, c_par, rows.T)
    else:
        rows = np.full((k, cells.shape[1]), -np.inf)
        np.maximum.at(rows, s_par, cells)
        acc = np.full((l_, k), -np.inf)
        np.maximum.at(acc, c_par, rows.T)
        out = np.where(np.isfinite(acc.T), acc.T, 0.0)
    return out


def paragraph_features(c3g: np.ndarray, simple: Sequence[Sequence[str]], complex: Sequence[Sequence[str]],
                       forward_marginals: np.ndarray, reverse_marginals: np.ndarray, viterbi: np.ndarray) -> np.ndarray:
    """(k, l, len(PARAGRAPH_FEATURES)) features of every paragraph pair of one document.

    ``c3g`` is the (m, n) sentence similarity; the marginals and ``viterbi`` (either direction's path)
    are (m, n) matrices of the document CRF.
    """
    k, l_ = len(simple), len(complex)
    out = np.zeros((k, l_, len(PARAGRAPH_FEATURES)), dtype=np.float32)
    if k == 0 or l_ == 0 or c3g.size == 0:
        return out
    sim_p = paragraph_similarity_from_matrix(c3g, simple, complex)
    rev = paragraph_similarity_from_matrix(c3g.T, complex, simple)[0].T
    avg, best = sim_p[0], sim_p[1]
    s_size = np.array([len(p) for p in simple], dtype=np.float64)
    c_size = np.array([len(p) for p in complex], dtype=np.float64)
    s_par = np.repeat(np.arange(k), s_size.astype(int))
    c_par = np.repeat(np.arange(l_), c_size.astype(int))
    pad = np.pad(avg, 1)
    cols = {
        "avg": avg, "max": best, "rev_avg": rev,
        "row_rank": 1.0 / (1.0 + _rank_desc(avg, 1)), "col_rank": 1.0 / (1.0 + _rank_desc(avg, 0)),
        "row_gap": avg - avg.max(axis=1, keepdims=True), "col_gap": avg - avg.max(axis=0, keepdims=True),
        "pos_simple": np.broadcast_to((np.arange(1, k + 1) / k)[:, None], (k, l_)),
        "pos_complex": np.broadcast_to((np.arange(1, l_ + 1) / l_)[None, :], (k, l_)),
        "dist": distance_matrix(k, l_),
        "size_simple": np.broadcast_to(s_size[:, None], (k, l_)),
        "size_complex": np.broadcast_to(c_size[None, :], (k, l_)),
        "log_size_ratio": np.log(np.maximum(s_size[:, None], 1) / np.maximum(c_size[None, :], 1)),
        "nb_prev_diag": pad[:-2, :-2], "nb_next_diag": pad[2:, 2:],
        "nb_prev_simple": pad[:-2, 1:-1], "nb_next_simple": pad[2:, 1:-1],
        "nb_prev_complex": pad[1:-1, :-2], "nb_next_complex": pad[1:-1, 2:],
        "marg_fwd_share": _block_sum(forward_marginals, s_par, c_par, k, l_) / np.maximum(s_size[:, None], 1),
        "marg_rev_share": _block_sum(reverse_marginals, s_par, c_par, k, l_) / np.maximum(c_size[None, :], 1),
        "marg_max": _block_sum(np.maximum(forward_marginals, reverse_marginals), s_par, c_par, k, l_, "max"),
        "viterbi_any": _block_sum(viterbi.astype(np.float64), s_par, c_par, k, l_, "max"),
    }
    for f, name in enumerate(PARAGRAPH_FEATURES):
        out[:, :, f] = cols[name]
    return out


def cell_paragraph_values(values: np.ndarray, simple: Sequence[Sequence[str]], complex: Sequence[Sequence[str]]
                          ) -> np.ndarray:
    """(m, n): the (k, l) paragraph-pair ``values`` spread to the sentence pairs inside each paragraph pair."""
    s_par = np.repeat(np.arange(len(simple)), [len(p) for p in simple]).astype(np.int64)
    c_par = np.repeat(np.arange(len(complex)), [len(p) for p in complex]).astype(np.int64)
    if s_par.size == 0 or c_par.size == 0:
        return np.zeros((s_par.size, c_par.size), dtype=np.float32)
    return values[s_par[:, None], c_par[None, :]].astype(np.float32)
