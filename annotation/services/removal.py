"""Test-question accuracy, settled per page, and automatic removal of inaccurate annotators.

Accuracy is *settled* at page ends (every ``job.page_size`` answers, and for everyone when the
job closes): the counters the annotator sees (``shown_tests_*``), the feedback on missed test
questions and removal all change only then, so none of them tells which answer of the page
was a test (docs/annotation-quality.md, "Tests indistinguishable from work").

Removal (inside the caller's transaction, with the membership row locked): the annotator's
pending reservations are released, their judgments become invalid (``is_valid=False``) and the
items' valid-judgment counters are decremented, so their pairs go back to the queue.
Lock order everywhere in annotation: membership, then assignment rows, then job items by pk
(the expiry sweep takes assignments with SKIP LOCKED, then items).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import F, QuerySet
from django.utils import timezone

from annotation.models import Assignment, JobItem, Judgment, LabelingJob, Membership, TestAnswer
from config.cached_sql import CachedQuery, CachedSave

SETTLED = {"shown_tests_answered": int, "shown_tests_correct": int}  # what settling writes


def settling_save(**kinds: type) -> CachedSave:
    """The membership's UPDATE of a page end: the settled counters and the caller's ``kinds`` (one
    statement for both), compiled once; pass it to ``settle_page`` as ``save``."""
    return CachedSave(Membership, **SETTLED, **kinds)


_SAVE_SETTLED = settling_save()


@dataclass(frozen=True)
class Feedback:
    """A missed test question of the page that just ended, with its explanation."""

    complex: str
    simple: str
    given: str
    expected: str
    explanation: str


@functools.cache
def _last_test_answers(count: int) -> CachedQuery:
    """An annotator's last ``count`` test answers in a job, newest first: whether each was correct
    and what its feedback shows; compiled once per count (the LIMIT is part of the SQL; counts are
    page sizes in practice)."""
    return CachedQuery(
        lambda job, annotator: TestAnswer.objects.filter(job_id=job, annotator_id=annotator)
        .order_by("-pk")
        .values_list(
            "correct", "test_question__candidate__complex__text", "test_question__candidate__simple__text",
            "label", "test_question__gold_label", "test_question__explanation",
        )[:count],
        job=int, annotator=int,
    )


def below_threshold(job: LabelingJob, membership: Membership) -> bool:
    """True once enough test answers are in and accuracy is under the job's threshold."""
    if membership.tests_answered < max(job.min_test_questions, 1):
        return False
    return membership.tests_correct / membership.tests_answered < job.accuracy_threshold


def settle_page(
    job: LabelingJob, membership: Membership, now: datetime | None = None, save: CachedSave = _SAVE_SETTLED
) -> list[Feedback]:
    """Show the test answers given since the last settlement, and remove the annotator if their
    accuracy is now below the threshold; returns the missed ones, oldest first, for the page's
    feedback. Call inside a transaction holding the membership row lock; saves the membership
    with ``save`` (a ``settling_save`` of the fields the caller changed too: one UPDATE)."""
    fresh = membership.tests_answered - membership.shown_tests_answered
    missed: list[Feedback] = []
    if fresh > 0:
        rows = _last_test_answers(fresh).rows(job=job.pk, annotator=membership.annotator_id)
        missed = [Feedback(*shown) for correct, *shown in reversed(rows) if not correct]
    membership.shown_tests_answered = membership.tests_answered
    membership.shown_tests_correct = membership.tests_correct
    save.save(membership)
    if not membership.removed and below_threshold(job, membership):
        remove_annotator(job, membership, now)
    return missed


def settle_job(job: LabelingJob, now: datetime | None = None) -> int:
    """Settle every membership with unsettled test answers (when the job closes); returns how many."""
    from django.db import transaction

    done = 0
    for pk in job.memberships.filter(shown_tests_answered__lt=F("tests_answered")).values_list("pk", flat=True):
        with transaction.atomic():
            membership = Membership.objects.select_for_update().get(pk=pk)
            settle_page(job, membership, now)
            done += 1
    return done


def release_assignments(
    job_id: int, pending: Sequence[tuple[int, int | None]],
    assignments: QuerySet[Any] | None = None, items: QuerySet[Any] | None = None,
) -> None:
    """Delete reservations ``(assignment pk, item pk)`` and give their capacity back
    (labeling assignments and job items unless other reservation rows and items are given)."""
    if not pending:
        return
    assignments = Assignment.objects.all() if assignments is None else assignments
    items = JobItem.objects.all() if items is None else items
    assignments.filter(pk__in=[pk for pk, _ in pending]).delete()
    per_item = Counter(item for _, item in pending if item is not None)
    for item_id in sorted(per_item):
        items.filter(pk=item_id).update(reserved_count=F("reserved_count") - per_item[item_id])


def remove_annotator(job: LabelingJob, membership: Membership, now: datetime | None = None) -> int:
    """Remove the annotator from the job; returns how many judgments were invalidated.

    Call inside a transaction holding the membership row lock; saves the membership.
    """
    now = now or timezone.now()
    pending = list(
        Assignment.objects.select_for_update()
        .filter(job=job, annotator_id=membership.annotator_id, answered_at__isnull=True)
        .order_by("pk")
        .values_list("pk", "item_id")
    )
    valid_items = list(
        Judgment.objects.filter(job=job, annotator_id=membership.annotator_id, is_valid=True).values_list("item_id", flat=True)
    )
    affected = sorted({item for _, item in pending if item is not None} | set(valid_items))
    list(JobItem.objects.select_for_update().filter(pk__in=affected).order_by("pk").values_list("pk", flat=True))
    release_assignments(job.pk, pending)
    invalidated = Judgment.objects.filter(job=job, annotator_id=membership.annotator_id, is_valid=True).update(is_valid=False)
    JobItem.objects.filter(pk__in=valid_items).update(judgments_count=F("judgments_count") - 1)
    membership.removed = True
    membership.removed_at = now
    membership.save(update_fields=["removed", "removed_at"])
    return invalidated
