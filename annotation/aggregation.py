"""Aggregating crowd judgments into one label per item, vectorised with numpy (no Django here).

Two methods, both returning a label, a confidence in [0, 1] and the vote counts per item:

- **majority vote**: the most frequent label; the confidence is its share of the item's votes.
  Tie rule (``agreement.TIE_PRIORITY``): among tied labels partialAligned wins, then
  notAligned, then aligned. "aligned" is the strongest claim and the one a training set is
  hurt by most when wrong, so it needs a strict plurality; partialAligned is the middle of the
  ordinal scale, so a split between neighbours lands on it. Tied items have a confidence of at
  most 0.5 and come first in the verification queue, where a person decides.
- **Dawid-Skene** (1979): expectation-maximisation over one confusion matrix per annotator and
  the label priors, started from the soft majority vote; the confidence is the posterior
  probability of the chosen label. It weighs reliable annotators more, so it beats the
  majority when accuracies differ (see ``scripts/simulate_job.py``). Posterior ties use the
  same tie rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from annotation.agreement import Judgments, argmax_with_ties, label_counts


@dataclass
class Aggregate:
    """Per item code, shape (n_items,) each; ``counts`` (n_items, K)."""

    labels: np.ndarray
    confidence: np.ndarray
    counts: np.ndarray
    method: str

    @property
    def disagreement(self) -> np.ndarray:
        return disagreement(self.counts)


def disagreement(counts: np.ndarray) -> np.ndarray:
    """bool (n_items,) from label counts (n_items, K): the raters of the item did not all give the same label."""
    return (counts > 0).sum(axis=1) > 1


def majority_vote(j: Judgments, counts: np.ndarray | None = None) -> Aggregate:
    counts = label_counts(j) if counts is None else counts
    labels = argmax_with_ties(counts)
    m = counts.sum(axis=1)
    top = counts[np.arange(len(counts)), labels]
    confidence = np.where(m > 0, top / np.maximum(m, 1), 0.0)
    return Aggregate(labels=labels, confidence=confidence, counts=counts, method="majority")


@dataclass
class DawidSkeneResult(Aggregate):
    posterior: np.ndarray | None = None  # shape (n_items, K)
    priors: np.ndarray | None = None  # shape (K,)
    confusions: np.ndarray | None = None  # shape (n_annotators, K true, K given), rows sum to 1
    iterations: int = 0
    converged: bool = False
    log_likelihood: float = float("nan")

    @property
    def annotator_accuracy(self) -> np.ndarray:
        """shape (n_annotators,): estimated probability that each annotator gives the true label."""
        if self.confusions is None or self.priors is None:
            raise ValueError("no confusion matrices: the result was not produced by dawid_skene()")
        return (np.diagonal(self.confusions, axis1=1, axis2=2) * self.priors[None, :]).sum(axis=1)


def _m_step(counts_t: sparse.csr_matrix, posterior: np.ndarray, n_annotators: int, smoothing: float) -> tuple[np.ndarray, np.ndarray]:
    """Priors (K,) and log confusions laid out as (n_annotators * K given, K true) for the E-step.

    ``counts_t`` (n_annotators * K, n_items) counts judgment (annotator, given label) per item,
    so one sparse product sums the posteriors of every annotator's judgments per label.
    """
    k = posterior.shape[1]
    priors = posterior.sum(axis=0) + smoothing
    priors /= priors.sum()
    conf = np.asarray(counts_t @ posterior) + smoothing  # row: annotator * K + given label, column: true label
    conf3 = conf.reshape(n_annotators, k, k)  # (annotator, given, true)
    conf3 /= conf3.sum(axis=1, keepdims=True)  # normalise over the given label
    return priors, np.log(conf)


def _e_step(counts: sparse.csr_matrix, log_priors: np.ndarray, log_conf: np.ndarray) -> tuple[np.ndarray, float]:
    """Posterior (n_items, K) and log-likelihood; ``counts`` is (n_items, n_annotators * K)."""
    log_post = np.asarray(counts @ log_conf) + log_priors[None, :]
    top = log_post.max(axis=1, keepdims=True)
    post = np.exp(log_post - top)
    norm = post.sum(axis=1, keepdims=True)
    post /= norm
    return post, float((np.log(norm) + top).sum())


def dawid_skene(
    j: Judgments,
    max_iter: int = 100,
    tol: float = 1e-5,
    smoothing: float = 0.01,
    counts: np.ndarray | None = None,
) -> DawidSkeneResult:
    """Dawid-Skene EM. Stops when no posterior moves by more than ``tol`` or after ``max_iter`` rounds.

    ``smoothing`` is a pseudo-count added to every confusion cell and prior (keeps log finite
    for annotators who never used a label).
    """
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    counts = label_counts(j) if counts is None else counts
    k = j.n_labels
    key = j.annotators * k + j.labels
    # shape (n_items, n_annotators * K): which annotator gave which label to which item
    by_item = sparse.csr_matrix((np.ones(j.size), (j.items, key)), shape=(j.n_items, j.n_annotators * k))
    by_key = by_item.T.tocsr()
    m = counts.sum(axis=1, keepdims=True).astype(np.float64)
    posterior = np.where(m > 0, counts / np.maximum(m, 1), 1.0 / k)
    converged, log_likelihood, iterations = False, float("nan"), 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 - reported below
        priors, log_conf = _m_step(by_key, posterior, j.n_annotators, smoothing)
        new_posterior, log_likelihood = _e_step(by_item, np.log(priors), log_conf)
        delta = float(np.abs(new_posterior - posterior).max()) if len(posterior) else 0.0
        posterior = new_posterior
        if delta < tol:
            converged = True
            break
    labels = argmax_with_ties(posterior, exact=False)
    confidence = posterior[np.arange(len(posterior)), labels]
    confusions = np.exp(log_conf).reshape(j.n_annotators, k, k).transpose(0, 2, 1)  # (annotator, true, given)
    return DawidSkeneResult(
        labels=labels,
        confidence=confidence,
        counts=counts,
        method="dawid_skene",
        posterior=posterior,
        priors=priors,
        confusions=confusions,
        iterations=iterations,
        converged=converged,
        log_likelihood=log_likelihood,
    )


def aggregate(j: Judgments, method: str = "majority", counts: np.ndarray | None = None) -> Aggregate:
    """Dispatch by method name: ``majority`` or ``dawid_skene``."""
    if method == "majority":
        return majority_vote(j, counts)
    if method == "dawid_skene":
        return dawid_skene(j, counts=counts)
    raise ValueError(f"unknown aggregation method {method!r}; expected 'majority' or 'dawid_skene'")
