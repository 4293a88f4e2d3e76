"""Retrain the neural CRF aligner on verified labels; evaluate on dev/test; register the version."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from curation.management.commands._corpus import get_corpus
from pipeline import tasks
from pipeline.management.commands._jobs import add_run_mode, follow, report, run_here
from pipeline.services import retrain


class Command(BaseCommand):
    help = "Train on the train split of verified labels (split by article group), score dev and test, register."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--corpus", default=None, help="corpus name or id (default: every corpus of --language)")
        parser.add_argument("--language", default="en")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--ratios", default="0.7,0.1,0.2", help="train,dev,test shares of article groups")
        parser.add_argument("--reference-labels", action="store_true", help="also use imported training labels")
        parser.add_argument("--config", default="{}", help='training options as JSON, e.g. {"crf_epochs": 5}')
        parser.add_argument("--baselines", default="", help="baseline methods to score on the same split, comma separated")
        parser.add_argument("--name", default="")
        parser.add_argument("--device", default="auto")
        add_run_mode(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        corpus = get_corpus(opts["corpus"]) if opts["corpus"] else None
        try:
            ratios = [float(x) for x in opts["ratios"].split(",")]
            config = json.loads(opts["config"])
        except ValueError as exc:
            raise CommandError(f"bad --ratios or --config: {exc}") from exc
        params = {
            "language": corpus.language if corpus else opts["language"],
            "seed": opts["seed"], "ratios": ratios,
            "reference_roles": ["labels"] if opts["reference_labels"] else [],
            "config": config, "name": opts["name"], "device": opts["device"],
            "baselines": [b.strip() for b in opts["baselines"].split(",") if b.strip()],
        }
        job = retrain.create_job(params, corpus=corpus)
        if opts["sync"]:
            with tqdm(total=retrain.PROGRESS_TOTAL, desc="retrain", unit="%") as bar:

                def echo(message: str, done: int) -> None:
                    bar.n = done
                    bar.set_postfix_str(message[:60])

                run_here(job.pk, lambda: retrain.run_job(job.pk, echo=echo))
                bar.n = retrain.PROGRESS_TOTAL
                bar.refresh()
            report(self, job.pk)
            return
        tasks.enqueue_retrain(job)
        if opts["wait"]:
            follow(self, job.pk, opts["timeout"])
        else:
            self.stdout.write(f"queued job {job.pk} (queue train); follow it on /jobs/ or with --wait")
