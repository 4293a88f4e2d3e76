"""``{% latest_runs corpus as runs %}``: a corpus's latest alignment runs with their jobs, in one query
(the corpus page's pipeline slot; each run's stored prediction count, never a count per run)."""

from __future__ import annotations

from django import template

from curation.models import Corpus
from pipeline.models import AlignmentRun

register = template.Library()


@register.simple_tag
def latest_runs(corpus: Corpus, limit: int = 5) -> list[AlignmentRun]:
    return list(AlignmentRun.objects.filter(corpus=corpus).select_related("job").order_by("-created_at", "-pk")[:limit])
