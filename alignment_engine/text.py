"""Text processing shared by the engine and the importers: tokens and sentence splitting."""

from __future__ import annotations

import re
from functools import lru_cache

TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
WORD_RE = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Words and punctuation marks, in order (``"Don't!"`` -> ``["Don", "'", "t", "!"]``)."""
    return TOKEN_RE.findall(text)


def words(text: str) -> list[str]:
    """Lower-cased word tokens, punctuation dropped."""
    return [w.lower() for w in WORD_RE.findall(text)]


def count_tokens(text: str) -> int:
    return len(TOKEN_RE.findall(text))


# pysbd compiles a regular expression per abbreviation it meets (about 16,000 distinct ones for
# OneStopEnglish); with re's default cache of 512 it recompiled them over and over (60% of its time).
RE_CACHE_SIZE = 8192


@lru_cache(maxsize=8)
def _segmenter(language: str):  # type: ignore[no-untyped-def]
    import pysbd

    if getattr(re, "_MAXCACHE", RE_CACHE_SIZE) < RE_CACHE_SIZE:
        re._MAXCACHE = RE_CACHE_SIZE  # type: ignore[attr-defined]

    try:
        return pysbd.Segmenter(language=language, clean=False)
    except ValueError:
        return pysbd.Segmenter(language="en", clean=False)


def split_sentences(paragraph: str, language: str = "en") -> list[str]:
    """Split a paragraph into sentences with pysbd (rule-based, offline, en/de and more).

    Whitespace inside each sentence is normalised to single spaces; empty pieces are dropped.
    """
    paragraph = " ".join(paragraph.split())
    if not paragraph:
        return []
    pieces = _segmenter(language).segment(paragraph)
    return [" ".join(p.split()) for p in pieces if p.strip()]


def clean_cell(text: str) -> str:
    """A sentence as written to a TSV cell: tabs and newlines become single spaces."""
    return " ".join(text.replace("\t", " ").replace("\r", " ").replace("\n", " ").split(" ")).strip()
