"""Send a stale or failed job's work again: ``manage.py resume_job 12 [13 ...]`` or ``--stale``.

A running job is stale when its worker has not reported for ``JOB_STALE_MINUTES`` (/jobs/ and
the API flag it and print this command). Tasks are idempotent, so resuming a job whose worker
was only slow costs duplicate work, never wrong results."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from pipeline import tasks
from pipeline.models import Job


class Command(BaseCommand):
    help = "Resume stale (worker gone) or failed jobs: their remaining work is sent to the queue again."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("job_ids", nargs="*", type=int, help="job ids")
        parser.add_argument("--stale", action="store_true", help="every running job whose worker stopped reporting")

    def handle(self, *args: Any, **opts: Any) -> None:
        chosen = list(Job.objects.filter(pk__in=opts["job_ids"])) if opts["job_ids"] else []
        missing = set(opts["job_ids"]) - {j.pk for j in chosen}
        if missing:
            raise CommandError(f"no job {', '.join(map(str, sorted(missing)))}")
        if opts["stale"]:
            chosen += [j for j in Job.objects.filter(status=Job.Status.RUNNING) if j.is_stale and j not in chosen]
        if not chosen:
            raise CommandError("name job ids or pass --stale" if not opts["stale"] else "no stale job")
        for job in chosen:
            if job.status not in (Job.Status.RUNNING, Job.Status.FAILED, Job.Status.QUEUED):
                self.stderr.write(f"job {job.pk} is {job.status}: nothing to resume")
                continue
            if job.status == Job.Status.RUNNING and not job.is_stale:
                self.stderr.write(f"job {job.pk} is running and its worker reported recently; resuming anyway")
            sent = tasks.resume(job)
            job.refresh_from_db()
            self.stdout.write(f"job {job.pk}: {sent} task(s) sent; now {job.status}: {job.message}")
