"""REST API of the pipeline (read-only, researchers and admins): jobs with progress and the stale
flag, model versions with metrics, corpus alignment runs, and exports with download links."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet
from django.http import FileResponse, Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.request import Request

from accounts.params import api_query
from accounts.permissions import IsResearcher
from pipeline.exports.run import download_name, export_file
from pipeline.models import AlignmentRun, ExportedDataset, Job, ModelVersion, RunChunk
from pipeline.serializers import (
    CorpusFilterSerializer,
    ExportSerializer,
    ModelFilterSerializer,
    ModelVersionSerializer,
    PipelineJobFilterSerializer,
    PipelineJobSerializer,
    RunSerializer,
)


@extend_schema_view(list=extend_schema(parameters=[PipelineJobFilterSerializer]))
class JobViewSet(viewsets.ReadOnlyModelViewSet[Job]):
    """Pipeline jobs (pre-population, corpus alignment, retraining, exports), newest first."""

    serializer_class = PipelineJobSerializer
    permission_classes = [IsResearcher]

    def get_queryset(self) -> QuerySet[Job]:
        qs = Job.objects.order_by("-pk")
        if self.action == "list":
            wanted = api_query(PipelineJobFilterSerializer, self.request)
            qs = qs.filter(**{("corpus_id" if k == "corpus" else k): v for k, v in wanted.items()})
        return qs


@extend_schema_view(list=extend_schema(parameters=[ModelFilterSerializer]))
class ModelVersionViewSet(viewsets.ReadOnlyModelViewSet[ModelVersion]):
    """Model versions (trained aligners and registered baselines) with their dev/test metrics."""

    serializer_class = ModelVersionSerializer
    permission_classes = [IsResearcher]

    def get_queryset(self) -> QuerySet[ModelVersion]:
        qs = ModelVersion.objects.order_by("-pk")
        if self.action == "list" and (language := api_query(ModelFilterSerializer, self.request).get("language")):
            qs = qs.filter(language=language)
        return qs


def with_chunk_counts(runs: QuerySet[AlignmentRun]) -> QuerySet[AlignmentRun]:
    """Each run's chunks per status counted in the runs' own query (``chunks_<status>``): a page
    of runs costs one query, not one per run."""
    return runs.annotate(**{f"chunks_{status}": Count("chunks", filter=Q(chunks__status=status)) for status in RunChunk.Status.values})


def of_corpus(view: viewsets.GenericViewSet, qs: QuerySet[Any]) -> QuerySet[Any]:
    """``qs`` of the list's ``?corpus=`` (:class:`CorpusFilterSerializer`) when one is given."""
    if view.action == "list" and (corpus := api_query(CorpusFilterSerializer, view.request).get("corpus")):
        qs = qs.filter(corpus_id=corpus)
    return qs


@extend_schema_view(list=extend_schema(parameters=[CorpusFilterSerializer]))
class RunViewSet(viewsets.ReadOnlyModelViewSet[AlignmentRun]):
    """Corpus alignment runs with their chunks per status and their number of predictions."""

    serializer_class = RunSerializer
    permission_classes = [IsResearcher]

    def get_queryset(self) -> QuerySet[AlignmentRun]:
        return of_corpus(self, with_chunk_counts(AlignmentRun.objects.order_by("-pk")))


@extend_schema_view(list=extend_schema(parameters=[CorpusFilterSerializer]))
class ExportViewSet(viewsets.ReadOnlyModelViewSet[ExportedDataset]):
    """Exported datasets with their card and a download link per file."""

    serializer_class = ExportSerializer
    permission_classes = [IsResearcher]

    def get_queryset(self) -> QuerySet[ExportedDataset]:
        return of_corpus(self, ExportedDataset.objects.select_related("job").order_by("-pk"))

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="the file")})
    @action(detail=True, methods=["get"], url_path=r"files/(?P<name>[A-Za-z0-9_.-]{1,100})", url_name="download")
    def download(self, request: Request, pk: str | None = None, name: str = "") -> FileResponse:
        """One file of the export (a name from its ``files``)."""
        dataset = self.get_object()
        try:
            path = export_file(dataset, name)
        except FileNotFoundError as exc:
            raise Http404(str(exc)) from exc
        return FileResponse(path.open("rb"), as_attachment=True, filename=download_name(dataset, name),
                            content_type="application/octet-stream")
