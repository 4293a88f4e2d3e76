"""Export parameters: what a user may ask of an export, checked before any job row exists."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from curation.curate.splits import parse_ratios
from curation.models import AlignmentLabel
from pipeline.exports.writers import EXTENSIONS

CHUNK = 5000  # rows fetched per database round trip
ALIGNED_LABELS = [AlignmentLabel.ALIGNED.value, AlignmentLabel.PARTIAL.value]


class ExportError(Exception):
    """The export cannot run with these parameters (shown to the user)."""


@dataclass
class Params:
    format: str = "tsv"
    splits: dict[str, float] | None = None
    seed: int = 0
    filters: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    labels: list[str] | None = None
    synthetic_ratio: float = 0.0
    include_reference: bool = True
    derive: bool = True
    min_words: int = 10
    max_words: int = 40
    chunk_size: int = CHUNK
    batch_size: int = 50_000

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Params:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise ExportError(f"unknown export parameter(s): {', '.join(sorted(unknown))}")
        params = cls(**data)
        if params.format not in EXTENSIONS:
            raise ExportError(f"unknown format {params.format!r}")
        if "splits" in data and data["splits"] is None:
            params.splits = None
        else:
            params.splits = parse_ratios(data.get("splits"))
        if params.synthetic_ratio < 0:
            raise ExportError("synthetic_ratio must be >= 0")
        return params
