"""The one builder of test corpora: plain texts in, rows written by the importer's writer, so a
test corpus has the same pair ids (``<slug>.<complex level>_<simple level>``), token counts and
positions as an imported one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from curation.importers.types import ImportOptions, ParsedArticle, ParsedDocument
from curation.importers.writer import write_import
from curation.models import Corpus

Paragraphs = Sequence[Sequence[str]]  # a document: paragraphs of sentences


def build_corpus(
    name: str,
    articles: Mapping[str, Sequence[Paragraphs]],
    *,
    language: str = "en",
    kind: str = Corpus.Kind.NEWS,
    all_levels: bool = False,
) -> Corpus:
    """Write ``articles`` ({slug: [level 0 document, level 1 document, ...]}) into corpus ``name``
    (created if new). Documents get level labels "0", "1", ...; adjacent levels are paired, or
    every two levels with ``all_levels``."""
    parsed = [
        ParsedArticle(
            slug=slug, title=f"Article {slug}", source="test corpus",
            documents=[
                ParsedDocument(level=level, level_label=str(level), paragraphs=[list(p) for p in paragraphs])
                for level, paragraphs in enumerate(documents)
            ],
        )
        for slug, documents in articles.items()
    ]
    options = ImportOptions(corpus=name, format="test", language=language, kind=kind, all_levels=all_levels)
    write_import(Path("test corpus"), options, parsed, [])
    return Corpus.objects.get(name=name)
