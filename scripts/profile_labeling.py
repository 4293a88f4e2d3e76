#!/usr/bin/env python
"""In-process cost of the labeling hot path on PostgreSQL: CPU milliseconds (this Python process
and its PostgreSQL backend) and SQL statements per request, and a cProfile of the steady state.

    .venv/bin/python scripts/profile_labeling.py --database-url postgres://postgres@127.0.0.1:5432/h_capacity_prof \\
        --redis-url redis://127.0.0.1:6379/5 --annotators 100 --questions 6 [--top 35] [--profile-out prof.txt]

Seeds the same corpus, annotators and sessions as ``bench_labeling.py`` (the database is
recreated), then drives Django's test client (production settings, DEBUG=0, CSRF enforced, Redis
as the throttle cache) in phases, each measured as a whole (``/proc`` CPU ticks are 10 ms, so
per-request reads would be noise):

- ``client`` shape, what static/js/annotation-label.js does: the labeling page once per annotator
  (it serves the question and the preloaded next one), then per question ONE answer with
  ``preload`` (it carries the following question);
- ``page`` shape, the old benchmark's: per question the labeling page and the answer.

The minimum time per question is 0 here (no waiting in-process); the path is the same as at 10 s.
The cProfile covers one more round of the client shape's answers (not in its figures). On a shared machine the CPU figures are inflated
by contention (cache misses, frequency), less than wall times are; compare runs made together.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_labeling as bench  # noqa: E402

SETTINGS = """
from config.settings import *  # noqa: F403
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
"""


def _backend_cpu_s(pid: int) -> float:
    return bench._cpu_s(pid)


class Phase:
    """Totals of one measured phase: requests, process CPU, PostgreSQL backend CPU, statements, wall."""

    def __init__(self, name: str) -> None:
        self.name, self.requests, self.cpu, self.pg, self.sql, self.wall = name, 0, 0.0, 0.0, 0, 0.0

    def row(self) -> dict[str, Any]:
        n = max(self.requests, 1)
        return {
            "phase": self.name,
            "requests": self.requests,
            "python_ms": round(1000 * self.cpu / n, 2),
            "postgres_ms": round(1000 * self.pg / n, 2),
            "sql": round(self.sql / n, 2),
            "wall_ms": round(1000 * self.wall / n, 2),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/annotation_profile")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/9")
    parser.add_argument("--annotators", type=int, default=100)
    parser.add_argument("--questions", type=int, default=6, help="answers per annotator and shape")
    parser.add_argument("--articles", type=int, default=40)
    parser.add_argument("--top", type=int, default=35, help="cProfile rows to print (0: no profile)")
    parser.add_argument("--profile-out", default="", help="write the cProfile listing here too")
    parser.add_argument("--out", default="", help="write the JSON rows here too")
    parser.add_argument("--pstats-out", default="", help="dump the cProfile statistics here (pstats binary)")
    parser.add_argument("--show-sql", action="store_true", help="print the SQL of one answer + preload request")
    parser.add_argument(
        "--profile", choices=("answer", "page"), default="answer",
        help="what cProfile covers: one more round of answers + preload, or the first labeling page (its figures then include the profiler)",
    )
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="profile-labeling-"))
    ns = argparse.Namespace(
        database_url=args.database_url, redis_url=args.redis_url, articles=args.articles, min_seconds=0
    )
    env = bench._env(ns, tmp)
    bench._recreate_database(args.database_url)
    import subprocess

    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=bench.ROOT, env=env, check=True
    )
    bench._seed_corpus(ns, env, tmp / "sessions.json", args.annotators)
    jobs = {shape: bench._seed_job(env, 0, n) for n, shape in enumerate(("client", "page", "warm-up"))}
    sessions = json.loads((tmp / "sessions.json").read_text())

    (tmp / "profile_settings.py").write_text(SETTINGS)
    os.environ.update(env, DJANGO_SETTINGS_MODULE="profile_settings")
    sys.path[:0] = [str(tmp), str(bench.ROOT)]
    import django

    django.setup()
    from django.db import connection
    from django.test import Client

    clients = []
    for key in sessions:
        c = Client(enforce_csrf_checks=True, HTTP_X_CSRFTOKEN=bench.CSRF)
        c.cookies["sessionid"] = key
        c.cookies["csrftoken"] = bench.CSRF
        clients.append(c)

    statements = [0]
    logged: list[str] | None = None

    def counter(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        statements[0] += 1
        if logged is not None:
            logged.append(sql)
        return execute(sql, params, many, context)

    def backend() -> int:
        connection.ensure_connection()
        with connection.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            return int(cur.fetchone()[0])

    rows: list[dict[str, Any]] = []
    profiler = cProfile.Profile()

    def phase(name: str, calls: Sequence[Callable[[], object]], profile: bool = False) -> None:
        p = Phase(name)
        pid = backend()
        pg0, cpu0, t0, s0 = _backend_cpu_s(pid), time.process_time(), time.perf_counter(), statements[0]
        with connection.execute_wrapper(counter):
            if profile:
                profiler.enable()
            for call in calls:
                call()
            if profile:
                profiler.disable()
        p.wall, p.cpu, p.sql = time.perf_counter() - t0, time.process_time() - cpu0, statements[0] - s0
        if backend() != pid:
            sys.exit("the database connection changed during a phase: PostgreSQL CPU unknown")
        p.pg, p.requests = _backend_cpu_s(pid) - pg0, len(calls)
        rows.append(p.row())
        print(json.dumps(rows[-1]), flush=True)

    label_url = "/annotate/jobs/{}/label/"
    labels = ["aligned", "partialAligned", "notAligned"]

    def page_tokens(c: Client, job: int) -> tuple[str, str]:
        r = c.get(label_url.format(job))
        assert r.status_code == 200, r.status_code
        shown, ahead = bench.page_tokens(r.content.decode())
        assert shown and ahead, "no question (or no preloaded one) served"
        return shown, ahead

    def post(c: Client, url: str, body: dict[str, Any]) -> dict[str, Any]:
        r = c.post(url, json.dumps(body), content_type="application/json")
        assert r.status_code == 200, (url, r.status_code, r.content[:200])
        return r.json()  # type: ignore[no-any-return]

    # --- client shape: page once (with its preload), then one answer (with preload) per question
    job = jobs["client"]
    shown: dict[int, str] = {}
    ahead: dict[int, str] = {}

    def open_page(i: int) -> None:
        shown[i], ahead[i] = page_tokens(clients[i], job)

    def answer_preload(i: int) -> None:
        body = {"token": shown[i], "label": random.choice(labels), "preload": True, "exclude": [ahead[i]]}
        nxt = post(clients[i], "/api/annotation/answers/", body)["next"]
        assert nxt and nxt["token"] not in (shown[i], ahead[i]), nxt
        shown[i], ahead[i] = ahead[i], nxt["token"]

    everyone = range(len(clients))
    # as gunicorn's worker at boot (config/wsgi.py imports the URLconf), plus what a process does once on
    # its first page (template compilation, compiled queries): one unmeasured page in a job of its own
    page_tokens(clients[0], jobs["warm-up"])
    phase(  # --profile page: this first opening is the one profiled (it serves; a reload only resumes)
        "client: labeling page (once per session)", [partial(open_page, i) for i in everyone],
        profile=args.top > 0 and args.profile == "page",
    )
    answers = [partial(answer_preload, i) for _ in range(args.questions) for i in everyone]
    phase("client: answer + preload (per question)", answers)
    if args.show_sql:
        logged = []
        with connection.execute_wrapper(counter):
            answer_preload(0)
        print(f"SQL of one answer + preload ({len(logged)} statements):")
        for n, sql in enumerate(logged, 1):
            print(f"{n:3}. {sql[:300]}")
        logged = None
    if args.top > 0 and args.profile == "answer":  # one more round under cProfile (with the profiler's overhead)
        phase(
            "client: answer + preload under cProfile", [partial(answer_preload, i) for i in everyone], profile=True
        )

    # --- page shape (the old benchmark): per question the labeling page, then the answer
    job = jobs["page"]
    # every annotator's page, then every annotator's answer, round by round: each kind measured apart
    for q in range(args.questions):
        phase(f"page shape: labeling page (per question, round {q + 1})", [partial(open_page, i) for i in everyone])
        phase(
            f"page shape: answer (per question, round {q + 1})",
            [partial(post, clients[i], "/api/annotation/answers/", {"token": shown[i], "label": "aligned"})
             for i in everyone],
        )

    summary: dict[str, Phase] = {}
    for r in rows:
        key = r["phase"].split(" (")[0]
        s = summary.setdefault(key, Phase(key))
        s.requests += r["requests"]
        s.cpu += r["python_ms"] * r["requests"] / 1000
        s.pg += r["postgres_ms"] * r["requests"] / 1000
        s.sql += round(r["sql"] * r["requests"])
        s.wall += r["wall_ms"] * r["requests"] / 1000
    print("\n| phase | requests | Python CPU ms | PostgreSQL CPU ms | SQL statements | wall ms |")
    print("|---|---|---|---|---|---|")
    for s in summary.values():
        r = s.row()
        print(
            f"| {r['phase']} | {r['requests']} | {r['python_ms']} | {r['postgres_ms']} | {r['sql']} | {r['wall_ms']} |"
        )
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print("uptime:", load)
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows, "uptime": load}, indent=2))
    if args.top > 0:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out).strip_dirs()
        stats.sort_stats("cumulative").print_stats(args.top)
        stats.sort_stats("tottime").print_stats(args.top)
        print(out.getvalue())
        if args.profile_out:
            Path(args.profile_out).write_text(out.getvalue())
        if args.pstats_out:
            profiler.dump_stats(args.pstats_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
