"""The import page: an upload (files or an archive) becomes an import job on the worker."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from accounts.permissions import admin_required
from curation.forms import ImportForm
from curation.models import ImportRecord
from pipeline import tasks
from pipeline.models import Job
from pipeline.services import imports


@admin_required
def import_upload(request: HttpRequest) -> HttpResponse:
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        job = imports.create_import_job(form.cleaned_data["files"], form.options(), user=request.user)
        tasks.enqueue_import(job)
        messages.info(request, f"Import of {len(job.params['files'])} file(s) queued as job #{job.pk}; nothing is written unless all of it is good.")
        return redirect("pipeline:job_detail", job_id=job.pk)
    recent = ImportRecord.objects.select_related("corpus", "created_by")[:20]
    import_jobs = Job.objects.filter(kind=Job.Kind.IMPORT).select_related("created_by")[:10]
    return render(request, "pipeline/import.html", {"form": form, "recent": recent, "jobs": import_jobs})
