"""Create a labeling job from the command line (same service as the web form).

    manage.py create_labeling_job "Pilot" --corpus newsela --gold-reference --min-seconds 10
    manage.py create_labeling_job "Wiki" --corpus wiki --strategy topk --top-k 3 --gold-tsv gold.tsv
    manage.py create_labeling_job "Active" --corpus newsela --select margin --budget 500 --per-document 20
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import LabelingJob
from annotation.services import job_setup, selection
from curation.models import Corpus


class Command(BaseCommand):
    help = "Create a labeling job over a corpus's candidate pairs, with gold test questions."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--corpus", required=True, help="corpus name")
        parser.add_argument("--strategy", choices=LabelingJob.Strategy.values, default=LabelingJob.Strategy.PARAGRAPH)
        parser.add_argument("--top-k", type=int, default=3)
        parser.add_argument("--pairs", nargs="*", default=[], help="document pair ids (default: all)")
        parser.add_argument("--judgments", type=int, default=5)
        parser.add_argument("--test-every", type=int, default=5)
        parser.add_argument("--min-seconds", type=int, default=10)
        parser.add_argument("--threshold", type=float, default=0.85)
        parser.add_argument("--min-tests", type=int, default=4)
        parser.add_argument("--max-tests", type=int, default=50)
        parser.add_argument("--select", choices=selection.SELECTIONS, default=selection.ALL,
                            help="which candidates to label: all, a random sample, or by the promoted model's uncertainty")
        parser.add_argument("--budget", type=int, default=None, help="with --select: how many pairs")
        parser.add_argument("--per-document", type=int, default=None, help="with --select: cap per document pair")
        parser.add_argument("--second-version", type=int, default=None, help="--select versions: the other model version id")
        parser.add_argument("--random-share", type=float, default=0.0,
                            help="with an uncertainty --select: share of the budget drawn at random (0-1)")
        parser.add_argument("--include-verified", action="store_true",
                            help="label candidate pairs that already have a verified label again (default: left out)")
        parser.add_argument("--seed", type=int, default=0)
        gold = parser.add_mutually_exclusive_group()
        gold.add_argument("--gold-tsv", type=Path, help="label, simple_id, complex_id, explanation")
        gold.add_argument("--gold-reference", action="store_true", help="imported gold sentence alignments")
        gold.add_argument("--gold-verified", action="store_true", help="labels verified in-house")

    def handle(self, *args: Any, **opts: Any) -> None:
        corpus = Corpus.objects.filter(name=opts["corpus"]).first()
        if corpus is None:
            raise CommandError(f"no corpus named {opts['corpus']!r}")
        pairs = corpus.pairs.all()
        if opts["pairs"]:
            pairs = pairs.filter(pair_id__in=opts["pairs"])
        try:
            gold: list[tuple[int, str, str]] = []
            if opts["gold_tsv"]:
                path: Path = opts["gold_tsv"]
                gold = job_setup.gold_from_rows(corpus, job_setup.parse_gold_tsv(path.read_text(encoding="utf-8-sig"), str(path)))
            elif opts["gold_reference"]:
                gold = job_setup.gold_from_reference(corpus, pairs)
            elif opts["gold_verified"]:
                gold = job_setup.gold_from_verified(pairs)
            chosen = selection.Selection(strategy=opts["select"], budget=opts["budget"], per_document=opts["per_document"],
                                         seed=opts["seed"], second_version=opts["second_version"],
                                         random_share=opts["random_share"])
            settings = job_setup.JobSettings(
                judgments_per_pair=opts["judgments"], test_question_every=opts["test_every"], min_seconds=opts["min_seconds"],
                accuracy_threshold=opts["threshold"], min_test_questions=opts["min_tests"], top_k=opts["top_k"],
                selection=chosen, skip_verified=not opts["include_verified"],
            )
            job = job_setup.create_job(
                name=opts["name"], corpus=corpus, created_by=None, strategy=opts["strategy"], pair_ids=opts["pairs"],
                settings=settings, gold=gold, max_tests=opts["max_tests"],
            )
        except (job_setup.JobError, selection.SelectionError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        left_out = job.selection.get("verified_left_out", 0) if isinstance(job.selection, dict) else 0
        self.stdout.write(
            f"job {job.pk} “{job.name}”: {job.items.count()} pairs, {job.test_questions.count()} test questions"
            + (f" ({left_out} already verified pairs left out)" if left_out else "")
        )
