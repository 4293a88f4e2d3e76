"""REST API (read-only) for corpora, articles, documents and document pairs."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.params import api_query
from curation.models import Article, Corpus, Document, DocumentPair
from curation.queries import pair_as_plain
from curation.serializers import (
    ArticleSerializer,
    CorpusFilterSerializer,
    CorpusSerializer,
    DocumentPairSerializer,
    DocumentSerializer,
    DocumentTextSerializer,
)


class CorpusViewSet(viewsets.ReadOnlyModelViewSet[Corpus]):
    queryset = Corpus.objects.order_by("name")
    serializer_class = CorpusSerializer


def _corpus_filter(request: Request) -> int | None:
    return api_query(CorpusFilterSerializer, request).get("corpus")


@extend_schema_view(list=extend_schema(parameters=[CorpusFilterSerializer]))
class ArticleViewSet(viewsets.ReadOnlyModelViewSet[Article]):
    serializer_class = ArticleSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        qs = Article.objects.prefetch_related("documents").order_by("corpus_id", "slug")
        corpus = _corpus_filter(self.request) if self.action == "list" else None
        return qs.filter(corpus_id=corpus) if corpus else qs


class DocumentViewSet(viewsets.ReadOnlyModelViewSet[Document]):
    queryset = Document.objects.order_by("article_id", "level")
    serializer_class = DocumentSerializer


@extend_schema_view(list=extend_schema(parameters=[CorpusFilterSerializer]))
class DocumentPairViewSet(viewsets.ReadOnlyModelViewSet[DocumentPair]):
    serializer_class = DocumentPairSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        qs = DocumentPair.objects.order_by("corpus_id", "pair_id")
        corpus = _corpus_filter(self.request) if self.action == "list" else None
        return qs.filter(corpus_id=corpus) if corpus else qs

    @extend_schema(responses=DocumentTextSerializer)
    @action(detail=True, methods=["get"])
    def text(self, request: Request, pk: str | None = None) -> Response:
        """The pair's sentences in the document-pair JSONL shape."""
        pair = self.get_object()
        return Response(pair_as_plain(pair))
