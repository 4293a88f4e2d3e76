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

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db.models import F, QuerySet
from django.utils import timezone

from annotation.models import Assignment, JobItem, Judgment, LabelingJob, Membership, TestAnswer


def below_threshold(job: LabelingJob, membership: Membership) -> bool:
    """True once enough test answers are in and accuracy is under the job's threshold."""
    if membership.tests_answered < max(job.min_test_questions, 1):
        return False
    return membership.tests_correct / membership.tests_answered < job.accuracy_threshold


def settle_page(
    job: LabelingJob, membership: Membership, now: datetime | None = None, also_save: Sequence[str] = ()
) -> list[TestAnswer]:
    """Show the test answers given since the last settlement, and remove the annotator if their
    accuracy is now below the threshold; returns the missed ones (with their test question and
    sentences) for the page's feedback. Call inside a transaction holding the membership row
    lock; saves the membership (with the fields in ``also_save`` the caller changed: one UPDATE)."""
    fresh = membership.tests_answered - membership.shown_tests_answered
    missed: list[TestAnswer] = []
    if fresh > 0:
        missed = [
            a for a in TestAnswer.objects.filter(job=job, annotator_id=membership.annotator_id)
            .select_related("test_question__candidate__simple", "test_question__candidate__complex")
            .order_by("-pk")[:fresh]
            if not a.correct
        ][::-1]
    membership.shown_tests_answered = membership.tests_answered
    membership.shown_tests_correct = membership.tests_correct
    membership.save(update_fields=["shown_tests_answered", "shown_tests_correct", *also_save])
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
