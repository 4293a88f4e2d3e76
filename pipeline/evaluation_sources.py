"""Exported datasets as a source of human-evaluation items: the one place that turns an
``ExportedDataset`` row into the folder of its files for ``annotation.evaluation``
(registered in ``PipelineConfig.ready()``; see ``annotation/evaluation/sources.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from annotation.evaluation.sources import ExportNotFound, ExportSource
from pipeline.models import ExportedDataset


def export_choices(limit: int = 200) -> list[tuple[int, str]]:
    qs = ExportedDataset.objects.select_related("corpus").exclude(path="").order_by("-created_at")[:limit]
    return [(e.pk, f"#{e.pk} {e.corpus.name} · {e.get_kind_display()} · {e.created_at:%Y-%m-%d}") for e in qs]


def export_folder(export_id: int) -> tuple[Path, dict[str, Any]]:
    """``(folder of the export's files, source info for the study card)``."""
    export = ExportedDataset.objects.select_related("corpus").filter(pk=export_id).first()
    if export is None or not export.path:
        raise ExportNotFound(f"export #{export_id} does not exist or has no files yet")
    folder = Path(settings.EXPORTS_DIR) / export.path
    info = {"export": export.pk, "corpus": export.corpus.name, "kind": export.kind, "export_path": export.path,
            "export_files": [f.get("name") for f in export.files]}
    return folder, info


SOURCE = ExportSource(choices=export_choices, folder=export_folder)
