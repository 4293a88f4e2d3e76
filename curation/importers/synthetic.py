"""Import machine-made pairs (back-translation and the like) as SyntheticPair rows.

Input: JSONL (``{"complex": ..., "simple": ..., ...}``; other keys go to ``meta``) or TSV
(``complex<TAB>simple`` per line, an optional ``complex\\tsimple`` header). The rows stay
apart from the corpus and are marked ``synthetic`` wherever an export mixes them in.
Re-importing the same pairs is a no-op (unique on corpus, complex text, simple text).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction

from alignment_engine.text import clean_cell
from curation.importers.types import ImportFailed
from curation.models import Corpus, SyntheticPair

BATCH = 2000


@dataclass
class SyntheticSummary:
    read: int = 0
    created: int = 0
    skipped_existing: int = 0


def read_synthetic(path: str | Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    path = Path(path)
    is_jsonl = path.suffix.lower() in (".jsonl", ".json")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            if is_jsonl:
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ImportFailed(path, number, f"invalid JSON: {exc.msg}") from exc
                if not isinstance(data, dict) or not isinstance(data.get("complex"), str) or not isinstance(data.get("simple"), str):
                    raise ImportFailed(path, number, 'expected an object with string "complex" and "simple"')
                meta = {k: v for k, v in data.items() if k not in ("complex", "simple")}
                complex_text, simple_text = data["complex"], data["simple"]
            else:
                cells = line.split("\t")
                if number == 1 and [c.strip().lower() for c in cells[:2]] == ["complex", "simple"]:
                    continue
                if len(cells) < 2:
                    raise ImportFailed(path, number, "expected complex<TAB>simple")
                complex_text, simple_text, meta = cells[0], cells[1], {}
            complex_text, simple_text = clean_cell(complex_text), clean_cell(simple_text)
            if not complex_text or not simple_text:
                raise ImportFailed(path, number, "empty sentence")
            yield complex_text, simple_text, meta


def import_synthetic(corpus: Corpus, path: str | Path, batch: str) -> SyntheticSummary:
    """Import all pairs of one file in one transaction (all or nothing)."""
    summary = SyntheticSummary()
    with transaction.atomic():
        before = SyntheticPair.objects.filter(corpus=corpus).count()
        pending: list[SyntheticPair] = []
        for complex_text, simple_text, meta in read_synthetic(path):
            summary.read += 1
            pending.append(SyntheticPair(corpus=corpus, complex_text=complex_text, simple_text=simple_text,
                                         batch=batch, meta=meta))
            if len(pending) >= BATCH:
                SyntheticPair.objects.bulk_create(pending, ignore_conflicts=True)
                pending = []
        SyntheticPair.objects.bulk_create(pending, ignore_conflicts=True)
        summary.created = SyntheticPair.objects.filter(corpus=corpus).count() - before
        summary.skipped_existing = summary.read - summary.created
    return summary
