"""Control outputs and word diffs (plain Python).

A control (BiSECT, Kim et al. 2021) is one of the item's system outputs with 4-8 random words
replaced by words drawn from the same study's texts; a careful rater scores it low. What was
replaced is recorded so the control can be audited.
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass

WORD = re.compile(r"^[^\W\d_]{2,}$")
STRIP = ".,;:!?\"'()[]«»“”‘’"


def _core(token: str) -> tuple[str, str, str]:
    """``(leading punctuation, word, trailing punctuation)`` of a whitespace token."""
    start, end = 0, len(token)
    while start < end and token[start] in STRIP:
        start += 1
    while end > start and token[end - 1] in STRIP:
        end -= 1
    return token[:start], token[start:end], token[end:]


def vocabulary(texts: Iterable[str]) -> list[str]:
    """Distinct word forms (letters only, 2+ characters) of ``texts``, sorted (reproducible)."""
    words = set()
    for text in texts:
        for token in text.split():
            word = _core(token)[1]
            if WORD.match(word):
                words.add(word.lower())
    return sorted(words)


@dataclass(frozen=True)
class Control:
    text: str
    replaced: list[tuple[int, str, str]]  # (token position, old word, new word)


def make_control(text: str, vocab: list[str], rng: random.Random, low: int = 4, high: int = 8) -> Control:
    """Replace ``rng.randint(low, high)`` words of ``text`` (fewer when it has fewer words) with
    other words of ``vocab``."""
    if low < 1 or high < low:
        raise ValueError(f"need 1 <= low <= high, got {low}..{high}")
    tokens = text.split()
    candidates = [i for i, t in enumerate(tokens) if WORD.match(_core(t)[1])]
    want = min(rng.randint(low, high), len(candidates))
    if want == 0 or len(vocab) < 2:
        raise ValueError(f"cannot make a control from {text[:60]!r}: it needs words and a vocabulary")
    replaced = []
    for i in sorted(rng.sample(candidates, want)):
        lead, word, trail = _core(tokens[i])
        new = word.lower()
        while new == word.lower():
            new = rng.choice(vocab)
        if word[0].isupper():
            new = new[0].upper() + new[1:]
        tokens[i] = lead + new + trail
        replaced.append((i, word, new))
    return Control(" ".join(tokens), replaced)


def word_diff(source: str, output: str) -> list[tuple[str, str]]:
    """The output as ``(kind, text)`` segments against the source: ``same``, ``added`` (in the
    output, not the source) and ``deleted`` (source words the output dropped, shown marked)."""
    a, b = source.split(), output.split()
    norm_a = [_core(t)[1].lower() or t for t in a]
    norm_b = [_core(t)[1].lower() or t for t in b]
    segments: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=norm_a, b=norm_b, autojunk=False).get_opcodes():
        if op == "equal":
            segments.append(("same", " ".join(b[j1:j2])))
            continue
        if op in ("delete", "replace"):
            segments.append(("deleted", " ".join(a[i1:i2])))
        if op in ("insert", "replace"):
            segments.append(("added", " ".join(b[j1:j2])))
    return segments
