"""Pages: raters' study list, rating page (keyboard-first), instructions and a no-JavaScript
fallback; researchers' new study, overview (raters, flags, exclusion, status, exports),
settings and results."""

from __future__ import annotations

import hashlib
import math
from decimal import Decimal
from pathlib import Path
from typing import cast

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q, Sum
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.params import IdField, query
from accounts.permissions import role_required
from accounts.roles import Role, has_role
from annotation.evaluation import importers, sources
from annotation.evaluation.charts import intervals_svg
from annotation.evaluation.designs import DESIGNS
from annotation.evaluation.forms import StudyEditForm, StudyForm
from annotation.evaluation.services import assignment, exporting, ledger, presenting, raters, rating, results, studies
from annotation.models import Study, StudyRater
from annotation.views_label import LABELERS, user_of


@role_required(*LABELERS)
def home(request: HttpRequest) -> HttpResponse:
    user = user_of(request)
    qs = presenting.visible_studies(user).annotate(n_items=Count("items", distinct=True))
    mine = {m.study_id: m for m in StudyRater.objects.filter(rater=user)}
    rows = [(s, presenting.my_progress(mine.get(s.pk))) for s in qs[:200]]
    return render(request, "annotation/evaluation/home.html", {"rows": rows, "is_researcher": has_role(user, Role.RESEARCHER)})


def _items_from_form(data: dict[str, object]) -> tuple[list[importers.ItemInput], dict[str, object]]:
    info: dict[str, object] = {}
    outputs: list[importers.ItemInput] = []
    upload = data.get("outputs_file")
    export_id = data.get("export")
    if upload is not None:
        raw = upload.read()  # type: ignore[attr-defined]
        name = upload.name  # type: ignore[attr-defined]
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise importers.InputError([f"{name}: not UTF-8 text (byte {exc.start})"]) from exc
        info.update(file=name, sha256=hashlib.sha256(raw).hexdigest())
        outputs = importers.parse_outputs(text, name, require_source=export_id is None)
    if export_id is None:
        return outputs, info
    try:
        folder, export_info = sources.export_folder(int(export_id))  # type: ignore[call-overload]
    except sources.ExportNotFound as exc:
        raise importers.InputError([str(exc)]) from exc
    info.update(export_info, split=data["split"])
    base = importers.items_from_export(folder, str(data["split"]))
    return importers.merge_outputs(base, outputs, str(info.get("file", "outputs")), bool(data.get("reference_as_system"))), info


@role_required(Role.RESEARCHER)
def study_new(request: HttpRequest) -> HttpResponse:
    form = StudyForm(request.POST or None, request.FILES or None, export_choices=sources.export_choices())
    errors: list[str] = []
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            items, info = _items_from_form(data)
            setting = studies.StudySettings(
                design=data["design"], raters_per_item=data["raters_per_item"], sample_size=data["sample_size"], seed=data["seed"],
                min_seconds=data["min_seconds"], show_reference=data["show_reference"], instructions=data["instructions"],
                control_threshold=data["control_threshold"], flag_share=data["flag_share"],
                pay_per_judgment=data.get("pay_per_judgment") or Decimal(0), pay_per_hour=data.get("pay_per_hour") or Decimal(0),
                currency=data.get("currency") or "USD",
            )
            study = studies.create_study(data["name"], setting, items, user_of(request), info)
        except importers.InputError as exc:
            errors = exc.errors[: importers.MAX_ERRORS]
            form.add_error(None, f"Nothing was imported: {len(exc.errors)} problem{'s' if len(exc.errors) != 1 else ''} in the input.")
        except studies.StudyError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Study “{study.name}” created with {study.items.count()} items and {len(study.systems)} systems.")
            return redirect("evaluation:detail", study.pk)
    return render(request, "annotation/evaluation/new.html", {"form": form, "errors": errors})


class ExcludeParams(forms.Form):
    exclude = IdField(help_text="the rater's user id")


@role_required(Role.RESEARCHER)
def study_detail(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_object_or_404(Study.objects.select_related("created_by"), pk=study_id)
    if request.method == "POST":
        if "status" in request.POST:
            try:
                studies.set_status(study, request.POST["status"])
            except studies.StudyError as exc:
                messages.error(request, str(exc))
            else:
                messages.success(request, f"Study is now {study.get_status_display()}.")
        elif "exclude" in request.POST:
            rater_id = query(ExcludeParams, request.POST)["exclude"]
            rater = StudyRater.objects.filter(study=study, rater_id=rater_id or 0).select_related("rater").first()
            if rater is None:
                messages.error(request, "No such rater in this study.")
            else:
                n = raters.exclude_rater(study, rater.rater_id)
                messages.success(request, f"{rater.rater.username} is excluded; {n} ratings (control ratings included) are kept apart and their items go back to the queue.")
        return redirect("evaluation:detail", study.pk)
    counts = study.items.aggregate(items=Count("pk"), pages=Sum("ratings_count"),
                                   complete=Count("pk", filter=Q(ratings_count__gte=study.raters_per_item)))
    progress = {"items": counts["items"], "complete": counts["complete"], "pages": counts["pages"] or 0,
                "wanted": counts["items"] * study.raters_per_item}
    folder = Path(settings.EXPORTS_DIR) / "evaluation" / f"study-{study.pk}"
    exports = sorted((p for p in folder.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: -int(p.name)) if folder.is_dir() else []
    return render(request, "annotation/evaluation/detail.html", {
        "study": study, "design": DESIGNS[study.design], "progress": progress, "raters": raters.rater_figures(study),
        "statuses": [("open", "Reopen"), ("paused", "Pause"), ("closed", "Close")],
        "exports": [(p.name, sorted(f.name for f in p.iterdir() if f.is_file())) for p in exports[:10]],
        "ledger": ledger.study_ledger(study),
    })


@role_required(Role.RESEARCHER)
def study_edit(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=study_id)
    form = StudyEditForm(request.POST or None, instance=Study.objects.get(pk=study.pk))
    if request.method == "POST" and form.is_valid():
        try:
            studies.update_settings(study, **{k: form.cleaned_data[k] for k in form.changed_data})
        except studies.StudyError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Settings saved.")
            return redirect("evaluation:detail", study.pk)
    return render(request, "annotation/evaluation/edit.html", {"study": study, "form": form})


@require_POST
@role_required(Role.RESEARCHER)
def study_export(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=study_id)
    folder, card = exporting.export_study(study)
    messages.success(request, f"Exported {card['counts']['ratings']} ratings ({card['counts']['excluded_ratings']} excluded, kept apart) to {folder.name}.")
    return redirect("evaluation:detail", study.pk)


@role_required(Role.RESEARCHER)
def export_file(request: HttpRequest, study_id: int, number: int, name: str) -> HttpResponse:
    root = (Path(settings.EXPORTS_DIR) / "evaluation" / f"study-{study_id}" / str(number)).resolve()
    path = (root / name).resolve()
    if path.parent != root or not path.is_file():
        raise Http404("no such export file")
    return cast(HttpResponse, FileResponse(open(path, "rb"), as_attachment=True, filename=name))  # noqa: SIM115 - FileResponse closes it


@role_required(Role.RESEARCHER)
def study_results(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=study_id)
    res = results.cached_study_results(study)
    design = DESIGNS[study.design]
    panels = [(results.dimension_label(dim), [
        (system, *(lambda s: (s.mean, s.ci_low, s.ci_high) if s else (float("nan"),) * 3)(res.score(system, dim)))
        for system in res.systems]) for dim in res.dimensions]
    low, high = design.dimensions[0].minimum, design.dimensions[0].maximum
    pairs_by_dim = {dim: [p for p in res.summary.pairs if p.dimension == dim] for dim in res.dimensions}
    return render(request, "annotation/evaluation/results.html", {
        "study": study, "design": design, "res": res, "rows": results.table_rows(res),
        "labels": [results.dimension_label(d) for d in res.dimensions],
        "chart": intervals_svg(panels, low, high, f"{study.name}: means with 95% intervals"),
        "pairs_by_dim": [(results.dimension_label(d), ps) for d, ps in pairs_by_dim.items()],
        "agreement": [(results.dimension_label(d), a, n, results.level_of(study.design, d)) for d, (a, n) in res.summary.agreement.items()],
        "correlations": results.correlation_table(res),
        "positions": list(res.positions.items()),
    })


def _rate_context(study: Study, request: HttpRequest) -> tuple[dict[str, object], HttpResponse | None]:
    user = user_of(request)
    membership = assignment.rater_for(study, user)
    context: dict[str, object] = {"study": study, "design": DESIGNS[study.design]}
    try:
        page = assignment.next_page(study, user, membership=membership)
    except assignment.RaterExcluded:
        return context, render(request, "annotation/evaluation/done.html", {**context, "excluded": True}, status=403)
    except assignment.StudyClosed:
        return context, render(request, "annotation/evaluation/done.html", {**context, "closed": True})
    context["progress"] = presenting.my_progress(membership)
    if page is None:
        return context, render(request, "annotation/evaluation/done.html", context)
    context["page"] = presenting.page_view(page)
    context["spec"] = presenting.design_spec(study)
    return context, None


@role_required(*LABELERS)
def rate(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=study_id)
    context, done = _rate_context(study, request)
    return done or render(request, "annotation/evaluation/rate.html", context)


@role_required(*LABELERS)
def instructions(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=study_id)
    if study.status != Study.Status.OPEN and not has_role(user_of(request), Role.RESEARCHER):
        raise PermissionDenied("This study is not open.")
    return render(request, "annotation/evaluation/instructions.html", {"study": study, "design": DESIGNS[study.design]})


@require_POST
@role_required(*LABELERS)
def submit_form(request: HttpRequest, study_id: int) -> HttpResponse:
    """Fallback without JavaScript: fields ``r-<position>-<dimension>``, then back (PRG)."""
    study = get_object_or_404(Study, pk=study_id)
    design = DESIGNS[study.design]
    by_pos: dict[int, dict[str, float]] = {}
    for key in request.POST:
        value = request.POST.get(key, "")
        parts = key.split("-", 2)
        if len(parts) == 3 and parts[0] == "r" and parts[1].isascii() and parts[1].isdigit() and parts[2] in design.keys:
            try:
                number = float(value)
            except ValueError:
                continue
            if math.isfinite(number):  # NaN and infinity are no rating
                by_pos.setdefault(int(parts[1]), {})[parts[2]] = number
    ratings = [{"position": p, "values": {k: (int(v) if design.dimension(k).level != "interval" and v.is_integer() else v) for k, v in vals.items()}}
               for p, vals in sorted(by_pos.items())]
    try:
        rating.submit_page(user_of(request), request.POST.get("token", ""), ratings)
    except rating.AnswerError as exc:
        messages.error(request, str(exc))
    return redirect("evaluation:rate", study.pk)
