"""Alignment TSV in the Wiki-Manual layout, as gold or as training labels.

``label <TAB> simple_id <TAB> complex_id <TAB> simple_sentence <TAB> complex_sentence [<TAB> score]``
The document pairs must already be in the corpus (import their documents first).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from curation.importers.reading import read_utf8_lines
from curation.importers.types import ImportFailed, ImportOptions, ParsedAlignment, ParsedArticle

LABELS = {
    "aligned": "aligned",
    "partialAligned": "partialAligned",
    "notAligned": "notAligned",
    "identical": "aligned",  # DEplain gold: copied sentences are aligned pairs
}


def parse(path: Path, options: ImportOptions) -> tuple[list[ParsedArticle], list[ParsedAlignment]]:
    return [], list(iter_rows(path))


def iter_rows(path: Path) -> Iterator[ParsedAlignment]:
    """The rows of one TSV file, one line at a time."""
    if path.is_dir():
        raise ImportFailed(path, None, "expected a .tsv file, got a folder")
    for number, line in read_utf8_lines(path):
        if not line.strip():
            continue
        if number == 1 and line.startswith("label\t"):
            continue
        cells = line.split("\t")
        if len(cells) not in (5, 6):
            raise ImportFailed(
                path, number, f"expected 5 or 6 tab-separated columns (label, simple_id, complex_id, simple, complex[, score]), got {len(cells)}"
            )
        label = cells[0].strip()
        if label not in LABELS:
            raise ImportFailed(path, number, f"unknown label {label[:40]!r} (aligned, partialAligned, notAligned, identical)")
        score = None
        if len(cells) == 6 and cells[5].strip():
            try:
                score = float(cells[5])
            except ValueError:
                raise ImportFailed(path, number, f"score {cells[5][:40]!r} is not a number") from None
            if not math.isfinite(score):
                raise ImportFailed(path, number, f"score {cells[5].strip()!r} is not a finite number")
        yield ParsedAlignment(
            source=str(path),
            line=number,
            label=LABELS[label],
            simple_id=cells[1].strip(),
            complex_id=cells[2].strip(),
            score=score,
            source_label=label,
        )
