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
reads must be visible to the worker) and keep the task id on the job row.
"""

from __future__ import annotations

import logging
import os
import socket
import traceback
from typing import Any

from celery import shared_task
from django.db import InterfaceError, transaction
from django.db import OperationalError as DatabaseOperationalError
from kombu.exceptions import OperationalError as BrokerOperationalError

from pipeline import jobs
from pipeline.exports.parameters import ExportError
from pipeline.exports.run import run_export
from pipeline.jobs import Outcome
from pipeline.models import AlignmentRun, Job, RunChunk
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
    try:
        return prepopulate.run_job(job_id, retry_on=TRANSIENT_ERRORS)
    except TRANSIENT_ERRORS:
        raise
    except Exception:  # the job row holds the traceback
        log.exception("job %s failed", job_id)
        return Outcome.FAILED


@shared_task(name="pipeline.retrain", bind=True, **RETRY)
def retrain_job(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    try:
        return retrain.run_job(job_id, retry_on=TRANSIENT_ERRORS)
    except TRANSIENT_ERRORS:
        raise
    except Exception:  # the job row holds the traceback
        log.exception("job %s failed", job_id)
        return Outcome.FAILED


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
    try:
        return imports.run_job(job_id, retry_on=TRANSIENT_ERRORS)
    except TRANSIENT_ERRORS:
        raise
    except Exception:  # the job row holds the error (file:line: problem)
        log.warning("import job %s failed", job_id)
        return Outcome.FAILED


def _send_on_commit(job_id: int, task: Any, *args: Any) -> None:
    transaction.on_commit(lambda: jobs.record_task(job_id, task.delay(*args).id))


def enqueue_prepopulate(job: Job) -> None:
    _send_on_commit(job.pk, prepopulate_job, job.pk)


def enqueue_retrain(job: Job) -> None:
    _send_on_commit(job.pk, retrain_job, job.pk)


def enqueue_import(job: Job) -> None:
    _send_on_commit(job.pk, import_corpus_job, job.pk)


def enqueue_export(dataset_id: int) -> None:
    transaction.on_commit(lambda: export_dataset.delay(dataset_id))


def enqueue_run(run: AlignmentRun, queue: str | None = None) -> None:
    """Send one task per pending chunk once the surrounding transaction commits.

    ``queue`` overrides the route (``align``), e.g. to keep a dedicated pool of workers apart."""
    chunk_ids = list(run.chunks.filter(status=RunChunk.Status.PENDING).values_list("pk", flat=True))
    job_id = run.job_id

    def send() -> None:
        first = ""
        for chunk_id in chunk_ids:
            sent = align_chunk.apply_async((chunk_id,), queue=queue) if queue else align_chunk.delay(chunk_id)
            first = first or sent.id
        if job_id is not None and first:  # the first chunk's task; each chunk row names its worker
            Job.objects.filter(pk=job_id, celery_task_id="").update(celery_task_id=first)

    transaction.on_commit(send)
