"""The pipeline's records: long-running jobs (Celery), registered model versions, corpus
alignment runs with their chunks and predictions, and exported datasets.

These models moved here from ``curation`` (migration ``pipeline.0001`` adopts their tables as
they are, ``curation.0004`` drops them from curation's state; no table was renamed), so each
keeps ``db_table = "curation_<model>"``. Nothing in ``curation`` or ``annotation`` refers to them.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from curation.models import AlignmentLabel, Corpus, DocumentPair, Sentence


class Job(models.Model):
    """One long job with its status, progress, timings, parameters and error."""

    class Kind(models.TextChoices):
        PREPOPULATE = "prepopulate", "pre-populate candidates"
        ALIGN_CORPUS = "align_corpus", "align a corpus"
        RETRAIN = "retrain", "retrain the aligner"
        EXPORT = "export", "export a dataset"
        IMPORT = "import", "import a corpus"

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"
        CANCELLED = "cancelled", "cancelled"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, null=True, blank=True, related_name="jobs")
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    message = models.CharField(max_length=500, blank=True)
    error = models.TextField(blank=True)
    cancel_requested = models.BooleanField(default=False)
    celery_task_id = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="last sign of life from the process running it (pipeline.jobs.heartbeat)"
    )

    class Meta:
        db_table = "curation_job"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "kind"])]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.status})"

    @property
    def percent(self) -> int:
        return int(100 * self.progress_done / self.progress_total) if self.progress_total else 0

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    @property
    def last_sign_of_life(self) -> Any:
        return self.heartbeat_at or self.started_at

    @property
    def is_stale(self) -> bool:
        """Running, but its worker has not reported for ``JOB_STALE_MINUTES`` (it probably stopped)."""
        last = self.last_sign_of_life
        minutes = getattr(settings, "JOB_STALE_MINUTES", 10)
        return self.status == self.Status.RUNNING and last is not None and timezone.now() - last > timedelta(minutes=minutes)

    @property
    def resume_command(self) -> str:
        return f"python manage.py resume_job {self.pk}"

    #: What progress_done counts, per kind (a retraining counts percent of its stages).
    UNITS = {"prepopulate": "document pairs", "align_corpus": "chunks", "retrain": "%", "export": "rows", "import": "articles"}

    @property
    def progress_unit(self) -> str:
        return self.UNITS.get(self.kind, "steps")

    @property
    def progress_known(self) -> bool:
        """Whether the total is known (a Manual export counts its rows as it writes them)."""
        return self.progress_total > 0

    @property
    def progress_text(self) -> str:
        """Progress in the job's own unit: "7/10 chunks (70%)", "62%", "11 rows" (total unknown)."""
        unit = self.progress_unit
        if unit == "%":
            return f"{self.percent}%"
        if not self.progress_known:
            return f"{self.progress_done:,} {unit}" if self.progress_done or not self.is_active else "starting"
        return f"{self.progress_done:,}/{self.progress_total:,} {unit} ({self.percent}%)"


class ModelVersion(models.Model):
    """A trained aligner (or a registered baseline) with its metrics and the data it saw."""

    name = models.CharField(max_length=200)
    method = models.CharField(max_length=32, default="crf")
    language = models.CharField(max_length=8, default="en")
    path = models.CharField(max_length=500, blank=True, help_text="model directory (empty for baselines)")
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="model_versions")
    config = models.JSONField(default=dict, blank=True)
    metrics = models.JSONField(default=dict, blank=True, help_text="{split: {task1: {p, r, f1}, task2: {...}}}")
    data_counts = models.JSONField(default=dict, blank=True)
    seed = models.IntegerField(default=0)
    is_promoted = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "curation_modelversion"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["language"], condition=models.Q(is_promoted=True), name="one_promoted_model_per_language"
            )
        ]

    def __str__(self) -> str:
        return self.name


class AlignmentRun(models.Model):
    """A corpus aligned by one model or baseline; its predictions are kept per run."""

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="alignment_runs")
    model_version = models.ForeignKey(ModelVersion, on_delete=models.SET_NULL, null=True, blank=True)
    method = models.CharField(max_length=32)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="alignment_runs")
    params = models.JSONField(default=dict, blank=True)
    prediction_count = models.PositiveIntegerField(
        default=0, help_text="stored predictions, maintained by each chunk's write (pages read it instead of counting)")
    stats = models.JSONField(
        default=dict, blank=True,
        help_text="the run's label statistics (pipeline.services.corpus_stats), stored when the run ends")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "curation_alignmentrun"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run #{self.pk} {self.method} on {self.corpus}"


class RunChunk(models.Model):
    """A slice of an alignment run's document pairs, processed by one Celery task."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    run = models.ForeignKey(AlignmentRun, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    pair_ids = models.JSONField(help_text="DocumentPair primary keys")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True, help_text="hostname:pid of the last process that took it")
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "curation_runchunk"
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="chunk_unique_index")]

    def __str__(self) -> str:
        return f"chunk {self.index} of run #{self.run_id} ({self.status})"


class PredictedAlignment(models.Model):
    run = models.ForeignKey(AlignmentRun, on_delete=models.CASCADE, related_name="predictions")
    pair = models.ForeignKey(DocumentPair, on_delete=models.CASCADE, related_name="+")
    simple = models.ForeignKey(Sentence, on_delete=models.CASCADE, related_name="+")
    complex = models.ForeignKey(Sentence, on_delete=models.CASCADE, related_name="+")
    label = models.CharField(max_length=16, choices=AlignmentLabel.choices)
    score = models.FloatField(null=True, blank=True)

    class Meta:
        db_table = "curation_predictedalignment"
        constraints = [
            models.UniqueConstraint(fields=["run", "simple", "complex"], name="prediction_unique_sentence_pair")
        ]
        indexes = [models.Index(fields=["run", "pair"])]

    def __str__(self) -> str:
        return f"{self.label} {self.simple_id}<-{self.complex_id} (run #{self.run_id})"


class ExportedDataset(models.Model):
    class Kind(models.TextChoices):
        MANUAL = "manual", "Manual (human labels)"
        AUTO = "auto", "Auto (predicted by a corpus run)"
        POOL = "pool", "Simple-sentence pool (back-translation)"

    class Format(models.TextChoices):
        TSV = "tsv", "alignment TSV"
        JSONL = "jsonl", "JSONL"
        PARQUET = "parquet", "Parquet"

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="exports")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    format = models.CharField(max_length=8, choices=Format.choices, default=Format.TSV)
    run = models.ForeignKey(AlignmentRun, on_delete=models.SET_NULL, null=True, blank=True)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="exports")
    params = models.JSONField(default=dict, blank=True, help_text="filters, splits, seed")
    path = models.CharField(max_length=500, blank=True, help_text="folder under EXPORTS_DIR")
    files = models.JSONField(default=list, blank=True, help_text="[{name, bytes, sha256, rows}]")
    card = models.JSONField(default=dict, blank=True, help_text="dataset card: counts, splits, filters, phenomena")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "curation_exporteddataset"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} export #{self.pk} of {self.corpus}"
