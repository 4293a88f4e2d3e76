#!/usr/bin/env python
"""Labeling benchmark: N concurrent annotators against gunicorn on PostgreSQL, then an audit.

    .venv/bin/python scripts/bench_labeling.py --users 50,200,1000 --duration 60 --workers 3

1. (re)creates the database named in --database-url, migrates, seeds a corpus and one logged-in
   session per annotator (users created in bulk with one password hash);
2. for each user count: a fresh job (--min-seconds, 10 by default as in production; 5 judgments
   per pair, one test question in every 5), gunicorn on loopback with the production settings
   (DEBUG=0) except that no static files are collected or served (a settings module in the temp
   dir swaps the manifest storage for the plain one, so no collectstatic) and one outer middleware
   counts the SQL statements each request executes;
3. runs locust headless from a second process (annotators start at --spawn-rate per second, each at a
   random moment of its second unless --arrivals batches, locust's own all-at-once batches; latency
   statistics are reset once all have started) doing what the page's script
   (static/js/annotation-label.js) does: GET the labeling page once (serves a question and
   carries the preloaded next one; "next" is POSTed only when the page had none), then per question: read for min-seconds + 0.5 ..
   + --think-extra s, POST the answer with ``preload`` (its response carries the question after
   the preloaded one): ONE request per question. One answer in ten is sent twice (a client retry:
   must come back as a duplicate, bringing the same following question);
4. audits the database against what the clients were told: every accepted answer stored once, no
   duplicates, no item over capacity, counters exact; then prints one table row per user count:
   req/s, p50/p95/p99 per endpoint as locust measured them (the page's over every session, ramp
   included), p50/p95 per endpoint as the gunicorn workers timed them (their access log: every
   request, ramp included, without the wait in the listen queue and the client's side), failures,
   SQL statements and CPU milliseconds per request, `uptime` load.

Exit status 1 when the audit fails. Needs PostgreSQL and Redis (throttle cache) on loopback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOKEN_RE = re.compile(r'id="lab-token" value="([^"]+)"')
PRELOAD_RE = re.compile(r'<script id="lab-preload" type="application/json">(.*?)</script>', re.S)
CSRF = "benchcsrftoken0123456789abcdefgh"  # 32 characters: an unmasked CSRF secret


def page_tokens(html: str) -> tuple[str | None, str | None]:
    """The labeling page's question token and its preloaded next question's (None when absent)."""
    shown, ahead = TOKEN_RE.search(html), PRELOAD_RE.search(html)
    preload = json.loads(ahead.group(1)) if ahead else None
    return (shown.group(1) if shown else None), (str(preload["token"]) if preload else None)

# ---------------------------------------------------------------------------------------------
# locust side (this file is also the locustfile: BENCH_ROLE=locust)
if os.environ.get("BENCH_ROLE") == "locust":
    import itertools

    import gevent  # type: ignore[import-untyped]
    from locust import FastHttpUser, events, task  # type: ignore[import-untyped]

    _SESSIONS = json.loads(Path(os.environ["BENCH_SESSIONS"]).read_text())
    _NEXT = itertools.count()
    _ACCEPTED: list[tuple[str, str]] = []
    _SENT: set[str] = set()  # answers sent; those without a response at shutdown are "in flight"
    _MIN = float(os.environ.get("BENCH_MIN_SECONDS", "10"))
    _EXTRA = float(os.environ.get("BENCH_THINK_EXTRA", "4"))
    _SPREAD = float(os.environ.get("BENCH_ARRIVAL_SPREAD", "0"))  # seconds over which each locust batch arrives
    _COUNTS = {
        "duplicates_ok": 0,
        "duplicates_bad": 0,
        "retry_next_same": 0,
        "retry_next_differs": 0,
        "errors": 0,
        "done": 0,
        "next_missing": 0,
        "gone": 0,
    }
    _PAGE_MS: list[float] = []  # the labeling page is loaded once per session, mostly during the ramp

    @events.request.add_listener
    def _on_request(name: str, response_time: float, **_kw: object) -> None:
        if name == "labeling page":
            _PAGE_MS.append(response_time)

    class Annotator(FastHttpUser):  # type: ignore[misc]
        """What static/js/annotation-label.js does: the labeling page once (with its preloaded next
        question; "next" only when it has none), then per question one answer with ``preload`` that brings the question after the preloaded one."""

        def wait_time(self) -> float:  # the reading time sits before each answer (below)
            return 0.0

        def on_start(self) -> None:
            session = _SESSIONS[next(_NEXT) % len(_SESSIONS)]
            self.headers = {
                "Cookie": f"sessionid={session}; csrftoken={CSRF}",
                "X-CSRFToken": CSRF,
                "Referer": self.host,
            }
            self.job = os.environ["BENCH_JOB"]
            # locust starts floor(rate) users together once a second; people arrive one by one
            gevent.sleep(random.uniform(0, _SPREAD))
            self.shown: str | None = None  # the question on screen
            self.ahead: str | None = None  # the preloaded one
            with self.client.get(
                f"/annotate/jobs/{self.job}/label/", headers=self.headers, name="labeling page", catch_response=True
            ) as r:
                if r.status_code != 200:
                    r.failure(f"status {r.status_code}")
                    return
                self.shown, self.ahead = page_tokens(r.text or "")
            if self.shown and not self.ahead:
                self.ahead = self._next([self.shown])

        def _next(self, exclude: list[str]) -> str | None:
            """POST next (the page's preload, or a question fetched on demand): its token or None."""
            with self.client.post(
                f"/api/annotation/jobs/{self.job}/next/",
                json={"exclude": exclude},
                headers=self.headers,
                name="next",
                catch_response=True,
            ) as r:
                if r.status_code == 204:
                    return None
                if r.status_code != 200:
                    r.failure(f"status {r.status_code}")
                    return None
                return str(r.json()["token"])

        @task
        def label(self) -> None:
            if self.shown is None:
                _COUNTS["done"] += 1
                gevent.sleep(_MIN)  # nothing left for this annotator: no hammering
                return
            token, label = self.shown, random.choice(["aligned", "partialAligned", "notAligned"])
            gevent.sleep(random.uniform(_MIN + 0.5, _MIN + max(0.5, _EXTRA)))  # reading the pair
            body = {"token": token, "label": label, "preload": True, "exclude": [self.ahead] if self.ahead else []}
            tries = 2 if random.random() < 0.1 else 1
            _SENT.add(token)
            following: list[str | None] = []
            for attempt in range(tries):
                with self.client.post(
                    "/api/annotation/answers/", json=body, headers=self.headers, name="answer", catch_response=True
                ) as r:
                    if r.status_code == 410:  # expired: the page drops its preload and asks "next"
                        _COUNTS["gone"] += 1
                        r.success()
                        self.shown = self._next([token])
                        self.ahead = self._next([self.shown]) if self.shown else None
                        return
                    if r.status_code != 200:
                        _COUNTS["errors"] += 1
                        r.failure(f"status {r.status_code}: {(r.text or '')[:120]}")
                        return
                    result = r.json()
                    following.append(result["next"]["token"] if result["next"] else None)
                    if attempt == 0 and not result["duplicate"]:
                        _ACCEPTED.append((token, label))
                    elif attempt == 1:
                        _COUNTS["duplicates_ok" if result["duplicate"] else "duplicates_bad"] += 1
                        # the retry resumes the question the first answer reserved, never a third one
                        # (when the first brought none, the retry may find a question freed meanwhile)
                        same = following[0] is None or following[0] == following[1]
                        _COUNTS["retry_next_same" if same else "retry_next_differs"] += 1
            if self.ahead:  # the usual case: show the preloaded question, keep the one the answer brought
                self.shown, self.ahead = self.ahead, following[-1]
            else:  # nothing was preloaded: the answer brought the question to show; preload as the page does
                self.shown = following[-1]
                self.ahead = self._next([self.shown]) if self.shown else None
            if self.shown is None:
                self.shown = self._next([token])  # the page asks once more before saying "done"
            if following[-1] is None and self.shown is not None:
                _COUNTS["next_missing"] += 1

    def _percentile(values: list[float], q: float) -> float:
        if not values:
            return 0.0
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @events.test_stop.add_listener
    def _dump(environment, **_kw) -> None:  # type: ignore[no-untyped-def]
        stats = {}
        for name, method in (("labeling page", "GET"), ("next", "POST"), ("answer", "POST")):
            entry = environment.stats.get(name, method)
            stats[name] = {
                "requests": entry.num_requests,
                "failures": entry.num_failures,
                "median_ms": entry.get_response_time_percentile(0.5),
                "p95_ms": entry.get_response_time_percentile(0.95),
                "p99_ms": entry.get_response_time_percentile(0.99),
                "rps": entry.total_rps,
                "errors": {
                    str(e.error)[:80]: e.occurrences for e in environment.stats.errors.values() if e.name == name
                },
            }
        # every session's page, ramp included (the statistics above start after the ramp)
        stats["labeling page"].update(
            sessions=len(_PAGE_MS),
            session_median_ms=_percentile(_PAGE_MS, 0.5),
            session_p95_ms=_percentile(_PAGE_MS, 0.95),
            session_p99_ms=_percentile(_PAGE_MS, 0.99),
        )
        Path(os.environ["BENCH_OUT"]).write_text(
            json.dumps({"stats": stats, "accepted": _ACCEPTED, "sent": sorted(_SENT), "counts": _COUNTS})
        )


# ---------------------------------------------------------------------------------------------
# Written to the temp dir and put first on PYTHONPATH for gunicorn: production settings, except that
# static files are neither collected nor served (collectstatic with compression took > 6 min under
# load, and locust asks for no static file), plus one outer middleware counting SQL statements.
BENCH_SETTINGS = """
from config.settings import *  # noqa: F403
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
MIDDLEWARE = ["bench_sqlcount.count_sql", *MIDDLEWARE]  # noqa: F405
"""
BENCH_SQLCOUNT = """
import json, os
from collections import defaultdict
from django.db import connection
_TOTALS = defaultdict(lambda: [0, 0])  # request kind -> [requests, statements]
_SEEN = [0]
def count_sql(get_response):
    def middleware(request):
        n = [0]
        def wrapper(execute, sql, params, many, context):
            n[0] += 1
            return execute(sql, params, many, context)
        with connection.execute_wrapper(wrapper):
            response = get_response(request)
        match = request.resolver_match
        kind = _TOTALS[f"{request.method} {match.url_name if match else request.path}"]
        kind[0] += 1
        kind[1] += n[0]
        _SEEN[0] += 1
        if _SEEN[0] % 25 == 0:
            path = os.path.join(os.environ["BENCH_SQL_DIR"], f"{os.getpid()}.json")
            with open(path + ".tmp", "w") as f:
                json.dump(_TOTALS, f)
            os.replace(path + ".tmp", path)
        return response
    return middleware
"""


def _env(args: argparse.Namespace, tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    (tmp / "bench_settings.py").write_text(BENCH_SETTINGS)
    (tmp / "bench_sqlcount.py").write_text(BENCH_SQLCOUNT)
    env.update(
        DATABASE_URL=args.database_url,
        DEBUG="0",
        SECRET_KEY="bench-only-secret-key-" + "x" * 40,
        SECURE_SSL_REDIRECT="0",
        REDIS_URL=args.redis_url,
        ANSWER_RATE_LIMIT="100000/min",
        STATIC_ROOT=str(tmp / "static"),
        DJANGO_SETTINGS_MODULE="config.settings",
        LOG_LEVEL="WARNING",
        DB_CONN_MAX_AGE="600",
        OMP_NUM_THREADS="1",
    )
    # config/settings.py: psycopg server-side binding with prepared statements, on by default
    env["DB_SERVER_SIDE_BINDING"] = "0" if getattr(args, "client_side_binding", False) else "1"
    return env


def _recreate_database(url: str) -> None:
    if url.startswith("sqlite:///"):
        for suffix in ("", "-wal", "-shm"):
            Path(url.removeprefix("sqlite:///") + suffix).unlink(missing_ok=True)
        return
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _django(env: dict[str, str], code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", "import django\ndjango.setup()\n" + code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode:
        sys.exit(f"seeding/audit failed:\n{out.stderr[-3000:]}")
    return out.stdout


def _seed_corpus(args: argparse.Namespace, env: dict[str, str], sessions_path: Path, n_users: int) -> None:
    """Corpus and candidates, annotators (one password hash, bulk inserts) with a session each."""
    code = f"""
import json
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group
from importlib import import_module
from accounts.roles import Role, grant
from annotation.models import CandidatePair
from curation.models import Article, Corpus, Document, DocumentPair, Paragraph, Sentence
words = "river city council school budget frog museum storm people water forest village bridge music".split()
corpus = Corpus.objects.create(name="bench", language="en")
cands = []
for a in range({args.articles}):
    art = Article.objects.create(corpus=corpus, slug=f"a{{a}}", content_hash=str(a))
    docs = []
    for level in (0, 1):
        doc = Document.objects.create(article=art, level=level, level_label=str(level))
        n = 0
        for p in range(10):
            para = Paragraph.objects.create(document=doc, position=p)
            sents = [Sentence(document=doc, paragraph=para, paragraph_position=p, position=s, doc_position=n + s,
                              text=" ".join(words[(a + p + s + k) % len(words)] for k in range(12 - 4 * level)) + ".", token_count=12)
                     for s in range(3)]
            n += 3
            Sentence.objects.bulk_create(sents)
        docs.append(doc)
    pair = DocumentPair.objects.create(article=art, complex=docs[0], simple=docs[1], pair_id=f"a{{a}}.0_1", corpus=corpus)
    cx = list(Sentence.objects.filter(document=docs[0]).order_by("doc_position"))
    sx = list(Sentence.objects.filter(document=docs[1]).order_by("doc_position"))
    cands += [CandidatePair(pair=pair, simple=s, complex=c) for s in sx for c in cx if s.paragraph_position == c.paragraph_position]
CandidatePair.objects.bulk_create(cands, batch_size=5000)
User = get_user_model()
hashed = make_password("bench-pass-123")
users = User.objects.bulk_create([User(username=f"bench{{i}}", password=hashed) for i in range({n_users})])
users = list(User.objects.filter(username__startswith="bench").order_by("pk"))
grant(users[0], Role.ANNOTATOR)
group = Group.objects.get(name=Role.ANNOTATOR.value)
User.groups.through.objects.bulk_create([User.groups.through(user_id=u.pk, group_id=group.pk) for u in users[1:]])
sessions = []
SessionStore = import_module(settings.SESSION_ENGINE).SessionStore  # as a login stores it (with Redis: cached_db)
for u in users:
    s = SessionStore()
    s[SESSION_KEY] = str(u.pk); s[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]; s[HASH_SESSION_KEY] = u.get_session_auth_hash()
    s.create()
    sessions.append(s.session_key)
open({str(sessions_path)!r}, "w").write(json.dumps(sessions))
print(corpus.pk, len(cands))
"""
    corpus_id, n_cands = _django(env, code).split()[-2:]
    print(f"seeded corpus {corpus_id}: {n_cands} candidate pairs, {n_users} annotators with sessions", flush=True)


def _seed_job(env: dict[str, str], min_seconds: int, round_no: int) -> int:
    """A fresh job over the bench corpus: 5 judgments per pair, a test question in every 5."""
    code = f"""
from annotation.models import CandidatePair, JobItem, LabelingJob, TestQuestion
from curation.models import Corpus
corpus = Corpus.objects.get(name="bench")
job = LabelingJob.objects.create(name="bench {round_no}", corpus=corpus, judgments_per_pair=5, test_question_every=5,
                                 min_seconds={min_seconds}, accuracy_threshold=0.0, min_test_questions=1000, reservation_minutes=15)
pks = list(CandidatePair.objects.filter(pair__corpus=corpus).values_list("pk", flat=True).order_by("pk"))
tests, items = pks[:100], pks[100:]
TestQuestion.objects.bulk_create([TestQuestion(job=job, candidate_id=pk, gold_label="aligned", explanation="bench") for pk in tests])
JobItem.objects.bulk_create([JobItem(job=job, candidate_id=pk) for pk in items], batch_size=5000)
from annotation.services.job_setup import refresh_item_statistics
refresh_item_statistics()  # as job_setup.create_job does
print(job.pk)
"""
    return int(_django(env, code).split()[-1])


def _audit(env: dict[str, str], job_id: int, accepted_path: Path) -> dict[str, int]:
    code = f"""
import json
from collections import Counter
from django.db.models import Count, F
from annotation.models import Assignment, JobItem, Judgment, LabelingJob, TestAnswer
job = LabelingJob.objects.get(pk={job_id})
data = json.load(open({str(accepted_path)!r}))
tokens = {{t: l for t, l in data["accepted"]}}
sent = set(data["sent"])
answered = dict(Assignment.objects.filter(job=job, answered_at__isnull=False).values_list("token", "answer"))
lost = [t for t, l in tokens.items() if answered.get(t) != l]
unknown = [t for t in answered if t not in sent]
in_flight = [t for t in sent if t not in tokens]
in_flight_stored = sum(1 for t in in_flight if t in answered)
n_judg = Judgment.objects.filter(job=job).count(); n_test = TestAnswer.objects.filter(job=job).count()
dup_judg = Judgment.objects.filter(job=job).values("item", "annotator").annotate(n=Count("pk")).filter(n__gt=1).count()
valid = Counter(Judgment.objects.filter(job=job, is_valid=True).values_list("item_id", flat=True))
over = JobItem.objects.filter(job=job, judgments_count__gt=job.judgments_per_pair).count()
mismatch = sum(1 for pk, n in JobItem.objects.filter(job=job).values_list("pk", "judgments_count") if valid[pk] != n)
pending = Counter(Assignment.objects.filter(job=job, answered_at__isnull=True, item__isnull=False).values_list("item_id", flat=True))
res_mismatch = sum(1 for pk, n in JobItem.objects.filter(job=job).values_list("pk", "reserved_count") if pending[pk] != n)
print(json.dumps(dict(told=len(tokens), in_flight_at_stop=len(in_flight), in_flight_stored=in_flight_stored, stored=n_judg + n_test, judgments=n_judg, test_answers=n_test, lost=len(lost),
      unknown_answers=len(unknown), duplicate_judgments=dup_judg, items_over_capacity=over, count_mismatches=mismatch,
      reservation_mismatches=res_mismatch)))
"""
    return json.loads(_django(env, code).strip().splitlines()[-1])  # type: ignore[no-any-return]


def _requests_served(sql_dir: Path) -> int:
    return sum(n for f in sql_dir.glob("*.json") for n, _ in json.loads(f.read_text()).values())


def _cpu_per_request(cpu: dict[str, float], sql_dir: Path) -> dict[str, float]:
    """CPU milliseconds per request served over the whole round (ramp included) of the gunicorn
    workers, their PostgreSQL backends and locust: what the machine's cores can carry when idle."""
    n = _requests_served(sql_dir)
    out = {k.removesuffix("_s"): round(1000 * v / n, 2) for k, v in cpu.items()} if n else {}
    out["requests"] = n
    return out


def _sql_per_request(sql_dir: Path) -> dict[str, float]:
    totals: dict[str, list[int]] = {}
    for f in sql_dir.glob("*.json"):
        for kind, (n, stmts) in json.loads(f.read_text()).items():
            t = totals.setdefault(kind, [0, 0])
            t[0] += n
            t[1] += stmts
    return {kind: round(stmts / n, 2) for kind, (n, stmts) in totals.items() if n}


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process so far (Linux /proc); 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _worker_pids(master: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{master}/task/{master}/children").read_text().split()]
    except OSError:
        return []


def _pg_backend_pids(url: str) -> list[int]:
    """The server processes of the connections gunicorn holds (CONN_MAX_AGE keeps them open)."""
    if not url.startswith("postgres"):
        return []
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return [int(r[0]) for r in rows]


def _round(args: argparse.Namespace, env: dict[str, str], tmp: Path, users: int, round_no: int) -> dict[str, object]:
    job_id = _seed_job(env, args.min_seconds, round_no)
    sql_dir = tmp / f"sql-{round_no}"
    sql_dir.mkdir()
    genv = dict(
        env,
        DJANGO_SETTINGS_MODULE="bench_settings",
        PYTHONPATH=os.pathsep.join([str(tmp), str(ROOT)]),
        BENCH_SQL_DIR=str(sql_dir),
    )
    gunicorn = [
        str(Path(sys.executable).parent / "gunicorn"),
        "config.wsgi",
        "-b",
        f"127.0.0.1:{args.port}",
        "-w",
        str(args.workers),
        "--backlog",
        "4096",
        "--access-logfile",  # the time each request took inside its worker (no queueing, no client side)
        str(tmp / f"access-{round_no}.log"),
        "--access-logformat",
        "%(U)s %(D)s",
        "--error-logfile",
        str(tmp / "gunicorn.log"),
    ]
    if args.threads > 1:
        gunicorn += ["-k", "gthread", "--threads", str(args.threads)]
    server = subprocess.Popen(gunicorn, cwd=ROOT, env=genv, start_new_session=True)
    spawn_rate = args.spawn_rate or max(10.0, users / 20)
    ramp = users / spawn_rate
    out = tmp / f"locust-{round_no}.json"
    try:
        import urllib.request

        for _ in range(150):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{args.port}/login/", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        lenv = dict(
            env,
            BENCH_ROLE="locust",
            BENCH_SESSIONS=str(tmp / "sessions.json"),
            BENCH_JOB=str(job_id),
            BENCH_OUT=str(out),
            BENCH_MIN_SECONDS=str(args.min_seconds),
            BENCH_THINK_EXTRA=str(args.think_extra),
            # locust's dispatcher starts floor(rate) users at once, then waits floor(rate)/rate s
            BENCH_ARRIVAL_SPREAD=str(math.floor(spawn_rate) / spawn_rate if args.arrivals == "spread" else 0),
        )
        cmd = [
            str(Path(sys.executable).parent / "locust"),
            "-f",
            str(Path(__file__).resolve()),
            "--headless",
            "-u",
            str(users),
            "-r",
            str(spawn_rate),
            "--reset-stats",
            "-t",
            f"{int(ramp + args.duration)}s",
            "--host",
            f"http://127.0.0.1:{args.port}",
            "--only-summary",
            "--stop-timeout",
            "3",
        ]
        time.sleep(3)  # the other workers finish booting
        workers = _worker_pids(server.pid)
        workers_cpu0 = sum(_cpu_s(p) for p in workers)  # after boot: imports not counted
        children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        locust = subprocess.run(
            cmd, cwd=ROOT, env=lenv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        elapsed = time.time() - t0
        load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = {
            "gunicorn_s": sum(_cpu_s(p) for p in workers) - workers_cpu0,
            "postgres_s": sum(_cpu_s(p) for p in _pg_backend_pids(args.database_url)),
            "locust_s": (children1.ru_utime + children1.ru_stime) - (children0.ru_utime + children0.ru_stime),
        }
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
    if not out.exists():
        sys.exit(f"locust wrote no result:\n{locust.stderr[-3000:]}")
    result = json.loads(out.read_text())
    server_ms = _server_times(tmp / f"access-{round_no}.log")
    audit = _audit(env, job_id, out)
    ok = (
        audit["lost"] == 0
        and audit["unknown_answers"] == 0
        and audit["duplicate_judgments"] == 0
        and audit["items_over_capacity"] == 0
        and audit["count_mismatches"] == 0
        and audit["reservation_mismatches"] == 0
        and result["counts"]["duplicates_bad"] == 0
        and result["counts"]["retry_next_differs"] == 0
        and audit["told"] + audit["in_flight_stored"] == audit["stored"]
    )
    return {
        "users": users,
        "spawn_rate": spawn_rate,
        "arrivals": args.arrivals,
        "min_seconds": args.min_seconds,
        "think_extra_s": args.think_extra,
        "duration_s": args.duration,
        "workers": args.workers,
        "threads": args.threads,
        "wall_s": round(elapsed, 1),
        "uptime": load,
        "stats": result["stats"],
        "client_counts": result["counts"],
        "server_ms": server_ms,
        "sql_per_request": _sql_per_request(sql_dir),
        "cpu_ms_per_request": _cpu_per_request(cpu, sql_dir),
        "audit": audit,
        "audit_ok": ok,
    }


def _server_times(access_log: Path) -> dict[str, dict[str, float]]:
    """p50 / p95 ms per endpoint of every request of the round (ramp included) as the gunicorn
    worker timed it (access log ``%(D)s``): what the server spent, without the wait in the listen
    queue and without the client's side, which locust's figures include."""
    kinds: dict[str, list[float]] = {"labeling page": [], "next": [], "answer": []}
    for line in access_log.read_text().splitlines():
        path, _, micros = line.rpartition(" ")
        kind = "labeling page" if path.endswith("/label/") else "next" if path.endswith("/next/") else "answer" if path.endswith("/answers/") else ""
        if kind:
            kinds[kind].append(int(micros) / 1000)
    return {
        kind: {"requests": len(ms), "p50_ms": round(_pct(ms, 0.5), 1), "p95_ms": round(_pct(ms, 0.95), 1)}
        for kind, ms in kinds.items()
    }


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _table(rows: list[dict[str, object]]) -> str:
    lines = [
        "| users | req/s | answer p50 / p95 / p99 ms | labeling page (once per session) p50 / p95 / p99 ms | next (once per session) p50 / p95 ms "
        "| server-side p50 / p95 ms page, next, answer "
        "| failures | SQL/request page / next / answer | CPU ms/request gunicorn + PG + locust | told / stored | audit | uptime |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        st: dict[str, dict[str, float]] = r["stats"]  # type: ignore[assignment]
        page, nxt, answer = st["labeling page"], st["next"], st["answer"]
        sql: dict[str, float] = r["sql_per_request"]  # type: ignore[assignment]
        audit: dict[str, int] = r["audit"]  # type: ignore[assignment]
        cpu: dict[str, float] = r["cpu_ms_per_request"]  # type: ignore[assignment]
        srv: dict[str, dict[str, float]] = r["server_ms"]  # type: ignore[assignment]
        server_cell = ", ".join(f"{srv[k]['p50_ms']:.0f} / {srv[k]['p95_ms']:.0f}" for k in ("labeling page", "next", "answer"))
        cpu_cell = f"{cpu.get('gunicorn', 0):.1f} + {cpu.get('postgres', 0):.1f} + {cpu.get('locust', 0):.1f}"
        load = str(r["uptime"]).split("load average:")[-1].strip()
        failures = sum(int(st[k]["failures"]) for k in st)
        lines.append(
            f"| {r['users']} | {sum(float(st[k]['rps']) for k in st):.1f} "
            f"| {answer['median_ms']:.0f} / {answer['p95_ms']:.0f} / {answer['p99_ms']:.0f} "
            f"| {page['session_median_ms']:.0f} / {page['session_p95_ms']:.0f} / {page['session_p99_ms']:.0f} "
            f"| {nxt['median_ms']:.0f} / {nxt['p95_ms']:.0f} "
            f"| {server_cell} "
            f"| {failures} "
            f"| {sql.get('GET label', float('nan'))} / {sql.get('POST labelingjob-next', float('nan'))} "
            f"/ {sql.get('POST annotation-answer', float('nan'))} | {cpu_cell} "
            f"| {audit['told']} / {audit['stored']} | {'OK' if r['audit_ok'] else 'FAILED'} | {load} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/annotation_bench",
        help="recreated for the run; sqlite:////tmp/bench.sqlite3 works too",
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/9")
    parser.add_argument("--users", default="50", help="comma-separated annotator counts, one run each: 50,200,1000")
    parser.add_argument("--duration", type=int, default=60, help="seconds of load after all annotators have started")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=1, help="gunicorn threads per worker (gthread when > 1)")
    parser.add_argument("--articles", type=int, default=40, help="article pairs to seed (90 candidate pairs each)")
    parser.add_argument(
        "--min-seconds", type=int, default=10, help="the job's minimum time per question (production default 10)"
    )
    parser.add_argument(
        "--think-extra",
        type=float,
        default=4.0,
        help="annotators answer min-seconds + 0.5 .. + this many seconds after the page",
    )
    parser.add_argument(
        "--spawn-rate", type=float, default=0, help="annotators starting per second (0: users/20, at least 10)"
    )
    parser.add_argument(
        "--arrivals",
        choices=("spread", "batches"),
        default="spread",
        help="spread: each annotator arrives at a uniform random moment of its second (the default); batches: "
        "as locust starts them, floor(spawn rate) annotators in the same instant once a second",
    )
    parser.add_argument(
        "--server-side-binding",
        action="store_true",
        help="DB_SERVER_SIDE_BINDING=1 (psycopg server-side binding, prepared statements): the default since stop 18",
    )
    parser.add_argument(
        "--client-side-binding",
        action="store_true",
        help="run gunicorn with DB_SERVER_SIDE_BINDING=0 (psycopg client-side binding, the default before stop 18)",
    )
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--out", default="", help="write the JSON report here too")
    args = parser.parse_args()
    counts = [int(u) for u in args.users.split(",")]

    tmp = Path(tempfile.mkdtemp(prefix="bench-labeling-"))
    env = _env(args, tmp)
    _recreate_database(args.database_url)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    _seed_corpus(args, env, tmp / "sessions.json", max(counts))
    rows = []
    for n, users in enumerate(counts):
        row = _round(args, env, tmp, users, n)
        rows.append(row)
        print(json.dumps(row, indent=2), flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=2))
    print(
        f"gunicorn: {args.workers} sync workers"
        + (f" x {args.threads} threads" if args.threads > 1 else "")
        + "; locust in a second process"
    )
    print(_table(rows))
    ok = all(r["audit_ok"] for r in rows)
    print("AUDIT", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
