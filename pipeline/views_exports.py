"""Export pages (admin): create an export, follow its job, read its card, download its files.
Corpus statistics (researchers): a Table-1-like page per corpus."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from accounts.params import IdField, query
from accounts.permissions import admin_required, role_required
from accounts.roles import Role
from curation.models import Corpus
from pipeline import jobs, presenting
from pipeline.exports.run import ExportError, create_export, download_name, export_file
from pipeline.forms import ExportForm
from pipeline.models import AlignmentRun, ExportedDataset
from pipeline.services.corpus_stats import corpus_table
from pipeline.tasks import enqueue_export


class CorpusParams(forms.Form):
    corpus = IdField()


@admin_required
def export_list(request: HttpRequest) -> HttpResponse:
    initial = {}
    corpus_id = query(CorpusParams, request.GET)["corpus"]
    corpus = Corpus.objects.filter(pk=corpus_id).first() if corpus_id else None
    if corpus is not None:
        initial["corpus"] = corpus.pk
        run = AlignmentRun.objects.filter(corpus=corpus).order_by("-pk").first()
        if run is not None:
            initial["run"] = run.pk
    form = ExportForm(request.POST or None, request.FILES or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            dataset = create_export(data["corpus"].pk, data["kind"], form.export_params(),
                                    run_id=data["run"].pk if data.get("run") else None, user=request.user)
        except (ExportError, ValueError) as exc:
            form.add_error(None, str(exc))
        else:
            enqueue_export(dataset.pk)
            if reason := jobs.unqueued_reason(dataset.job_id):
                messages.error(request, f"Export {dataset.pk} failed: {reason}. Start the broker (Redis), then export again.")
            else:
                messages.success(request, f"Export {dataset.pk} queued.")
            return redirect("pipeline:export_detail", dataset.pk)
    exports = ExportedDataset.objects.select_related("corpus", "job", "run").defer("run__stats").order_by("-pk")[:100]
    return render(request, "pipeline/exports.html", {"form": form, "exports": exports, "corpus": corpus})


@admin_required
def export_detail(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = get_object_or_404(ExportedDataset.objects.select_related("corpus", "job", "run"), pk=dataset_id)
    context = {"dataset": dataset, "job": dataset.job, "card": dataset.card, "can_manage": True,
               "warnings": presenting.export_warnings(dataset), "params": presenting.definition_items(dataset.params)}
    if request.htmx:  # type: ignore[attr-defined]
        return render(request, "pipeline/export_status.html", context)
    return render(request, "pipeline/export_detail.html", context)


@admin_required
def export_download(request: HttpRequest, dataset_id: int, name: str) -> HttpResponse:
    dataset = get_object_or_404(ExportedDataset, pk=dataset_id)
    try:
        path = export_file(dataset, name)
    except FileNotFoundError as exc:
        raise Http404(str(exc)) from exc
    return FileResponse(path.open("rb"), as_attachment=True, filename=download_name(dataset, name))  # type: ignore[return-value]


@role_required(Role.RESEARCHER)
def corpus_stats(request: HttpRequest, corpus_id: int) -> HttpResponse:
    corpus = get_object_or_404(Corpus, pk=corpus_id)
    source = request.GET.get("source", "reference")
    runs = AlignmentRun.objects.filter(corpus=corpus).order_by("-pk")[:20]
    sources = [("reference", "imported reference labels"), ("verified", "verified labels")] + [
        (f"run:{r.pk}", f"run #{r.pk} ({r.method})") for r in runs
    ]
    if source not in {s for s, _ in sources}:
        messages.error(request, f"unknown label source {source!r}")
        source = "reference"
    table = corpus_table(corpus, source)
    return render(request, "pipeline/stats_corpus.html", {"corpus": corpus, "table": table, "sources": sources, "source": source})


@role_required(Role.RESEARCHER)
def export_stats(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = get_object_or_404(ExportedDataset.objects.select_related("corpus"), pk=dataset_id)
    return render(request, "pipeline/stats_export.html", {"dataset": dataset, "card": dataset.card})
