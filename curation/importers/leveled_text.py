"""Leveled plain-text articles, one file per reading level.

File names (searched recursively under the given folder, or a single file):

- Newsela style ``<slug>.<lang>.<level>.txt``, levels 0 (original) .. 4;
- OneStopEnglish style ``<name>-adv.txt``, ``<name>-int.txt``, ``<name>-ele.txt``
  (advanced = level 0, intermediate = 1, elementary = 2).

Paragraph rule: a text is *hard-wrapped* when more than half of the lines that are followed
by another non-blank line end without sentence-final punctuation (``. ! ? : ; …`` or a
closing quote/bracket); then paragraphs are the blank-line separated blocks (lines joined
by a space). Otherwise every non-blank line is a paragraph (Newsela and OneStopEnglish
files: one paragraph per line, with or without blank lines between). A first line that only
names the level (``Intermediate``) is dropped. Sentences are split with pysbd in the corpus
language.
"""

from __future__ import annotations

import fnmatch
import multiprocessing
import os
import re
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from alignment_engine.text import split_sentences
from curation.importers.reading import digest_of, file_digest, make_slug, read_text
from curation.importers.types import (
    Expected,
    ImportFailed,
    ImportOptions,
    ParsedAlignment,
    ParsedArticle,
    ParsedDocument,
    UnchangedArticle,
)

NEWSELA = re.compile(r"^(?P<slug>.+)\.(?P<lang>[a-z]{2})\.(?P<level>\d)\.txt$")
ONESTOP = re.compile(r"^(?P<slug>.+)-(?P<level>adv|int|ele)\.txt$")
ONESTOP_LEVELS = {"adv": 0, "int": 1, "ele": 2}
LEVEL_HEADINGS = {"advanced", "intermediate", "elementary"}
LINE_END = re.compile(r"[.!?:;…][\"'”’»)\]]*$|[\"'”’»)\]]$")


def is_hard_wrapped(blocks: list[list[str]]) -> bool:
    """More than half of the lines continued on the next line stop mid-sentence."""
    inner = [line for block in blocks for line in block[:-1]]
    return bool(inner) and sum(not LINE_END.search(line) for line in inner) * 2 > len(inner)


def paragraphs_from_text(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            blocks[-1].append(line.strip())
        elif blocks[-1]:
            blocks.append([])
    blocks = [b for b in blocks if b]
    if blocks and blocks[0][0].lower() in LEVEL_HEADINGS:
        blocks[0] = blocks[0][1:]
        blocks = [b for b in blocks if b]
    if is_hard_wrapped(blocks):
        return [" ".join(b) for b in blocks]
    return [line for b in blocks for line in b]


POOL_MIN_FILES = 24  # below this, starting worker processes costs more than it saves


def _split_file(job: tuple[str, str]) -> list[list[str]]:
    """Paragraphs of sentences of one file (ImportFailed pickles, so it crosses the pool)."""
    file, language = job
    paragraphs = [split_sentences(p, language) for p in paragraphs_from_text(read_text(Path(file)))]
    return [p for p in paragraphs if p]


def _single_threaded() -> bool:
    return threading.active_count() == 1


def _workers(n_files: int) -> int:
    """Processes for sentence splitting: IMPORT_WORKERS, else one per CPU (at most 8).

    1 (no pool) for small imports, inside daemonic processes (a Celery prefork child may not
    start children) and in multi-threaded processes (forking a web server with threads
    running can copy a held lock; uploads through the page are small anyway).
    """
    configured = os.environ.get("IMPORT_WORKERS", "").strip()
    workers = int(configured) if configured.isdigit() else min(os.cpu_count() or 1, 8)
    if n_files < POOL_MIN_FILES or multiprocessing.current_process().daemon or not _single_threaded():
        return 1
    return max(1, min(workers, n_files))


def split_files(files: list[Path], language: str) -> list[list[list[str]]]:
    """Split every file into paragraphs of sentences, in file order (a process pool when large)."""
    jobs = [(str(f), language) for f in files]
    workers = _workers(len(jobs))
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(_split_file, jobs, chunksize=max(1, len(jobs) // (workers * 4))))
    return [_split_file(job) for job in jobs]


def _classify(path: Path) -> tuple[str, int, str] | None:
    match = NEWSELA.match(path.name)
    if match:
        return match["slug"], int(match["level"]), match["level"]
    match = ONESTOP.match(path.name)
    if match:
        return match["slug"], ONESTOP_LEVELS[match["level"]], match["level"]
    return None


def _groups(path: Path, options: ImportOptions) -> tuple[dict[str, dict[int, tuple[Path, str]]], dict[str, str]]:
    """The files of each article (slug -> level -> (file, label)) and the articles' names."""
    root = path if path.is_dir() else path.parent
    files = sorted(p for p in path.rglob("*.txt")) if path.is_dir() else [path]
    groups: dict[str, dict[int, tuple[Path, str]]] = {}
    titles: dict[str, str] = {}
    for file in files:
        rel = file.relative_to(root).as_posix()
        if any(fnmatch.fnmatch(rel, pattern) for pattern in options.exclude):
            continue
        found = _classify(file)
        if found is None:
            if not path.is_dir():
                raise ImportFailed(file, None, "file name matches neither <slug>.<lang>.<level>.txt nor <name>-adv|int|ele.txt")
            continue
        name, level, label = found
        slug = make_slug(name)
        other = groups.setdefault(slug, {}).get(level)
        if other is not None:
            raise ImportFailed(
                file, None, f"level {label!r} of article {name!r} also in {other[0]}; choose one with --exclude 'FOLDER/*'"
            )
        groups[slug][level] = (file, label)
        titles.setdefault(slug, name)
    for slug, levels in groups.items():
        if len(levels) < 2:
            only = next(iter(levels.values()))[0]
            raise ImportFailed(only, None, f"article {titles[slug]!r} has only one reading level; a group needs two or more")
    return groups, titles


def raw_hash(levels: dict[int, tuple[Path, str]], title: str, options: ImportOptions) -> str:
    """sha256 over the raw bytes of an article's files and the options that shape its parsing."""
    parts = ["text", title, options.language, str(options.drop_short), str(options.all_levels)]
    parts += [f"{level}:{label}:{file_digest(file)}" for level, (file, label) in sorted(levels.items())]
    return digest_of(parts)


def _source(levels: dict[int, tuple[Path, str]]) -> str:
    """An article's source: the folder of its files."""
    return str(next(iter(levels.values()))[0].parent)


PARSE_BATCH = 200  # articles split per round of the pool (bounds what is held at once)


def records(
    path: Path, options: ImportOptions, known: Mapping[str, str]
) -> Iterator[Expected | UnchangedArticle | ParsedArticle]:
    """The articles of a file or folder; those whose raw files hash as at their last import
    (``known``: slug -> raw hash) come as :class:`UnchangedArticle` without being read further."""
    groups, titles = _groups(path, options)
    yield Expected(len(groups))
    todo: list[tuple[str, str]] = []
    for slug, levels in sorted(groups.items()):
        digest = raw_hash(levels, titles[slug], options)
        if known.get(slug) == digest:
            yield UnchangedArticle(slug=slug, raw_hash=digest, source=_source(levels))
        else:
            todo.append((slug, digest))
    for start in range(0, len(todo), PARSE_BATCH):
        batch = todo[start : start + PARSE_BATCH]
        keys = [(slug, level) for slug, _ in batch for level in sorted(groups[slug])]
        texts = split_files([groups[slug][level][0] for slug, level in keys], options.language)
        split = dict(zip(keys, texts, strict=True))
        for slug, digest in batch:
            levels = groups[slug]
            documents = []
            for level, (file, label) in sorted(levels.items()):
                paragraphs = split[(slug, level)]
                if not paragraphs:
                    raise ImportFailed(file, None, "the file holds no text")
                documents.append(ParsedDocument(level=level, level_label=label, paragraphs=paragraphs, title=titles[slug]))
            yield ParsedArticle(
                slug=slug, title=titles[slug], source=_source(levels), documents=documents,
                raw_hash=digest,
            )


def parse(path: Path, options: ImportOptions) -> tuple[list[ParsedArticle], list[ParsedAlignment]]:
    return [r for r in records(path, options, {}) if isinstance(r, ParsedArticle)], []
