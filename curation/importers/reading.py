"""File-reading helpers the parsers share: bounded streaming reads, text decoding with line
numbers, refusal of binary data (NUL and control characters), field limits, article slugs.

Nothing here reads a file whole without a bound: lines are read one at a time up to
``MAX_LINE_BYTES`` and a text or plan file up to ``MAX_FILE_BYTES``, so ``/dev/zero`` or a
huge file fails at once with ``file:line: problem`` instead of filling the memory.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from curation.importers.types import ImportFailed

SLUG_BAD = re.compile(r"[^0-9A-Za-z_.]+")
MAX_LINE_BYTES = 16 * 1024 * 1024  # one JSONL / TSV line (a long document pair fits easily)
MAX_FILE_BYTES = 64 * 1024 * 1024  # one text or plan file (an article level)
CHUNK = 1024 * 1024
# C0 controls other than tab, line feed, form feed and carriage return, and DEL: never text.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def make_slug(name: str) -> str:
    """An opaque id without '-' or spaces, usable as a pair-id prefix."""
    slug = SLUG_BAD.sub("_", name.strip()).strip("_").lower()
    return slug or "article"


def control_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored as text (a NUL or other control character), or None."""
    match = CONTROL.search(text)
    if match is None:
        return None
    name = "a NUL byte" if match.group() == "\x00" else f"control character U+{ord(match.group()):04X}"
    return f"{name} at character {match.start() + 1} (binary data is not text)"


def length_problem(value: str, limit: int, what: str) -> str | None:
    """``what`` is longer than the database column allows, or None."""
    if len(value) > limit:
        return f"{what} has {len(value)} characters; at most {limit} are allowed"
    return None


def line_of(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and byte-in-line of ``offset`` in ``data``."""
    return data.count(b"\n", 0, offset) + 1, offset - data.rfind(b"\n", 0, offset)


def read_bytes(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of one text file, read in chunks: refused at once past ``limit`` or at a NUL byte."""
    parts: list[bytes] = []
    size = 0
    lines = 0
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            nul = chunk.find(b"\x00")
            if nul >= 0:
                line, _ = line_of(chunk, nul)
                raise ImportFailed(path, lines + line, f"a NUL byte at byte {size + nul + 1} of the file (a binary file, not text)")
            size += len(chunk)
            if size > limit:
                raise ImportFailed(path, None, f"larger than {limit // (1024 * 1024)} MiB; not a text file of one document")
            lines += chunk.count(b"\n")
            parts.append(chunk)
    return b"".join(parts)


def check_text(path: Path, text: str) -> None:
    match = CONTROL.search(text)
    if match is not None:
        line = text.count("\n", 0, match.start()) + 1
        column = match.start() - text.rfind("\n", 0, match.start())
        raise ImportFailed(
            path, line, f"control character U+{ord(match.group()):04X} at character {column} (a binary file, not text)"
        )


def read_text(path: Path) -> str:
    """Decode UTF-8 (a BOM is dropped), falling back to Windows-1252 for legacy files.

    Binary data is refused (a NUL or control character names its line), also through the
    fallback, so random bytes never turn into garbage sentences."""
    data = read_bytes(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as utf8_error:
        try:
            text = data.decode("cp1252")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise ImportFailed(path, line, "neither UTF-8 nor Windows-1252 text") from None
        try:
            check_text(path, text)
        except ImportFailed:
            line, byte = line_of(data, utf8_error.start)
            raise ImportFailed(path, line, f"not text: invalid UTF-8 at byte {byte} of the line, and control characters as Windows-1252") from None
    check_text(path, text)
    return text


def read_utf8_lines(path: Path) -> Iterable[tuple[int, str]]:
    """Lines of a strict UTF-8 file with their 1-based numbers, streamed one at a time.

    Bad bytes, a NUL or control character, or a line over ``MAX_LINE_BYTES`` name their line."""
    with path.open("rb") as handle:
        number = 0
        while True:
            raw = handle.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise ImportFailed(path, number, f"line longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB (not a line of text)")
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            nul = raw.find(b"\x00")
            if nul >= 0:
                raise ImportFailed(path, number, f"a NUL byte at byte {nul + 1} of the line (binary data is not text)")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ImportFailed(path, number, f"not valid UTF-8 (byte {exc.start + 1} of the line)") from None
            line = line.rstrip("\n").rstrip("\r")
            problem = control_problem(line)
            if problem:
                raise ImportFailed(path, number, problem)
            yield number, line


def file_digest(path: Path) -> str:
    """sha256 of a file's raw bytes, read in chunks (recognises unchanged files before parsing)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def digest_of(parts: Iterator[str] | Iterable[str]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\x1f")
    return digest.hexdigest()
