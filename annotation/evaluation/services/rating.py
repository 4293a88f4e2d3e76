"""Accepting a page: every output rated on every dimension of the design, the minimum time per
page (``labeling.check_min_time``), idempotent resubmission, the control check for slider
studies, and the rater's flag."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Subquery
from django.utils import timezone

from annotation.evaluation.designs import DESIGNS, Design
from annotation.evaluation.services import raters
from annotation.models import EvalItem, EvalOutput, EvalPage, Rating, StudyRater
from annotation.services.labeling import AnswerError, TooFast, check_min_time

__all__ = ["AnswerError", "TooFast", "InvalidRatings", "PageGone", "Excluded", "OverCapacity", "PageResult", "submit_page"]


class InvalidRatings(AnswerError):
    pass


class PageGone(AnswerError):
    """Unknown token, another rater's token, or a reservation that expired."""


class Excluded(AnswerError):
    pass


class OverCapacity(AnswerError):
    """Should never happen: the reservation guarantees a free slot."""


@dataclass(frozen=True)
class PageResult:
    token: str
    duplicate: bool
    answered: int

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


GONE = "This page is no longer reserved for you (it expired); here is another one."


def parse_ratings(design: Design, n_outputs: int, ratings: Sequence[Mapping[str, Any]]) -> dict[int, dict[str, float]]:
    """``[{"position": p, "values": {dimension: value}}]`` -> ``{position: {dimension: value}}``;
    InvalidRatings names the first problem."""
    if not isinstance(ratings, (list, tuple)):
        raise InvalidRatings("ratings must be a list with one entry per version on the page")
    out: dict[int, dict[str, float]] = {}
    for entry in ratings:
        if not isinstance(entry, Mapping):
            raise InvalidRatings("each rating must be an object {position, values}")
        pos = entry.get("position")
        if isinstance(pos, bool) or not isinstance(pos, int) or not 0 <= pos < n_outputs:
            raise InvalidRatings(f"position must be 0..{n_outputs - 1}, got {pos!r}")
        if pos in out:
            raise InvalidRatings(f"version {pos + 1} is rated twice")
        values = entry.get("values")
        if not isinstance(values, Mapping):
            raise InvalidRatings(f"version {pos + 1}: values must be an object {{dimension: value}}")
        extra = set(values) - set(design.keys)
        if extra:
            raise InvalidRatings(f"version {pos + 1}: unknown dimension(s) {', '.join(sorted(map(str, extra)))}")
        row = {}
        for dim in design.dimensions:
            value = values.get(dim.key)
            if value is None:
                raise InvalidRatings(f"version {pos + 1}: {dim.label} has no value")
            if not dim.valid(value):
                raise InvalidRatings(f"version {pos + 1}: {dim.label} must be a whole number from {dim.minimum} to {dim.maximum}"
                                     if dim.level != "interval" else f"version {pos + 1}: {dim.label} must be from {dim.minimum} to {dim.maximum}")
            row[dim.key] = float(value)
        out[pos] = row
    missing = [p + 1 for p in range(n_outputs) if p not in out]
    if missing:
        raise InvalidRatings(f"version(s) {', '.join(map(str, missing))} have no rating yet")
    return out


def submit_page(user: User, token: str, ratings: Sequence[Mapping[str, Any]], now: datetime | None = None) -> PageResult:
    """Store the rater's ratings of page ``token`` (idempotent per token)."""
    now = now or timezone.now()
    with transaction.atomic():
        # lock order as in labeling: membership, page, item
        study_of_token = EvalPage.objects.filter(token=token, rater=user).values("study_id")[:1]
        membership = StudyRater.objects.select_for_update().filter(study_id=Subquery(study_of_token), rater=user).first()
        if membership is None:
            raise PageGone(GONE)
        page = EvalPage.objects.select_for_update(of=("self",)).select_related("study").filter(token=token, rater=user).first()
        if page is None:
            raise PageGone(GONE)
        if page.answered_at is not None:
            return PageResult(page.token, True, membership.pages_answered)
        if membership.excluded:
            raise Excluded("You were excluded from this study.")
        study = page.study
        design = DESIGNS[study.design]
        order: list[int] = list(page.order)
        values = parse_ratings(design, len(order), ratings)
        elapsed = check_min_time(page.served_at, membership.last_answer_at, study.min_seconds, now,
                                 unit="page", read="the source and every version")
        moved = EvalItem.objects.filter(
            pk=page.item_id, reserved_count__gt=0, ratings_count__lt=study.raters_per_item
        ).update(ratings_count=F("ratings_count") + 1, reserved_count=F("reserved_count") - 1)
        if moved != 1:
            raise OverCapacity(f"item {page.item_id} has no reserved slot")
        Rating.objects.bulk_create(
            Rating(study=study, page=page, item_id=page.item_id, output_id=order[pos], rater=user, dimension=dim,
                   value=value, position=pos)
            for pos, row in sorted(values.items()) for dim, value in row.items()
        )
        control_failed = None
        if design.controls:
            controls = set(EvalOutput.objects.filter(pk__in=order, is_control=True).values_list("pk", flat=True))
            scores = [values[pos][design.dimensions[0].key] for pos, pk in enumerate(order) if pk in controls]
            if scores:
                control_failed = any(score > study.control_threshold for score in scores)
                membership.control_pages += 1
                membership.control_failed += int(control_failed)
        page.answered_at, page.seconds, page.control_failed = now, round(elapsed, 3), control_failed
        page.save(update_fields=["answered_at", "seconds", "control_failed"])
        membership.pages_answered += 1
        membership.last_answer_at = now
        membership.flagged = raters.should_flag(study, membership)
        membership.save(update_fields=["pages_answered", "last_answer_at", "control_pages", "control_failed", "flagged"])
        return PageResult(page.token, False, membership.pages_answered)
