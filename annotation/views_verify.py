"""In-house verification: the queue of aggregated pairs, keyboard-first (static/js/verify.js)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.params import IdField, query
from accounts.permissions import role_required
from accounts.roles import Role
from annotation.models import JobItem, LabelingJob
from annotation.services import verification
from curation.models import AlignmentLabel

verifier_required = role_required(Role.VERIFIER)


@verifier_required
def verify_index(request: HttpRequest) -> HttpResponse:
    return render(request, "annotation/verify_index.html", {"rows": verification.jobs_with_queues()})


def _job_url(job: LabelingJob, item: JobItem | None = None) -> str:
    url = reverse("annotation:verify_job", kwargs={"job_id": job.pk})
    return f"{url}?item={item.pk}" if item is not None else url


class ItemParams(forms.Form):
    item = IdField()


@verifier_required
def verify_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(LabelingJob, pk=job_id)
    item: JobItem | None = None
    if item_id := query(ItemParams, request.GET)["item"]:
        item = get_object_or_404(JobItem.objects.select_related("candidate__complex", "candidate__simple"), pk=item_id, job=job)
    nav = verification.navigation(job, item)
    if item is None and nav.current is not None:
        item = JobItem.objects.select_related("candidate__complex", "candidate__simple").get(pk=nav.current)
    by_item = {a.item_id: a for a in verification.queue(job).select_related("item__candidate__simple").filter(item_id__in=nav.upcoming)}
    upcoming = [by_item[pk] for pk in nav.upcoming if pk in by_item]
    recent = verification.recently_verified(job)
    view = verification.item_view(item) if item is not None else None
    context = {
        "job": job,
        "view": view,
        "counts": verification.queue_counts(job),
        "upcoming": upcoming,
        "recent": recent,
        "recent_rows": [(v, nav.recent_items.get(v.candidate_id, "")) for v in recent],
        "prev_url": _job_url(job) + f"?item={nav.prev}" if nav.prev else "",
        "next_url": _job_url(job) + f"?item={nav.next}" if nav.next else "",
        "choices": [(i + 1, value, label) for i, (value, label) in enumerate(AlignmentLabel.choices)],
    }
    return render(request, "annotation/verify_job.html", context)


@verifier_required
@require_POST
def verify_save(request: HttpRequest, job_id: int, item_id: int) -> HttpResponse:
    job = get_object_or_404(LabelingJob, pk=job_id)
    item = get_object_or_404(JobItem, pk=item_id, job=job)
    label = request.POST.get("label", "")
    try:
        verified = verification.verify(item, label, request.user)  # type: ignore[arg-type]
    except ValueError:
        messages.error(request, "Choose a label (1, 2 or 3) before confirming.")
        return redirect(_job_url(job, item))
    word = "Changed" if verified.changed else "Confirmed"
    messages.success(request, f"{word}: {AlignmentLabel(verified.label).label}.")
    return redirect(_job_url(job))
