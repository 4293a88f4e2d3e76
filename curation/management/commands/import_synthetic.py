"""Import synthetic (machine-made) pairs for a corpus; an export can mix them in at a ratio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from curation.importers.synthetic import import_synthetic
from curation.importers.types import ImportFailed
from curation.management.commands._corpus import get_corpus


class Command(BaseCommand):
    help = "Import synthetic pairs (JSONL with complex/simple keys, or TSV complex<TAB>simple)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("corpus", help="corpus name or id")
        parser.add_argument("file", type=Path)
        parser.add_argument("--batch", default="", help="batch / generator name (default: the file name)")

    def handle(self, *args: Any, **opts: Any) -> None:
        corpus = get_corpus(opts["corpus"])
        try:
            summary = import_synthetic(corpus, opts["file"], opts["batch"] or opts["file"].name)
        except (ImportFailed, OSError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(
            f"read {summary.read}, created {summary.created}, already present {summary.skipped_existing}"
        ))
