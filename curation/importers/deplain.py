"""DEplain simplification-plan CSV files (being written; see issue 2)."""

from __future__ import annotations

from pathlib import Path

from curation.importers.base import ImportFailed, ImportOptions, ParsedAlignment, ParsedArticle


def parse(path: Path, options: ImportOptions) -> tuple[list[ParsedArticle], list[ParsedAlignment]]:
    raise ImportFailed(path, None, "the DEplain importer is not written yet")
