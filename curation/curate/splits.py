"""Train/dev/test splits by article group: every document pair and sentence pair of an article
lands in the same split, so no article is in two splits (as Newsela-Manual / Wiki-Manual).

Deterministic: article keys are sorted, shuffled with ``random.Random(seed)`` and cut by the
ratios (largest remainder rounding), so the same keys, ratios and seed give the same splits.
When there are at least as many articles as splits with a positive ratio, each of those splits
gets at least one article (taken from the largest split), so a small pool still has a dev and a
test article. Exports and retraining both split with :func:`assign_splits`;
:func:`shared_across_splits` checks a result: any sentence text found in two splits is a leak
(an article group that should have been one, e.g. two JSONL pairs sharing a document).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain

from alignment_engine.text import count_tokens
from curation.curate.text import normalise_space

DEFAULT_RATIOS: dict[str, float] = {"train": 35, "dev": 5, "test": 10}


def parse_ratios(text: str | Mapping[str, float] | None) -> dict[str, float]:
    """``"35/5/10"`` or ``"train=35,dev=5,test=10"`` or a mapping -> {split: weight}."""
    if text is None or text == "":
        return dict(DEFAULT_RATIOS)
    if isinstance(text, Mapping):
        ratios = {str(k): float(v) for k, v in text.items()}
    elif "=" in text:
        ratios = {}
        for part in text.split(","):
            name, _, value = part.partition("=")
            ratios[name.strip()] = float(value)
    else:
        values = [float(v) for v in text.replace(",", "/").split("/")]
        names = ["train", "dev", "test"] if len(values) == 3 else [f"split{i}" for i in range(len(values))]
        if len(values) == 1:
            names = ["train"]
        ratios = dict(zip(names, values, strict=True))
    if not ratios or any(not math.isfinite(v) or v < 0 for v in ratios.values()) or sum(ratios.values()) <= 0:
        raise ValueError(f"invalid split ratios: {text!r}")
    return ratios


def allocate(n: int, ratios: Mapping[str, float]) -> dict[str, int]:
    """How many of ``n`` items each split gets (largest remainder, ties by split order)."""
    total = sum(ratios.values())
    exact = {name: n * weight / total for name, weight in ratios.items()}
    counts = {name: int(value) for name, value in exact.items()}
    rest = n - sum(counts.values())
    order = sorted(ratios, key=lambda name: (-(exact[name] - counts[name]), list(ratios).index(name)))
    for name in order[:rest]:
        counts[name] += 1
    wanted = [name for name, weight in ratios.items() if weight > 0]
    if n >= len(wanted):
        for name in wanted:
            if counts[name] == 0:
                largest = max(ratios, key=lambda other: (counts[other], -list(ratios).index(other)))
                counts[largest] -= 1
                counts[name] += 1
    return counts


def assign_splits(article_keys: Iterable[str], ratios: Mapping[str, float] | None = None, seed: int = 0) -> dict[str, str]:
    """Map each article key to a split name."""
    ratios = dict(ratios or DEFAULT_RATIOS)
    keys = sorted(set(article_keys))
    random.Random(seed).shuffle(keys)
    counts = allocate(len(keys), ratios)
    result: dict[str, str] = {}
    start = 0
    for name in ratios:
        for key in keys[start : start + counts[name]]:
            result[key] = name
        start += counts[name]
    return result


@dataclass(frozen=True)
class SharedText:
    """A sentence text found in more than one split, with the articles holding it per split."""

    text: str
    articles: dict[str, list[str]]  # split -> article keys

    def as_dict(self) -> dict[str, object]:
        return {"text": self.text, "articles": self.articles}


def _split_texts(
    texts: Iterable[tuple[str, str]], split_of: Mapping[str, str], min_tokens: int
) -> Iterator[tuple[str, str, str]]:
    """(article key, its split, whitespace-normalised text) for the keys in ``split_of`` and
    texts of at least ``min_tokens`` tokens."""
    for key, text in texts:
        split = split_of.get(key)
        if split is None:
            continue
        norm = normalise_space(text)
        if min_tokens > 1 and count_tokens(norm) < min_tokens:
            continue
        yield key, split, norm


def shared_across_splits(
    texts: Iterable[tuple[str, str]], split_of: Mapping[str, str], min_tokens: int = 1
) -> list[SharedText]:
    """Every sentence text (whitespace-normalised) that occurs in two or more splits.

    ``texts`` yields (article key, sentence text); keys missing from ``split_of`` are ignored.
    ``min_tokens`` > 1 leaves short texts out (``Yes.`` may honestly occur in many articles).
    Sorted by text; an empty list means no sentence leaks from one split into another."""
    seen: dict[str, dict[str, set[str]]] = {}
    for key, split, norm in _split_texts(texts, split_of, min_tokens):
        seen.setdefault(norm, {}).setdefault(split, set()).add(key)
    return [
        SharedText(text, {split: sorted(keys) for split, keys in sorted(by_split.items())})
        for text, by_split in sorted(seen.items())
        if len(by_split) > 1
    ]


ODD_ROWS_KEPT = 10_000  # texts not already in normal form remembered for the second pass (else: a full pass)


def count_shared_across_splits(
    texts: Callable[[], Iterable[tuple[str, str]]],
    split_of: Mapping[str, str],
    limit: int,
    min_tokens: int = 1,
    texts_equal_to: Callable[[frozenset[str]], Iterable[tuple[str, str]]] | None = None,
) -> tuple[int, list[SharedText]]:
    """``(len(leaks), leaks[:limit])`` for ``leaks = shared_across_splits(texts(), ...)``, in
    bounded memory: the first pass keeps one split name per distinct text (not its article
    sets and the sorted list of every leak), a second pass collects the articles of the
    ``limit`` first leaked texts only (skipped when nothing leaks).

    ``texts_equal_to(wanted)``, when given, yields the (key, text) pairs whose text is exactly
    one of ``wanted`` (a database query by value): the second pass is then that query plus
    the pairs of the first pass whose text was not already in normal form (stored sentences
    almost always are; beyond ``ODD_ROWS_KEPT`` of them it reads ``texts()`` again)."""
    first_split: dict[str, str | None] = {}  # text -> its one split so far; None once in two
    odd: list[tuple[str, str]] | None = [] if texts_equal_to is not None else None  # (key, raw text) not in normal form
    remember, split_for = first_split.setdefault, split_of.get
    for key, text in texts():  # _split_texts inlined: this runs once per sentence of the corpus
        split = split_for(key)
        if split is None:
            continue
        norm = normalise_space(text)
        if odd is not None and norm is not text and norm != text:  # (a normal text comes back as itself)
            odd.append((key, text))
            if len(odd) > ODD_ROWS_KEPT:
                odd = None
        if min_tokens > 1 and count_tokens(norm) < min_tokens:
            continue
        seen = remember(norm, split)
        if seen is not None and seen != split:
            first_split[norm] = None
    shared = [text for text, split in first_split.items() if split is None]
    del first_split
    count = len(shared)
    listed = frozenset(heapq.nsmallest(limit, shared))
    del shared
    if not listed:
        return count, []
    if texts_equal_to is not None and odd is not None:
        rows: Iterable[tuple[str, str]] = chain(
            texts_equal_to(listed), ((key, text) for key, text in odd if normalise_space(text) in listed)
        )
    else:
        # a text's normal form starts with the first character of the text without leading
        # whitespace: that cheap test skips most sentences before normalising
        heads = {text[:1] for text in listed}
        rows = ((key, text) for key, text in texts() if text.lstrip()[:1] in heads and normalise_space(text) in listed)
    return count, shared_across_splits(rows, split_of, min_tokens)
