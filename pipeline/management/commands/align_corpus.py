"""Align every document pair of a corpus with a model version or a baseline, in chunks."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from curation.management.commands._corpus import get_corpus, pair_pks
from pipeline import jobs, tasks
from pipeline.management.commands._jobs import add_run_mode, follow, report
from pipeline.models import AlignmentRun
from pipeline.services import align_corpus


class Command(BaseCommand):
    help = "Align a corpus (promoted model by default); one Celery task per chunk on the align queue."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("corpus", nargs="?", help="corpus name or id")
        parser.add_argument("--resume", type=int, default=None, metavar="RUN",
                            help="resume a failed or cancelled run (its done chunks are kept)")
        parser.add_argument("--model", type=int, default=None, help="ModelVersion id (default: the promoted one)")
        parser.add_argument("--method", default=None, help="a baseline method instead of a model version")
        parser.add_argument("--chunk-size", type=int, default=align_corpus.DEFAULT_CHUNK_SIZE, help="pairs per task")
        parser.add_argument("--pairs", default="", help="pair ids, comma separated (default: every pair)")
        add_run_mode(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["resume"] is not None:
            run = AlignmentRun.objects.filter(pk=opts["resume"]).first()
            if run is None:
                raise CommandError(f"no alignment run {opts['resume']}")
            left = align_corpus.resume_run(run)
            self.stdout.write(f"run {run.pk}: {left} chunks left, job {run.job_id}")
            if not left:
                return
            corpus = run.corpus
        else:
            if not opts["corpus"]:
                raise CommandError("name a corpus (or --resume RUN)")
            corpus = get_corpus(opts["corpus"])
            try:
                choice = align_corpus.resolve_model(corpus, opts["method"], opts["model"])
                run = align_corpus.plan_run(corpus, choice, opts["chunk_size"], pair_pks(corpus, opts["pairs"]))
            except align_corpus.AlignSetupError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"run {run.pk}: {choice.method}"
                              f"{' (model version ' + str(choice.model_version.pk) + ')' if choice.model_version else ''}, "
                              f"{run.params['pairs']} pairs in {run.chunks.count()} chunks, job {run.job_id}")
        if opts["sync"]:
            with tqdm(total=run.chunks.count(), desc=f"align {corpus.name}", unit="chunk") as bar:

                def progress(done: int, total: int) -> None:
                    bar.update(done - bar.n)

                try:
                    align_corpus.run_inline(run, progress)
                except KeyboardInterrupt:
                    jobs.mark_cancelled(run.job_id, "interrupted (Ctrl-C)")  # type: ignore[arg-type]
                    raise
                except Exception as exc:
                    raise CommandError(f"{type(exc).__name__}: {exc}") from exc
            report(self, run.job_id)  # type: ignore[arg-type]
            return
        tasks.enqueue_run(run)
        if opts["wait"]:
            follow(self, run.job_id, opts["timeout"])  # type: ignore[arg-type]
        else:
            self.stdout.write("queued; follow it on /jobs/ or with --wait")
