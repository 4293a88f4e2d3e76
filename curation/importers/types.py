"""What the parsers produce (plain data), the error they raise, and an import's options and summary.

A leaf: it imports nothing of the importers, so every parser, the writer and ``run`` can use it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ImportFailed(Exception):
    """A problem in an input file. ``str()`` reads ``file:line: problem``."""

    def __init__(self, path: str | Path, line: int | None, problem: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")

    def __reduce__(self) -> tuple[type[ImportFailed], tuple[str, int | None, str]]:
        return (ImportFailed, (self.path, self.line, self.problem))


@dataclass
class ParsedDocument:
    level: int  # 0 = most complex (original)
    level_label: str
    paragraphs: list[list[str]]
    title: str = ""
    source_ids: list[list[str]] | None = None  # parallel to paragraphs, where the file has ids


@dataclass
class ParsedArticle:
    slug: str
    title: str
    source: str
    documents: list[ParsedDocument]
    # Explicit document pairs (complex level, simple level, pair_id); None = derive them.
    pairs: list[tuple[int, int, str]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    # sha256 of the raw bytes it was parsed from (with the options that shape parsing), where
    # the parser knows them: an article whose raw hash is stored already is skipped unparsed.
    raw_hash: str = ""

    def content_hash(self) -> str:
        payload: list[Any] = [
            (d.level, d.level_label, d.title, d.paragraphs) for d in sorted(self.documents, key=lambda d: d.level)
        ]
        if self.pairs is not None and len(self.pairs) > 1:  # a grouped JSONL article: its pairs are content too
            payload.append(sorted(self.pairs))
        return hashlib.sha256(json.dumps([self.title, payload], ensure_ascii=False).encode()).hexdigest()


@dataclass
class Expected:
    """Yielded first by a parser that knows how many articles or rows will follow (progress bars)."""

    count: int


@dataclass
class UnchangedArticle:
    """An article a parser recognised by its raw hash without parsing it (counted as unchanged)."""

    slug: str
    raw_hash: str
    source: str


@dataclass
class ParsedAlignment:
    source: str
    line: int
    label: str  # aligned | partialAligned | notAligned
    simple_id: str
    complex_id: str
    score: float | None = None
    source_label: str = ""


@dataclass
class ImportOptions:
    corpus: str
    format: str
    language: str = "en"
    kind: str = "news"
    all_levels: bool = False
    replace: bool = False
    drop_short: bool = False  # the paper's Wikipedia preprocessing
    role: str = "gold"  # for alignment files: gold | labels
    exclude: Sequence[str] = ()


@dataclass
class ImportSummary:
    corpus: str
    format: str
    source: str
    articles_created: int = 0
    articles_unchanged: int = 0
    articles_replaced: int = 0
    documents: int = 0
    paragraphs: int = 0
    sentences: int = 0
    pairs: int = 0
    alignments_created: int = 0
    alignments_updated: int = 0
    alignments_unchanged: int = 0
    sentences_dropped: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def describe(self) -> str:
        parts = [
            f"{self.articles_created} articles created",
            f"{self.articles_unchanged} unchanged",
        ]
        if self.articles_replaced:
            parts.append(f"{self.articles_replaced} replaced")
        parts += [f"{self.documents} documents", f"{self.sentences} sentences", f"{self.pairs} document pairs"]
        if self.alignments_created or self.alignments_updated or self.alignments_unchanged:
            parts.append(
                f"{self.alignments_created} alignments created, {self.alignments_updated} updated, "
                f"{self.alignments_unchanged} unchanged"
            )
        if self.sentences_dropped:
            parts.append(f"{self.sentences_dropped} short/colon sentences dropped")
        return f"{self.source} -> corpus {self.corpus!r}: " + ", ".join(parts)
