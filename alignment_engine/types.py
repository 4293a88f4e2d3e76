"""Plain data types of the engine: document pairs in, alignment rows out."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from alignment_engine.ids import COMPLEX, SIMPLE, pair_id_of, sentence_id


class Label(StrEnum):
    ALIGNED = "aligned"
    PARTIAL = "partialAligned"
    NOT_ALIGNED = "notAligned"


POSITIVE_LABELS = frozenset({Label.ALIGNED.value, Label.PARTIAL.value, "identical"})


def distinct_sentences(pairs: Iterable[DocPair]) -> list[str]:
    """Every distinct sentence text of ``pairs``, in first-seen order (what the sentence encoder embeds for them)."""
    return list(dict.fromkeys(t for p in pairs for t in p.sentences()))


@dataclass(frozen=True)
class DocPair:
    """One document pair with sentences already split.

    ``complex[p][s]`` is sentence ``sentence_id(pair_id, COMPLEX, p, s)`` and ``simple[p][s]`` is
    ``sentence_id(pair_id, SIMPLE, p, s)`` (:mod:`alignment_engine.ids`).
    """

    pair_id: str
    complex: list[list[str]]
    simple: list[list[str]]
    language: str = "en"
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    # ---- flat views (document order) -------------------------------------------------
    def complex_sentences(self) -> list[str]:
        return [s for para in self.complex for s in para]

    def simple_sentences(self) -> list[str]:
        return [s for para in self.simple for s in para]

    def complex_ids(self) -> list[str]:
        return [sentence_id(self.pair_id, COMPLEX, p, s) for p, para in enumerate(self.complex) for s in range(len(para))]

    def simple_ids(self) -> list[str]:
        return [sentence_id(self.pair_id, SIMPLE, p, s) for p, para in enumerate(self.simple) for s in range(len(para))]

    def complex_paragraph_of(self) -> list[int]:
        """Paragraph index of every complex sentence, in document order."""
        return [p for p, para in enumerate(self.complex) for _ in para]

    def simple_paragraph_of(self) -> list[int]:
        return [p for p, para in enumerate(self.simple) for _ in para]

    def sentences(self) -> list[str]:
        """Both sides' sentences, simple then complex, in document order."""
        return [*self.simple_sentences(), *self.complex_sentences()]

    def texts(self) -> dict[str, str]:
        """Sentence id -> text for both sides."""
        out = dict(zip(self.complex_ids(), self.complex_sentences(), strict=True))
        out.update(zip(self.simple_ids(), self.simple_sentences(), strict=True))
        return out


@dataclass(frozen=True)
class Alignment:
    """One row of the alignment TSV (see ``../shared/formats.md``)."""

    label: str  # "aligned" | "partialAligned" | "notAligned"
    simple_id: str
    complex_id: str
    simple_text: str = ""
    complex_text: str = ""
    score: float | None = None

    @property
    def pair_id(self) -> str:
        return pair_id_of(self.simple_id)

    @property
    def is_positive(self) -> bool:
        return self.label in POSITIVE_LABELS


ProgressCallback = Callable[[int, int], None]  # (done, total)
