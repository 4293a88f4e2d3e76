"""python manage.py import_corpus PATH --format jsonl|text|tsv|deplain --corpus NAME --language en|de"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from curation.importers.run import FORMATS, run_import
from curation.importers.types import ImportFailed, ImportOptions
from curation.models import Corpus


class Command(BaseCommand):
    help = "Import a corpus file or folder in one transaction (nothing is written if any part is bad)."
    # The system checks load every URL module (scipy through the evaluation views): 15 s of a
    # loaded machine before the first line is read; an import needs none of them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")
        parser.add_argument("--format", required=True, choices=sorted(FORMATS))
        parser.add_argument("--corpus", required=True, help="corpus name (created if missing)")
        parser.add_argument("--language", default="en", help="ISO 639-1 code (default en)")
        parser.add_argument("--kind", default=Corpus.Kind.NEWS, choices=Corpus.Kind.values)
        parser.add_argument("--all-levels", action="store_true", help="pair every two levels, not only adjacent ones")
        parser.add_argument("--replace", action="store_true", help="overwrite articles whose text changed")
        parser.add_argument("--drop-short", action="store_true", help="drop sentences under 4 tokens or ending in ':'")
        parser.add_argument("--role", default="gold", choices=["gold", "labels"], help="for tsv: gold standard or labels")
        parser.add_argument("--exclude", action="append", default=[], help="glob of relative paths to skip (repeatable)")

    def handle(self, *args: Any, **options: Any) -> None:
        opts = ImportOptions(
            corpus=options["corpus"],
            format=options["format"],
            language=options["language"],
            kind=options["kind"],
            all_levels=options["all_levels"],
            replace=options["replace"],
            drop_short=options["drop_short"],
            role=options["role"],
            exclude=options["exclude"],
        )
        try:
            summary = run_import(options["path"], opts)
        except ImportFailed as exc:
            raise CommandError(f"import failed, nothing was written: {exc}") from None
        self.stdout.write(self.style.SUCCESS(summary.describe()))
