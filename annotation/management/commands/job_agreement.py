"""Print a labeling job's agreement and aggregation figures (the same as its statistics page).

    python manage.py job_agreement 3
    python manage.py job_agreement 3 --method dawid_skene --min-shared 20
    python manage.py job_agreement 3 --method mace --write   # store AggregatedLabels (majority, dawid_skene, mace, glad)
"""

from __future__ import annotations

import math
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.aggregation import DESCRIPTIONS
from annotation.agreement import DEFAULT_MIN_SHARED
from annotation.models import AggregatedLabel, LabelingJob
from annotation.services import job_agreement


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


class Command(BaseCommand):
    help = "Print Cohen's/Fleiss' kappa, Krippendorff's alpha, per-annotator and per-label tables and aggregation counts for a job."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("job_id", type=int)
        methods = "; ".join(f"{m}: {DESCRIPTIONS.get(m, '')}" for m in AggregatedLabel.Method.values)
        parser.add_argument("--method", choices=AggregatedLabel.Method.values, default=None,
                            help=f"aggregation to compute (default: the stored one, else majority). {methods}")
        parser.add_argument("--min-shared", type=int, default=DEFAULT_MIN_SHARED,
                            help="items two annotators must share for their Cohen's kappa to count")
        parser.add_argument("--write", action="store_true", help="store AggregatedLabel rows (method default: majority)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            job = LabelingJob.objects.get(pk=options["job_id"])
        except LabelingJob.DoesNotExist as exc:
            raise CommandError(f"no labeling job {options['job_id']}") from exc
        if options["min_shared"] < 1:
            raise CommandError("--min-shared must be >= 1")
        method = options["method"]
        if options["write"]:
            result = job_agreement.write_aggregated_labels(job, method or AggregatedLabel.Method.MAJORITY)
            self.stdout.write(f"stored {result.written} aggregated labels ({result.method}); removed {result.deleted} stale")
            method = None  # show what is now stored
        stats = job_agreement.job_statistics(job, method=method, min_shared=options["min_shared"])
        r, c = stats.report, stats.counts
        out = self.stdout.write
        out(f"Job {job.pk}: {job.name}")
        out(f"  Cohen's kappa (mean over {r.cohen_pairs} annotator pairs sharing >= {options['min_shared']} items): {_f(r.cohen_mean)}")
        out(f"  Cohen's kappa (weighted by shared items): {_f(r.cohen_weighted)}")
        out(f"  Fleiss' kappa: {_f(r.fleiss)}")
        out(f"  Krippendorff's alpha (nominal): {_f(r.alpha)}")
        out(f"  items {c['items']}, judged {c['judged_items']}, complete {c['complete_items']}; valid judgments {c['judgments']}, "
            f"discarded {c['invalid_judgments']}; annotators {c['annotators']}, removed {len(stats.removed_annotators)}")
        source = "stored" if stats.stored else "computed"
        out(f"  aggregation: {stats.method} ({source}); aggregated {c['aggregated']}, disagreements {c['disagreements']}, "
            f"low confidence {c['low_confidence']}, verified {c['verified']} ({c['verified_changed']} changed)"
            + (f", EM iterations {c['iterations']}" if c["iterations"] else ""))
        out("")
        # est acc: the model-based method's estimate of P(label == truth); param: MACE's competence θ, GLAD's ability α
        param = stats.parameter_name.split(" ")[-1] if stats.parameter_name else ""
        out(f"  {'annotator':<24}{'judgm.':>8}{'test acc':>10}{'agree':>8}{'kappa':>8}{'partners':>9}{'vs verif':>10}{'est acc':>9}"
            f"{param:>8}  status")
        for a in stats.annotators:
            out(f"  {a.username[:23]:<24}{a.judgments:>8}{_f(a.test_accuracy, 2):>10}{_f(a.agreement):>8}{_f(a.mean_kappa):>8}"
                f"{a.partners:>9}{_f(a.verified_accuracy):>10}{_f(a.estimated_accuracy):>9}"
                f"{_f(a.model_parameter) if param else '':>8}  {'removed' if a.removed else 'active'}")
        out("")
        out(f"  {'label':<16}{'judgm.':>8}{'share':>8}{'kappa':>8}{'spec.agr':>10}{'aggr.':>8}{'verified':>10}")
        for lab in stats.labels:
            out(f"  {lab.label:<16}{lab.judgments:>8}{lab.share:>8.3f}{_f(lab.kappa):>8}{_f(lab.specific_agreement):>10}"
                f"{lab.aggregated:>8}{lab.verified:>10}")
        out("")
        out("  confusion (rows: aggregated label, columns: raw judgment; aligned, partialAligned, notAligned)")
        for row in stats.confusion_aggregated.tolist():
            out("    " + "".join(f"{v:>10}" for v in row))
