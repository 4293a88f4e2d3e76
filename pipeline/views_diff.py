"""The model-version diff page: what changes between two alignment runs of one corpus, and is it better."""

from __future__ import annotations

import io

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.permissions import staff_required
from curation.curate.phenomena import PHENOMENA_ORDER
from curation.models import Corpus, DocumentPair
from pipeline.models import AlignmentRun, ModelVersion
from pipeline.services import run_diff

MAX_PAIRS_SHOWN = 200
MAX_PAIRS_DETAILED = 30


@staff_required
def diff_page(request: HttpRequest) -> HttpResponse:
    """``?corpus=&a=&b=`` (run ids) or ``?corpus=&model_a=&model_b=`` (the versions' latest runs there),
    filters ``phenomenon``, ``outcome`` (fixed / broken / unverified), ``change``; ``format=tsv`` exports."""
    q = request.GET
    corpus_id = int(q["corpus"]) if q.get("corpus", "").isdigit() else None
    corpora = Corpus.objects.filter(alignment_runs__isnull=False).distinct().order_by("name")
    runs = AlignmentRun.objects.select_related("model_version", "corpus").order_by("-pk")
    if corpus_id is not None:
        runs = runs.filter(corpus_id=corpus_id)
    filters = {k: q.get(k, "") for k in ("phenomenon", "outcome", "change")}
    context: dict = {
        "corpora": corpora, "corpus_id": corpus_id, "runs": runs[:200], "filters": filters,
        "versions": ModelVersion.objects.exclude(path="").order_by("-pk")[:100],
        "phenomena": PHENOMENA_ORDER, "outcomes": run_diff.OUTCOMES, "changes": run_diff.CHANGES,
        "a": q.get("a", ""), "b": q.get("b", ""), "model_a": q.get("model_a", ""), "model_b": q.get("model_b", ""),
    }
    by_model = bool(q.get("model_a") or q.get("model_b"))
    wanted = (q.get("model_a"), q.get("model_b")) if by_model else (q.get("a"), q.get("b"))
    if not all(wanted):
        return render(request, "pipeline/run_diff.html", context)
    try:
        run_a = run_diff.run_for(wanted[0] or "", corpus_id, model=by_model)
        run_b = run_diff.run_for(wanted[1] or "", corpus_id, model=by_model)
        diff = run_diff.diff_runs(run_a, run_b)
        rows = run_diff.filter_rows(diff, **filters)
    except run_diff.DiffError as exc:
        context["error"] = str(exc)
        return render(request, "pipeline/run_diff.html", context, status=400)
    if q.get("format") == "tsv":
        buffer = io.StringIO()
        run_diff.write_tsv(buffer, rows)
        response = HttpResponse(buffer.getvalue(), content_type="text/tab-separated-values; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="diff-run{run_a.pk}-run{run_b.pk}.tsv"'
        return response
    per_pair = diff.totals_by_pair(rows)
    names = dict(DocumentPair.objects.filter(pk__in=list(per_pair)).values_list("pk", "pair_id"))
    changed = [(names.get(pk, str(pk)), counts, pk) for pk, counts in per_pair.items()
               if counts["added"] or counts["removed"]]
    changed.sort(key=lambda item: (-(item[1]["added"] + item[1]["removed"]), item[0]))
    by_pair = diff.by_pair(rows)
    shown = [pk for _, _, pk in changed[:MAX_PAIRS_DETAILED]]
    detail_rows = [r for pk in shown for r in sorted(by_pair[pk], key=lambda r: (PHENOMENA_ORDER.index(r.phenomenon), r.change))
                   if r.change != "kept" or filters["change"] == "kept"]
    details = [(names.get(pk, str(pk)), [(r, diff.texts.get(r.simple, ""), diff.texts.get(r.complex, "")) for r in detail_rows
                                         if r.pair == pk]) for pk in shown]
    context.update({
        "run_a": run_a, "run_b": run_b, "diff": diff, "totals": diff.totals(rows), "all_totals": diff.totals(),
        "phenomenon_rows": diff.by_phenomenon(rows).items(), "pairs_changed": changed[:MAX_PAIRS_SHOWN], "details": details,
        "pairs_changed_count": len(changed), "quality": diff.quality, "tsv_query": _with(q, format="tsv"),
        "corpus_id": run_a.corpus_id,
    })
    return render(request, "pipeline/run_diff.html", context)


def _with(query: object, **extra: str) -> str:
    params = query.copy()  # type: ignore[attr-defined]
    for key, value in extra.items():
        params[key] = value
    return str(params.urlencode())
