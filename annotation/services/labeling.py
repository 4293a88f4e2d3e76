"""Accepting answers: the minimum time from the serve time, idempotent resubmission, test
answers with explanations after a miss, and automatic removal below the accuracy threshold."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Subquery
from django.utils import timezone

from annotation.models import Assignment, JobItem, Judgment, Membership, TestAnswer
from annotation.services import removal
from curation.models import AlignmentLabel


class AnswerError(Exception):
    """Base class: the answer was not stored."""


class InvalidLabel(AnswerError):
    pass


class QuestionGone(AnswerError):
    """Unknown token, another annotator's token, or a reservation that expired."""


class Removed(AnswerError):
    pass


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
    missed: bool
    expected_label: str
    explanation: str
    removed: bool
    answered: int
    tests_answered: int
    accuracy: float | None

    def as_dict(self) -> dict[str, object]:
        return {
            "token": self.token,
            "label": self.label,
            "duplicate": self.duplicate,
            "missed": self.missed,
            "expected_label": self.expected_label,
            "explanation": self.explanation,
            "removed": self.removed,
            "answered": self.answered,
            "accuracy": self.accuracy,
        }


def _result(assignment: Assignment, membership: Membership, duplicate: bool) -> AnswerResult:
    missed, expected, explanation = False, "", ""
    if assignment.test_question_id is not None:
        tq = assignment.test_question
        if tq is not None and assignment.answer != tq.gold_label:
            missed, expected, explanation = True, tq.gold_label, tq.explanation
    return AnswerResult(
        token=assignment.token,
        label=assignment.answer,
        duplicate=duplicate,
        missed=missed,
        expected_label=expected,
        explanation=explanation,
        removed=membership.removed,
        answered=membership.questions_answered,
        tests_answered=membership.tests_answered,
        accuracy=membership.accuracy,
    )


def submit_answer(user: User, token: str, label: str, now: datetime | None = None) -> AnswerResult:
    """Store the user's answer to the question ``token`` (idempotent per token)."""
    if label not in AlignmentLabel.values:
        raise InvalidLabel(f"label must be one of {', '.join(AlignmentLabel.values)}")
    now = now or timezone.now()
    with transaction.atomic():
        # lock order: membership, assignment, items (as in removal and serving)
        job_of_token = Assignment.objects.filter(token=token, annotator=user).values("job_id")[:1]
        membership = Membership.objects.select_for_update().filter(job_id=Subquery(job_of_token), annotator=user).first()
        if membership is None:
            raise QuestionGone("This question is no longer reserved for you (it expired); here is another one.")
        assignment = (
            Assignment.objects.select_for_update(of=("self",))
            .select_related("job", "test_question")
            .filter(token=token, annotator=user)
            .first()
        )
        if assignment is None:
            raise QuestionGone("This question is no longer reserved for you (it expired); here is another one.")
        if assignment.answered_at is not None:
            return _result(assignment, membership, duplicate=True)
        if membership.removed:
            raise Removed("You were removed from this job.")
        job = assignment.job
        elapsed = check_min_time(assignment.served_at, membership.last_answer_at, job.min_seconds, now)
        if assignment.test_question is not None:
            correct = label == assignment.test_question.gold_label
            TestAnswer.objects.create(
                job=job, test_question=assignment.test_question, annotator=user, label=label, correct=correct
            )
            membership.tests_answered += 1
            membership.tests_correct += int(correct)
        else:
            item_id = int(assignment.item_id or 0)
            moved = JobItem.objects.filter(
                pk=item_id, reserved_count__gt=0, judgments_count__lt=job.judgments_per_pair
            ).update(judgments_count=F("judgments_count") + 1, reserved_count=F("reserved_count") - 1)
            if moved != 1:
                raise OverCapacity(f"item {item_id} has no reserved slot")
            Judgment.objects.create(
                job=job, item_id=item_id, annotator=user, label=label, seconds=round(elapsed, 3)
            )
        assignment.answered_at = now
        assignment.answer = label
        assignment.save(update_fields=["answered_at", "answer"])
        membership.questions_answered += 1
        membership.last_answer_at = now
        membership.save(update_fields=["questions_answered", "last_answer_at", "tests_answered", "tests_correct"])
        if removal.below_threshold(job, membership):
            removal.remove_annotator(job, membership, now)
        return _result(assignment, membership, duplicate=False)
