"""Jobs never hang silently: an unreachable broker fails the job with the reason; a running job
whose worker stopped reporting is flagged with the command that resumes it, and resuming works;
progress is a count of done chunks; killed exports' staging folders are removed."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from config.celery import app
from pipeline import jobs, tasks
from pipeline.exports.run import create_export, remove_orphan_staging
from pipeline.models import ExportedDataset, Job, RunChunk
from pipeline.services import align_corpus
from pipeline.tests.pipeline_corpus import build_corpus

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker_down():  # type: ignore[no-untyped-def]
    """Point the Celery app at a port nothing listens on (a real connection refusal, no mock)."""
    # broker_write_url / broker_read_url are filled from broker_url when the app is configured
    # (e.g. CELERY_BROKER_URL=redis://... in CI), so all three point at the dead port
    keys = ("broker_url", "broker_write_url", "broker_read_url", "broker_transport_options", "task_always_eager")
    old = {key: app.conf[key] for key in keys}
    dead = "redis://127.0.0.1:9/0"
    app.conf.update(broker_url=dead, broker_write_url=dead, broker_read_url=dead, broker_transport_options={},
                    task_always_eager=False)
    app._pool = None  # type: ignore[attr-defined]
    app.amqp._producer_pool = None
    yield
    app.conf.update(old)
    app._pool = None  # type: ignore[attr-defined]
    app.amqp._producer_pool = None


def test_broker_down_fails_the_job_with_the_reason(broker_down, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    corpus = build_corpus(n_articles=2)
    run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "jaccard"), 1)
    with django_capture_on_commit_callbacks(execute=True):
        tasks.enqueue_run(run)
    job = Job.objects.get(pk=run.job_id)  # type: ignore[misc]
    assert job.status == Job.Status.FAILED
    assert job.message.startswith("the task queue is unreachable: ")
    assert jobs.unqueued_reason(job.pk) == job.message


def test_broker_down_start_page_says_so(broker_down, transactional_db, client, make_user) -> None:  # type: ignore[no-untyped-def]
    corpus = build_corpus(n_articles=2)
    client.force_login(make_user("rita", "researcher"))
    response = client.post(reverse("pipeline:job_start"), {"action": "align", "corpus": corpus.pk, "method": "jaccard",
                                                           "chunk_size": 1}, follow=True)
    assert response.status_code == 200
    job = Job.objects.get()
    assert job.status == Job.Status.FAILED
    assert "the task queue is unreachable" in response.content.decode()


def test_stale_running_job_is_flagged_with_its_resume_command(client, make_user, settings, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    settings.JOB_STALE_MINUTES = 10
    corpus = build_corpus(n_articles=3)
    run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "jaccard"), 1)
    first = run.chunks.order_by("index").first()
    assert align_corpus.process_chunk(first.pk) == "done"  # one chunk done, then its worker "dies"
    job = Job.objects.get(pk=run.job_id)  # type: ignore[misc]
    assert job.status == Job.Status.RUNNING and not job.is_stale
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=11))
    job.refresh_from_db()
    assert job.is_stale
    client.force_login(make_user("rita", "researcher"))
    page = client.get(reverse("pipeline:job_list")).content.decode()
    assert f"python manage.py resume_job {job.pk}" in page and "worker probably stopped" in page

    settings.CELERY_TASK_ALWAYS_EAGER = True
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            call_command("resume_job", str(job.pk))
    finally:
        app.conf.task_always_eager = False
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED
    assert job.progress_done == job.progress_total == run.chunks.count() == run.chunks.filter(status="done").count()


def test_progress_is_the_count_of_done_chunks_not_increments() -> None:
    corpus = build_corpus(n_articles=4)
    run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "jaccard"), 1)
    chunks = list(run.chunks.order_by("index"))
    for chunk in chunks[:2]:
        align_corpus.process_chunk(chunk.pk)
    # a late writer that counted before the second chunk committed must not pull the figure back
    jobs.set_progress(run.job_id, 1)  # type: ignore[arg-type]
    RunChunk.objects.filter(pk=chunks[2].pk).update(status=RunChunk.Status.DONE)  # done by another worker
    align_corpus.update_run_progress(run)
    assert Job.objects.get(pk=run.job_id).progress_done == 3  # type: ignore[misc]


def test_heartbeat_thread_stamps_the_job(transactional_db) -> None:  # type: ignore[no-untyped-def]
    job = jobs.create_job(Job.Kind.EXPORT, {})
    jobs.start(job.pk)
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    import time

    with jobs.heartbeat(job.pk, every=0.05):
        time.sleep(0.5)
    job.refresh_from_db()
    assert timezone.now() - job.heartbeat_at < timedelta(seconds=5)  # type: ignore[operator]


def test_orphan_staging_folders_are_removed_active_ones_kept(settings, tmp_path: Path, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    settings.EXPORTS_DIR = tmp_path
    corpus = build_corpus(n_articles=2)
    running = create_export(corpus.pk, ExportedDataset.Kind.POOL, {})
    jobs.start(running.job_id)  # type: ignore[arg-type]
    dead = create_export(corpus.pk, ExportedDataset.Kind.POOL, {})
    jobs.fail(dead.job_id, "killed")  # type: ignore[arg-type]
    keep = tmp_path / f".staging-{corpus.pk}-pool-{running.pk}-abcd1234"
    orphan = tmp_path / f".staging-{corpus.pk}-pool-{dead.pk}-deadbeef"
    stray = tmp_path / ".staging-garbage"
    for folder in (keep, orphan, stray):
        folder.mkdir()
        (folder / "train.tsv").write_text("")
    assert sorted(remove_orphan_staging()) == sorted([orphan, stray])
    assert keep.is_dir() and not orphan.exists()
    orphan.mkdir()
    call_command("clean_exports")
    assert not orphan.exists()
    orphan.mkdir()
    with django_assert_num_queries(1):  # one query for the active exports, not one per folder
        assert remove_orphan_staging() == [orphan]
