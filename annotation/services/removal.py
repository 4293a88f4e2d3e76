"""Test-question accuracy and automatic removal of inaccurate annotators.

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

from annotation.models import Assignment, JobItem, Judgment, LabelingJob, Membership


def below_threshold(job: LabelingJob, membership: Membership) -> bool:
    """True once enough test answers are in and accuracy is under the job's threshold."""
    if membership.tests_answered < max(job.min_test_questions, 1):
        return False
    return membership.tests_correct / membership.tests_answered < job.accuracy_threshold


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
