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


# --- MACE and GLAD on hand-made judgments whose answer is known ---------------------------------


def _careful_and_spammers() -> tuple[Judgments, np.ndarray]:
    """30 pairs (aligned, partial, not in turn); three careful annotators, of whom two say
    "aligned" on five non-aligned pairs each; two spammers who say "aligned" to everything.
    Majority vote follows the spammers on those ten pairs."""
    truth = np.array([A, P, N] * 10)
    items, anns, labs = [], [], []
    for i, t in enumerate(truth.tolist()):
        for g in range(3):
            wrong = t != A and i % 3 == g and i % 2 == 0
            items.append(i)
            anns.append(f"careful{g}")
            labs.append(A if wrong else t)
        for s in range(2):
            items.append(i)
            anns.append(f"spammer{s}")
            labs.append(A)
    return Judgments.encode(items, anns, labs), truth


def test_mace_discounts_spammers_that_outvote_careful_annotators() -> None:
    j, truth = _careful_and_spammers()
    assert j.annotator_keys is not None and j.annotator_keys.tolist()[3:] == ["spammer0", "spammer1"]
    assert int((aggregation.majority_vote(j).labels != truth).sum()) == 10
    mace = aggregation.mace(j)
    assert mace.labels.tolist() == truth.tolist()
    assert mace.competence is not None and mace.strategy is not None
    assert (mace.competence[3:] < 0.05).all() and (mace.competence[:3] > 0.7).all()
    # when spamming they say aligned (0.67, not 1: the Dirichlet(10) prior weighs like 30 judgments of 3 labels)
    assert (mace.strategy[3:].argmax(axis=1) == A).all() and (mace.strategy[3:, A] > 0.6).all()
    assert mace.annotator_accuracy is not None
    assert mace.annotator_accuracy[3:] == pytest.approx([1 / 3, 1 / 3], abs=0.02)  # right only on the aligned third
    assert mace.annotator_accuracy[1:3] == pytest.approx([25 / 30, 25 / 30], abs=0.02)
    assert mace.posterior is not None and np.allclose(mace.posterior.sum(axis=1), 1.0)
    assert (mace.confidence > 0.5).all()
    assert mace.annotator_parameter() is not None and mace.annotator_parameter()[0] == "competence θ"  # type: ignore[index]


def test_mace_plain_em_and_the_variational_default_agree_on_the_spammers() -> None:
    j, truth = _careful_and_spammers()
    em = aggregation.mace(j, variational=False)
    assert em.labels.tolist() == truth.tolist()
    assert em.competence is not None and (em.competence[3:] < 0.05).all()


def test_glad_counts_errors_on_hard_items_less() -> None:
    """Twelve easy pairs (everyone agrees but X, wrong on four) and eight hard ones (two of the
    four regulars wrong on each, Y wrong on four). X and Y make four mistakes each; GLAD rates
    Y, who missed only hard pairs, above X, and the hard pairs as harder."""
    names = ["a", "b", "c", "d", "X", "Y"]
    items, anns, labs, truth = [], [], [], []
    for e in range(12):
        t = e % 3
        truth.append(t)
        for n in names:
            items.append(e)
            anns.append(n)
            labs.append((t + 1) % 3 if n == "X" and e < 4 else t)
    for h in range(8):
        t = h % 3
        truth.append(t)
        for pos, n in enumerate(names):
            lab = t
            if n in "abcd" and (pos + h) % 4 == 0:
                lab = (t + 1) % 3
            if n == "Y" and h < 4:
                lab = (t + 2) % 3
            items.append(12 + h)
            anns.append(n)
            labs.append(lab)
    j = Judgments.encode(items, anns, labs)
    assert j.annotator_keys is not None and j.annotator_keys.tolist()[:2] == ["X", "Y"]
    mistakes = np.bincount(j.annotators[j.labels != np.asarray(truth)[j.items]], minlength=6)
    assert mistakes[0] == mistakes[1] == 4
    glad = aggregation.glad(j)
    assert glad.labels.tolist() == truth
    assert glad.ability is not None and glad.ability[1] > glad.ability[0] + 0.2
    assert glad.difficulty[12:].min() > glad.difficulty[:12].max()
    assert glad.inverse_difficulty is not None and (glad.inverse_difficulty > 0).all()
    assert glad.annotator_parameter() is not None and glad.annotator_parameter()[0] == "ability α"  # type: ignore[index]


def test_glad_with_fixed_uniform_priors_is_the_reference_model() -> None:
    # estimated priors (the default) let GLAD, which has no label-biased annotators, explain the
    # two spammers by "everything is aligned"; with the reference code's fixed uniform priors it
    # does not (docs/annotation-quality.md: use MACE or Dawid-Skene when annotators favour a label)
    j, truth = _careful_and_spammers()
    fixed = aggregation.glad(j, estimate_priors=False)
    assert fixed.labels.tolist() == truth.tolist()
    assert fixed.priors is not None and fixed.priors.tolist() == pytest.approx([1 / 3] * 3)


def test_dawid_skene_also_recovers_the_spammed_pairs() -> None:
    j, truth = _careful_and_spammers()
    assert aggregation.dawid_skene(j).labels.tolist() == truth.tolist()


def test_same_seed_same_result_and_glad_is_deterministic() -> None:
    sim = simulate(1500, seed=4)
    first, again = aggregation.mace(sim.judgments, seed=3), aggregation.mace(sim.judgments, seed=3)
    assert first.posterior is not None and again.posterior is not None
    assert np.array_equal(first.posterior, again.posterior) and first.best_restart == again.best_restart
    other = aggregation.mace(sim.judgments, seed=4)
    assert float((other.labels == first.labels).mean()) > 0.99  # another seed, the same optimum here
    g1, g2 = aggregation.glad(sim.judgments), aggregation.glad(sim.judgments)
    assert g1.posterior is not None and g2.posterior is not None and np.array_equal(g1.posterior, g2.posterior)
    d1, d2 = aggregation.dawid_skene(sim.judgments), aggregation.dawid_skene(sim.judgments)
    assert d1.posterior is not None and d2.posterior is not None and np.array_equal(d1.posterior, d2.posterior)


def test_mace_restarts_stop_once_the_best_optimum_repeats() -> None:
    sim = simulate(1500, seed=4)
    quick = aggregation.mace(sim.judgments)
    full = aggregation.mace(sim.judgments, stop_when_repeated=False)
    assert quick.restarts == 2 and full.restarts == 10
    assert quick.log_likelihood == pytest.approx(full.log_likelihood, rel=1e-6)
    assert np.array_equal(quick.labels, full.labels)


@pytest.mark.parametrize("method", ["majority", "dawid_skene", "mace", "glad"])
def test_every_method_through_the_dispatcher(method: str) -> None:
    j = _judgments([[A, A, A], [N, N, P], [P, P, P], [A, N, N]])
    agg = aggregation.aggregate(j, method)
    assert agg.method == method
    assert agg.labels.tolist() == [A, N, P, N]
    assert ((agg.confidence > 0.3) & (agg.confidence <= 1.0)).all()
    assert agg.counts.sum() == 12
    assert agg.disagreement.tolist() == [False, True, False, True]


@pytest.mark.parametrize("method", ["dawid_skene", "mace", "glad"])
def test_model_methods_on_no_judgments(method: str) -> None:
    empty = np.zeros(0, dtype=np.int64)
    j = Judgments(items=empty, annotators=empty, labels=empty, n_items=0, n_annotators=0)
    agg = aggregation.aggregate(j, method)
    assert agg.labels.shape == (0,) and agg.confidence.shape == (0,)


def test_bad_settings_are_refused() -> None:
    j = _judgments([[A]])
    with pytest.raises(ValueError, match="restarts"):
        aggregation.mace(j, restarts=0)
    with pytest.raises(ValueError, match="max_iter"):
        aggregation.glad(j, max_iter=0)
    with pytest.raises(ValueError, match="'majority', 'dawid_skene', 'mace', 'glad'"):
        aggregation.aggregate(j, "median")


# --- the same models as Toloka's crowd-kit -------------------------------------------------------


@pytest.mark.slow
def test_dawid_skene_and_mace_match_crowdkit() -> None:
    from annotation import crowdkit_reference

    sim = simulate(1200, seed=9)
    ref = crowdkit_reference.run("dawid_skene", sim.judgments)
    ds = aggregation.dawid_skene(sim.judgments, smoothing=1e-10)  # crowd-kit clips at 1e-10 instead of smoothing
    assert ds.posterior is not None
    assert np.array_equal(ds.labels, ref.labels)
    assert np.abs(ds.posterior - ref.posterior).mean() < 1e-3
    default = aggregation.dawid_skene(sim.judgments)  # pseudo-count 0.01: two borderline pairs of 1,200 differ
    assert float((default.labels == ref.labels).mean()) > 0.995
    # one restart each, run the same 50 rounds (crowd-kit has no stopping rule for MACE)
    mace = aggregation.mace(sim.judgments, restarts=1, tol=0.0)
    ref = crowdkit_reference.run("mace", sim.judgments, n_restarts=1)
    assert mace.posterior is not None
    assert np.array_equal(mace.labels, ref.labels)
    assert np.abs(mace.posterior - ref.posterior).max() < 1e-4


@pytest.mark.slow
def test_glad_with_uniform_priors_matches_crowdkit() -> None:
    from annotation import crowdkit_reference

    sim = simulate(250, seed=9)
    glad = aggregation.glad(sim.judgments, estimate_priors=False)
    ref = crowdkit_reference.run("glad", sim.judgments)
    assert glad.posterior is not None
    assert float((glad.labels == ref.labels).mean()) >= 0.99
    assert np.abs(glad.posterior - ref.posterior).mean() < 0.01  # crowd-kit stops its M-step early (CG, 25 steps)
