"""Pre-populate paragraph links and candidate sentence pairs for a corpus (or some of its pairs)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from curation.management.commands._corpus import get_corpus, pair_pks
from pipeline import tasks
from pipeline.management.commands._jobs import add_run_mode, follow, report, run_here
from pipeline.services import prepopulate


class Command(BaseCommand):
    help = "Paragraph alignment + candidate sentence pairs (idempotent; manual links are kept)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("corpus", help="corpus name or id")
        parser.add_argument("--pairs", default="", help="pair ids, comma separated (default: every pair)")
        parser.add_argument("--similarity", default="tfidf", help="paragraph similarity (tfidf, jaccard, c3g, ...)")
        parser.add_argument("--algorithm", default=None, help="news | wikipedia (default: by corpus kind)")
        parser.add_argument("--strategy", default=None, choices=["paragraph", "topk"], help="default: by corpus kind")
        parser.add_argument("--top-k", type=int, default=3)
        parser.add_argument("--score-with", default="promoted",
                            help='score candidates with: "promoted" (model of the language, if any), a method, or ""')
        add_run_mode(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        corpus = get_corpus(opts["corpus"])
        options = prepopulate.PrepopulateOptions(similarity=opts["similarity"], algorithm=opts["algorithm"],
                                                 strategy=opts["strategy"], top_k=opts["top_k"],
                                                 score_with=opts["score_with"])
        job = prepopulate.create_job(corpus, pair_pks(corpus, opts["pairs"]), options)
        if opts["sync"]:
            with tqdm(desc=f"prepopulate {corpus.name}", unit="pair") as bar:

                def progress(done: int, total: int) -> None:
                    bar.total = total
                    bar.update(done - bar.n)

                run_here(job.pk, lambda: prepopulate.run_job(job.pk, progress=progress))
            report(self, job.pk)
            return
        tasks.enqueue_prepopulate(job)
        if opts["wait"]:
            follow(self, job.pk, opts["timeout"])
        else:
            self.stdout.write(f"queued job {job.pk} (queue align); follow it on /jobs/ or with --wait")
