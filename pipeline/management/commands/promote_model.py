"""Promote a model version: it becomes the default aligner of its language (pre-population, corpus alignment)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from pipeline.models import ModelVersion
from pipeline.services import registry


class Command(BaseCommand):
    help = "Make a trained model version the promoted (default) model of its language."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("version", help="model version id or exact name")
        parser.add_argument("--force", action="store_true",
                            help="promote even without test metrics (an empty test split)")

    def handle(self, *args: Any, **opts: Any) -> None:
        key = opts["version"]
        qs = ModelVersion.objects.filter(pk=int(key)) if key.isdigit() else ModelVersion.objects.filter(name=key)
        version = qs.first()
        if version is None:
            raise CommandError(f"no model version {key!r} (see the Models page or the admin)")
        try:
            registry.promote(version, force=opts["force"])
        except registry.PromotionRefused as exc:
            hint = "" if not version.path else " (use --force to promote it anyway)"
            raise CommandError(f"{exc}{hint}") from None
        self.stdout.write(self.style.SUCCESS(f"{version.name} (#{version.pk}) is now the promoted {version.language} model"))
