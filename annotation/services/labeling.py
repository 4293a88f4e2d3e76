"""Accepting answers: open jobs only, the minimum time from the serve time, idempotent
resubmission, and at each page end the settled accuracy, the explanations of the page's missed
test questions and automatic removal below the accuracy threshold (``removal.settle_page``).
Nothing in an answer's result differs between a test question and an ordinary one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Subquery
from django.utils import timezone

from annotation.models import Assignment, JobItem, Judgment, LabelingJob, Membership, TestAnswer, TestQuestion
from annotation.services import assignment as serving
from annotation.services import removal
from annotation.services.presenting import QuestionView
from annotation.services.removal import Feedback
from config.cached_sql import (
    CachedInsert,
    CachedQuery,
    CachedSave,
    CachedUpdate,
    concrete_attnames,
    instance,
    instances,
)
from curation.models import AlignmentLabel


class AnswerError(Exception):
    """Base class: the answer was not stored."""


class InvalidLabel(AnswerError):
    pass


class QuestionGone(AnswerError):
    """Unknown token, another annotator's token, or a reservation that expired."""


class Removed(AnswerError):
    pass


class JobNotOpen(AnswerError):
    """The job was paused or closed after the question was served: the answer is refused."""

    def __init__(self, status: str) -> None:
        self.status = status
        super().__init__(f"This job is {status}: answers are not accepted now; nothing was stored.")


class TooFast(AnswerError):
    def __init__(self, wait_seconds: float, min_seconds: int, unit: str = "question", read: str = "both sentences") -> None:
        self.wait_seconds = max(wait_seconds, 0.1)
        self.min_seconds = min_seconds
        super().__init__(
            f"Please take at least {min_seconds} seconds per {unit}: read {read}, "
            f"then answer again in {self.wait_seconds:.0f} s."
        )


def check_min_time(
    served_at: datetime, last_answer_at: datetime | None, min_seconds: int, now: datetime, **message: str
) -> float:
    """Seconds spent since the later of the serve time and the previous answer; raises TooFast
    when under ``min_seconds`` (``message``: TooFast's ``unit`` and ``read``)."""
    start = max(served_at, last_answer_at or served_at)
    elapsed = (now - start).total_seconds()
    if elapsed < min_seconds:
        raise TooFast(min_seconds - elapsed, min_seconds, **message)
    return elapsed


class OverCapacity(AnswerError):
    """Should never happen: the reservation guarantees a free slot."""


@dataclass(frozen=True)
class AnswerResult:
    token: str
    label: str
    duplicate: bool
    removed: bool
    answered: int
    tests_answered: int  # as shown: settled at page ends
    accuracy: float | None  # as shown: settled at page ends
    page_end: bool = False
    feedback: tuple[Feedback, ...] = ()
    next: QuestionView | None = None  # the following question, when the answer asked to preload one

    @property
    def missed(self) -> bool:
        return bool(self.feedback)

    def as_dict(self) -> dict[str, object]:
        return {
            "token": self.token,
            "label": self.label,
            "duplicate": self.duplicate,
            "page_end": self.page_end,
            "missed": self.missed,
            "feedback": [asdict(f) for f in self.feedback],
            "removed": self.removed,
            "answered": self.answered,
            "accuracy": self.accuracy,
            "next": self.next.as_dict() if self.next is not None else None,
        }


def _result(assignment: Assignment, membership: Membership, duplicate: bool,
            page_end: bool = False, missed: Sequence[Feedback] = (),
            served: tuple[str, str, str] | None = None) -> AnswerResult:
    return AnswerResult(
        token=assignment.token,
        label=assignment.answer,
        duplicate=duplicate,
        removed=membership.removed,
        answered=membership.questions_answered,
        tests_answered=membership.shown_tests_answered,
        accuracy=membership.shown_accuracy,
        page_end=page_end,
        feedback=tuple(missed),
        next=QuestionView(*served) if served is not None and not membership.removed else None,
    )


# the answer's two row locks (membership, then assignment), compiled once (config.cached_sql)
_MEMBERSHIP_OF_TOKEN = CachedQuery(
    lambda token, user: Membership.objects.select_for_update()
    .filter(job_id=Subquery(Assignment.objects.filter(token=token, annotator_id=user).values("job_id")[:1]), annotator_id=user)
    .values_list(*concrete_attnames(Membership))[:1],
    token=str, user=int,
)
_ASSIGNMENT_COLUMNS = (
    concrete_attnames(Assignment), concrete_attnames(LabelingJob, "job__"), concrete_attnames(TestQuestion, "test_question__")
)
_ASSIGNMENT_OF_TOKEN = CachedQuery(  # locks the assignment only (OF self), with its job and test question
    lambda token, user: Assignment.objects.select_for_update(of=("self",))
    .filter(token=token, annotator_id=user)
    .values_list(*(c for cols in _ASSIGNMENT_COLUMNS for c in cols))[:1],
    token=str, user=int,
)


# the answer's writes, compiled once: the item's reserved slot becomes a judgment (only while one is
# reserved and the item is under capacity), the assignment is answered, the membership's counters
_SLOT_TO_JUDGMENT = CachedUpdate(
    lambda item, capacity: (
        JobItem.objects.filter(pk=item, reserved_count__gt=0, judgments_count__lt=capacity),
        {"judgments_count": F("judgments_count") + 1, "reserved_count": F("reserved_count") - 1},
    ),
    item=int, capacity=int,
)
_ANSWERED = CachedSave(Assignment, answered_at=datetime, answer=str)
_NEW_JUDGMENT = CachedInsert(  # is_valid: its default, True
    Judgment, job_id=int, item_id=int, annotator_id=int, label=str, seconds=float, created_at=datetime
)
_COUNTERS: dict[str, type] = dict(
    questions_answered=int, last_answer_at=datetime, tests_answered=int, tests_correct=int, questions_served=int
)
_MEMBERSHIP_COUNTERS = CachedSave(Membership, **_COUNTERS)
_PAGE_END_SAVE = removal.settling_save(**_COUNTERS)  # the counters and the settled ones: one UPDATE


def _assignment_with_job(row: tuple[object, ...]) -> tuple[Assignment, LabelingJob]:
    """The assignment row of ``_ASSIGNMENT_OF_TOKEN`` as instances, its job and test question attached."""
    assignment, job, test = instances(row, Assignment, LabelingJob, TestQuestion)
    assignment.job = job
    assignment.test_question = test if assignment.test_question_id is not None else None
    return assignment, job


def submit_answer(
    user: User, token: str, label: str, now: datetime | None = None, preload: tuple[str, ...] | None = None
) -> AnswerResult:
    """Store the user's answer to the question ``token`` (idempotent per token).

    ``preload``: the tokens still on screen (the question preloaded before); when given, the
    same transaction, under the same membership lock, reserves or resumes the following question
    (as ``assignment.next_question(exclude=preload)`` would) and the result carries it in ``next``,
    so the client needs one request per question. A retried answer resumes the one the first reserved."""
    if label not in AlignmentLabel.values:
        raise InvalidLabel(f"label must be one of {', '.join(AlignmentLabel.values)}")
    now = now or timezone.now()
    with transaction.atomic():
        # lock order: membership, assignment, items (as in removal and serving)
        found = _MEMBERSHIP_OF_TOKEN.rows(token=token, user=user.pk)
        if not found:
            raise QuestionGone("This question is no longer reserved for you (it expired); here is another one.")
        membership = instance(Membership, found[0])
        found = _ASSIGNMENT_OF_TOKEN.rows(token=token, user=user.pk)
        if not found:
            raise QuestionGone("This question is no longer reserved for you (it expired); here is another one.")
        assignment, job = _assignment_with_job(found[0])
        if assignment.answered_at is not None:
            served = None
            if preload is not None and not membership.removed and job.accepts_answers:
                served = serving.serve_saving(job, user, membership, preload, now)
            return _result(assignment, membership, duplicate=True, served=served)
        if membership.removed:
            raise Removed("You were removed from this job.")
        if not job.accepts_answers:
            raise JobNotOpen(job.get_status_display())
        elapsed = check_min_time(assignment.served_at, membership.last_answer_at, job.min_seconds, now)
        if assignment.test_question is not None:
            correct = label == assignment.test_question.gold_label
            TestAnswer.objects.create(
                job=job, test_question=assignment.test_question, annotator=user, label=label, correct=correct,
                seconds=round(elapsed, 3),
            )
            membership.tests_answered += 1
            membership.tests_correct += int(correct)
        else:
            item_id = int(assignment.item_id or 0)
            moved = _SLOT_TO_JUDGMENT.run(item=item_id, capacity=job.judgments_per_pair)
            if moved != 1:
                raise OverCapacity(f"item {item_id} has no reserved slot")
            _NEW_JUDGMENT.insert(
                job_id=job.pk, item_id=item_id, annotator_id=user.pk, label=label, seconds=round(elapsed, 3),
                created_at=now,
            )
        assignment.answered_at = now
        assignment.answer = label
        _ANSWERED.save(assignment)
        # serving the following question now (under the lock held) shares the membership UPDATE;
        # should this answer end a page and remove the annotator, the removal releases it again
        served = serving.serve_locked(job, user, membership, preload, now) if preload is not None else None
        membership.questions_answered += 1
        membership.last_answer_at = now
        page_end = membership.questions_answered % job.page_size == 0
        if page_end:  # settling saves the membership too: one UPDATE for both
            missed = removal.settle_page(job, membership, now, save=_PAGE_END_SAVE)
        else:
            _MEMBERSHIP_COUNTERS.save(membership)
            missed = []
        result = _result(assignment, membership, duplicate=False, page_end=page_end, missed=missed, served=served)
    if preload is not None:
        serving.maybe_release_expired(job, now)  # as "next" does, after this transaction
    return result
