"""Simulated studies with known truth (no Django): systems of known quality, raters of known
bias and noise, items of varying difficulty. Used by ``scripts/evaluation_simulation.py`` to
check that the statistics recover the true ranking and that the 95% intervals cover the true
means, and by the tests.

Model of one rating: ``latent = q[system, dim] + u[item] + g[item, system] + bias[rater] + e``
with ``e ~ N(0, noise[rater])``; the observed value is the latent rounded and clipped to the
scale (Likert 1..5, comparative -2..+2, slider 0..100). The *true mean* of a system is the
expected observed value over the populations of items and raters (computed by Monte Carlo with
a million draws), i.e. what an infinitely large study would report.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from annotation.evaluation.stats import RatingRow, Summary, summarize


@dataclass(frozen=True)
class SimConfig:
    design: str
    qualities: dict[str, tuple[float, ...]]  # system -> latent quality per dimension
    dimensions: tuple[str, ...]
    low: float
    high: float
    item_sd: float
    interaction_sd: float
    bias_sd: float
    noise: tuple[float, float]  # rater noise sd drawn uniformly from this range
    n_items: int = 100
    raters_per_item: int = 5
    pool: int = 20
    rounding: bool = True


LIKERT_SIM = SimConfig(
    "likert",
    {"sysA": (4.3, 3.9, 3.0), "sysB": (3.9, 3.5, 3.4), "sysC": (3.4, 3.1, 3.8), "sysD": (2.8, 2.6, 4.2)},
    ("fluency", "adequacy", "simplicity"), 1, 5, item_sd=0.5, interaction_sd=0.4, bias_sd=0.35, noise=(0.4, 1.0),
)
SLIDER_SIM = SimConfig(
    "slider", {"sysA": (78.0,), "sysB": (66.0,), "sysC": (55.0,), "sysD": (42.0,)}, ("quality",), 0, 100,
    item_sd=10, interaction_sd=8, bias_sd=8, noise=(8, 18),
)
COMPARATIVE_SIM = SimConfig(
    "comparative", {"sysA": (0.9,), "sysB": (0.3,), "sysC": (-0.2,), "sysD": (-0.8,)}, ("comparative",), -2, 2,
    item_sd=0.4, interaction_sd=0.3, bias_sd=0.3, noise=(0.4, 0.8),
)
CONFIGS = {c.design: c for c in (LIKERT_SIM, SLIDER_SIM, COMPARATIVE_SIM)}


def closer(cfg: SimConfig, factor: float) -> SimConfig:
    """The same study with every system's quality moved towards the mean of the systems by
    ``factor`` (0.25 = gaps a quarter as large): a harder ranking problem."""
    n = len(cfg.qualities)
    means = [sum(q[d] for q in cfg.qualities.values()) / n for d in range(len(cfg.dimensions))]
    qualities = {s: tuple(m + factor * (v - m) for v, m in zip(q, means, strict=True)) for s, q in cfg.qualities.items()}
    return replace(cfg, qualities=qualities)


def _observe(latent: np.ndarray, cfg: SimConfig) -> np.ndarray:
    values = np.rint(latent) if cfg.rounding else latent
    return np.clip(values, cfg.low, cfg.high)


def true_means(cfg: SimConfig, draws: int = 1_000_000, seed: int = 12345) -> dict[tuple[str, str], float]:
    """Expected observed value per (system, dimension) over items and raters."""
    rng = np.random.default_rng(seed)
    shared = (
        rng.normal(0, cfg.item_sd, draws) + rng.normal(0, cfg.bias_sd, draws)
        + rng.normal(0, 1, draws) * rng.uniform(*cfg.noise, draws)
    )
    out = {}
    for system, qs in cfg.qualities.items():
        for d, dim in enumerate(cfg.dimensions):
            latent = qs[d] + shared + rng.normal(0, cfg.interaction_sd, draws)
            out[(system, dim)] = float(_observe(latent, cfg).mean())
    return out


def simulate_rows(cfg: SimConfig, rng: np.random.Generator) -> list[RatingRow]:
    """One study: every item rated by ``raters_per_item`` distinct raters of the pool, every
    rater scoring every system's output on every dimension (as on one page)."""
    bias = rng.normal(0, cfg.bias_sd, cfg.pool)
    noise = rng.uniform(*cfg.noise, cfg.pool)
    systems = list(cfg.qualities)
    rows: list[RatingRow] = []
    for i in range(cfg.n_items):
        u = rng.normal(0, cfg.item_sd)
        g = rng.normal(0, cfg.interaction_sd, (len(systems), len(cfg.dimensions)))
        for r in rng.choice(cfg.pool, size=cfg.raters_per_item, replace=False):
            for s, system in enumerate(systems):
                for d, dim in enumerate(cfg.dimensions):
                    latent = cfg.qualities[system][d] + u + g[s, d] + bias[r] + rng.normal(0, noise[r])
                    rows.append(RatingRow(f"i{i}", system, f"r{r}", dim, float(_observe(np.array(latent), cfg))))
    return rows


@dataclass
class SimReport:
    design: str
    studies: int
    bootstrap: str
    coverage: float  # share of (study, system, dimension) intervals containing the true mean
    coverage_by_dimension: dict[str, float]
    ranking_recovered: float  # share of (study, dimension) whose mean order equals the true order
    mean_half_width: float
    adjacent_significant: float  # share of adjacent-in-truth pairs with Holm p < 0.05
    truth: dict[str, dict[str, float]] = field(default_factory=dict)


def run(cfg: SimConfig, studies: int = 200, seed: int = 0, bootstrap: str = "two_way", n_boot: int = 1000) -> SimReport:
    truth = true_means(cfg)
    systems = list(cfg.qualities)
    covered: dict[str, list[bool]] = {d: [] for d in cfg.dimensions}
    recovered, widths, adjacent = [], [], []
    for k in range(studies):
        rng = np.random.default_rng([seed, k])
        rows = simulate_rows(cfg, rng)
        summary: Summary = summarize(rows, systems, cfg.dimensions, n_boot=n_boot, seed=k, bootstrap=bootstrap)
        for dim in cfg.dimensions:
            scores = {s.system: s for s in summary.scores if s.dimension == dim}
            for system in systems:
                s = scores[system]
                covered[dim].append(s.ci_low <= truth[(system, dim)] <= s.ci_high)
                widths.append((s.ci_high - s.ci_low) / 2)
            true_order = sorted(systems, key=lambda x: -truth[(x, dim)])
            recovered.append(sorted(systems, key=lambda x: -scores[x].mean) == true_order)
            tests = {frozenset((p.system_a, p.system_b)): p for p in summary.pairs if p.dimension == dim}
            adjacent += [tests[frozenset(pair)].significant for pair in zip(true_order, true_order[1:], strict=False)]
    flat = [c for cs in covered.values() for c in cs]
    return SimReport(
        cfg.design, studies, bootstrap, float(np.mean(flat)), {d: float(np.mean(c)) for d, c in covered.items()},
        float(np.mean(recovered)), float(np.mean(widths)), float(np.mean(adjacent)),
        {system: {dim: round(truth[(system, dim)], 4) for dim in cfg.dimensions} for system in systems},
    )
