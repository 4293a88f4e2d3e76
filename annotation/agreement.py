"""Inter-annotator agreement over crowd judgments, vectorised with numpy (no Django here).

Judgments arrive as three parallel integer arrays (item code, annotator code, label code), so
a million judgments fit in a few megabytes and every measure is a handful of ``bincount``
calls. Labels are coded in the order of ``LABELS``.

Measures:

- Cohen's kappa for every pair of annotators that share at least ``min_shared`` items, and
  its mean over those pairs (the figure the paper reports: 0.807 on Newsela-Manual);
- Fleiss' kappa, generalised to items with a varying number of raters (items with fewer than
  two raters are left out; the per-item agreement is averaged over the remaining items and
  the chance term uses the label shares over all their judgments);
- Krippendorff's alpha for nominal data (from the coincidence matrix, so any number of raters
  per item and missing values are handled);
- per annotator: judgments, agreement with the majority of the *other* raters of each item
  (leave-one-out, ties broken by ``TIE_PRIORITY``), mean Cohen's kappa with their partners;
- per label: judgments, share, the label's own kappa (Fleiss' kappa of "this label vs the
  rest") and its specific agreement (given one rater chose it, the chance that another rater
  of the same item chose it too);
- confusion matrices (e.g. raw judgments against the aggregated or verified label).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Label codes: index in this tuple. Values match curation.models.AlignmentLabel.
LABELS: tuple[str, ...] = ("aligned", "partialAligned", "notAligned")
LABEL_CODE: dict[str, int] = {label: code for code, label in enumerate(LABELS)}

# Tie rule shared by majority vote, leave-one-out agreement and Dawid-Skene's argmax: among
# tied labels, the first in this order wins (partialAligned, then notAligned, then aligned).
# Rationale: "aligned" is the strongest claim and the one a training set is hurt by most when
# wrong, so it is only given with a strict plurality; partialAligned is the middle of the
# ordinal scale aligned > partial > not, so a split between neighbours lands on it; and every
# tied pair has a low confidence and goes to the front of the verification queue anyway.
TIE_PRIORITY: tuple[str, ...] = ("partialAligned", "notAligned", "aligned")

DEFAULT_MIN_SHARED = 10


def tie_bonus(labels: tuple[str, ...] = LABELS, priority: tuple[str, ...] = TIE_PRIORITY) -> np.ndarray:
    """shape (K,): a score in [0, 1) per label code, higher for labels that win ties."""
    k = len(labels)
    bonus = np.zeros(k, dtype=np.float64)
    for rank, label in enumerate(priority):
        bonus[labels.index(label)] = (k - 1 - rank) / k
    return bonus


def argmax_with_ties(scores: np.ndarray, exact: bool = True) -> np.ndarray:
    """Row-wise argmax of ``scores`` (n, K) with ties broken by ``TIE_PRIORITY``.

    With ``exact`` the scores are integer counts, so adding a bonus below 1 never overturns a
    strict winner. Otherwise (probabilities) scores within 1e-9 of the row maximum count as tied.
    """
    bonus = tie_bonus()
    if exact:
        return np.argmax(scores + bonus[None, :], axis=1)
    top = scores.max(axis=1, keepdims=True)
    tied = scores >= top - 1e-9
    return np.argmax(np.where(tied, 1.0 + bonus[None, :], 0.0), axis=1)


@dataclass(frozen=True)
class Judgments:
    """Coded judgments: parallel arrays of length N.

    items: shape (N,) int64 in [0, n_items); annotators: shape (N,) int64 in [0, n_annotators);
    labels: shape (N,) int64 in [0, K). ``item_keys``/``annotator_keys`` map codes back to ids.
    """

    items: np.ndarray
    annotators: np.ndarray
    labels: np.ndarray
    n_items: int
    n_annotators: int
    n_labels: int = len(LABELS)
    item_keys: np.ndarray | None = None
    annotator_keys: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.items)
        if len(self.annotators) != n or len(self.labels) != n:
            raise ValueError(
                f"items, annotators and labels must have the same length, got {n}, {len(self.annotators)}, {len(self.labels)}"
            )
        if n and (self.labels.min() < 0 or self.labels.max() >= self.n_labels):
            raise ValueError(f"label codes must lie in [0, {self.n_labels}), got [{self.labels.min()}, {self.labels.max()}]")

    @property
    def size(self) -> int:
        return len(self.items)

    @classmethod
    def encode(cls, item_ids: Any, annotator_ids: Any, labels: Any) -> Judgments:
        """Code arbitrary ids (ints or strings) and labels (strings of ``LABELS`` or codes)."""
        item_keys, items = np.unique(np.asarray(item_ids), return_inverse=True)
        annotator_keys, annotators = np.unique(np.asarray(annotator_ids), return_inverse=True)
        labels_arr = np.asarray(labels)
        if labels_arr.dtype.kind in "US" or labels_arr.dtype == object:
            unknown = set(np.unique(labels_arr).tolist()) - set(LABELS)
            if unknown:
                raise ValueError(f"unknown labels {sorted(unknown)}; expected {LABELS}")
            codes = np.zeros(len(labels_arr), dtype=np.int64)
            for code, label in enumerate(LABELS):
                codes[labels_arr == label] = code
        else:
            codes = labels_arr.astype(np.int64)
        return cls(
            items=items.astype(np.int64).ravel(),
            annotators=annotators.astype(np.int64).ravel(),
            labels=codes.ravel(),
            n_items=len(item_keys),
            n_annotators=len(annotator_keys),
            item_keys=item_keys,
            annotator_keys=annotator_keys,
        )


def label_counts(j: Judgments) -> np.ndarray:
    """shape (n_items, K): how many judgments gave each label to each item."""
    k = j.n_labels
    flat = np.bincount(j.items * k + j.labels, minlength=j.n_items * k)
    return flat.reshape(j.n_items, k)


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' kappa from counts (n_items, K); items may have different numbers of raters.

    P_i = (sum_k n_ik^2 - m_i) / (m_i (m_i - 1)) over items with m_i >= 2, P = mean(P_i),
    p_k = share of label k among those items' judgments, P_e = sum p_k^2,
    kappa = (P - P_e) / (1 - P_e). NaN when fewer than one such item or P_e == 1.
    """
    counts = np.asarray(counts, dtype=np.float64)
    m = counts.sum(axis=1)
    keep = m >= 2
    if not keep.any():
        return float("nan")
    c, m = counts[keep], m[keep]
    p_i = ((c * c).sum(axis=1) - m) / (m * (m - 1))
    p_bar = p_i.mean()
    p_k = c.sum(axis=0) / m.sum()
    p_e = float((p_k * p_k).sum())
    if p_e >= 1.0 - 1e-12:
        return float("nan")
    return float((p_bar - p_e) / (1.0 - p_e))


def coincidence_matrix(counts: np.ndarray) -> np.ndarray:
    """Krippendorff's coincidence matrix (K, K) from counts (n_items, K); items with < 2 values drop out."""
    counts = np.asarray(counts, dtype=np.float64)
    m = counts.sum(axis=1)
    keep = m >= 2
    c = counts[keep]
    w = 1.0 / (m[keep] - 1.0)
    o = (c * w[:, None]).T @ c
    o -= np.diag((c * w[:, None]).sum(axis=0))
    return o


def krippendorff_alpha_nominal(counts: np.ndarray) -> float:
    """Krippendorff's alpha for nominal labels: 1 - D_o / D_e from the coincidence matrix."""
    o = coincidence_matrix(counts)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if n <= 1:
        return float("nan")
    d_o = (n - np.trace(o)) / n
    d_e = (n * n - (n_c * n_c).sum()) / (n * (n - 1))
    if d_e <= 0:
        return float("nan")
    return float(1.0 - d_o / d_e)


def cohen_kappa_tables(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each (K, K) contingency table in ``tables`` shape (P, K, K) -> (P,).

    NaN where the expected agreement is 1 (both raters used one label only) or a table is empty.
    """
    tables = np.asarray(tables, dtype=np.float64)
    n = tables.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        p_o = np.trace(tables, axis1=1, axis2=2) / n
        p_e = (tables.sum(axis=2) * tables.sum(axis=1)).sum(axis=1) / (n * n)
        kappa = (p_o - p_e) / (1.0 - p_e)
    kappa[(n == 0) | (p_e >= 1.0 - 1e-12)] = np.nan
    return kappa


def cohen_kappa(a: np.ndarray, b: np.ndarray, n_labels: int = len(LABELS)) -> float:
    """Cohen's kappa of two aligned label-code arrays."""
    table = np.bincount(np.asarray(a) * n_labels + np.asarray(b), minlength=n_labels * n_labels)
    return float(cohen_kappa_tables(table.reshape(1, n_labels, n_labels))[0])


def _co_rated_pairs(j: Judgments) -> tuple[np.ndarray, np.ndarray]:
    """Indices (first, second) of every pair of judgments on the same item (each unordered pair once)."""
    if len(j.items) < 2 or bool((j.items[1:] >= j.items[:-1]).all()):
        order = np.arange(len(j.items))  # already grouped by item (the usual case): skip the sort
    else:
        order = np.argsort(j.items, kind="stable")
    items = j.items[order]
    n = len(items)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    starts = np.flatnonzero(np.r_[True, items[1:] != items[:-1]])
    sizes = np.diff(np.r_[starts, n])
    ends = np.repeat(starts + sizes, sizes)  # shape (n,): end of each judgment's group
    later = ends - np.arange(n) - 1  # partners after each judgment in its group
    total = int(later.sum())
    first = np.repeat(np.arange(n), later)
    offset = np.arange(total) - np.repeat(np.cumsum(later) - later, later)
    second = first + 1 + offset
    return order[first], order[second]


@dataclass
class PairwiseKappa:
    """Cohen's kappa per annotator pair. Arrays of shape (P,), annotator codes with a < b."""

    a: np.ndarray
    b: np.ndarray
    shared: np.ndarray
    kappa: np.ndarray
    min_shared: int

    @property
    def used(self) -> np.ndarray:
        """bool (P,): pairs that share enough items and have a defined kappa."""
        return (self.shared >= self.min_shared) & ~np.isnan(self.kappa)

    @property
    def mean(self) -> float:
        used = self.used
        return float(self.kappa[used].mean()) if used.any() else float("nan")

    @property
    def weighted_mean(self) -> float:
        """Mean kappa weighted by the number of shared items."""
        used = self.used
        if not used.any():
            return float("nan")
        return float(np.average(self.kappa[used], weights=self.shared[used]))

    @property
    def n_used(self) -> int:
        return int(self.used.sum())


def pairwise_cohen(j: Judgments, min_shared: int = DEFAULT_MIN_SHARED) -> PairwiseKappa:
    """Cohen's kappa for every pair of annotators who labelled at least one item in common."""
    k = j.n_labels
    first, second = _co_rated_pairs(j)
    ann_a, ann_b = j.annotators[first], j.annotators[second]
    lab_a, lab_b = j.labels[first], j.labels[second]
    swap = ann_a > ann_b
    ann_a, ann_b = np.where(swap, ann_b, ann_a), np.where(swap, ann_a, ann_b)
    lab_a, lab_b = np.where(swap, lab_b, lab_a), np.where(swap, lab_a, lab_b)
    pair_key = ann_a * np.int64(j.n_annotators) + ann_b
    if j.n_annotators**2 <= 4_000_000:  # few annotators: index pairs directly, no sort
        present = np.bincount(pair_key, minlength=j.n_annotators**2) > 0
        keys = np.flatnonzero(present)
        code_of = np.cumsum(present) - 1
        pair_code = code_of[pair_key]
    else:
        keys, pair_code = np.unique(pair_key, return_inverse=True)
    flat = np.bincount(pair_code * (k * k) + lab_a * k + lab_b, minlength=len(keys) * k * k)
    tables = flat.reshape(len(keys), k, k)
    return PairwiseKappa(
        a=keys // j.n_annotators,
        b=keys % j.n_annotators,
        shared=tables.sum(axis=(1, 2)),
        kappa=cohen_kappa_tables(tables),
        min_shared=min_shared,
    )


@dataclass
class AnnotatorStats:
    """Per annotator code, shape (n_annotators,) each."""

    judgments: np.ndarray
    agreement: np.ndarray  # share of judgments equal to the majority of the other raters (NaN: none)
    mean_kappa: np.ndarray  # mean Cohen's kappa over pairs with enough shared items (NaN: none)
    partners: np.ndarray  # number of such pairs
    label_share: np.ndarray  # shape (n_annotators, K): how the annotator's labels are distributed


def per_annotator(j: Judgments, counts: np.ndarray, pairwise: PairwiseKappa) -> AnnotatorStats:
    k, a = j.n_labels, j.n_annotators
    own = np.zeros((j.size, k), dtype=np.int64)
    own[np.arange(j.size), j.labels] = 1
    others = counts[j.items] - own  # shape (N, K)
    has_others = others.sum(axis=1) > 0
    majority = argmax_with_ties(others)
    hit = (majority == j.labels) & has_others
    rated = np.bincount(j.annotators[has_others], minlength=a)
    agree = np.bincount(j.annotators[hit], minlength=a)
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement = np.where(rated > 0, agree / np.maximum(rated, 1), np.nan)
    used = pairwise.used
    ka = np.bincount(pairwise.a[used], weights=pairwise.kappa[used], minlength=a)
    ka += np.bincount(pairwise.b[used], weights=pairwise.kappa[used], minlength=a)
    partners = np.bincount(pairwise.a[used], minlength=a) + np.bincount(pairwise.b[used], minlength=a)
    mean_kappa = np.where(partners > 0, ka / np.maximum(partners, 1), np.nan)
    judgments = np.bincount(j.annotators, minlength=a)
    share = np.bincount(j.annotators * k + j.labels, minlength=a * k).reshape(a, k).astype(np.float64)
    share /= np.maximum(judgments, 1)[:, None]
    return AnnotatorStats(judgments=judgments, agreement=agreement, mean_kappa=mean_kappa, partners=partners, label_share=share)


@dataclass
class LabelStats:
    """Per label code, shape (K,) each."""

    judgments: np.ndarray
    share: np.ndarray
    kappa: np.ndarray  # Fleiss' kappa of "this label vs the rest"
    specific_agreement: np.ndarray


def per_label(counts: np.ndarray) -> LabelStats:
    counts = np.asarray(counts, dtype=np.float64)
    k = counts.shape[1]
    m = counts.sum(axis=1)
    judgments = counts.sum(axis=0)
    share = judgments / max(judgments.sum(), 1.0)
    kappa = np.array([fleiss_kappa(np.stack([counts[:, c], m - counts[:, c]], axis=1)) for c in range(k)])
    keep = m >= 2
    c, mk = counts[keep], m[keep]
    agreeing = (c * (c - 1) / (mk - 1)[:, None]).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        specific = np.where(c.sum(axis=0) > 0, agreeing / c.sum(axis=0), np.nan)
    return LabelStats(judgments=judgments.astype(np.int64), share=share, kappa=kappa, specific_agreement=specific)


def confusion_matrix(reference: np.ndarray, observed: np.ndarray, n_labels: int = len(LABELS)) -> np.ndarray:
    """shape (K, K): rows are the reference label, columns the observed label."""
    reference, observed = np.asarray(reference, dtype=np.int64), np.asarray(observed, dtype=np.int64)
    flat = np.bincount(reference * n_labels + observed, minlength=n_labels * n_labels)
    return flat.reshape(n_labels, n_labels)


@dataclass
class AgreementReport:
    n_judgments: int
    n_items: int
    n_annotators: int
    items_multi: int  # items with at least two judgments
    cohen_mean: float
    cohen_weighted: float
    cohen_pairs: int
    fleiss: float
    alpha: float
    pairwise: PairwiseKappa
    annotators: AnnotatorStats
    labels: LabelStats
    counts: np.ndarray = field(repr=False)


def job_agreement(j: Judgments, min_shared: int = DEFAULT_MIN_SHARED) -> AgreementReport:
    """Every measure above for one set of judgments."""
    counts = label_counts(j)
    pairwise = pairwise_cohen(j, min_shared)
    return AgreementReport(
        n_judgments=j.size,
        n_items=j.n_items,
        n_annotators=j.n_annotators,
        items_multi=int((counts.sum(axis=1) >= 2).sum()),
        cohen_mean=pairwise.mean,
        cohen_weighted=pairwise.weighted_mean,
        cohen_pairs=pairwise.n_used,
        fleiss=fleiss_kappa(counts),
        alpha=krippendorff_alpha_nominal(counts),
        pairwise=pairwise,
        annotators=per_annotator(j, counts, pairwise),
        labels=per_label(counts),
        counts=counts,
    )
