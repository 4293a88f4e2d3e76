"""Sentence and pair ids, the one place that builds and reads them (``../shared/formats.md``).

A sentence id is ``<pair_id>-<side>-<paragraph>-<sentence>``: side ``1`` is the complex
(original) document and ``0`` the simple one; paragraph and sentence count from 0. A pair id
is an opaque string without ``-`` (``399_620677``, ``amazon.adv_int``).

>>> sid = SentenceId.parse("399_620677-0-3-7")
>>> sid.pair_id, sid.side, sid.paragraph, sid.sentence
('399_620677', 0, 3, 7)
>>> str(SentenceId("86", COMPLEX, 0, 1))
'86-1-0-1'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, cast

SIMPLE: Final = 0
COMPLEX: Final = 1

#: Longest pair id accepted anywhere (database column, file names, exports).
PAIR_ID_MAX_LENGTH: Final = 200

_PAIR_ID = re.compile(r"[^\-\s\x00-\x1f\x7f]+")


def pair_id_problem(pair_id: object) -> str | None:
    """Why ``pair_id`` is not a valid pair id, or None when it is."""
    if not isinstance(pair_id, str) or not pair_id:
        return "a pair id must be a non-empty string"
    if len(pair_id) > PAIR_ID_MAX_LENGTH:
        return f"a pair id has at most {PAIR_ID_MAX_LENGTH} characters (got {len(pair_id)})"
    if not _PAIR_ID.fullmatch(pair_id):
        return f"a pair id may not contain '-', whitespace or control characters: {pair_id[:60]!r}"
    return None


def check_pair_id(pair_id: object) -> str:
    """Return ``pair_id`` unchanged, or raise ValueError saying what is wrong with it."""
    problem = pair_id_problem(pair_id)
    if problem:
        raise ValueError(problem)
    return cast(str, pair_id)


@dataclass(frozen=True, order=True, slots=True)
class SentenceId:
    """One sentence of one document pair; ``str()`` formats it, ``parse`` reads it."""

    pair_id: str
    side: int
    paragraph: int
    sentence: int

    def __str__(self) -> str:
        return f"{self.pair_id}-{self.side}-{self.paragraph}-{self.sentence}"

    @classmethod
    def parse(cls, text: str) -> SentenceId:
        """Read ``<pair_id>-<side>-<paragraph>-<sentence>``; ValueError names what is wrong."""
        parts = text.rsplit("-", 3) if isinstance(text, str) else []
        if len(parts) != 4 or not parts[0]:
            raise ValueError(f"not a sentence id (<pair_id>-<side>-<paragraph>-<sentence>): {str(text)[:80]!r}")
        pair_id, side, paragraph, sentence = parts
        if side not in ("0", "1"):
            raise ValueError(f"sentence id {text[:80]!r}: side must be 0 (simple) or 1 (complex)")
        if not (paragraph.isascii() and paragraph.isdigit() and sentence.isascii() and sentence.isdigit()):
            raise ValueError(f"sentence id {text[:80]!r}: paragraph and sentence must be non-negative integers")
        problem = pair_id_problem(pair_id)
        if problem:
            raise ValueError(f"sentence id {text[:80]!r}: {problem}")
        return cls(pair_id, int(side), int(paragraph), int(sentence))

    @property
    def is_simple(self) -> bool:
        return self.side == SIMPLE

    @property
    def position(self) -> tuple[int, int]:
        """(paragraph, sentence): the sentence's place within its document."""
        return self.paragraph, self.sentence


def pair_id_of(sentence_id: str) -> str:
    """The pair id of a sentence id without validating the rest (a pair id holds no ``-``).

    For hot loops over ids that were validated when read; use :meth:`SentenceId.parse` to check one.
    """
    return sentence_id.split("-", 1)[0]


def sentence_id(pair_id: str, side: int, paragraph: int, sentence: int) -> str:
    """The formatted id; the same as ``str(SentenceId(...))`` without building the object."""
    return f"{pair_id}-{side}-{paragraph}-{sentence}"
