"""Simulated crowd jobs with annotators of known accuracy, and what theory says they should give.

Model: each item has a true label drawn from ``priors``; an annotator of accuracy ``a`` gives
the true label with probability ``a`` and each other label with probability ``(1 - a)/(K - 1)``.
Annotators come in tiers (one accuracy each, ``per_tier`` annotators per tier) and every item
is judged by one random annotator of every tier, so each item sees every accuracy once.

The ``expected_*`` functions compute the population values of the measures from the
accuracies and priors alone, so a test can check the measured figures against them.
No Django here.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from annotation.agreement import LABELS, Judgments, tie_bonus

DEFAULT_ACCURACIES: tuple[float, ...] = (0.95, 0.9, 0.8, 0.7, 0.6)
# A plausible label distribution for candidate pairs inside aligned paragraphs (label order of LABELS:
# aligned, partialAligned, notAligned).
DEFAULT_PRIORS: tuple[float, ...] = (0.25, 0.15, 0.60)


@dataclass
class SimulatedJob:
    judgments: Judgments
    truth: np.ndarray  # shape (n_items,) true label codes
    annotator_accuracy: np.ndarray  # shape (n_annotators,)


def response_matrix(accuracy: float, k: int = len(LABELS)) -> np.ndarray:
    """shape (K true, K given): P(given | true) for an annotator of this accuracy."""
    m = np.full((k, k), (1.0 - accuracy) / (k - 1))
    np.fill_diagonal(m, accuracy)
    return m


def simulate(
    n_items: int,
    accuracies: tuple[float, ...] = DEFAULT_ACCURACIES,
    priors: tuple[float, ...] = DEFAULT_PRIORS,
    per_tier: int = 5,
    seed: int = 0,
) -> SimulatedJob:
    rng = np.random.default_rng(seed)
    k, tiers = len(priors), len(accuracies)
    pri = np.asarray(priors, dtype=np.float64)
    if abs(pri.sum() - 1.0) > 1e-9:
        raise ValueError(f"priors must sum to 1, got {pri.sum()}")
    truth = rng.choice(k, size=n_items, p=pri)
    annotator_accuracy = np.repeat(np.asarray(accuracies, dtype=np.float64), per_tier)  # tier-major codes
    # shape (n_items, tiers): one annotator of each tier per item
    chosen = rng.integers(0, per_tier, size=(n_items, tiers)) + np.arange(tiers)[None, :] * per_tier
    acc = annotator_accuracy[chosen]
    correct = rng.random((n_items, tiers)) < acc
    wrong = (truth[:, None] + rng.integers(1, k, size=(n_items, tiers))) % k  # uniform over the other labels
    labels = np.where(correct, truth[:, None], wrong)
    j = Judgments(
        items=np.repeat(np.arange(n_items, dtype=np.int64), tiers),
        annotators=chosen.ravel().astype(np.int64),
        labels=labels.ravel().astype(np.int64),
        n_items=n_items,
        n_annotators=tiers * per_tier,
        n_labels=k,
    )
    return SimulatedJob(judgments=j, truth=truth, annotator_accuracy=annotator_accuracy)


def _marginal(accuracy: float, pri: np.ndarray) -> np.ndarray:
    return pri @ response_matrix(accuracy, len(pri))


def expected_pair_kappa(a_u: float, a_v: float, priors: tuple[float, ...] = DEFAULT_PRIORS) -> float:
    """Population Cohen's kappa of two annotators with independent errors."""
    pri = np.asarray(priors)
    k = len(pri)
    p_o = a_u * a_v + (1 - a_u) * (1 - a_v) / (k - 1)
    p_e = float(_marginal(a_u, pri) @ _marginal(a_v, pri))
    return (p_o - p_e) / (1 - p_e)


def expected_mean_kappa(accuracies: tuple[float, ...] = DEFAULT_ACCURACIES, priors: tuple[float, ...] = DEFAULT_PRIORS) -> float:
    """Mean pairwise kappa in ``simulate``: only annotators of different tiers share items and
    every pair of tiers has the same number of annotator pairs."""
    return float(np.mean([expected_pair_kappa(a, b, priors) for a, b in itertools.combinations(accuracies, 2)]))


def expected_fleiss(accuracies: tuple[float, ...] = DEFAULT_ACCURACIES, priors: tuple[float, ...] = DEFAULT_PRIORS) -> float:
    """Population Fleiss' kappa (and, for many items, Krippendorff's alpha) with one rater per tier."""
    pri = np.asarray(priors)
    k = len(pri)
    p_o = np.mean([a * b + (1 - a) * (1 - b) / (k - 1) for a, b in itertools.combinations(accuracies, 2)])
    p = np.mean([_marginal(a, pri) for a in accuracies], axis=0)
    p_e = float(p @ p)
    return float((p_o - p_e) / (1 - p_e))


def _outcomes(accuracies: tuple[float, ...], priors: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Every combination of given labels (C, tiers) and its joint probability with each truth (C, K)."""
    pri = np.asarray(priors)
    k = len(pri)
    combos = np.array(list(itertools.product(range(k), repeat=len(accuracies))))
    joint = np.tile(pri, (len(combos), 1))
    for tier, a in enumerate(accuracies):
        joint *= response_matrix(a, k).T[combos[:, tier]]  # P(given | true) for each truth
    return combos, joint


def expected_majority_accuracy(accuracies: tuple[float, ...] = DEFAULT_ACCURACIES, priors: tuple[float, ...] = DEFAULT_PRIORS) -> float:
    """Probability that majority vote (with the tie rule) returns the true label."""
    combos, joint = _outcomes(accuracies, priors)
    k = len(priors)
    counts = np.stack([(combos == c).sum(axis=1) for c in range(k)], axis=1)
    winner = np.argmax(counts + tie_bonus()[None, :], axis=1)
    return float(joint[np.arange(len(combos)), winner].sum())


def expected_bayes_accuracy(accuracies: tuple[float, ...] = DEFAULT_ACCURACIES, priors: tuple[float, ...] = DEFAULT_PRIORS) -> float:
    """Best achievable accuracy knowing every annotator's confusion matrix (what Dawid-Skene approaches)."""
    _, joint = _outcomes(accuracies, priors)
    return float(joint.max(axis=1).sum())
