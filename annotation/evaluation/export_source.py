"""Glue between evaluation studies and the export registry: the only module of
``annotation.evaluation`` that reads ``ExportedDataset`` rows.

Studies take an export's folder as plain input (``importers.items_from_export(folder)``); this
module turns an export id into that folder. When the export models move to the ``pipeline``
app (which sits above annotation), move this module there with them and pass the folder down.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings


class ExportNotFound(Exception):
    pass


def export_choices(limit: int = 200) -> list[tuple[int, str]]:
    from curation.models import ExportedDataset

    qs = ExportedDataset.objects.select_related("corpus").exclude(path="").order_by("-created_at")[:limit]
    return [(e.pk, f"#{e.pk} {e.corpus.name} · {e.get_kind_display()} · {e.created_at:%Y-%m-%d}") for e in qs]


def export_folder(export_id: int) -> tuple[Path, dict[str, Any]]:
    """``(folder of the export's files, source info for the study card)``."""
    from curation.models import ExportedDataset

    export = ExportedDataset.objects.select_related("corpus").filter(pk=export_id).first()
    if export is None or not export.path:
        raise ExportNotFound(f"export #{export_id} does not exist or has no files yet")
    folder = Path(settings.EXPORTS_DIR) / export.path
    info = {"export": export.pk, "corpus": export.corpus.name, "kind": export.kind, "export_path": export.path,
            "export_files": [f.get("name") for f in export.files]}
    return folder, info
