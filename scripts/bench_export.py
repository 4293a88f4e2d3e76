#!/usr/bin/env python
"""Export benchmark: one million PredictedAlignment rows in a throwaway PostgreSQL database,
exported as alignment TSV, JSONL and Parquet.

    .venv/bin/python scripts/bench_export.py                  # 1,000,000 rows, database bench_export
    .venv/bin/python scripts/bench_export.py --rows 100000    # smaller
    .venv/bin/python scripts/bench_export.py --keep           # keep the database for another run
    .venv/bin/python scripts/bench_export.py --reuse          # export from a kept database (no setup)

Setup (timed separately): create the database ``bench_export`` on
``postgres://postgres@127.0.0.1:5432`` (``--server``), migrate, and COPY a synthetic corpus into
it: document pairs of 100 complex and 100 simple sentences, 100 predictions per pair (80
one-to-one rephrasings, 20 one-to-two splits). Then each export runs in a fresh subprocess
(``--export FORMAT``) through ``pipeline.exports.run.run_export``, so its peak RSS is its
own. Printed per export: seconds, rows/s, peak RSS (MiB), output bytes. The database is
dropped at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DB = "bench_export"
SENTENCES_PER_SIDE = 100
ROWS_PER_PAIR = 100
POOL = 5000
WORDS = ["the", "city", "council", "said", "on", "monday", "that", "new", "bridge", "river", "people", "school", "money", "would", "be", "built", "after", "years", "of", "debate", "among", "residents", "officials", "engineers", "who", "worried", "about", "traffic", "costs", "safety", "and", "environment", "while", "supporters", "argued", "economy", "jobs", "growth", "tourism"]


def _admin(server: str):  # type: ignore[no-untyped-def]
    import psycopg

    return psycopg.connect(f"{server.rstrip('/')}/postgres", autocommit=True)


def _setup_django(url: str, exports: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["EXPORTS_DIR"] = exports
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _simplified(complex_texts: list[str], k: int) -> str:
    """Simple sentence ``k`` of a pair whose complex sentences are ``complex_texts`` (``--derived``):
    for k < 20 the first half of complex sentence k (k + 80 is its second half: the 1-2
    splits), else complex sentence k with every fourth word left out (a rephrasing)."""
    if k >= 80:
        words = complex_texts[k - 80].rstrip(".").split()
        return " ".join(words[len(words) // 2 :]).capitalize() + "."
    words = complex_texts[k].rstrip(".").split()
    if k < 20:
        return " ".join(words[: len(words) // 2]).capitalize() + "."
    return " ".join(w for i, w in enumerate(words) if i % 4 != 3).capitalize() + "."


def populate(rows: int, derived: bool = False, derived_pool: int = 100_000) -> dict[str, float]:
    """COPY a corpus and a run with ``rows`` predictions; return phase timings."""
    from django.db import connection

    from curation.models import Corpus
    from pipeline.models import AlignmentRun

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    corpus = Corpus.objects.create(name="bench", language="en")
    run = AlignmentRun.objects.create(corpus=corpus, method="bench")
    n_pairs = max(1, rows // ROWS_PER_PAIR)
    rng = random.Random(0)
    simple_level = 2 if derived else 1  # --derived: level pairs 0-2, which the adjacent-levels filter keeps
    cursor = connection.cursor().cursor  # psycopg cursor
    # ids are assigned here; sequences are moved past them afterwards
    with cursor.copy("COPY curation_article (id, corpus_id, slug, title, source, content_hash, raw_hash, meta, created_at) FROM STDIN") as copy:
        for i in range(n_pairs):
            copy.write(f"{i + 1}\t{corpus.pk}\tart{i:07d}\t\t\tx\t\t{{}}\t2026-01-01 00:00:00+00\n")
    with cursor.copy("COPY curation_document (id, article_id, level, level_label, title) FROM STDIN") as copy:
        for i in range(n_pairs):
            copy.write(f"{2 * i + 1}\t{i + 1}\t0\t0\t\n{2 * i + 2}\t{i + 1}\t{simple_level}\t{simple_level}\t\n")
    with cursor.copy("COPY curation_paragraph (id, document_id, position) FROM STDIN") as copy:
        for d in range(1, 2 * n_pairs + 1):
            copy.write(f"{d}\t{d}\t0\n")
    timings["articles_documents_s"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    with cursor.copy("COPY curation_sentence (id, document_id, paragraph_id, paragraph_position, position, doc_position, "
                     "text, token_count, source_id) FROM STDIN") as copy:
        # a pool of 5,000 texts per side, drawn in a fixed order (generating 2M random texts costs minutes)
        pools = {side: [(n, _text(rng, n)) for n in (rng.randint(*bounds) for _ in range(POOL))]
                 for side, bounds in ((False, (15, 30)), (True, (8, 16)))}
        if derived:  # complex texts from a larger pool; simple texts made from the complex ones
            pools[False] = [(n, _text(rng, n)) for n in (rng.randint(15, 30) for _ in range(derived_pool))]
        buf = io.StringIO()
        sid = 0
        complex_texts: list[str] = []
        for d in range(1, 2 * n_pairs + 1):
            pool = pools[d % 2 == 0]
            if derived and d % 2 == 1:
                complex_texts = []
            for k in range(SENTENCES_PER_SIDE):
                sid += 1
                if derived and d % 2 == 0:
                    text = _simplified(complex_texts, k)
                    n = len(text.split())
                else:
                    n, text = pool[(sid * 7919) % len(pool)]
                    complex_texts.append(text)
                buf.write(f"{sid}\t{d}\t{d}\t0\t{k}\t{k}\t{text}\t{n + 1}\t\n")
            if d % 200 == 0:
                copy.write(buf.getvalue())
                buf = io.StringIO()
        copy.write(buf.getvalue())
    timings["sentences_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    with cursor.copy("COPY curation_documentpair (id, article_id, complex_id, simple_id, pair_id, corpus_id) FROM STDIN") as copy:
        for i in range(n_pairs):
            copy.write(f"{i + 1}\t{i + 1}\t{2 * i + 1}\t{2 * i + 2}\tart{i:07d}.0_{simple_level}\t{corpus.pk}\n")
    with cursor.copy("COPY curation_predictedalignment (id, run_id, pair_id, simple_id, complex_id, label, score) FROM STDIN") as copy:
        buf = io.StringIO()
        pid = 0
        for i in range(n_pairs):
            c0 = (2 * i) * SENTENCES_PER_SIDE + 1  # first sentence id of the complex document
            s0 = (2 * i + 1) * SENTENCES_PER_SIDE + 1
            links = [(k, k) for k in range(80)] + [(k, 80 + k) for k in range(20)]
            for c, s in links:
                pid += 1
                label = "aligned" if (c + s) % 5 else "partialAligned"
                buf.write(f"{pid}\t{run.pk}\t{i + 1}\t{s0 + s}\t{c0 + c}\t{label}\t{0.5 + (pid % 50) / 100}\n")
            if i % 500 == 0:
                copy.write(buf.getvalue())
                buf = io.StringIO()
        copy.write(buf.getvalue())
    timings["pairs_predictions_s"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    for table in ("curation_article", "curation_document", "curation_paragraph", "curation_sentence",
                  "curation_documentpair", "curation_predictedalignment"):
        cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        cursor.execute(f"ANALYZE {table}")
    timings["analyze_s"] = time.perf_counter() - t3
    timings["rows"] = pid
    timings["run_id"] = run.pk
    timings["corpus_id"] = corpus.pk
    return timings


def _backend() -> str:
    import sys as _sys

    module = _sys.modules.get("curation.curate.bertscore")
    return module.backend() if module is not None else "-"  # type: ignore[attr-defined]


def _db_backend_cpu() -> tuple[int, float] | None:
    """(pid, CPU seconds) of this connection's PostgreSQL backend, read from /proc (the server runs
    on this machine): the export's queries cost CPU there too, which the export's own CPU s leaves out."""
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = int(cursor.fetchone()[0])
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return pid, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except Exception:  # noqa: BLE001 - another server, SQLite, no /proc: just not reported
        return None


def export_once(fmt: str, corpus_id: int, run_id: int, filters: dict) -> dict[str, object]:
    from pipeline.exports.run import create_export, run_export
    from pipeline.models import ExportedDataset

    params = {"format": fmt, "splits": "35/5/10", "seed": 0, "filters": filters}
    dataset = create_export(corpus_id, "auto", params, run_id=run_id)
    cpu0 = sum(getattr(resource.getrusage(resource.RUSAGE_SELF), f) for f in ("ru_utime", "ru_stime"))
    db0 = _db_backend_cpu()
    t0 = time.perf_counter()
    run_export(dataset.pk)
    seconds = time.perf_counter() - t0
    db1 = _db_backend_cpu()
    dataset = ExportedDataset.objects.get(pk=dataset.pk)
    rows = dataset.card["counts"]["rows"]
    return {
        "format": fmt, "filters": sorted(filters), "rows_in": dataset.card["counts"]["input_rows"], "rows_out": rows,
        "seconds": round(seconds, 2), "rows_per_s": round(dataset.card["counts"]["input_rows"] / seconds),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        # CPU seconds of this process and of its finished children (the encoder's one-time ONNX
        # export): on the shared machine wall time mostly measures the other sessions' load
        "cpu_s": round(sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                           for f in ("ru_utime", "ru_stime")) - cpu0, 1),
        "db_cpu_s": round(db1[1] - db0[1], 1) if db0 and db1 and db0[0] == db1[0] else None,
        "bertscore_backend": _backend(),
        "bytes": sum(f["bytes"] for f in dataset.files),
        "removed": {f["name"]: f["removed"] for f in dataset.card["filters"]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument("--reuse", action="store_true", help="export from a kept database (skip setup)")
    parser.add_argument("--formats", default="tsv,jsonl,parquet")
    parser.add_argument("--filtered", action="store_true", help="also one JSONL export with identical+gleu+flesch filters")
    parser.add_argument("--all-filters", action="store_true",
                        help="also one TSV export with every filter (--filter all: identical, adjacent_levels, gleu, flesch, bisect)")
    parser.add_argument("--derived", action="store_true",
                        help="simple sentences made from their complex sentences (halves for the splits, words left out "
                             "otherwise), complex texts from a pool of 100,000: the filters then keep and score real shares")
    parser.add_argument("--only-filtered", action="store_true", help="skip the unfiltered exports")
    parser.add_argument("--db", default=BENCH_DB, help=f"database (default {BENCH_DB}; dropped and created unless --reuse)")
    parser.add_argument("--profile", default="", help="write a cProfile of each export to PATH.FORMAT.prof (the export only, in its child)")
    parser.add_argument("--profile-clock", choices=("wall", "cpu"), default="wall",
                        help="what --profile measures: wall time (default) or this process's CPU time (the machine is shared)")
    parser.add_argument("--tracemalloc", type=int, default=0, metavar="N",
                        help="trace Python allocations in each export and print the N largest sites still held at its end")
    parser.add_argument("--export", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--filters", default="{}", help=argparse.SUPPRESS)
    parser.add_argument("--ids", default="", help=argparse.SUPPRESS)
    parser.add_argument("--exports-dir", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = f"{args.server.rstrip('/')}/{args.db}"

    if args.export:  # child process: one export
        _setup_django(url, args.exports_dir)
        corpus_id, run_id = (int(x) for x in args.ids.split(","))
        profiler = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile(time.process_time) if args.profile_clock == "cpu" else cProfile.Profile()
            profiler.enable()
        if args.tracemalloc:
            import tracemalloc

            tracemalloc.start(8)
        result = export_once(args.export, corpus_id, run_id, json.loads(args.filters))
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(f"{args.profile}.{args.export}.prof")
        if args.tracemalloc:
            for stat in tracemalloc.take_snapshot().statistics("traceback")[: args.tracemalloc]:
                print(f"tracemalloc {stat.size / 2**20:.1f} MiB in {stat.count} blocks:", *stat.traceback.format()[-4:], sep="\n  ",
                      file=sys.stderr)
        print(json.dumps(result))
        return

    exports = tempfile.mkdtemp(prefix="bench-export-")
    if not args.reuse:
        with _admin(args.server) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {args.db}")
    _setup_django(url, exports)
    from django.core.management import call_command

    from pipeline.models import AlignmentRun

    if args.reuse:
        run = AlignmentRun.objects.get(method="bench")
        info: dict[str, float] = {"rows": run.predictions.count(), "run_id": run.pk, "corpus_id": run.corpus_id}
    else:
        t0 = time.perf_counter()
        call_command("migrate", verbosity=0)
        migrate_s = time.perf_counter() - t0
        info = populate(args.rows, derived=args.derived)
        info["migrate_s"] = migrate_s
        setup = {k: round(v, 2) if isinstance(v, float) else v for k, v in info.items()}
        print(f"setup: {json.dumps(setup)}")
    from django.db import connections

    connections.close_all()
    ids = f"{int(info['corpus_id'])},{int(info['run_id'])}"
    plans: list[tuple[str, dict]] = [] if args.only_filtered else [(fmt, {}) for fmt in args.formats.split(",")]
    if args.filtered:
        plans.append(("jsonl", {"identical": {}, "gleu": {}, "flesch": {}}))
    if args.all_filters:
        from curation.curate.filters import DEFAULTS

        plans.append(("tsv", {name: {} for name in DEFAULTS if name != "test_set"}))
    print(f"{'format':8} {'filters':24} {'rows in':>9} {'rows out':>9} {'seconds':>8} {'CPU s':>7} {'rows/s':>9} {'peak RSS MiB':>12} {'MiB out':>8}")
    for fmt, filters in plans:
        out = subprocess.run(
            [sys.executable, __file__, "--server", args.server, "--db", args.db, "--export", fmt, "--filters", json.dumps(filters),
             "--ids", ids, "--exports-dir", exports, "--profile", args.profile, "--profile-clock", args.profile_clock, "--tracemalloc", str(args.tracemalloc)],
            check=True, capture_output=True, text=True,
        )
        if out.stderr and args.tracemalloc:
            print(out.stderr, file=sys.stderr)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['format']:8} {','.join(r['filters']) or '-':24} {r['rows_in']:>9} {r['rows_out']:>9} {r['seconds']:>8} {r['cpu_s']:>7} "
              f"{r['rows_per_s']:>9} {r['peak_rss_mib']:>12} {r['bytes'] / 2**20:>8.1f}"
              + (f"  removed {r['removed']}" if r["removed"] else "") + f"  bertscore {r['bertscore_backend']}  PostgreSQL backend CPU s {r.get('db_cpu_s')}")
    import shutil

    shutil.rmtree(exports, ignore_errors=True)
    if not args.keep:
        connections.close_all()
        with _admin(args.server) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")


if __name__ == "__main__":
    main()
