"""Model versions: the comparison table (Task 1 / Task 2 on dev and test) and promotion."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.params import TextField, query
from accounts.permissions import role_required, staff_required
from accounts.roles import Role, has_role
from pipeline import presenting
from pipeline.models import ModelVersion
from pipeline.services import registry


class LanguageParams(forms.Form):
    language = TextField(max_length=8)


@staff_required
def model_list(request: HttpRequest) -> HttpResponse:
    languages = sorted(set(ModelVersion.objects.values_list("language", flat=True)))
    language = query(LanguageParams, request.GET)["language"]
    rows = registry.comparison(language or None)
    return render(request, "pipeline/models.html", {
        "rows": rows, "languages": languages, "language": language,
        "f1_chart": presenting.f1_history_chart([r.version for r in rows]),
        "splits": registry.SPLITS, "measures": registry.MEASURES,
        "can_manage": has_role(request.user, Role.RESEARCHER),
    })


@staff_required
def model_detail(request: HttpRequest, version_id: int) -> HttpResponse:
    version = get_object_or_404(ModelVersion.objects.select_related("job", "created_by"), pk=version_id)
    config = version.config or {}
    meta = presenting.model_meta(version)
    return render(request, "pipeline/models_detail.html", {
        "version": version, "can_manage": has_role(request.user, Role.RESEARCHER),
        "metrics": presenting.metrics_rows(version.metrics), "counts": presenting.counts_rows(version.data_counts or {}),
        "warnings": presenting.split_warnings(version.data_counts or {}, version.metrics) if version.path else [],
        "promotion_problem": registry.promotion_problem(version),
        "setup": presenting.definition_items(config, skip=("train", "splits")),
        "options": presenting.training_options(version, meta) if version.path else [],
        "trained_with": presenting.trained_with(meta),
        "seed_ensemble": presenting.seed_ensemble(meta),
        "split_articles": {s: ", ".join(map(str, a)) for s, a in (config.get("splits") or {}).items()},
        "label_chart": presenting.label_chart(version.data_counts or {}),
    })


@require_POST
@role_required(Role.RESEARCHER)
def model_promote(request: HttpRequest, version_id: int) -> HttpResponse:
    version = get_object_or_404(ModelVersion, pk=version_id)
    try:
        registry.promote(version, force=request.POST.get("force") == "1")
    except registry.PromotionRefused as exc:
        messages.error(request, f"Not promoted: {exc}.")
        return redirect("pipeline:model_detail", version.pk)
    messages.success(request, f"{version.name} is now the {version.language} model used by default.")
    return redirect("pipeline:model_list")
