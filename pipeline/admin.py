from django.contrib import admin

from pipeline.models import AlignmentRun, ExportedDataset, Job, ModelVersion, PredictedAlignment, RunChunk


@admin.register(Job)
class JobAdmin(admin.ModelAdmin[Job]):
    list_display = ["id", "kind", "status", "corpus", "progress_done", "progress_total", "created_by", "created_at", "finished_at"]
    list_filter = ["kind", "status"]
    readonly_fields = ["params", "result", "error", "celery_task_id", "started_at", "finished_at"]


@admin.register(ModelVersion)
class ModelVersionAdmin(admin.ModelAdmin[ModelVersion]):
    list_display = ["name", "method", "language", "is_promoted", "seed", "created_at"]
    list_filter = ["method", "language", "is_promoted"]
    readonly_fields = ["metrics", "data_counts", "config"]


@admin.register(AlignmentRun)
class AlignmentRunAdmin(admin.ModelAdmin[AlignmentRun]):
    list_display = ["id", "corpus", "method", "model_version", "created_at"]
    list_filter = ["method", "corpus"]
    raw_id_fields = ["job", "model_version"]


@admin.register(RunChunk)
class RunChunkAdmin(admin.ModelAdmin[RunChunk]):
    list_display = ["run", "index", "status", "attempts", "finished_at"]
    list_filter = ["status"]
    raw_id_fields = ["run"]


@admin.register(PredictedAlignment)
class PredictedAlignmentAdmin(admin.ModelAdmin[PredictedAlignment]):
    list_display = ["run", "pair", "label", "score"]
    list_filter = ["label"]
    raw_id_fields = ["run", "pair", "simple", "complex"]
    show_full_result_count = False


@admin.register(ExportedDataset)
class ExportedDatasetAdmin(admin.ModelAdmin[ExportedDataset]):
    list_display = ["id", "corpus", "kind", "format", "created_by", "created_at"]
    list_filter = ["kind", "format"]
    readonly_fields = ["params", "files", "card"]
    raw_id_fields = ["run", "job"]
