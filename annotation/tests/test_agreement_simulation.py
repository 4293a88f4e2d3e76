"""A simulated job: measured agreement and recovered labels match what the simulation implies."""

from __future__ import annotations

import numpy as np
import pytest

from annotation import aggregation, agreement, crowd_model


@pytest.fixture(scope="module")
def sim() -> crowd_model.SimulatedJob:
    return crowd_model.simulate(40_000, seed=7)


def test_kappa_fleiss_alpha_match_the_analytic_values(sim: crowd_model.SimulatedJob) -> None:
    report = agreement.job_agreement(sim.judgments, min_shared=10)
    expected_kappa = crowd_model.expected_mean_kappa()
    expected_fleiss = crowd_model.expected_fleiss()
    assert 0.3 < expected_kappa < 0.6  # the setting is far from trivial
    assert report.cohen_pairs == 250  # 10 tier pairs x 5 x 5 annotators
    assert report.cohen_mean == pytest.approx(expected_kappa, abs=0.01)
    assert report.fleiss == pytest.approx(expected_fleiss, abs=0.01)
    assert report.alpha == pytest.approx(expected_fleiss, abs=0.01)


def test_pair_kappa_is_ordered_by_accuracy() -> None:
    assert crowd_model.expected_pair_kappa(0.95, 0.9) > crowd_model.expected_pair_kappa(0.7, 0.6)
    assert crowd_model.expected_pair_kappa(1.0, 1.0) == pytest.approx(1.0)


def test_majority_and_dawid_skene_recover_labels_at_the_expected_rates(sim: crowd_model.SimulatedJob) -> None:
    mv = aggregation.majority_vote(sim.judgments)
    ds = aggregation.dawid_skene(sim.judgments)
    mv_acc = float((mv.labels == sim.truth).mean())
    ds_acc = float((ds.labels == sim.truth).mean())
    expected_mv = crowd_model.expected_majority_accuracy()
    bayes = crowd_model.expected_bayes_accuracy()
    assert mv_acc == pytest.approx(expected_mv, abs=0.005)
    assert ds_acc == pytest.approx(bayes, abs=0.005)
    assert bayes > expected_mv + 0.01
    assert ds_acc > mv_acc


@pytest.mark.parametrize("method", ["dawid_skene", "mace", "glad"])
def test_model_methods_recover_the_simulated_annotators_accuracies(sim: crowd_model.SimulatedJob, method: str) -> None:
    agg = aggregation.aggregate(sim.judgments, method)
    assert isinstance(agg, aggregation.ModelAggregate) and agg.converged
    assert agg.annotator_accuracy is not None
    assert np.abs(agg.annotator_accuracy - sim.annotator_accuracy).max() < 0.02
    accuracy = float((agg.labels == sim.truth).mean())
    # MACE assumes a uniform prior over the true label (here 0.25 / 0.15 / 0.60): a little below the others
    assert accuracy == pytest.approx(crowd_model.expected_bayes_accuracy(), abs=0.006 if method == "mace" else 0.003)
    assert accuracy > crowd_model.expected_majority_accuracy() + 0.015


def test_mace_and_glad_parameters_order_annotators_by_accuracy(sim: crowd_model.SimulatedJob) -> None:
    mace, glad = aggregation.mace(sim.judgments), aggregation.glad(sim.judgments)
    assert mace.competence is not None and glad.ability is not None
    for values in (mace.competence, glad.ability):
        tiers = values.reshape(5, 5).mean(axis=1)
        assert list(tiers) == sorted(tiers, reverse=True)


def test_per_annotator_agreement_orders_annotators_by_accuracy(sim: crowd_model.SimulatedJob) -> None:
    report = agreement.job_agreement(sim.judgments)
    tiers = report.annotators.agreement.reshape(5, 5).mean(axis=1)
    assert list(tiers) == sorted(tiers, reverse=True)


def test_simulate_job_script_prints_measured_and_expected_figures() -> None:
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "simulate_job.py"
    out = subprocess.run([sys.executable, str(script), "--items", "4000", "--seed", "3"], capture_output=True, text=True, check=True, timeout=120)
    lines = {line[:40].strip(): line[40:].split() for line in out.stdout.splitlines() if len(line) > 40}
    measured, expected, _ = lines["Fleiss' kappa"]
    assert abs(float(measured) - float(expected)) < 0.03
    assert "Dawid-Skene accuracy" in out.stdout and "MACE accuracy" in out.stdout and "GLAD accuracy" in out.stdout
    glad_acc, bayes, _ = next(v for k, v in lines.items() if k.startswith("GLAD accuracy"))
    assert abs(float(glad_acc) - float(bayes)) < 0.01
