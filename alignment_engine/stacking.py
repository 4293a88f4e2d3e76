"""The learned decoder: one sentence-pair decision from both CRF directions, the paragraph step and context.

One label per simple sentence (forward CRF) cannot express a merge, and one per complex sentence
(reverse CRF) cannot express a split; an m:n group needs both. Instead of a hand-picked combination
rule, a classifier decides each candidate cell (any cell with a marginal of at least
:data:`CANDIDATE_MIN` in either direction, or on a Viterbi path) from :data:`CELL_FEATURES`:

- both directions' exact marginals and Viterbi paths, and their values at the cell's neighbours in its
  column (the other parts of a split) and its row (the other sources of a merge);
- how much probability mass the simple sentence sends anywhere (1 - P(null)), and the complex one;
- the cell's rank in its row and column;
- the lexical features of the cell (:func:`alignment_engine.features.lexical_features`);
- with the paragraph step, the learned probability that the cell's paragraph pair is linked
  (:mod:`alignment_engine.paragraph_model`) and its gap to the best paragraph of the simple paragraph.

A second round (group-level decoding, learned) decides again with :func:`group_features` of the first
round's probabilities added: whether the neighbours in the cell's row and column are chosen and which
group the cell would complete. Then *group closure* (optional, chosen by cross-validation on train): every predicted connected
group of several simple and several complex sentences becomes the complete block of its sentences,
which is what an m:n group is in the gold (every pair of the group aligned).

Both classifiers are scikit-learn ``HistGradientBoostingClassifier`` models trained in
:mod:`alignment_engine.training` on cross-fitted CRF outputs, so that they see marginals of documents
the CRF was not trained on, as at inference.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

CANDIDATE_MIN = 1e-3
DIRECTIONAL = (
    "marg_fwd", "marg_rev", "marg_max", "marg_min", "vit_fwd", "vit_rev",
    "fwd_prev_simple", "fwd_next_simple", "rev_prev_complex", "rev_next_complex",
    "max_prev_simple", "max_next_simple", "max_prev_complex", "max_next_complex", "max_prev_diag", "max_next_diag",
    "vit_fwd_prev_simple", "vit_fwd_next_simple", "vit_rev_prev_complex", "vit_rev_next_complex",
    "simple_mass", "complex_mass", "row_rank", "col_rank",
)
PARAGRAPH_CHANNELS = ("para_prob", "para_gap")
SPAN_CHANNELS = (
    "gain_simple", "gain_complex", "pair_cover_simple", "pair_cover_complex", "run_cover_simple", "run_cover_complex",
)


def cell_feature_names(n_lex: int, paragraph_step: bool, span: bool = False) -> list[str]:
    return (list(DIRECTIONAL) + [f"lex_{i}" for i in range(n_lex)] + (list(PARAGRAPH_CHANNELS) if paragraph_step else [])
            + (list(SPAN_CHANNELS) if span else []))


def _second_partner(score: np.ndarray) -> np.ndarray:
    """(m, n) int: for cell (i, j) the best other column of row i under ``score`` (its top column, or the
    runner-up when j is the top; j itself when the row has one column)."""
    m, n = score.shape
    order = np.argsort(-score, axis=1, kind="stable")
    top = order[:, :1]
    second = order[:, 1:2] if n > 1 else top
    cols = np.arange(n).reshape(1, -1)
    return np.where(cols == top, second, top).astype(np.int64)


def _cover_channels(s_words: np.ndarray, c_words: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, ...]:
    """Word coverage of each row sentence (``s_words`` (m, V)) by column sentences (``c_words`` (n, V)):
    what column j adds to the row's best other partner b (gain), the cover of j and b together, and the
    cover of the contiguous run j-1..j+1 (a simple sentence rewritten from a run of complex ones)."""
    m, n = score.shape
    size = np.maximum(s_words.sum(axis=1, keepdims=True), 1.0)  # (m, 1)
    inter = s_words @ c_words.T  # (m, n): |S_i ∩ C_j|
    b = _second_partner(score)
    inter_b = np.take_along_axis(inter, b, axis=1)  # |S_i ∩ C_b|
    # |S_i ∩ C_j ∩ C_b| row by row (V-long products; documents are at most a few hundred sentences)
    triple = np.empty((m, n))
    for i in range(m):
        t = s_words[i][None, :] * c_words  # (n, V): S_i ∩ C_j
        triple[i] = (t * t[b[i]]).sum(axis=1)
    pair_cover = (inter + inter_b - triple) / size
    gain = pair_cover - inter_b / size
    run = c_words.copy()
    run[1:] = np.maximum(run[1:], c_words[:-1])
    run[:-1] = np.maximum(run[:-1], c_words[1:])
    run_cover = (s_words @ run.T) / size
    return gain, pair_cover, run_cover


def span_features(s_words: np.ndarray, c_words: np.ndarray, score: np.ndarray) -> np.ndarray:
    """(m, n, len(SPAN_CHANNELS)) group-level lexical channels: for a cell, how much of the simple sentence
    the complex one covers *beyond* the simple sentence's best other partner (by ``score``, e.g. the
    CRFs' marginals), the cover of both together and of the contiguous run of complex sentences around
    j; the same from the complex sentence's side. Parts of splits, sources of merges and m:n members
    have a low similarity of their own but complete their partner's cover."""
    m, n = score.shape
    out = np.zeros((m, n, len(SPAN_CHANNELS)), dtype=np.float64)
    if m == 0 or n == 0 or s_words.shape[1] == 0:
        return out
    g_s, p_s, r_s = _cover_channels(s_words, c_words, score)
    g_c, p_c, r_c = (x.T for x in _cover_channels(c_words, s_words, score.T))
    for k, ch in enumerate((g_s, g_c, p_s, p_c, r_s, r_c)):
        out[:, :, k] = ch
    return out


def _shift(x: np.ndarray, di: int, dj: int) -> np.ndarray:
    """out[i, j] = x[i + di, j + dj] (0 outside)."""
    out = np.zeros_like(x)
    m, n = x.shape
    src_i = slice(max(di, 0), m + min(di, 0))
    dst_i = slice(max(-di, 0), m + min(-di, 0))
    src_j = slice(max(dj, 0), n + min(dj, 0))
    dst_j = slice(max(-dj, 0), n + min(-dj, 0))
    out[dst_i, dst_j] = x[src_i, src_j]
    return out


def _rank(x: np.ndarray, axis: int) -> np.ndarray:
    order = np.argsort(-x, axis=axis, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(x.shape[axis]).reshape([-1 if a == axis else 1 for a in range(2)]),
                      axis=axis)
    return ranks


def candidates(forward_marginals: np.ndarray, reverse_marginals: np.ndarray, forward: np.ndarray,
               reverse: np.ndarray) -> np.ndarray:
    """(m, n) bool: the cells the classifier decides (all others are not aligned)."""
    return (np.maximum(forward_marginals, reverse_marginals) >= CANDIDATE_MIN) | forward | reverse


@dataclass
class Decoded:
    """Both directions' decoding of one document, as (m, n) matrices (rows simple, columns complex)."""

    forward: np.ndarray  # bool: the simple->complex Viterbi path
    reverse: np.ndarray  # bool: the complex->simple Viterbi path
    forward_marginals: np.ndarray  # float32: P(a_i = j) of the simple->complex CRF
    reverse_marginals: np.ndarray  # float32: P(b_j = i) of the complex->simple CRF
    extra: np.ndarray | None = None  # (m, n, K) channels of a second sequence model for the learned decoder
    #                                  (stacking.extra_channels of the semi-Markov CRF's decoding), or None

    @classmethod
    def empty(cls, shape: tuple[int, int]) -> Decoded:
        return cls(np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool), np.zeros(shape, dtype=np.float32),
                   np.zeros(shape, dtype=np.float32))

    @property
    def score(self) -> np.ndarray:
        """(m, n) confidence of each cell: the larger of the two directions' marginals."""
        return np.maximum(self.forward_marginals, self.reverse_marginals)


def average_decodings(members: Sequence[Decoded]) -> Decoded:
    """One document's decoding by a seed ensemble: the members' marginals averaged, and a cell on a
    Viterbi path when at least half of the members' paths hold it (one member: itself)."""
    if len(members) == 1:
        return members[0]
    k = len(members)

    def vote(paths: list[np.ndarray]) -> np.ndarray:
        return np.asarray(np.sum(paths, axis=0) * 2 >= k)

    def mean(margs: list[np.ndarray]) -> np.ndarray:
        return np.asarray(np.mean(margs, axis=0, dtype=np.float64), dtype=np.float32)

    return Decoded(vote([d.forward for d in members]), vote([d.reverse for d in members]),
                   mean([d.forward_marginals for d in members]), mean([d.reverse_marginals for d in members]))


def cell_features(forward_marginals: np.ndarray, reverse_marginals: np.ndarray, forward: np.ndarray,
                  reverse: np.ndarray, lex: np.ndarray, para_prob: np.ndarray | None,
                  span: np.ndarray | None = None) -> np.ndarray:
    """(m, n, F) features of every cell (see the module docstring); ``para_prob`` (m, n) or None;
    ``span`` the (m, n, 6) :func:`span_features` or None."""
    mf, mr = forward_marginals.astype(np.float64), reverse_marginals.astype(np.float64)
    vf, vr = forward.astype(np.float64), reverse.astype(np.float64)
    n_dir, n_lex, n_span = len(DIRECTIONAL), lex.shape[-1], 0 if span is None else span.shape[-1]
    n_para = 0 if para_prob is None else len(PARAGRAPH_CHANNELS)
    # each channel is computed in float64 and rounded once as it is written, as the cast of a float64 stack of all of
    # them did; a long document's cells never exist as that whole stack (Round 26)
    out = np.empty((*mf.shape, n_dir + n_lex + n_para + n_span), dtype=np.float32)
    for k, chan in zip(range(n_dir), _directional_channels(mf, mr, vf, vr), strict=True):
        out[..., k] = chan
    out[..., n_dir : n_dir + n_lex] = lex
    if para_prob is not None:
        p = para_prob.astype(np.float64)
        out[..., n_dir + n_lex] = p
        out[..., n_dir + n_lex + 1] = p - (p.max(axis=1, keepdims=True) if p.size else p)
    if span is not None:
        out[..., n_dir + n_lex + n_para :] = span
    return out


def _directional_channels(mf: np.ndarray, mr: np.ndarray, vf: np.ndarray, vr: np.ndarray) -> Iterator[np.ndarray]:
    """The :data:`DIRECTIONAL` channels in their order, one (m, n) or broadcastable float64 array at a time."""
    mx = np.maximum(mf, mr)
    yield from (mf, mr, mx, np.minimum(mf, mr), vf, vr)
    yield from (_shift(mf, -1, 0), _shift(mf, 1, 0), _shift(mr, 0, -1), _shift(mr, 0, 1))
    yield from (_shift(mx, di, dj) for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1), (-1, -1), (1, 1)))
    yield from (_shift(vf, -1, 0), _shift(vf, 1, 0), _shift(vr, 0, -1), _shift(vr, 0, 1))
    yield mf.sum(axis=1, keepdims=True)
    yield mr.sum(axis=0, keepdims=True)
    yield 1.0 / (1.0 + _rank(mx, 1))
    yield 1.0 / (1.0 + _rank(mx, 0))


def extra_channels(forward_marginals: np.ndarray, reverse_marginals: np.ndarray, forward: np.ndarray,
                   reverse: np.ndarray) -> np.ndarray:
    """(m, n, len(DIRECTIONAL)) float32: the :data:`DIRECTIONAL` channels of a second sequence model's decoding
    (the semi-Markov CRF's span marginals and Viterbi spans), which the cell classifier sees next to the
    first-order CRF's (``Decoded.extra``)."""
    m, n = forward_marginals.shape
    return cell_features(forward_marginals, reverse_marginals, forward, reverse, np.zeros((m, n, 0)), None)


def extra_candidates(extra: np.ndarray) -> np.ndarray:
    """(m, n) bool: :func:`candidates` of the decoding behind :func:`extra_channels` ``extra``."""
    channel = {name: extra[:, :, k] for k, name in enumerate(DIRECTIONAL)}
    return (channel["marg_max"] >= CANDIDATE_MIN) | (channel["vit_fwd"] > 0) | (channel["vit_rev"] > 0)


GROUP_CHANNELS = (
    "p1", "p1_prev_simple", "p1_next_simple", "p1_prev_complex", "p1_next_complex", "p1_prev_diag", "p1_next_diag",
    "p1_row_max", "p1_col_max", "p1_row_sum", "p1_col_sum", "row_chosen", "col_chosen",
    "in_closure", "group_simple", "group_complex",
)
GROUP_CUT = 0.3  # first-round probability that counts as "chosen" for the group channels


def group_features(p1: np.ndarray) -> np.ndarray:
    """(m, n, len(GROUP_CHANNELS)) second-round channels from the first-round cell probabilities ``p1``:
    the neighbours' probabilities, how many cells of the row / column are chosen, and the group the cell
    would join under closure of the first-round decision (its numbers of simple and complex sentences)."""
    m, n = p1.shape
    out = np.zeros((m, n, len(GROUP_CHANNELS)), dtype=np.float32)
    if m == 0 or n == 0:
        return out
    chosen = p1 >= GROUP_CUT
    closed = closure(chosen)
    g_s = np.zeros((m, n))
    g_c = np.zeros((m, n))
    if closed.any():
        ii, jj = np.nonzero(closed)
        graph = coo_matrix((np.ones(len(ii)), (ii, jj + m)), shape=(m + n, m + n))
        _, label = connected_components(graph, directed=False)
        rows = np.bincount(label[:m], minlength=m + n)
        cols = np.bincount(label[m:], minlength=m + n)
        comp = label[ii]
        g_s[ii, jj] = rows[comp]
        g_c[ii, jj] = cols[comp]
    chans = [
        p1, _shift(p1, -1, 0), _shift(p1, 1, 0), _shift(p1, 0, -1), _shift(p1, 0, 1), _shift(p1, -1, -1),
        _shift(p1, 1, 1),
        np.broadcast_to(p1.max(axis=1, keepdims=True), p1.shape), np.broadcast_to(p1.max(axis=0, keepdims=True), p1.shape),
        np.broadcast_to(p1.sum(axis=1, keepdims=True), p1.shape), np.broadcast_to(p1.sum(axis=0, keepdims=True), p1.shape),
        np.broadcast_to(chosen.sum(axis=1, keepdims=True), p1.shape), np.broadcast_to(chosen.sum(axis=0, keepdims=True), p1.shape),
        (closed & ~chosen).astype(np.float64), g_s, g_c,
    ]
    for f, ch in enumerate(chans):
        out[:, :, f] = ch
    return out


def closure(pred: np.ndarray) -> np.ndarray:
    """Every connected group of ``pred`` with several simple and several complex sentences, completed to
    the block of all its sentence pairs; other groups unchanged."""
    m, n = pred.shape
    if m == 0 or n == 0 or not pred.any():
        return pred.copy()
    ii, jj = np.nonzero(pred)
    graph = coo_matrix((np.ones(len(ii)), (ii, jj + m)), shape=(m + n, m + n))
    _, label = connected_components(graph, directed=False)
    out = pred.copy()
    rows_of: dict[int, list[int]] = {}
    cols_of: dict[int, list[int]] = {}
    for i, j in zip(ii.tolist(), jj.tolist(), strict=True):
        c = int(label[i])
        rows_of.setdefault(c, []).append(i)
        cols_of.setdefault(c, []).append(j)
    for c, rows in rows_of.items():
        r, k = sorted(set(rows)), sorted(set(cols_of[c]))
        if len(r) > 1 and len(k) > 1:
            out[np.ix_(r, k)] = True
    return out


#: The paragraph and cell classifiers' settings (scikit-learn ``HistGradientBoostingClassifier``).
CLASSIFIER_PARAMS: dict[str, Any] = {"max_iter": 200, "learning_rate": 0.08, "max_leaf_nodes": 31,
                                     "min_samples_leaf": 20, "l2_regularization": 1.0}


def make_classifier(seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(**CLASSIFIER_PARAMS, early_stopping=False, random_state=seed)


def fit_classifier(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], seed: int) -> Any:
    """A classifier fitted on the stacked rows of ``xs`` (each (N_i, F)) with 0/1 labels ``ys``; None when
    the labels have one class only."""
    x = np.concatenate([a for a in xs if len(a)]) if any(len(a) for a in xs) else np.zeros((0, 1))
    y = np.concatenate([a for a in ys if len(a)]) if any(len(a) for a in ys) else np.zeros(0)
    if len(y) == 0 or y.min() == y.max():
        return None
    return make_classifier(seed).fit(x, y.astype(np.int64))


def predict_proba(model: Any, x: np.ndarray) -> np.ndarray:
    if model is None or len(x) == 0:
        return np.zeros(len(x), dtype=np.float64)
    return model.predict_proba(x)[:, 1].astype(np.float64)  # type: ignore[no-any-return]


@dataclass
class LearnedDecoder:
    """The fitted paragraph and cell classifiers and the decision settings chosen on train."""

    paragraph_model: Any
    cell_model: Any
    paragraph_step: bool
    group_model: Any = None  # the later rounds over group_features: None (one round), a model, or a list of them
    threshold: float = 0.5  # on the cell probability
    paragraph_threshold: float = 0.5  # on the paragraph-link probability (predicted links)
    use_closure: bool = False
    span_features: bool = False  # the cell classifier also sees :func:`span_features` (older pickles: False)

    def group_rounds(self) -> list[Any]:
        """The classifiers of rounds 2, 3, ..., in order (older pickles hold one model or None)."""
        if self.group_model is None:
            return []
        return list(self.group_model) if isinstance(self.group_model, list) else [self.group_model]
