"""Streaming, atomic, reproducible writers for exported datasets: alignment TSV
(``../shared/formats.md``), JSONL and Parquet.

- Streaming: a writer takes one row at a time; TSV and JSONL go straight to a buffered file,
  Parquet keeps at most ``batch_size`` rows and writes them as one row group. Memory does not
  grow with the number of rows.
- Atomic: each file is written to a hidden temporary file in the same folder, flushed,
  fsynced, then ``os.replace``-d onto its name; on error the temporary file is removed and the
  target is untouched.
- Reproducible: no timestamps or random values go into a data file; the same rows in the same
  order give the same bytes (and sha256).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from alignment_engine.text import clean_cell
from curation.curate.rows import COLUMNS, Row

FORMATS = ("tsv", "jsonl", "parquet")
EXTENSIONS = {"tsv": "tsv", "jsonl": "jsonl", "parquet": "parquet"}
ALIGNMENT_TSV_COLUMNS = ("label", "simple_id", "complex_id", "simple", "complex", "score")
BUFFER = 1 << 20


@dataclass(frozen=True)
class Column:
    name: str
    type: str = "str"  # str | int | float | bool | json


def columns(*spec: str | tuple[str, str]) -> list[Column]:
    return [Column(s) if isinstance(s, str) else Column(*s) for s in spec]


class AtomicFile:
    """A binary file that appears under ``path`` only when closed without error."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        self.tmp = Path(tmp)
        self.handle: IO[bytes] = os.fdopen(fd, "wb", buffering=BUFFER)
        self.closed = False

    def commit(self) -> None:
        if self.closed:
            return
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        os.replace(self.tmp, self.path)
        fsync_dir(self.path.parent)
        self.closed = True

    def abort(self) -> None:
        if self.closed:
            return
        try:
            self.handle.close()
        finally:
            self.tmp.unlink(missing_ok=True)
            self.closed = True


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(BUFFER), b""):
            digest.update(block)
    return digest.hexdigest()


def clean_text(text: str) -> str:
    """``clean_cell`` with a fast path for the usual sentence without tabs or line breaks."""
    if "\t" in text or "\n" in text or "\r" in text:
        return clean_cell(text)
    return text.strip()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


class RowWriter:
    """Base: ``write(mapping)``, then ``close()`` (commit) or ``abort()``; usable as a context manager."""

    def __init__(self, path: str | Path, cols: Sequence[Column]) -> None:
        self.path = Path(path)
        self.columns = list(cols)
        self.names = [c.name for c in self.columns]
        self.rows = 0
        self._file = AtomicFile(self.path)

    def write(self, row: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def write_record(self, record: Any) -> None:
        """Write an object whose attributes are the columns (``curation.curate.rows.Row``)."""
        self.write({name: getattr(record, name, None) for name in self.names})

    def _finish(self) -> None:
        """Flush anything buffered into ``self._file.handle``."""

    def close(self) -> dict[str, Any]:
        """Commit the file; return ``{name, rows, bytes, sha256}``."""
        self._finish()
        self._file.commit()
        return {"name": self.path.name, "rows": self.rows, "bytes": self.path.stat().st_size, "sha256": sha256_of(self.path)}

    def abort(self) -> None:
        self._file.abort()

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc_type is not None:
            self.abort()
        elif not self._file.closed:
            self.close()


class TsvWriter(RowWriter):
    """Tab-separated; ``header`` writes the column names first (the alignment TSV has none)."""

    def __init__(self, path: str | Path, cols: Sequence[Column], header: bool = True) -> None:
        super().__init__(path, cols)
        if header:
            self._file.handle.write(("\t".join(self.names) + "\n").encode("utf-8"))

    def write(self, row: Mapping[str, Any]) -> None:
        self._file.handle.write(("\t".join([_cell(row.get(name)) for name in self.names]) + "\n").encode("utf-8"))
        self.rows += 1


class AlignmentTsvWriter(TsvWriter):
    """The six formats.md columns, no header; ``write_record`` formats a Row without building a dict."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, columns(*ALIGNMENT_TSV_COLUMNS), header=False)
        self._write = self._file.handle.write

    def write_record(self, record: Any) -> None:
        score = record.score
        self._write(
            f"{record.label}\t{record.simple_id}\t{record.complex_id}\t{clean_text(record.simple)}\t"
            f"{clean_text(record.complex)}\t{'' if score is None else repr(score)}\n".encode()
        )
        self.rows += 1


def finite(value: Any) -> Any:
    """``value`` with NaN and infinities (not JSON) replaced by None, also inside lists and dicts."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


class JsonlWriter(RowWriter):
    """One JSON object per line; never writes NaN or Infinity (a score stored before imports refused them is null)."""

    def write(self, row: Mapping[str, Any]) -> None:
        data = {name: row.get(name) for name in self.names}
        try:
            line = json.dumps(data, ensure_ascii=False, allow_nan=False)
        except ValueError:
            line = json.dumps(finite(data), ensure_ascii=False, allow_nan=False)
        self._file.handle.write((line + "\n").encode("utf-8"))
        self.rows += 1


class ParquetWriter(RowWriter):
    """Buffers ``batch_size`` rows column-wise and writes each batch as one row group."""

    def __init__(self, path: str | Path, cols: Sequence[Column], batch_size: int = 50_000) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        super().__init__(path, cols)
        self._pa = pa
        types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "json": pa.string()}
        self.schema = pa.schema([pa.field(c.name, types[c.type]) for c in self.columns])
        self._json = [c.name for c in self.columns if c.type == "json"]
        self.batch_size = batch_size
        self._buffer: dict[str, list[Any]] = {name: [] for name in self.names}
        self._pending = 0
        self._writer = pq.ParquetWriter(self._file.handle, self.schema, compression="zstd", write_statistics=True)

    def write(self, row: Mapping[str, Any]) -> None:
        for name in self.names:
            self._buffer[name].append(row.get(name))
        self._pending += 1
        self.rows += 1
        if self._pending >= self.batch_size:
            self._flush()

    def write_record(self, record: Any) -> None:
        buffer = self._buffer
        for name in self.names:
            buffer[name].append(getattr(record, name, None))
        self._pending += 1
        self.rows += 1
        if self._pending >= self.batch_size:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        for name in self._json:
            self._buffer[name] = [
                None if v is None else json.dumps(v, ensure_ascii=False, sort_keys=True) for v in self._buffer[name]
            ]
        table = self._pa.Table.from_pydict(self._buffer, schema=self.schema)
        self._writer.write_table(table, row_group_size=self.batch_size)
        self._buffer = {name: [] for name in self.names}
        self._pending = 0

    def _finish(self) -> None:
        self._flush()
        self._writer.close()

    def abort(self) -> None:
        with contextlib.suppress(Exception):  # the file is discarded anyway
            self._writer.close()
        super().abort()


def open_writer(fmt: str, path: str | Path, cols: Sequence[Column], header: bool = True, batch_size: int = 50_000) -> RowWriter:
    if fmt == "tsv":
        return TsvWriter(path, cols, header=header)
    if fmt == "jsonl":
        return JsonlWriter(path, cols)
    if fmt == "parquet":
        return ParquetWriter(path, cols, batch_size=batch_size)
    raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")


def open_alignment_writer(fmt: str, path: str | Path, cols: Sequence[Column], batch_size: int = 50_000) -> RowWriter:
    """Alignment rows: TSV in the six formats.md columns without header; JSONL/Parquet with all ``cols``."""
    if fmt == "tsv":
        return AlignmentTsvWriter(path)
    return open_writer(fmt, path, cols, batch_size=batch_size)


def write_json_atomic(path: str | Path, data: Any) -> dict[str, Any]:
    return write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def write_text_atomic(path: str | Path, text: str) -> dict[str, Any]:
    target = AtomicFile(path)
    try:
        target.handle.write(text.encode("utf-8"))
    except BaseException:
        target.abort()
        raise
    target.commit()
    p = Path(path)
    return {"name": p.name, "rows": None, "bytes": p.stat().st_size, "sha256": sha256_of(p)}


class SplitWriters:
    """One alignment-row writer per split, opened lazily, all aborted together on error."""

    def __init__(self, folder: Path, fmt: str, cols: list[Column], batch_size: int) -> None:
        self.folder, self.fmt, self.cols, self.batch_size = folder, fmt, cols, batch_size
        self.writers: dict[str, RowWriter] = {}

    def write(self, split: str, row: Row) -> None:
        writer = self.writers.get(split)
        if writer is None:
            writer = open_alignment_writer(self.fmt, self.folder / f"{split}.{EXTENSIONS[self.fmt]}", self.cols, self.batch_size)
            self.writers[split] = writer
        writer.write_record(row)

    def ensure(self, names: Iterable[str]) -> None:
        for name in names:
            if name not in self.writers:
                self.writers[name] = open_alignment_writer(
                    self.fmt, self.folder / f"{name}.{EXTENSIONS[self.fmt]}", self.cols, self.batch_size
                )

    def close(self) -> list[dict[str, Any]]:
        return [self.writers[name].close() for name in sorted(self.writers)]

    def abort(self) -> None:
        for writer in self.writers.values():
            writer.abort()


# Alignment rows (``curation.curate.rows.Row``) of Auto and Manual exports; Manual adds where each label came from.
ROW_COLUMNS: list[Column] = columns(
    "label", "simple_id", "complex_id", "simple", "complex", ("score", "float"), "pair_id", "article",
    ("complex_level", "int"), ("simple_level", "int"), "split", "phenomenon", "group_shape", "split_category",
    ("synthetic", "bool"),
)
MANUAL_COLUMNS: list[Column] = [*ROW_COLUMNS, Column("source")]
assert [c.name for c in ROW_COLUMNS] == COLUMNS  # noqa: S101 - module invariant, not input validation
