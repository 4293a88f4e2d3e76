"""Agreement and aggregation pages: a list of jobs, and the statistics of one job.

Researchers and admins read and (re)aggregate; verifiers may read.
"""

from __future__ import annotations

import math

from django.contrib import messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.permissions import role_required
from accounts.roles import Role, has_role
from annotation import aggregation, charts
from annotation.agreement import DEFAULT_MIN_SHARED, LABELS
from annotation.models import AggregatedLabel, JobItem, Judgment, LabelingJob
from annotation.services import job_agreement

readers_required = role_required(Role.RESEARCHER, Role.VERIFIER)
writers_required = role_required(Role.RESEARCHER)
MAX_BARS = 40


@readers_required
def stats_index(request: HttpRequest) -> HttpResponse:
    jobs = list(LabelingJob.objects.select_related("corpus"))
    # One grouped query per figure (no join of items x judgments).
    items = dict(JobItem.objects.values_list("job_id").annotate(n=Count("id")))
    aggregated = dict(AggregatedLabel.objects.values_list("item__job_id").annotate(n=Count("id")))
    judgments = dict(Judgment.objects.filter(is_valid=True).values_list("job_id").annotate(n=Count("id")))
    for job in jobs:
        job.n_items = items.get(job.pk, 0)  # type: ignore[attr-defined]
        job.n_aggregated = aggregated.get(job.pk, 0)  # type: ignore[attr-defined]
        job.n_judgments = judgments.get(job.pk, 0)  # type: ignore[attr-defined]
    return render(request, "annotation/stats_index.html", {"jobs": jobs})


def _method_param(request: HttpRequest) -> str | None:
    method = request.GET.get("method") or None
    return method if method in AggregatedLabel.Method.values else None


def _min_shared_param(request: HttpRequest) -> int:
    try:
        return max(1, int(request.GET.get("min_shared", DEFAULT_MIN_SHARED)))
    except ValueError:
        return DEFAULT_MIN_SHARED


@readers_required
def job_stats(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(LabelingJob.objects.select_related("corpus"), pk=job_id)
    min_shared = _min_shared_param(request)
    stats = job_agreement.cached_job_statistics(job, method=_method_param(request), min_shared=min_shared)
    labels = list(LABELS)
    shown = stats.annotators[:MAX_BARS]
    annotator_chart = charts.bars_svg(
        [
            charts.Bar(
                name=row.username,
                main=row.test_accuracy,
                second=row.agreement,
                muted=row.removed,
                note="removed" if row.removed else "",
            )
            for row in shown
        ],
        main_name="test-question accuracy",
        second_name="agreement with the others' majority",
        title="Accuracy per annotator",
        threshold=job.accuracy_threshold,
    )
    label_chart = charts.bars_svg(
        [charts.Bar(name=row.label, main=row.kappa, second=row.specific_agreement) for row in stats.labels],
        main_name="kappa (label vs rest)",
        second_name="specific agreement",
        title="Agreement per label",
    )
    confusion = charts.confusion_svg(
        stats.confusion_aggregated, labels, "aggregated label", "raw judgment", "Raw judgments against the aggregated label"
    )
    confusion_verified = (
        charts.confusion_svg(stats.confusion_verified, labels, "verified label", "aggregated label", "Aggregated against verified labels")
        if stats.confusion_verified is not None
        else None
    )
    context = {
        "job": job,
        "stats": stats,
        "report": stats.report,
        "figures": {
            name: (None if math.isnan(value) else value)
            for name, value in (
                ("cohen_mean", stats.report.cohen_mean),
                ("cohen_weighted", stats.report.cohen_weighted),
                ("fleiss", stats.report.fleiss),
                ("alpha", stats.report.alpha),
            )
        },
        "counts": stats.counts,
        "annotator_chart": annotator_chart,
        "label_chart": label_chart,
        "confusion_chart": confusion,
        "confusion_verified_chart": confusion_verified,
        "bars_truncated": len(stats.annotators) > MAX_BARS,
        "min_shared": min_shared,
        "methods": [(value, label, aggregation.DESCRIPTIONS.get(value, "")) for value, label in AggregatedLabel.Method.choices],
        "method_label": dict(AggregatedLabel.Method.choices).get(stats.method, stats.method),
        "method_description": aggregation.DESCRIPTIONS.get(stats.method, ""),
        "can_aggregate": has_role(request.user, Role.RESEARCHER),
        "low_confidence": job_agreement.LOW_CONFIDENCE,
    }
    return render(request, "annotation/stats_job.html", context)


@writers_required
@require_POST
def job_aggregate(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(LabelingJob, pk=job_id)
    method = request.POST.get("method", AggregatedLabel.Method.MAJORITY)
    if method not in AggregatedLabel.Method.values:
        messages.error(request, f"Unknown aggregation method {method!r}.")
        return redirect("annotation:job_stats", job_id=job.pk)
    result = job_agreement.write_aggregated_labels(job, method)
    counts = ", ".join(f"{label} {n}" for label, n in result.label_counts.items())
    messages.success(request, f"Stored {result.written} aggregated labels by {AggregatedLabel.Method(method).label} ({counts}).")
    return redirect(reverse("annotation:job_stats", kwargs={"job_id": job.pk}))
