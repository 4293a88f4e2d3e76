"""Serving pages: one item per page with all its outputs in a balanced order, through the
labeling job's reservation machinery (``annotation.services.assignment.reserve_free``: capacity
counters, ``SELECT ... FOR UPDATE SKIP LOCKED``, expiring reservations). A rater never gets an
item twice (a unique constraint and the ``seen`` filter)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, OuterRef
from django.utils import timezone

from annotation.evaluation.balance import page_members
from annotation.evaluation.services.studies import CONTROL, members
from annotation.models import EvalItem, EvalPage, Study, StudyRater
from annotation.services.assignment import MAX_PENDING, maybe_sweep, new_token, release_expired_rows, reserve_free


class StudyClosed(Exception):
    """The study is paused or closed."""


class RaterExcluded(Exception):
    """The rater was excluded from the study."""


def rater_for(study: Study, user: User) -> StudyRater:
    membership, _ = StudyRater.objects.get_or_create(study=study, rater=user)
    return membership


def release_expired(study: Study, now: datetime | None = None) -> int:
    return release_expired_rows(EvalPage.objects.filter(study=study), EvalItem.objects.all(), now)


def _serve(study: Study, user: User, now: datetime) -> EvalPage | None:
    seen = EvalPage.objects.filter(rater=user, item=OuterRef("pk"))
    item = reserve_free(EvalItem.objects.filter(study=study), study.raters_per_item, seen,
                        done="ratings_count", order=("position",))
    if item is None:
        return None
    slot = item.position * study.raters_per_item + item.served_count
    EvalItem.objects.filter(pk=item.pk).update(served_count=F("served_count") + 1)
    by_member = {(CONTROL if o.is_control else o.system): o.pk for o in item.outputs.all()}
    ordered, page_seed = page_members(members(study), study.seed, slot)
    return EvalPage.objects.create(
        study=study, rater=user, item=item, token=new_token(), slot=slot, seed=page_seed,
        order=[by_member[m] for m in ordered], served_at=now,
        expires_at=now + timedelta(minutes=study.reservation_minutes),
    )


def next_page(study: Study, user: User, exclude: tuple[str, ...] = (), membership: StudyRater | None = None) -> EvalPage | None:
    """The rater's oldest pending page not in ``exclude``, or a newly served one; None when
    nothing is left for this rater. Raises StudyClosed or RaterExcluded."""
    if study.status != Study.Status.OPEN:
        raise StudyClosed(study.get_status_display())
    now = timezone.now()
    membership = membership or rater_for(study, user)
    if membership.excluded:
        raise RaterExcluded()
    maybe_sweep(("evaluation", study.pk), lambda: release_expired(study, now))
    mine = list(
        EvalPage.objects.filter(study=study, rater=user, answered_at__isnull=True, expires_at__gt=now)
        .select_related("item").order_by("served_at", "pk")[: MAX_PENDING + len(exclude)]
    )
    for pending in mine:
        if pending.token not in exclude:
            return pending
    if len(mine) >= MAX_PENDING:
        return None
    with transaction.atomic():
        m = StudyRater.objects.select_for_update().get(pk=membership.pk)
        if m.excluded:
            raise RaterExcluded()
        page = _serve(study, user, now)
        if page is None:
            return None
        StudyRater.objects.filter(pk=m.pk).update(pages_served=F("pages_served") + 1)
    return page
