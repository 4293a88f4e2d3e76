"""Shared bits of the job commands (prepopulate, align_corpus, retrain, export_dataset):
the run mode (queue, ``--wait``, ``--sync``), following a job, and its report."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError, CommandParser

from pipeline import jobs
from pipeline.models import Job


def add_run_mode(parser: CommandParser) -> None:
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--sync", action="store_true", help="run in this process (no worker needed)")
    mode.add_argument("--wait", action="store_true", help="enqueue, then follow the job with a progress bar")
    parser.add_argument("--timeout", type=float, default=None, help="with --wait: give up after this many seconds")


def report(command: Any, job_id: int) -> None:
    job = Job.objects.get(pk=job_id)
    line = f"job {job.pk} {job.status}: {job.message}"
    if job.status == Job.Status.SUCCEEDED:
        command.stdout.write(command.style.SUCCESS(line))
        if job.result:
            command.stdout.write(str(job.result))
    else:
        command.stdout.write(command.style.ERROR(line) if job.status == Job.Status.FAILED else line)
        if job.error:
            command.stderr.write(job.error[-3000:])
        if job.status == Job.Status.FAILED:
            raise CommandError(f"job {job.pk} failed")


def follow(command: Any, job_id: int, timeout: float | None) -> None:
    try:
        jobs.follow(job_id, timeout=timeout, file=sys.stderr)
    except TimeoutError as exc:
        raise CommandError(str(exc)) from exc
    report(command, job_id)


def run_here(job_id: int, body: Callable[[], Any]) -> None:
    """Run a job in this process (``--sync``); its lifecycle already failed the job on an error."""
    try:
        body()
    except Exception as exc:
        raise CommandError(f"job {job_id} failed: {type(exc).__name__}: {exc}") from exc
