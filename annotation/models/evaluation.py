"""Human-evaluation studies: items (a source with references), system outputs (and controls),
raters' memberships, pages (one item served to one rater, in a recorded balanced order) and
ratings. The code that uses them is ``annotation/evaluation/``; the designs' scales are in
``annotation.evaluation.designs`` (the choice labels below are the same, tested).

Capacity per item, as for labeling job items: ``ratings_count + reserved_count <=
raters_per_item``; ``ratings_count`` counts pages answered by raters who are not excluded.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models.pay import PaySettings


class Study(PaySettings):
    """A study; its pay settings (``PaySettings``: per rating, per hour) price its cost ledger."""

    class Design(models.TextChoices):
        LIKERT = "likert", "Likert fluency / adequacy / simplicity"
        SLIDER = "slider", "0-100 slider with control items"
        COMPARATIVE = "comparative", "Comparative simplicity against the reference"

    class Status(models.TextChoices):
        OPEN = "open", "open"
        PAUSED = "paused", "paused"
        CLOSED = "closed", "closed"

    name = models.CharField(max_length=200)
    design = models.CharField(max_length=12, choices=Design.choices)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    raters_per_item = models.PositiveSmallIntegerField(default=5)
    sample_size = models.PositiveIntegerField(default=100, help_text="items drawn at random from the input")
    seed = models.PositiveIntegerField(default=0, help_text="sampling, presentation order and controls")
    min_seconds = models.PositiveSmallIntegerField(default=20, help_text="minimum seconds per page")
    reservation_minutes = models.PositiveSmallIntegerField(default=30)
    show_reference = models.BooleanField(default=False)
    instructions = models.TextField(blank=True)
    control_threshold = models.FloatField(default=20.0, help_text="slider: a control scored above this fails")
    flag_share = models.FloatField(default=0.2, help_text="flag raters failing more than this share of control pages")
    min_control_pages = models.PositiveSmallIntegerField(default=3, help_text="control pages before a rater can be flagged")
    systems = models.JSONField(default=list, help_text="system names, sorted (never shown to raters)")
    source_info = models.JSONField(default=dict, blank=True, help_text="input file, sha256, export, sampling")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return self.name


class EvalItem(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=200, help_text="the input's item id")
    position = models.PositiveIntegerField(help_text="0.. in the study (balances presentation orders)")
    source = models.TextField()
    references = models.JSONField(default=list)
    ratings_count = models.PositiveSmallIntegerField(default=0)
    reserved_count = models.PositiveSmallIntegerField(default=0)
    served_count = models.PositiveIntegerField(default=0, help_text="pages ever served (the order slot)")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "key"], name="eval_item_unique_key"),
            models.UniqueConstraint(fields=["study", "position"], name="eval_item_unique_position"),
        ]
        indexes = [models.Index(fields=["study", "ratings_count"])]

    def __str__(self) -> str:
        return f"study {self.study_id} item {self.key}"


class EvalOutput(models.Model):
    """A system's output for an item, or the item's control (``is_control``, no system)."""

    item = models.ForeignKey(EvalItem, on_delete=models.CASCADE, related_name="outputs")
    system = models.CharField(max_length=200, blank=True)
    text = models.TextField()
    is_control = models.BooleanField(default=False)
    control = models.JSONField(default=dict, blank=True, help_text="controls: base system and replaced words")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "system", "is_control"], name="eval_output_unique")]

    def __str__(self) -> str:
        return f"{'control' if self.is_control else self.system} for {self.item_id}"


class StudyRater(models.Model):
    """A rater in a study: progress, control results, flag and exclusion."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="raters")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="study_memberships")
    pages_served = models.PositiveIntegerField(default=0)
    pages_answered = models.PositiveIntegerField(default=0)
    control_pages = models.PositiveIntegerField(default=0)
    control_failed = models.PositiveIntegerField(default=0)
    last_answer_at = models.DateTimeField(null=True, blank=True)
    flagged = models.BooleanField(default=False)
    excluded = models.BooleanField(default=False)
    excluded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "rater"], name="study_rater_unique")]

    def __str__(self) -> str:
        return f"rater {self.rater_id} in study {self.study_id}"

    @property
    def control_fail_share(self) -> float | None:
        return self.control_failed / self.control_pages if self.control_pages else None


class EvalPage(models.Model):
    """One item served to one rater; ``order`` lists the output pks in display order."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="pages")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="eval_pages")
    item = models.ForeignKey(EvalItem, on_delete=models.CASCADE, related_name="pages")
    token = models.CharField(max_length=32, unique=True, help_text="opaque id shown to the rater")
    slot = models.PositiveIntegerField(help_text="balanced-design slot of this page")
    seed = models.BigIntegerField(help_text="seed of the order of this page's block")
    order = models.JSONField(help_text="output pks in display order")
    served_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True)
    control_failed = models.BooleanField(null=True, blank=True, help_text="slider pages: the control scored above the threshold")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rater", "item"], name="eval_page_unique_item")]
        indexes = [
            models.Index(fields=["study", "rater", "answered_at"]),
            models.Index(fields=["study", "expires_at"], condition=models.Q(answered_at__isnull=True), name="eval_page_pending"),
        ]

    def __str__(self) -> str:
        return f"page {self.pk} of study {self.study_id}"


class Rating(models.Model):
    """One value on one dimension for one output on one page. ``is_valid`` turns false when the
    rater is excluded: the rating is kept, apart from the results."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="ratings")
    page = models.ForeignKey(EvalPage, on_delete=models.CASCADE, related_name="ratings")
    item = models.ForeignKey(EvalItem, on_delete=models.CASCADE, related_name="ratings")
    output = models.ForeignKey(EvalOutput, on_delete=models.CASCADE, related_name="ratings")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="eval_ratings")
    dimension = models.CharField(max_length=16)
    value = models.FloatField()
    position = models.PositiveSmallIntegerField(help_text="0-based place on the page")
    is_valid = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["page", "output", "dimension"], name="rating_unique")]
        indexes = [models.Index(fields=["study", "is_valid"])]

    def __str__(self) -> str:
        return f"rating {self.pk}: {self.dimension}={self.value}"
