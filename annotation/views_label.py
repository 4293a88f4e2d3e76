"""The labeling page (keyboard 1/2/3, timer, preloaded next question), instructions,
paragraph context on demand (htmx), and a no-JavaScript answer fallback."""

from __future__ import annotations

from typing import Any, cast

from django.contrib import messages
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.permissions import IsAnnotator, role_required
from annotation.models import LabelingJob
from annotation.services import assignment, labeling, presenting
from curation.models import AlignmentLabel


def user_of(request: Any) -> User:
    """The authenticated user (views here are behind role checks, so never anonymous)."""
    return cast(User, request.user)


LABELERS = IsAnnotator.roles  # the API's labeler roles

ANSWERS = [
    (1, AlignmentLabel.ALIGNED.value, "Aligned", "same meaning"),
    (2, AlignmentLabel.PARTIAL.value, "Partially aligned", "share some content"),
    (3, AlignmentLabel.NOT_ALIGNED.value, "Not aligned", "different content"),
]


@role_required(*LABELERS)
def label_page(request: HttpRequest, job_id: int) -> HttpResponse:
    membership = assignment.membership_with_job(job_id, user_of(request))  # one query once the user has started
    # before the user's first question the job is read on its own; serving creates the membership
    job = get_object_or_404(LabelingJob, pk=job_id) if membership is None else membership.job
    context: dict[str, object] = {"job": job, "answers": ANSWERS}
    try:
        shown, ahead = assignment.page_served(job, user_of(request), membership, first_question=membership is None)
    except assignment.AnnotatorRemoved:
        return render(request, "annotation/removed.html", {"job": job}, status=403)
    except assignment.JobClosed:
        return render(request, "annotation/label_done.html", {"job": job, "closed": True})
    context["stats"] = presenting.my_stats(job, membership)
    if shown is None:
        return render(request, "annotation/label_done.html", {"job": job, "closed": False, **context})
    context["question"] = presenting.QuestionView(*shown)
    # the next question, reserved with this one: the script shows it after the answer (no "next" request)
    context["preload"] = None if ahead is None else presenting.QuestionView(*ahead).as_dict()
    return render(request, "annotation/label.html", context)


@role_required(*LABELERS)
def instructions(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(LabelingJob, pk=job_id)
    return render(request, "annotation/instructions.html", {"job": job, "answers": ANSWERS})


@role_required(*LABELERS)
def context_partial(request: HttpRequest, token: str) -> HttpResponse:
    found = presenting.question_by_token(user_of(request), token)
    if found is None:
        raise Http404("no such question of yours")
    return render(request, "annotation/_context.html", {"ctx": presenting.context_view(found)})


@require_POST
@role_required(*LABELERS)
def answer_form(request: HttpRequest, job_id: int) -> HttpResponse:
    """Fallback without JavaScript: answer, then back to the labeling page (PRG)."""
    try:
        result = labeling.submit_answer(user_of(request), request.POST.get("token", ""), request.POST.get("label", ""))
    except labeling.JobNotOpen as exc:
        job = get_object_or_404(LabelingJob, pk=job_id)
        return render(request, "annotation/label_done.html", {"job": job, "closed": True, "refused": str(exc)}, status=409)
    except labeling.AnswerError as exc:
        messages.error(request, str(exc))
    else:
        for miss in result.feedback:
            messages.warning(
                request,
                f"On the page you just finished, a question had a known answer: “{miss.simple}” / “{miss.complex}”: "
                f"you answered “{miss.given}”, expected “{miss.expected}”. {miss.explanation}",
            )
    return redirect("annotation:label", job_id)
