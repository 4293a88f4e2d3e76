"""API shapes of the pipeline: jobs (progress, stale flag, resume command), model versions with
their metrics, corpus alignment runs, and exports with download links."""

from __future__ import annotations

from typing import Any, cast

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.params import ApiIdField
from pipeline.models import AlignmentRun, ExportedDataset, Job, ModelVersion, RunChunk


class PipelineJobSerializer(serializers.ModelSerializer[Job]):
    corpus = serializers.IntegerField(source="corpus_id", allow_null=True, read_only=True)
    percent = serializers.IntegerField(read_only=True, help_text="progress_done / progress_total in percent")
    stale = serializers.BooleanField(source="is_stale", read_only=True,
                                     help_text="running, but its worker stopped reporting (see resume_command)")
    resume_command = serializers.SerializerMethodField(help_text="the command that resumes a stale job (null otherwise)")

    class Meta:
        model = Job
        fields = [
            "id", "kind", "status", "corpus", "progress_done", "progress_total", "percent", "message", "error",
            "cancel_requested", "stale", "resume_command", "params", "result", "created_at", "started_at",
            "heartbeat_at", "finished_at",
        ]
        read_only_fields = fields

    def get_resume_command(self, job: Job) -> str | None:
        return job.resume_command if job.is_stale else None


class PipelineJobFilterSerializer(serializers.Serializer):  # type: ignore[type-arg]
    kind = serializers.ChoiceField(choices=Job.Kind.choices, required=False)
    status = serializers.ChoiceField(choices=Job.Status.choices, required=False)
    corpus = ApiIdField(help_text="only this corpus (its id)")


class ModelVersionSerializer(serializers.ModelSerializer[ModelVersion]):
    job = serializers.IntegerField(source="job_id", allow_null=True, read_only=True)
    trained = serializers.SerializerMethodField(help_text="false for a registered baseline (no model directory)")

    class Meta:
        model = ModelVersion
        fields = ["id", "name", "method", "language", "is_promoted", "trained", "metrics", "data_counts", "config",
                  "seed", "job", "created_at"]
        read_only_fields = fields

    def get_trained(self, version: ModelVersion) -> bool:
        return bool(version.path)


class ModelFilterSerializer(serializers.Serializer):  # type: ignore[type-arg]
    language = serializers.CharField(required=False, max_length=8)


class RunSerializer(serializers.ModelSerializer[AlignmentRun]):
    corpus = serializers.IntegerField(source="corpus_id", read_only=True)
    model_version = serializers.IntegerField(source="model_version_id", allow_null=True, read_only=True)
    job = serializers.IntegerField(source="job_id", allow_null=True, read_only=True)
    chunks = serializers.SerializerMethodField(help_text="chunks per status")
    predictions = serializers.SerializerMethodField(help_text="stored predicted alignments")

    class Meta:
        model = AlignmentRun
        fields = ["id", "corpus", "method", "model_version", "job", "params", "chunks", "predictions", "created_at"]
        read_only_fields = fields

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "integer"}})
    def get_chunks(self, run: AlignmentRun) -> dict[str, int]:
        annotated = {status: getattr(run, f"chunks_{status}", None) for status in RunChunk.Status.values}
        if None not in annotated.values():  # counted in the list's query (pipeline.api.with_chunk_counts)
            return cast(dict[str, int], annotated)
        counts = {status: 0 for status in RunChunk.Status.values}
        for status in run.chunks.values_list("status", flat=True):
            counts[status] += 1
        return counts

    def get_predictions(self, run: AlignmentRun) -> int:
        return run.prediction_count  # maintained by each chunk's write, exact when the run ends


class CorpusFilterSerializer(serializers.Serializer):  # type: ignore[type-arg]
    corpus = ApiIdField(help_text="only this corpus (its id)")


class ExportFileSerializer(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField()
    bytes = serializers.IntegerField(required=False)
    sha256 = serializers.CharField(required=False)
    rows = serializers.IntegerField(required=False, allow_null=True)
    download = serializers.URLField(help_text="GET it (same login) to download the file")


class ExportSerializer(serializers.ModelSerializer[ExportedDataset]):
    corpus = serializers.IntegerField(source="corpus_id", read_only=True)
    run = serializers.IntegerField(source="run_id", allow_null=True, read_only=True)
    job = serializers.IntegerField(source="job_id", allow_null=True, read_only=True)
    status = serializers.SerializerMethodField(help_text="its job's status")
    files = serializers.SerializerMethodField()

    class Meta:
        model = ExportedDataset
        fields = ["id", "corpus", "kind", "format", "run", "job", "status", "params", "files", "card", "created_at"]
        read_only_fields = fields

    def get_status(self, dataset: ExportedDataset) -> str | None:
        return dataset.job.status if dataset.job is not None else None

    @extend_schema_field(ExportFileSerializer(many=True))
    def get_files(self, dataset: ExportedDataset) -> list[dict[str, Any]]:
        request = self.context.get("request")
        out = []
        for f in dataset.files:
            url = reverse("pipeline-export-download", kwargs={"pk": dataset.pk, "name": f["name"]})
            out.append({**f, "download": request.build_absolute_uri(url) if request is not None else url})
        return out


