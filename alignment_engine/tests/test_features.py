"""Transition features and their table of distinct rows."""

from __future__ import annotations

import pytest
import torch

from alignment_engine.crf import DTYPE
from alignment_engine.features import TRANSITION_FEATURES, transition_features, transition_table


@pytest.mark.parametrize("n_labels", [1, 2, 3, 4, 7, 40])
def test_the_table_indexed_gives_every_pair_its_features_bit_for_bit(n_labels: int) -> None:
    rows, index = transition_table(n_labels)
    full = transition_features(n_labels)
    assert full.shape == (n_labels, n_labels, len(TRANSITION_FEATURES)) and full.dtype == DTYPE
    assert index.shape == (n_labels, n_labels) and index.dtype == torch.long
    assert torch.equal(rows[index], full)
    # one row per jump between real labels and one per null case: 2 L rows instead of L^2
    assert rows.shape[0] == (1 if n_labels == 1 else 2 * n_labels)
    assert torch.unique(rows, dim=0).shape[0] == rows.shape[0]


def test_transition_features_by_hand() -> None:
    f = transition_features(4)  # labels 0 (null), 1, 2, 3
    names = list(TRANSITION_FEATURES)
    jump = dict(zip(names, f[1, 3].tolist(), strict=True))  # 1 -> 3: skips one
    assert jump["abs_jump"] == 2 and jump["skip"] == 1 and jump["next"] == 0 and jump["rel_jump"] == pytest.approx(2 / 3)
    back = dict(zip(names, f[3, 2].tolist(), strict=True))
    assert back["backward"] == 1 and back["abs_jump"] == 1
    assert f[0, 2, names.index("prev_null")] == 1 and f[2, 0, names.index("cur_null")] == 1
    assert f[0, 0, names.index("both_null")] == 1 and f[0, 0, :7].abs().sum() == 0
