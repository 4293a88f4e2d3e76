"""The site's front door: each role lands on its own app's page (config sits above every app)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from accounts.roles import Role, has_role


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if has_role(request.user, Role.VERIFIER, Role.RESEARCHER):
        return redirect("curation:corpus_list")
    if has_role(request.user, Role.ANNOTATOR):
        return redirect("annotation:home")
    return render(request, "no_role.html")


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The 400 page with the reason (``accounts.params.BadParameter`` names the parameter)."""
    return render(request, "400.html", {"exception": str(exception)}, status=400)
