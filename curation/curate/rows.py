"""The plain row that flows from the database through curation into the writers."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any

# Column order of JSONL / Parquet rows (TSV uses the six formats.md columns).
COLUMNS = [
    "label",
    "simple_id",
    "complex_id",
    "simple",
    "complex",
    "score",
    "pair_id",
    "article",
    "complex_level",
    "simple_level",
    "split",
    "phenomenon",
    "group_shape",
    "split_category",
    "synthetic",
]


@dataclass(slots=True)
class Row:
    label: str
    simple_id: str
    complex_id: str
    simple: str
    complex: str
    score: float | None = None
    pair_id: str = ""
    article: str = ""
    complex_level: int | None = None
    simple_level: int | None = None
    split: str = ""
    phenomenon: str = ""
    group_shape: str = ""
    split_category: str | None = None
    synthetic: bool = False
    source: str = ""  # Manual exports: verified | reference | derived
    group: int = -1  # index of the aligned group inside the document pair (not exported)
    extra: dict[str, Any] | None = None  # filter scores (GLEU, Flesch gain, BERTScore), not exported

    def as_dict(self) -> dict[str, Any]:
        return dict(zip(COLUMNS, _values(self), strict=True))

    def note(self, key: str, value: Any) -> None:
        if self.extra is None:
            self.extra = {}
        self.extra[key] = value


_values = attrgetter(*COLUMNS)
