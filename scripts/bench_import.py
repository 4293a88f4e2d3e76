#!/usr/bin/env python
"""Import benchmark: all of OneStopEnglish (189 articles x 3 levels), optionally copied N times.

    .venv/bin/python scripts/bench_import.py                      # throwaway PostgreSQL database bench_import
    DATABASE_URL=postgres://.../h_x .venv/bin/python scripts/bench_import.py   # an existing database
    DATABASE_URL=sqlite:////tmp/bench.sqlite3 .venv/bin/python scripts/bench_import.py
    .venv/bin/python scripts/bench_import.py --copies 10          # ~1,890 articles (Newsela-sized article count)

Without DATABASE_URL it creates the database ``bench_import`` on
``postgres://postgres@127.0.0.1:5432`` (override with --server), migrates it, imports and drops
it again. With DATABASE_URL it imports into that database under a corpus of its own, which it
deletes at the end (keep it with --keep). ``int-utf8`` is the intermediate level
(``--exclude 'int/*'``, the importer's advice for the duplicated level).

Phases, each printed with wall seconds, CPU seconds and the machine's load:

1. **import**: ``run_import`` exactly as the command and the import job run it (streamed in
   batches, one transaction); the time inside the writer is measured separately -> writer rows/s.
2. **re-import unchanged**: the same folder again; articles are recognised by the sha256 of
   their files' raw bytes before any parsing (target: under 15 s).
3. **writer only**: the parsed articles written again into a fresh corpus (rolled back,
   ``--writer-repeats`` times, best and median shown), paragraphs and sentences without model
   objects (PostgreSQL COPY, SQLite executemany) and with ``bulk_create`` batches -> rows/s of
   each (target: 10,000 rows/s).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "onestopenglish" / "texts"
BENCH_DB = "bench_import"


def _admin_connect(server: str):  # type: ignore[no-untyped-def]
    import psycopg

    return psycopg.connect(f"{server.rstrip('/')}/postgres", autocommit=True)


def create_database(server: str) -> str:
    with _admin_connect(server) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {BENCH_DB}")
    return f"{server.rstrip('/')}/{BENCH_DB}"


def drop_database(server: str) -> None:
    with _admin_connect(server) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def copy_corpus(data: Path, copies: int, exclude: list[str], into: Path) -> Path:
    """``copies`` renamed copies of the leveled files (article ``x`` -> ``x c3``), excluded folders left out."""
    import fnmatch

    for file in sorted(data.rglob("*.txt")):
        rel = file.relative_to(data).as_posix()
        if any(fnmatch.fnmatch(rel, pattern) for pattern in exclude):
            continue
        stem, _, level = file.name.rpartition("-")
        for n in range(copies):
            target = into / file.parent.relative_to(data) / (f"{stem} c{n}-{level}" if n else file.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, target)
    return into


def jsonl_memory(megabytes: int, tmp: Path, corpus: str) -> None:
    """Generate a JSONL of about ``megabytes`` MB (distinct pairs of ~2 KB) and import it with the command."""
    import json
    import subprocess

    path = tmp / "big.jsonl"
    n = 0
    with path.open("w", encoding="utf-8") as out:
        while out.tell() < megabytes * 1024 * 1024:
            complex_side = [[f"Article {n} paragraph {p} says that sentence {s} is long enough to be a real one." for s in range(4)] for p in range(5)]
            simple_side = [[f"Article {n} part {p} is short, {s}." for s in range(3)] for p in range(4)]
            out.write(json.dumps({"pair_id": f"big{n}", "complex": complex_side, "simple": simple_side}) + "\n")
            n += 1
    size = path.stat().st_size / 1024**2
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "import_corpus", str(path), "--format", "jsonl", "--corpus", corpus],
        capture_output=True, text=True, check=False,
    )
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"jsonl: {size:.0f} MB, {n:,} pairs ({n * 32:,} sentences) in {wall:.1f} s = {n / wall:,.0f} pairs/s; "
          f"peak memory of import_corpus {peak:.0f} MiB; {_load()}")
    print("   " + (done.stdout.strip() or done.stderr.strip())[-300:])


class _Rollback(Exception):
    """Leaves a writer-only run's transaction without a trace."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="OneStopEnglish texts folder")
    parser.add_argument("--exclude", action="append", default=None, help="glob to skip (default: int/*)")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432", help="server for the throwaway database")
    parser.add_argument("--keep", action="store_true", help="keep the database / corpus afterwards")
    parser.add_argument("--all-levels", action="store_true", help="pair all three levels (3 pairs per article)")
    parser.add_argument("--copies", type=int, default=1, help="import the corpus this many times over (renamed articles)")
    parser.add_argument("--skip-writer", action="store_true", help="leave out phase 3")
    parser.add_argument("--jsonl-mb", type=int, default=0,
                        help="instead: import a generated JSONL of this many MB with import_corpus in a child process (time, peak memory)")
    parser.add_argument("--writer-repeats", type=int, default=3, help="phase 3 runs per mode (rolled back; best and median shown)")
    args = parser.parse_args()
    if not args.data.is_dir():
        print(f"no data at {args.data}", file=sys.stderr)
        return 2
    exclude = args.exclude or ["int/*"]

    throwaway = "DATABASE_URL" not in os.environ
    if throwaway:
        os.environ["DATABASE_URL"] = create_database(args.server)
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction

    from curation.importers import writer as writer_module
    from curation.importers.leveled_text import records
    from curation.importers.run import run_import
    from curation.importers.types import ImportOptions, ParsedArticle, UnchangedArticle
    from curation.models import Corpus

    print(f"database: {connection.vendor} {connection.settings_dict['NAME']}" + (" (throwaway)" if throwaway else ""))
    tmp = Path(tempfile.mkdtemp(prefix="bench_import_"))
    stamp = int(time.time())
    corpora: list[str] = []
    try:
        t0 = time.perf_counter()
        call_command("migrate", verbosity=0)
        print(f"migrate: {time.perf_counter() - t0:.2f} s (not counted)")
        if args.jsonl_mb:
            corpora.append(f"JSONL bench {stamp}")
            jsonl_memory(args.jsonl_mb, tmp, corpora[-1])
            return 0
        data = args.data if args.copies == 1 else copy_corpus(args.data, args.copies, exclude, tmp / "texts")
        print(f"data: {data} (exclude {', '.join(exclude)}; {args.copies} cop{'y' if args.copies == 1 else 'ies'})")

        in_writer = {"seconds": 0.0}
        articles_method = writer_module.ImportWriter.articles

        def timed_articles(self, batch):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            articles_method(self, batch)
            in_writer["seconds"] += time.perf_counter() - started

        writer_module.ImportWriter.articles = timed_articles  # type: ignore[method-assign]

        # 1. the import as the product runs it
        corpus = f"OneStopEnglish bench {stamp}"
        corpora.append(corpus)
        options = ImportOptions(corpus=corpus, format="text", language="en", exclude=exclude, all_levels=args.all_levels)
        t1, c1 = time.perf_counter(), _cpu()
        summary = run_import(data, options)
        total, cpu = time.perf_counter() - t1, _cpu() - c1
        rows = {"articles": summary.articles_created, "documents": summary.documents, "paragraphs": summary.paragraphs,
                "sentences": summary.sentences, "pairs": summary.pairs}
        n_rows = sum(rows.values())
        t_write = in_writer["seconds"]
        print(f"1. import:   {total:.2f} s wall ({cpu:.2f} s CPU incl. splitting workers), of which {t_write:.2f} s in the writer; {_load()}")
        print("   rows: " + ", ".join(f"{name} {count:,}" for name, count in rows.items()) + f" = {n_rows:,}")
        print(f"   {n_rows / total:,.0f} rows/s overall, writer {n_rows / t_write:,.0f} rows/s"
              f" (paragraphs and sentences via {'COPY' if connection.vendor == 'postgresql' else 'executemany'})")

        # 2. unchanged files again
        t2, c2 = time.perf_counter(), _cpu()
        again = run_import(data, options)
        t_again, c_again = time.perf_counter() - t2, _cpu() - c2
        print(f"2. re-import unchanged: {t_again:.2f} s wall ({c_again:.2f} s CPU), {again.articles_unchanged:,} articles unchanged, "
              f"{again.articles_created} created; {_load()}; target under 15 s -> {'met' if t_again < 15 else 'MISSED'}")

        # 3. the writer alone, COPY vs bulk_create
        if not args.skip_writer:
            parsed: list[ParsedArticle | UnchangedArticle] = [r for r in records(data, options, {}) if isinstance(r, ParsedArticle)]
            modes = [True, False]
            for use_copy in modes:
                writer_module.USE_COPY = use_copy
                name = f"{corpus} writer {'copy' if use_copy else 'bulk'}"
                opts = ImportOptions(corpus=name, format="text", language="en", all_levels=args.all_levels)
                walls: list[float] = []
                cpus: list[float] = []
                n = 0
                for _ in range(args.writer_repeats):
                    t3, c3 = time.perf_counter(), time.process_time()
                    try:
                        with transaction.atomic():
                            w = writer_module.ImportWriter(data, opts)
                            for start in range(0, len(parsed), 500):
                                articles_method(w, parsed[start : start + 500])
                            s = w.finish()
                            n = s.articles_created + s.documents + s.paragraphs + s.sentences + s.pairs
                            raise _Rollback
                    except _Rollback:
                        pass
                    walls.append(time.perf_counter() - t3)
                    cpus.append(time.process_time() - c3)
                best = min(walls)
                fast = "COPY" if connection.vendor == "postgresql" else "executemany"
                print(f"3. writer {fast if use_copy else 'bulk_create'}: {n:,} rows; best of {len(walls)} {best:.2f} s = {n / best:,.0f} rows/s "
                      f"(median {sorted(walls)[len(walls) // 2]:.2f} s; this process {min(cpus):.2f} s CPU = {n / min(cpus):,.0f} rows per CPU-s); "
                      f"{_load()}; target 10,000 rows/s -> {'met' if n / best >= 10_000 else 'MISSED'}")
            writer_module.USE_COPY = True
        print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (this process)")
    finally:
        if not args.keep and not throwaway:
            Corpus.objects.filter(name__in=corpora).delete()
        shutil.rmtree(tmp, ignore_errors=True)
        if throwaway and not args.keep:
            connection.close()
            drop_database(args.server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
