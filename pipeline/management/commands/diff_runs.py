"""``manage.py diff_runs A B``: what changes from alignment run A to run B (or between two model
versions' latest runs on a corpus), per phenomenon, with fixed / broken counts where labels exist."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from curation.curate.phenomena import PHENOMENA_ORDER
from pipeline.services import run_diff

COLUMNS = ("added", "removed", "kept", "fixed", "broken", "unverified", "net")


class Command(BaseCommand):
    help = "Compare two alignment runs of one corpus: alignments added, removed, kept; fixed and broken."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("a", help="run id (or model version id with --models)")
        parser.add_argument("b", help="run id (or model version id with --models)")
        parser.add_argument("--models", action="store_true", help="A and B are model versions: use their latest runs")
        parser.add_argument("--corpus", default="", help="with --models: the corpus (name or id)")
        parser.add_argument("--phenomenon", default="", choices=["", *PHENOMENA_ORDER])
        parser.add_argument("--outcome", default="", choices=["", *run_diff.OUTCOMES])
        parser.add_argument("--change", default="", choices=["", *run_diff.CHANGES])
        parser.add_argument("--tsv", default="", help="write the rows to this TSV file ('-' for standard output)")

    def handle(self, *args: Any, **opts: Any) -> None:
        corpus_id = None
        if opts["corpus"]:
            from curation.management.commands._corpus import get_corpus

            corpus_id = get_corpus(opts["corpus"]).pk
        try:
            run_a = run_diff.run_for(opts["a"], corpus_id, model=opts["models"])
            run_b = run_diff.run_for(opts["b"], corpus_id, model=opts["models"])
            diff = run_diff.diff_runs(run_a, run_b)
            rows = run_diff.filter_rows(diff, opts["phenomenon"], opts["outcome"], opts["change"])
        except run_diff.DiffError as exc:
            raise CommandError(str(exc)) from None
        if opts["tsv"] == "-":
            run_diff.write_tsv(sys.stdout, rows)
            return
        out = self.stdout
        out.write(f"run #{run_a.pk} ({run_a.method}) -> run #{run_b.pk} ({run_b.method}) on {run_a.corpus}: "
                  f"{len(diff.pairs)} document pairs compared"
                  + (f", {len(diff.only_a)} only in A and {len(diff.only_b)} only in B left out"
                     if diff.only_a or diff.only_b else ""))
        out.write("phenomenon\t" + "\t".join(COLUMNS))
        for name, counts in diff.by_phenomenon(rows).items():
            out.write(name + "\t" + "\t".join(str(counts[c]) for c in COLUMNS))
        totals = diff.totals(rows)
        out.write("total\t" + "\t".join(str(totals[c]) for c in COLUMNS))
        for side, run in (("a", run_a), ("b", run_b)):
            q = diff.quality[side]
            out.write(f"run #{run.pk} on known labels: P {q['precision']:.3f} R {q['recall']:.3f} F1 {q['f1']:.3f} "
                      f"(tp {q['tp']}, judged predictions {q['n_pred']}, known aligned {q['n_gold']})")
        if opts["tsv"]:
            path = Path(opts["tsv"])
            tmp = path.with_name(path.name + ".part")
            try:
                with tmp.open("w", encoding="utf-8", newline="") as fh:
                    n = run_diff.write_tsv(fh, rows)
                tmp.replace(path)
            except OSError as exc:
                raise CommandError(f"{path}: cannot write: {exc}") from None
            out.write(f"{n} rows written to {path}")
