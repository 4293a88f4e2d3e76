"""The site's front door: a landing page with a card per role (its counts and next step); a crowd
annotator goes straight to the labeling jobs (config sits above every app)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views import defaults
from django.views.decorators.cache import cache_control
from drf_spectacular.views import SpectacularAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.roles import STAFF_ROLES, Role, has_role
from config import landing


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if has_role(request.user, *STAFF_ROLES):
        return render(request, "home.html", {"cards": landing.cards(request.user)})
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


@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on every page that names no icon (the admin's): the site's SVG icon."""
    return redirect(static("favicon.svg"), permanent=True)


class SchemaView(SpectacularAPIView):
    """The OpenAPI schema; a browser (Accept: text/html) is shown the YAML as text instead of being
    handed a file to download. API clients get the OpenAPI media types as before."""

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        accept = request.META.get("HTTP_ACCEPT", "")
        if response.status_code == 200 and "text/html" in accept and "format" not in request.query_params:
            response.content_type = "text/plain; charset=utf-8"
        return response
