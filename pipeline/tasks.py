"""Every Celery task and every function that enqueues one; nothing else in the project touches Celery.

Tasks are thin: they take ids, call a service's job body through :func:`pipeline.jobs.run`
(or process one chunk of a corpus alignment), and return a :class:`pipeline.jobs.Outcome`.
They exit quietly when their row is gone or their work is done, and retry only transient
errors (database or broker connection trouble, with backoff); anything else fails the job with
its traceback. Names are explicit and stable (``pipeline.<task>``); settings.CELERY_TASK_ROUTES
sends ``align_chunk`` and ``prepopulate`` to the ``align`` queue, ``retrain`` to ``train``,
``export_dataset`` to ``export`` and ``import_corpus`` to ``default``. Acknowledgement is late and a task whose worker dies is
rejected back to the queue, so a killed worker's chunk runs again elsewhere.

The ``enqueue_*`` functions send a task once the current transaction commits (the rows it
reads must be visible to the worker) and keep the task id on the job row. When the broker
cannot be reached they fail the job with "the task queue is unreachable: ..." (the caller reads
it back from the row; nothing raises into the request) instead of leaving it queued forever.
``resume`` sends a stale or failed job's work again (``manage.py resume_job``).
"""

from __future__ import annotations

import logging
import os
import socket
import traceback
from collections.abc import Callable
from typing import Any

from celery import shared_task
from django.db import InterfaceError, transaction
from django.db import OperationalError as DatabaseOperationalError
from kombu.exceptions import OperationalError as BrokerOperationalError

from pipeline import jobs
from pipeline.exports.parameters import ExportError
from pipeline.exports.run import run_export
from pipeline.jobs import Outcome
from pipeline.models import AlignmentRun, ExportedDataset, Job, RunChunk
from pipeline.services import align_corpus, imports, prepopulate, retrain

log = logging.getLogger(__name__)

TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    DatabaseOperationalError,
    InterfaceError,
    BrokerOperationalError,
    ConnectionError,
    TimeoutError,
)
# Results live on the Job / RunChunk / ExportedDataset rows; nothing goes to the result backend.
RETRY: dict[str, Any] = {
    "ignore_result": True,
    "autoretry_for": TRANSIENT_ERRORS,
    "retry_backoff": 2,
    "retry_backoff_max": 60,
    "max_retries": 8,
    "retry_jitter": True,
}


def _run_job(run_job: Callable[..., str], job_id: int, failed: Callable[[], None] | None = None) -> str:
    """A job body (``run_job(job_id, retry_on=...)``): transient errors raise for Celery's retry; any other
    fails the job (its row holds the traceback), is logged (``failed``; default: with the traceback) and
    returns ``Outcome.FAILED``."""
    try:
        return run_job(job_id, retry_on=TRANSIENT_ERRORS)
    except TRANSIENT_ERRORS:
        raise
    except Exception:
        if failed is None:
            log.exception("job %s failed", job_id)
        else:
            failed()
        return Outcome.FAILED


@shared_task(name="pipeline.align_chunk", bind=True, **RETRY)
def align_chunk(self, chunk_id: int) -> str:  # type: ignore[no-untyped-def]
    worker = f"{self.request.hostname or socket.gethostname()}:{os.getpid()}"
    try:
        return align_corpus.process_chunk(chunk_id, worker=worker)
    except TRANSIENT_ERRORS:
        raise
    except Exception as exc:
        log.exception("chunk %s failed", chunk_id)
        align_corpus.fail_chunk(chunk_id, "".join(traceback.format_exception(exc)))
        return Outcome.FAILED


@shared_task(name="pipeline.prepopulate", bind=True, **RETRY)
def prepopulate_job(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    return _run_job(prepopulate.run_job, job_id)


@shared_task(name="pipeline.retrain", bind=True, **RETRY)
def retrain_job(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    return _run_job(retrain.run_job, job_id)


@shared_task(name="pipeline.export_dataset", bind=True, **RETRY)
def export_dataset(self, dataset_id: int) -> str:  # type: ignore[no-untyped-def]
    try:
        return run_export(dataset_id, retry_on=TRANSIENT_ERRORS)
    except TRANSIENT_ERRORS:
        raise
    except ExportError as exc:
        log.warning("export %s rejected: %s", dataset_id, exc)
        return Outcome.FAILED
    except Exception:  # the job row holds the traceback
        log.exception("export %s failed", dataset_id)
        return Outcome.FAILED


@shared_task(name="pipeline.import_corpus", bind=True, **RETRY)
def import_corpus_job(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    """An uploaded corpus (files or an archive) imported in one transaction (pipeline.services.imports)."""
    # the job row holds the error (file:line: problem): no traceback in the log
    return _run_job(imports.run_job, job_id, failed=lambda: log.warning("import job %s failed", job_id))


# Publishing gives up after about two seconds when the broker is down (kombu's default would
# retry for longer while the user's request waits).
PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 1.0}


def _send(job_id: int | None, task: Any, *args: Any, queue: str | None = None) -> str:
    """Send one task; on a broker failure fail ``job_id`` and return ""."""
    try:
        options: dict[str, Any] = {"retry_policy": PUBLISH_RETRY_POLICY}
        if queue:
            options["queue"] = queue
        return str(task.apply_async(args, **options).id)
    except Exception as exc:  # kombu/redis raise many types when the broker is unreachable
        log.error("could not enqueue %s for job %s: %s", task.name, job_id, exc)
        if job_id is not None:
            jobs.fail_unqueued(job_id, exc)
        return ""


def _send_on_commit(job_id: int, task: Any, *args: Any, queue: str | None = None) -> None:
    def send() -> None:
        if task_id := _send(job_id, task, *args, queue=queue):
            jobs.record_task(job_id, task_id)

    transaction.on_commit(send)


def enqueue_prepopulate(job: Job) -> None:
    _send_on_commit(job.pk, prepopulate_job, job.pk)


def enqueue_retrain(job: Job, queue: str | None = None) -> None:
    """``queue`` overrides the route (``train``), as for :func:`enqueue_run`."""
    _send_on_commit(job.pk, retrain_job, job.pk, queue=queue)


def enqueue_import(job: Job) -> None:
    _send_on_commit(job.pk, import_corpus_job, job.pk)


def enqueue_export(dataset_id: int) -> None:
    job_id = ExportedDataset.objects.filter(pk=dataset_id).values_list("job_id", flat=True).first()
    if job_id is None:
        transaction.on_commit(lambda: _send(None, export_dataset, dataset_id))
    else:
        _send_on_commit(job_id, export_dataset, dataset_id)


def enqueue_run(run: AlignmentRun, queue: str | None = None) -> None:
    """Send one task per pending chunk once the surrounding transaction commits.

    ``queue`` overrides the route (``align``), e.g. to keep a dedicated pool of workers apart."""
    chunk_ids = list(run.chunks.filter(status=RunChunk.Status.PENDING).values_list("pk", flat=True))
    job_id = run.job_id

    def send() -> None:
        first = ""
        for chunk_id in chunk_ids:
            sent = _send(job_id, align_chunk, chunk_id, queue=queue)
            if not sent:
                return  # the job is failed with the reason; resume_job sends the rest later
            first = first or sent
        if job_id is not None and first:  # the first chunk's task; each chunk row names its worker
            Job.objects.filter(pk=job_id, celery_task_id="").update(celery_task_id=first)

    transaction.on_commit(send)


def resume(job: Job) -> int:
    """Send a stale (worker gone) or failed job's work again; returns the tasks sent.

    Every task is idempotent (a done chunk, a saved export are skipped), so a job whose worker
    was only slow loses nothing but the duplicate work."""
    if job.kind == Job.Kind.ALIGN_CORPUS:
        run = AlignmentRun.objects.filter(job=job).order_by("-pk").first()
        if run is None:
            return 0
        left = align_corpus.resume_run(run)
        jobs.requeue(job.pk, f"resumed: {left} chunks left")
        if left:
            enqueue_run(run)
        return left
    jobs.requeue(job.pk, "resumed")
    if job.kind == Job.Kind.EXPORT:
        dataset = ExportedDataset.objects.filter(job=job).first()
        if dataset is None:
            return 0
        enqueue_export(dataset.pk)
    elif job.kind == Job.Kind.RETRAIN:
        enqueue_retrain(job)
    else:
        enqueue_prepopulate(job)
    return 1
