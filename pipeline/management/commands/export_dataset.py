"""Export a Manual, Auto or pool dataset of a corpus, with a tqdm progress bar (or via the worker)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from curation.curate.filters import DEFAULTS
from curation.management.commands._corpus import get_corpus
from pipeline.exports.run import ExportError, create_export, run_export
from pipeline.management.commands._jobs import add_run_mode, follow, report
from pipeline.models import AlignmentRun, ExportedDataset
from pipeline.tasks import enqueue_export


def parse_filters(values: list[str]) -> dict[str, dict[str, Any] | None]:
    """``--filter gleu`` (published default) or ``--filter gleu:min=0.2,max=0.8`` or ``--filter all``."""
    out: dict[str, dict[str, Any] | None] = {}
    for value in values:
        name, _, rest = value.partition(":")
        if name == "all":
            out.update({k: {} for k in DEFAULTS if k != "test_set"})
            continue
        options: dict[str, Any] = {}
        for part in filter(None, rest.split(",")):
            key, _, raw = part.partition("=")
            try:
                options[key] = json.loads(raw)
            except json.JSONDecodeError:
                options[key] = raw
        out[name] = options
    return out


class Command(BaseCommand):
    help = "Export a dataset (manual | auto | pool) as TSV, JSONL or Parquet, with a dataset card."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("corpus", help="corpus name or id")
        parser.add_argument("kind", choices=[k.value for k in ExportedDataset.Kind])
        parser.add_argument("--format", default="tsv", choices=[f.value for f in ExportedDataset.Format])
        parser.add_argument("--run", type=int, default=None, help="AlignmentRun id (auto; default: the corpus's latest)")
        parser.add_argument("--splits", default="35/5/10", help="ratios by article group, e.g. 35/5/10; 'none' for one file")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--filter", action="append", default=[], dest="filters",
                            help=f"auto filters: {', '.join(DEFAULTS)} or all; options as name:key=value,key=value")
        parser.add_argument("--test-set", default="", help="file of test-set complex sentences (adds the test_set filter)")
        parser.add_argument("--synthetic-ratio", type=float, default=0.0, help="synthetic rows per real training row")
        parser.add_argument("--no-reference", action="store_true", help="manual: leave imported reference labels out")
        parser.add_argument("--no-derive", action="store_true", help="manual: do not derive non-adjacent levels")
        parser.add_argument("--labels", default="", help="comma-separated labels to keep")
        add_run_mode(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        corpus = get_corpus(opts["corpus"])
        run_id = opts["run"]
        if opts["kind"] == "auto" and run_id is None:
            run = AlignmentRun.objects.filter(corpus=corpus).order_by("-pk").first()
            if run is None:
                raise CommandError(f"corpus {corpus.name!r} has no alignment run; run align_corpus first")
            run_id = run.pk
        filters = parse_filters(opts["filters"])
        if opts["test_set"]:
            filters["test_set"] = {"path": str(Path(opts["test_set"]).resolve())}
        params: dict[str, Any] = {
            "format": opts["format"], "splits": None if opts["splits"] == "none" else opts["splits"], "seed": opts["seed"],
        }
        if opts["kind"] == "auto":
            params["filters"] = filters
            params["synthetic_ratio"] = opts["synthetic_ratio"]
        if opts["kind"] == "manual":
            params["include_reference"] = not opts["no_reference"]
            params["derive"] = not opts["no_derive"]
        if opts["labels"]:
            params["labels"] = [x.strip() for x in opts["labels"].split(",") if x.strip()]
        try:
            dataset = create_export(corpus.pk, opts["kind"], params, run_id=run_id)
        except (ExportError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"export {dataset.pk} ({dataset.kind}, {dataset.format}), job {dataset.job_id}")
        if opts["sync"] or not opts["wait"] and settings.CELERY_TASK_ALWAYS_EAGER:
            with tqdm(desc=f"export {corpus.name}", unit="row", unit_scale=True) as bar:

                def progress(done: int, total: int) -> None:
                    if bar.total != total:
                        bar.total = total
                    bar.update(done - bar.n)

                try:
                    run_export(dataset.pk, progress)
                except Exception as exc:
                    raise CommandError(f"{type(exc).__name__}: {exc}") from exc
            dataset.refresh_from_db()
            report(self, dataset.job_id)  # type: ignore[arg-type]
            self.stdout.write(f"folder: {Path(settings.EXPORTS_DIR) / dataset.path}")
            for f in dataset.files:
                self.stdout.write(f"  {f['name']}: {f['rows'] if f['rows'] is not None else '-'} rows, {f['bytes']} bytes")
            return
        enqueue_export(dataset.pk)
        if opts["wait"]:
            follow(self, dataset.job_id, opts["timeout"])  # type: ignore[arg-type]
        else:
            self.stdout.write("queued on the export queue; follow it on the exports page or with --wait")
