"""Majority vote (tie rule, confidence) and Dawid-Skene."""

from __future__ import annotations

import numpy as np
import pytest

from annotation import aggregation
from annotation.agreement import LABEL_CODE, Judgments
from annotation.crowd_model import simulate

A, P, N = LABEL_CODE["aligned"], LABEL_CODE["partialAligned"], LABEL_CODE["notAligned"]


def _judgments(per_item: list[list[int]]) -> Judgments:
    items = [i for i, labels in enumerate(per_item) for _ in labels]
    anns = [a for labels in per_item for a in range(len(labels))]
    return Judgments.encode(items, anns, [lab for labels in per_item for lab in labels])


def test_majority_and_confidence() -> None:
    agg = aggregation.majority_vote(_judgments([[A, A, A, N, P], [N, N, N, N, N]]))
    assert agg.labels.tolist() == [A, N]
    assert agg.confidence.tolist() == pytest.approx([0.6, 1.0])
    assert agg.disagreement.tolist() == [True, False]


@pytest.mark.parametrize(
    ("votes", "winner"),
    [
        ([A, A, P, P], P),  # aligned vs partial -> partial
        ([A, A, N, N], N),  # aligned vs not -> not
        ([P, P, N, N], P),  # partial vs not -> partial
        ([A, P, N], P),  # three-way -> partial
        ([A, A, N, N, P], N),  # 2-2-1: only the tied labels compete
    ],
)
def test_tie_rule(votes: list[int], winner: int) -> None:
    agg = aggregation.majority_vote(_judgments([votes]))
    assert agg.labels[0] == winner
    assert agg.confidence[0] == pytest.approx(votes.count(winner) / len(votes))


def test_dawid_skene_beats_majority_when_accuracies_differ() -> None:
    sim = simulate(6000, seed=11)
    mv = aggregation.majority_vote(sim.judgments)
    ds = aggregation.dawid_skene(sim.judgments)
    mv_acc = float((mv.labels == sim.truth).mean())
    ds_acc = float((ds.labels == sim.truth).mean())
    assert ds.converged
    assert ds_acc > mv_acc + 0.01
    # estimated annotator accuracies track the true ones
    assert np.abs(ds.annotator_accuracy - sim.annotator_accuracy).max() < 0.06
    assert np.allclose(ds.posterior.sum(axis=1), 1.0)
    assert ((ds.confidence > 0) & (ds.confidence <= 1)).all()


def test_dawid_skene_on_unanimous_items_is_confident() -> None:
    ds = aggregation.dawid_skene(_judgments([[A, A, A]] * 5 + [[N, N, N]] * 5 + [[P, P, N]] * 2))
    assert ds.labels[:10].tolist() == [A] * 5 + [N] * 5
    assert (ds.confidence[:10] > 0.9).all()


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown aggregation method"):
        aggregation.aggregate(_judgments([[A]]), "median")
    with pytest.raises(ValueError, match="max_iter"):
        aggregation.dawid_skene(_judgments([[A]]), max_iter=0)
