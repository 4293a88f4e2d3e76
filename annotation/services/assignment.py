"""Serving questions: tests indistinguishable from work, capacity control with row locks,
reservations that expire, never the same pair twice.

Tests cannot be told from work by their place: each question served is a test question with
probability ``1 / job.test_question_every`` (so a page of N questions holds 0, 1, 2, ... tests,
binomially), and ordinary items come in a random order of their own for every annotator (each
serve starts at a fresh random ``JobItem.rank``; ranks are a random permutation drawn at job
creation), never in (document pair, simple, complex) order. The draws come from a generator
seeded by the job's secret seed, the annotator and the count of questions served (reproducible
for tests, unknowable to annotators). What an annotator sees of their accuracy changes only at
page ends (``labeling``), so it cannot tell which answer was a test either.

Capacity invariant per job item: ``judgments_count + reserved_count <= judgments_per_pair``.
Serving locks a free item with ``SELECT ... FOR UPDATE SKIP LOCKED`` (concurrent annotators
take different rows instead of waiting) and reserves it; answering turns the reservation into
a judgment (see ``labeling``); expired reservations are released by ``release_expired``.
"""

from __future__ import annotations

import functools
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

from annotation.models import Assignment, CandidatePair, JobItem, LabelingJob, Membership, TestQuestion
from annotation.services.removal import release_assignments
from config.cached_sql import (
    CachedInsert,
    CachedInsertOrNothing,
    CachedQuery,
    CachedSave,
    CachedUpdate,
    concrete_attnames,
    instance,
    instances,
)

MAX_PENDING = 2  # the question on screen and the preloaded next one
MAX_EXCLUDE = 4  # tokens a client may name as on screen (the API's ``exclude``)
Row = TypeVar("Row", bound=models.Model)


class JobClosed(Exception):
    """The job is paused or closed."""


class AnnotatorRemoved(Exception):
    """The annotator was removed from the job for low test-question accuracy."""


_MEMBERSHIP_WITH_JOB = CachedQuery(
    lambda job, user: Membership.objects.filter(job_id=job, annotator_id=user).values_list(
        *concrete_attnames(Membership), *concrete_attnames(LabelingJob, "job__")
    ),
    job=int, user=int,
)


def membership_with_job(job_id: int, user: User) -> Membership | None:
    """The user's membership of job ``job_id`` with its job in the same query (the labeling page
    reads both on every request); None before the user's first question of that job."""
    if not 0 < job_id < 2**63:  # no such job (a hostile URL's id past bigint)
        return None
    found = _MEMBERSHIP_WITH_JOB.rows(job=job_id, user=user.pk)
    if not found:
        return None
    membership, membership.job = instances(found[0], Membership, LabelingJob)
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


def free_first(
    items: QuerySet[Row], capacity: int, seen: QuerySet[Any],
    done: str = "judgments_count", reserved: str = "reserved_count", order: tuple[str, ...] = ("pk",),
) -> QuerySet[Any]:
    """``items`` with ``done + reserved < capacity`` that ``seen`` (a queryset filtered on
    ``OuterRef("pk")``) does not hold, in ``order``, locked as read and skipping rows other
    servers have locked: the first of them is the one to reserve."""
    free = items.select_for_update(skip_locked=True, of=("self",)).alias(load=F(done) + F(reserved)).filter(load__lt=capacity)
    return free.filter(~Exists(seen)).order_by(*order)


@functools.cache
def _taking(model: type[models.Model], reserved: str) -> CachedUpdate:
    return CachedUpdate(lambda pk: (model._default_manager.filter(pk=pk), {reserved: F(reserved) + 1}), pk=int)


def take_reservation(model: type[models.Model], pk: int, reserved: str = "reserved_count") -> None:
    """One more reservation on the row ``pk`` of ``model`` (its UPDATE compiled once per model)."""
    _taking(model, reserved).run(pk=pk)


SAVE_SERVED = CachedSave(Membership, questions_served=int)  # the membership's save after serving


def reserve_free(
    items: QuerySet[Row], capacity: int, seen: QuerySet[Any],
    done: str = "judgments_count", reserved: str = "reserved_count", order: tuple[str, ...] = ("pk",),
) -> Row | None:
    """Lock the first free row of ``items`` (``free_first``) and take one reservation on it.
    Call inside a transaction."""
    item = free_first(items, capacity, seen, done, reserved, order).first()
    if item is not None:
        take_reservation(type(item), item.pk, reserved)
    return item


def serving_rng(job: LabelingJob, user: User, served: int) -> random.Random:
    """The draws of the ``served``-th question of ``user`` in ``job``: seeded by the job's secret seed."""
    return random.Random(f"{job.seed}:{user.pk}:{served}")


SENTENCES = ("candidate__complex__text", "candidate__simple__text")
Served = tuple[str, str, str]  # the new assignment's token, its complex and its simple sentence
_NEW_ASSIGNMENT = {  # the served question's assignment, by what it asks about (an item or a test question)
    asks: CachedInsert(
        Assignment, {"test_question_id" if asks == "item_id" else "item_id": None, "answered_at": None, "answer": ""},
        job_id=int, annotator_id=int, token=str, served_at=datetime, expires_at=datetime, **{asks: int},
    )
    for asks in ("item_id", "test_question_id")
}


def _new_assignment(job: LabelingJob, user: User, now: datetime, expires: datetime, asks: str, pk: int) -> str:
    """Store the served question's assignment (``asks``: "item_id" or "test_question_id"); its token."""
    token = new_token()
    values: dict[str, Any] = {asks: pk}  # typed Any: insert() also takes ``using``
    _NEW_ASSIGNMENT[asks].insert(
        job_id=job.pk, annotator_id=user.pk, token=token, served_at=now, expires_at=expires, **values
    )
    return token


# the answer's preload: the free item's pk and texts at or after / before the start rank, compiled once
_FREE_ITEM = {
    op: CachedQuery(
        lambda job, user, start, capacity, op=op: free_first(
            JobItem.objects.filter(job_id=job, **{f"rank__{op}": start}), capacity,
            Assignment.objects.filter(annotator_id=user, item=OuterRef("pk")), order=("rank", "pk"),
        ).values_list("pk", *SENTENCES)[:1],
        job=int, user=int, start=float, capacity=int,
    )
    for op in ("gte", "lt")
}


def _serve_item(job: LabelingJob, user: User, now: datetime, expires: datetime, start: float) -> Served | None:
    """A free item at or after the random rank ``start`` (wrapping around to the lowest ranks):
    its two texts read with it, no model instances but the new assignment."""
    found = None
    for op in ("gte", "lt"):
        rows = _FREE_ITEM[op].rows(job=job.pk, user=user.pk, start=start, capacity=job.judgments_per_pair)
        if rows:
            found = rows[0]
            break
    if found is None:
        return None
    pk, complex_text, simple_text = found
    take_reservation(JobItem, pk)
    return _new_assignment(job, user, now, expires, "item_id", pk), complex_text, simple_text


def _serve_test(job: LabelingJob, user: User, now: datetime, expires: datetime, rng: random.Random) -> Served | None:
    seen = Assignment.objects.filter(annotator=user, test_question=OuterRef("pk"))
    left = list(TestQuestion.objects.filter(job=job).filter(~Exists(seen)).order_by("pk").values_list("pk", flat=True))
    if not left:
        return None
    test = TestQuestion.objects.select_related("candidate__simple", "candidate__complex").filter(pk=rng.choice(left)).first()
    if test is None:
        return None
    token = _new_assignment(job, user, now, expires, "test_question_id", test.pk)
    return token, test.candidate.complex.text, test.candidate.simple.text


_NEW_MEMBERSHIP = CachedInsertOrNothing(  # the user's first question of a job (a parallel one may insert it too)
    Membership, {"last_answer_at": None, "removed_at": None}, job_id=int, annotator_id=int,
)
_LOCK_MEMBERSHIP = CachedQuery(  # the user's membership of a job, row-locked: serving's lock
    lambda job, user: Membership.objects.select_for_update()
    .filter(job_id=job, annotator_id=user)
    .values_list(*concrete_attnames(Membership)),
    job=int, user=int,
)


def next_served(
    job: LabelingJob, user: User, exclude: tuple[str, ...] = (), membership: Membership | None = None
) -> Served | None:
    """The user's oldest pending question not in ``exclude``, or a newly served one, as
    ``(token, complex text, simple text)``; None when nothing is left for this user. Raises
    JobClosed or AnnotatorRemoved. What the ``next`` API serves.

    The membership row lock serialises this annotator's serving: the pending questions are read
    and counted under it (``serve_locked``, the answer's own path, its queries compiled once), so
    parallel requests never exceed ``MAX_PENDING``. ``membership``: the caller's read of it, if
    any (a removal it shows is final); the one locked here is read again, created on first use."""
    return _serving(job, user, membership, lambda m, now: serve_saving(job, user, m, exclude, now))


def page_served(
    job: LabelingJob, user: User, membership: Membership | None = None, first_question: bool = False
) -> tuple[Served | None, Served | None]:
    """What the labeling page shows and what it preloads: ``next_served`` twice under one
    membership lock, the second excluding the first (``(None, None)`` when nothing is left, the
    second None when only one question is). The page then needs no ``next`` request of its own.
    ``first_question``: the caller read the membership and found none (its row is inserted first)."""

    def both(m: Membership, now: datetime) -> tuple[Served | None, Served | None]:
        mine = _PENDING_TOKENS.rows(job=job.pk, user=user.pk, now=now)  # read once for both
        shown = serve_locked(job, user, m, (), now, mine)
        if shown is None:
            return None, None
        # shown is the oldest pending question, or was served new when none was pending
        return shown, serve_locked(job, user, m, (shown[0],), now, mine or [(0, shown[0])])

    return _serving(job, user, membership, lambda m, now: _saving(m, lambda: both(m, now)), first_question)


Result = TypeVar("Result")


def _serving(
    job: LabelingJob, user: User, membership: Membership | None, serve: Callable[[Membership, datetime], Result],
    first_question: bool = False,
) -> Result:
    """Run ``serve`` with the user's membership row locked (created on first use) in a
    transaction, after the job's and the membership's checks and the expiry sweep.
    ``first_question``: the caller found no membership (:func:`_locked_membership`)."""
    if not job.accepts_answers:
        raise JobClosed(job.get_status_display())
    if membership is not None and membership.removed:
        raise AnnotatorRemoved()
    now = timezone.now()
    maybe_release_expired(job, now)
    with transaction.atomic():
        m = _locked_membership(job, user, first_question)
        if m.removed:
            raise AnnotatorRemoved()
        return serve(m, now)


def _locked_membership(job: LabelingJob, user: User, first_question: bool) -> Membership:
    """The user's membership row, locked in the caller's transaction, inserted when missing. One statement when
    the row exists (the lock) and, with ``first_question``, when it does not (the insert: a row inserted by a
    transaction is locked by it); two otherwise (a parallel first request's row is locked after the insert)."""
    if not first_question:
        found = _LOCK_MEMBERSHIP.rows(job=job.pk, user=user.pk)
        if found:
            return instance(Membership, found[0])
    m = _new_membership(job, user)
    if m is not None:
        return m
    found = _LOCK_MEMBERSHIP.rows(job=job.pk, user=user.pk)  # a parallel first request inserted it
    if not found:  # memberships go only with their job or their user (cascade): one of them is being deleted
        raise JobClosed("deleted")
    return instance(Membership, found[0])


def _new_membership(job: LabelingJob, user: User) -> Membership | None:
    """The user's new membership row, inserted in the caller's transaction (so locked by it: a parallel request's
    insert or lock waits for its commit); None when the row exists already."""
    pk = _NEW_MEMBERSHIP.insert_or_nothing(job_id=job.pk, annotator_id=user.pk)
    if pk is None:
        return None
    m = Membership(pk=pk, job=job, annotator=user)  # every other column at its constant default, as inserted
    m._state.adding, m._state.db = False, transaction.get_connection().alias
    return m


def serve_saving(
    job: LabelingJob, user: User, membership: Membership, exclude: tuple[str, ...], now: datetime
) -> Served | None:
    """``serve_locked``, then the membership's ``questions_served`` saved when it served (for a
    caller with no other membership write to share it with)."""
    return _saving(membership, lambda: serve_locked(job, user, membership, exclude, now))


def _saving(membership: Membership, serve: Callable[[], Result]) -> Result:
    """Run ``serve`` (which may serve questions to ``membership``'s annotator), then save
    ``questions_served`` once if it changed."""
    served_before = membership.questions_served
    out = serve()
    if membership.questions_served != served_before:
        SAVE_SERVED.save(membership)
    return out


def next_question(
    job: LabelingJob, user: User, exclude: tuple[str, ...] = (), membership: Membership | None = None
) -> Assignment | None:
    """``next_served`` as the assignment, its candidate's sentences loaded (``candidate_of``)."""
    served = next_served(job, user, exclude, membership)
    return None if served is None else with_sentences(Assignment.objects.filter(token=served[0])).get()


_PENDING_TOKENS = CachedQuery(  # the answer's preload: the pending questions' tokens, oldest first
    lambda job, user, now: Assignment.objects.filter(job_id=job, annotator_id=user, answered_at__isnull=True, expires_at__gt=now)
    .order_by("served_at", "pk")
    .values_list("pk", "token")[: MAX_PENDING + MAX_EXCLUDE],
    job=int, user=int, now=datetime,
)


_TEXTS_OF = CachedQuery(  # a pending question's two texts (its item's candidate or its test question's)
    lambda pk: Assignment.objects.filter(pk=pk).values_list(
        "item_id", "item__candidate__complex__text", "item__candidate__simple__text",
        "test_question__candidate__complex__text", "test_question__candidate__simple__text",
    ),
    pk=int,
)


def serve_locked(
    job: LabelingJob, user: User, membership: Membership, exclude: tuple[str, ...], now: datetime,
    mine: list[tuple[Any, ...]] | None = None,
) -> Served | None:
    """``next_served`` for a caller that already holds the membership row lock in its transaction
    (``next_served`` itself, and the answer that preloads the following question):
    ``(token, complex, simple)``. The pending questions are read under that lock, so one read both
    resumes and counts them. Increments ``membership.questions_served`` when it serves; the caller
    saves the membership. ``mine``: the pending questions' (pk, token), oldest first, when the
    caller has read them under the same lock."""
    if mine is None:
        mine = _PENDING_TOKENS.rows(job=job.pk, user=user.pk, now=now)
    for pk, token in mine:
        if token not in exclude:
            item_id, *texts = _TEXTS_OF.rows(pk=pk)[0]
            return (token, texts[0], texts[1]) if item_id is not None else (token, texts[2], texts[3])
    if len(mine) >= MAX_PENDING:
        return None
    return _reserve(job, user, membership, now)


def candidate_of(assignment: Assignment) -> CandidatePair:
    """The candidate pair an assignment asks about (its item's or its test question's)."""
    source = assignment.item if assignment.item_id is not None else assignment.test_question
    if source is None:  # the model allows it, the services never create it
        raise ValueError(f"assignment {assignment.pk} has neither an item nor a test question")
    return source.candidate


def _reserve(job: LabelingJob, user: User, membership: Membership, now: datetime) -> Served | None:
    """Serve a new question (a test with probability ``1 / test_question_every``, else a free item
    at a random rank); the membership row is locked by the caller, who saves ``questions_served``."""
    expires = now + timedelta(minutes=job.reservation_minutes)
    rng = serving_rng(job, user, membership.questions_served)
    is_test, start = job.test_question_every > 0 and rng.random() < 1 / job.test_question_every, rng.random()
    served = _serve_test(job, user, now, expires, rng) if is_test else None
    if served is None:
        served = _serve_item(job, user, now, expires, start)
    if served is not None:
        membership.questions_served += 1
    return served


def with_sentences(qs):  # type: ignore[no-untyped-def]
    """Load the candidate's two sentences with the assignment (one query)."""
    return qs.select_related(
        "item__candidate__simple", "item__candidate__complex",
        "test_question__candidate__simple", "test_question__candidate__complex",
    )
