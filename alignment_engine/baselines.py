"""Similarity-only baseline aligners, each with one threshold chosen on dev for maximum F1.

- :class:`BestMatchAligner`: every simple sentence takes its most similar complex sentence when the score
  exceeds the threshold (CATS's *closest similarity* strategy when the measure is C3G).
- :class:`JaccardAlign`: greedy one-to-one matching over word Jaccard (Xu et al. 2015): pairs are taken in
  decreasing similarity while above the threshold and while neither sentence is taken yet.
- :class:`CatsSequenceAligner`: CATS's *keeping sequence* strategy (Stajner et al. 2018): the simple
  sentences are visited in order and each may only take a complex sentence at or after the previous
  simple sentence's choice.
- :class:`MassAlignAligner`: a MASSAlign-style vicinity-driven search over TF-IDF (Paetzold et al. 2017):
  starting from the best pair among the first sentences, repeatedly move to the best cell of the
  vicinity ahead (one step down, right or diagonal, then a wider window) while it is above the threshold;
  when the vicinity holds nothing, jump to the best remaining cell ahead (long-distance alignment).
  Cells of the vicinity that join an alignment as a 1-N / N-1 step are kept too.

All produce ``aligned`` rows only (they cannot tell partial alignments apart). :func:`tune_threshold`
picks a threshold on labelled pairs; the defaults in :data:`DEFAULT_THRESHOLDS` were tuned on DEplain-web
train (docs/engine.md lists dev-tuned figures as the paper does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from alignment_engine.evaluation import evaluate
from alignment_engine.rows import rows_from_matrix
from alignment_engine.similarity import LogisticSimilarity, similarity_matrix
from alignment_engine.types import Alignment, DocPair, ProgressCallback

DEFAULT_THRESHOLDS: dict[str, float] = {  # Task 1 F1 optimum on DEplain-web train (`tune --method M`)
    "jaccard": 0.13,
    "jaccard-best": 0.17,
    "tfidf": 0.23,
    "c3g": 0.25,
    "cats-closest": 0.25,
    "cats-sequence": 0.35,
    "massalign": 0.1,
    "lr": 0.22,
    "minilm": 0.6,
}


class MatrixAligner:
    """Base class: compute one similarity matrix per pair, then decide pairs from it with a threshold."""

    measure = "c3g"
    name = "matrix"

    def __init__(self, threshold: float | None = None, device: str = "cpu") -> None:
        self.threshold = DEFAULT_THRESHOLDS.get(self.name, 0.5) if threshold is None else float(threshold)
        self.device = device

    def scores(self, pair: DocPair) -> np.ndarray:
        return similarity_matrix(self.measure, pair.simple_sentences(), pair.complex_sentences(), device=self.device)

    def decide(self, scores: np.ndarray, threshold: float) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def rows(self, pair: DocPair, scores: np.ndarray, threshold: float) -> list[Alignment]:
        if scores.size == 0:
            return []
        return rows_from_matrix(pair, self.decide(scores, threshold), scores)

    def align(self, pairs: Sequence[DocPair], progress: ProgressCallback | None = None) -> list[list[Alignment]]:
        out = []
        for k, pair in enumerate(pairs):
            out.append(self.rows(pair, self.scores(pair), self.threshold))
            if progress is not None:
                progress(k + 1, len(pairs))
        return out


class BestMatchAligner(MatrixAligner):
    def __init__(self, measure: str = "c3g", threshold: float | None = None, device: str = "cpu",
                 name: str | None = None) -> None:
        self.measure = measure
        self.name = name or measure
        super().__init__(threshold, device)

    def decide(self, scores: np.ndarray, threshold: float) -> np.ndarray:
        out = np.zeros(scores.shape, dtype=bool)
        rows = np.arange(scores.shape[0])
        best = scores.argmax(axis=1)
        ok = scores[rows, best] > threshold
        out[rows[ok], best[ok]] = True
        return out


class LogisticAligner(BestMatchAligner):
    """Best match over the logistic-regression probability (``LogisticSimilarity``)."""

    def __init__(self, model: LogisticSimilarity | None = None, threshold: float | None = None) -> None:
        super().__init__("lr", threshold, name="lr")
        self.model = model or LogisticSimilarity.default()

    def scores(self, pair: DocPair) -> np.ndarray:
        return self.model(pair.simple_sentences(), pair.complex_sentences())


class JaccardAlign(MatrixAligner):
    measure = "jaccard"
    name = "jaccard"

    def decide(self, scores: np.ndarray, threshold: float) -> np.ndarray:
        out = np.zeros(scores.shape, dtype=bool)
        flat = np.flatnonzero(scores.ravel() > threshold)
        order = flat[np.argsort(-scores.ravel()[flat], kind="stable")]
        used_s = np.zeros(scores.shape[0], dtype=bool)
        used_c = np.zeros(scores.shape[1], dtype=bool)
        for idx in order.tolist():  # loop over candidate cells above the threshold only
            i, j = divmod(idx, scores.shape[1])
            if not used_s[i] and not used_c[j]:
                out[i, j] = used_s[i] = used_c[j] = True
        return out


class CatsSequenceAligner(MatrixAligner):
    measure = "c3g"
    name = "cats-sequence"

    def decide(self, scores: np.ndarray, threshold: float) -> np.ndarray:
        out = np.zeros(scores.shape, dtype=bool)
        last = 0
        for i in range(scores.shape[0]):
            row = scores[i, last:]
            if row.size == 0:
                break
            j = last + int(row.argmax())
            if scores[i, j] > threshold:
                out[i, j] = True
                last = j
        return out


class MassAlignAligner(MatrixAligner):
    measure = "tfidf"
    name = "massalign"

    def __init__(self, threshold: float | None = None, device: str = "cpu", window: int = 3) -> None:
        super().__init__(threshold, device)
        self.window = window

    def decide(self, scores: np.ndarray, threshold: float) -> np.ndarray:
        m, n = scores.shape
        out = np.zeros((m, n), dtype=bool)
        w = self.window
        block = scores[:w, :w]
        first = np.unravel_index(int(block.argmax()), block.shape)
        i, j = int(first[0]), int(first[1])
        if scores[i, j] > threshold:
            out[i, j] = True
        while True:
            # first vicinity: next simple, next complex, or both; then a wider window ahead
            best: tuple[int, int] | None = None
            for di, dj in ((1, 1), (1, 0), (0, 1)):
                a, b = i + di, j + dj
                if a < m and b < n and (best is None or scores[a, b] > scores[best]):
                    best = (a, b)
            if best is None or scores[best] <= threshold:
                sub = scores[i + 1 : i + 1 + w, j : j + w + 1] if i + 1 < m else np.zeros((0, 0))
                if sub.size and sub.max() > threshold:
                    cell = np.unravel_index(int(sub.argmax()), sub.shape)
                    best = (i + 1 + int(cell[0]), j + int(cell[1]))
                elif i + 1 < m:
                    rest = scores[i + 1 :, :]
                    cell = np.unravel_index(int(rest.argmax()), rest.shape)
                    best = (i + 1 + int(cell[0]), int(cell[1]))  # long-distance jump to the best remaining cell
                else:
                    break
            i, j = best
            if scores[i, j] > threshold:
                out[i, j] = True
        return out


def make_baseline(method: str, threshold: float | None = None, device: str = "cpu") -> MatrixAligner:
    if method == "jaccard":
        return JaccardAlign(threshold, device)
    if method in ("c3g", "cats", "cats-closest"):
        return BestMatchAligner("c3g", threshold, device, name="cats-closest")
    if method == "cats-sequence":
        return CatsSequenceAligner(threshold, device)
    if method == "massalign":
        return MassAlignAligner(threshold, device)
    if method == "lr":
        return LogisticAligner(threshold=threshold)
    if method in ("tfidf", "minilm", "jaccard-best"):
        measure = "jaccard" if method == "jaccard-best" else method
        return BestMatchAligner(measure, threshold, device, name=method)
    raise ValueError(f"unknown baseline {method!r}")


BASELINES = ("jaccard", "jaccard-best", "tfidf", "c3g", "cats", "cats-closest", "cats-sequence", "massalign", "lr",
             "minilm")


@dataclass
class ThresholdResult:
    threshold: float
    task1: dict
    task2: dict
    curve: list[tuple[float, float]]


def tune_threshold(aligner: MatrixAligner, pairs: Sequence[DocPair], gold: Sequence[Alignment],
                   grid: Sequence[float] | None = None) -> ThresholdResult:
    """The threshold of ``aligner`` with the best Task 1 F1 on (pairs, gold); sets ``aligner.threshold``."""
    grid = list(np.round(np.arange(0.0, 1.0, 0.01), 3)) if grid is None else list(grid)
    cached = [(pair, aligner.scores(pair)) for pair in pairs]
    best: ThresholdResult | None = None
    curve = []
    for t in grid:
        pred = [row for pair, s in cached for row in aligner.rows(pair, s, float(t))]
        res = evaluate(gold, pred, pairs)
        curve.append((float(t), res["task1"]["f1"]))
        if best is None or res["task1"]["f1"] > best.task1["f1"]:
            best = ThresholdResult(float(t), res["task1"], res["task2"], [])
    if best is None:
        raise ValueError("empty threshold grid")
    best.curve = curve
    aligner.threshold = best.threshold
    return best
