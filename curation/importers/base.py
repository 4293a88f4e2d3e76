"""Plain data produced by the parsers, the error they raise, and the one writer."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from alignment_engine.text import count_tokens


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

    def content_hash(self) -> str:
        payload = [
            (d.level, d.level_label, d.title, d.paragraphs)
            for d in sorted(self.documents, key=lambda d: d.level)
        ]
        return hashlib.sha256(json.dumps([self.title, payload], ensure_ascii=False).encode()).hexdigest()


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


SLUG_BAD = re.compile(r"[^0-9A-Za-z_.]+")


def make_slug(name: str) -> str:
    """An opaque id without '-' or spaces, usable as a pair-id prefix."""
    slug = SLUG_BAD.sub("_", name.strip()).strip("_").lower()
    return slug or "article"


def keep_sentence(sentence: str) -> bool:
    """The paper's Wikipedia preprocessing: drop sentences under 4 tokens or ending in ':'."""
    return count_tokens(sentence) >= 4 and not sentence.rstrip().endswith(":")


def drop_short_sentences(article: ParsedArticle) -> int:
    dropped = 0
    for doc in article.documents:
        kept: list[list[str]] = []
        for para in doc.paragraphs:
            good = [s for s in para if keep_sentence(s)]
            dropped += len(para) - len(good)
            if good:
                kept.append(good)
        doc.paragraphs = kept
        doc.source_ids = None
    return dropped


Parser = Callable[[Path, ImportOptions], tuple[list[ParsedArticle], list[ParsedAlignment]]]


def _parsers() -> dict[str, Parser]:
    from curation.importers import alignment_tsv, deplain, jsonl_pairs, leveled_text

    return {
        "jsonl": jsonl_pairs.parse,
        "text": leveled_text.parse,
        "tsv": alignment_tsv.parse,
        "deplain": deplain.parse,
    }


FORMATS = {
    "jsonl": "document-pair JSONL",
    "text": "leveled plain-text articles (Newsela / OneStopEnglish file names)",
    "tsv": "alignment TSV (Wiki-Manual layout), as gold or labels",
    "deplain": "DEplain simplification-plan CSV files",
}


def run_import(path: str | Path, options: ImportOptions, user: Any = None) -> ImportSummary:
    """Parse ``path`` and write it in one transaction. Raises ImportFailed; writes nothing then."""
    from curation.importers.writer import write_import

    if options.format not in FORMATS:
        raise ImportFailed(path, None, f"unknown format {options.format!r} (choose from {', '.join(FORMATS)})")
    path = Path(path)
    if not path.exists():
        raise ImportFailed(path, None, "no such file or folder")
    articles, alignments = _parsers()[options.format](path, options)
    if not articles and not alignments:
        raise ImportFailed(path, None, "nothing to import (empty file or no matching files)")
    dropped = 0
    if options.drop_short:
        for article in articles:
            dropped += drop_short_sentences(article)
    with transaction.atomic():
        summary = write_import(path, options, articles, alignments, user)
    summary.sentences_dropped = dropped
    return summary


def read_text(path: Path) -> str:
    """Decode UTF-8 (a BOM is dropped), falling back to Windows-1252 for legacy files."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise ImportFailed(path, line, "neither UTF-8 nor Windows-1252 text") from None


def read_utf8_lines(path: Path) -> Iterable[tuple[int, str]]:
    """Lines of a strict UTF-8 file with their 1-based numbers; bad bytes name their line."""
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ImportFailed(path, number, f"not valid UTF-8 (byte {exc.start + 1} of the line)") from None
        yield number, line.rstrip("\r")
