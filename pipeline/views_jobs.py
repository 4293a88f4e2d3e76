"""Pipeline job pages: the list with live progress bars (htmx polling), detail, cancel, start."""

from __future__ import annotations

from typing import Any

from django import forms as forms_
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.permissions import role_required, staff_required
from accounts.roles import Role, has_role
from curation.models import Corpus
from pipeline import jobs, presenting, tasks
from pipeline.forms import AlignCorpusForm, PrepopulateForm, RetrainForm, crf_defaults
from pipeline.models import Job, RunChunk
from pipeline.services import align_corpus, prepopulate, retrain

researcher_required = role_required(Role.RESEARCHER)


def _can_manage(request: HttpRequest) -> bool:
    return has_role(request.user, Role.RESEARCHER)


@staff_required
def job_list(request: HttpRequest) -> HttpResponse:
    qs = Job.objects.select_related("corpus", "created_by")
    kind = request.GET.get("kind", "")
    if kind in Job.Kind.values:
        qs = qs.filter(kind=kind)
    page = Paginator(qs, 25).get_page(request.GET.get("page"))
    return render(request, "pipeline/jobs.html", {"page": page, "kind": kind, "kinds": Job.Kind.choices,
                                                  "can_manage": _can_manage(request)})


@staff_required
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(Job.objects.select_related("corpus", "created_by"), pk=job_id)
    chunks = RunChunk.objects.filter(run__job=job).order_by("-run__created_at", "run", "index").values(
        "index", "status", "attempts", "worker", "error"
    )[:500]  # one query, limited in the database
    result = job.result or {}
    return render(request, "pipeline/jobs_detail.html", {
        "job": job, "chunks": chunks, "can_manage": _can_manage(request),
        "params": presenting.definition_items(job.params), "result": presenting.job_result_items(job),
        "metrics": presenting.metrics_rows(result["metrics"]) if "metrics" in result else None,
        "counts": presenting.counts_rows(result.get("data_counts") or {}),
        "warnings": presenting.split_warnings(result.get("data_counts") or {}, result.get("metrics") or {})
        if "data_counts" in result else [],
        "progress_chart": presenting.job_progress_chart(job),
        "label_chart": presenting.label_chart(result.get("data_counts") or {}),
    })


@staff_required
def job_progress(request: HttpRequest, job_id: int) -> HttpResponse:
    """The progress partial; it keeps polling itself while the job is queued or running."""
    job = get_object_or_404(Job, pk=job_id)
    return render(request, "pipeline/_job_progress.html", {"job": job, "can_manage": _can_manage(request)})


@require_POST
@researcher_required
def job_cancel(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(Job, pk=job_id)
    if jobs.request_cancel(job.pk):
        messages.info(request, f"Asked {job} to stop; it stops between chunks.")
    job.refresh_from_db()
    if request.headers.get("HX-Request"):
        return render(request, "pipeline/_job_progress.html", {"job": job, "can_manage": True})
    return redirect("pipeline:job_list")


@researcher_required
def job_start(request: HttpRequest) -> HttpResponse:
    """Forms to start pre-population, corpus alignment and retraining (one POST per form)."""
    action = request.POST.get("action", "") if request.method == "POST" else ""
    raw = request.GET.get("corpus", "")
    corpus = Corpus.objects.filter(pk=int(raw)).first() if raw.isascii() and raw.isdigit() and len(raw) < 12 else None
    initial = {"corpus": corpus.pk, "language": corpus.language} if corpus else None
    def bound(name: str) -> dict[str, Any]:  # auto_id per form: every control keeps a unique HTML id on the one page
        return {"data": request.POST if action == name else None, "initial": initial, "auto_id": f"{name}-%s"}

    pre, align, train = PrepopulateForm(**bound("prepopulate")), AlignCorpusForm(**bound("align")), RetrainForm(**bound("retrain"))
    forms: dict[str, forms_.Form] = {"prepopulate": pre, "align": align, "retrain": train}
    form = forms.get(action)
    if form is not None and form.is_valid():
        d = form.cleaned_data
        job: Job | None
        try:
            if action == "prepopulate":
                job = prepopulate.create_job(d["corpus"], pre.selected_pairs(), pre.options(), user=request.user)
                tasks.enqueue_prepopulate(job)
            elif action == "align":
                run = align_corpus.plan_run(d["corpus"], align.model_choice(), d["chunk_size"], user=request.user)
                tasks.enqueue_run(run)
                job = run.job
            else:
                job = retrain.create_job(train.job_params(), corpus=d.get("corpus"), user=request.user)
                tasks.enqueue_retrain(job)
        except (align_corpus.AlignSetupError, retrain.RetrainError) as exc:
            messages.error(request, str(exc))
        else:
            if reason := jobs.unqueued_reason(job.pk if job else None):
                messages.error(request, f"{job.get_kind_display()} #{job.pk} failed: {reason}. "  # type: ignore[union-attr]
                               "Start the broker (Redis), then start the job again.")
                return redirect("pipeline:job_detail", job.pk)  # type: ignore[union-attr]
            messages.success(request, f"Started {job}.")
            return redirect("pipeline:job_detail", job.pk) if job is not None else redirect("pipeline:job_list")
    return render(request, "pipeline/jobs_start.html", {"forms": forms, "action": action, "corpus": corpus,
                                                        "crf_defaults": crf_defaults()})
