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
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import repeat

import pyphen

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
