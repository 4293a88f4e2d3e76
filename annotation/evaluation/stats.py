"""Statistics of a human evaluation (numpy/scipy, no Django).

- per system and dimension: mean, standard deviation, n, and a 95% bootstrap interval;
- pairwise differences between systems on per-item means: paired permutation (sign-flip) test
  or Wilcoxon signed-rank, Holm-corrected within each dimension;
- inter-rater agreement: Krippendorff's alpha (the ``krippendorff`` package), ordinal for
  Likert and comparative scales, interval for the slider.

The default interval resamples items *and* raters (the "pigeonhole" bootstrap of Owen 2007 for
crossed random effects): a study's raters are a sample too, and a rater's bias moves every mean
they contribute to. Resampling items alone ignores that and undercovers; see
``docs/human-evaluation.md`` for the simulated coverage of both.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats as sps

BOOTSTRAPS = ("two_way", "items")
TESTS = ("permutation", "wilcoxon")
DEFAULT_BOOTSTRAP = "two_way"
DEFAULT_TEST = "permutation"
EXACT_PERMUTATION_MAX_N = 16


@dataclass(frozen=True)
class RatingRow:
    item: str
    system: str
    rater: str
    dimension: str
    value: float


@dataclass(frozen=True)
class SystemScore:
    system: str
    dimension: str
    mean: float
    sd: float
    ci_low: float
    ci_high: float
    n: int  # ratings
    n_items: int
    n_raters: int

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class PairTest:
    dimension: str
    system_a: str
    system_b: str
    mean_diff: float  # a - b over per-item means
    n_items: int
    p_value: float
    p_holm: float
    method: str

    @property
    def significant(self) -> bool:
        return self.p_holm < 0.05

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "significant": self.significant}


def mean_sd(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return math.nan, math.nan
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0


def bootstrap_weights(n_items: int, n_raters: int, n_boot: int, seed: int, method: str = DEFAULT_BOOTSTRAP) -> tuple[np.ndarray, np.ndarray]:
    """Multiplicities ``(W, V)`` of shape (B, n_items) and (B, n_raters): how often each item and
    rater is drawn in each replicate (raters all 1 for ``items``)."""
    if method not in BOOTSTRAPS:
        raise ValueError(f"bootstrap must be one of {', '.join(BOOTSTRAPS)}, got {method!r}")
    rng = np.random.default_rng(seed)
    w = rng.multinomial(n_items, np.full(n_items, 1.0 / n_items), size=n_boot).astype(float)
    if method == "items":
        v = np.ones((n_boot, n_raters))
    else:
        v = rng.multinomial(n_raters, np.full(n_raters, 1.0 / n_raters), size=n_boot).astype(float)
    return w, v


def bootstrap_ci(
    item_idx: np.ndarray, rater_idx: np.ndarray, values: np.ndarray, w: np.ndarray, v: np.ndarray, level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of the weighted mean over replicates; ratings of rows (item, rater)
    count ``W[b, item] * V[b, rater]`` times in replicate ``b``."""
    if values.size == 0:
        return math.nan, math.nan
    means = np.empty(w.shape[0])
    for start in range(0, w.shape[0], 256):  # bounded memory: 256 x n_ratings at a time
        weights = w[start:start + 256, item_idx] * v[start:start + 256, rater_idx]
        total = weights.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[start:start + 256] = np.where(total > 0, weights @ values / total, np.nan)
    tail = (1 - level) / 2 * 100
    lo, hi = np.nanpercentile(means, [tail, 100 - tail])
    return float(lo), float(hi)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (same order as given)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def paired_permutation(differences: Sequence[float] | np.ndarray, n_perm: int = 10_000, seed: int = 0) -> float:
    """Two-sided sign-flip test of mean difference 0: exact up to 16 pairs, else ``n_perm``
    random flips with p = (k + 1) / (n_perm + 1)."""
    d = np.asarray(differences, dtype=float)
    d = d[d != 0]  # zero differences carry no sign information (as in Pratt's rule they change nothing)
    n = d.size
    if n == 0:
        return 1.0
    observed = abs(d.mean()) - 1e-12
    if n <= EXACT_PERMUTATION_MAX_N:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        return float(np.mean(np.abs(signs @ d / n) >= observed))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, n_perm, 2000):
        size = min(2000, n_perm - start)
        signs = rng.choice((1.0, -1.0), size=(size, n))
        hits += int(np.sum(np.abs(signs @ d / n) >= observed))
    return (hits + 1) / (n_perm + 1)


def wilcoxon_p(differences: Sequence[float] | np.ndarray) -> float:
    d = np.asarray(differences, dtype=float)
    if not np.any(d != 0):
        return 1.0
    return float(sps.wilcoxon(d, zero_method="pratt", alternative="two-sided").pvalue)


def krippendorff_alpha(rows: Sequence[RatingRow], level: str) -> tuple[float | None, int]:
    """Alpha over the rows' units (item, system) of one dimension, and the number of units rated
    at least twice; None when fewer than two ratings share a unit or nothing varies."""
    import krippendorff

    raters = sorted({r.rater for r in rows})
    units = sorted({(r.item, r.system) for r in rows})
    if len(raters) < 2 or not units:
        return None, 0
    ri = {r: i for i, r in enumerate(raters)}
    ui = {u: i for i, u in enumerate(units)}
    data = np.full((len(raters), len(units)), np.nan)
    for r in rows:
        data[ri[r.rater], ui[(r.item, r.system)]] = r.value
    paired = int(np.sum(np.sum(~np.isnan(data), axis=0) >= 2))
    if paired == 0 or len(np.unique(data[~np.isnan(data)])) < 2:
        return None, paired
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level)), paired  # type: ignore[arg-type]


@dataclass(frozen=True)
class Summary:
    scores: list[SystemScore]
    pairs: list[PairTest]
    agreement: dict[str, tuple[float | None, int]]  # dimension -> (alpha, units rated twice or more)


def summarize(
    rows: Sequence[RatingRow], systems: Sequence[str], dimensions: Sequence[str], levels: dict[str, str] | None = None,
    n_boot: int = 2000, seed: int = 0, bootstrap: str = DEFAULT_BOOTSTRAP, test: str = DEFAULT_TEST, level: float = 0.95,
) -> Summary:
    """Everything the results page shows, from plain rating rows."""
    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}, got {test!r}")
    items = sorted({r.item for r in rows})
    raters = sorted({r.rater for r in rows})
    item_index = {k: i for i, k in enumerate(items)}
    rater_index = {k: i for i, k in enumerate(raters)}
    scores: list[SystemScore] = []
    pairs: list[PairTest] = []
    agreement: dict[str, tuple[float | None, int]] = {}
    w, v = bootstrap_weights(max(len(items), 1), max(len(raters), 1), n_boot, seed, bootstrap)
    by_key: dict[tuple[str, str], list[RatingRow]] = defaultdict(list)
    for r in rows:
        by_key[(r.dimension, r.system)].append(r)
    for dim in dimensions:
        item_means: dict[str, dict[str, float]] = {}
        for system in systems:
            chosen = by_key.get((dim, system), [])
            values = np.array([r.value for r in chosen], dtype=float)
            mean, sd = mean_sd(values)
            lo, hi = bootstrap_ci(
                np.array([item_index[r.item] for r in chosen], dtype=int),
                np.array([rater_index[r.rater] for r in chosen], dtype=int), values, w, v, level,
            )
            per_item: dict[str, list[float]] = defaultdict(list)
            for r in chosen:
                per_item[r.item].append(r.value)
            item_means[system] = {k: float(np.mean(vals)) for k, vals in per_item.items()}
            scores.append(SystemScore(system, dim, mean, sd, lo, hi, len(chosen), len(per_item), len({r.rater for r in chosen})))
        dim_pairs = []
        for a, b in itertools.combinations(systems, 2):
            shared = sorted(set(item_means[a]) & set(item_means[b]))
            d = np.array([item_means[a][k] - item_means[b][k] for k in shared])
            if d.size == 0:
                p = 1.0
            elif test == "permutation":
                p = paired_permutation(d, seed=seed)
            else:
                p = wilcoxon_p(d)
            dim_pairs.append((a, b, float(d.mean()) if d.size else math.nan, len(shared), p))
        adjusted = holm([p for *_, p in dim_pairs])
        pairs += [PairTest(dim, a, b, md, n, p, ph, test) for (a, b, md, n, p), ph in zip(dim_pairs, adjusted, strict=True)]
        if levels and dim in levels:
            agreement[dim] = krippendorff_alpha([r for r in rows if r.dimension == dim], levels[dim])
    return Summary(scores, pairs, agreement)


def correlation(xs: Sequence[float], ys: Sequence[float]) -> tuple[float | None, float | None]:
    """Pearson and Spearman correlation across systems; None with fewer than 3 systems or no spread."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None
    return float(sps.pearsonr(x, y).statistic), float(sps.spearmanr(x, y).statistic)
