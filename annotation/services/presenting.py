"""What an annotator sees: a question (identical for items and test questions: no gold, no kind),
its paragraph context, and their own statistics. Nothing here may reveal a gold label."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet, Sum

from accounts.roles import Role, has_role
from annotation.models import Assignment, JobItem, LabelingJob, Membership
from annotation.services.assignment import candidate_of, with_sentences
from curation.models import Sentence


@dataclass(frozen=True)
class QuestionView:
    token: str
    complex_text: str
    simple_text: str

    def as_dict(self) -> dict[str, str]:
        return {"token": self.token, "complex": self.complex_text, "simple": self.simple_text}


def question_by_token(user: User, token: str) -> Assignment | None:
    return with_sentences(Assignment.objects.filter(token=token, annotator=user)).first()


@dataclass(frozen=True)
class ContextView:
    complex_before: list[str]
    complex_sentence: str
    complex_after: list[str]
    simple_before: list[str]
    simple_sentence: str
    simple_after: list[str]


def _around(sentence: Sentence) -> tuple[list[str], list[str]]:
    rows = list(Sentence.objects.filter(paragraph_id=sentence.paragraph_id).order_by("position").values_list("position", "text"))
    return [t for p, t in rows if p < sentence.position], [t for p, t in rows if p > sentence.position]


def context_view(assignment: Assignment) -> ContextView:
    cand = candidate_of(assignment)
    cb, ca = _around(cand.complex)
    sb, sa = _around(cand.simple)
    return ContextView(cb, cand.complex.text, ca, sb, cand.simple.text, sa)


@dataclass(frozen=True)
class MyStats:
    answered: int
    tests_answered: int
    accuracy: float | None
    removed: bool
    page_position: int
    page_size: int


def my_stats(job: LabelingJob, membership: Membership | None) -> MyStats:
    """What the annotator sees: test counts and accuracy as of the last page end (never per answer)."""
    size = job.page_size
    if membership is None:
        return MyStats(0, 0, None, False, 0, size)
    return MyStats(
        membership.questions_answered,
        membership.shown_tests_answered,
        membership.shown_accuracy,
        membership.removed,
        membership.questions_answered % size,
        size,
    )


def visible_jobs(user: User) -> QuerySet[LabelingJob]:
    """Jobs open to a labeler, newest first; researchers (and admins) see every job."""
    qs = LabelingJob.objects.select_related("corpus").order_by("-created_at")
    if has_role(user, Role.RESEARCHER):
        return qs
    return qs.filter(status=LabelingJob.Status.OPEN)


def job_progress(job: LabelingJob) -> dict[str, int]:
    agg = JobItem.objects.filter(job=job).aggregate(
        items=Count("pk"), judgments=Sum("judgments_count"), complete=Count("pk", filter=Q(judgments_count__gte=job.judgments_per_pair))
    )
    members = job.memberships.aggregate(annotators=Count("pk"), removed=Count("pk", filter=Q(removed=True)))
    items = agg["items"] or 0
    return {
        "items": items,
        "judgments": agg["judgments"] or 0,
        "wanted": items * job.judgments_per_pair,
        "complete": agg["complete"] or 0,
        "tests": job.test_questions.count(),
        "annotators": members["annotators"],
        "removed": members["removed"],
    }
