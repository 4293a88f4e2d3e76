"""Annotation: paragraph-alignment correction, candidate pairs, crowd labeling jobs with
test questions and quality control, aggregation, and in-house verification.

Raw judgments (Judgment), the aggregated label (AggregatedLabel) and the verified label
(VerifiedLabel) are stored separately; training and export use verified labels.
"""

from __future__ import annotations

import random
import secrets

from django.conf import settings
from django.db import models

from annotation.models.pay import PaySettings
from curation.models import AlignmentLabel, Corpus, DocumentPair, Paragraph, Sentence


class ParagraphLink(models.Model):
    """The current paragraph alignment of a document pair (automatic, then corrected)."""

    class Origin(models.TextChoices):
        AUTO = "auto", "automatic"
        MANUAL = "manual", "corrected by hand"

    pair = models.ForeignKey(DocumentPair, on_delete=models.CASCADE, related_name="paragraph_links")
    complex_paragraph = models.ForeignKey(Paragraph, on_delete=models.CASCADE, related_name="+")
    simple_paragraph = models.ForeignKey(Paragraph, on_delete=models.CASCADE, related_name="+")
    score = models.FloatField(null=True, blank=True)
    origin = models.CharField(max_length=8, choices=Origin.choices, default=Origin.AUTO)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pair", "complex_paragraph", "simple_paragraph"], name="paragraph_link_unique")
        ]

    def __str__(self) -> str:
        return f"{self.pair_id}: ¶{self.complex_paragraph_id} -> ¶{self.simple_paragraph_id}"


class ParagraphAlignmentRevision(models.Model):
    """History of a pair's paragraph alignment: who saved which links when."""

    pair = models.ForeignKey(DocumentPair, on_delete=models.CASCADE, related_name="paragraph_revisions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    links = models.JSONField(help_text="[[complex_paragraph_position, simple_paragraph_position], ...]")
    added = models.JSONField(default=list)
    removed = models.JSONField(default=list)
    source = models.CharField(max_length=32, default="manual", help_text="manual | auto | model name")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"revision of pair {self.pair_id} by {self.user_id or self.source}"


class PairLock(models.Model):
    """A document pair being corrected is locked to one annotator until it expires."""

    pair = models.OneToOneField(DocumentPair, on_delete=models.CASCADE, related_name="lock")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"pair {self.pair_id} locked by {self.user_id} until {self.expires_at:%H:%M}"


class CandidatePair(models.Model):
    """A sentence pair proposed for labeling (inside aligned paragraphs, or a top-k match)."""

    class Source(models.TextChoices):
        PARAGRAPH = "paragraph", "inside aligned paragraphs"
        TOPK = "topk", "top-k similarity"
        MANUAL = "manual", "added by hand"

    pair = models.ForeignKey(DocumentPair, on_delete=models.CASCADE, related_name="candidates")
    simple = models.ForeignKey(Sentence, on_delete=models.CASCADE, related_name="+")
    complex = models.ForeignKey(Sentence, on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.PARAGRAPH)
    score = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["simple", "complex"], name="candidate_unique_sentence_pair")]
        indexes = [models.Index(fields=["pair"])]

    def __str__(self) -> str:
        return f"candidate {self.simple_id}/{self.complex_id}"


def random_rank() -> float:
    """A job item's random serving position in [0, 1)."""
    return random.random()


def new_seed() -> int:
    """A job's own sampling seed (test questions, item order): never shared between jobs."""
    return secrets.randbelow(2**31 - 1) + 1


class LabelingJob(PaySettings):
    """A crowd labeling job; its pay settings (``PaySettings``) price the cost ledger."""

    class Status(models.TextChoices):
        OPEN = "open", "open"
        PAUSED = "paused", "paused"
        CLOSED = "closed", "closed"

    class Strategy(models.TextChoices):
        PARAGRAPH = "paragraph", "every pair inside aligned paragraphs (Newsela)"
        TOPK = "topk", "top complex sentences per simple sentence (Wikipedia)"

    name = models.CharField(max_length=200)
    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="labeling_jobs")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    strategy = models.CharField(max_length=10, choices=Strategy.choices, default=Strategy.PARAGRAPH)
    judgments_per_pair = models.PositiveSmallIntegerField(default=5)
    test_question_every = models.PositiveSmallIntegerField(
        default=5, help_text="test-question rate 1/N: each question served is a test with probability 1/N (0: none); N is also the page size"
    )
    min_seconds = models.PositiveSmallIntegerField(default=10)
    accuracy_threshold = models.FloatField(default=0.85)
    min_test_questions = models.PositiveSmallIntegerField(default=4, help_text="test answers before the threshold applies")
    reservation_minutes = models.PositiveSmallIntegerField(default=15)
    top_k = models.PositiveSmallIntegerField(default=3, help_text="Wikipedia strategy: complex sentences per simple sentence and measure")
    instructions = models.TextField(blank=True)
    seed = models.PositiveIntegerField(default=new_seed, help_text="this job's own seed: test-question sample, serving order")
    selection = models.JSONField(default=dict, blank=True,
                                 help_text="how items were chosen: strategy, budget, cap per pair, model (services/selection.py)")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @property
    def page_size(self) -> int:
        """Questions per page: accuracy, feedback and removal are settled at page ends."""
        return self.test_question_every if self.test_question_every > 0 else 5

    @property
    def accepts_answers(self) -> bool:
        return self.status == self.Status.OPEN


class JobItem(models.Model):
    """A candidate pair in a job; ``judgments_count`` counts valid judgments (capacity control)."""

    job = models.ForeignKey(LabelingJob, on_delete=models.CASCADE, related_name="items")
    # RESTRICT: regenerating machine output never deletes a candidate that human work refers to
    # (deleting the whole corpus or job still cascades through both)
    candidate = models.ForeignKey(CandidatePair, on_delete=models.RESTRICT, related_name="job_items")
    judgments_count = models.PositiveSmallIntegerField(default=0)
    reserved_count = models.PositiveSmallIntegerField(default=0)
    rank = models.FloatField(default=random_rank, help_text="random position in [0, 1): serving starts at a fresh random rank each time")
    selection_score = models.FloatField(null=True, blank=True, help_text="the selection strategy's score (higher first)")
    selection_reason = models.CharField(max_length=300, blank=True, help_text="why the pair was chosen")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "candidate"], name="job_item_unique")]
        indexes = [
            models.Index(fields=["job", "judgments_count"]),
            # serving's exact order (rank, then pk): the first free row is read straight off the
            # index and the scan stops there; with (job, rank) alone PostgreSQL sorted every item
            # past the start rank, sentences joined, on each serve (11-77 ms per serve without statistics)
            models.Index(fields=["job", "rank", "id"], name="job_item_serving_order"),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} item {self.pk}"


class TestQuestion(models.Model):
    """A gold pair with a short explanation; served exactly like an ordinary question."""

    job = models.ForeignKey(LabelingJob, on_delete=models.CASCADE, related_name="test_questions")
    candidate = models.ForeignKey(CandidatePair, on_delete=models.RESTRICT, related_name="+")
    gold_label = models.CharField(max_length=16, choices=AlignmentLabel.choices)
    explanation = models.TextField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "candidate"], name="test_question_unique")]

    def __str__(self) -> str:
        return f"test question {self.pk} of job {self.job_id}"


class Membership(models.Model):
    """An annotator in a job: test-question accuracy and removal."""

    job = models.ForeignKey(LabelingJob, on_delete=models.CASCADE, related_name="memberships")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="job_memberships")
    tests_answered = models.PositiveIntegerField(default=0)
    tests_correct = models.PositiveIntegerField(default=0)
    questions_served = models.PositiveIntegerField(default=0)
    questions_answered = models.PositiveIntegerField(default=0)
    shown_tests_answered = models.PositiveIntegerField(default=0, help_text="tests_answered as of the last page end (what the annotator sees)")
    shown_tests_correct = models.PositiveIntegerField(default=0)
    last_answer_at = models.DateTimeField(null=True, blank=True, help_text="the minimum time runs from here or the serve time")
    removed = models.BooleanField(default=False)
    removed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "annotator"], name="membership_unique")]

    def __str__(self) -> str:
        return f"annotator {self.annotator_id} in job {self.job_id}"

    @property
    def accuracy(self) -> float | None:
        """True test-question accuracy (researchers' pages); annotators see ``shown_accuracy``."""
        return self.tests_correct / self.tests_answered if self.tests_answered else None

    @property
    def shown_accuracy(self) -> float | None:
        """Accuracy as of the last page end: it cannot tell which answer of a page was a test."""
        return self.shown_tests_correct / self.shown_tests_answered if self.shown_tests_answered else None


class Assignment(models.Model):
    """A question served to an annotator: an item or a test question, with serve time and expiry."""

    job = models.ForeignKey(LabelingJob, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(JobItem, on_delete=models.CASCADE, null=True, blank=True, related_name="assignments")
    test_question = models.ForeignKey(TestQuestion, on_delete=models.CASCADE, null=True, blank=True, related_name="assignments")
    token = models.CharField(max_length=32, unique=True, help_text="opaque id shown to the annotator")
    served_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)
    answer = models.CharField(max_length=16, choices=AlignmentLabel.choices, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotator", "item"], name="assignment_unique_item"),
            models.UniqueConstraint(fields=["annotator", "test_question"], name="assignment_unique_test"),
        ]
        indexes = [
            models.Index(fields=["job", "annotator", "answered_at"]),
            models.Index(fields=["job", "expires_at"], condition=models.Q(answered_at__isnull=True), name="assignment_pending"),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} of job {self.job_id}"

    @property
    def is_test(self) -> bool:
        return self.test_question_id is not None


class Judgment(models.Model):
    """A raw crowd label. ``is_valid`` turns false when its annotator is removed."""

    job = models.ForeignKey(LabelingJob, on_delete=models.CASCADE, related_name="judgments")
    item = models.ForeignKey(JobItem, on_delete=models.CASCADE, related_name="judgments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="judgments")
    label = models.CharField(max_length=16, choices=AlignmentLabel.choices)
    seconds = models.FloatField()
    is_valid = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "annotator"], name="judgment_unique")]
        indexes = [models.Index(fields=["job", "is_valid"])]

    def __str__(self) -> str:
        return f"judgment {self.pk}: {self.label}"


class TestAnswer(models.Model):
    job = models.ForeignKey(LabelingJob, on_delete=models.CASCADE, related_name="test_answers")
    test_question = models.ForeignKey(TestQuestion, on_delete=models.CASCADE, related_name="answers")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="test_answers")
    label = models.CharField(max_length=16, choices=AlignmentLabel.choices)
    correct = models.BooleanField()
    seconds = models.FloatField(default=0, help_text="time on task measured by the server, as Judgment.seconds")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["test_question", "annotator"], name="test_answer_unique")]

    def __str__(self) -> str:
        return f"test answer {self.pk}: {self.label}"


class AggregatedLabel(models.Model):
    class Method(models.TextChoices):
        """The methods of annotation.aggregation.METHODS (a test keeps the two in step)."""

        MAJORITY = "majority", "majority vote"
        DAWID_SKENE = "dawid_skene", "Dawid-Skene"
        MACE = "mace", "MACE"
        GLAD = "glad", "GLAD"

    item = models.OneToOneField(JobItem, on_delete=models.CASCADE, related_name="aggregated")
    label = models.CharField(max_length=16, choices=AlignmentLabel.choices)
    confidence = models.FloatField()
    method = models.CharField(max_length=12, choices=Method.choices, default=Method.MAJORITY)
    votes = models.JSONField(default=dict, help_text="{label: count}")
    computed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.item_id}: {self.label} ({self.method})"


class VerifiedLabel(models.Model):
    """The in-house verifier's label for a candidate pair: what training and export use."""

    candidate = models.OneToOneField(CandidatePair, on_delete=models.RESTRICT, related_name="verified")
    label = models.CharField(max_length=16, choices=AlignmentLabel.choices)
    aggregated_label = models.CharField(max_length=16, choices=AlignmentLabel.choices, blank=True)
    verifier = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True)
    job = models.ForeignKey(LabelingJob, on_delete=models.SET_NULL, null=True, blank=True)
    verified_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.candidate_id}: {self.label}"

    @property
    def changed(self) -> bool:
        return bool(self.aggregated_label) and self.aggregated_label != self.label
