"""Load the project's own small demo corpus (demo/corpus). Safe to run again: nothing changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from curation.importers.run import run_import
from curation.importers.types import ImportOptions

DEMO_DIR = Path(settings.BASE_DIR) / "demo" / "corpus"
DEMO_CORPUS = "Demo (English news)"


class Command(BaseCommand):
    help = "Import the bundled demo corpus (English, three reading levels)."

    def handle(self, *args: Any, **options: Any) -> None:
        summary = run_import(DEMO_DIR, ImportOptions(corpus=DEMO_CORPUS, format="text", language="en"))
        self.stdout.write(summary.describe().replace(str(DEMO_DIR), "demo/corpus"))
