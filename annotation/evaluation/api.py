"""REST API of evaluation studies: studies, next page, answers (throttled with the labeling
answers' scope), own progress, results and the cost ledger (researchers). A page is found by its token *and*
its rater; a rater's JSON never names a system."""

from __future__ import annotations

import math
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action, api_view, permission_classes, throttle_classes
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.permissions import IsAnnotator, IsResearcher
from annotation.api import AnswerThrottle, error
from annotation.evaluation.serializers import (
    MyProgressSerializer,
    NextPageSerializer,
    PageAnswerSerializer,
    PageResultSerializer,
    PageSerializer,
    ResultsSerializer,
    StudyLedgerSerializer,
    StudySerializer,
)
from annotation.evaluation.services import assignment, ledger, presenting, rating, results, studies
from annotation.models import Study, StudyRater
from annotation.serializers import ErrorSerializer, PayUpdateSerializer
from annotation.views_label import user_of


def _finite(data: Any) -> Any:
    """JSON has no NaN: undefined statistics become null."""
    if isinstance(data, float):
        return None if math.isnan(data) or math.isinf(data) else data
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_finite(v) for v in data]
    return data


class StudyViewSet(viewsets.ReadOnlyModelViewSet[Study]):
    """Evaluation studies open to the caller (researchers and admins see every study)."""

    serializer_class = StudySerializer
    permission_classes = [IsAnnotator]

    def get_queryset(self) -> QuerySet[Study]:
        return presenting.visible_studies(user_of(self.request))

    @extend_schema(
        request=NextPageSerializer,
        responses={200: PageSerializer, 204: OpenApiResponse(description="nothing left for you in this study"),
                   403: ErrorSerializer, 409: ErrorSerializer},
    )
    @action(detail=True, methods=["post"])
    def next(self, request: Request, pk: str | None = None) -> Response:
        """Reserve (or resume) your next page; ``exclude`` the tokens already on screen."""
        study = self.get_object()
        body = NextPageSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            page = assignment.next_page(study, user_of(request), tuple(body.validated_data["exclude"]))
        except assignment.RaterExcluded:
            return error("You were excluded from this study.", "excluded", 403)
        except assignment.StudyClosed as exc:
            return error(f"This study is {exc}.", "study_closed", 409)
        if page is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        data = {**presenting.page_view(page).as_dict(), "dimensions": presenting.design_spec(study)["dimensions"]}
        return Response(PageSerializer(data).data)

    @extend_schema(responses=MyProgressSerializer)
    @action(detail=True, methods=["get"])
    def me(self, request: Request, pk: str | None = None) -> Response:
        """Your own progress in this study."""
        study = self.get_object()
        membership = StudyRater.objects.filter(study=study, rater=user_of(request)).first()
        return Response(MyProgressSerializer(presenting.my_progress(membership).as_dict()).data)

    @extend_schema(responses={200: ResultsSerializer, 403: ErrorSerializer})
    @action(detail=True, methods=["get"], permission_classes=[IsResearcher])
    def results(self, request: Request, pk: str | None = None) -> Response:
        """Scores, intervals, pairwise tests, agreement, balance, controls, metrics (researchers)."""
        study = self.get_object()
        return Response(_finite(ResultsSerializer(results.cached_study_results(study).as_dict()).data))

    @extend_schema(responses={200: StudyLedgerSerializer, 403: ErrorSerializer, 404: ErrorSerializer})
    @action(detail=True, methods=["get"], permission_classes=[IsResearcher])
    def ledger(self, request: Request, pk: str | None = None) -> Response:
        """The study's cost ledger (researchers): per rater and in total, pages, ratings, control
        ratings, ratings discarded by exclusion, seconds on task and cost with the study's pay settings."""
        study = self.get_object()
        return Response(StudyLedgerSerializer(ledger.study_ledger(study).as_dict()).data)

    @extend_schema(request=PayUpdateSerializer, responses={200: StudyLedgerSerializer, 400: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer})
    @ledger.mapping.patch
    def set_pay(self, request: Request, pk: str | None = None) -> Response:
        """Change the study's pay settings (researchers): any of ``pay_per_judgment`` (per rating),
        ``pay_per_hour``, ``currency``; the others keep their values. Returns the ledger recounted with them."""
        study = self.get_object()
        body = PayUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            studies.update_settings(study, **body.validated_data)
        except studies.StudyError as exc:
            return error(str(exc), "invalid", 400)
        return Response(StudyLedgerSerializer(ledger.study_ledger(study).as_dict()).data)


@extend_schema(
    request=PageAnswerSerializer,
    responses={200: PageResultSerializer, 400: ErrorSerializer, 403: ErrorSerializer, 410: ErrorSerializer, 429: ErrorSerializer},
)
@api_view(["POST"])
@permission_classes([IsAnnotator])
@throttle_classes([AnswerThrottle])
def answer(request: Request) -> Response:
    """Submit a page's ratings by its token; resubmitting returns the first result.

    429 with ``code`` ``too_fast`` when the minimum time per page has not passed (nothing stored);
    429 with ``code`` ``throttled`` when answers come faster than the rate limit.
    """
    body = PageAnswerSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    try:
        ratings = [{"position": e["position"], "values": dict(e["values"])} for e in body.validated_data["ratings"]]
        result = rating.submit_page(user_of(request), body.validated_data["token"], ratings)
    except rating.TooFast as exc:
        return error(str(exc), "too_fast", 429, wait_seconds=round(exc.wait_seconds, 1))
    except rating.PageGone as exc:
        return error(str(exc), "gone", 410)
    except rating.Excluded as exc:
        return error(str(exc), "excluded", 403)
    except rating.InvalidRatings as exc:
        return error(str(exc), "invalid", 400)
    return Response(PageResultSerializer(result.as_dict()).data)


answer.cls.throttle_scope = "answers"  # type: ignore[attr-defined]
