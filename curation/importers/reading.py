"""File-reading helpers the parsers share: text decoding with line numbers, article slugs."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from curation.importers.types import ImportFailed

SLUG_BAD = re.compile(r"[^0-9A-Za-z_.]+")


def make_slug(name: str) -> str:
    """An opaque id without '-' or spaces, usable as a pair-id prefix."""
    slug = SLUG_BAD.sub("_", name.strip()).strip("_").lower()
    return slug or "article"


def read_text(path: Path) -> str:
    """Decode UTF-8 (a BOM is dropped), falling back to Windows-1252 for legacy files."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise ImportFailed(path, line, "neither UTF-8 nor Windows-1252 text") from None


def read_utf8_lines(path: Path) -> Iterable[tuple[int, str]]:
    """Lines of a strict UTF-8 file with their 1-based numbers; bad bytes name their line."""
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ImportFailed(path, number, f"not valid UTF-8 (byte {exc.start + 1} of the line)") from None
        yield number, line.rstrip("\r")
