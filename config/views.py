"""The site's front door: each role lands on its own app's page (config sits above every app)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views import defaults

from accounts.roles import Role, has_role


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if has_role(request.user, Role.VERIFIER, Role.RESEARCHER):
        return redirect("curation:corpus_list")
    if has_role(request.user, Role.ANNOTATOR):
        return redirect("annotation:home")
    return render(request, "no_role.html")


def _api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The 400 page with the reason (``accounts.params.BadParameter`` names the parameter);
    under /api/ the API's error body."""
    if _api(request):
        return JsonResponse({"detail": str(exception) or "Bad request.", "code": "invalid"}, status=400)
    return render(request, "400.html", {"exception": str(exception)}, status=400)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Under /api/ a URL that matches no route answers the API's error body, not an HTML page."""
    if _api(request):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return defaults.page_not_found(request, exception)
