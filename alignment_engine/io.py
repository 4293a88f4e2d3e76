"""Reading and writing the interchange formats of ``../shared/formats.md``.

Every reader raises :class:`alignment_engine.errors.InputError` with ``<file>:<line>: <problem>``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO

from alignment_engine.errors import InputError
from alignment_engine.ids import COMPLEX, SIMPLE, SentenceId
from alignment_engine.text import clean_cell, split_sentences
from alignment_engine.types import Alignment, DocPair

TSV_LABELS = frozenset({"aligned", "partialAligned", "notAligned", "identical"})
HEADER = ("label", "simple_id", "complex_id", "simple_sentence", "complex_sentence", "score")


def _read_lines(path: str | Path) -> list[str]:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not valid UTF-8 (byte offset {e.start})") from None
    return text.split("\n")


def _paragraphs(value: object, where: str, side: str) -> list[list[str]]:
    if not isinstance(value, list) or not all(
        isinstance(p, list) and all(isinstance(s, str) for s in p) for p in value
    ):
        raise InputError(f"{where}: '{side}' must be a list of paragraphs, each a list of strings")
    return [list(p) for p in value]


def pair_from_dict(obj: object, where: str = "<input>") -> DocPair:
    """A :class:`DocPair` from one parsed JSONL object; unknown keys are ignored."""
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object")
    pid = obj.get("pair_id")
    if isinstance(pid, int) and not isinstance(pid, bool):
        pid = str(pid)
    if not isinstance(pid, str) or not pid or "-" in pid or any(c.isspace() for c in pid):
        raise InputError(f"{where}: 'pair_id' must be a non-empty string without '-' or spaces, got {pid!r}")
    language = obj.get("language", "en")
    if not isinstance(language, str) or not language:
        raise InputError(f"{where}: 'language' must be a string")
    complex_ = _paragraphs(obj.get("complex"), where, "complex")
    simple = _paragraphs(obj.get("simple"), where, "simple")
    meta = {k: obj[k] for k in ("complex_title", "simple_title", "meta") if k in obj}
    return DocPair(pair_id=pid, complex=complex_, simple=simple, language=language, meta=meta)


def read_pairs_jsonl(path: str | Path) -> list[DocPair]:
    """Document pairs from a JSONL file (blank lines skipped; duplicate pair ids rejected)."""
    pairs: list[DocPair] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: not valid JSON: {e.msg} (column {e.colno})") from None
        pair = pair_from_dict(obj, where)
        if pair.pair_id in seen:
            raise InputError(f"{where}: pair_id {pair.pair_id!r} already used on line {seen[pair.pair_id]}")
        seen[pair.pair_id] = n
        pairs.append(pair)
    return pairs


def pair_to_dict(pair: DocPair) -> dict:
    out: dict = {"pair_id": pair.pair_id, "language": pair.language, "complex": pair.complex, "simple": pair.simple}
    out.update(pair.meta)
    return out


def write_pairs_jsonl(path: str | Path, pairs: Iterable[DocPair]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for pair in pairs:
            fh.write(json.dumps(pair_to_dict(pair), ensure_ascii=False) + "\n")


def _parse_sentence_id(text: str) -> SentenceId | None:
    try:
        return SentenceId.parse(text)
    except ValueError:
        return None


def read_alignment_tsv(path: str | Path) -> list[Alignment]:
    """Rows of an alignment TSV (gold or prediction); an optional ``label\\t...`` header is skipped."""
    rows: list[Alignment] = []
    seen_content = False
    for n, raw in enumerate(_read_lines(path), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        where = f"{path}:{n}"
        if not seen_content:
            seen_content = True
            if fields[0].strip() == "label" and len(fields) > 1:
                continue
        if len(fields) not in (5, 6):
            raise InputError(
                f"{where}: expected 5 or 6 tab-separated fields (label, simple_id, complex_id, "
                f"simple_sentence, complex_sentence[, score]), got {len(fields)}"
            )
        label, s_id, c_id = (f.strip() for f in fields[:3])
        if label not in TSV_LABELS:
            raise InputError(f"{where}: unknown label {label!r} (expected one of {', '.join(sorted(TSV_LABELS))})")
        ms, mc = _parse_sentence_id(s_id), _parse_sentence_id(c_id)
        if ms is None:
            raise InputError(f"{where}: bad simple_id {s_id!r} (expected <pair>-0-<paragraph>-<sentence>)")
        if mc is None:
            raise InputError(f"{where}: bad complex_id {c_id!r} (expected <pair>-1-<paragraph>-<sentence>)")
        if ms.side != SIMPLE or mc.side != COMPLEX:
            raise InputError(f"{where}: simple_id must have level 0 and complex_id level 1 (columns swapped?)")
        if ms.pair_id != mc.pair_id:
            raise InputError(f"{where}: simple_id {s_id!r} and complex_id {c_id!r} belong to different pairs")
        score: float | None = None
        if len(fields) == 6 and fields[5].strip():
            try:
                score = float(fields[5])
            except ValueError:
                raise InputError(f"{where}: score {fields[5]!r} is not a number") from None
        rows.append(Alignment(label, s_id, c_id, fields[3], fields[4], score))
    return rows


def _format_score(score: float | None) -> str:
    return "" if score is None else f"{score:.6g}"


def write_alignment_tsv(path_or_file: str | Path | IO[str], alignments: Iterable[Alignment], header: bool = False) -> int:
    """Write rows in the 6-column layout; ``-`` or a file object writes to that stream. Returns the row count."""
    own = isinstance(path_or_file, str | Path) and str(path_or_file) != "-"
    fh: IO[str]
    if own:
        fh = open(path_or_file, "w", encoding="utf-8", newline="\n")  # type: ignore[arg-type]  # noqa: SIM115
    elif isinstance(path_or_file, str | Path):
        fh = sys.stdout
    else:
        fh = path_or_file
    count = 0
    try:
        if header:
            fh.write("\t".join(HEADER) + "\n")
        for a in alignments:
            fh.write(
                "\t".join(
                    (a.label, a.simple_id, a.complex_id, clean_cell(a.simple_text), clean_cell(a.complex_text),
                     _format_score(a.score))
                )
                + "\n"
            )
            count += 1
    finally:
        if own:
            fh.close()
    return count


# ---- OneStopEnglish-style leveled texts ----------------------------------------------------

ONESTOP_LEVELS = ("adv", "int", "ele")
LEVEL_HEADINGS = {"advanced", "intermediate", "elementary"}


def _decode_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252")


def text_paragraphs(text: str) -> list[str]:
    """Non-blank lines as paragraphs; a first line naming the level (``Intermediate``) is dropped."""
    lines = [" ".join(line.split()) for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    lines = [line for line in lines if line]
    if lines and lines[0].lower() in LEVEL_HEADINGS:
        lines = lines[1:]
    return lines


def read_leveled_document(path: str | Path, language: str = "en") -> list[list[str]]:
    """Paragraphs of sentences (split with pysbd) of one plain-text file."""
    paras = [split_sentences(p, language) for p in text_paragraphs(_decode_text(Path(path)))]
    return [p for p in paras if p]


#: OneStopEnglish's adjacent levels (complex, simple), :func:`onestop_pairs`' default.
ONESTOP_ADJACENT = (("adv", "int"), ("int", "ele"))
#: Every two levels of an article, as Newsela-Auto pairs them.
ONESTOP_ALL_LEVELS = (("adv", "int"), ("adv", "ele"), ("int", "ele"))


def onestop_pairs(
    texts_dir: str | Path,
    combos: Sequence[tuple[str, str]] = ONESTOP_ADJACENT,
    int_folder: str = "int-utf8",
    limit: int | None = None,
) -> list[DocPair]:
    """Document pairs of the OneStopEnglish corpus (``texts/`` folder), one per article and level combo.

    Defaults: the adjacent levels adv->int and int->ele (2 x 189 = 378 pairs), intermediate texts from
    ``int-utf8`` (same character set as adv/ele). Pair ids are ``<slug>_<complex><simple>``.
    """
    root = Path(texts_dir)
    folders = {"adv": root / "adv", "int": root / int_folder, "ele": root / "ele"}
    stems = sorted(p.name[: -len("-adv.txt")] for p in folders["adv"].glob("*-adv.txt"))
    if limit is not None:
        stems = stems[:limit]
    cache: dict[tuple[str, str], list[list[str]]] = {}

    def doc(stem: str, level: str) -> list[list[str]]:
        key = (stem, level)
        if key not in cache:
            cache[key] = read_leveled_document(folders[level] / f"{stem}-{level}.txt")
        return cache[key]

    pairs = []
    for stem in stems:
        slug = re.sub(r"[^0-9a-z]+", "_", stem.lower()).strip("_") or "doc"
        for c_level, s_level in combos:
            pairs.append(
                DocPair(pair_id=f"{slug}_{c_level}{s_level}", complex=doc(stem, c_level), simple=doc(stem, s_level))
            )
    return pairs
