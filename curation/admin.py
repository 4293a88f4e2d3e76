from django.contrib import admin

from curation.models import (
    Article,
    Corpus,
    Document,
    DocumentPair,
    ImportRecord,
    Paragraph,
    ReferenceAlignment,
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


@admin.register(SyntheticPair)
class SyntheticPairAdmin(admin.ModelAdmin[SyntheticPair]):
    list_display = ["batch", "corpus", "simple_text", "created_at"]
    list_filter = ["batch", "corpus"]
    search_fields = ["simple_text", "complex_text"]
