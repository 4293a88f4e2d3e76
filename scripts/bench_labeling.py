#!/usr/bin/env python
"""Labeling benchmark: N concurrent annotators against gunicorn on PostgreSQL, then an audit.

    .venv/bin/python scripts/bench_labeling.py --users 50 --duration 60 --workers 4

1. (re)creates the database named in --database-url, migrates, seeds a job (min_seconds=0,
   5 judgments per pair, one test question in every 5) and one logged-in session per annotator;
2. starts gunicorn on loopback with the production settings (DEBUG=0);
3. runs locust headless from a second process (annotators start at --spawn-rate per second; latency
   statistics are reset once all have started): each annotator loops "GET the labeling page
   (serves or resumes a question) -> POST the answer to the API"; one answer in ten is sent
   twice (a client retry: must come back as a duplicate);
4. reports median and p95 per request kind, then audits the database against what the clients
   were told: every accepted answer stored once, no duplicates, no item over capacity, counters exact.

Exit status 1 when the audit fails. Needs PostgreSQL and Redis (throttle cache) on loopback.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOKEN_RE = re.compile(r'id="lab-token" value="([^"]+)"')
CSRF = "benchcsrftoken0123456789abcdefgh"  # 32 characters: an unmasked CSRF secret

# ---------------------------------------------------------------------------------------------
# locust side (this file is also the locustfile: BENCH_ROLE=locust)
if os.environ.get("BENCH_ROLE") == "locust":
    import itertools

    from locust import FastHttpUser, events, task  # type: ignore[import-untyped]

    _SESSIONS = json.loads(Path(os.environ["BENCH_SESSIONS"]).read_text())
    _NEXT = itertools.count()
    _ACCEPTED: list[tuple[str, str]] = []
    _SENT: set[str] = set()  # answers sent; those without a response at shutdown are "in flight"
    _THINK = float(os.environ.get("BENCH_THINK", "0"))
    _COUNTS = {"duplicates_ok": 0, "duplicates_bad": 0, "errors": 0, "done": 0}

    class Annotator(FastHttpUser):  # type: ignore[misc]
        def wait_time(self) -> float:  # an annotator reading the next pair (0 = closed loop)
            return random.uniform(0.5 * _THINK, 1.5 * _THINK) if _THINK else 0.0

        def on_start(self) -> None:
            session = _SESSIONS[next(_NEXT) % len(_SESSIONS)]
            self.headers = {"Cookie": f"sessionid={session}; csrftoken={CSRF}", "X-CSRFToken": CSRF, "Referer": self.host}
            self.job = os.environ["BENCH_JOB"]

        @task
        def label(self) -> None:
            with self.client.get(f"/annotate/jobs/{self.job}/label/", headers=self.headers, name="labeling page", catch_response=True) as r:
                if r.status_code != 200:
                    r.failure(f"status {r.status_code}")
                    return
                found = TOKEN_RE.search(r.text or "")
                if not found:
                    _COUNTS["done"] += 1
                    r.success()
                    return
            token, label = found.group(1), random.choice(["aligned", "partialAligned", "notAligned"])
            tries = 2 if random.random() < 0.1 else 1
            _SENT.add(token)
            for attempt in range(tries):
                with self.client.post(
                    "/api/annotation/answers/", json={"token": token, "label": label}, headers=self.headers,
                    name="answer", catch_response=True,
                ) as r:
                    if r.status_code != 200:
                        _COUNTS["errors"] += 1
                        r.failure(f"status {r.status_code}: {(r.text or '')[:120]}")
                        return
                    body = r.json()
                    if attempt == 0 and not body["duplicate"]:
                        _ACCEPTED.append((token, label))
                    elif attempt == 1:
                        _COUNTS["duplicates_ok" if body["duplicate"] else "duplicates_bad"] += 1

    @events.test_stop.add_listener
    def _dump(environment, **_kw) -> None:  # type: ignore[no-untyped-def]
        stats = {}
        for name in ("labeling page", "answer"):
            entry = environment.stats.get(name, "GET" if name == "labeling page" else "POST")
            stats[name] = {
                "requests": entry.num_requests,
                "failures": entry.num_failures,
                "median_ms": entry.get_response_time_percentile(0.5),
                "p95_ms": entry.get_response_time_percentile(0.95),
                "p99_ms": entry.get_response_time_percentile(0.99),
                "rps": entry.total_rps,
            }
        Path(os.environ["BENCH_OUT"]).write_text(json.dumps({"stats": stats, "accepted": _ACCEPTED, "sent": sorted(_SENT), "counts": _COUNTS}))


# ---------------------------------------------------------------------------------------------
def _env(args: argparse.Namespace, static_root: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=args.database_url, DEBUG="0", SECRET_KEY="bench-only-secret-key-" + "x" * 40, SECURE_SSL_REDIRECT="0",
        REDIS_URL=args.redis_url, ANSWER_RATE_LIMIT="100000/min", STATIC_ROOT=static_root, DJANGO_SETTINGS_MODULE="config.settings",
        LOG_LEVEL="WARNING", DB_CONN_MAX_AGE="600",
    )
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


def _seed(args: argparse.Namespace, env: dict[str, str], sessions_path: Path) -> int:
    """Run inside a Django process: corpus, candidates, job, annotators with sessions."""
    code = f"""
import json, django
django.setup()
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
from accounts.roles import Role, grant
from annotation.models import CandidatePair, JobItem, LabelingJob, TestQuestion
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
job = LabelingJob.objects.create(name="bench", corpus=corpus, judgments_per_pair=5, test_question_every=5, min_seconds=0,
                                 accuracy_threshold=0.0, min_test_questions=1000, reservation_minutes=15)
pks = list(CandidatePair.objects.values_list("pk", flat=True).order_by("pk"))
tests, items = pks[:100], pks[100:]
TestQuestion.objects.bulk_create([TestQuestion(job=job, candidate_id=pk, gold_label="aligned", explanation="bench") for pk in tests])
JobItem.objects.bulk_create([JobItem(job=job, candidate_id=pk) for pk in items], batch_size=5000)
sessions = []
User = get_user_model()
for i in range({args.users}):
    u = User.objects.create_user(username=f"bench{{i}}", password="bench-pass-123")
    grant(u, Role.ANNOTATOR)
    s = SessionStore()
    s[SESSION_KEY] = str(u.pk); s[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]; s[HASH_SESSION_KEY] = u.get_session_auth_hash()
    s.create()
    sessions.append(s.session_key)
open({str(sessions_path)!r}, "w").write(json.dumps(sessions))
print(job.pk, len(items))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    job_id, n_items = out.stdout.split()[-2:]
    print(f"seeded job {job_id}: {n_items} pairs x 5 judgments, 100 test questions, {args.users} annotators")
    return int(job_id)


def _audit(env: dict[str, str], job_id: int, accepted_path: Path) -> dict[str, object]:
    code = f"""
import json, django
django.setup()
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
dup_judg = Judgment.objects.values("item", "annotator").annotate(n=Count("pk")).filter(n__gt=1).count()
valid = Counter(Judgment.objects.filter(job=job, is_valid=True).values_list("item_id", flat=True))
over = JobItem.objects.filter(job=job, judgments_count__gt=job.judgments_per_pair).count()
mismatch = sum(1 for pk, n in JobItem.objects.filter(job=job).values_list("pk", "judgments_count") if valid[pk] != n)
pending = Counter(Assignment.objects.filter(job=job, answered_at__isnull=True, item__isnull=False).values_list("item_id", flat=True))
res_mismatch = sum(1 for pk, n in JobItem.objects.filter(job=job).values_list("pk", "reserved_count") if pending[pk] != n)
print(json.dumps(dict(told=len(tokens), in_flight_at_stop=len(in_flight), in_flight_stored=in_flight_stored, stored=n_judg + n_test, judgments=n_judg, test_answers=n_test, lost=len(lost),
      unknown_answers=len(unknown), duplicate_judgments=dup_judg, items_over_capacity=over, count_mismatches=mismatch,
      reservation_mismatches=res_mismatch)))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--database-url", default="postgres://postgres@127.0.0.1:5432/annotation_bench",
        help="recreated for the run; sqlite:////tmp/bench.sqlite3 works too",
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/9")
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--duration", type=int, default=60, help="seconds of load")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=1, help="gunicorn threads per worker (gthread when > 1)")
    parser.add_argument("--articles", type=int, default=40, help="article pairs to seed (90 candidate pairs each)")
    parser.add_argument("--think", type=float, default=0.0, help="mean seconds an annotator waits between pairs (0 = closed loop)")
    parser.add_argument("--spawn-rate", type=float, default=10, help="annotators starting per second; latency stats are reset once all have started")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--out", default="", help="write the JSON report here too")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-labeling-"))
    env = _env(args, str(tmp / "static"))
    _recreate_database(args.database_url)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    sessions = tmp / "sessions.json"
    job_id = _seed(args, env, sessions)

    gunicorn = [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi", "-b", f"127.0.0.1:{args.port}", "-w", str(args.workers),
                "--access-logfile", "/dev/null", "--error-logfile", str(tmp / "gunicorn.log")]
    if args.threads > 1:
        gunicorn += ["-k", "gthread", "--threads", str(args.threads)]
    server = subprocess.Popen(gunicorn, cwd=ROOT, env=env, start_new_session=True)
    try:
        import urllib.request

        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{args.port}/login/", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        host = f"http://127.0.0.1:{args.port}"
        out = tmp / "locust.json"
        lenv = dict(env, BENCH_ROLE="locust", BENCH_SESSIONS=str(sessions), BENCH_JOB=str(job_id), BENCH_OUT=str(out),
                    BENCH_THINK=str(args.think))
        cmd = [str(Path(sys.executable).parent / "locust"), "-f", str(Path(__file__).resolve()), "--headless", "-u", str(args.users),
               "-r", str(args.spawn_rate), "--reset-stats", "-t", f"{args.duration}s", "--host", host, "--only-summary", "--stop-timeout", "5"]
        t0 = time.time()
        subprocess.run(cmd, cwd=ROOT, env=lenv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        elapsed = time.time() - t0
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(20)
    result = json.loads(out.read_text())
    audit = _audit(env, job_id, out)
    report = {
        "users": args.users, "spawn_rate": args.spawn_rate, "think_s": args.think, "duration_s": args.duration, "workers": args.workers, "threads": args.threads,
        "wall_s": round(elapsed, 1), "load_average": os.getloadavg(), "stats": result["stats"], "client_counts": result["counts"],
        "audit": audit,
    }
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    ok = (
        audit["lost"] == 0 and audit["unknown_answers"] == 0 and audit["duplicate_judgments"] == 0
        and audit["items_over_capacity"] == 0 and audit["count_mismatches"] == 0 and audit["reservation_mismatches"] == 0
        and result["counts"]["duplicates_bad"] == 0 and audit["told"] + audit["in_flight_stored"] == audit["stored"]
    )
    print("AUDIT", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
