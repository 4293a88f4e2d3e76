"""Job state changes and a throttled progress recorder.

Every write is a single ``UPDATE ... WHERE`` on the job row, so a web request (cancel), a
management command (progress bar) and several workers can touch the same job without
overwriting each other's fields. A finished job (succeeded, failed, cancelled) never
changes state again.
"""

from __future__ import annotations

import time
import traceback
from typing import Any

from django.db.models import F
from django.utils import timezone

from curation.models import Job

FINISHED = (Job.Status.SUCCEEDED, Job.Status.FAILED, Job.Status.CANCELLED)
ACTIVE = (Job.Status.QUEUED, Job.Status.RUNNING)


class JobCancelled(Exception):
    """Raised between units of work when someone asked the job to stop."""


def create_job(kind: Job.Kind, params: dict[str, Any], corpus: Any = None, user: Any = None, total: int = 0) -> Job:
    return Job.objects.create(
        kind=kind, params=params, corpus=corpus, created_by=user if user and user.is_authenticated else None,
        progress_total=total,
    )


def record_task(job_id: int, task_id: str) -> None:
    Job.objects.filter(pk=job_id).update(celery_task_id=task_id[:64])


def start(job_id: int, total: int | None = None, message: str = "") -> bool:
    """Queued -> running (keeps the first start time). False when the job is gone or finished."""
    fields: dict[str, Any] = {"status": Job.Status.RUNNING}
    if total is not None:
        fields["progress_total"] = total
    if message:
        fields["message"] = message[:500]
    updated = Job.objects.filter(pk=job_id, status__in=ACTIVE).update(**fields)
    Job.objects.filter(pk=job_id, started_at__isnull=True).update(started_at=timezone.now())
    return bool(updated)


def set_progress(job_id: int, done: int, total: int | None = None, message: str = "") -> None:
    fields: dict[str, Any] = {"progress_done": done}
    if total is not None:
        fields["progress_total"] = total
    if message:
        fields["message"] = message[:500]
    Job.objects.filter(pk=job_id, status__in=ACTIVE).update(**fields)


def add_progress(job_id: int, step: int = 1) -> None:
    Job.objects.filter(pk=job_id, status__in=ACTIVE).update(progress_done=F("progress_done") + step)


def finish(job_id: int, result: dict[str, Any] | None = None, message: str = "done") -> bool:
    fields: dict[str, Any] = {"status": Job.Status.SUCCEEDED, "finished_at": timezone.now(), "message": message[:500]}
    if result is not None:
        fields["result"] = result
    return bool(Job.objects.filter(pk=job_id, status__in=ACTIVE).update(**fields))


def fail(job_id: int, error: str, message: str = "failed") -> bool:
    return bool(
        Job.objects.filter(pk=job_id, status__in=ACTIVE).update(
            status=Job.Status.FAILED, error=error[-20000:], finished_at=timezone.now(), message=message[:500]
        )
    )


def fail_with(job_id: int, exc: BaseException) -> bool:
    """Fail the job with the exception's traceback as its error and ``Type: message`` as its message."""
    return fail(job_id, "".join(traceback.format_exception(exc)), message=f"{type(exc).__name__}: {exc}")


def request_cancel(job_id: int) -> bool:
    """Ask a job to stop; a queued job that no worker has taken yet is cancelled at once."""
    updated = Job.objects.filter(pk=job_id, status__in=ACTIVE).update(cancel_requested=True)
    Job.objects.filter(pk=job_id, status=Job.Status.QUEUED, progress_done=0).update(
        status=Job.Status.CANCELLED, finished_at=timezone.now(), message="cancelled before it started"
    )
    return bool(updated)


def mark_cancelled(job_id: int, message: str = "cancelled") -> bool:
    return bool(
        Job.objects.filter(pk=job_id, status__in=ACTIVE).update(
            status=Job.Status.CANCELLED, finished_at=timezone.now(), message=message[:500]
        )
    )


def cancel_requested(job_id: int) -> bool:
    """True when the job is gone, finished, or someone asked it to stop."""
    row = Job.objects.filter(pk=job_id).values_list("status", "cancel_requested").first()
    return row is None or row[0] in FINISHED or bool(row[1])


def check_cancel(job_id: int) -> None:
    if cancel_requested(job_id):
        raise JobCancelled(f"job {job_id} was cancelled")


class ProgressRecorder:
    """A ``(done, total)`` callback for the engine that writes at most every ``interval`` seconds.

    With ``check_cancel`` it raises :class:`JobCancelled` from inside the engine's loop once
    someone asks the job to stop (checked at the same throttled rate).
    """

    def __init__(self, job_id: int, interval: float = 0.5, offset: int = 0, check_cancel: bool = True) -> None:
        self.job_id = job_id
        self.interval = interval
        self.offset = offset
        self.check = check_cancel
        self._last: float | None = None

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and self._last is not None and now - self._last < self.interval:
            return
        self._last = now
        set_progress(self.job_id, self.offset + done, self.offset + total)
        if self.check:
            check_cancel(self.job_id)


def follow(job_id: int, poll: float = 1.0, timeout: float | None = None, file: Any = None) -> Job:
    """Show a tqdm bar of the job's progress until it finishes (management commands' ``--wait``)."""
    from tqdm import tqdm

    started = time.monotonic()
    job = Job.objects.get(pk=job_id)
    with tqdm(total=job.progress_total or None, desc=f"{job.kind} #{job.pk}", unit="step", file=file) as bar:
        while True:
            job.refresh_from_db()
            if job.progress_total and bar.total != job.progress_total:
                bar.total = job.progress_total
            bar.n = job.progress_done
            bar.set_postfix_str(job.message[:60], refresh=False)
            bar.refresh()
            if job.status in FINISHED:
                return job
            if timeout is not None and time.monotonic() - started > timeout:
                raise TimeoutError(f"job {job_id} still {job.status} after {timeout:.0f}s")
            time.sleep(poll)
