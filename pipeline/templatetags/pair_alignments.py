"""``{% pair_alignments %}``: the pair page's comparison of candidates, reference, verified labels and a run."""

from __future__ import annotations

from typing import Any

from django import template

from pipeline import pair_alignments as comparison

register = template.Library()


@register.inclusion_tag("pipeline/_pair_alignments.html", takes_context=True)
def pair_alignments(context: template.Context) -> dict[str, Any]:
    request = context.get("request")
    raw = request.GET.get("run", "") if request is not None else ""
    result = comparison.compare(context["pair"], int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 12 else None)
    return {"pair": context["pair"], "c": result, "sources": comparison.SOURCES,
            "show_all": request is not None and request.GET.get("all") == "1"}
