"""Shared bits of the pipeline commands (align_corpus, prepopulate, retrain)."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import CommandError, CommandParser

from curation import jobs
from curation.models import Corpus, Job


def add_run_mode(parser: CommandParser) -> None:
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--sync", action="store_true", help="run in this process (no worker needed)")
    mode.add_argument("--wait", action="store_true", help="enqueue, then follow the job with a progress bar")
    parser.add_argument("--timeout", type=float, default=None, help="with --wait: give up after this many seconds")


def get_corpus(value: str) -> Corpus:
    corpus = Corpus.objects.filter(name=value).first()
    if corpus is None and value.isdigit():
        corpus = Corpus.objects.filter(pk=int(value)).first()
    if corpus is None:
        raise CommandError(f"no corpus named {value!r} (names: {', '.join(Corpus.objects.values_list('name', flat=True))})")
    return corpus


def pair_pks(corpus: Corpus, pair_ids: str) -> list[int] | None:
    wanted = [p.strip() for p in pair_ids.split(",") if p.strip()]
    if not wanted:
        return None
    found = dict(corpus.pairs.filter(pair_id__in=wanted).values_list("pair_id", "pk"))
    missing = [p for p in wanted if p not in found]
    if missing:
        raise CommandError(f"unknown pair ids: {', '.join(missing[:10])}")
    return [found[p] for p in wanted]


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


def run_guarded(job_id: int, body: Any) -> None:
    """Run a job body in this process (``--sync``); an exception fails the job, like the task does."""
    try:
        body()
    except KeyboardInterrupt:
        jobs.mark_cancelled(job_id, "interrupted (Ctrl-C)")
        raise
    except Exception as exc:
        jobs.fail_with(job_id, exc)
        raise CommandError(f"job {job_id} failed: {type(exc).__name__}: {exc}") from exc
