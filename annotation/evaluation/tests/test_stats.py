"""Pure statistics on known values: Holm, the permutation and Wilcoxon tests, the bootstrap,
Krippendorff's alpha through the rows, correlations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from annotation.evaluation import stats
from annotation.evaluation.stats import RatingRow


def test_holm_known_values():
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert stats.holm([0.9, 0.8]) == [1.0, 1.0]  # 2 x 0.8 capped at 1, then monotone
    assert stats.holm([0.02, 0.04, 0.3, 0.01]) == pytest.approx([0.06, 0.08, 0.3, 0.04])
    assert stats.holm([]) == []


def test_exact_permutation_test():
    assert stats.paired_permutation([1, 2, 3]) == pytest.approx(2 / 8)  # only all-plus and all-minus are as extreme
    assert stats.paired_permutation([1, -1]) == 1.0
    assert stats.paired_permutation([0, 0, 0]) == 1.0
    # brute force on 6 differences
    d = np.array([0.5, 1.5, -0.25, 2.0, 1.0, 0.75])
    signs = np.array(np.meshgrid(*[[1, -1]] * 6)).reshape(6, -1).T
    expected = np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-9)
    assert stats.paired_permutation(d) == pytest.approx(expected)


def test_monte_carlo_permutation_agrees_with_a_t_test_on_large_samples():
    rng = np.random.default_rng(1)
    d = rng.normal(0.3, 1.0, 80)
    p_perm = stats.paired_permutation(d, n_perm=20000, seed=3)
    p_t = sps.ttest_1samp(d, 0).pvalue
    assert abs(p_perm - p_t) < 0.01
    assert stats.paired_permutation(d, seed=3) == stats.paired_permutation(d, seed=3)  # seeded


def test_wilcoxon_matches_scipy():
    d = [1.0, 2.0, -0.5, 3.0, 0.0, 1.5, 2.5, -1.0]
    assert stats.wilcoxon_p(d) == pytest.approx(sps.wilcoxon(d, zero_method="pratt").pvalue)
    assert stats.wilcoxon_p([0, 0]) == 1.0


def test_bootstrap_interval_brackets_the_mean_and_narrows_with_data():
    rng = np.random.default_rng(0)
    widths = []
    for n in (20, 200):
        values = rng.normal(3, 1, n)
        w, v = stats.bootstrap_weights(n, 1, 2000, seed=1, method="items")
        lo, hi = stats.bootstrap_ci(np.arange(n), np.zeros(n, dtype=int), values, w, v)
        assert lo < values.mean() < hi
        widths.append(hi - lo)
        # the percentile interval of the mean is close to mean +- 1.96 se
        se = values.std(ddof=1) / math.sqrt(n)
        assert (hi - lo) == pytest.approx(2 * 1.96 * se, rel=0.15)
    assert widths[1] < widths[0] / 2.5


def test_two_way_bootstrap_is_wider_when_raters_disagree_in_level():
    # two raters with opposite biases, each rating half the items
    items = np.repeat(np.arange(40), 2)
    raters = np.tile([0, 1], 40)
    values = np.where(raters == 0, 4.0, 2.0) + np.random.default_rng(2).normal(0, 0.1, 80)
    w1, v1 = stats.bootstrap_weights(40, 2, 1000, seed=1, method="items")
    w2, v2 = stats.bootstrap_weights(40, 2, 1000, seed=1, method="two_way")
    lo1, hi1 = stats.bootstrap_ci(items, raters, values, w1, v1)
    lo2, hi2 = stats.bootstrap_ci(items, raters, values, w2, v2)
    assert (hi2 - lo2) > 5 * (hi1 - lo1)


def test_krippendorff_alpha_from_rows_matches_the_package():
    import krippendorff

    # Krippendorff's example (the package's docstring): 3 coders, 15 units
    data = [
        [np.nan, np.nan, np.nan, np.nan, np.nan, 3, 4, 1, 2, 1, 1, 3, 3, np.nan, 3],
        [1, np.nan, 2, 1, 3, 3, 4, 3, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan],
        [np.nan, np.nan, 2, 1, 3, 4, 4, np.nan, 2, 1, 1, 3, 3, np.nan, 4],
    ]
    rows = [RatingRow(f"u{u}", "sys", f"c{c}", "d", float(v)) for c, row in enumerate(data) for u, v in enumerate(row) if not np.isnan(v)]
    for level in ("ordinal", "interval"):
        alpha, units = stats.krippendorff_alpha(rows, level)
        assert alpha == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    interval = stats.krippendorff_alpha(rows, "interval")[0]
    assert interval is not None and round(interval, 6) == 0.810845  # the published example value
    assert units == 12  # units with two or more ratings
    assert stats.krippendorff_alpha(rows[:1], "ordinal") == (None, 0)


def test_summarize_scores_pairs_and_holm():
    rows = []
    rng = np.random.default_rng(5)
    for i in range(30):
        for r in range(3):
            for system, q in (("good", 4.0), ("bad", 2.0), ("same", 2.05)):
                rows.append(RatingRow(f"i{i}", system, f"r{(i + r) % 6}", "fluency", float(np.clip(round(q + rng.normal(0, 0.7)), 1, 5))))
    s = stats.summarize(rows, ["good", "bad", "same"], ["fluency"], {"fluency": "ordinal"}, n_boot=500)
    good = next(x for x in s.scores if x.system == "good")
    assert good.n == 90 and good.n_items == 30 and good.n_raters == 6
    assert good.ci_low < good.mean < good.ci_high
    pairs = {(p.system_a, p.system_b): p for p in s.pairs}
    assert pairs[("good", "bad")].significant and not pairs[("bad", "same")].significant
    raw = [p.p_value for p in s.pairs]
    assert [p.p_holm for p in s.pairs] == pytest.approx(stats.holm(raw))
    assert s.agreement["fluency"][0] is not None


def test_correlation_needs_three_systems():
    assert stats.correlation([1, 2], [1, 2]) == (None, None)
    pearson, spearman = stats.correlation([1, 2, 3, 4], [2, 4, 5, 9])
    assert spearman == pytest.approx(1.0) and pearson is not None and 0.9 < pearson < 1.0
