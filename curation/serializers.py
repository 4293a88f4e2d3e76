from __future__ import annotations

from rest_framework import serializers

from accounts.params import ApiIdField
from curation.models import Article, Corpus, Document, DocumentPair


class CorpusSerializer(serializers.ModelSerializer[Corpus]):
    class Meta:
        model = Corpus
        fields = ["id", "name", "language", "kind", "description", "created_at"]


class DocumentSerializer(serializers.ModelSerializer[Document]):
    class Meta:
        model = Document
        fields = ["id", "article", "level", "level_label", "title"]


class ArticleSerializer(serializers.ModelSerializer[Article]):
    documents = DocumentSerializer(many=True, read_only=True)

    class Meta:
        model = Article
        fields = ["id", "corpus", "slug", "title", "source", "documents"]


class DocumentPairSerializer(serializers.ModelSerializer[DocumentPair]):
    class Meta:
        model = DocumentPair
        fields = ["id", "corpus", "article", "pair_id", "complex", "simple"]


class SentenceSerializer(serializers.Serializer[object]):
    id = serializers.CharField(help_text="formats.md sentence id")
    text = serializers.CharField()


class DocumentTextSerializer(serializers.Serializer[object]):
    pair_id = serializers.CharField()
    language = serializers.CharField()
    complex = serializers.ListField(child=serializers.ListField(child=serializers.CharField()))
    simple = serializers.ListField(child=serializers.ListField(child=serializers.CharField()))


class CorpusFilterSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """Query parameters of the article and pair lists."""

    corpus = ApiIdField(help_text="only this corpus (its id)")
