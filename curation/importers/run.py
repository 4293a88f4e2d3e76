"""The import entry point: the parser registry (one module per format), the optional
short-sentence filter, and ``run_import``, which streams what a parser yields into the writer
in batches inside one transaction (a bad file leaves the database unchanged).

Every parser is ``records(path, options, known)``: an iterator of parsed articles, articles
recognised as unchanged by their raw hash (``known`` maps the corpus's slugs to the raw hashes
stored at their last import), and alignment rows. Memory stays bounded by one batch (plus what
a format must keep to group its lines)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from django.db import transaction

from alignment_engine.text import count_tokens
from curation.importers import alignment_tsv, deplain, jsonl_pairs, leveled_text
from curation.importers.types import (
    Expected,
    ImportFailed,
    ImportOptions,
    ImportSummary,
    ParsedAlignment,
    ParsedArticle,
    UnchangedArticle,
)
from curation.importers.writer import ImportWriter, check_options
from curation.models import Article

ARTICLE_BATCH = 500
ALIGNMENT_BATCH = 20000

Record = ParsedArticle | UnchangedArticle | ParsedAlignment | Expected
Progress = Callable[[int, int], None]


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


Parser = Callable[[Path, ImportOptions, Mapping[str, str]], Iterator[Record]]


def _jsonl(path: Path, options: ImportOptions, known: Mapping[str, str]) -> Iterator[Record]:
    yield from jsonl_pairs.records(path, options)


def _tsv(path: Path, options: ImportOptions, known: Mapping[str, str]) -> Iterator[Record]:
    yield from alignment_tsv.iter_rows(path)


def _deplain(path: Path, options: ImportOptions, known: Mapping[str, str]) -> Iterator[Record]:
    for article, rows in deplain.iter_plans(path, options):
        yield article
        yield from rows


PARSERS: dict[str, Parser] = {
    "jsonl": _jsonl,
    "text": leveled_text.records,
    "tsv": _tsv,
    "deplain": _deplain,
}


FORMATS = {
    "jsonl": "document-pair JSONL",
    "text": "leveled plain-text articles (Newsela / OneStopEnglish file names)",
    "tsv": "alignment TSV (Wiki-Manual layout), as gold or labels",
    "deplain": "DEplain simplification-plan CSV files",
}


def shown(exc: ImportFailed, root: Path | None) -> ImportFailed:
    """The error with its path relative to ``root`` (an upload's folder is never shown)."""
    if root is None:
        return exc
    where = exc.path
    prefix = str(root)
    if where == prefix or where.startswith(prefix + "/"):
        where = where[len(prefix) + 1 :] or root.name
    return ImportFailed(where, exc.line, exc.problem.replace(prefix + "/", ""))


def run_import(
    path: str | Path,
    options: ImportOptions,
    user: Any = None,
    *,
    progress: Progress | None = None,
    display_root: Path | None = None,
    source: str | None = None,
) -> ImportSummary:
    """Parse ``path`` and write it in one transaction. Raises ImportFailed; writes nothing then.

    ``progress(done, total)`` hears the records written; ``display_root``: errors name files
    relative to it; ``source`` is what the ImportRecord names (default: the path)."""
    try:
        return _run(Path(path), options, user, progress, source)
    except ImportFailed as exc:
        raise shown(exc, display_root) from None


def _run(path: Path, options: ImportOptions, user: Any, progress: Progress | None, source: str | None) -> ImportSummary:
    if options.format not in FORMATS:
        raise ImportFailed(path, None, f"unknown format {options.format!r} (choose from {', '.join(FORMATS)})")
    if not path.exists():
        raise ImportFailed(path, None, "no such file or folder")
    if options.drop_short and options.format == "deplain":
        raise ImportFailed(path, None, "--drop-short cannot be used with DEplain plans (it would renumber the gold sentence ids)")
    check_options(path, options)  # before the first query that uses the corpus name
    known = dict(Article.objects.filter(corpus__name=options.corpus).exclude(raw_hash="").values_list("slug", "raw_hash"))
    dropped = 0
    with transaction.atomic():
        writer = ImportWriter(path, options, user, source=source)
        articles: list[ParsedArticle | UnchangedArticle] = []
        rows: list[ParsedAlignment] = []
        written = 0
        total = 0

        def count_written(n: int) -> None:
            nonlocal written
            written += n
            if progress is not None:
                progress(written, max(total, written))

        def flush_articles() -> None:
            if articles:
                writer.articles(articles)
                count_written(len(articles))
                articles.clear()

        def flush_rows() -> None:
            flush_articles()  # alignments refer to the pairs of the articles before them
            if rows:
                writer.alignments(rows)
                count_written(len(rows))
                rows.clear()

        for record in PARSERS[options.format](path, options, known):
            if isinstance(record, Expected):
                total = record.count
                if progress is not None:
                    progress(0, total)
                continue
            if isinstance(record, ParsedAlignment):
                rows.append(record)
                if len(rows) >= ALIGNMENT_BATCH:
                    flush_rows()
                continue
            if isinstance(record, ParsedArticle) and options.drop_short:
                dropped += drop_short_sentences(record)
            articles.append(record)
            if len(articles) >= ARTICLE_BATCH:
                flush_articles()
        flush_rows()
        if writer.records == 0:
            raise ImportFailed(path, None, "nothing to import (empty file or no matching files)")
        writer.summary.sentences_dropped = dropped
        summary = writer.finish()
    return summary
