"""Small text helpers of the export filters: whitespace normalisation with a fast path, and
the numbering of distinct strings for the vectorised per-sentence measures (GLEU, Flesch)."""

from __future__ import annotations

from collections.abc import Sequence


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


SEPARATOR = "\x00"


def joined_chunks(texts: Sequence[str], lower: bool = False) -> list[str] | None:
    """The whitespace-separated chunks of all ``texts`` (lower-cased if ``lower``) in one list,
    text after text with a ``SEPARATOR`` chunk between two texts, from one ``join`` and one
    ``split`` in C (instead of a ``split`` per text). Lower-casing the joined string equals
    lower-casing each text: the one context rule of ``str.lower`` (final sigma) stops at
    whitespace. None when a text holds ``SEPARATOR`` itself (then split them one by one)."""
    joined = f" {SEPARATOR} ".join(texts)
    if joined.count(SEPARATOR) != len(texts) - 1:
        return None
    return (joined.lower() if lower else joined).split()
