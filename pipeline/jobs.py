"""The job lifecycle: state changes, the one runner every job kind goes through, and the one
progress recorder.

Every write is a single ``UPDATE ... WHERE`` on the job row, so a web request (cancel), a
management command (progress bar) and several workers can touch the same job without
overwriting each other's fields. A finished job (succeeded, failed, cancelled) never
changes state again.

``run(job_id, body)`` is the lifecycle of a job whose work happens in one process (pre-population,
retraining, exports): gone or finished -> ``GONE``; cancel asked before it started ->
``CANCELLED``; else started, ``body(job, recorder)`` runs and returns a :class:`Finished`; a
:class:`JobCancelled` raised inside marks it cancelled; any other error fails it with its
traceback and propagates (except the ``retry_on`` errors, which leave the job as it is for the
caller to retry). Corpus alignment spreads one job over many chunk tasks; its chunks report
through the same state changes and the same :class:`Outcome` words.

No job hangs silently. Every state change and progress write stamps ``heartbeat_at``, and
:func:`heartbeat` keeps stamping it from a background thread while a body or a chunk runs, so a
running job whose stamp is older than ``JOB_STALE_MINUTES`` has lost its worker: ``Job.is_stale``
flags it on /jobs/ and in the API with ``Job.resume_command`` (``manage.py resume_job``, which
calls :func:`requeue` and enqueues it again). A job whose task could not be sent is failed at once
by :func:`fail_unqueued` with "the task queue is unreachable: ...".
"""

from __future__ import annotations

import contextlib
import enum
import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Expression, F
from django.utils import timezone

from pipeline.models import Job

FINISHED = (Job.Status.SUCCEEDED, Job.Status.FAILED, Job.Status.CANCELLED)
ACTIVE = (Job.Status.QUEUED, Job.Status.RUNNING)

Echo = Callable[[int, int], None]
QUEUE_UNREACHABLE = "the task queue is unreachable"

log = logging.getLogger(__name__)


class Outcome(enum.StrEnum):
    """What one run of a job (or of one chunk of a job) did; tasks return it."""

    DONE = "done"  # the work was done now
    SKIPPED = "skipped"  # already done (a redelivered task), nothing to do
    GONE = "gone"  # no such row, or its job had already finished
    CANCELLED = "cancelled"  # someone asked it to stop
    FAILED = "failed"  # an error; the job row holds the traceback


class JobCancelled(Exception):
    """Raised between units of work when someone asked the job to stop.

    ``result``, when given, is stored on the job (what was done before it stopped)."""

    def __init__(self, message: str = "cancelled", result: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.result = result


@dataclass
class Finished:
    """What a job body returns: the job's result and final message (``SKIPPED``: it was done before).

    ``save`` runs in the transaction that marks the job succeeded (writes that must land with
    it; it may return ``SKIPPED`` when another attempt saved first); ``undo`` runs when that
    transaction fails (e.g. removes files the body put in place)."""

    result: dict[str, Any] = field(default_factory=dict)
    message: str = "done"
    outcome: Outcome = Outcome.DONE
    save: Callable[[], Outcome | None] | None = None
    undo: Callable[[], None] | None = None


def create_job(kind: Job.Kind, params: dict[str, Any], corpus: Any = None, user: Any = None, total: int = 0) -> Job:
    return Job.objects.create(
        kind=kind, params=params, corpus=corpus, created_by=user if user and user.is_authenticated else None,
        progress_total=total,
    )


def record_task(job_id: int, task_id: str) -> None:
    Job.objects.filter(pk=job_id).update(celery_task_id=task_id[:64])


def start(job_id: int, total: int | None = None, message: str = "") -> bool:
    """Queued -> running (keeps the first start time). False when the job is gone or finished."""
    fields: dict[str, Any] = {"status": Job.Status.RUNNING, "heartbeat_at": timezone.now()}
    if total is not None:
        fields["progress_total"] = total
    if message:
        fields["message"] = message[:500]
    updated = Job.objects.filter(pk=job_id, status__in=ACTIVE).update(**fields)
    Job.objects.filter(pk=job_id, started_at__isnull=True).update(started_at=timezone.now())
    return bool(updated)


def set_progress(job_id: int, done: int | Expression, total: int | None = None, message: str = "") -> None:
    """``done`` may be an expression evaluated in the UPDATE itself (a count of done chunks)."""
    fields: dict[str, Any] = {"progress_done": done, "heartbeat_at": timezone.now()}
    if total is not None:
        fields["progress_total"] = total
    if message:
        fields["message"] = message[:500]
    Job.objects.filter(pk=job_id, status__in=ACTIVE).update(**fields)


def add_progress(job_id: int, step: int = 1) -> None:
    Job.objects.filter(pk=job_id, status__in=ACTIVE).update(progress_done=F("progress_done") + step, heartbeat_at=timezone.now())


def beat(job_id: int) -> None:
    Job.objects.filter(pk=job_id, status=Job.Status.RUNNING).update(heartbeat_at=timezone.now())


def heartbeat_seconds() -> float:
    return float(getattr(settings, "JOB_HEARTBEAT_SECONDS", 30))


@contextlib.contextmanager
def heartbeat(job_id: int | None, every: float | None = None) -> Iterator[None]:
    """Stamp the job's ``heartbeat_at`` every ``every`` seconds from a thread while the block runs
    (a long step with no progress to report still shows its worker is alive)."""
    interval = heartbeat_seconds() if every is None else every
    if job_id is None or interval <= 0:
        yield
        return
    stop = threading.Event()

    def loop() -> None:
        try:
            while not stop.wait(interval):
                try:
                    beat(job_id)
                except Exception:  # a missed beat only makes the job look stale sooner
                    log.warning("heartbeat of job %s failed", job_id, exc_info=True)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=loop, name=f"job-{job_id}-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def requeue(job_id: int, message: str) -> bool:
    """A running (stale) or failed job back to queued so that its task can be sent again."""
    return bool(
        Job.objects.filter(pk=job_id, status__in=(Job.Status.RUNNING, Job.Status.QUEUED, Job.Status.FAILED)).update(
            status=Job.Status.QUEUED, cancel_requested=False, error="", finished_at=None, message=message[:500],
            heartbeat_at=timezone.now(),
        )
    )


def unqueued_reason(job_id: int | None) -> str:
    """The "task queue is unreachable" message when sending the job's task failed, else ""."""
    if job_id is None:
        return ""
    message = Job.objects.filter(pk=job_id, status=Job.Status.FAILED).values_list("message", flat=True).first() or ""
    return message if message.startswith(QUEUE_UNREACHABLE) else ""


def fail_unqueued(job_id: int, exc: BaseException) -> bool:
    """The job's task could not be sent (broker down): fail it now instead of leaving it queued forever."""
    message = f"{QUEUE_UNREACHABLE}: {type(exc).__name__}: {exc}"
    return fail(job_id, "".join(traceback.format_exception(exc)), message=message)


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


def mark_cancelled(job_id: int, message: str = "cancelled", result: dict[str, Any] | None = None) -> bool:
    fields: dict[str, Any] = {"status": Job.Status.CANCELLED, "finished_at": timezone.now(), "message": message[:500]}
    if result is not None:
        fields["result"] = result
    return bool(Job.objects.filter(pk=job_id, status__in=ACTIVE).update(**fields))


def cancel_requested(job_id: int) -> bool:
    """True when the job is gone, finished, or someone asked it to stop."""
    row = Job.objects.filter(pk=job_id).values_list("status", "cancel_requested").first()
    return row is None or row[0] in FINISHED or bool(row[1])


def check_cancel(job_id: int) -> None:
    if cancel_requested(job_id):
        raise JobCancelled(f"job {job_id} was cancelled")


class ProgressRecorder:
    """A job's progress, written to its row at most every ``interval`` seconds.

    Call it like the engine's callback, ``recorder(done, total)``, or count units with
    ``step(n)``; ``finish()`` writes the last figures. ``echo(done, total)`` (a command's tqdm
    bar) hears every call, or every ``echo_every`` units when counting one at a time. With
    ``check_cancel`` it raises :class:`JobCancelled` at the same throttled rate once someone
    asked the job to stop, so a long loop stops between two units of work.
    """

    def __init__(
        self,
        job_id: int,
        total: int = 0,
        *,
        echo: Echo | None = None,
        interval: float = 0.5,
        echo_every: int = 1,
        check_cancel: bool = True,
    ) -> None:
        self.job_id = job_id
        self.done = 0
        self.total = total
        self.echo = echo
        self.interval = interval
        self.echo_every = max(echo_every, 1)
        self.check = check_cancel
        self._last: float | None = None

    def __call__(self, done: int, total: int | None = None, message: str = "") -> None:
        self.done = done
        if total is not None:
            self.total = total
        if self.echo is not None:
            self.echo(self.done, self.total)
        self._write(message, force=bool(message) or self.done >= self.total)

    def step(self, n: int = 1) -> None:
        self.done += n
        if n == 1 and self.done % self.echo_every:
            return
        if self.echo is not None:
            self.echo(self.done, self.total)
        self._write()

    def finish(self) -> None:
        if self.echo is not None:
            self.echo(self.done, self.total)
        set_progress(self.job_id, self.done, self.total)

    def _write(self, message: str = "", force: bool = False) -> None:
        now = time.monotonic()
        if not force and self._last is not None and now - self._last < self.interval:
            return
        self._last = now
        set_progress(self.job_id, self.done, self.total, message)
        if self.check:
            check_cancel(self.job_id)


def run(
    job_id: int,
    body: Callable[[Job, ProgressRecorder], Finished],
    *,
    echo: Echo | None = None,
    echo_every: int = 1,
    message: str = "",
    retry_on: tuple[type[BaseException], ...] = (),
) -> Outcome:
    """The lifecycle of one job run in this process (see the module docstring)."""
    job = Job.objects.filter(pk=job_id).select_related("corpus", "created_by").first()
    if job is None or job.status in FINISHED:
        return Outcome.GONE
    if job.cancel_requested:
        mark_cancelled(job_id)
        return Outcome.CANCELLED
    start(job_id, message=message)
    recorder = ProgressRecorder(job_id, job.progress_total, echo=echo, echo_every=echo_every)
    try:
        with heartbeat(job_id):
            finished = body(job, recorder)
    except JobCancelled as exc:
        mark_cancelled(job_id, exc.message, exc.result)
        return Outcome.CANCELLED
    except retry_on:
        raise
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            mark_cancelled(job_id, "interrupted (Ctrl-C)")
        else:
            fail_with(job_id, exc)
        raise
    outcome = finished.outcome
    try:
        with transaction.atomic():
            if finished.save is not None:
                outcome = finished.save() or outcome
            finish(job_id, result=finished.result, message=finished.message)
    except BaseException as exc:
        if finished.undo is not None:
            finished.undo()
        if not isinstance(exc, retry_on):
            fail_with(job_id, exc)
        raise
    return outcome


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
