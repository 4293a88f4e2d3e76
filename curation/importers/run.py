"""The import entry point: the parser registry (one module per format), the optional
short-sentence filter, and ``run_import``, which parses a file or folder and writes it in one
transaction (a bad file leaves the database unchanged)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db import transaction

from alignment_engine.text import count_tokens
from curation.importers import alignment_tsv, deplain, jsonl_pairs, leveled_text
from curation.importers.types import ImportFailed, ImportOptions, ImportSummary, ParsedAlignment, ParsedArticle
from curation.importers.writer import write_import


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


PARSERS: dict[str, Parser] = {
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
    if options.format not in FORMATS:
        raise ImportFailed(path, None, f"unknown format {options.format!r} (choose from {', '.join(FORMATS)})")
    path = Path(path)
    if not path.exists():
        raise ImportFailed(path, None, "no such file or folder")
    articles, alignments = PARSERS[options.format](path, options)
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
