"""Remove the staging folders that killed exports left under EXPORTS_DIR (also done at the start
of every export)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from pipeline.exports.run import remove_orphan_staging


class Command(BaseCommand):
    help = "Remove .staging-* folders of exports that are no longer running."

    def handle(self, *args: Any, **opts: Any) -> None:
        removed = remove_orphan_staging()
        for folder in removed:
            self.stdout.write(f"removed {folder}")
        self.stdout.write(f"{len(removed)} staging folder(s) removed")
