from django.contrib import admin

from curation.models import (
    AlignmentRun,
    Article,
    Corpus,
    Document,
    DocumentPair,
    ExportedDataset,
    ImportRecord,
    Job,
    ModelVersion,
    Paragraph,
    PredictedAlignment,
    ReferenceAlignment,
    RunChunk,
    Sentence,
    SyntheticPair,
)


@admin.register(Corpus)
class CorpusAdmin(admin.ModelAdmin[Corpus]):
    list_display = ["name", "language", "kind", "created_at"]
    search_fields = ["name"]


@admin.register(Article)
class ArticleAdmin(admin.ModelAdmin[Article]):
    list_display = ["slug", "title", "corpus"]
    list_filter = ["corpus"]
    search_fields = ["slug", "title"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin[Document]):
    list_display = ["article", "level", "level_label", "title"]
    list_select_related = ["article"]
    raw_id_fields = ["article"]


@admin.register(Paragraph)
class ParagraphAdmin(admin.ModelAdmin[Paragraph]):
    list_display = ["document", "position"]
    raw_id_fields = ["document"]


@admin.register(Sentence)
class SentenceAdmin(admin.ModelAdmin[Sentence]):
    list_display = ["text", "document", "paragraph_position", "position", "token_count"]
    raw_id_fields = ["document", "paragraph"]
    search_fields = ["text"]
    show_full_result_count = False


@admin.register(DocumentPair)
class DocumentPairAdmin(admin.ModelAdmin[DocumentPair]):
    list_display = ["pair_id", "corpus", "article"]
    list_filter = ["corpus"]
    raw_id_fields = ["article", "complex", "simple"]
    search_fields = ["pair_id"]


@admin.register(ReferenceAlignment)
class ReferenceAlignmentAdmin(admin.ModelAdmin[ReferenceAlignment]):
    list_display = ["pair", "label", "role", "score", "source"]
    list_filter = ["role", "label"]
    raw_id_fields = ["pair", "simple", "complex"]


@admin.register(ImportRecord)
class ImportRecordAdmin(admin.ModelAdmin[ImportRecord]):
    list_display = ["created_at", "corpus", "format", "source", "created_by"]
    readonly_fields = ["summary"]


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


@admin.register(SyntheticPair)
class SyntheticPairAdmin(admin.ModelAdmin[SyntheticPair]):
    list_display = ["batch", "corpus", "simple_text", "created_at"]
    list_filter = ["batch", "corpus"]
    search_fields = ["simple_text", "complex_text"]
