"""Agreement measures against reference implementations and hand-computed values."""

from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from annotation import agreement
from annotation.agreement import LABELS, Judgments
from curation.models import AlignmentLabel


def test_label_codes_match_alignment_labels() -> None:
    assert set(LABELS) == set(AlignmentLabel.values)
    assert set(agreement.TIE_PRIORITY) == set(LABELS)


def test_fleiss_matches_the_classic_example() -> None:
    # Fleiss (1971) / Wikipedia: 10 items, 14 raters, 5 categories -> 0.210
    counts = np.array(
        [
            [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
        ]
    )
    assert agreement.fleiss_kappa(counts) == pytest.approx(0.20993, abs=1e-4)


def test_fleiss_with_varying_raters_ignores_single_rated_items_and_uses_item_means() -> None:
    counts = np.array([[3, 0, 0], [0, 2, 0], [1, 1, 0], [0, 0, 1]])  # last item has one rater: ignored
    # P_i: 1, 1, 0 -> P = 2/3; shares over 7 judgments of the first three items: 4/7, 3/7, 0
    p_e = (4 / 7) ** 2 + (3 / 7) ** 2
    expected = (2 / 3 - p_e) / (1 - p_e)
    assert agreement.fleiss_kappa(counts) == pytest.approx(expected)
    assert np.isnan(agreement.fleiss_kappa(np.array([[1, 0, 0]])))


def _reliability(j: Judgments) -> np.ndarray:
    data = np.full((j.n_annotators, j.n_items), np.nan)
    data[j.annotators, j.items] = j.labels
    return data


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alpha_matches_the_krippendorff_package_with_missing_values(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_items, n_ann = 60, 7
    mask = rng.random((n_ann, n_items)) < 0.5
    truth = rng.integers(0, 3, n_items)
    labels = np.where(rng.random((n_ann, n_items)) < 0.7, truth[None, :], rng.integers(0, 3, (n_ann, n_items)))
    ann, item = np.nonzero(mask)
    j = Judgments.encode(item, ann, labels[ann, item])
    expected = krippendorff.alpha(reliability_data=_reliability(j), level_of_measurement="nominal")
    assert agreement.krippendorff_alpha_nominal(agreement.label_counts(j)) == pytest.approx(expected, abs=1e-9)


def test_cohen_matches_sklearn() -> None:
    rng = np.random.default_rng(4)
    a = rng.integers(0, 3, 200)
    b = np.where(rng.random(200) < 0.6, a, rng.integers(0, 3, 200))
    assert agreement.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 4), st.integers(0, 2)), min_size=1, max_size=60, unique_by=lambda t: (t[0], t[1])))
def test_pairwise_cohen_equals_brute_force(rows: list[tuple[int, int, int]]) -> None:
    items, anns, labels = (np.array(col) for col in zip(*rows, strict=True))
    j = Judgments.encode(items, anns, labels)
    result = agreement.pairwise_cohen(j, min_shared=1)
    by_pair = {(int(a), int(b)): (int(n), k) for a, b, n, k in zip(result.a, result.b, result.shared, result.kappa, strict=True)}
    got = {}
    for u, v in itertools.combinations(range(j.n_annotators), 2):
        lu = {int(i): int(lab) for i, a, lab in zip(j.items, j.annotators, j.labels, strict=True) if a == u}
        lv = {int(i): int(lab) for i, a, lab in zip(j.items, j.annotators, j.labels, strict=True) if a == v}
        shared = sorted(set(lu) & set(lv))
        if shared:
            got[(u, v)] = len(shared)
            expected = agreement.cohen_kappa(np.array([lu[i] for i in shared]), np.array([lv[i] for i in shared]))
            n, kappa = by_pair[(u, v)]
            assert n == len(shared)
            assert (np.isnan(kappa) and np.isnan(expected)) or kappa == pytest.approx(expected)
    assert set(by_pair) == set(got)


def test_mean_kappa_only_counts_pairs_sharing_enough_items() -> None:
    # annotators 0 and 1 share 12 items and agree perfectly on a mix; 0 and 2 share 3 items and disagree
    items = list(range(12)) * 2 + [20, 21, 22] * 2
    anns = [0] * 12 + [1] * 12 + [0] * 3 + [2] * 3
    labels = [i % 3 for i in range(12)] * 2 + [0, 1, 2] + [1, 2, 0]
    j = Judgments.encode(items, anns, labels)
    strict = agreement.pairwise_cohen(j, min_shared=10)
    assert strict.n_used == 1 and strict.mean == pytest.approx(1.0)
    loose = agreement.pairwise_cohen(j, min_shared=3)
    assert loose.n_used == 2 and loose.mean < 0.5


def test_per_annotator_agreement_is_leave_one_out_majority() -> None:
    # item 0: A,A,A,N -> annotator 3 disagrees with the others' majority; item 1: A,P (others of 0: P)
    items = [0, 0, 0, 0, 1, 1]
    anns = [0, 1, 2, 3, 0, 1]
    labels = [0, 0, 0, 2, 0, 1]
    j = Judgments.encode(items, anns, labels)
    report = agreement.job_agreement(j, min_shared=1)
    agree = report.annotators.agreement
    assert agree[3] == 0.0
    assert agree[2] == 1.0
    assert agree[0] == pytest.approx(0.5)  # item 1: the other said partial
    assert report.annotators.judgments.tolist() == [2, 2, 1, 1]


def test_per_label_kappa_and_specific_agreement() -> None:
    counts = np.array([[3, 0, 0], [0, 3, 0], [0, 1, 2], [0, 0, 3]])
    stats = agreement.per_label(counts)
    assert stats.judgments.tolist() == [3, 4, 5]
    assert stats.specific_agreement[0] == pytest.approx(1.0)
    # partial: item 1 gives 3*2/2 = 3 agreeing of 3; item 2 gives 0 of 1 -> 3/4
    assert stats.specific_agreement[1] == pytest.approx(0.75)
    assert stats.kappa[0] == pytest.approx(1.0)
    assert stats.kappa[1] < 1.0


def test_confusion_matrix_rows_are_reference() -> None:
    m = agreement.confusion_matrix(np.array([0, 0, 1, 2]), np.array([0, 1, 1, 2]))
    assert m.tolist() == [[1, 1, 0], [0, 1, 0], [0, 0, 1]]


def test_encode_rejects_unknown_labels_and_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="unknown labels"):
        Judgments.encode([1], [1], ["maybe"])
    with pytest.raises(ValueError, match="same length"):
        Judgments(items=np.array([0]), annotators=np.array([0, 1]), labels=np.array([0]), n_items=1, n_annotators=2)
    j = Judgments.encode([10, 10, 30], ["x", "y", "x"], ["aligned", "notAligned", "partialAligned"])
    assert j.labels.tolist() == [0, 2, 1] and j.n_items == 2 and j.n_annotators == 2
