"""Human-evaluation studies from the command line (the same services as the pages).

    manage.py evaluation_study create "Newsela test" --design likert --outputs outputs.tsv
    manage.py evaluation_study create "From export" --design comparative --export 12 --outputs sys.tsv
    manage.py evaluation_study create "From files" --design likert --export-folder var/exports/3-manual-7 --reference-as-system
    manage.py evaluation_study list
    manage.py evaluation_study status 3            # progress, raters, flags
    manage.py evaluation_study simulate 3 --raters 12 --careless 2   # simulated raters, real services
    manage.py evaluation_study exclude 3 --rater careless-anna
    manage.py evaluation_study pause 3 | open 3 | close 3
    manage.py evaluation_study results 3 [--json] [--bootstrap items] [--test wilcoxon]
    manage.py evaluation_study export 3
    manage.py evaluation_study ledger 3 [--json]   # cost ledger (pay settings: create --pay-per-rating, --pay-per-hour, --currency)
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.evaluation import importers, sources
from annotation.evaluation import stats as st
from annotation.evaluation.designs import DESIGNS
from annotation.evaluation.services import exporting, ledger, raters, results, simulated, studies
from annotation.models import Study, StudyRater


def _fmt(v: float | None, digits: int = 2) -> str:
    return "–" if v is None or v != v else f"{v:.{digits}f}"


class Command(BaseCommand):
    help = "Create, run, close, analyse and export human-evaluation studies of simplification output."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a study from system outputs and/or an export's split")
        create.add_argument("name")
        create.add_argument("--design", choices=list(DESIGNS), required=True)
        create.add_argument("--outputs", type=Path, help="TSV or JSONL of system outputs")
        create.add_argument("--export", type=int, help="id of an export: items from its split (complex = source, simple = reference)")
        create.add_argument("--export-folder", type=Path, help="a folder holding an export's split files (instead of --export)")
        create.add_argument("--split", default="test")
        create.add_argument("--reference-as-system", action="store_true", help="rate the reference as a system too")
        create.add_argument("--raters", type=int, default=5, help="raters per item (default 5)")
        create.add_argument("--sample", type=int, default=100, help="items drawn at random (default 100)")
        create.add_argument("--seed", type=int, default=0)
        create.add_argument("--min-seconds", type=int, default=20, help="minimum seconds per page (default 20)")
        create.add_argument("--show-reference", action="store_true")
        create.add_argument("--threshold", type=float, default=20.0, help="slider: a control scored above this fails (default 20)")
        create.add_argument("--flag-share", type=float, default=0.2, help="flag raters failing more than this share of control pages")
        create.add_argument("--instructions", type=Path, help="a text file with the instructions (default: the design's)")
        create.add_argument("--pay-per-rating", "--pay-per-judgment", dest="pay_per_judgment", default="0",
                            help="cost ledger: pay per rating, one version on one dimension, control ratings included (default 0)")
        create.add_argument("--pay-per-hour", default="0", help="cost ledger: pay per hour on task, server-measured (default 0)")
        create.add_argument("--currency", default="USD", help="ISO 4217 code (default USD)")
        sub.add_parser("list", help="list studies")
        for name in ("status", "open", "pause", "close"):
            sub.add_parser(name).add_argument("study", type=int)
        excl = sub.add_parser("exclude", help="exclude a rater (ratings kept apart)")
        excl.add_argument("study", type=int)
        excl.add_argument("--rater", required=True, help="username")
        sim = sub.add_parser("simulate", help="simulated raters of known bias and noise rate through the real services")
        sim.add_argument("study", type=int)
        sim.add_argument("--raters", type=int, default=10)
        sim.add_argument("--careless", type=int, default=0, help="how many of them score controls like real versions")
        sim.add_argument("--quality", default="", help="system=value,... (default: spread in name order)")
        sim.add_argument("--seed", type=int, default=0)
        res = sub.add_parser("results", help="print the results table, tests and agreement")
        res.add_argument("study", type=int)
        res.add_argument("--json", action="store_true")
        res.add_argument("--bootstrap", choices=st.BOOTSTRAPS, default=st.DEFAULT_BOOTSTRAP)
        res.add_argument("--test", choices=st.TESTS, default=st.DEFAULT_TEST)
        res.add_argument("--n-boot", type=int, default=2000)
        exp = sub.add_parser("export", help="write ratings, aggregates and a card")
        exp.add_argument("study", type=int)
        led = sub.add_parser("ledger", help="the cost ledger: per rater and in total, ratings, discarded, time on task, cost")
        led.add_argument("study", type=int)
        led.add_argument("--json", action="store_true")

    def _study(self, pk: int) -> Study:
        study = Study.objects.filter(pk=pk).first()
        if study is None:
            raise CommandError(f"no study #{pk}")
        return study

    def handle(self, *args: Any, **opts: Any) -> None:
        getattr(self, f"do_{opts['action']}")(opts)

    def do_create(self, opts: dict[str, Any]) -> None:
        info: dict[str, Any] = {}
        outputs: list[importers.ItemInput] = []
        from_export = opts["export"] is not None or opts["export_folder"] is not None
        try:
            if opts["outputs"]:
                path: Path = opts["outputs"]
                if not path.is_file():
                    raise CommandError(f"{path}: no such file")
                raw = path.read_bytes()
                try:
                    text = raw.decode("utf-8-sig")
                except UnicodeDecodeError as exc:
                    raise CommandError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
                info.update(file=path.name, sha256=hashlib.sha256(raw).hexdigest())
                outputs = importers.parse_outputs(text, str(path), require_source=not from_export)
            if opts["export"] is not None:
                try:
                    folder, export_info = sources.export_folder(opts["export"])
                except sources.ExportNotFound as exc:
                    raise CommandError(str(exc)) from exc
                info.update(export_info, split=opts["split"])
            elif opts["export_folder"] is not None:
                folder = opts["export_folder"]
                info.update(export_folder=str(folder), split=opts["split"])
            if from_export:
                base = importers.items_from_export(folder, opts["split"])
                items = importers.merge_outputs(base, outputs, str(opts["outputs"] or "outputs"), opts["reference_as_system"])
            elif outputs:
                items = outputs
            else:
                raise CommandError("give --outputs, --export (or --export-folder), or both")
            instructions = opts["instructions"].read_text(encoding="utf-8") if opts["instructions"] else ""
            setting = studies.StudySettings(
                design=opts["design"], raters_per_item=opts["raters"], sample_size=opts["sample"], seed=opts["seed"],
                min_seconds=opts["min_seconds"], show_reference=opts["show_reference"], instructions=instructions,
                control_threshold=opts["threshold"], flag_share=opts["flag_share"],
                pay_per_judgment=opts["pay_per_judgment"], pay_per_hour=opts["pay_per_hour"], currency=opts["currency"],
            )
            study = studies.create_study(opts["name"], setting, items, None, info)
        except importers.InputError as exc:
            raise CommandError("nothing was imported:\n  " + "\n  ".join(exc.errors[: importers.MAX_ERRORS])) from exc
        except studies.StudyError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"study #{study.pk} “{study.name}”: {study.items.count()} items, systems {', '.join(study.systems)}, "
                          f"{study.raters_per_item} raters per item, seed {study.seed}")

    def do_list(self, opts: dict[str, Any]) -> None:
        for s in Study.objects.order_by("pk"):
            self.stdout.write(f"#{s.pk}\t{s.status}\t{s.design}\t{s.items.count()} items\t{s.name}")

    def do_status(self, opts: dict[str, Any]) -> None:
        study = self._study(opts["study"])
        items = study.items.all()
        done = sum(items.values_list("ratings_count", flat=True))
        self.stdout.write(f"#{study.pk} {study.name} [{study.status}] {DESIGNS[study.design].label}")
        self.stdout.write(f"pages rated {done} of {items.count() * study.raters_per_item}; "
                          f"items complete {items.filter(ratings_count__gte=study.raters_per_item).count()} of {items.count()}")
        self.stdout.write("rater\tpages\tmedian_s\tfast\tsame_value\tcontrol_fails\tflagged\texcluded")
        for f in raters.rater_figures(study):
            self.stdout.write(f"{f.username}\t{f.pages}\t{_fmt(f.median_seconds, 1)}\t{_fmt(f.fast_share)}\t{_fmt(f.straight_share)}\t"
                              f"{f.control_failed}/{f.control_pages}\t{'yes' if f.flagged else 'no'}\t{'yes' if f.excluded else 'no'}")

    def _set(self, opts: dict[str, Any], status: str) -> None:
        study = studies.set_status(self._study(opts["study"]), status)
        self.stdout.write(f"study #{study.pk} is {study.get_status_display()}")

    def do_open(self, opts: dict[str, Any]) -> None:
        self._set(opts, Study.Status.OPEN)

    def do_pause(self, opts: dict[str, Any]) -> None:
        self._set(opts, Study.Status.PAUSED)

    def do_close(self, opts: dict[str, Any]) -> None:
        self._set(opts, Study.Status.CLOSED)

    def do_exclude(self, opts: dict[str, Any]) -> None:
        study = self._study(opts["study"])
        member = StudyRater.objects.filter(study=study, rater__username=opts["rater"]).first()
        if member is None:
            raise CommandError(f"{opts['rater']!r} has not rated in study #{study.pk}")
        n = raters.exclude_rater(study, member.rater_id)
        self.stdout.write(f"{opts['rater']} excluded: {n} ratings kept apart (control ratings included; the ledger counts the others as discarded)")

    def do_simulate(self, opts: dict[str, Any]) -> None:
        study = self._study(opts["study"])
        if study.status != Study.Status.OPEN:
            raise CommandError(f"study #{study.pk} is {study.status}; open it first")
        q = simulated.default_quality(study)
        if opts["quality"]:
            try:
                q.update({k.strip(): float(v) for k, v in (p.split("=", 1) for p in opts["quality"].split(","))})
            except ValueError as exc:
                raise CommandError("--quality is system=value,system=value") from exc
        dim = DESIGNS[study.design].dimensions[0]
        raters = simulated.make_raters(opts["raters"], opts["careless"], dim.maximum - dim.minimum, opts["seed"])
        pages = simulated.run(study, raters, q, seed=opts["seed"])
        self.stdout.write(f"{len(raters)} simulated raters submitted {pages} pages (known quality: "
                          + ", ".join(f"{k}={v:.2f}" for k, v in q.items()) + ")")
        self._ledger_summary(ledger.study_ledger(study))

    def _ledger_summary(self, book: ledger.StudyLedger) -> None:
        t, cur = book.total, book.currency
        self.stdout.write(f"cost ledger: {t.pages_answered} pages, {t.ratings} ratings ({t.valid_ratings} valid, {t.discarded} discarded), "
                          f"{t.control_ratings} control ratings, {t.hours:.2f} h on task; cost {t.cost} {cur} "
                          f"(pay {book.pay_per_judgment} {cur} per rating + {book.pay_per_hour} {cur} per hour); "
                          f"per valid rating {book.cost_per_valid_rating or '–'}, per item fully rated {book.cost_per_item or '–'} "
                          f"({book.items_complete} of {book.items} items)")

    def do_ledger(self, opts: dict[str, Any]) -> None:
        book = ledger.study_ledger(self._study(opts["study"]))
        if opts["json"]:
            self.stdout.write(json.dumps(book.as_dict(), indent=2))
            return
        self.stdout.write("rater\tserved\tanswered\tratings\tdiscarded\tcontrols\thours\tcost\texcluded")
        for r, excluded in [*((r, "yes" if r.excluded else "no") for r in book.rows), (book.total, "")]:
            self.stdout.write(f"{r.rater}\t{r.pages_served}\t{r.pages_answered}\t{r.ratings}\t{r.discarded}\t{r.control_ratings}\t"
                              f"{r.hours:.2f}\t{r.cost}\t{excluded}")
        self._ledger_summary(book)

    def do_results(self, opts: dict[str, Any]) -> None:
        study = self._study(opts["study"])
        res = results.study_results(study, n_boot=opts["n_boot"], bootstrap=opts["bootstrap"], test=opts["test"])
        if opts["json"]:
            from annotation.evaluation.api import _finite

            self.stdout.write(json.dumps(_finite(res.as_dict()), indent=2))
            return
        labels = [results.dimension_label(d) for d in res.dimensions]
        c = res.counts
        self.stdout.write(f"#{study.pk} {study.name}: {c['pages_answered']} pages, {c['ratings']} ratings, {c['raters']} raters, "
                          f"{c['raters_excluded']} excluded ({c['ratings_excluded']} ratings apart)")
        self.stdout.write("system\t" + "\t".join(labels) + ("\tSARI\tBLEU\tFKGL\tLen" if res.metrics else ""))
        by_metric = {x.system: x for x in res.metrics}
        for system in res.systems:
            cells = []
            for dim in res.dimensions:
                s = res.score(system, dim)
                cells.append("–" if s is None or not s.n else f"{s.mean:.2f} [{s.ci_low:.2f}, {s.ci_high:.2f}] n={s.n}")
            m = by_metric.get(system)
            extra = f"\t{_fmt(m.sari)}\t{_fmt(m.bleu)}\t{_fmt(m.fkgl)}\t{_fmt(m.length)}" if m else ""
            self.stdout.write(f"{system}\t" + "\t".join(cells) + extra)
        self.stdout.write(f"\npairwise ({res.test} on per-item means, Holm):")
        for p in res.summary.pairs:
            self.stdout.write(f"  {results.dimension_label(p.dimension)}: {p.system_a} - {p.system_b} = {p.mean_diff:+.3f}  "
                              f"p={p.p_value:.4f} holm={p.p_holm:.4f}{' *' if p.significant else ''}")
        self.stdout.write("agreement (Krippendorff's alpha):")
        for dim, (alpha, units) in res.summary.agreement.items():
            self.stdout.write(f"  {results.dimension_label(dim)} ({results.level_of(study.design, dim)}): {_fmt(alpha, 3)} over {units} units")
        self.stdout.write("positions: " + "; ".join(f"{k} {v}" for k, v in res.positions.items()))

    def do_export(self, opts: dict[str, Any]) -> None:
        folder, card = exporting.export_study(self._study(opts["study"]))
        self.stdout.write(f"exported to {folder}: {card['counts']['ratings']} ratings, {card['counts']['excluded_ratings']} apart; "
                          + ", ".join(f["name"] for f in card["files"]))
