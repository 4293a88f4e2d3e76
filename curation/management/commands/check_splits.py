"""python manage.py check_splits CORPUS [--splits 35/5/10] [--seed 0] [--min-tokens 1]

Splits the corpus's articles exactly as exports do (``curation.curate.splits.assign_splits``
over article slugs) and reports every sentence text found in more than one split. Exits with
an error when there is any, so it can guard a dataset release."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from curation.curate.splits import parse_ratios
from curation.management.commands._corpus import get_corpus
from curation.queries import article_splits, split_leaks


class Command(BaseCommand):
    help = "Report sentence texts shared across the train/dev/test splits of a corpus (split by article)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("corpus", help="corpus name or id")
        parser.add_argument("--splits", default="35/5/10", help="ratios, e.g. 35/5/10 or train=8,dev=1,test=1")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--min-tokens", type=int, default=1, help="leave out texts shorter than this (default: report all)")
        parser.add_argument("--show", type=int, default=10, help="how many shared texts to print")

    def handle(self, *args: Any, **options: Any) -> None:
        corpus = get_corpus(options["corpus"])
        try:
            ratios = parse_ratios(options["splits"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        split_of = article_splits(corpus.pk, ratios, options["seed"])
        per_split = Counter(split_of.values())
        self.stdout.write(f"{corpus.name}: {len(split_of)} articles; " + ", ".join(f"{s} {per_split.get(s, 0)}" for s in ratios))
        leaks = split_leaks(corpus, split_of, options["min_tokens"])
        for leak in leaks[: options["show"]]:
            where = "; ".join(f"{split}: {', '.join(keys[:3])}" for split, keys in leak.articles.items())
            self.stdout.write(f"  {leak.text[:100]!r} in {where}")
        if leaks:
            raise CommandError(f"{len(leaks)} sentence text(s) shared across splits")
        self.stdout.write(self.style.SUCCESS("no sentence text is shared across splits"))
