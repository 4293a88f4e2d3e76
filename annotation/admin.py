"""Admin for annotation data: jobs with their settings, memberships, raw judgments (read-mostly)."""

from __future__ import annotations

from django.contrib import admin

from annotation.models import (
    AggregatedLabel,
    Assignment,
    CandidatePair,
    JobItem,
    Judgment,
    LabelingJob,
    Membership,
    PairLock,
    ParagraphAlignmentRevision,
    ParagraphLink,
    TestAnswer,
    TestQuestion,
    VerifiedLabel,
)


@admin.register(LabelingJob)
class LabelingJobAdmin(admin.ModelAdmin[LabelingJob]):
    list_display = ["name", "corpus", "status", "strategy", "judgments_per_pair", "min_seconds", "accuracy_threshold", "created_at"]
    list_filter = ["status", "strategy", "corpus"]
    search_fields = ["name"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin[Membership]):
    list_display = ["job", "annotator", "questions_answered", "tests_answered", "tests_correct", "removed", "removed_at"]
    list_filter = ["removed", "job"]
    raw_id_fields = ["annotator"]


@admin.register(TestQuestion)
class TestQuestionAdmin(admin.ModelAdmin[TestQuestion]):
    list_display = ["job", "candidate", "gold_label", "explanation"]
    list_filter = ["job", "gold_label"]
    raw_id_fields = ["candidate"]


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin[Judgment]):
    list_display = ["job", "item", "annotator", "label", "seconds", "is_valid", "created_at"]
    list_filter = ["job", "is_valid", "label"]
    raw_id_fields = ["item", "annotator"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin[Assignment]):
    list_display = ["job", "annotator", "item", "test_question", "served_at", "expires_at", "answered_at", "answer"]
    list_filter = ["job"]
    raw_id_fields = ["item", "test_question", "annotator"]


@admin.register(ParagraphAlignmentRevision)
class RevisionAdmin(admin.ModelAdmin[ParagraphAlignmentRevision]):
    list_display = ["pair", "user", "source", "created_at"]
    raw_id_fields = ["pair"]


@admin.register(PairLock)
class PairLockAdmin(admin.ModelAdmin[PairLock]):
    list_display = ["pair", "user", "expires_at"]
    raw_id_fields = ["pair"]


for model in (ParagraphLink, CandidatePair, JobItem, AggregatedLabel, VerifiedLabel):
    admin.site.register(model, raw_id_fields=[f.name for f in model._meta.fields if f.is_relation])


@admin.register(TestAnswer)
class TestAnswerAdmin(admin.ModelAdmin[TestAnswer]):
    list_display = ["job", "annotator", "test_question", "label", "correct", "created_at"]
    list_filter = ["correct", "job"]
    raw_id_fields = ["test_question"]


# Human-evaluation studies register their own admin classes.
from annotation.evaluation import admin as evaluation_admin  # noqa: E402, F401
