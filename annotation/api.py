"""REST API for annotators: jobs, next question, answers (throttled), own statistics, context.

Annotators reach only their own work: a question is found by its token *and* its annotator.
Session authentication enforces CSRF; answers use the DRF throttle scope ``answers``.
"""

from __future__ import annotations

from dataclasses import asdict

from django.conf import settings
from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action, api_view, permission_classes, throttle_classes
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from accounts.permissions import IsAnnotator, IsResearcher
from annotation.models import LabelingJob, Membership
from annotation.models.pay import PayError, apply_pay
from annotation.serializers import (
    AnswerResultSerializer,
    AnswerSerializer,
    ContextSerializer,
    ErrorSerializer,
    JobSerializer,
    LedgerSerializer,
    MyStatsSerializer,
    NextQuestionSerializer,
    PayUpdateSerializer,
    QuestionSerializer,
)
from annotation.services import assignment, labeling, ledger, presenting
from annotation.views_label import user_of


class AnswerThrottle(ScopedRateThrottle):
    """Scope ``answers``; the rate is read from settings at request time (tests may change it)."""

    scope_attr = "throttle_scope"

    def get_rate(self) -> str | None:
        rates: dict[str, str] = settings.REST_FRAMEWORK.get("DEFAULT_THROTTLE_RATES", {})  # type: ignore[assignment]
        return rates.get(str(self.scope))


def error(detail: str, code: str, http_status: int, **extra: object) -> Response:
    return Response({"detail": detail, "code": code, **extra}, status=http_status)


class JobViewSet(viewsets.ReadOnlyModelViewSet[LabelingJob]):
    """Labeling jobs open to the caller (researchers and admins see every job)."""

    serializer_class = JobSerializer
    permission_classes = [IsAnnotator]

    def get_queryset(self) -> QuerySet[LabelingJob]:
        return presenting.visible_jobs(user_of(self.request))

    @extend_schema(
        request=NextQuestionSerializer,
        responses={
            200: QuestionSerializer,
            204: OpenApiResponse(description="nothing left for you in this job"),
            403: ErrorSerializer,
            409: ErrorSerializer,
        },
    )
    @action(detail=True, methods=["post"])
    def next(self, request: Request, pk: str | None = None) -> Response:
        """Reserve (or resume) your next question; ``exclude`` the tokens already on screen."""
        job = self.get_object()
        body = NextQuestionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            found = assignment.next_served(job, user_of(request), tuple(body.validated_data["exclude"]))
        except assignment.AnnotatorRemoved:
            return error("You were removed from this job: your test-question accuracy fell below the threshold.", "removed", 403)
        except assignment.JobClosed as exc:
            return error(f"This job is {exc}.", "job_closed", 409)
        if found is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(QuestionSerializer(presenting.QuestionView(*found).as_dict()).data)

    @extend_schema(responses={200: LedgerSerializer, 403: ErrorSerializer, 404: ErrorSerializer})
    @action(detail=True, methods=["get"], permission_classes=[IsResearcher])
    def ledger(self, request: Request, pk: str | None = None) -> Response:
        """The job's annotation cost ledger (researchers): per annotator and in total, judgments,
        test answers, discarded judgments, seconds on task and cost with the job's pay settings."""
        job = self.get_object()
        return Response(LedgerSerializer(ledger.job_ledger(job).as_dict()).data)

    @extend_schema(request=PayUpdateSerializer, responses={200: LedgerSerializer, 400: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer})
    @ledger.mapping.patch
    def set_pay(self, request: Request, pk: str | None = None) -> Response:
        """Change the job's pay settings (researchers): any of ``pay_per_judgment``, ``pay_per_hour``,
        ``currency``; the others keep their values. Returns the ledger recounted with them."""
        job = self.get_object()
        body = PayUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            apply_pay(job, body.validated_data)
        except PayError as exc:
            return error(str(exc), "invalid", 400, errors={exc.field: [str(exc)]})
        return Response(LedgerSerializer(ledger.job_ledger(job).as_dict()).data)

    @extend_schema(responses=MyStatsSerializer)
    @action(detail=True, methods=["get"])
    def me(self, request: Request, pk: str | None = None) -> Response:
        """Your own progress and test-question accuracy in this job."""
        job = self.get_object()
        membership = Membership.objects.filter(job=job, annotator=user_of(request)).first()
        return Response(MyStatsSerializer(asdict(presenting.my_stats(job, membership))).data)


@extend_schema(
    request=AnswerSerializer,
    responses={
        200: AnswerResultSerializer, 400: ErrorSerializer, 403: ErrorSerializer,
        409: OpenApiResponse(ErrorSerializer, description="``code`` ``job_closed``: the job was paused or closed; nothing stored"),
        410: ErrorSerializer, 429: ErrorSerializer,
    },
)
@api_view(["POST"])
@permission_classes([IsAnnotator])
@throttle_classes([AnswerThrottle])
def answer(request: Request) -> Response:
    """Answer a question by its token. Resubmitting the same token returns the first result.

    429 with ``code`` ``too_fast`` when the minimum time per question has not passed (nothing stored);
    429 with ``code`` ``throttled`` when answers come faster than the rate limit;
    409 with ``code`` ``job_closed`` when the job was paused or closed after the question was served.
    Accuracy, feedback on missed test questions and removal change only when an answer ends a page.
    With ``preload`` the response also carries the following question in ``next`` (reserved in the
    same transaction; ``exclude`` the token preloaded before), so labeling costs one request per question.
    """
    body = AnswerSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    preload = tuple(data["exclude"]) if data["preload"] else None
    try:
        result = labeling.submit_answer(user_of(request), data["token"], data["label"], preload=preload)
    except labeling.TooFast as exc:
        return error(str(exc), "too_fast", 429, wait_seconds=round(exc.wait_seconds, 1))
    except labeling.QuestionGone as exc:
        return error(str(exc), "gone", 410)
    except labeling.Removed as exc:
        return error(str(exc), "removed", 403)
    except labeling.JobNotOpen as exc:
        return error(str(exc), "job_closed", 409)
    except labeling.InvalidLabel as exc:
        return error(str(exc), "invalid", 400)
    return Response(AnswerResultSerializer(result.as_dict()).data)


answer.cls.throttle_scope = "answers"  # type: ignore[attr-defined]


@extend_schema(responses={200: ContextSerializer, 404: ErrorSerializer})
@api_view(["GET"])
@permission_classes([IsAnnotator])
def context(request: Request, token: str) -> Response:
    """The paragraphs around the two sentences of one of your questions."""
    found = presenting.question_by_token(user_of(request), token)
    if found is None:
        raise Http404("no such question of yours")
    return Response(ContextSerializer(asdict(presenting.context_view(found))).data)
