"""Site-wide request guards that run before any view.

``RejectHostileInput`` refuses a NUL byte in the path, in a query-string or form field (name or
value), and a query-string value longer than ``accounts.params.MAX_TEXT``, with a 400 naming the
field: PostgreSQL cannot store or compare NUL, so a NUL would otherwise reach the database as a
500. A cookie holding a NUL is dropped (the request goes on as if it were absent). The API gets
``{"detail", "code": "invalid", "field"}``; pages get the 400 page. Typed values (ids, numbers)
are each view's form's job (``accounts.params``).
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.template.loader import render_to_string

from accounts.params import MAX_TEXT

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _problem(source: str, data: QueryDict, max_length: int | None) -> tuple[str, str] | None:
    for name, values in data.lists():
        if "\x00" in name:
            return source, f"a {source} parameter name contains a NUL byte"
        for value in values:
            if not isinstance(value, str):
                continue
            if "\x00" in value:
                return name, f"{name}: contains a NUL byte"
            if max_length is not None and len(value) > max_length:
                return name, f"{name}: longer than {max_length} characters"
    return None


def hostile_input(request: HttpRequest) -> tuple[str, str] | None:
    """``(field, message)`` of the first refused part of the request, or None."""
    if "\x00" in request.path_info:
        return "path", "the address contains a NUL byte"
    found = _problem("query", request.GET, MAX_TEXT)
    if found is None and request.method == "POST" and request.content_type in FORM_TYPES:
        found = _problem("form", request.POST, None)
    return found


def bad_request(request: HttpRequest, field: str, message: str) -> HttpResponse:
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": message, "code": "invalid", "field": field}, status=400)
    if not hasattr(request, "user"):  # refused before the session was read
        request.user = AnonymousUser()
    html = render_to_string("400.html", {"exception": message}, request=request)
    return HttpResponse(html, status=400)


class RejectHostileInput:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for name in [k for k, v in request.COOKIES.items() if "\x00" in k or "\x00" in v]:
            del request.COOKIES[name]
        found = hostile_input(request)
        if found is not None:
            return bad_request(request, *found)
        return self.get_response(request)
