"""Aggregating crowd judgments into one label per item, vectorised with numpy (no Django here).

Four methods (``METHODS``), each returning a label, a confidence in [0, 1] and the vote counts
per item:

- **majority vote**: the most frequent label; the confidence is its share of the item's votes.
  Tie rule (``agreement.TIE_PRIORITY``): among tied labels partialAligned wins, then
  notAligned, then aligned. "aligned" is the strongest claim and the one a training set is
  hurt by most when wrong, so it needs a strict plurality; partialAligned is the middle of the
  ordinal scale, so a split between neighbours lands on it. Tied items have a confidence of at
  most 0.5 and come first in the verification queue, where a person decides.
- **Dawid-Skene** (1979): expectation-maximisation over one confusion matrix per annotator and
  the label priors, started from the soft majority vote.
- **MACE** (Hovy et al. 2013, the aggregator of INCEpTION and Potato): each annotator either
  knows the answer (probability θ, their *competence*) or "spams" from a label distribution ξ
  of their own; uniform prior over the true label; variational Bayes with Beta(0.5, 0.5) and
  Dirichlet(10) priors, the best of several seeded random restarts. A constant-label or random
  clicker gets θ near 0 and stops counting.
- **GLAD** (Whitehill et al. 2009): P(correct) = σ(α_annotator · β_item) with an ability α per
  annotator and an inverse difficulty β > 0 per item (wrong answers uniform over the other
  labels); Gaussian priors N(1, 1) on α and log β; EM with Newton steps in the M-step and
  re-estimated label priors.

The three model-based methods return a ``ModelAggregate``: the confidence is the posterior
probability of the chosen label, posterior ties follow the same tie rule, and each estimates
every annotator's accuracy (P(their label is the true one)). All three are one or two sparse
products (or ``bincount`` calls) over the judgments per iteration; ``scripts/bench_agreement.py``
and ``scripts/simulate_job.py --crowdkit`` compare them with Toloka's crowd-kit
(docs/annotation-quality.md explains why these implementations are kept).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy import sparse
from scipy.special import digamma, expit

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
class ModelAggregate(Aggregate):
    """An aggregation by a latent-truth model fitted with EM."""

    posterior: np.ndarray | None = None  # shape (n_items, K)
    annotator_accuracy: np.ndarray | None = None  # shape (n_annotators,): estimated P(label == truth)
    iterations: int = 0
    converged: bool = False
    log_likelihood: float = float("nan")  # marginal log-likelihood of the judgments under the fit

    def annotator_parameter(self) -> tuple[str, np.ndarray] | None:
        """The model's own per-annotator figure besides the accuracy estimate (name, shape (n_annotators,))."""
        return None


@dataclass
class DawidSkeneResult(ModelAggregate):
    priors: np.ndarray | None = None  # shape (K,)
    confusions: np.ndarray | None = None  # shape (n_annotators, K true, K given), rows sum to 1


@dataclass
class MaceResult(ModelAggregate):
    competence: np.ndarray | None = None  # shape (n_annotators,): θ, the probability of not spamming
    strategy: np.ndarray | None = None  # shape (n_annotators, K): ξ, the label distribution when spamming
    restarts: int = 0  # restarts run
    best_restart: int = 0  # the one kept

    def annotator_parameter(self) -> tuple[str, np.ndarray] | None:
        return None if self.competence is None else ("competence θ", self.competence)


@dataclass
class GladResult(ModelAggregate):
    ability: np.ndarray | None = None  # shape (n_annotators,): α (negative: adversarial)
    inverse_difficulty: np.ndarray | None = None  # shape (n_items,): β > 0
    priors: np.ndarray | None = None  # shape (K,)

    def annotator_parameter(self) -> tuple[str, np.ndarray] | None:
        return None if self.ability is None else ("ability α", self.ability)

    @property
    def difficulty(self) -> np.ndarray:
        """shape (n_items,): 1 / β; large for items on which even able annotators disagree."""
        if self.inverse_difficulty is None:
            raise ValueError("no item parameters: the result was not produced by glad()")
        return 1.0 / self.inverse_difficulty


@dataclass
class _Index:
    """Sparse layouts of the judgments shared by the EM methods.

    ``by_item`` (n_items, n_annotators * K) counts judgment (annotator, given label) per item,
    ``by_key`` is its transpose (CSR), ``key_counts`` (n_annotators * K,) its column sums.
    """

    by_item: sparse.csr_matrix
    by_key: sparse.csr_matrix
    key_counts: np.ndarray


def _index(j: Judgments) -> _Index:
    k = j.n_labels
    key = j.annotators * k + j.labels
    by_item = sparse.csr_matrix((np.ones(j.size), (j.items, key)), shape=(j.n_items, j.n_annotators * k))
    key_counts = np.bincount(key, minlength=j.n_annotators * k).astype(np.float64)
    return _Index(by_item=by_item, by_key=by_item.T.tocsr(), key_counts=key_counts)


def _normalise(log_post: np.ndarray) -> tuple[np.ndarray, float]:
    """Posterior (n_items, K) from unnormalised log probabilities (overwritten), and the log-likelihood sum.

    Column by column: numpy reduces a (n, 3) array along its short axis several times slower.
    """
    n, k = log_post.shape
    if not n:
        return log_post, 0.0
    top = log_post[:, 0].copy()
    for c in range(1, k):
        np.maximum(top, log_post[:, c], out=top)
    log_post -= top[:, None]
    post = np.exp(log_post, out=log_post)
    norm = post[:, 0].copy()
    for c in range(1, k):
        norm += post[:, c]
    post /= norm[:, None]
    return post, float(np.log(norm).sum() + top.sum())


def _e_step(index: _Index, log_priors: np.ndarray, log_conf: np.ndarray) -> tuple[np.ndarray, float]:
    """Posterior (n_items, K) and log-likelihood; ``log_conf`` is laid out (n_annotators * K given, K true)."""
    return _normalise(np.asarray(index.by_item @ log_conf) + log_priors[None, :])


def _delta(new: np.ndarray, old: np.ndarray) -> float:
    return float(np.abs(new - old).max()) if len(new) else 0.0


def _decide(posterior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    labels = argmax_with_ties(posterior, exact=False)
    return labels, posterior[np.arange(len(posterior)), labels]


def _soft_majority(counts: np.ndarray, k: int) -> np.ndarray:
    m = counts.sum(axis=1, keepdims=True).astype(np.float64)
    return np.where(m > 0, counts / np.maximum(m, 1), 1.0 / k)


def _check_iterations(max_iter: int) -> None:
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")


# --- Dawid-Skene ---------------------------------------------------------------------------------


def _ds_m_step(
    index: _Index, posterior: np.ndarray, n_annotators: int, smoothing: float
) -> tuple[np.ndarray, np.ndarray]:
    """Priors (K,) and log confusions laid out as (n_annotators * K given, K true) for the E-step:
    one sparse product sums the posteriors of every annotator's judgments per label."""
    k = posterior.shape[1]
    priors = posterior.sum(axis=0) + smoothing
    priors /= priors.sum()
    conf = np.asarray(index.by_key @ posterior) + smoothing  # row: annotator * K + given label, column: true label
    conf3 = conf.reshape(n_annotators, k, k)  # (annotator, given, true)
    conf3 /= conf3.sum(axis=1, keepdims=True)  # normalise over the given label
    return priors, np.log(conf)


def dawid_skene(
    j: Judgments,
    max_iter: int = 100,
    tol: float = 1e-5,
    smoothing: float = 0.01,
    counts: np.ndarray | None = None,
) -> DawidSkeneResult:
    """Dawid-Skene EM. Stops when no posterior moves by more than ``tol`` or after ``max_iter`` rounds.

    ``smoothing`` is a pseudo-count added to every confusion cell and prior (keeps log finite
    for annotators who never used a label). Measured: 0.01 and crowd-kit's 1e-10 clip recover
    the same labels on average; 1 (Laplace) recovers more on simulated jobs of 50-300 pairs
    (95.0 / 96.8 / 97.5% against 93.7 / 95.4 / 97.2% at 50 / 100 / 300) but flattens every
    posterior to the prior on a handful of items (four pairs, three raters), so 0.01 stays.
    """
    _check_iterations(max_iter)
    counts = label_counts(j) if counts is None else counts
    k = j.n_labels
    index = _index(j)
    posterior = _soft_majority(counts, k)
    converged, log_likelihood, iterations = False, float("nan"), 0
    priors, log_conf = np.full(k, 1.0 / k), np.zeros((j.n_annotators * k, k))
    for iterations in range(1, max_iter + 1):  # noqa: B007 - reported below
        priors, log_conf = _ds_m_step(index, posterior, j.n_annotators, smoothing)
        new_posterior, log_likelihood = _e_step(index, np.log(priors), log_conf)
        delta = _delta(new_posterior, posterior)
        posterior = new_posterior
        if delta < tol:
            converged = True
            break
    labels, confidence = _decide(posterior)
    confusions = np.exp(log_conf).reshape(j.n_annotators, k, k).transpose(0, 2, 1)  # (annotator, true, given)
    accuracy = (np.diagonal(confusions, axis1=1, axis2=2) * priors[None, :]).sum(axis=1)
    return DawidSkeneResult(
        labels=labels,
        confidence=confidence,
        counts=counts,
        method="dawid_skene",
        posterior=posterior,
        annotator_accuracy=accuracy,
        iterations=iterations,
        converged=converged,
        log_likelihood=log_likelihood,
        priors=priors,
        confusions=confusions,
    )


# --- MACE ----------------------------------------------------------------------------------------


def _mace_log_conf(know: np.ndarray, spam: np.ndarray, strategy: np.ndarray) -> np.ndarray:
    """log P(given | true) laid out (n_annotators * K given, K true): know·[given == true] + spam·ξ[given]."""
    a, k = strategy.shape
    conf = np.broadcast_to((spam[:, None] * strategy)[:, :, None], (a, k, k)).copy()  # (annotator, given, true)
    conf[:, np.arange(k), np.arange(k)] += know[:, None]
    return np.log(conf.reshape(a * k, k))


def _mace_expected_counts(
    index: _Index, posterior: np.ndarray, know: np.ndarray, spam: np.ndarray, strategy: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Expected "knew the answer" count per annotator (A,) and "spammed label a" counts (A, K).

    For a judgment of label a on an item whose truth has posterior p: P(knew) = p[a]·know /
    (know + spam·ξ[a]); everything else is spam. Sums per (annotator, label) need only
    s[annotator, a] = the summed posterior of label a over those judgments: one sparse product.
    """
    a, k = strategy.shape
    summed = np.asarray(index.by_key @ posterior).reshape(a, k, k)  # (annotator, given, true)
    s = np.diagonal(summed, axis1=1, axis2=2)  # (annotator, given): posterior that the given label is true
    n = index.key_counts.reshape(a, k)
    knew_if_true = know[:, None] / (know[:, None] + spam[:, None] * strategy)
    knew = (s * knew_if_true).sum(axis=1)
    spammed = n - s * knew_if_true
    return knew, spammed


def mace(
    j: Judgments,
    restarts: int = 10,
    max_iter: int = 50,
    tol: float = 1e-5,
    variational: bool = True,
    alpha: float = 0.5,
    beta: float = 0.5,
    strategy_prior: float = 10.0,
    smoothing: float | None = None,
    noise: float = 0.5,
    seed: int = 0,
    stop_when_repeated: bool = True,
    counts: np.ndarray | None = None,
) -> MaceResult:
    """MACE (Multi-Annotator Competence Estimation, Hovy et al. 2013), as in its reference code.

    Up to ``restarts`` random initialisations (drawn from ``seed``: the same seed gives the same
    result), each run for at most ``max_iter`` EM rounds or until no posterior moves by more
    than ``tol``; the restart with the best marginal likelihood wins. With
    ``stop_when_repeated`` the restarts stop as soon as a second one reaches the best
    likelihood so far (within 1e-6 relative): on every simulated job measured, all restarts
    reach the same optimum, so the remaining ones would only cost time. ``variational`` uses the
    mean-field M-step with Beta(``alpha`` for spamming, ``beta`` for knowing) priors on the
    competence and a symmetric Dirichlet(``strategy_prior``) on the spam strategy; otherwise the
    plain EM M-step adds ``smoothing`` (default 0.01 / K) to the expected counts.
    """
    _check_iterations(max_iter)
    if restarts < 1:
        raise ValueError(f"restarts must be >= 1, got {restarts}")
    counts = label_counts(j) if counts is None else counts
    k, a = j.n_labels, j.n_annotators
    eps = 0.01 / k if smoothing is None else smoothing
    index = _index(j)
    log_priors = np.full(k, -np.log(k))  # MACE: uniform prior over the true label
    rng = np.random.default_rng(seed)
    runs = 0
    best: tuple[float, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, bool] | None = None
    for restart in range(restarts):
        runs = restart + 1
        pair = rng.uniform(1.0, 1.0 + noise, size=(a, 2))
        pair /= pair.sum(axis=1, keepdims=True)
        spam, know = pair[:, 0], pair[:, 1]
        strategy = rng.uniform(1.0, 1.0 + noise, size=(a, k))
        strategy /= strategy.sum(axis=1, keepdims=True)
        posterior, log_likelihood = _e_step(index, log_priors, _mace_log_conf(know, spam, strategy))
        converged, iterations = False, 0
        for iterations in range(1, max_iter + 1):  # noqa: B007 - kept with the restart
            knew, spammed = _mace_expected_counts(index, posterior, know, spam, strategy)
            total_spam = spammed.sum(axis=1)
            if variational:
                norm = np.exp(digamma(knew + total_spam + alpha + beta))
                know = np.exp(digamma(knew + beta)) / norm
                spam = np.exp(digamma(total_spam + alpha)) / norm
                strategy = (
                    np.exp(digamma(spammed + strategy_prior))
                    / np.exp(digamma(total_spam + k * strategy_prior))[:, None]
                )
            else:
                know = (knew + eps) / (knew + total_spam + 2 * eps)
                spam = 1.0 - know
                strategy = (spammed + eps) / (total_spam + k * eps)[:, None]
            new_posterior, log_likelihood = _e_step(index, log_priors, _mace_log_conf(know, spam, strategy))
            delta = _delta(new_posterior, posterior)
            posterior = new_posterior
            if delta < tol:
                converged = True
                break
        repeated = best is not None and abs(log_likelihood - best[0]) <= 1e-6 * max(1.0, abs(best[0]))
        if best is None or (log_likelihood > best[0] and not repeated):
            best = (log_likelihood, restart, posterior, know, spam, strategy, iterations, converged)
        if repeated and stop_when_repeated:  # a second restart found the best optimum again
            break
    assert best is not None
    log_likelihood, best_restart, posterior, know, spam, strategy, iterations, converged = best
    labels, confidence = _decide(posterior)
    competence = know / (know + spam)
    shares = posterior.mean(axis=0) if len(posterior) else np.full(k, 1.0 / k)
    strategy_norm = strategy / strategy.sum(axis=1, keepdims=True)
    accuracy = competence + (1.0 - competence) * (strategy_norm @ shares)
    return MaceResult(
        labels=labels,
        confidence=confidence,
        counts=counts,
        method="mace",
        posterior=posterior,
        annotator_accuracy=accuracy,
        iterations=iterations,
        converged=converged,
        log_likelihood=log_likelihood,
        competence=competence,
        strategy=strategy_norm,
        restarts=runs,
        best_restart=best_restart,
    )


# --- GLAD ----------------------------------------------------------------------------------------


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    """log σ(x), stable for any x (log σ(-x) is this minus x)."""
    return np.minimum(x, 0.0) - np.log1p(np.exp(-np.abs(x)))


def _glad_objective(x: np.ndarray, p: np.ndarray, groups: np.ndarray, size: int) -> np.ndarray:
    """Each group's (annotator's or item's) share of GLAD's M-step objective, prior excluded:
    the sum of p·log σ(x) + (1 - p)·log σ(-x) over its judgments, x = α·β per judgment."""
    return np.bincount(groups, weights=_log_sigmoid(x) - (1.0 - p) * x, minlength=size)


def _ability_objective(alpha: np.ndarray, beta_n: np.ndarray, p: np.ndarray, anns: np.ndarray) -> np.ndarray:
    return _glad_objective(alpha[anns] * beta_n, p, anns, len(alpha))


def _item_objective(b: np.ndarray, alpha_n: np.ndarray, p: np.ndarray, items: np.ndarray) -> np.ndarray:
    return _glad_objective(alpha_n * np.exp(b[items]), p, items, len(b))


def _ascend(value: np.ndarray, step: np.ndarray, prior: float, f: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``value + step`` (clipped to ±2) where that raises ``f(value) - (value - prior)² / 2``
    element by element; the step is halved (three times at most) where it does not, and
    dropped where it still does not."""
    step = np.clip(step, -2.0, 2.0)
    before = f(value) - 0.5 * (value - prior) ** 2
    worse = f(value + step) - 0.5 * (value + step - prior) ** 2 < before
    for _halving in range(3):
        if not worse.any():
            break
        step = np.where(worse, step / 2.0, step)
        worse &= f(value + step) - 0.5 * (value + step - prior) ** 2 < before
    return value + np.where(worse, 0.0, step)


def glad(
    j: Judgments,
    max_iter: int = 100,
    tol: float = 1e-5,
    newton_steps: int = 1,
    ability_prior: float = 1.0,
    log_beta_prior: float = 1.0,
    estimate_priors: bool = True,
    smoothing: float = 0.01,
    counts: np.ndarray | None = None,
) -> GladResult:
    """GLAD (Generative model of Labels, Abilities and Difficulties, Whitehill et al. 2009).

    P(label == truth) = σ(α_annotator · β_item) with β = exp(b); wrong labels uniform over the
    other K - 1. Gaussian priors N(``ability_prior``, 1) on α and N(``log_beta_prior``, 1) on b,
    as in the reference code; α = 1 and b = 1 to start. The M-step of each EM round takes
    ``newton_steps`` (generalised EM: one is enough, measured) Newton steps on α (the objective
    is concave in α) and Fisher-scoring steps on b, each safeguarded: an annotator's or item's
    step is halved where it would lower its share of the objective (the logistic saturates, so a
    full step from a confident start overshoots: unguarded, random clickers drove the fit to
    the label-flipped optimum). Then the label priors are re-estimated (``estimate_priors``;
    off: uniform, as the reference code and crowd-kit). Stops when no posterior moves by more
    than ``tol`` or after ``max_iter`` rounds. Deterministic.
    """
    _check_iterations(max_iter)
    counts = label_counts(j) if counts is None else counts
    k, n_items, a = j.n_labels, j.n_items, j.n_annotators
    items, anns, labs = j.items, j.annotators, j.labels
    log_wrong = np.log(k - 1)
    alpha = np.full(a, 1.0)
    b = np.full(n_items, 1.0)
    priors = np.full(k, 1.0 / k)
    flat = items * k + labs

    def e_step() -> tuple[np.ndarray, float]:
        x = alpha[anns] * np.exp(b[items])
        wrong = _log_sigmoid(x) - x - log_wrong  # log P(a given wrong label); right - wrong = x + log(K - 1)
        log_post = (
            np.bincount(flat, weights=x + log_wrong, minlength=n_items * k)
            .reshape(n_items, k)
            .astype(np.float64, copy=False)
        )
        log_post += np.bincount(items, weights=wrong, minlength=n_items)[:, None] + np.log(priors)[None, :]
        return _normalise(log_post)

    posterior, log_likelihood = e_step()
    converged, iterations = False, 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 - reported below
        p = posterior[items, labs]  # posterior that each judgment is right
        for _ in range(newton_steps):
            # α: Newton (the objective is concave in α), safeguarded: the logistic saturates, so a
            # full step from a confident start can overshoot far
            beta_n = np.exp(b[items])
            s = expit(alpha[anns] * beta_n)
            grad = np.bincount(anns, weights=(p - s) * beta_n, minlength=a) - (alpha - ability_prior)
            hess = np.bincount(anns, weights=s * (1.0 - s) * beta_n**2, minlength=a) + 1.0
            alpha = _ascend(
                alpha, grad / hess, ability_prior, partial(_ability_objective, beta_n=beta_n, p=p, anns=anns)
            )
            # b = log β: Fisher scoring, plus the exact Hessian's extra term where that makes it steeper
            alpha_n = alpha[anns]
            x = alpha_n * beta_n
            s = expit(x)
            data_grad = np.bincount(items, weights=(p - s) * x, minlength=n_items)
            curvature = (
                np.bincount(items, weights=s * (1.0 - s) * x**2, minlength=n_items) + 1.0 + np.maximum(-data_grad, 0.0)
            )
            step = (data_grad - (b - log_beta_prior)) / curvature
            b = _ascend(b, step, log_beta_prior, partial(_item_objective, alpha_n=alpha_n, p=p, items=items))
        if estimate_priors:
            priors = posterior.sum(axis=0) + smoothing
            priors /= priors.sum()
        new_posterior, log_likelihood = e_step()
        delta = _delta(new_posterior, posterior)
        posterior = new_posterior
        if delta < tol:
            converged = True
            break
    labels, confidence = _decide(posterior)
    # accuracy: the posterior-expected share of the annotator's labels that are right. The model's
    # own mean σ(α·β) runs 0.05 high on the simulated job: with five judgments an item's β is
    # mostly its prior.
    n_by_ann = np.bincount(anns, minlength=a)
    right = np.bincount(anns, weights=posterior[items, labs], minlength=a)
    accuracy = np.where(n_by_ann > 0, right / np.maximum(n_by_ann, 1), np.nan)
    return GladResult(
        labels=labels,
        confidence=confidence,
        counts=counts,
        method="glad",
        posterior=posterior,
        annotator_accuracy=accuracy,
        iterations=iterations,
        converged=converged,
        log_likelihood=log_likelihood,
        ability=alpha,
        inverse_difficulty=np.exp(b),
        priors=priors,
    )


# --- dispatch ------------------------------------------------------------------------------------


def _majority(j: Judgments, counts: np.ndarray | None) -> Aggregate:
    return majority_vote(j, counts)


def _dawid_skene(j: Judgments, counts: np.ndarray | None) -> Aggregate:
    return dawid_skene(j, counts=counts)


def _mace(j: Judgments, counts: np.ndarray | None) -> Aggregate:
    return mace(j, counts=counts)


def _glad(j: Judgments, counts: np.ndarray | None) -> Aggregate:
    return glad(j, counts=counts)


# Method name -> aggregation with its default (documented, measured) settings. The names are
# the values of annotation.models.AggregatedLabel.Method (a test keeps the two in step).
METHODS: dict[str, Callable[[Judgments, np.ndarray | None], Aggregate]] = {
    "majority": _majority,
    "dawid_skene": _dawid_skene,
    "mace": _mace,
    "glad": _glad,
}


# Display names (the same as annotation.models.AggregatedLabel.Method's labels).
NAMES: dict[str, str] = {"majority": "majority vote", "dawid_skene": "Dawid-Skene", "mace": "MACE", "glad": "GLAD"}

# One line per method, for the pages and the command's help.
DESCRIPTIONS: dict[str, str] = {
    "majority": "the most frequent label; ties go to partialAligned, then notAligned",
    "dawid_skene": "EM over a confusion matrix per annotator and the label priors",
    "mace": "learns which annotators spam (competence θ = the share of answers they knew) and discounts them",
    "glad": "annotator ability α times item easiness β; a hard item counts less against those who miss it",
}


def aggregate(j: Judgments, method: str = "majority", counts: np.ndarray | None = None) -> Aggregate:
    """Dispatch by method name (a key of ``METHODS``)."""
    try:
        fn = METHODS[method]
    except KeyError:
        raise ValueError(
            f"unknown aggregation method {method!r}; expected one of {', '.join(map(repr, METHODS))}"
        ) from None
    return fn(j, counts)
