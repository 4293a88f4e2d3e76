"""REST API (read-only) for corpora, articles, documents and document pairs."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from curation.models import Article, Corpus, Document, DocumentPair
from curation.queries import pair_as_plain
from curation.serializers import (
    ArticleSerializer,
    CorpusSerializer,
    DocumentPairSerializer,
    DocumentSerializer,
    DocumentTextSerializer,
)


class CorpusViewSet(viewsets.ReadOnlyModelViewSet[Corpus]):
    queryset = Corpus.objects.order_by("name")
    serializer_class = CorpusSerializer


class ArticleViewSet(viewsets.ReadOnlyModelViewSet[Article]):
    serializer_class = ArticleSerializer
    filterset_fields = ["corpus"]

    def get_queryset(self):  # type: ignore[no-untyped-def]
        qs = Article.objects.prefetch_related("documents").order_by("corpus_id", "slug")
        corpus = self.request.query_params.get("corpus")
        return qs.filter(corpus_id=corpus) if corpus else qs


class DocumentViewSet(viewsets.ReadOnlyModelViewSet[Document]):
    queryset = Document.objects.order_by("article_id", "level")
    serializer_class = DocumentSerializer


class DocumentPairViewSet(viewsets.ReadOnlyModelViewSet[DocumentPair]):
    serializer_class = DocumentPairSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        qs = DocumentPair.objects.order_by("corpus_id", "pair_id")
        corpus = self.request.query_params.get("corpus")
        return qs.filter(corpus_id=corpus) if corpus else qs

    @extend_schema(responses=DocumentTextSerializer)
    @action(detail=True, methods=["get"])
    def text(self, request: Request, pk: str | None = None) -> Response:
        """The pair's sentences in the document-pair JSONL shape."""
        pair = self.get_object()
        return Response(pair_as_plain(pair))
