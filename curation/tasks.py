"""Celery tasks: thin adapters over :mod:`curation.services`.

Each task takes ids, exits quietly when its row is gone or its work is done, and retries only
transient errors (database or broker connection trouble). Anything else fails the job with
its traceback. Routes (settings.CELERY_TASK_ROUTES): ``align_*`` and ``prepopulate*`` go to the
``align`` queue, ``retrain*`` to ``train``. Acknowledgement is late and a task whose worker
dies is rejected back to the queue, so a killed worker's chunk runs again elsewhere.
"""

from __future__ import annotations

import logging
import os
import socket
import traceback
from collections.abc import Callable

from celery import shared_task

from curation import jobs
from curation.services import align_corpus, prepopulate, retrain
from curation.task_policy import RETRY, TRANSIENT_ERRORS

log = logging.getLogger(__name__)


def _failed(job_id: int | None, exc: Exception) -> None:
    log.exception("job %s failed", job_id)
    if job_id is not None:
        jobs.fail_with(job_id, exc)


@shared_task(name="curation.tasks.align_chunk", bind=True, **RETRY)
def align_chunk(self, chunk_id: int) -> str:  # type: ignore[no-untyped-def]
    worker = f"{self.request.hostname or socket.gethostname()}:{os.getpid()}"
    try:
        return align_corpus.process_chunk(chunk_id, worker=worker)
    except TRANSIENT_ERRORS:
        raise
    except Exception as exc:
        log.exception("chunk %s failed", chunk_id)
        align_corpus.fail_chunk(chunk_id, "".join(traceback.format_exception(exc)))
        return "failed"


def _run_job(body: Callable[[int], str], job_id: int) -> str:
    """Run a job body; transient errors propagate (the task retries), anything else fails the job."""
    try:
        return body(job_id)
    except TRANSIENT_ERRORS:
        raise
    except Exception as exc:
        _failed(job_id, exc)
        return "failed"


@shared_task(name="curation.tasks.prepopulate_job", bind=True, **RETRY)
def prepopulate_job(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    return _run_job(prepopulate.run_job, job_id)


@shared_task(name="curation.tasks.retrain_job", bind=True, **RETRY)
def retrain_job(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    return _run_job(retrain.run_job, job_id)
