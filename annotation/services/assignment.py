"""Serving questions: one test question at a random position in each page of N questions,
capacity control with row locks, reservations that expire, never the same pair twice.

Capacity invariant per job item: ``judgments_count + reserved_count <= judgments_per_pair``.
Serving locks a free item with ``SELECT ... FOR UPDATE SKIP LOCKED`` (concurrent annotators
take different rows instead of waiting) and reserves it; answering turns the reservation into
a judgment (see ``labeling``); expired reservations are released by ``release_expired``.
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.contrib.auth.models import User
from django.db import models, transaction
from django.db.models import Exists, F, OuterRef, QuerySet
from django.utils import timezone

from annotation.models import Assignment, JobItem, LabelingJob, Membership, TestQuestion
from annotation.services.removal import release_assignments

MAX_PENDING = 2  # the question on screen and the preloaded next one
Row = TypeVar("Row", bound=models.Model)


class JobClosed(Exception):
    """The job is paused or closed."""


class AnnotatorRemoved(Exception):
    """The annotator was removed from the job for low test-question accuracy."""


def membership_for(job: LabelingJob, user: User) -> Membership:
    membership, _ = Membership.objects.get_or_create(job=job, annotator=user)
    return membership


def new_token() -> str:
    return secrets.token_urlsafe(18)


SWEEP_EVERY_SECONDS = 5.0
_last_sweep: dict[object, float] = {}


def maybe_sweep(key: object, sweep: Callable[[], object]) -> None:
    """Run ``sweep`` at most every few seconds per ``key`` and process (cheap serving)."""
    tick = time.monotonic()
    if tick - _last_sweep.get(key, -1e9) >= SWEEP_EVERY_SECONDS:
        _last_sweep[key] = tick
        sweep()


def maybe_release_expired(job: LabelingJob, now: datetime) -> None:
    """Sweep expired reservations at most every few seconds per job and process (cheap serving)."""
    maybe_sweep(job.pk, lambda: release_expired(job, now))


def release_expired(job: LabelingJob, now: datetime | None = None, limit: int = 500) -> int:
    """Delete unanswered assignments past their expiry and give their capacity back."""
    return release_expired_rows(Assignment.objects.filter(job=job), JobItem.objects.all(), now, limit)


def release_expired_rows(
    assignments: QuerySet[Any], items: QuerySet[Any], now: datetime | None = None, limit: int = 500
) -> int:
    """``release_expired`` over any reservation rows (``item_id``, ``answered_at``, ``expires_at``)
    and their items (``reserved_count``): labeling assignments or evaluation pages."""
    now = now or timezone.now()
    with transaction.atomic():
        pending = list(
            assignments.select_for_update(skip_locked=True)
            .filter(answered_at__isnull=True, expires_at__lte=now)
            .order_by("pk")
            .values_list("pk", "item_id")[:limit]
        )
        release_assignments(0, pending, assignments=assignments, items=items)
    return len(pending)


def reserve_free(
    items: QuerySet[Row], capacity: int, seen: QuerySet[Any],
    done: str = "judgments_count", reserved: str = "reserved_count", order: tuple[str, ...] = ("pk",),
) -> Row | None:
    """Lock the first of ``items`` with ``done + reserved < capacity`` that ``seen`` (a queryset
    filtered on ``OuterRef("pk")``) does not hold, skipping rows other servers have locked, and
    take one reservation on it. Call inside a transaction."""
    item = (
        items.select_for_update(skip_locked=True, of=("self",))
        .alias(load=F(done) + F(reserved))
        .filter(load__lt=capacity)
        .filter(~Exists(seen))
        .order_by(*order)
        .first()
    )
    if item is not None:
        type(item)._default_manager.filter(pk=item.pk).update(**{reserved: F(reserved) + 1})
    return item


def _serve_item(job: LabelingJob, user: User, now: datetime, expires: datetime) -> Assignment | None:
    seen = Assignment.objects.filter(annotator=user, item=OuterRef("pk"))
    items = JobItem.objects.select_related("candidate__simple", "candidate__complex").filter(job=job)
    item = reserve_free(items, job.judgments_per_pair, seen)
    if item is None:
        return None
    return Assignment.objects.create(
        job=job, annotator=user, item=item, token=new_token(), served_at=now, expires_at=expires
    )


def _serve_test(job: LabelingJob, user: User, now: datetime, expires: datetime) -> Assignment | None:
    seen = Assignment.objects.filter(annotator=user, test_question=OuterRef("pk"))
    test = (
        TestQuestion.objects.filter(job=job)
        .filter(~Exists(seen))
        .select_related("candidate__simple", "candidate__complex")
        .order_by("?")
        .first()
    )
    if test is None:
        return None
    return Assignment.objects.create(
        job=job, annotator=user, test_question=test, token=new_token(), served_at=now, expires_at=expires
    )


def next_question(
    job: LabelingJob, user: User, exclude: tuple[str, ...] = (), membership: Membership | None = None
) -> Assignment | None:
    """The user's oldest pending question not in ``exclude``, or a newly served one; None when
    nothing is left for this user. Raises JobClosed or AnnotatorRemoved.

    The returned assignment has its candidate's sentences loaded (``presenting.question_view``)."""
    if job.status != LabelingJob.Status.OPEN:
        raise JobClosed(job.get_status_display())
    now = timezone.now()
    membership = membership or membership_for(job, user)
    if membership.removed:
        raise AnnotatorRemoved()
    maybe_release_expired(job, now)
    mine = list(
        with_sentences(Assignment.objects.filter(job=job, annotator=user, answered_at__isnull=True, expires_at__gt=now))
        .order_by("served_at", "pk")[: MAX_PENDING + len(exclude)]
    )
    for pending in mine:
        if pending.token not in exclude:
            return pending
    if len(mine) >= MAX_PENDING:
        return None
    expires = now + timedelta(minutes=job.reservation_minutes)
    with transaction.atomic():
        m = Membership.objects.select_for_update().get(pk=membership.pk)
        if m.removed:
            raise AnnotatorRemoved()
        every = max(job.test_question_every, 1)
        position = m.questions_served % every
        if position == 0:
            m.test_slot = random.randrange(every)
        assignment = None
        if job.test_question_every > 0 and position == m.test_slot:
            assignment = _serve_test(job, user, now, expires)
        if assignment is None:
            assignment = _serve_item(job, user, now, expires)
        if assignment is None:
            return None
        m.questions_served += 1
        m.save(update_fields=["questions_served", "test_slot"])
    return assignment  # its item or test question came with the candidate's sentences


def with_sentences(qs):  # type: ignore[no-untyped-def]
    """Load the candidate's two sentences with the assignment (one query)."""
    return qs.select_related(
        "item__candidate__simple", "item__candidate__complex",
        "test_question__candidate__simple", "test_question__candidate__complex",
    )
