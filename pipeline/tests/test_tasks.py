"""Celery tasks run eagerly: routing, quiet exits, enqueue on commit, failures, transient retries."""

from __future__ import annotations

import pytest
from django.db import InterfaceError, OperationalError

from config.celery import app
from pipeline import tasks
from pipeline.models import Job, ModelVersion, PredictedAlignment, RunChunk
from pipeline.services import align_corpus, prepopulate
from pipeline.tests.pipeline_corpus import build_corpus, expected_alignment, job_id

pytestmark = pytest.mark.django_db


@pytest.fixture
def eager():  # type: ignore[no-untyped-def]
    old = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = old


@pytest.mark.parametrize(
    ("name", "queue"),
    [("pipeline.align_chunk", "align"), ("pipeline.prepopulate", "align"),
     ("pipeline.retrain", "train"), ("pipeline.export_dataset", "export"), ("pipeline.import_corpus", "default")],
)
def test_routes(name: str, queue: str) -> None:
    assert name in app.tasks  # the explicit, stable task names are registered
    assert app.amqp.router.route({}, name)["queue"].name == queue


def test_only_transient_errors_are_retried() -> None:
    from pipeline.tasks import export_dataset

    for task in (tasks.align_chunk, tasks.prepopulate_job, tasks.retrain_job, export_dataset):
        assert OperationalError in task.autoretry_for and InterfaceError in task.autoretry_for
        assert ValueError not in task.autoretry_for
        assert task.ignore_result


def test_tasks_exit_quietly_when_rows_are_gone(eager) -> None:  # type: ignore[no-untyped-def]
    assert tasks.align_chunk.delay(10**9).get() == "gone"
    assert tasks.prepopulate_job.delay(10**9).get() == "gone"
    assert tasks.retrain_job.delay(10**9).get() == "gone"


def test_run_is_enqueued_on_commit_and_completes(eager, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    corpus = build_corpus(n_articles=3)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "jaccard"), chunk_size=1)
        tasks.enqueue_run(run)
    assert len(callbacks) == 1 and not PredictedAlignment.objects.exists()  # nothing sent before commit
    callbacks[0]()
    job = Job.objects.get(pk=job_id(run))
    assert job.status == Job.Status.SUCCEEDED and job.progress_done == 3 and job.celery_task_id
    got = list(PredictedAlignment.objects.filter(run=run).values_list("simple_id", "complex_id"))
    assert set(got) == expected_alignment(corpus) and len(got) == len(set(got))
    # a duplicate delivery of every chunk changes nothing
    for chunk in run.chunks.all():
        assert tasks.align_chunk.delay(chunk.pk).get() == "skipped"
    assert PredictedAlignment.objects.filter(run=run).count() == len(got)


def test_failing_chunk_task_marks_job_failed(eager) -> None:  # type: ignore[no-untyped-def]
    corpus = build_corpus(n_articles=1)
    mv = ModelVersion.objects.create(name="broken", method="crf", language="en", path="/nonexistent/model")
    run = align_corpus.plan_run(corpus, align_corpus.ModelChoice("crf", mv), chunk_size=1)
    chunk = run.chunks.get()
    assert tasks.align_chunk.delay(chunk.pk).get() == "failed"
    chunk.refresh_from_db()
    assert chunk.status == RunChunk.Status.FAILED and "Traceback" in chunk.error
    assert Job.objects.get(pk=job_id(run)).status == Job.Status.FAILED


def test_prepopulate_job_through_the_task(eager, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    corpus = build_corpus(n_articles=2)
    with django_capture_on_commit_callbacks(execute=True):
        job = prepopulate.create_job(corpus, None, prepopulate.PrepopulateOptions())
        tasks.enqueue_prepopulate(job)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.progress_done == job.progress_total == 2
    assert job.result["pairs"] == 2 and job.result["candidates_total"] > 0
    assert job.celery_task_id  # the task id is kept on the row


@pytest.mark.parametrize(("task", "service", "work", "kind"), [
    ("prepopulate_job", "prepopulate", "prepopulate", Job.Kind.PREPOPULATE),
    ("retrain_job", "retrain", "retrain", Job.Kind.RETRAIN),
])
def test_job_task_fails_the_job_on_errors_but_lets_transient_ones_retry(monkeypatch, task, service, work, kind) -> None:  # type: ignore[no-untyped-def]
    from pipeline.services import retrain

    module = {"prepopulate": prepopulate, "retrain": retrain}[service]
    corpus = build_corpus(n_articles=1)
    job = Job.objects.create(kind=kind, params={}, corpus=corpus)

    def transient(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OperationalError("connection lost")

    monkeypatch.setattr(module, work, transient)
    with pytest.raises(OperationalError):  # called directly, autoretry re-raises: the job is left for the retry
        getattr(tasks, task)(job.pk)
    job.refresh_from_db()
    assert job.status in (Job.Status.QUEUED, Job.Status.RUNNING) and not job.error

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise ValueError("bad parameters")

    monkeypatch.setattr(module, work, broken)
    assert getattr(tasks, task)(job.pk) == "failed"
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "Traceback" in job.error and "bad parameters" in job.error
    assert job.message == "ValueError: bad parameters"
