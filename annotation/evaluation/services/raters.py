"""Rater quality: the control flag, exclusion (ratings kept, marked invalid, capacity given back
as when a labeling annotator is removed) and per-rater attention and speed figures."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.models import EvalItem, EvalPage, Rating, Study, StudyRater
from annotation.services.removal import release_assignments


def should_flag(study: Study, membership: StudyRater) -> bool:
    """More than ``flag_share`` of at least ``min_control_pages`` control pages failed."""
    if membership.control_pages < max(study.min_control_pages, 1):
        return False
    return membership.control_failed / membership.control_pages > study.flag_share


def exclude_rater(study: Study, rater_id: int, now: datetime | None = None) -> int:
    """Exclude a rater: pending pages released, ratings kept but ``is_valid=False``, their items
    back in the queue. Returns the number of ratings set apart. Idempotent."""
    now = now or timezone.now()
    with transaction.atomic():
        membership = StudyRater.objects.select_for_update().filter(study=study, rater_id=rater_id).first()
        if membership is None or membership.excluded:
            return 0
        pending = list(
            EvalPage.objects.select_for_update().filter(study=study, rater_id=rater_id, answered_at__isnull=True)
            .order_by("pk").values_list("pk", "item_id")
        )
        answered_items = list(
            Rating.objects.filter(study=study, rater_id=rater_id, is_valid=True).values_list("item_id", flat=True).distinct()
        )
        affected = sorted({item for _, item in pending} | set(answered_items))
        list(EvalItem.objects.select_for_update().filter(pk__in=affected).order_by("pk").values_list("pk", flat=True))
        release_assignments(study.pk, pending, assignments=EvalPage.objects.all(), items=EvalItem.objects.all())
        apart = Rating.objects.filter(study=study, rater_id=rater_id, is_valid=True).update(is_valid=False)
        EvalItem.objects.filter(pk__in=answered_items).update(ratings_count=F("ratings_count") - 1)
        membership.excluded, membership.excluded_at = True, now
        membership.save(update_fields=["excluded", "excluded_at"])
    return apart


@dataclass(frozen=True)
class RaterFigures:
    rater_id: int
    username: str
    pages: int
    median_seconds: float | None
    mean_seconds: float | None
    fast_share: float | None  # pages answered within 1.5 x the minimum time
    straight_share: float | None  # pages where every version got the same value(s)
    control_pages: int
    control_failed: int
    control_fail_share: float | None
    mean_control_score: float | None
    flagged: bool
    excluded: bool

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def rater_figures(study: Study) -> list[RaterFigures]:
    """Attention and speed per rater, recounted from their pages and ratings."""
    members = list(StudyRater.objects.filter(study=study).select_related("rater").order_by("excluded", "-pages_answered", "pk"))
    seconds: dict[int, list[float]] = defaultdict(list)
    for rater_id, s in EvalPage.objects.filter(study=study, answered_at__isnull=False).values_list("rater_id", "seconds"):
        seconds[rater_id].append(float(s or 0.0))
    page_values: dict[tuple[int, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    control_scores: dict[int, list[float]] = defaultdict(list)
    rows = Rating.objects.filter(study=study).values_list("rater_id", "page_id", "output__is_control", "dimension", "value")
    for rater_id, page_id, is_control, dim, value in rows:
        if is_control:
            control_scores[rater_id].append(value)
        else:
            page_values[(rater_id, page_id)][dim].append(value)
    straight: dict[int, list[bool]] = defaultdict(list)
    for (rater_id, _), by_dim in page_values.items():
        several = any(len(v) > 1 for v in by_dim.values())
        straight[rater_id].append(several and all(len(set(v)) == 1 for v in by_dim.values()))
    out = []
    fast_limit = 1.5 * study.min_seconds
    for m in members:
        secs = seconds.get(m.rater_id, [])
        st = straight.get(m.rater_id, [])
        cs = control_scores.get(m.rater_id, [])
        out.append(RaterFigures(
            m.rater_id, m.rater.username, m.pages_answered,
            round(statistics.median(secs), 1) if secs else None,
            round(statistics.fmean(secs), 1) if secs else None,
            round(sum(s <= fast_limit for s in secs) / len(secs), 3) if secs else None,
            round(sum(st) / len(st), 3) if st else None,
            m.control_pages, m.control_failed,
            round(m.control_failed / m.control_pages, 3) if m.control_pages else None,
            round(statistics.fmean(cs), 1) if cs else None,
            m.flagged, m.excluded,
        ))
    return out
