"""Filters of the Auto datasets, each with its published default and a removed-pair count.

Filters run in a fixed order on the rows of one document pair at a time (so an export
streams), and each counts the rows it removed among the rows still present:

==================  =======================================================  ===========================
name                rule (kept when ...)                                     default / source
==================  =======================================================  ===========================
``identical``       simple and complex text differ                           on (Newsela-Auto, Wiki-Auto)
``adjacent_levels`` the levels are NOT adjacent (0-1, 1-2, 2-3 removed)      Newsela-Auto
``test_set``        the complex sentence is not in a given test set file     e.g. the Turk corpus
``gleu``            ``min <= GLEU(simple, complex) <= max``                  0.1 / 0.9 (Wiki-Auto)
``flesch``          FRE(simple) - FRE(complex) >= ``min_gain``               10 points
``bisect``          1-2 / 2-1 group, overlap >= 0.25, a verb in every        BiSECT (Kim et al. 2021)
                    sentence, BERTScore F1 >= 0.4; split category attached
==================  =======================================================  ===========================
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, partial
from itertools import chain
from pathlib import Path
from typing import Any, Generic, TypeVar

from alignment_engine.ids import SentenceId
from alignment_engine.text import words
from curation.curate.gleu import gleu_scores
from curation.curate.readability import flesch_scores
from curation.curate.rows import Row
from curation.curate.text import normalise_space
from curation.curate.verbs import has_verb

DEFAULTS: dict[str, dict[str, Any]] = {
    "identical": {},
    "adjacent_levels": {},
    "test_set": {"path": ""},
    "gleu": {"min": 0.1, "max": 0.9},
    "flesch": {"min_gain": 10.0},
    "bisect": {"min_overlap": 0.25, "min_bertscore": 0.4, "require_verb": True},
}
ORDER = list(DEFAULTS)
DESCRIPTIONS = {
    "identical": "drop pairs whose two sentences are identical",
    "adjacent_levels": "drop pairs between adjacent reading levels (0-1, 1-2, 2-3), as Newsela-Auto",
    "test_set": "drop pairs whose complex sentence appears in a test set file",
    "gleu": "keep pairs with GLEU between min and max, as Wiki-Auto",
    "flesch": "keep pairs whose simple side is at least min_gain Flesch reading-ease points easier",
    "bisect": "BiSECT split-and-rephrase: 1-2/2-1 groups, lexical overlap, a verb in every sentence, BERTScore",
}


C = TypeVar("C")


def normalise(text: str) -> str:
    """Lower case, whitespace runs as single spaces (``" ".join(text.lower().split())``)."""
    return normalise_space(text.lower())


@dataclass
class Filter:
    name: str
    params: dict[str, Any]
    removed: int = 0
    seen: int = 0

    def apply(self, rows: list[Row], language: str = "en") -> list[Row]:
        raise NotImplementedError

    def report(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": self.params,
            "defaults": DEFAULTS[self.name],
            "description": DESCRIPTIONS[self.name],
            "seen": self.seen,
            "removed": self.removed,
        }


@dataclass
class RowFilter(Filter):
    keep: Callable[[Row], bool] = field(default=lambda row: True)

    def apply(self, rows: list[Row], language: str = "en") -> list[Row]:
        kept = [row for row in rows if self.keep(row)]
        self.seen += len(rows)
        self.removed += len(rows) - len(kept)
        return kept


def _keep_not_identical(row: Row) -> bool:
    return normalise(row.simple) != normalise(row.complex)


def _keep_not_adjacent(row: Row) -> bool:
    if row.complex_level is None or row.simple_level is None:
        return True
    return row.simple_level - row.complex_level != 1


def load_test_set(path: str | Path) -> frozenset[str]:
    """Complex sentences of a test set: a text file with one sentence per line, or an alignment
    TSV (the complex sentence is column 5), normalised (lower case, single spaces)."""
    sentences: set[str] = set()
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if not line or line.startswith("label\t"):
                continue
            cells = line.split("\t")
            sentences.add(normalise(cells[4] if len(cells) >= 5 else cells[0]))
    return frozenset(sentences)


def _make_test_set_keep(sentences: frozenset[str]) -> Callable[[Row], bool]:
    def keep(row: Row) -> bool:
        return normalise(row.complex) not in sentences

    return keep


@dataclass
class ScoreFilter(Filter):
    """Rows kept by a threshold on a score computed for all rows of one document pair in one call
    (GLEU and Flesch run vectorised over the pair's sentences); the score is noted on every row
    under ``key``."""

    score: Callable[[list[Row]], list[float]] = field(default=lambda rows: [0.0] * len(rows))
    low: float = -math.inf  # kept when low <= score <= high
    high: float = math.inf
    key: str = ""

    def apply(self, rows: list[Row], language: str = "en") -> list[Row]:
        kept = []
        low, high, key = self.low, self.high, self.key
        for row, value in zip(rows, self.score(rows), strict=True):
            if row.extra is None:
                row.extra = {key: value}
            else:
                row.extra[key] = value
            if low <= value <= high:
                kept.append(row)
        self.seen += len(rows)
        self.removed += len(rows) - len(kept)
        return kept


def gleu_of_rows(rows: list[Row]) -> list[float]:
    """GLEU(simple, complex) of each row (:func:`curation.curate.gleu.gleu_scores`)."""
    return gleu_scores([(row.simple, row.complex) for row in rows])


def flesch_gains(rows: list[Row], language: str = "en") -> list[float]:
    """FRE(simple) - FRE(complex) of each row, each distinct sentence scored once."""
    texts = list(dict.fromkeys(chain.from_iterable((row.simple, row.complex) for row in rows)))
    ease = dict(zip(texts, flesch_scores(texts, language), strict=True))
    return [ease[row.simple] - ease[row.complex] for row in rows]


@lru_cache(maxsize=8192)
def _word_set(text: str) -> frozenset[str]:
    return frozenset(words(text))


def lexical_overlap(long: str, parts: Iterable[str]) -> float:
    """Jaccard overlap of the lower-cased word sets of the long sentence and of the split parts
    (each sentence's word set computed once, cached)."""
    a = _word_set(long)
    b: set[str] = set()
    for part in parts:
        b.update(_word_set(part))
    union = a | b
    return len(a & b) / len(union) if union else 0.0


@lru_cache(maxsize=4096)  # a token diff costs ~0.4 ms; a group recurs across an article's level pairs
def split_category(long: str, first: str, second: str, window: int = 3, max_edits: int = 3) -> str:
    """BiSECT's three categories by a token diff of the long sentence against the two parts joined.

    - ``direct_insertion``: every change lies within ``window`` tokens of the split point and at
      most ``max_edits`` tokens change (a full stop, a capital, a repeated subject ...);
    - ``changes_near_split``: every change lies near the split point, but more tokens change;
    - ``changes_across_sentences``: some change lies away from the split point.
    """
    a = [t.lower() for t in long.split()]
    first_tokens = [t.lower() for t in first.split()]
    b = first_tokens + [t.lower() for t in second.split()]
    split_at = len(first_tokens)
    edits = 0
    near = True
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        edits += max(i2 - i1, j2 - j1)
        if j1 > split_at + window or j2 < split_at - window:
            near = False
    if not near:
        return "changes_across_sentences"
    return "direct_insertion" if edits <= max_edits else "changes_near_split"


@dataclass
class PendingBisect:
    """The rows of one document pair after BiSECT's cheap checks, waiting for BERTScore."""

    rows: list[Row]
    candidates: list[tuple[list[Row], str, str, str]]  # (members in order, long, first, second)


@dataclass
class BisectFilter(Filter):
    scorer: Callable[[list[str], list[str]], list[float]] | None = None
    removed_by: dict[str, int] = field(default_factory=lambda: {"shape": 0, "overlap": 0, "verb": 0, "bertscore": 0})

    def _score(self, candidates: list[str], references: list[str]) -> list[float]:
        if self.scorer is None:
            from curation.curate.bertscore import bertscore_f1

            self.scorer = bertscore_f1
        return self.scorer(candidates, references)

    def apply(self, rows: list[Row], language: str = "en") -> list[Row]:
        pending = self.prepare(rows, language)
        return self.finish(pending, self.score(pending))

    def score(self, pending: PendingBisect) -> list[float]:
        if not pending.candidates:
            return []
        return self._score([f"{c[2]} {c[3]}" for c in pending.candidates], [c[1] for c in pending.candidates])

    def prepare(self, rows: list[Row], language: str = "en") -> PendingBisect:
        """The cheap checks (shape, overlap, verbs); the groups left wait for their BERTScore."""
        self.seen += len(rows)
        groups: dict[int, list[Row]] = {}
        for row in rows:
            groups.setdefault(row.group, []).append(row)
        candidates: list[tuple[list[Row], str, str, str]] = []
        for members in groups.values():
            shape = members[0].group_shape
            if shape not in ("1-2", "2-1") or len(members) != 2:
                self.removed_by["shape"] += len(members)
                continue
            if shape == "1-2":
                ordered = sorted(members, key=lambda r: _position(r.simple_id))
                long, first, second = ordered[0].complex, ordered[0].simple, ordered[1].simple
            else:
                ordered = sorted(members, key=lambda r: _position(r.complex_id))
                long, first, second = ordered[0].simple, ordered[0].complex, ordered[1].complex
            if lexical_overlap(long, (first, second)) < self.params["min_overlap"]:
                self.removed_by["overlap"] += 2
                continue
            if self.params.get("require_verb", True) and not all(has_verb(t, language) for t in (long, first, second)):
                self.removed_by["verb"] += 2
                continue
            candidates.append((ordered, long, first, second))
        return PendingBisect(rows, candidates)

    def finish(self, pending: PendingBisect, scores: list[float]) -> list[Row]:
        """The rows of ``pending`` whose groups reach ``min_bertscore`` (``scores``: one per candidate)."""
        kept: list[Row] = []
        for (members, long, first, second), score in zip(pending.candidates, scores, strict=True):
            if score < self.params["min_bertscore"]:
                self.removed_by["bertscore"] += 2
                continue
            category = split_category(long, first, second)
            for row in members:
                row.split_category = category
                row.note("bertscore", score)
            kept.extend(members)
        kept_ids = {id(r) for r in kept}
        result = [row for row in pending.rows if id(row) in kept_ids]
        self.removed += len(pending.rows) - len(result)
        return result

    def report(self) -> dict[str, Any]:
        data = super().report()
        data["removed_by"] = dict(self.removed_by)
        return data


def _position(sid: str) -> tuple[int, int]:
    try:
        return SentenceId.parse(sid).position
    except ValueError:
        return (0, 0)


def build_filters(
    config: Mapping[str, Mapping[str, Any] | None],
    scorer: Callable[[list[str], list[str]], list[float]] | None = None,
    language: str = "en",
) -> list[Filter]:
    """Filters named in ``config`` (name -> overrides of the defaults, or None to skip), in the fixed order."""
    unknown = set(config) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown filter(s): {', '.join(sorted(unknown))}; known: {', '.join(ORDER)}")
    filters: list[Filter] = []
    for name in ORDER:
        if name not in config or config[name] is None:
            continue
        params = {**DEFAULTS[name], **dict(config[name] or {})}
        if name == "identical":
            filters.append(RowFilter(name, params, keep=_keep_not_identical))
        elif name == "adjacent_levels":
            filters.append(RowFilter(name, params, keep=_keep_not_adjacent))
        elif name == "test_set":
            if not params.get("path"):
                raise ValueError("the test_set filter needs a path")
            test_sentences = load_test_set(params["path"])
            params = {**params, "sentences": len(test_sentences)}
            filters.append(RowFilter(name, params, keep=_make_test_set_keep(test_sentences)))
        elif name == "gleu":
            filters.append(ScoreFilter(name, params, score=gleu_of_rows, low=float(params["min"]), high=float(params["max"]), key="gleu"))
        elif name == "flesch":
            flesch = partial(flesch_gains, language=language)
            filters.append(ScoreFilter(name, params, score=flesch, low=float(params["min_gain"]), key="flesch_gain"))
        elif name == "bisect":
            filters.append(BisectFilter(name, params, scorer=scorer))
    return filters


def apply_filters(filters: list[Filter], rows: list[Row], language: str = "en") -> list[Row]:
    for flt in filters:
        if not rows:
            break
        rows = flt.apply(rows, language)
    return rows


class FilterStream(Generic[C]):
    """The filters over document pairs pushed one at a time, with BiSECT's BERTScore batched
    across pairs: a pair whose groups wait for BERTScore is held back (with every pair pushed
    after it, so rows come out in the order pushed) until ``max_candidates`` groups or
    ``max_rows`` rows wait, then all waiting groups are scored in one call and the pairs come
    out. The result is exactly that of ``apply_filters`` per pair; the encoder then sees
    hundreds of sentences per call instead of a few, and memory stays bounded by the limits.

    ``push`` and ``close`` return ``(context, kept rows)`` for each pair released, in order.
    """

    def __init__(
        self, filters: list[Filter], language: str = "en", max_candidates: int = 512, max_rows: int = 20_000
    ) -> None:
        self.language = language
        self.max_candidates = max_candidates
        self.max_rows = max_rows
        last = filters[-1] if filters else None
        self.bisect = last if isinstance(last, BisectFilter) else None
        self.before = filters[:-1] if self.bisect is not None else list(filters)
        self._held: list[tuple[C, PendingBisect | None, list[Row]]] = []
        self._held_candidates = 0
        self._held_rows = 0

    def push(self, rows: list[Row], context: C) -> list[tuple[C, list[Row]]]:
        rows = apply_filters(self.before, rows, self.language)
        if self.bisect is None or not rows:
            if not self._held:
                return [(context, rows)]
            self._held.append((context, None, rows))
            return []
        pending = self.bisect.prepare(rows, self.language)
        if not pending.candidates and not self._held:
            return [(context, self.bisect.finish(pending, []))]
        self._held.append((context, pending, rows))
        self._held_candidates += len(pending.candidates)
        self._held_rows += len(rows)
        if self._held_candidates >= self.max_candidates or self._held_rows >= self.max_rows:
            return self._release()
        return []

    def close(self) -> list[tuple[C, list[Row]]]:
        return self._release()

    def _release(self) -> list[tuple[C, list[Row]]]:
        held, self._held, self._held_candidates, self._held_rows = self._held, [], 0, 0
        if self.bisect is None:
            return [(context, rows) for context, _, rows in held]
        bisect = self.bisect
        waiting = [p for _, p, _ in held if p is not None]
        scores = bisect.score(PendingBisect([], [c for p in waiting for c in p.candidates]))
        out: list[tuple[C, list[Row]]] = []
        at = 0
        for context, pending, rows in held:
            if pending is None:
                out.append((context, rows))
                continue
            n = len(pending.candidates)
            out.append((context, bisect.finish(pending, scores[at : at + n])))
            at += n
        return out
