"""A training-free sequence aligner: hand-set monotonic Viterbi over simple sentences with a null state.

The default method of the engine (``api.DEFAULT_METHOD``). For one document pair:

1. emission ``S[i, j]``: a fixed mix of lexical similarities (C3G, word TF-IDF cosine, word containment);
2. Viterbi over the simple sentences: every simple sentence takes one complex sentence or none (null).
   The state remembers the last complex sentence used, so that a null does not break the chain.
   Moving on to the next complex sentence costs nothing, re-using the previous one (a split) costs
   ``repeat_cost``, skipping ``d`` complex sentences costs ``skip_cost * log(1 + d)`` (sub-linear, so long
   deletions are not punished out of proportion), going backwards costs ``back_cost`` on top;
   a sentence pays ``S[i, j] - null_threshold`` for aligning (null pays 0);
3. the same decoder in the other direction (complex sentences labelled with simple ones), so that
   n-to-1 merges are found; the two directions are combined (``combine``: union or intersection);
4. extra pairs: any cell above ``extra_threshold`` that is the best of its row or column, and the
   neighbours of a chosen pair that the simple sentence covers (containment) well;
5. labels: ``partialAligned`` for every pair of a split or merge group and for pairs whose lengths
   differ a lot (heavy deletion), ``aligned`` otherwise (the Jiang et al. 2020 annotation guideline).

Constants were set on DEplain-web train (``scripts``-free: see docs/engine.md), never on a dev gold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from alignment_engine.rows import rows_from_matrix
from alignment_engine.similarity import containment, similarity_matrix
from alignment_engine.text import words
from alignment_engine.types import Alignment, DocPair, ProgressCallback

NEG = -1e18


LENGTH_UNITS = ("words", "chars")


@dataclass(frozen=True)
class SequenceConfig:
    weights: dict[str, float] = field(default_factory=lambda: {"c3g": 0.5, "tfidf": 0.3, "jaccard": 0.2})
    containment_weight: float = 0.0  # adds w * max(containment) to the emission
    context_weight: float = 0.0  # adds w * mean of the two diagonal neighbours' scores (context smoothing)
    null_threshold: float = 0.09
    null_relative: float = 0.2  # threshold = max(null_threshold, null_relative * median of row maxima)
    skip_cost: float = 0.2
    back_cost: float = 1.0
    repeat_cost: float = 0.02
    combine: str = "simple"  # "simple" (one direction), "union", "intersection", "union-adjacent"
    extra_threshold: float = 0.5
    neighbour_containment: float = 0.8
    neighbour_min_score: float = 0.15
    partial_len_ratio: float = 0.6
    partial_len_unit: str = "words"  # length of a sentence for partial_len_ratio: "words" or "chars"
    # > 0: also partial when one side has this many consecutive words the other lacks (measured, off:
    # its constant cannot be chosen without English partial gold, and chosen per article it does not carry over)
    partial_run_words: int = 0
    min_score: float = 0.0  # final filter on S for decoded pairs
    # a sentence left unaligned joins the group beside it when its best match is that group's other side
    # (the missed part of a split or merge); it must score at least this much (<= 0: off)
    orphan_min_score: float = 0.25

    def __post_init__(self) -> None:
        if self.partial_len_unit not in LENGTH_UNITS:
            raise ValueError(f"unknown partial_len_unit {self.partial_len_unit!r} ({' or '.join(LENGTH_UNITS)})")

    def to_dict(self) -> dict:
        return asdict(self)


def emission_matrix(simple: list[str], complex: list[str], config: SequenceConfig) -> np.ndarray:
    m, n = len(simple), len(complex)
    out = np.zeros((m, n))
    if m == 0 or n == 0:
        return out
    total = sum(config.weights.values()) or 1.0
    for name, w in config.weights.items():
        out += (w / total) * similarity_matrix(name, simple, complex)
    if config.containment_weight:
        cs, cc = containment(simple, complex)
        out = (out + config.containment_weight * np.maximum(cs, cc)) / (1.0 + config.containment_weight)
    if config.context_weight:
        padded = np.pad(out, 1)
        context = (padded[:-2, :-2] + padded[2:, 2:]) / 2.0  # S[i-1, j-1] and S[i+1, j+1]
        out = out + config.context_weight * context
    return out


def transition_matrix(n: int, config: SequenceConfig) -> np.ndarray:
    """(n + 1) x n costs (negative scores) from last-used complex j' (0 = none yet) to complex j (1-based)."""
    prev = np.arange(n + 1).reshape(-1, 1)
    nxt = np.arange(1, n + 1).reshape(1, -1)
    delta = nxt - prev - 1  # 0: next sentence; -1: same as before; >0: skip; < -1: backwards
    cost = np.where(delta > 0, config.skip_cost * np.log1p(np.maximum(delta, 0)), 0.0)
    cost = np.where(delta == -1, config.repeat_cost, cost)
    back = delta < -1
    cost = np.where(back, config.back_cost + config.skip_cost * np.log1p(np.abs(delta + 1)), cost)
    return -cost


def null_threshold(scores: np.ndarray, config: SequenceConfig) -> float:
    """The document's null threshold: the fixed floor, raised for documents whose sentences match closely."""
    if config.null_relative <= 0 or scores.size == 0:
        return config.null_threshold
    return max(config.null_threshold, config.null_relative * float(np.median(scores.max(axis=1))))


def viterbi(scores: np.ndarray, config: SequenceConfig) -> np.ndarray:
    """Best label per row of ``scores`` (m x n): a column index, or -1 for null.

    Score of a labelling: sum of (scores[i, a_i] - null_threshold) over aligned rows plus the transition
    scores between consecutive aligned rows (nulls are skipped over). Vectorised over labels.
    """
    m, n = scores.shape
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    if n == 0:
        return np.full(m, -1, dtype=np.int64)
    # float32 halves the memory traffic of the (n+1, n) step for long documents; small ones stay float64
    dtype = np.float32 if m * n > 250_000 else np.float64
    trans = transition_matrix(n, config).astype(dtype)  # (n+1, n)
    emit = (scores - null_threshold(scores, config)).astype(dtype)
    last = np.full(n + 1, NEG if dtype == np.float64 else -1e30, dtype=dtype)
    last[0] = 0.0
    choice = np.empty((m, n + 1), dtype=np.int64)
    cols = np.arange(n)
    cand = np.empty((n + 1, n), dtype=dtype)
    for i in range(m):
        np.add(last[:, None], trans, out=cand)  # (n+1, n): best score so far + transition
        best_prev = cand.argmax(axis=0)
        aligned = emit[i] + cand[best_prev, cols]
        better = aligned > last[1:]
        choice[i, 0] = -1  # -1: null (last unchanged)
        choice[i, 1:] = np.where(better, best_prev, -1)
        last[1:] = np.where(better, aligned, last[1:])
    state = int(last.argmax())
    labels = np.full(m, -1, dtype=np.int64)
    for i in range(m - 1, -1, -1):
        c = choice[i, state]
        if c >= 0:
            labels[i] = state - 1
            state = int(c)
    return labels


def decode_pairs(scores: np.ndarray, cont_s: np.ndarray, cont_c: np.ndarray, config: SequenceConfig) -> np.ndarray:
    """Boolean m x n matrix of aligned pairs."""
    m, n = scores.shape
    chosen = np.zeros((m, n), dtype=bool)
    if m == 0 or n == 0:
        return chosen
    a = viterbi(scores, config)
    rows = np.flatnonzero(a >= 0)
    forward = np.zeros((m, n), dtype=bool)
    forward[rows, a[rows]] = True
    if config.combine == "simple":
        chosen = forward
    else:
        b = viterbi(scores.T, config)
        cols = np.flatnonzero(b >= 0)
        backward = np.zeros((m, n), dtype=bool)
        backward[b[cols], cols] = True
        if config.combine == "union":
            chosen = forward | backward
        elif config.combine == "intersection":
            chosen = forward & backward
        elif config.combine == "union-adjacent":
            # backward-only pairs count when they neighbour a forward pair of the same simple sentence (merges)
            beside = np.zeros_like(forward)
            beside[:, 1:] |= forward[:, :-1]
            beside[:, :-1] |= forward[:, 1:]
            chosen = forward | (backward & beside)
        else:
            raise ValueError(f"unknown combine rule {config.combine!r}")
    # extra high-confidence pairs: best of their row or column and above extra_threshold
    row_best = scores >= scores.max(axis=1, keepdims=True)
    col_best = scores >= scores.max(axis=0, keepdims=True)
    chosen |= (scores >= config.extra_threshold) & (row_best | col_best)
    # neighbours of a chosen pair that one side covers well (splits and merges)
    near = np.zeros_like(chosen)
    near[:, 1:] |= chosen[:, :-1]
    near[:, :-1] |= chosen[:, 1:]
    near[1:, :] |= chosen[:-1, :]
    near[:-1, :] |= chosen[1:, :]
    covered = np.maximum(cont_s, cont_c) >= config.neighbour_containment
    chosen |= near & covered & (scores >= config.neighbour_min_score)
    if config.orphan_min_score > 0:
        chosen |= adopt_orphans(chosen, scores, config.orphan_min_score)
    if config.min_score > 0:
        chosen &= scores >= config.min_score
    return chosen


def adopt_orphans(chosen: np.ndarray, scores: np.ndarray, min_score: float) -> np.ndarray:
    """Pairs that attach an unaligned sentence to the group beside it (the missed part of a split or merge).

    An unaligned complex sentence j whose best simple sentence i (the column maximum) is aligned to the
    neighbouring complex sentence j - 1 or j + 1 joins that group, and likewise an unaligned simple sentence
    whose best complex sentence is aligned to its neighbouring simple sentence; the pair must score at
    least ``min_score``. Decided on ``chosen`` as given, so adopted pairs do not adopt further ones.
    """
    m, n = chosen.shape
    out = np.zeros_like(chosen)
    if m == 0 or n == 0:
        return out
    # complex side: columns without a pair
    beside_c = np.zeros_like(chosen)
    beside_c[:, 1:] |= chosen[:, :-1]
    beside_c[:, :-1] |= chosen[:, 1:]
    best_i = scores.argmax(axis=0)
    cols = np.flatnonzero(~chosen.any(axis=0))
    keep = cols[(scores[best_i[cols], cols] >= min_score) & beside_c[best_i[cols], cols]]
    out[best_i[keep], keep] = True
    # simple side: rows without a pair
    beside_s = np.zeros_like(chosen)
    beside_s[1:, :] |= chosen[:-1, :]
    beside_s[:-1, :] |= chosen[1:, :]
    best_j = scores.argmax(axis=1)
    rows = np.flatnonzero(~chosen.any(axis=1))
    keep = rows[(scores[rows, best_j[rows]] >= min_score) & beside_s[rows, best_j[rows]]]
    out[keep, best_j[keep]] = True
    return out


def sentence_lengths(texts: list[str], unit: str) -> np.ndarray:
    """Length of each sentence in words (``\\w+`` tokens) or characters, at least 1."""
    if unit == "words":
        return np.array([max(len(words(t)), 1) for t in texts], dtype=np.float64)
    if unit == "chars":
        return np.array([max(len(t), 1) for t in texts], dtype=np.float64)
    raise ValueError(f"unknown partial_len_unit {unit!r} (words or chars)")


def longest_unmatched_run(text: str, other: str) -> int:
    """The most consecutive words of ``text`` that do not occur in ``other`` (a clause the other side lacks)."""
    vocab = set(words(other))
    best = cur = 0
    for w in words(text):
        cur = 0 if w in vocab else cur + 1
        best = max(best, cur)
    return best


def label_pairs(chosen: np.ndarray, simple: list[str], complex: list[str], config: SequenceConfig) -> np.ndarray:
    """True where a chosen pair is ``aligned``, False where ``partialAligned``."""
    m, n = chosen.shape
    if m == 0 or n == 0:
        return np.zeros((m, n), dtype=bool)
    per_row = chosen.sum(axis=1, keepdims=True)
    per_col = chosen.sum(axis=0, keepdims=True)
    ls = sentence_lengths(simple, config.partial_len_unit).reshape(-1, 1)
    lc = sentence_lengths(complex, config.partial_len_unit).reshape(1, -1)
    ratio = np.minimum(ls, lc) / np.maximum(ls, lc)
    full = chosen & (per_row <= 1) & (per_col <= 1) & (ratio >= config.partial_len_ratio)
    if config.partial_run_words > 0:
        for i, j in zip(*np.nonzero(full), strict=True):
            run = max(longest_unmatched_run(simple[i], complex[j]), longest_unmatched_run(complex[j], simple[i]))
            if run >= config.partial_run_words:
                full[i, j] = False
    return full


def align_document(pair: DocPair, config: SequenceConfig) -> list[Alignment]:
    simple, complex_ = pair.simple_sentences(), pair.complex_sentences()
    if not simple or not complex_:
        return []
    scores = emission_matrix(simple, complex_, config)
    cs, cc = containment(simple, complex_)
    chosen = decode_pairs(scores, cs, cc, config)
    full = label_pairs(chosen, simple, complex_, config)
    return rows_from_matrix(pair, chosen, scores, partial=chosen & ~full)


class SequenceAligner:
    """The training-free default aligner (see the module docstring)."""

    def __init__(self, config: SequenceConfig | None = None, name: str = "sequence") -> None:
        self.config = config or SequenceConfig()
        self.name = name

    def align(self, pairs: Sequence[DocPair], progress: ProgressCallback | None = None) -> list[list[Alignment]]:
        out = []
        for k, pair in enumerate(pairs):
            out.append(align_document(pair, self.config))
            if progress is not None:
                progress(k + 1, len(pairs))
        return out
