"""Splits by article group: deterministic, ratio-respecting, no article in two splits."""

from __future__ import annotations

import pytest

from curation.curate.splits import allocate, assign_splits, parse_ratios


def test_parse_ratios_forms() -> None:
    assert parse_ratios("35/5/10") == {"train": 35.0, "dev": 5.0, "test": 10.0}
    assert parse_ratios("train=8,test=2") == {"train": 8.0, "test": 2.0}
    assert parse_ratios(None) == {"train": 35, "dev": 5, "test": 10}
    with pytest.raises(ValueError):
        parse_ratios("1/-1/1")
    for text in ("nan/nan/nan", "inf/1/1", "train=nan", {"train": float("inf")}):
        with pytest.raises(ValueError):
            parse_ratios(text)


def test_allocate_largest_remainder() -> None:
    assert allocate(50, {"train": 35, "dev": 5, "test": 10}) == {"train": 35, "dev": 5, "test": 10}
    assert sum(allocate(7, {"train": 35, "dev": 5, "test": 10}).values()) == 7


def test_assign_splits_is_deterministic_and_partitions() -> None:
    keys = [f"art{i}" for i in range(100)]
    a = assign_splits(keys, parse_ratios("35/5/10"), seed=3)
    b = assign_splits(list(reversed(keys)), parse_ratios("35/5/10"), seed=3)
    c = assign_splits(keys, parse_ratios("35/5/10"), seed=4)
    assert a == b  # input order does not matter
    assert a != c  # the seed does
    assert set(a) == set(keys)  # each article exactly once (dict keys)
    counts = {s: sum(1 for v in a.values() if v == s) for s in ("train", "dev", "test")}
    assert counts == {"train": 70, "dev": 10, "test": 20}


def test_small_pools_keep_one_article_per_split() -> None:
    """4 and 5 articles (where retraining and exports used to split differently): every split
    with a positive ratio gets an article, the largest split gives it up."""
    assert allocate(4, {"train": 35, "dev": 5, "test": 10}) == {"train": 2, "dev": 1, "test": 1}
    assert allocate(5, {"train": 0.7, "dev": 0.1, "test": 0.2}) == {"train": 3, "dev": 1, "test": 1}
    assert allocate(3, {"train": 0.7, "dev": 0.1, "test": 0.2}) == {"train": 1, "dev": 1, "test": 1}
    assert allocate(4, {"train": 1, "dev": 0, "test": 1}) == {"train": 2, "dev": 0, "test": 2}
    split = assign_splits(["a", "b", "c", "d", "e"], {"train": 0.7, "dev": 0.1, "test": 0.2}, seed=0)
    assert sorted(split.values()) == ["dev", "test", "train", "train", "train"]
