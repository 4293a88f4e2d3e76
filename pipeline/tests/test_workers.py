"""Corpus alignment through REAL Celery worker processes.

- ``services`` tests (CI: PostgreSQL + Redis): a run spread over three workers, and a worker
  killed (SIGKILL) in the middle of a chunk; the run must end with exactly the predictions of a
  clean run, none duplicated. Workers get the pytest-django test database (``test_<name>``)
  through ``DATABASE_URL`` and their own queue so parallel test processes cannot steal tasks.
- the embedded default (SQLite + filesystem broker), end to end in a temporary ``VAR_DIR``:
  migrate, build a corpus, a worker process, ``manage.py align_corpus --wait``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

from pipeline import tasks
from pipeline.models import Job, PredictedAlignment, RunChunk
from pipeline.services import align_corpus
from pipeline.tests.pipeline_corpus import build_corpus, expected_alignment, job_id

ROOT = Path(settings.BASE_DIR)


def _require_services() -> None:
    broker = settings.CELERY_BROKER_URL
    if not broker.startswith("redis://"):
        pytest.skip("needs CELERY_BROKER_URL=redis://... (CI provides Redis); the embedded broker is tested below")
    if connection.vendor != "postgresql":
        pytest.skip("needs DATABASE_URL=postgres://... (CI provides PostgreSQL): workers share the test database")
    import redis

    try:
        redis.Redis.from_url(broker, socket_connect_timeout=2).ping()
    except Exception as exc:  # any connection problem means: not available here
        pytest.skip(f"Redis at {broker} is not reachable: {exc}")


def _database_url() -> str:
    s = connection.settings_dict
    auth = quote(s["USER"] or "")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"])
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class Workers:
    """Worker processes on one queue; stopped (whole process groups) on exit."""

    def __init__(self, queue: str, n: int, env: dict[str, str], logdir: Path) -> None:
        self.queue, self.n, self.env, self.logdir = queue, n, env, logdir
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    def __enter__(self) -> Workers:
        for i in range(self.n):
            log = self.logdir / f"worker{i}.log"
            self.logs.append(log)
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", self.queue, "--concurrency", "1",
                     "--pool", "prefork", "--hostname", f"w{i}-{self.queue}@%h", "--without-gossip", "--without-mingle",
                     "--loglevel", "INFO"],
                    cwd=ROOT, env=self.env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
                )
            )
        return self

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(" ready." in log.read_text(errors="replace") for log in self.logs):
                return
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                raise AssertionError(f"a worker exited early:\n{self.tail()}")
            time.sleep(0.3)
        raise AssertionError(f"workers not ready after {timeout}s:\n{self.tail()}")

    def tail(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}" for log in self.logs)

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)


@pytest.fixture
def worker_env() -> Iterator[dict[str, str]]:
    _require_services()
    env = {**os.environ, "DATABASE_URL": _database_url(), "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
           "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONUNBUFFERED": "1"}
    yield env


def _wait_for_job(job_id: int, workers: Workers, timeout: float = 180) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = Job.objects.get(pk=job_id)
        if job.status not in (Job.Status.QUEUED, Job.Status.RUNNING):
            return job
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} not finished after {timeout}s:\n{workers.tail()}")


def _rows(run) -> list[tuple[int, int, str]]:  # type: ignore[no-untyped-def]
    return list(PredictedAlignment.objects.filter(run=run).values_list("simple_id", "complex_id", "label"))


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_run_is_spread_over_three_workers(worker_env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    corpus = build_corpus(n_articles=12)
    queue = f"align-test-{uuid.uuid4().hex[:8]}"
    with Workers(queue, 3, worker_env, tmp_path) as workers:
        workers.wait_ready()
        run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "jaccard"), chunk_size=2,
                                    extra_params={"pause_before_write_s": 0.5})
        tasks.enqueue_run(run, queue=queue)  # no atomic block here: sent at once
        job = _wait_for_job(job_id(run), workers)
        assert job.status == Job.Status.SUCCEEDED, f"{job.error}\n{workers.tail()}"
    rows = _rows(run)
    assert len(rows) == len(set(rows)) and {(s, c) for s, c, _ in rows} == expected_alignment(corpus)
    assert job.progress_done == job.progress_total == 6
    hosts = {w.rsplit(":", 1)[0] for w in RunChunk.objects.filter(run=run).values_list("worker", flat=True)}
    assert len(hosts) >= 2, f"all chunks ran on {hosts}"


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_seed_ensemble_retrains_inside_a_real_prefork_worker(worker_env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The default model's members train in processes of their own, started from a Celery prefork pool's worker (a
    daemonic process, which multiprocessing would refuse children)."""
    import json

    from pipeline.models import ModelVersion
    from pipeline.services import retrain
    from pipeline.tests.test_retrain import labelled_corpus

    corpus = labelled_corpus()
    job = retrain.create_job({"language": corpus.language, "device": "cpu",
                              "config": {"emission": "lexical", "crf_epochs": 2, "members": 2}}, corpus=corpus)
    queue = f"train-test-{uuid.uuid4().hex[:8]}"
    with Workers(queue, 1, {**worker_env, "MODELS_DIR": str(tmp_path / "models")}, tmp_path) as workers:
        workers.wait_ready()
        tasks.enqueue_retrain(job, queue=queue)  # no atomic block here: sent at once
        job = _wait_for_job(job.pk, workers, timeout=400)
        assert job.status == Job.Status.SUCCEEDED, f"{job.error}\n{workers.tail()}"
    version = ModelVersion.objects.get(pk=job.result["model_version"])
    meta = json.loads((Path(version.path) / "model.json").read_text())
    assert meta["ensemble"]["members"] == 2 and meta["ensemble"]["workers"] == min(len(os.sched_getaffinity(0)), 4)
    assert (Path(version.path) / "members" / "1" / "model.json").is_file()


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_worker_killed_mid_chunk_loses_and_duplicates_nothing(worker_env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    corpus = build_corpus(n_articles=6)
    clean = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "tfidf"), chunk_size=2)
    align_corpus.run_inline(clean)
    queue = f"align-test-{uuid.uuid4().hex[:8]}"
    with Workers(queue, 2, worker_env, tmp_path) as workers:
        workers.wait_ready()
        run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "tfidf"), chunk_size=2,
                                    extra_params={"pause_before_write_s": 4})
        tasks.enqueue_run(run, queue=queue)
        deadline = time.monotonic() + 90
        victim = None
        while victim is None and time.monotonic() < deadline:  # a chunk is computed and about to be written
            victim = RunChunk.objects.filter(run=run, status=RunChunk.Status.PENDING, attempts=1).exclude(worker="").first()
            time.sleep(0.1)
        assert victim is not None, workers.tail()
        pid = int(victim.worker.rsplit(":", 1)[1])
        os.kill(pid, signal.SIGKILL)  # the pool process executing the chunk, before it writes
        job = _wait_for_job(job_id(run), workers)
        assert job.status == Job.Status.SUCCEEDED, f"{job.error}\n{workers.tail()}"
        assert "SIGKILL" in workers.tail() or "signal 9" in workers.tail()
    victim.refresh_from_db()
    assert victim.status == RunChunk.Status.DONE and victim.attempts >= 2  # redelivered and redone
    rows = _rows(run)
    assert len(rows) == len(set(rows)), "duplicated predictions"
    assert sorted(rows) == sorted(_rows(clean)), "predictions differ from a clean run"
    assert {(s, c) for s, c, _ in rows} == expected_alignment(corpus)


@pytest.mark.slow
def test_embedded_default_round_trip_with_a_real_worker(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """SQLite + filesystem broker (what `make run` uses), all in a temporary VAR_DIR."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "REDIS_URL")}
    env.update({"VAR_DIR": str(tmp_path / "var"), "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONUNBUFFERED": "1"})

    def manage(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout)
        assert done.returncode == 0, f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
        return done

    manage("migrate", "--noinput")
    manage("shell", "-c", "from pipeline.tests.pipeline_corpus import build_corpus; build_corpus(n_articles=3)")
    with Workers("align", 1, env, tmp_path) as workers:
        workers.wait_ready()
        out = manage("align_corpus", "Pipeline test corpus", "--method", "jaccard", "--chunk-size", "1", "--wait",
                     "--timeout", "120").stdout
        assert "succeeded" in out, workers.tail()
    check = manage("shell", "-c", (
        "from curation.models import Corpus; from pipeline.models import PredictedAlignment as P;"
        "from pipeline.tests.pipeline_corpus import expected_alignment as e;"
        "c = Corpus.objects.get();"
        "rows = list(P.objects.values_list('simple_id', 'complex_id'));"
        "print('ROWS', len(rows), len(set(rows)), set(rows) == e(c))"
    )).stdout
    assert "ROWS 12 12 True" in check, check
