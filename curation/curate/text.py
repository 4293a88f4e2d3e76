"""Small text helpers of the export filters: whitespace normalisation with a fast path, and
the numbering of distinct strings for the vectorised per-sentence measures (GLEU, Flesch)."""

from __future__ import annotations


class Ids(dict[str, int]):
    """A dict that numbers new keys 0, 1, 2 ... on their first look-up, so that
    ``map(ids.__getitem__, keys)`` numbers a whole list in C; the keys numbered since
    ``fresh`` was last emptied are listed there (in the order first seen)."""

    def __init__(self) -> None:
        super().__init__()
        self.fresh: list[str] = []

    def __missing__(self, key: str) -> int:
        value = self[key] = len(self)
        self.fresh.append(key)
        return value

    def take_fresh(self) -> list[str]:
        fresh, self.fresh = self.fresh, []
        return fresh


def normalise_space(text: str) -> str:
    """``" ".join(text.split())``, without splitting the usual sentence that is already normal:
    one that is printable (every whitespace character but the space is not), has no double space
    and no space at either end (checked by a script over every code point, see the tests)."""
    if text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text
    return " ".join(text.split())
