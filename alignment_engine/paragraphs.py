"""Paragraph alignment of Jiang et al. 2020 exactly as their appendix writes it (Algorithms 1-4), and a tuner.

Notation as in the paper (``../shared/notes/jiang2020-reference.md``): a document pair has ``k`` simple
paragraphs S_1..S_k and ``l`` complex paragraphs C_1..C_l (1-based in the formulas, 0-based in arrays and
links); ``d(i, j) = |i/k - j/l|`` is the relative distance of positions. Both alignment algorithms return
a boolean (k, l) matrix, rows = simple paragraphs; thresholds are keyed ``tau1``..``tau5``.

- Algorithm 1 (:func:`paragraph_similarity`, Newsela): simP of shape (2, k, l); ``simP[0, i, j]`` = average
  over the sentences of S_i of their best similarity to a sentence of C_j; ``simP[1, i, j]`` = the best
  sentence similarity between S_i and C_j.
- Algorithm 2 (:func:`align_news`, Newsela), for each S_i: link its best C_j under simP[0] when that
  exceeds tau1 and d(i, j) < tau2; link every C_j with simP[1] > tau3; link two neighbours C_{j-1}, C_j
  when both have simP[1] > tau4 and both are closer than tau5.
- Algorithm 3 (:func:`paragraph_similarity_max`, Wikipedia): ONE matrix, simP of shape (1, k, l), the best
  sentence similarity (no average).
- Algorithm 4 (:func:`align_wikipedia`, Wikipedia), for each S_i: candidates are the C_j with
  simP[0] > tau1 and d(i, j) < tau2; when there are several and they spread wider than tau3 of the
  document (range / l) and more than tau4 paragraphs, keep the candidate closest in raw index |m - i|
  and the others above tau5; link every remaining candidate.
- :func:`merge_groups` turns links into runs of neighbouring complex paragraphs per simple paragraph
  (the paper merges them before the CRF runs; candidate sentence pairs are the same either way).

:func:`defaults` are the paper's thresholds to the printed digits (Table 10 for news, Table 11 for
Wikipedia). They were chosen for the paper's fine-tuned BERT probability as sentence similarity (news
tau3 = .99988 fires only for near-copies under that model); with another measure (C3G, TF-IDF) they do
not carry over, and :func:`tune_thresholds` picks thresholds for a measure on labelled pairs whose gold
paragraph links come from gold sentence alignments. The engine's learned paragraph step, which the
trained aligner uses, is :mod:`alignment_engine.paragraph_model`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from alignment_engine.gold import gold_paragraph_links
from alignment_engine.ids import COMPLEX, SIMPLE, sentence_id
from alignment_engine.similarity import similarity_matrix
from alignment_engine.types import Alignment, DocPair

Link = tuple[int, int, float]  # (complex_paragraph, simple_paragraph, score)

#: Table 10 of the paper (Newsela, Algorithm 2), chosen for its fine-tuned BERT probability.
NEWS_DEFAULTS: dict[str, float] = {"tau1": 0.1, "tau2": 0.34, "tau3": 0.9998861788416304,
                                   "tau4": 0.998915818299745, "tau5": 0.5}
#: Table 11 of the paper (Wikipedia, Algorithm 4); tau4 is a number of paragraphs, not a similarity.
WIKI_DEFAULTS: dict[str, float] = {"tau1": 0.991775706637882, "tau2": 0.8, "tau3": 0.5, "tau4": 5,
                                   "tau5": 0.9958}
ALGORITHMS = ("news", "wikipedia")


def defaults(algorithm: str) -> dict[str, float]:
    """The paper's thresholds of ``algorithm`` ("news": Table 10, "wikipedia": Table 11), a fresh dict."""
    if algorithm == "news":
        return dict(NEWS_DEFAULTS)
    if algorithm == "wikipedia":
        return dict(WIKI_DEFAULTS)
    raise ValueError(f"unknown paragraph algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}")


def _starts(paragraphs: Sequence[Sequence[str]]) -> np.ndarray:
    sizes = [len(p) for p in paragraphs]
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if sizes else np.zeros(0, dtype=np.int64)


def paragraph_similarity_from_matrix(sent_sim: np.ndarray, simple: Sequence[Sequence[str]],
                                     complex: Sequence[Sequence[str]]) -> np.ndarray:
    """Algorithm 1 from a precomputed sentence matrix (simple x complex, document order): shape (2, k, l).

    Empty paragraphs score 0.
    """
    k, l_ = len(simple), len(complex)
    out = np.zeros((2, k, l_))
    if k == 0 or l_ == 0 or sent_sim.size == 0:
        return out
    s_sizes = np.array([len(p) for p in simple])
    c_sizes = np.array([len(p) for p in complex])
    nz_s, nz_c = s_sizes > 0, c_sizes > 0
    # best complex sentence per simple sentence inside each complex paragraph: m x l
    row_best = np.zeros((sent_sim.shape[0], l_))
    row_best[:, nz_c] = np.maximum.reduceat(sent_sim, _starts(complex)[nz_c], axis=1)
    avg = np.zeros((k, l_))
    best = np.zeros((k, l_))
    starts_s = _starts(simple)[nz_s]
    avg[nz_s] = np.add.reduceat(row_best, starts_s, axis=0) / s_sizes[nz_s].reshape(-1, 1)
    best[nz_s] = np.maximum.reduceat(row_best, starts_s, axis=0)
    avg[:, ~nz_c] = 0.0
    best[:, ~nz_c] = 0.0
    out[0], out[1] = avg, best
    return out


def paragraph_similarity(pair: DocPair, similarity: str = "tfidf",
                         sentence_matrix: np.ndarray | None = None) -> np.ndarray:
    """Algorithm 1: simP of shape (2, k, l); ``simP[0]`` average of maxima, ``simP[1]`` overall maximum."""
    if sentence_matrix is None:
        sentence_matrix = similarity_matrix(similarity, pair.simple_sentences(), pair.complex_sentences())
    return paragraph_similarity_from_matrix(sentence_matrix, pair.simple, pair.complex)


def paragraph_similarity_max(pair: DocPair, similarity: str = "tfidf",
                             sentence_matrix: np.ndarray | None = None) -> np.ndarray:
    """Algorithm 3: simP of shape (1, k, l), the best sentence similarity between S_i and C_j."""
    return paragraph_similarity(pair, similarity, sentence_matrix)[1:2]


def similarity_for(algorithm: str, sent_sim: np.ndarray, pair: DocPair) -> np.ndarray:
    """simP of ``algorithm`` from a sentence matrix: Algorithm 1 (2, k, l) for news, Algorithm 3 (1, k, l) for wikipedia."""
    sim_p = paragraph_similarity_from_matrix(sent_sim, pair.simple, pair.complex)
    return sim_p if algorithm == "news" else sim_p[1:2]


def _check_sim_p(sim_p: np.ndarray, channels: int, name: str) -> None:
    if sim_p.ndim != 3 or sim_p.shape[0] != channels:
        raise ValueError(f"{name} takes simP of shape ({channels}, k, l), got {tuple(sim_p.shape)}")


def distance_matrix(k: int, l_: int) -> np.ndarray:
    """d(i, j) = |i/k - j/l| with 1-based i, j (shape k x l)."""
    if k == 0 or l_ == 0:
        return np.zeros((k, l_))
    i = np.arange(1, k + 1).reshape(-1, 1) / k
    j = np.arange(1, l_ + 1).reshape(1, -1) / l_
    return np.abs(i - j)


def align_news(sim_p: np.ndarray, thresholds: dict[str, float] | None = None) -> np.ndarray:
    """Algorithm 2: boolean (k, l) paragraph links (rows simple) from Algorithm 1's simP of shape (2, k, l).

    ``thresholds`` (tau1..tau5) override :data:`NEWS_DEFAULTS` (Table 10).
    """
    _check_sim_p(sim_p, 2, "align_news")
    t = {**NEWS_DEFAULTS, **(thresholds or {})}
    _, k, l_ = sim_p.shape
    align = np.zeros((k, l_), dtype=bool)
    if k == 0 or l_ == 0:
        return align
    d = distance_matrix(k, l_)
    avg, best = sim_p[0], sim_p[1]
    rows = np.arange(k)
    jmax = avg.argmax(axis=1)  # the first maximum, like argmax in the pseudo-code
    ok = (avg[rows, jmax] > t["tau1"]) & (d[rows, jmax] < t["tau2"])
    align[rows[ok], jmax[ok]] = True
    align |= best > t["tau3"]
    if l_ > 1:
        pair_ok = (best[:, 1:] > t["tau4"]) & (best[:, :-1] > t["tau4"]) & (d[:, 1:] < t["tau5"]) & (d[:, :-1] < t["tau5"])
        align[:, 1:] |= pair_ok
        align[:, :-1] |= pair_ok
    return align


def align_wikipedia(sim_p: np.ndarray, thresholds: dict[str, float] | None = None) -> np.ndarray:
    """Algorithm 4: boolean (k, l) paragraph links (rows simple) from Algorithm 3's simP of shape (1, k, l).

    ``thresholds`` (tau1..tau5) override :data:`WIKI_DEFAULTS` (Table 11). For simple paragraph i the
    candidates are the j with simP > tau1 and d(i, j) < tau2; when there are more than one and
    ``range = max(cand) - min(cand)`` has ``range / l > tau3`` and ``range > tau4``, only the candidate
    closest to i in raw index (|m - i|, the first on ties) and the others with simP > tau5 stay.
    """
    _check_sim_p(sim_p, 1, "align_wikipedia")
    t = {**WIKI_DEFAULTS, **(thresholds or {})}
    _, k, l_ = sim_p.shape
    align = np.zeros((k, l_), dtype=bool)
    if k == 0 or l_ == 0:
        return align
    sim = sim_p[0]
    d = distance_matrix(k, l_)
    for i in range(k):
        cand = np.flatnonzero((sim[i] > t["tau1"]) & (d[i] < t["tau2"]))
        if len(cand) > 1:
            spread = int(cand.max() - cand.min())
            if spread / l_ > t["tau3"] and spread > t["tau4"]:
                closest = cand[int(np.abs(cand - i).argmin())]  # |m - i|: the same on 0- and 1-based indices
                cand = cand[(cand == closest) | (sim[i, cand] > t["tau5"])]
        align[i, cand] = True
    return align


def _runs(cols: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs of consecutive integers as (first, last)."""
    runs: list[tuple[int, int]] = []
    for c in cols.tolist():
        if runs and c == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], c)
        else:
            runs.append((c, c))
    return runs


def links_from_matrix(align: np.ndarray, sim_p: np.ndarray) -> list[Link]:
    """(complex_paragraph, simple_paragraph, score) for every link, score = simP[0] (Algorithm 1: the
    average of maxima; Algorithm 3: the maximum)."""
    ii, jj = np.nonzero(align)
    return sorted((int(j), int(i), round(float(sim_p[0, i, j]), 6)) for i, j in zip(ii, jj, strict=True))


def align_paragraphs(pair: DocPair, similarity: str = "tfidf", algorithm: str = "news",
                     thresholds: dict | None = None, sentence_matrix: np.ndarray | None = None) -> list[Link]:
    """Paragraph links of one document pair: ``(complex_paragraph, simple_paragraph, score)``, 0-based.

    "news": Algorithms 1 + 2; "wikipedia": Algorithms 3 + 4; ``sentence_matrix`` (m x n, simple rows)
    replaces the ``similarity`` measure's.
    """
    defaults(algorithm)  # validates the name
    if sentence_matrix is None:
        sentence_matrix = similarity_matrix(similarity, pair.simple_sentences(), pair.complex_sentences())
    sim_p = similarity_for(algorithm, sentence_matrix, pair)
    align = align_news(sim_p, thresholds) if algorithm == "news" else align_wikipedia(sim_p, thresholds)
    return links_from_matrix(align, sim_p)


def merge_groups(links: Sequence[Link]) -> list[tuple[int, list[int]]]:
    """Merge neighbouring complex paragraphs linked to the same simple paragraph.

    Returns ``(simple_paragraph, [complex paragraphs of one run])`` groups, sorted.
    """
    by_simple: dict[int, list[int]] = {}
    for c, s, _ in links:
        by_simple.setdefault(s, []).append(c)
    groups = []
    for s in sorted(by_simple):
        for j0, j1 in _runs(np.array(sorted(set(by_simple[s])))):
            groups.append((s, list(range(j0, j1 + 1))))
    return groups


# ---- the tuner (gold paragraph links: alignment_engine.gold) --------------------------------

@dataclass
class TuningResult:
    algorithm: str
    similarity: str
    thresholds: dict[str, float]
    precision: float
    recall: float
    f1: float
    default_precision: float
    default_recall: float
    default_f1: float
    objective: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _score(pred: set, gold: set, beta: float) -> tuple[float, float, float]:
    tp = len(pred & gold)
    p = tp / len(pred) if pred else 0.0
    r = tp / len(gold) if gold else 0.0
    b2 = beta * beta
    f = (1 + b2) * p * r / (b2 * p + r) if p + r else 0.0
    return p, r, f


SIMILARITY_GRID: list[float] = np.round(np.concatenate([np.arange(0.0, 0.3, 0.02), np.arange(0.3, 1.001, 0.05)]),
                                        3).tolist()
DISTANCE_GRID: list[float] = [0.05, 0.1, 0.15, 0.2, 0.25, 0.35, 0.5, 0.75, 1.01]


def default_grid(algorithm: str) -> dict[str, list[float]]:
    """The tuner's search grid per threshold: similarities, relative distances, Algorithm 4's spread share
    (tau3) and paragraph count (tau4)."""
    if algorithm == "news":
        return {"tau1": SIMILARITY_GRID, "tau2": DISTANCE_GRID, "tau3": SIMILARITY_GRID, "tau4": SIMILARITY_GRID,
                "tau5": DISTANCE_GRID}
    return {"tau1": SIMILARITY_GRID, "tau2": DISTANCE_GRID, "tau3": [0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.01],
            "tau4": [0, 1, 2, 3, 5, 8, 1000], "tau5": SIMILARITY_GRID}


def tune_thresholds(pairs: Sequence[DocPair], gold: Sequence[Alignment], similarity: str = "tfidf",
                    algorithm: str = "news", beta: float = 1.0, rounds: int = 2,
                    grid: dict[str, Sequence[float]] | None = None) -> TuningResult:
    """Coordinate search for the thresholds that maximise paragraph-level F_beta on a dev set.

    Gold paragraph links come from the gold sentence alignments (:func:`gold_paragraph_links`).
    ``beta > 1`` favours recall (paragraph alignment prunes candidates; a missed link loses sentence pairs).
    """
    start = defaults(algorithm)
    gold_links = gold_paragraph_links(pairs, gold)
    cache = []
    for pair in pairs:
        sm = similarity_matrix(similarity, pair.simple_sentences(), pair.complex_sentences())
        cache.append((pair, similarity_for(algorithm, sm, pair)))

    def predict(th: dict[str, float]) -> set[tuple[str, int, int]]:
        out: set[tuple[str, int, int]] = set()
        for pair, sim_p in cache:
            align = align_news(sim_p, th) if algorithm == "news" else align_wikipedia(sim_p, th)
            ii, jj = np.nonzero(align)
            out.update((pair.pair_id, int(j), int(i)) for i, j in zip(ii, jj, strict=True))
        return out

    grid = {**default_grid(algorithm), **(grid or {})}
    start_links = predict(start)
    d_p, d_r, d_f = _score(start_links, gold_links, 1.0)
    best = dict(start)
    best_f = _score(start_links, gold_links, beta)[2]
    for _ in range(rounds):
        changed = False
        for name, candidates in grid.items():
            for v in candidates:
                trial = {**best, name: float(v)}
                f = _score(predict(trial), gold_links, beta)[2]
                if f > best_f + 1e-12:
                    best, best_f, changed = trial, f, True
        if not changed:
            break
    p, r, f1 = _score(predict(best), gold_links, 1.0)
    objective = "F1" if beta == 1.0 else f"F{beta:g}"
    return TuningResult(algorithm, similarity, best, round(p, 6), round(r, 6), round(f1, 6),
                        round(d_p, 6), round(d_r, 6), round(d_f, 6), objective)


def candidate_pairs(pair: DocPair, links: Sequence[Link]) -> list[tuple[str, str]]:
    """(simple_id, complex_id) of every sentence pair inside linked paragraphs (the paper's Newsela strategy)."""
    out: list[tuple[str, str]] = []
    seen: set[tuple[int, int]] = set()
    for c, s, _ in links:
        if (c, s) in seen or not (0 <= c < len(pair.complex)) or not (0 <= s < len(pair.simple)):
            continue
        seen.add((c, s))
        for si, ci in itertools.product(range(len(pair.simple[s])), range(len(pair.complex[c]))):
            out.append((sentence_id(pair.pair_id, SIMPLE, s, si), sentence_id(pair.pair_id, COMPLEX, c, ci)))
    return sorted(set(out))
