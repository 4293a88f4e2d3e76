"""The simulation's truth and a small run (the 200-study figures come from
scripts/evaluation_simulation.py and are recorded in docs/human-evaluation.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from annotation.evaluation import simulation


def test_true_means_without_noise_are_the_rounded_clipped_qualities():
    cfg = replace(simulation.LIKERT_SIM, qualities={"a": (3.4, 5.7, 0.2)}, item_sd=0, interaction_sd=0, bias_sd=0, noise=(0, 0))
    truth = simulation.true_means(cfg, draws=1000)
    assert truth == {("a", "fluency"): 3.0, ("a", "adequacy"): 5.0, ("a", "simplicity"): 1.0}


def test_true_mean_of_a_symmetric_clipped_slider_is_its_centre():
    cfg = replace(simulation.SLIDER_SIM, qualities={"a": (50.0,)})
    assert simulation.true_means(cfg, draws=200_000)[("a", "quality")] == pytest.approx(50.0, abs=0.2)


def test_a_small_run_recovers_the_ranking_and_the_two_way_interval_covers_more():
    cfg = replace(simulation.SLIDER_SIM, n_items=30)
    two_way = simulation.run(cfg, studies=6, n_boot=200, bootstrap="two_way")
    items = simulation.run(cfg, studies=6, n_boot=200, bootstrap="items")
    assert two_way.ranking_recovered == 1.0 and two_way.coverage >= 0.85
    assert items.coverage < two_way.coverage and items.mean_half_width < two_way.mean_half_width


def test_closer_shrinks_the_gaps_around_the_mean():
    cfg = simulation.closer(simulation.COMPARATIVE_SIM, 0.5)
    values = [q[0] for q in cfg.qualities.values()]
    original = [q[0] for q in simulation.COMPARATIVE_SIM.qualities.values()]
    assert max(values) - min(values) == pytest.approx((max(original) - min(original)) / 2)
    assert sum(values) == pytest.approx(sum(original))
