"""Reading study inputs (plain Python, no Django): system outputs from TSV or JSONL, and items
from an export's test split. All-or-nothing: every problem is collected with ``file:line`` and
nothing is returned unless the whole file is good.

TSV: a header line naming ``item_id``, ``system``, ``output`` and optionally ``source`` and any
number of ``reference*`` columns; one line per (item, system). JSONL: one object per line,
either ``{"item_id", "source", "references" | "reference", "system", "output"}`` or
``{"item_id", "source", "references", "outputs": {system: output}}``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from alignment_engine.ids import SentenceId
from alignment_engine.text import clean_cell

MAX_TEXT = 5000
MAX_ERRORS = 30
REFERENCE_SYSTEM = "reference"


@dataclass
class ItemInput:
    key: str
    source: str
    references: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    line: int = 0  # where the item was first seen (for messages)


class InputError(Exception):
    """The input is refused as a whole; ``errors`` are ``file:line: message`` strings."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        more = f" (and {len(errors) - MAX_ERRORS} more)" if len(errors) > MAX_ERRORS else ""
        super().__init__("; ".join(errors[:MAX_ERRORS]) + more)


class _Collector:
    def __init__(self, name: str) -> None:
        self.name = name
        self.errors: list[str] = []
        self.items: dict[str, ItemInput] = {}
        self.seen: dict[tuple[str, str], int] = {}

    def error(self, line: int, message: str) -> None:
        self.errors.append(f"{self.name}:{line}: {message}")

    def text(self, line: int, value: object, what: str, required: bool = True) -> str | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                self.error(line, f"{what} is missing or empty")
            return None if required else ""
        if not isinstance(value, str):
            self.error(line, f"{what} must be a string, got {type(value).__name__}")
            return None
        cleaned = clean_cell(value)
        if len(cleaned) > MAX_TEXT:
            self.error(line, f"{what} has {len(cleaned)} characters (at most {MAX_TEXT})")
            return None
        return cleaned

    def add(self, line: int, key: str, source: str, references: list[str], system: str, output: str) -> None:
        where = self.seen.get((key, system))
        if where is not None:
            self.error(line, f"item {key!r} has a second output of system {system!r} (first on line {where})")
            return
        self.seen[(key, system)] = line
        item = self.items.get(key)
        if item is None:
            self.items[key] = ItemInput(key, source, references, {system: output}, line)
            return
        if source and item.source and source != item.source:
            self.error(line, f"item {key!r} has a different source than on line {item.line}")
        if references and item.references and references != item.references:
            self.error(line, f"item {key!r} has different references than on line {item.line}")
        item.source = item.source or source
        item.references = item.references or references
        item.outputs[system] = output

    def finish(self, require_source: bool) -> list[ItemInput]:
        if not self.items and not self.errors:
            self.error(1, "no system outputs found")
        systems = sorted({s for item in self.items.values() for s in item.outputs})
        for item in self.items.values():
            missing = [s for s in systems if s not in item.outputs]
            if missing:
                self.error(item.line, f"item {item.key!r} has no output of system(s) {', '.join(missing)}: every item needs every system")
            if require_source and not item.source:
                self.error(item.line, f"item {item.key!r} has no source")
        if self.errors:
            raise InputError(self.errors)
        return list(self.items.values())


def parse_outputs(text: str, name: str, require_source: bool = True) -> list[ItemInput]:
    """System outputs from TSV or JSONL text (chosen by ``name``'s extension, else sniffed)."""
    lower = name.lower()
    stripped = text.lstrip("\ufeff")
    if lower.endswith(".jsonl") or lower.endswith(".json") or (not lower.endswith(".tsv") and stripped.lstrip().startswith("{")):
        return parse_jsonl(stripped, name, require_source)
    return parse_tsv(stripped, name, require_source)


def parse_tsv(text: str, name: str, require_source: bool = True) -> list[ItemInput]:
    col = _Collector(name)
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise InputError([f"{name}:1: empty file; the first line must be a header naming item_id, system, output (and source, reference...)"])
    header = [h.strip().lower() for h in lines[0].split("\t")]
    for needed in ("item_id", "system", "output"):
        if needed not in header:
            col.error(1, f"the header has no {needed!r} column (found: {', '.join(header)})")
    if len(set(header)) != len(header):
        col.error(1, "the header names a column twice")
    if col.errors:
        raise InputError(col.errors)
    ref_cols = [i for i, h in enumerate(header) if h.startswith("reference")]
    for n, raw in enumerate(csv.reader(io.StringIO("\n".join(lines[1:])), delimiter="\t", quoting=csv.QUOTE_NONE), start=2):
        if not raw or not any(c.strip() for c in raw):
            continue
        if len(raw) != len(header):
            col.error(n, f"{len(raw)} fields, the header has {len(header)}")
            continue
        row = dict(zip(header, raw, strict=True))
        key = col.text(n, row["item_id"], "item_id")
        system = col.text(n, row["system"], "system")
        output = col.text(n, row["output"], "output")
        source = col.text(n, row.get("source"), "source", required=False)
        refs = [r for r in (col.text(n, raw[i], header[i], required=False) for i in ref_cols) if r]
        if key is None or system is None or output is None or source is None:
            continue
        col.add(n, key, source, refs, system, output)
    return col.finish(require_source)


def parse_jsonl(text: str, name: str, require_source: bool = True) -> list[ItemInput]:
    col = _Collector(name)
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            col.error(n, f"not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            col.error(n, "each line must be a JSON object")
            continue
        key = col.text(n, None if obj.get("item_id") is None else str(obj.get("item_id")), "item_id")
        source = col.text(n, obj.get("source"), "source", required=False)
        refs_raw = obj.get("references", [obj["reference"]] if "reference" in obj else [])
        if isinstance(refs_raw, str):
            refs_raw = [refs_raw]
        if not isinstance(refs_raw, list):
            col.error(n, "references must be a list of strings")
            continue
        refs = [r for r in (col.text(n, r, "a reference", required=False) for r in refs_raw) if r]
        if "outputs" in obj:
            outputs = obj["outputs"]
            if not isinstance(outputs, dict) or not outputs:
                col.error(n, "outputs must be a non-empty object {system: output}")
                continue
            pairs: Iterable[tuple[object, object]] = outputs.items()
        else:
            pairs = [(obj.get("system"), obj.get("output"))]
        if key is None or source is None:
            continue
        for system_raw, output_raw in pairs:
            system = col.text(n, system_raw, "system")
            output = col.text(n, output_raw, f"output of {system_raw!r}")
            if system is not None and output is not None:
                col.add(n, key, source, refs, system, output)
    return col.finish(require_source)


# --- items from an export's test split -----------------------------------------------------

ALIGNED = {"aligned", "partialAligned"}
ALIGNMENT_COLUMNS = ("label", "simple_id", "complex_id", "simple", "complex", "score")


def _split_file(folder: Path, split: str) -> Path:
    for ext in ("tsv", "jsonl", "parquet"):
        path = folder / f"{split}.{ext}"
        if path.is_file():
            return path
    found = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    raise InputError([f"{folder}: no {split}.tsv, {split}.jsonl or {split}.parquet in the export (found: {', '.join(found) or 'nothing'})"])


def _alignment_rows(path: Path) -> Iterable[tuple[int, dict[str, object]]]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path, columns=[c for c in ALIGNMENT_COLUMNS if c != "score"])
        for n, row in enumerate(table.to_pylist(), start=1):
            yield n, row
        return
    with open(path, encoding="utf-8") as handle:
        for n, line in enumerate(handle, start=1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            if path.suffix == ".jsonl":
                try:
                    yield n, json.loads(line)
                except json.JSONDecodeError as exc:
                    yield n, {"__error__": f"not valid JSON ({exc.msg})"}
                continue
            cells = line.split("\t")
            if n == 1 and cells[0] == "label":
                continue
            yield n, dict(zip(ALIGNMENT_COLUMNS, cells, strict=False))


def items_from_export(folder: str | Path, split: str = "test") -> list[ItemInput]:
    """Items from an export folder's ``split`` file: the complex sentence of each aligned or
    partially aligned group is the source, its simple sentences (in document order, joined) the
    reference. The item key is the complex sentence id."""
    path = _split_file(Path(folder), split)
    col = _Collector(str(path))
    groups: dict[str, tuple[int, str, list[tuple[SentenceId, str]]]] = {}
    for n, row in _alignment_rows(path):
        if "__error__" in row:
            col.error(n, str(row["__error__"]))
            continue
        if row.get("label") not in ALIGNED:
            continue
        try:
            cid, sid = SentenceId.parse(str(row.get("complex_id"))), SentenceId.parse(str(row.get("simple_id")))
        except ValueError as exc:
            col.error(n, str(exc))
            continue
        complex_text = col.text(n, row.get("complex"), "complex sentence")
        simple_text = col.text(n, row.get("simple"), "simple sentence")
        if complex_text is None or simple_text is None:
            continue
        line, source, simples = groups.setdefault(str(cid), (n, complex_text, []))
        simples.append((sid, simple_text))
    if col.errors:
        raise InputError(col.errors)
    if not groups:
        raise InputError([f"{path}: no aligned or partially aligned rows in the {split} split"])
    items = []
    for key, (line, source, simples) in groups.items():
        reference = " ".join(text for _, text in sorted(set(simples)))
        items.append(ItemInput(key, source, [reference], {}, line))
    return items


def merge_outputs(base: list[ItemInput], outputs: list[ItemInput], name: str, reference_as_system: bool = False) -> list[ItemInput]:
    """Attach imported system outputs (keyed by item id) to items from an export; items without
    outputs are left out. ``reference_as_system`` adds the reference as a rated system."""
    col = _Collector(name)
    by_key = {item.key: item for item in base}
    merged: list[ItemInput] = []
    for item in outputs:
        target = by_key.get(item.key)
        if target is None:
            col.error(item.line, f"item {item.key!r} is not in the export's split")
            continue
        if item.source and item.source != target.source:
            col.error(item.line, f"item {item.key!r}: the source differs from the export's complex sentence")
            continue
        merged.append(ItemInput(target.key, target.source, list(target.references), dict(item.outputs), item.line))
    if col.errors:
        raise InputError(col.errors)
    if reference_as_system:
        source_items = merged if outputs else [ItemInput(i.key, i.source, list(i.references), {}, i.line) for i in base]
        for item in source_items:
            if REFERENCE_SYSTEM in item.outputs:
                raise InputError([f"{name}:{item.line}: a system is called {REFERENCE_SYSTEM!r}; rename it to add the reference as a system"])
            item.outputs[REFERENCE_SYSTEM] = " ".join(item.references)
        merged = source_items
    return merged
