"""Where study items can come from besides an uploaded file: a registry that a higher floor
fills. The ``pipeline`` app owns exported datasets and registers, in its ``AppConfig.ready()``,
how to list them and where an export's files are (``pipeline/evaluation_sources.py``); the
evaluation services only ever receive the export's folder as plain input
(``importers.items_from_export(folder)``), so annotation never imports the pipeline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ExportNotFound(Exception):
    pass


@dataclass(frozen=True)
class ExportSource:
    choices: Callable[[], list[tuple[int, str]]]  # [(export id, label)], newest first
    folder: Callable[[int], tuple[Path, dict[str, Any]]]  # export id -> (folder, source info); ExportNotFound


_registered: list[ExportSource] = []


def register(source: ExportSource) -> None:
    """Set the export source (registering again replaces it)."""
    _registered[:] = [source]


def export_choices() -> list[tuple[int, str]]:
    return _registered[0].choices() if _registered else []


def export_folder(export_id: int) -> tuple[Path, dict[str, Any]]:
    if not _registered:
        raise ExportNotFound("no export source is installed (the pipeline app registers one)")
    return _registered[0].folder(export_id)
