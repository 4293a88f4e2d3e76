#!/usr/bin/env python
"""Import benchmark: all of OneStopEnglish (189 articles x 3 levels) into PostgreSQL.

    .venv/bin/python scripts/bench_import.py            # throwaway database bench_import
    DATABASE_URL=postgres://... .venv/bin/python scripts/bench_import.py   # an existing database

Without DATABASE_URL it creates the database ``bench_import`` on
``postgres://postgres@127.0.0.1:5432`` (override with --server), migrates it, imports and drops
it again. With DATABASE_URL it imports into that database under a corpus of its own, which it
deletes at the end (keep it with --keep). ``int-utf8`` is the intermediate level
(``--exclude 'int/*'``, the importer's advice for the duplicated level).

It prints the seconds of each phase (reading files + paragraph rule + pysbd sentence
splitting; database writes in one transaction) and the rows per second.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="OneStopEnglish texts folder")
    parser.add_argument("--exclude", action="append", default=None, help="glob to skip (default: int/*)")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432", help="server for the throwaway database")
    parser.add_argument("--keep", action="store_true", help="keep the database / corpus afterwards")
    parser.add_argument("--all-levels", action="store_true", help="pair all three levels (3 pairs per article)")
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

    from curation.importers.run import PARSERS
    from curation.importers.types import ImportOptions
    from curation.importers.writer import write_import
    from curation.models import Corpus

    print(f"database: {connection.vendor} {connection.settings_dict['NAME']}" + (" (throwaway)" if throwaway else ""))
    try:
        t0 = time.perf_counter()
        call_command("migrate", verbosity=0)
        t_migrate = time.perf_counter() - t0

        corpus = f"OneStopEnglish bench {int(time.time())}"
        options = ImportOptions(corpus=corpus, format="text", language="en", exclude=exclude, all_levels=args.all_levels)
        t1, c1 = time.perf_counter(), _cpu()
        articles, alignments = PARSERS["text"](args.data, options)
        t_parse, c_parse = time.perf_counter() - t1, _cpu() - c1
        t2, c2 = time.perf_counter(), _cpu()
        with transaction.atomic():
            summary = write_import(args.data, options, articles, alignments)
        t_write, c_write = time.perf_counter() - t2, _cpu() - c2
        total = t_parse + t_write

        rows = {
            "articles": summary.articles_created,
            "documents": summary.documents,
            "paragraphs": summary.paragraphs,
            "sentences": summary.sentences,
            "pairs": summary.pairs,
        }
        n_rows = sum(rows.values())
        print(f"data: {args.data} (exclude {', '.join(exclude)})")
        print(f"migrate: {t_migrate:.2f} s (not counted)")
        print(f"import:  {total:.2f} s total = {t_parse:.2f} s parsing + sentence splitting "
              f"({t_parse / total:.0%}) + {t_write:.2f} s database writes ({t_write / total:.0%})")
        print(f"cpu:     {c_parse:.2f} s parsing (this process and its workers, {os.environ.get('IMPORT_WORKERS') or 'default'} "
              f"workers), {c_write:.2f} s in Python while writing; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        for name, count in rows.items():
            print(f"  {name:<11} {count:>7,}  {count / total:>9,.0f} rows/s")
        print(f"  {'all rows':<11} {n_rows:>7,}  {n_rows / total:>9,.0f} rows/s  ({n_rows / t_write:,.0f} rows/s while writing)")
        print("target: under 60 s -> " + ("met" if total < 60 else "MISSED"))
        if not args.keep and not throwaway:
            Corpus.objects.filter(name=corpus).delete()
    finally:
        if throwaway and not args.keep:
            connection.close()
            drop_database(args.server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
