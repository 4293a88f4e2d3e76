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
3. **writer only**: the parsed articles written again into a fresh corpus, once with
   PostgreSQL COPY for sentences and once with ``bulk_create`` batches (PostgreSQL only; SQLite
   always uses ``bulk_create``) -> rows/s of each (target: 10,000 rows/s).
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="OneStopEnglish texts folder")
    parser.add_argument("--exclude", action="append", default=None, help="glob to skip (default: int/*)")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432", help="server for the throwaway database")
    parser.add_argument("--keep", action="store_true", help="keep the database / corpus afterwards")
    parser.add_argument("--all-levels", action="store_true", help="pair all three levels (3 pairs per article)")
    parser.add_argument("--copies", type=int, default=1, help="import the corpus this many times over (renamed articles)")
    parser.add_argument("--skip-writer", action="store_true", help="leave out phase 3")
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
    from curation.importers.run import run_import
    from curation.importers.leveled_text import records
    from curation.importers.types import ImportOptions, ParsedArticle
    from curation.models import Corpus

    print(f"database: {connection.vendor} {connection.settings_dict['NAME']}" + (" (throwaway)" if throwaway else ""))
    tmp = Path(tempfile.mkdtemp(prefix="bench_import_"))
    stamp = int(time.time())
    corpora: list[str] = []
    try:
        t0 = time.perf_counter()
        call_command("migrate", verbosity=0)
        print(f"migrate: {time.perf_counter() - t0:.2f} s (not counted)")
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
              f" (sentences via {'COPY' if connection.vendor == 'postgresql' else 'bulk_create'})")

        # 2. unchanged files again
        t2, c2 = time.perf_counter(), _cpu()
        again = run_import(data, options)
        t_again, c_again = time.perf_counter() - t2, _cpu() - c2
        print(f"2. re-import unchanged: {t_again:.2f} s wall ({c_again:.2f} s CPU), {again.articles_unchanged:,} articles unchanged, "
              f"{again.articles_created} created; {_load()}; target under 15 s -> {'met' if t_again < 15 else 'MISSED'}")

        # 3. the writer alone, COPY vs bulk_create
        if not args.skip_writer:
            parsed = [r for r in records(data, options, {}) if isinstance(r, ParsedArticle)]
            modes = [True, False] if connection.vendor == "postgresql" else [False]
            for use_copy in modes:
                writer_module.USE_COPY = use_copy
                name = f"{corpus} writer {'copy' if use_copy else 'bulk'}"
                corpora.append(name)
                opts = ImportOptions(corpus=name, format="text", language="en", all_levels=args.all_levels)
                t3 = time.perf_counter()
                with transaction.atomic():
                    w = writer_module.ImportWriter(data, opts)
                    for start in range(0, len(parsed), 500):
                        articles_method(w, parsed[start : start + 500])
                    s = w.finish()
                t_w = time.perf_counter() - t3
                n = s.articles_created + s.documents + s.paragraphs + s.sentences + s.pairs
                print(f"3. writer {'COPY' if use_copy else 'bulk_create'}: {n:,} rows in {t_w:.2f} s = {n / t_w:,.0f} rows/s; {_load()}"
                      f"; target 10,000 rows/s -> {'met' if n / t_w >= 10_000 else 'MISSED'}")
            writer_module.USE_COPY = True
        print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (this process)")
        if not args.keep and not throwaway:
            Corpus.objects.filter(name__in=corpora).delete()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if throwaway and not args.keep:
            connection.close()
            drop_database(args.server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
