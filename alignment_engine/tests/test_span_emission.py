"""Block-level lexical channels (span_emission) on small hand-made documents."""

from __future__ import annotations

import numpy as np
import pytest

from alignment_engine.crf_config import CRFConfig
from alignment_engine.features import lexical_feature_names, lexical_features
from alignment_engine.span_emission import SPAN_EMISSION_FEATURES, _excludes, runs, span_emission_features

SIMPLE = ["Der Hund bellt laut.", "Die Katze schläft.", "Es regnet heute sehr stark.", "Wir bleiben zu Hause."]
COMPLEX = ["Der Hund bellt laut, während die Katze schläft.", "Heute regnet es stark, darum bleiben wir zu Hause.",
           "Ende."]


def _ch(name: str) -> int:
    return SPAN_EMISSION_FEATURES.index(name)


def test_runs_and_excluded_maxima() -> None:
    assert runs(3, 2) == [(0, 1), (1, 1), (2, 1), (0, 2), (1, 2)]
    values = np.array([[1.0, 2.0, 3.0, 10.0, 0.5]])  # the runs above
    # column 0: runs without 0 are (1,1), (2,1), (1,2) -> 3; column 1: only (2,1) -> 3; column 2: (0,1), (1,1), (0,2) -> 10
    assert _excludes(values, runs(3, 2), 3).tolist() == [[3.0, 3.0, 10.0]]


def test_split_parts_belong_to_the_best_run() -> None:
    f = span_emission_features(SIMPLE, COMPLEX, (3, 2))
    assert f.shape == (4, 3, len(SPAN_EMISSION_FEATURES))
    loss = f[:, :, _ch("c3g_srun_loss")]
    # simple 0 and 1 are the two parts of complex 0's split, 2 and 3 of complex 1's: each is in its
    # complex sentence's best run (positive), and not in the other's (negative)
    assert (loss[[0, 1], 0] > 0).all() and (loss[[2, 3], 1] > 0).all()
    assert (loss[[2, 3], 0] < 0).all() and (loss[[0, 1], 1] < 0).all()
    gain = f[:, :, _ch("c3g_srun_gain")]
    assert (gain[[0, 1], 0] > 0.2).all() and gain[0, 2] == 0.0
    # the run of the split parts covers complex 0's words better than either part alone
    assert f[0, 0, _ch("cover_srun")] > f[0, 0, _ch("cover_srun_gain")] > 0
    block = f[:, :, _ch("c3g_block")]
    assert np.isclose(block[0, 0], block[1, 0]) and block[0, 0] >= f[0, 0, _ch("c3g_srun")] - 1e-6


def test_empty_sides_and_lexical_wiring() -> None:
    assert span_emission_features([], COMPLEX).shape == (0, 3, len(SPAN_EMISSION_FEATURES))
    base = lexical_features(SIMPLE, COMPLEX, True)
    both = lexical_features(SIMPLE, COMPLEX, True, span=True, span_widths=(2, 2))
    assert both.shape[-1] == len(lexical_feature_names(True, True)) == base.shape[-1] + len(SPAN_EMISSION_FEATURES)
    assert np.array_equal(both[:, :, : base.shape[-1]], base)
    assert CRFConfig().span_emission is False
    assert CRFConfig().with_options(span_emission_widths=[4, 2]).span_emission_widths == (4, 2)
    with pytest.raises(ValueError, match="span_emission_widths"):
        CRFConfig().with_options(span_emission_widths=[0, 2])
