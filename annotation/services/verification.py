"""In-house verification of aggregated labels.

The queue holds a job's items that have an ``AggregatedLabel`` and no ``VerifiedLabel`` yet,
ordered so that people look first where the crowd was least sure:

1. disagreements (the raters did not all give the same label) before unanimous items;
2. then by ascending confidence (majority share, or Dawid-Skene posterior);
3. then by item id, so the order is stable.

Verifying writes a ``VerifiedLabel`` (who, when, the label, and the aggregated label it
confirmed or changed). Raw ``Judgment`` rows and the ``AggregatedLabel`` are never modified:
the three layers stay separate, and training/export read the verified layer.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import transaction
from django.db.models import Case, Exists, IntegerField, OuterRef, Q, QuerySet, Value, When

from annotation.agreement import LABELS
from annotation.models import AggregatedLabel, JobItem, Judgment, LabelingJob, Membership, VerifiedLabel
from curation.models import AlignmentLabel

_A, _P, _N = LABELS
# ``votes`` holds only labels that received votes (job_agreement writes it so): two keys = disagreement.
DISAGREEMENT = (
    (Q(votes__has_key=_A) & Q(votes__has_key=_P)) | (Q(votes__has_key=_A) & Q(votes__has_key=_N)) | (Q(votes__has_key=_P) & Q(votes__has_key=_N))
)


def _ordered(qs: QuerySet[AggregatedLabel]) -> QuerySet[AggregatedLabel]:
    return qs.annotate(
        disagreement=Case(When(DISAGREEMENT, then=Value(1)), default=Value(0), output_field=IntegerField())
    ).order_by("-disagreement", "confidence", "item_id")


def queue(job: LabelingJob) -> QuerySet[AggregatedLabel]:
    """Aggregated, not yet verified items of ``job``, disagreements and low confidence first."""
    return _ordered(AggregatedLabel.objects.filter(item__job=job, item__candidate__verified__isnull=True)).select_related(
        "item__candidate"
    )


# --- a cached snapshot of the order, for large jobs ------------------------------------------
# Ordering 200k aggregated rows by a JSON-derived flag takes seconds on every page load, so the
# order of *all* aggregated items of a job is computed once and cached; verified items are
# filtered out at read time (one query over the job's verified labels). write_aggregated_labels
# bumps the job's version, which invalidates the snapshot; it also expires after SNAPSHOT_TTL.
SNAPSHOT_TTL = 600


def version_key(job_id: int) -> str:
    return f"quality:verify-version:{job_id}"


def bump_queue_version(job_id: int) -> None:
    """Call after (re)writing a job's aggregated labels."""
    cache.set(version_key(job_id), uuid.uuid4().hex, None)


@dataclass
class QueueSnapshot:
    """All aggregated items of a job in queue order (verified or not); arrays of shape (n,)."""

    item_ids: np.ndarray
    candidate_ids: np.ndarray
    disagreement: np.ndarray  # bool


def _snapshot_key(job: LabelingJob, version: str | None) -> str:
    return f"quality:verify-order:{job.pk}:{job.created_at.timestamp()}:{version or '0'}"


def snapshots(jobs: Sequence[LabelingJob]) -> dict[int, QueueSnapshot]:
    """The snapshots of ``jobs`` by job id: two cache reads for all of them, and one query over
    the aggregated labels of those whose snapshot was not cached (none when all are)."""
    versions = cache.get_many([version_key(job.pk) for job in jobs])
    keys = {job.pk: _snapshot_key(job, versions.get(version_key(job.pk))) for job in jobs}
    found = cache.get_many(list(keys.values()))
    missing = [pk for pk, key in keys.items() if key not in found]
    if missing:
        rows: dict[int, list[tuple[int, int, int]]] = {pk: [] for pk in missing}
        ordered = _ordered(AggregatedLabel.objects.filter(item__job_id__in=missing))  # queue order inside each job
        for job_id, *row in ordered.values_list("item__job_id", "item_id", "item__candidate_id", "disagreement"):  # type: ignore[misc]  # annotated above
            rows[job_id].append(tuple(row))  # type: ignore[arg-type]
        fresh = {keys[pk]: [np.array([r[i] for r in rows[pk]], dtype=np.int64) for i in range(3)] for pk in missing}
        cache.set_many(fresh, SNAPSHOT_TTL)
        found.update(fresh)
    return {
        pk: QueueSnapshot(item_ids=found[key][0], candidate_ids=found[key][1], disagreement=found[key][2].astype(bool))
        for pk, key in keys.items()
    }


def snapshot(job: LabelingJob) -> QueueSnapshot:
    return snapshots([job])[job.pk]


def _verified_masks(snaps: dict[int, QueueSnapshot]) -> dict[int, np.ndarray]:
    """For each job's snapshot, which of its items are verified: one query over the verified
    labels of all the jobs' items."""
    verified: dict[int, list[int]] = {pk: [] for pk in snaps}
    rows = VerifiedLabel.objects.filter(candidate__job_items__job_id__in=list(snaps)).values_list("candidate__job_items__job_id", "candidate_id")
    for job_id, candidate_id in rows:
        verified[job_id].append(candidate_id)
    return {pk: np.isin(snap.candidate_ids, np.array(verified[pk], dtype=np.int64)) for pk, snap in snaps.items()}


def _verified_mask(job: LabelingJob, snap: QueueSnapshot) -> np.ndarray:
    return _verified_masks({job.pk: snap})[job.pk]


@dataclass
class QueueCounts:
    aggregated: int
    verified: int
    remaining: int
    disagreements_remaining: int

    @property
    def percent_done(self) -> int:
        return round(100 * self.verified / self.aggregated) if self.aggregated else 0


def _counts(snap: QueueSnapshot, done: np.ndarray) -> QueueCounts:
    return QueueCounts(
        aggregated=len(done),
        verified=int(done.sum()),
        remaining=int((~done).sum()),
        disagreements_remaining=int((snap.disagreement & ~done).sum()),
    )


def queue_counts(job: LabelingJob) -> QueueCounts:
    snap = snapshot(job)
    return _counts(snap, _verified_mask(job, snap))


def jobs_with_queues() -> list[tuple[LabelingJob, QueueCounts]]:
    """Every job with aggregated labels and its queue counts, in a constant number of queries
    (the jobs, the verified labels, and the aggregated labels of jobs whose snapshot was not
    cached), whatever the number of jobs: the verification index and the landing page."""
    jobs = list(LabelingJob.objects.filter(Exists(AggregatedLabel.objects.filter(item__job=OuterRef("pk")))))  # newest first
    snaps = snapshots(jobs)
    masks = _verified_masks(snaps)
    return [(job, _counts(snaps[job.pk], masks[job.pk])) for job in jobs]


def queue_item_ids(job: LabelingJob) -> list[int]:
    """Item ids of the whole queue (unverified items), in queue order; from the cached snapshot."""
    snap = snapshot(job)
    return snap.item_ids[~_verified_mask(job, snap)].tolist()


def recently_verified(job: LabelingJob, limit: int = 8) -> list[VerifiedLabel]:
    """Most recent first."""
    return list(
        VerifiedLabel.objects.filter(job=job).select_related("candidate__simple", "verifier").order_by("-verified_at", "-id")[:limit]
    )


@dataclass
class Navigation:
    """Where j/k lead from the item on screen: recently verified pairs (oldest first), then the queue."""

    current: int | None  # item on screen (the queue head when none was asked for)
    prev: int | None
    next: int | None
    upcoming: list[int]  # queue items after the current one (at most ``limit``)
    recent_items: dict[int, int]  # candidate id -> item id of recently verified pairs


def navigation(job: LabelingJob, item: JobItem | None, limit: int = 12, recent: int = 8) -> Navigation:
    queue_ids = queue_item_ids(job)
    recent_rows = recently_verified(job, recent)
    recent_items = dict(
        JobItem.objects.filter(job=job, candidate_id__in=[v.candidate_id for v in recent_rows]).values_list("candidate_id", "pk")
    )
    trail = [recent_items[v.candidate_id] for v in reversed(recent_rows) if v.candidate_id in recent_items]
    current = item.pk if item is not None else (queue_ids[0] if queue_ids else None)
    order = trail + queue_ids  # disjoint: trail items are verified, queue items are not
    if current is not None and current in order:
        index = order.index(current)
        prev = order[index - 1] if index > 0 else None
        nxt = order[index + 1] if index + 1 < len(order) else None
        after = queue_ids[queue_ids.index(current) + 1 :] if current in queue_ids else queue_ids
    else:  # verified a while ago: back to the trail, forward to the queue
        prev, nxt, after = (trail[-1] if trail else None), (queue_ids[0] if queue_ids else None), queue_ids
    return Navigation(current=current, prev=prev, next=nxt, upcoming=after[:limit], recent_items=recent_items)


@dataclass
class ItemView:
    item: JobItem
    complex_text: str
    simple_text: str
    aggregated: AggregatedLabel | None
    verified: VerifiedLabel | None
    votes: list[tuple[str, int, float]]  # (label, count, share) in LABELS order
    judgments: list[tuple[str, str, float, bool]]  # (annotator, label, seconds, counts)

    @property
    def disagreement(self) -> bool:
        return sum(1 for _, n, _ in self.votes if n) > 1

    @property
    def preselected(self) -> str:
        if self.verified is not None:
            return self.verified.label
        return self.aggregated.label if self.aggregated is not None else ""


def item_view(item: JobItem) -> ItemView:
    candidate = item.candidate
    aggregated = AggregatedLabel.objects.filter(item=item).first()
    verified = VerifiedLabel.objects.filter(candidate=candidate).select_related("verifier").first()
    removed = set(Membership.objects.filter(job_id=item.job_id, removed=True).values_list("annotator_id", flat=True))
    judgments = [
        (username, label, seconds, is_valid and annotator_id not in removed)
        for annotator_id, username, label, seconds, is_valid in Judgment.objects.filter(item=item)
        .order_by("created_at", "id")
        .values_list("annotator_id", "annotator__username", "label", "seconds", "is_valid")
    ]
    counted = [label for _, label, _, ok in judgments if ok]
    total = len(counted) or 1
    votes = [(label, counted.count(label), counted.count(label) / total) for label in LABELS]
    return ItemView(
        item=item,
        complex_text=candidate.complex.text,
        simple_text=candidate.simple.text,
        aggregated=aggregated,
        verified=verified,
        votes=votes,
        judgments=judgments,
    )


@transaction.atomic
def verify(item: JobItem, label: str, verifier: User) -> VerifiedLabel:
    """Confirm or change the label of ``item``: creates or updates its candidate's VerifiedLabel.

    Raises ValueError for a label outside ``AlignmentLabel``. The aggregated label at the time
    of verification is recorded, so a change stays visible after re-aggregation.
    """
    if label not in AlignmentLabel.values:
        raise ValueError(f"unknown label {label!r}; expected one of {AlignmentLabel.values}")
    aggregated = AggregatedLabel.objects.filter(item=item).values_list("label", flat=True).first() or ""
    verified, _ = VerifiedLabel.objects.update_or_create(
        candidate_id=item.candidate_id,
        defaults={"label": label, "aggregated_label": aggregated, "verifier": verifier, "job_id": item.job_id},
    )
    return verified
