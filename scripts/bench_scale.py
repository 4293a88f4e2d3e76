#!/usr/bin/env python
"""Scale benchmark: a seeded Newsela-shaped corpus built from OneStopEnglish, end to end.

    .venv/bin/python scripts/bench_scale.py                      # Newsela's size: 1,882 groups x 5 levels
    .venv/bin/python scripts/bench_scale.py --articles 100       # a small run (minutes)
    .venv/bin/python scripts/bench_scale.py --articles 100 --db h_scale --keep

Phases, each timed (wall and CPU seconds, the machine's load average next to each):

1. **build**: ``--articles`` article groups x 5 levels as Newsela-style files
   ``<slug>.en.<level>.txt``. Group ``g`` is OneStopEnglish article ``g mod 189`` (sorted by
   name), variant ``g div 189``: level 0 = advanced, 1 = intermediate (``int-utf8``), 2 =
   elementary, 3 and 4 = elementary with a seeded 15% and 30% of its paragraphs left out; a
   variant above 0 also leaves out a seeded 5% of the paragraphs of every level, so no two
   groups are the same text. All 10 level combinations are paired (``--all-levels``):
   1,882 groups give 9,410 documents and 18,820 document pairs, Newsela-Auto's shape.
2. **import** through ``run_import`` (the importer the upload page and ``import_corpus`` use).
3. **prepopulate**: paragraph links and candidate pairs for every document pair.
4. **align, 1 worker**: the default (training-free) method on every pair, chunk by chunk in
   this process (``run_inline``); the run's statistics are stored when its last chunk ends.
5. **align, 2 workers**: the same on a second run, its chunks shared by two worker
   processes (``process_chunk``, as two Celery workers would); checked: same prediction
   count as the one-worker run, no duplicate.
6. **crf**: a CRF model (``--crf-model DIR``, else a small one trained here on the
   OneStopEnglish gold-dev pairs, for speed only) on the first ``--crf-pairs`` pairs.
7. **more runs**: copies of run 1's predictions until ``--runs`` default-method runs exist
   (the issue's "five runs of 500k predictions"), each with its statistics stored as the
   run's end would store them (timed: that is the cost moved off the statistics page).
8. **export**: Auto export of run 1 (TSV, no filter) in a child process (its own peak RSS).
9. **pages**: every page and API list endpoint, in process with the Django test client
   (no network, no gunicorn), ``--repeat`` times each after one warm-up: p50 / p95 / max ms
   and SQL statements per request.

The database (``--db``, default ``bench_scale``) is dropped and created on
``postgres://postgres@127.0.0.1:5432`` (``--server``), and dropped again unless ``--keep``.
A JSON summary goes to ``--json`` if given.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OSE = ROOT.parent / "shared" / "data" / "onestopenglish"
CORPUS = "Newsela-shaped (OneStopEnglish)"
LEVEL_DIRS = ("adv", "int-utf8", "ele")
HEADERS = {"advanced", "intermediate", "elementary"}
RESULTS: dict[str, Any] = {"phases": {}, "pages": []}


def load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def phase(name: str, body: Callable[[], dict[str, Any] | None]) -> dict[str, Any]:
    load_before, cpu0, t0 = load(), _cpu(), time.perf_counter()
    extra = body() or {}
    wall = time.perf_counter() - t0
    info = {"wall_s": round(wall, 2), "cpu_s": round(_cpu() - cpu0, 2), "load_before": load_before, "load_after": load(),
            **extra}
    RESULTS["phases"][name] = info
    print(f"{name:14} {json.dumps(info)}", flush=True)
    return info


# ---- 1. the corpus files ---------------------------------------------------------------------

def _read(path: Path) -> list[str]:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("cp1252")
    lines = [line.strip().lstrip("\ufeff") for line in text.splitlines()]
    lines = [line for line in lines if line]
    if lines and lines[0].lower() in HEADERS:
        lines = lines[1:]
    return lines


def ose_articles(data: Path) -> list[tuple[str, list[list[str]]]]:
    """(slug, [adv lines, int lines, ele lines]) of every OneStopEnglish article with all three levels."""
    by_level = []
    for folder, suffix in zip(LEVEL_DIRS, ("adv", "int", "ele"), strict=True):
        by_level.append({p.name[: -len(f"-{suffix}.txt")]: p for p in (data / "texts" / folder).glob(f"*-{suffix}.txt")})
    names = sorted(set(by_level[0]) & set(by_level[1]) & set(by_level[2]))
    out = []
    for name in names:
        slug = "".join(ch if ch.isalnum() else "_" for ch in name.lower()).strip("_")
        out.append((slug, [_read(level[name]) for level in by_level]))
    return out


def _leave_out(rng: random.Random, lines: list[str], share: float) -> list[str]:
    kept = [line for line in lines if rng.random() >= share]
    return kept or lines[:1]


def build_files(folder: Path, n_groups: int, seed: int) -> dict[str, Any]:
    articles = ose_articles(OSE)
    files = 0
    for g in range(n_groups):
        slug, (adv, inter, ele) = articles[g % len(articles)]
        variant = g // len(articles)
        rng = random.Random(seed * 1_000_003 + g)
        levels = [adv, inter, ele, _leave_out(rng, ele, 0.15), _leave_out(rng, ele, 0.30)]
        if variant:
            levels = [_leave_out(rng, lines, 0.05) for lines in levels]
        for level, lines in enumerate(levels):
            (folder / f"{slug}_v{variant}.en.{level}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
            files += 1
    return {"groups": n_groups, "files": files, "source_articles": len(articles)}


# ---- Django ------------------------------------------------------------------------------------

def setup_django(url: str, exports: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["EXPORTS_DIR"] = exports
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    import config.wsgi  # noqa: F401  # as gunicorn loads the app: the start-up objects frozen out of full collections


def _admin(server: str):  # type: ignore[no-untyped-def]
    import psycopg

    return psycopg.connect(f"{server.rstrip('/')}/postgres", autocommit=True)


def worker_main(run_id: int, index: int, workers: int) -> None:
    """Child process: the chunks of ``run_id`` whose index is ``index`` mod ``workers``."""
    from pipeline.models import RunChunk
    from pipeline.services.align_corpus import process_chunk

    ids = list(RunChunk.objects.filter(run_id=run_id).order_by("index").values_list("pk", "index"))
    for pk, chunk_index in ids:
        if chunk_index % workers == index:
            process_chunk(pk)


def export_main(corpus_id: int, run_id: int, fmt: str, filters: dict[str, Any]) -> None:
    from pipeline.exports.run import create_export, run_export
    from pipeline.models import ExportedDataset

    dataset = create_export(corpus_id, "auto", {"format": fmt, "splits": "35/5/10", "seed": 0, "filters": filters}, run_id=run_id)
    t0 = time.perf_counter()
    run_export(dataset.pk)
    seconds = time.perf_counter() - t0
    dataset = ExportedDataset.objects.get(pk=dataset.pk)
    print(json.dumps({"export_id": dataset.pk, "seconds": round(seconds, 2), "rows_in": dataset.card["counts"]["input_rows"],
                      "rows_out": dataset.card["counts"]["rows"],
                      "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                      "bytes": sum(f["bytes"] for f in dataset.files)}))


def _child(args: argparse.Namespace, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, __file__, "--server", args.server, "--db", args.db, "--exports-dir", args.exports_dir,
                             *extra], stdout=subprocess.PIPE, text=True)


# ---- the phases --------------------------------------------------------------------------------

def quick_crf(out: Path) -> Path:
    """A small CRF trained on the OneStopEnglish gold-dev pairs (speed only: default emission,
    few epochs, small layers)."""
    from alignment_engine import api
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl

    dev = ROOT.parent / "shared" / "data" / "onestopenglish-gold-dev"
    pairs, gold = read_pairs_jsonl(dev / "dev_pairs.jsonl"), read_alignment_tsv(dev / "dev_gold.tsv")
    return Path(api.train(pairs, gold, out_dir=out, seed=0, device="cpu", crf_epochs=3, hidden=8, transition_hidden=4,
                          cv_folds=2))


def clone_run(source_run: Any) -> Any:
    """A new run with the same predictions (SQL copy), finished as the service finishes a run."""
    from django.db import connection

    from pipeline.models import AlignmentRun, Job, PredictedAlignment
    from pipeline.services import corpus_stats

    job = Job.objects.create(kind=Job.Kind.ALIGN_CORPUS, status=Job.Status.SUCCEEDED, corpus=source_run.corpus,
                             params={**source_run.params, "copy_of": source_run.pk}, result=source_run.job.result)
    run = AlignmentRun.objects.create(corpus=source_run.corpus, method=source_run.method, job=job,
                                      params={**source_run.params, "copy_of": source_run.pk})
    table = PredictedAlignment._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} (run_id, pair_id, simple_id, complex_id, label, score) "  # noqa: S608
                       f"SELECT %s, pair_id, simple_id, complex_id, label, score FROM {table} WHERE run_id = %s",
                       [run.pk, source_run.pk])
        cursor.execute(f"ANALYZE {table}")  # as autovacuum would: else the planner takes the new run for empty
    AlignmentRun.objects.filter(pk=run.pk).update(prediction_count=source_run.prediction_count)
    run.refresh_from_db()
    t0 = time.perf_counter()
    corpus_stats.store_run_stats(run)
    return run, time.perf_counter() - t0


def _chunk_span(run: Any) -> float:
    """Seconds from the first chunk's start to the last chunk's end (worker start-up excluded)."""
    from django.db.models import Max, Min

    span = run.chunks.aggregate(start=Min("started_at"), end=Max("finished_at"))
    return max(1e-6, (span["end"] - span["start"]).total_seconds())


def positional_run(corpus: Any, template: Any) -> Any:
    """A run over every document pair with SQL-made predictions (simple sentence k <- complex
    sentence k, every fifth partialAligned): the row count and shape of a whole-corpus run
    without its alignment time (``--align-pairs`` below the corpus)."""
    from django.db import connection

    from curation.models import DocumentPair, Sentence
    from pipeline.models import AlignmentRun, Job, PredictedAlignment

    job = Job.objects.create(kind=Job.Kind.ALIGN_CORPUS, status=Job.Status.SUCCEEDED, corpus=corpus,
                             params={**template.params, "positional": True})
    run = AlignmentRun.objects.create(corpus=corpus, method=template.method, job=job, params={**template.params, "positional": True})
    table, pair, sentence = PredictedAlignment._meta.db_table, DocumentPair._meta.db_table, Sentence._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (run_id, pair_id, simple_id, complex_id, label, score) "  # noqa: S608
            f"SELECT %s, p.id, s.id, c.id, CASE WHEN s.doc_position %% 5 = 4 THEN 'partialAligned' ELSE 'aligned' END, 0.9 "
            f"FROM {pair} p JOIN {sentence} s ON s.document_id = p.simple_id "
            f"JOIN {sentence} c ON c.document_id = p.complex_id AND c.doc_position = s.doc_position WHERE p.corpus_id = %s",
            [run.pk, corpus.pk])
        cursor.execute(f"ANALYZE {table}")
    AlignmentRun.objects.filter(pk=run.pk).update(prediction_count=PredictedAlignment.objects.filter(run=run).count())
    run.refresh_from_db()
    return run


def copy_corpus(n_groups: int, seed: int) -> dict[str, Any]:
    """``--synthetic``: a Newsela-shaped corpus written with COPY, not through the importer:
    ``n_groups`` articles x 5 levels, 20-38 sentences per document (29 on average: 271k for
    1,882 groups) in paragraphs of 3, every two levels paired (10 pairs per group). For the
    page timings at full size when importing and aligning it would not fit the time."""
    from django.db import connection

    from curation.models import Corpus, ImportRecord

    rng = random.Random(seed)
    words = ["the", "city", "council", "said", "on", "monday", "that", "a", "new", "bridge", "over", "the", "river", "would", "be", "built", "after", "years", "of", "debate", "among", "residents", "officials", "engineers", "who", "worried", "about", "traffic", "costs", "safety", "and", "the", "environment"]
    pool = [" ".join(rng.choice(words) for _ in range(rng.randint(6, 24))).capitalize() + "." for _ in range(20000)]
    corpus = Corpus.objects.create(name=CORPUS, language="en", kind=Corpus.Kind.NEWS)
    cursor = connection.cursor().cursor
    with cursor.copy("COPY curation_article (id, corpus_id, slug, title, source, content_hash, raw_hash, meta, created_at) FROM STDIN") as copy:
        for g in range(n_groups):
            copy.write(f"{g + 1}\t{corpus.pk}\tgroup{g:05d}\tGroup {g}\tbench\th{g}\t\t{{}}\t2026-01-01 00:00:00+00\n")
    with cursor.copy("COPY curation_document (id, article_id, level, level_label, title) FROM STDIN") as copy:
        for g in range(n_groups):
            for level in range(5):
                copy.write(f"{5 * g + level + 1}\t{g + 1}\t{level}\t{level}\t\n")
    sentence_id = paragraph_id = 0
    with cursor.copy("COPY curation_paragraph (id, document_id, position) FROM STDIN") as pcopy:
        paragraphs = []
        for doc in range(1, 5 * n_groups + 1):
            n = rng.randint(20, 38)
            for p in range((n + 2) // 3):
                paragraph_id += 1
                pcopy.write(f"{paragraph_id}\t{doc}\t{p}\n")
                paragraphs.append((doc, paragraph_id, p, min(3, n - 3 * p)))
    with cursor.copy("COPY curation_sentence (id, document_id, paragraph_id, paragraph_position, position, doc_position, "
                     "text, token_count, source_id) FROM STDIN") as copy:
        position_in_doc: dict[int, int] = {}
        for doc, pid, p, n in paragraphs:
            for k in range(n):
                sentence_id += 1
                d = position_in_doc.get(doc, 0)
                position_in_doc[doc] = d + 1
                text = pool[(sentence_id * 7919) % len(pool)]
                copy.write(f"{sentence_id}\t{doc}\t{pid}\t{p}\t{k}\t{d}\t{text}\t{len(text.split()) + 1}\t\n")
    pair_id = 0
    with cursor.copy("COPY curation_documentpair (id, article_id, complex_id, simple_id, pair_id, corpus_id) FROM STDIN") as copy:
        for g in range(n_groups):
            for a in range(5):
                for b in range(a + 1, 5):
                    pair_id += 1
                    copy.write(f"{pair_id}\t{g + 1}\t{5 * g + a + 1}\t{5 * g + b + 1}\tgroup{g:05d}.{a}_{b}\t{corpus.pk}\n")
    for table in ("curation_article", "curation_document", "curation_paragraph", "curation_sentence", "curation_documentpair"):
        cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        cursor.execute(f"ANALYZE {table}")
    ImportRecord.objects.create(corpus=corpus, format="bench-copy", source="bench_scale --synthetic")
    return {"groups": n_groups, "documents": 5 * n_groups, "sentences": sentence_id, "pairs": pair_id}


def page_urls(corpus: Any, runs: list[Any], export_id: int | None) -> list[tuple[str, str]]:
    from django.urls import reverse

    from curation.models import Article, DocumentPair
    from pipeline.models import ModelVersion

    article = Article.objects.filter(corpus=corpus).order_by("slug").first()
    pair = DocumentPair.objects.filter(corpus=corpus).order_by("pk").last()
    n_articles = Article.objects.filter(corpus=corpus).count()
    if article is None or pair is None:
        raise SystemExit(f"corpus {corpus} has no article or document pair")
    c = corpus.pk
    urls = [
        ("landing", reverse("home")),
        ("corpora", reverse("curation:corpus_list")),
        ("corpus page", reverse("curation:corpus_detail", args=[c])),
        ("corpus page, last", reverse("curation:corpus_detail", args=[c]) + f"?page={max(1, (n_articles + 24) // 25)}"),
        ("corpus page, search", reverse("curation:corpus_detail", args=[c]) + "?q=amazon"),
        ("article", reverse("curation:article_detail", args=[article.pk])),
        ("pair", reverse("curation:pair_detail", args=[pair.pk])),
        ("import", reverse("pipeline:import_upload")),
        ("stats, reference", reverse("pipeline:corpus_stats", args=[c]) + "?source=reference"),
        ("stats, verified", reverse("pipeline:corpus_stats", args=[c]) + "?source=verified"),
        *[(f"stats, run {r.pk}", reverse("pipeline:corpus_stats", args=[c]) + f"?source=run:{r.pk}") for r in runs],
        ("jobs", reverse("pipeline:job_list")),
        ("job start", reverse("pipeline:job_start") + f"?corpus={c}"),
        ("job (align)", reverse("pipeline:job_detail", args=[runs[0].job_id])),
        ("job progress", reverse("pipeline:job_progress", args=[runs[0].job_id])),
        ("models", reverse("pipeline:model_list")),
        ("exports", reverse("pipeline:export_list") + f"?corpus={c}"),
        ("labeling home", reverse("annotation:home")),
        ("labeling job new", reverse("annotation:job_new")),
        ("correct index", reverse("annotation:correct_index")),
        ("correct pair", reverse("annotation:correct_pair", args=[pair.pk])),
        ("annotation stats", reverse("annotation:stats_index")),
        ("verify", reverse("annotation:verify_index")),
        ("evaluation", reverse("evaluation:home")),
        ("api corpora", "/api/corpora/"),
        ("api articles", f"/api/articles/?corpus={c}"),
        ("api articles, last", f"/api/articles/?corpus={c}&page={max(1, (n_articles + 49) // 50)}"),
        ("api documents", "/api/documents/"),
        ("api pairs", f"/api/pairs/?corpus={c}"),
        ("api pair text", f"/api/pairs/{pair.pk}/text/"),
        ("api runs", f"/api/pipeline/runs/?corpus={c}"),
        ("api labeling jobs", "/api/annotation/jobs/"),
        ("api studies", "/api/annotation/evaluation/studies/"),
    ]
    model = ModelVersion.objects.order_by("-pk").first()
    if model is not None:
        urls.append(("model", reverse("pipeline:model_detail", args=[model.pk])))
    if export_id is not None:
        urls += [("export", reverse("pipeline:export_detail", args=[export_id])),
                 ("export stats", reverse("pipeline:export_stats", args=[export_id]))]
    return urls


def time_pages(urls: list[tuple[str, str]], repeat: int) -> list[dict[str, Any]]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from accounts.roles import Role, grant

    user, _ = get_user_model().objects.get_or_create(username="bench-admin", defaults={"is_staff": True, "is_superuser": True})
    for role in Role:
        grant(user, role)
    client = Client()
    client.force_login(user)
    rows = []
    for name, url in urls:
        first = client.get(url)
        times = []
        queries = 0
        for _ in range(repeat):
            with CaptureQueriesContext(connection) as captured:
                t0 = time.perf_counter()
                response = client.get(url)
                times.append((time.perf_counter() - t0) * 1000)
            queries = len(captured.captured_queries)
        times.sort()
        p95 = times[min(len(times) - 1, max(0, round(0.95 * len(times)) - 1))]
        row = {"page": name, "url": url, "status": response.status_code, "first_status": first.status_code, "p50_ms": round(statistics.median(times), 1),
               "p95_ms": round(p95, 1), "max_ms": round(times[-1], 1), "queries": queries, "load": load()}
        rows.append(row)
        print(f"  {name:22} {response.status_code} p50 {row['p50_ms']:8.1f} ms  p95 {row['p95_ms']:8.1f} ms  "
              f"max {row['max_ms']:8.1f} ms  {queries:3} queries  load {row['load']}", flush=True)
    return rows


def finish(args: argparse.Namespace, corpus: Any, runs: list[Any], export_id: int | None) -> None:
    """Time every page and API list, write --json, and drop the database unless --keep."""
    from django.db import connections

    print("pages (in process, Django test client):", flush=True)
    RESULTS["pages"] = time_pages(page_urls(corpus, runs, export_id), args.repeat)
    RESULTS["load_end"] = load()
    slow = [p["page"] for p in RESULTS["pages"] if p["p95_ms"] >= 300]
    print(f"pages at or over 300 ms p95: {', '.join(slow) or 'none'}; load {load()}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(RESULTS, indent=1) + "\n", encoding="utf-8")
    connections.close_all()
    if not args.keep:
        with _admin(args.server) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")


def synthetic_main(args: argparse.Namespace) -> None:
    from curation.models import Corpus
    from pipeline.models import AlignmentRun, Job
    from pipeline.services import align_corpus, corpus_stats

    phase("copy corpus", lambda: copy_corpus(args.articles, args.seed))
    corpus = Corpus.objects.get(name=CORPUS)
    runs: list[Any] = []

    def make_runs() -> dict[str, Any]:
        method = align_corpus.resolve_model(corpus).method
        template = AlignmentRun(corpus=corpus, method=method, params={"method": method})
        first = positional_run(corpus, template)
        t0 = time.perf_counter()
        corpus_stats.store_run_stats(first)
        times = [time.perf_counter() - t0]
        Job.objects.filter(pk=first.job_id).update(result={"predictions": first.prediction_count})
        first.refresh_from_db()
        runs.append(first)
        while len(runs) < args.runs:
            run, seconds = clone_run(runs[0])
            runs.append(run)
            times.append(seconds)
        return {"runs": len(runs), "predictions_per_run": first.prediction_count, "store_stats_s": [round(t, 2) for t in times]}

    phase("runs (SQL)", make_runs)
    finish(args, corpus, runs, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, default=1882, help="article groups (x 5 levels, 10 pairs each)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--db", default="bench_scale", help="database (dropped and created)")
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument("--runs", type=int, default=5, help="default-method runs for the page timings")
    parser.add_argument("--chunk-size", type=int, default=20)
    parser.add_argument("--crf-pairs", type=int, default=20, help="pairs aligned with the CRF (0: skip)")
    parser.add_argument("--crf-model", default="", help="a trained CRF model directory (else a quick one is trained)")
    parser.add_argument("--align-pairs", type=int, default=0,
                        help="align only the first N pairs (0: all); the runs for the pages are then SQL-made over all pairs")
    parser.add_argument("--prepopulate-pairs", type=int, default=0, help="pre-populate only the first N pairs (0: all)")
    parser.add_argument("--skip-prepopulate", action="store_true")
    parser.add_argument("--repeat", type=int, default=20, help="requests per page after a warm-up")
    parser.add_argument("--synthetic", action="store_true",
                        help="COPY a Newsela-shaped corpus and SQL-made runs (no import, pre-population or aligner): page timings at full size")
    parser.add_argument("--reuse", action="store_true", help="time the pages of a kept database only (after --keep)")
    parser.add_argument("--json", default="", help="write the results here")
    parser.add_argument("--worker", default="", help=argparse.SUPPRESS)
    parser.add_argument("--export", default="", help=argparse.SUPPRESS)
    parser.add_argument("--exports-dir", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = f"{args.server.rstrip('/')}/{args.db}"

    if args.worker:  # child: one alignment worker
        setup_django(url, args.exports_dir)
        run_id, index, workers = (int(x) for x in args.worker.split(","))
        worker_main(run_id, index, workers)
        return
    if args.export:  # child: one export
        setup_django(url, args.exports_dir)
        corpus_id, run_id, fmt, filters = args.export.split(",", 3)
        export_main(int(corpus_id), int(run_id), fmt, json.loads(filters))
        return

    RESULTS["args"] = vars(args)
    RESULTS["load_start"] = load()
    if args.reuse:
        args.exports_dir = tempfile.mkdtemp(prefix="bench-scale-")
        setup_django(url, args.exports_dir)
        from curation.models import Corpus
        from pipeline.models import AlignmentRun, ExportedDataset

        corpus = Corpus.objects.get(name=CORPUS)
        kept = list(AlignmentRun.objects.filter(corpus=corpus, prediction_count__gt=0).exclude(method="crf").order_by("-pk")[: args.runs])
        kept_export = ExportedDataset.objects.filter(corpus=corpus).order_by("-pk").first()
        print(f"pages of the kept database {args.db}, load {load()}:", flush=True)
        RESULTS["pages"] = time_pages(page_urls(corpus, kept[::-1], kept_export.pk if kept_export else None), args.repeat)
        slow = [p["page"] for p in RESULTS["pages"] if p["p95_ms"] >= 300]
        print(f"pages at or over 300 ms p95: {', '.join(slow) or 'none'}; load {load()}", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(RESULTS, indent=1) + "\n", encoding="utf-8")
        return
    print(f"bench_scale: {args.articles} groups, db {args.db}, load {load()}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    files = work / "files"
    files.mkdir()
    args.exports_dir = str(work / "exports")
    os.makedirs(args.exports_dir)
    if not args.synthetic:
        phase("build", lambda: build_files(files, args.articles, args.seed))

    with _admin(args.server) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {args.db}")
    setup_django(url, args.exports_dir)
    from django.core.management import call_command
    from django.db import connections

    def migrate() -> None:
        call_command("migrate", verbosity=0)

    phase("migrate", migrate)
    if args.synthetic:
        synthetic_main(args)
        return

    from curation.importers.run import run_import
    from curation.importers.types import ImportOptions
    from curation.models import Corpus, Document, DocumentPair, Sentence
    from pipeline.models import ModelVersion, PredictedAlignment
    from pipeline.services import align_corpus

    def do_import() -> dict[str, Any]:
        summary = run_import(files, ImportOptions(corpus=CORPUS, format="text", language="en", all_levels=True))
        return {"summary": summary.describe()[:300]}

    phase("import", do_import)

    def do_reimport() -> dict[str, Any]:  # the same files again: recognised by their hash, nothing written
        summary = run_import(files, ImportOptions(corpus=CORPUS, format="text", language="en", all_levels=True))
        return {"articles_created": summary.articles_created, "articles_replaced": summary.articles_replaced,
                "articles_unchanged": summary.articles_unchanged, "summary": summary.describe()[:300]}

    phase("re-import unchanged", do_reimport)
    corpus = Corpus.objects.get(name=CORPUS)
    pair_pks = list(DocumentPair.objects.filter(corpus=corpus).order_by("pk").values_list("pk", flat=True))
    RESULTS["corpus"] = {"documents": Document.objects.filter(article__corpus=corpus).count(), "pairs": len(pair_pks),
                         "sentences": Sentence.objects.filter(document__article__corpus=corpus).count()}
    print(f"corpus         {json.dumps(RESULTS['corpus'])}", flush=True)

    if not args.skip_prepopulate:
        from pipeline.services.prepopulate import PrepopulateOptions, prepopulate

        def do_prepopulate() -> dict[str, Any]:
            subset = pair_pks[: args.prepopulate_pairs] if args.prepopulate_pairs else pair_pks
            stats = prepopulate(subset, PrepopulateOptions(score_with=""))
            return {"pairs": len(subset), "stats": {k: v for k, v in vars(stats).items() if isinstance(v, int | float | str)}}

        phase("prepopulate", do_prepopulate)

    choice = align_corpus.resolve_model(corpus)
    runs: list[Any] = []
    align_pks = pair_pks[: args.align_pairs] if args.align_pairs else pair_pks

    def align_one() -> dict[str, Any]:
        run = align_corpus.plan_run(corpus, choice, chunk_size=args.chunk_size, pair_pks=align_pks)
        t0 = time.perf_counter()
        align_corpus.run_inline(run)
        seconds = time.perf_counter() - t0
        run.refresh_from_db()
        runs.append(run)
        return {"method": run.method, "pairs": len(align_pks), "predictions": run.prediction_count,
                "pairs_per_s": round(len(align_pks) / seconds, 1), "pairs_per_s_chunks": round(len(align_pks) / _chunk_span(run), 1),
                "stats_stored": bool(run.stats)}

    phase("align 1 worker", align_one)

    def align_two() -> dict[str, Any]:
        run = align_corpus.plan_run(corpus, choice, chunk_size=args.chunk_size, pair_pks=align_pks)
        connections.close_all()
        t0 = time.perf_counter()
        children = [_child(args, "--worker", f"{run.pk},{k},2") for k in range(2)]
        for child in children:
            child.communicate()
            if child.returncode:
                raise SystemExit(f"worker failed with {child.returncode}")
        seconds = time.perf_counter() - t0
        run.refresh_from_db()
        runs.append(run)
        rows = PredictedAlignment.objects.filter(run=run)
        distinct = rows.values("simple_id", "complex_id").distinct().count()
        return {"pairs": len(align_pks), "predictions": rows.count(), "distinct": distinct,
                "same_as_1_worker": rows.count() == runs[0].prediction_count, "pairs_per_s": round(len(align_pks) / seconds, 1),
                "pairs_per_s_chunks": round(len(align_pks) / _chunk_span(run), 1), "workers": 2,
                "stats_stored": bool(run.stats)}

    phase("align 2 workers", align_two)

    if args.crf_pairs:
        def crf() -> dict[str, Any]:
            t0 = time.perf_counter()
            model_dir = Path(args.crf_model) if args.crf_model else quick_crf(work / "crf")
            train_s = time.perf_counter() - t0
            mv = ModelVersion.objects.create(name="bench CRF", method="crf", language="en", path=str(model_dir))
            subset = pair_pks[: args.crf_pairs]
            run = align_corpus.plan_run(corpus, align_corpus.ModelChoice("crf", mv), chunk_size=args.chunk_size, pair_pks=subset)
            t1 = time.perf_counter()
            align_corpus.run_inline(run)
            seconds = time.perf_counter() - t1
            run.refresh_from_db()
            return {"model": "given" if args.crf_model else "quick (trained here)", "train_s": round(train_s, 1),
                    "pairs": len(subset), "predictions": run.prediction_count, "pairs_per_s": round(len(subset) / seconds, 3)}

        phase("crf", crf)

    def more_runs() -> dict[str, Any]:
        nonlocal runs
        made = "copies of run 1"
        if len(align_pks) < len(pair_pks):  # the aligned runs cover a subset: whole-corpus runs made in SQL
            from pipeline.services import corpus_stats

            made = "SQL-made over every pair (positional)"
            aligned_runs, runs = runs, []
            first = positional_run(corpus, aligned_runs[0])
            t0 = time.perf_counter()
            corpus_stats.store_run_stats(first)
            runs.append(first)
            times = [time.perf_counter() - t0]
        else:
            times = []
        while len(runs) < args.runs:
            run, seconds = clone_run(runs[0])
            runs.append(run)
            times.append(seconds)
        return {"runs": len(runs), "made": made, "predictions_per_run": runs[0].prediction_count,
                "store_stats_s": [round(t, 2) for t in times]}

    phase("more runs", more_runs)
    connections.close_all()
    exported: dict[str, Any] = {}

    def export() -> dict[str, Any]:
        child = _child(args, "--export", f"{corpus.pk},{runs[0].pk},tsv,{{}}")
        out, _ = child.communicate()
        if child.returncode:
            raise SystemExit(f"export failed with {child.returncode}")
        exported.update(json.loads(out.strip().splitlines()[-1]))
        return dict(exported)

    phase("export", export)
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    finish(args, corpus, runs, exported.get("export_id"))


if __name__ == "__main__":
    main()
