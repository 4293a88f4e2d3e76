"""DEplain simplification-plan CSV files (``plan_doc_<pair_id>.csv``), one article per file.

A plan file lists rows of complex/simple sentence groups with their ids
(``<pair_id>-<level>-<paragraph>-<sentence>``, level 1 = complex, 0 = simple) and the manual
alignment between them. Both documents are rebuilt from the ids:

- all ids of one level are grouped by paragraph and sorted by paragraph and sentence index
  (``86-1-0--1``, sentence index -1, sorts first); gaps are renumbered consecutively, exactly
  like ``../shared/data/deplain-web/*_pairs.jsonl``; the plan id is kept in ``Sentence.source_id``;
- one-sided rows carry ``<pair_id>-<level>-x-x`` on the empty side; an id repeated inside one
  list counts once;
- a sentence's text is the row text where its id stands alone on its side; otherwise the
  joined text of a multi-id row is split: texts known from other rows are peeled off in id
  order, a single remaining id takes the rest, and several remaining ids are split with pysbd
  (then merged or split at clause marks until the count fits).

Every row with sentences on both sides becomes gold: all n x m sentence pairs, label
``aligned``, with the plan's alignment value (``identical``, ``aligned (1:2)``, ``deletion``, ...)
kept as ``source_label``. One-sided rows give no alignment.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from alignment_engine.ids import pair_id_problem, sentence_id
from alignment_engine.text import split_sentences
from curation.importers.reading import check_text, line_of, read_bytes
from curation.importers.types import ImportFailed, ImportOptions, ParsedAlignment, ParsedArticle, ParsedDocument

COLUMNS = (
    "original",
    "simplification",
    "original_id",
    "simplification_id",
    "pair_id",
    "domain",
    "corpus",
    "language_level_original",
    "language_level_simple",
    "license",
    "author",
    "simple_url",
    "complex_url",
    "simple_title",
    "complex_title",
    "access_date",
    "rater",
    "alignment",
)
META_COLUMNS = (
    "domain",
    "corpus",
    "language_level_original",
    "language_level_simple",
    "license",
    "author",
    "simple_url",
    "complex_url",
    "access_date",
)
PLAN_ID = re.compile(r"^(?P<pair>[^\s-]+)-(?P<level>[01])-(?:(?P<para>\d+)-(?P<sent>-?\d+)|(?P<none>x-x))$")
COMPLEX, SIMPLE = 1, 0


def clean(text: str) -> str:
    """As in the shared JSONL: tabs and newlines become spaces, outer whitespace is trimmed."""
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ").strip()


@dataclass
class PlanRow:
    line: int
    texts: dict[int, str]  # level -> joined text of the side
    ids: dict[int, list[str]]  # level -> plan ids (deduplicated, in order; empty for x-x)
    alignment: str


@dataclass
class PlanFile:
    path: Path
    pair_id: str
    rows: list[PlanRow] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    complex_title: str = ""
    simple_title: str = ""
    # plan id -> (paragraph index, sentence index) as written in the file
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)
    first_line: dict[str, int] = field(default_factory=dict)


@dataclass
class RecoveryStats:
    alone: int = 0
    peeled: int = 0
    split: int = 0


def _decode(path: Path) -> str:
    data = read_bytes(path)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = line_of(data, exc.start)
        raise ImportFailed(path, line, f"not valid UTF-8 (byte {column} of the line)") from None
    check_text(path, text)
    return text


def _rows(path: Path, text: str) -> Iterable[tuple[int, list[str]]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    start = 1
    try:
        for cells in reader:
            yield start, cells
            start = reader.line_num + 1
    except csv.Error as exc:
        raise ImportFailed(path, reader.line_num or start, f"malformed CSV: {exc}") from None


def read_plan(path: Path) -> PlanFile:
    text = _decode(path)
    if not text.strip():
        raise ImportFailed(path, None, "empty file (expected a header line and rows)")
    rows = _rows(path, text)
    _, header = next(iter(rows))
    header = [h.strip() for h in header]
    if tuple(header) != COLUMNS:
        missing = [c for c in COLUMNS if c not in header]
        extra = [h for h in header if h not in COLUMNS]
        detail = []
        if missing:
            detail.append(f"missing {', '.join(missing)}")
        if extra:
            detail.append(f"unexpected {', '.join(extra)}")
        if not detail:
            detail.append("columns out of order")
        raise ImportFailed(
            path, 1, f"not a DEplain plan header ({'; '.join(detail)}); expected {len(COLUMNS)} columns: {','.join(COLUMNS)}"
        )
    plan: PlanFile | None = None
    for line, cells in rows:
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(COLUMNS):
            raise ImportFailed(path, line, f"expected {len(COLUMNS)} columns, got {len(cells)}")
        record = dict(zip(COLUMNS, cells, strict=True))
        pair_id = record["pair_id"].strip()
        problem = pair_id_problem(pair_id)
        if problem:
            raise ImportFailed(path, line, f"bad pair_id {pair_id!r} ({problem})")
        if plan is None:
            plan = PlanFile(
                path=path,
                pair_id=pair_id,
                meta={k: record[k].strip() for k in META_COLUMNS if record[k].strip()},
                complex_title=clean(record["complex_title"]),
                simple_title=clean(record["simple_title"]),
            )
        elif pair_id != plan.pair_id:
            raise ImportFailed(path, line, f"pair_id {pair_id!r} differs from {plan.pair_id!r} of the first row")
        row = PlanRow(line=line, texts={}, ids={}, alignment=record["alignment"].strip())
        for level, id_column, text_column in ((COMPLEX, "original_id", "original"), (SIMPLE, "simplification_id", "simplification")):
            ids = _parse_ids(path, line, plan, record[id_column], level)
            row.ids[level] = ids
            row.texts[level] = clean(record[text_column])
            if ids and not row.texts[level]:
                raise ImportFailed(path, line, f"{id_column} {record[id_column]!r} has no text in column {text_column!r}")
        if not row.ids[COMPLEX] and not row.ids[SIMPLE]:
            raise ImportFailed(path, line, "row has no sentence id on either side")
        plan.rows.append(row)
    if plan is None:
        raise ImportFailed(path, None, "no rows after the header")
    return plan


def _parse_ids(path: Path, line: int, plan: PlanFile, value: str, level: int) -> list[str]:
    column = "original_id" if level == COMPLEX else "simplification_id"
    ids: list[str] = []
    parts = [p.strip() for p in value.split("|")]
    for part in parts:
        match = PLAN_ID.match(part)
        if not match:
            raise ImportFailed(path, line, f"bad sentence id {part!r} in {column} (expected <pair>-<level>-<par>-<sent> or <pair>-<level>-x-x)")
        if match["pair"] != plan.pair_id:
            raise ImportFailed(path, line, f"sentence id {part!r} is not from pair {plan.pair_id!r}")
        if int(match["level"]) != level:
            raise ImportFailed(path, line, f"{column} {part!r} should have level {level}")
        if match["none"]:
            if len(parts) > 1:
                raise ImportFailed(path, line, f"{column} {value!r} mixes x-x with sentence ids")
            return []
        if part in ids:
            continue  # a repeated id inside one list counts once
        ids.append(part)
        plan.positions.setdefault(part, (int(match["para"]), int(match["sent"])))
        plan.first_line.setdefault(part, line)
    return ids


STOP = re.compile(r"[.!?…][\"“”»«’')\]]*$")
ORDINAL = re.compile(r"(?:^|\s)(?:\d+|[A-Za-z]|[IVX]+)\.$")
OPENING = re.compile(r"^[\"„“»«‚(\[]?[A-ZÄÖÜ]")
STARTERS = frozenset(
    {"Die", "Der", "Das", "Den", "Dem", "Und", "Dann", "Da", "Ein", "Eine", "Er", "Sie", "Es", "Ich", "Wir", "Ihr", "Du"}
    | {"Man", "Aber", "Auch", "So", "The", "A", "An", "He", "She", "It", "They", "We", "I", "You", "But", "And", "Then"}
)


def _boundary_score(segment: str, i: int, pysbd_ends: set[int]) -> float:
    left, right = segment[:i], segment[i + 1 :]
    score = 3.0 if i in pysbd_ends else 0.0
    if STOP.search(left):
        score += 3.0 if not ORDINAL.search(left) else 0.5
    elif left.endswith((":", ";")):
        score += 2.0
    if OPENING.match(right):
        score += 1.0
        if left[-1:].islower():
            score += 0.5
    if right.split(" ", 1)[0].strip("\"„“»«‚(") in STARTERS:
        score += 0.5
    return score


def split_into(segment: str, n: int, language: str) -> list[str]:
    """Split the joined text of ``n`` sentences into ``n`` pieces.

    pysbd's split when it gives exactly ``n`` pieces; otherwise the ``n - 1`` strongest
    boundaries among the spaces of the text (pysbd boundary, sentence-final punctuation that
    is not an ordinal, colon or semicolon, a capitalised or quoted next word, a usual
    sentence starter), so the pieces always rejoin to the text.
    """
    pieces = split_sentences(segment, language)
    if len(pieces) == n or n == 1:
        return pieces if n > 1 else [segment]
    segment = " ".join(segment.split())
    ends: set[int] = set()
    at = 0
    for piece in pieces:
        at = segment.find(piece, at)
        if at < 0:
            break
        at += len(piece)
        ends.add(at)
    spaces = [i for i, c in enumerate(segment) if c == " "]
    if len(spaces) < n - 1:
        words = segment.split(" ")
        return words + [words[-1]] * (n - len(words))
    ranked = sorted(spaces, key=lambda i: (-_boundary_score(segment, i, ends), i))
    cuts = sorted(ranked[: n - 1])
    bounds = [-1, *cuts, len(segment)]
    return [segment[a + 1 : b] for a, b in zip(bounds, bounds[1:], strict=False)]


def _peel(text: str, ids: list[str], known: dict[str, str]) -> dict[str, str] | None:
    """Texts of the unknown ids of one multi-id side that stand alone between known texts.

    None when a known text is not where it should be.
    """
    runs = _runs(text, ids, known)
    if runs is None:
        return None
    return {run[0]: segment for run, segment in runs if len(run) == 1}


def _runs(text: str, ids: list[str], known: dict[str, str]) -> list[tuple[list[str], str]] | None:
    rest = text
    runs: list[tuple[list[str], str]] = []
    i = 0
    while i < len(ids):
        sid = ids[i]
        if sid in known:
            if not rest.startswith(known[sid]):
                return None
            rest = rest[len(known[sid]) :].lstrip()
            i += 1
            continue
        j = i
        while j < len(ids) and ids[j] not in known:
            j += 1
        run = ids[i:j]
        if j < len(ids):
            at = rest.find(known[ids[j]], 1)
            if at <= 0:
                return None
            segment, rest = rest[:at].strip(), rest[at:]
        else:
            segment, rest = rest.strip(), ""
        if not segment:
            return None
        runs.append((run, segment))
        i = j
    if rest.strip():
        return None
    return runs


def recover_texts(plan: PlanFile, language: str, stats: RecoveryStats) -> dict[str, str]:
    """The text of every sentence id of the plan (see the module docstring for the rules)."""
    known: dict[str, str] = {}
    multi: list[tuple[PlanRow, int]] = []
    for row in plan.rows:
        for level in (COMPLEX, SIMPLE):
            ids = row.ids[level]
            if len(ids) == 1:
                if ids[0] not in known:
                    known[ids[0]] = row.texts[level]
                    stats.alone += 1
            elif ids:
                multi.append((row, level))
    pending = [(row, level) for row, level in multi if any(i not in known for i in row.ids[level])]
    progress = True
    while pending and progress:
        progress = False
        still: list[tuple[PlanRow, int]] = []
        for row, level in pending:
            found = _peel(row.texts[level], row.ids[level], known)
            if found:
                for sid, segment in found.items():
                    if sid not in known:
                        known[sid] = segment
                        stats.peeled += 1
                        progress = True
            if any(i not in known for i in row.ids[level]):
                still.append((row, level))
        pending = still
    for row, level in pending:
        ids = row.ids[level]
        runs = _runs(row.texts[level], ids, known)
        if runs is None:  # known texts do not fit: split the whole row text
            runs = [(ids, row.texts[level])]
        for run, segment in runs:
            pieces = split_into(segment, len(run), language)
            for sid, piece in zip(run, pieces, strict=True):
                if sid not in known:
                    known[sid] = piece
                    stats.split += 1
    return known


def rebuild(plan: PlanFile, level: int, texts: dict[str, str]) -> tuple[list[list[str]], list[list[str]], dict[str, str]]:
    """Paragraphs of sentences, their plan ids, and plan id -> renumbered id for one level."""
    prefix = f"{plan.pair_id}-{level}-"
    ids = sorted((sid for sid in plan.positions if sid.startswith(prefix)), key=lambda s: plan.positions[s])
    paragraphs: list[list[str]] = []
    source_ids: list[list[str]] = []
    renumbered: dict[str, str] = {}
    last_para: int | None = None
    for sid in ids:
        para = plan.positions[sid][0]
        if para != last_para:
            paragraphs.append([])
            source_ids.append([])
            last_para = para
        renumbered[sid] = sentence_id(plan.pair_id, level, len(paragraphs) - 1, len(paragraphs[-1]))
        paragraphs[-1].append(texts[sid])
        source_ids[-1].append(sid)
    return paragraphs, source_ids, renumbered


def parse_plan(path: Path, options: ImportOptions, stats: RecoveryStats | None = None) -> tuple[ParsedArticle, list[ParsedAlignment]]:
    plan = read_plan(path)
    stats = stats or RecoveryStats()
    texts = recover_texts(plan, options.language, stats)
    for sid, text in texts.items():
        if not text:
            raise ImportFailed(path, plan.first_line[sid], f"sentence {sid!r} has no text")
    complex_paras, complex_ids, complex_map = rebuild(plan, COMPLEX, texts)
    simple_paras, simple_ids, simple_map = rebuild(plan, SIMPLE, texts)
    if not complex_paras or not simple_paras:
        side = "complex" if not complex_paras else "simple"
        raise ImportFailed(path, None, f"the plan has no {side} sentence")
    meta = dict(plan.meta)
    meta["format"] = "deplain-plan"
    meta["plan_file"] = path.name
    documents = [
        ParsedDocument(
            level=0,
            level_label=plan.meta.get("language_level_original") or "complex",
            paragraphs=complex_paras,
            title=plan.complex_title,
            source_ids=complex_ids,
        ),
        ParsedDocument(
            level=1,
            level_label=plan.meta.get("language_level_simple") or "simple",
            paragraphs=simple_paras,
            title=plan.simple_title,
            source_ids=simple_ids,
        ),
    ]
    if documents[0].level_label == documents[1].level_label:
        documents[0].level_label, documents[1].level_label = "complex", "simple"
    article = ParsedArticle(
        slug=plan.pair_id,
        title=plan.complex_title or plan.simple_title or plan.pair_id,
        source=str(path),
        documents=documents,
        pairs=[(0, 1, plan.pair_id)],
        meta=meta,
    )
    alignments: list[ParsedAlignment] = []
    for row in plan.rows:
        if not row.ids[COMPLEX] or not row.ids[SIMPLE]:
            continue
        for complex_id in row.ids[COMPLEX]:
            for simple_id in row.ids[SIMPLE]:
                alignments.append(
                    ParsedAlignment(
                        source=str(path),
                        line=row.line,
                        label="aligned",
                        simple_id=simple_map[simple_id],
                        complex_id=complex_map[complex_id],
                        source_label=row.alignment[:32],
                    )
                )
    return article, alignments


def plan_files(path: Path, options: ImportOptions) -> list[Path]:
    if not path.is_dir():
        if path.suffix.lower() != ".csv":
            raise ImportFailed(path, None, "expected a plan_doc_<pair_id>.csv file or a folder of them")
        return [path]
    files = []
    for file in sorted(path.rglob("*.csv"), key=lambda p: p.relative_to(path).as_posix()):
        rel = file.relative_to(path).as_posix()
        if any(fnmatch.fnmatch(rel, pattern) for pattern in options.exclude):
            continue
        files.append(file)
    return files


def parse(path: Path, options: ImportOptions) -> tuple[list[ParsedArticle], list[ParsedAlignment]]:
    articles: list[ParsedArticle] = []
    alignments: list[ParsedAlignment] = []
    for article, rows in iter_plans(path, options):
        articles.append(article)
        alignments.extend(rows)
    return articles, alignments


def iter_plans(path: Path, options: ImportOptions) -> Iterator[tuple[ParsedArticle, list[ParsedAlignment]]]:
    """Each plan file's article and gold rows, one file at a time."""
    if options.drop_short:
        raise ImportFailed(path, None, "--drop-short cannot be used with DEplain plans (it would renumber the gold sentence ids)")
    seen: dict[str, Path] = {}
    for file in plan_files(path, options):
        article, rows = parse_plan(file, options)
        if article.slug in seen:
            raise ImportFailed(file, None, f"pair {article.slug!r} appears twice in this import (also in {seen[article.slug]})")
        seen[article.slug] = file
        yield article, rows
