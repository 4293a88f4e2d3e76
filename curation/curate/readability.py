"""Readability, offline: Flesch reading ease (the paraphrase-to-simplification selector) and
the Flesch-Kincaid grade (automatic metrics of human-evaluation studies).

``textstat.flesch_reading_ease`` looks English syllables up in NLTK's cmudict, which is a
download and fails offline here, so the score is computed with textstat's own fallback
(pyphen hyphenation dictionaries, offline) and textstat's sentence and word counting:

- English: ``206.835 - 1.015 * words/sentences - 84.6 * syllables/words`` (Flesch 1948);
- German:  ``180 - words/sentences - 58.5 * syllables/words`` (Amstad 1978, textstat's "de").

- Flesch-Kincaid grade: ``0.39 * words/sentences + 11.8 * syllables/words - 15.59`` (Kincaid et
  al. 1975, textstat's formula).

Syllables of a word = hyphenation points + 1 (pyphen), as textstat does when cmudict lacks a word.

:func:`flesch_scores` gives :func:`flesch_reading_ease` for many texts at once (an export's
filter passes the sentences of one document pair): a text's words, syllables and sentence ends
are sums over its whitespace-separated chunks (no word or sentence end spans whitespace), each
distinct chunk is counted once per process (a bounded table) and the sums and formula run in
numpy; only the final ``round`` is Python's own, so the numbers are exactly the scalar ones.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain, repeat

import numpy as np
import pyphen

from curation.curate.text import SEPARATOR, Ids, joined_chunks

WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?", re.UNICODE)
SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")


@lru_cache(maxsize=4)
def _dictionary(language: str) -> pyphen.Pyphen:
    lang = "de_DE" if language.startswith("de") else "en_US"
    return pyphen.Pyphen(lang=lang)


@lru_cache(maxsize=65536)
def _syllables(word: str, language: str) -> int:
    return len(_dictionary(language).positions(word)) + 1


def _rates(text: str, language: str) -> tuple[float, float] | None:
    """``(words per sentence, syllables per word)``, or None for a text without words."""
    tokens = list(map(str.lower, WORD.findall(text)))
    if not tokens:
        return None
    sentences = max(1, len(SENTENCE_END.findall(text)))
    syllables = sum(map(_syllables, tokens, repeat(language)))  # no generator frame per word
    return len(tokens) / sentences, syllables / len(tokens)


@lru_cache(maxsize=65536)
def flesch_reading_ease(text: str, language: str = "en") -> float:
    """Flesch reading ease (higher = easier); German uses Amstad's constants."""
    rates = _rates(text, language)
    if rates is None:
        return 0.0
    asl, asw = rates
    if language.startswith("de"):
        return round(180.0 - asl - 58.5 * asw, 2)
    return round(206.835 - 1.015 * asl - 84.6 * asw, 2)


# Distinct chunks ("Said", "river.", "don't" ...) remembered with their counts, per language; a
# table is emptied when it grows past this, so it stays at a few MiB.
CHUNK_TABLE_SIZE = 65_536
SENTENCE_END_CHARS = ".!?"


class _ChunkCounts:
    """Chunk -> (words, syllables, 1 if it ends a sentence) for one language, as numpy arrays.

    ``WORD`` and ``SENTENCE_END`` never match whitespace, so a text's words are its chunks' words
    in order, and ``SENTENCE_END`` (a run of ``.!?`` followed by whitespace or the end) matches
    exactly once in each chunk whose last character is one of ``.!?``."""

    def __init__(self, language: str) -> None:
        self.language = language
        self.reset()

    def reset(self) -> None:
        self.ids = Ids()
        self.words = np.zeros(0, dtype=np.int64)
        self.syllables = np.zeros(0, dtype=np.int64)
        self.ends = np.zeros(0, dtype=np.int64)

    def lookup(self, chunks: list[str]) -> np.ndarray:
        if len(self.ids) > CHUNK_TABLE_SIZE:
            self.reset()
        ids = np.fromiter(map(self.ids.__getitem__, chunks), dtype=np.int64, count=len(chunks))
        if self.ids.fresh:
            fresh = self.ids.take_fresh()
            tokens = [[c.lower()] if c.isalpha() else list(map(str.lower, WORD.findall(c))) for c in fresh]
            syllables = [sum(map(_syllables, t, repeat(self.language))) for t in tokens]
            self.words = np.concatenate((self.words, np.fromiter(map(len, tokens), dtype=np.int64, count=len(fresh))))
            self.syllables = np.concatenate((self.syllables, np.array(syllables, dtype=np.int64)))
            ends = [c[-1] in SENTENCE_END_CHARS for c in fresh]
            self.ends = np.concatenate((self.ends, np.array(ends, dtype=np.int64)))
        return ids


_tables: dict[str, _ChunkCounts] = {}


def flesch_scores(texts: Sequence[str], language: str = "en") -> list[float]:
    """:func:`flesch_reading_ease` of each text (exactly), computed together (see the module docstring)."""
    if not texts:
        return []
    table = _tables.get(language)
    if table is None:
        table = _tables[language] = _ChunkCounts(language)
    joined = joined_chunks(texts)
    if joined is not None:  # a separator chunk counts no word, syllable or sentence end
        chunks = table.lookup(joined)
        of_text = np.cumsum(chunks == table.ids.get(SEPARATOR, -1))
    else:
        split = [text.split() for text in texts]
        chunks = table.lookup(list(chain.from_iterable(split)))
        of_text = np.repeat(np.arange(len(texts)), np.fromiter(map(len, split), dtype=np.int64, count=len(split)))
    words = np.bincount(of_text, weights=table.words[chunks], minlength=len(texts))
    syllables = np.bincount(of_text, weights=table.syllables[chunks], minlength=len(texts))
    sentences = np.maximum(np.bincount(of_text, weights=table.ends[chunks], minlength=len(texts)), 1)
    has_words = words > 0
    asl = np.divide(words, sentences)
    asw = np.divide(syllables, words, out=np.zeros(len(texts)), where=has_words)
    # the same IEEE operations in the same order as the scalar formula
    scores = 180.0 - asl - 58.5 * asw if language.startswith("de") else 206.835 - 1.015 * asl - 84.6 * asw
    return [round(score, 2) if ok else 0.0 for score, ok in zip(scores.tolist(), has_words.tolist(), strict=True)]


def flesch_kincaid_grade(text: str, language: str = "en") -> float:
    """Flesch-Kincaid grade level (lower = easier)."""
    rates = _rates(text, language)
    if rates is None:
        return 0.0
    asl, asw = rates
    return round(0.39 * asl + 11.8 * asw - 15.59, 2)


def flesch_gain(simple: str, complex_: str, language: str = "en") -> float:
    """How many Flesch reading-ease points the simple side is easier than the complex side."""
    return flesch_reading_ease(simple, language) - flesch_reading_ease(complex_, language)
