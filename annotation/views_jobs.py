"""Job pages: the annotator's home (my jobs), creating a job, a job's overview."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, F, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from accounts.permissions import role_required
from accounts.roles import Role, has_role
from annotation.forms_jobs import JobForm, PayForm
from annotation.models import LabelingJob, Membership
from annotation.models.pay import PAY_FIELDS, PayError, apply_pay
from annotation.services import job_setup, ledger, presenting, removal
from annotation.views_label import LABELERS, user_of

SELECTION_SHOWN = 100  # items listed with the reason they were chosen


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Open jobs with the user's own progress; researchers also see every job and can create one."""
    if not has_role(user_of(request), *LABELERS):
        raise PermissionDenied("Your role does not give access to labeling.")
    is_researcher = has_role(user_of(request), Role.RESEARCHER)
    qs = presenting.visible_jobs(user_of(request)).annotate(n_items=Count("items", distinct=True))
    mine = {m.job_id: m for m in Membership.objects.filter(annotator=user_of(request))}
    rows = [(job, presenting.my_stats(job, mine.get(job.pk))) for job in qs[:200]]
    return render(request, "annotation/home.html", {"rows": rows, "is_researcher": is_researcher})


@role_required(Role.RESEARCHER)
def job_new(request: HttpRequest) -> HttpResponse:
    form = JobForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        corpus = data["corpus"]
        try:
            pairs = corpus.pairs.all()
            pair_ids = form.pair_id_list()
            if pair_ids:
                pairs = pairs.filter(pair_id__in=pair_ids)
            gold: list[tuple[int, str, str]] = []
            source = data["gold_source"]
            if source == "tsv":
                text = data["gold_file"].read().decode("utf-8-sig", errors="replace")
                gold = job_setup.gold_from_rows(corpus, job_setup.parse_gold_tsv(text, data["gold_file"].name))
            elif source == "reference":
                gold = job_setup.gold_from_reference(corpus, pairs)
            elif source == "verified":
                gold = job_setup.gold_from_verified(pairs)
            if source != "none" and not gold:
                raise job_setup.JobError("the chosen source has no gold pairs for these document pairs")
            job = job_setup.create_job(
                name=data["name"], corpus=corpus, created_by=user_of(request), strategy=data["strategy"],
                pair_ids=pair_ids, settings=form.job_settings(), gold=gold, max_tests=data["max_tests"] if source != "none" else 0,
            )
        except job_setup.JobError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Job “{job.name}” created with {job.items.count()} pairs and {job.test_questions.count()} test questions.")
            return redirect("annotation:job_detail", job.pk)
    return render(request, "annotation/job_new.html", {"form": form})


@role_required(Role.RESEARCHER)
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(LabelingJob.objects.select_related("corpus", "created_by"), pk=job_id)
    pay_form = PayForm(initial={name: getattr(job, name) for name in PAY_FIELDS})
    if request.method == "POST" and "save_pay" in request.POST:
        pay_form = PayForm(request.POST, initial=pay_form.initial)
        if pay_form.is_valid():
            try:  # an emptied field is its default (0, USD), as when the job was created
                saved = apply_pay(job, {name: pay_form.cleaned_data[name] for name in pay_form.changed_data})
            except PayError as exc:
                pay_form.add_error(exc.field, str(exc))
            else:
                messages.success(request, "Pay saved; the cost ledger is recounted with it." if saved else "Pay unchanged.")
                return redirect(reverse("annotation:job_detail", args=[job.pk]) + "#ledger")
    elif request.method == "POST":
        new_status = request.POST.get("status", "")
        if new_status in LabelingJob.Status.values:
            job.status = new_status
            job.save(update_fields=["status"])
            if new_status == LabelingJob.Status.CLOSED:
                removal.settle_job(job)  # the last, unfinished pages count too
            messages.success(request, f"Job is now {job.get_status_display()}.")
        return redirect("annotation:job_detail", job.pk)
    members = (
        Membership.objects.filter(job=job)
        .select_related("annotator")
        .order_by("removed", "-questions_answered")
    )
    seconds = job.judgments.filter(is_valid=True).aggregate(total=Sum("seconds"), n=Count("pk"))
    return render(
        request,
        "annotation/job_detail.html",
        {
            "job": job,
            "progress": presenting.job_progress(job),
            "members": members,
            "mean_seconds": (seconds["total"] / seconds["n"]) if seconds["n"] else None,
            "statuses": [("open", "Reopen"), ("paused", "Pause"), ("closed", "Close")],
            "ledger": ledger.job_ledger(job),
            "pay_form": pay_form,
            "selected_items": job.items.exclude(selection_reason="").select_related(
                "candidate__pair", "candidate__simple", "candidate__complex").order_by(
                F("selection_score").desc(nulls_last=True), "pk")[:SELECTION_SHOWN],
        },
    )
