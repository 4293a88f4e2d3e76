"""The API's error bodies: every error is ``{"detail": str, "code": str, ...}`` (the shape of
``annotation.serializers.ErrorSerializer``, documented on every operation by
``config.api_schema``).

DRF's own errors get their DRF code (``not_authenticated``, ``authentication_failed``,
``permission_denied``, ``not_found``, ``method_not_allowed``, ``unsupported_media_type``,
``parse_error``, ``throttled``, ...); a 429 also carries ``wait_seconds``. A validation error is
``code: invalid`` with the messages of each field under ``errors`` and the first of them, with
its field's name, in ``detail``.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def _first(errors: Any, path: str = "") -> str:
    if isinstance(errors, dict):
        for key, value in errors.items():
            name = key if key != "non_field_errors" else ""
            return _first(value, f"{path}.{name}" if path and name else (name or path))
    if isinstance(errors, list) and errors:
        index = next((i for i, e in enumerate(errors) if e), 0)
        return _first(errors[index], f"{path}[{index}]" if isinstance(errors[index], (dict, list)) else path)
    return f"{path}: {errors}" if path else str(errors)


def error_body(exc: exceptions.APIException) -> dict[str, Any]:
    if isinstance(exc, exceptions.ValidationError):
        errors = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        return {"detail": _first(errors), "code": "invalid", "errors": errors}
    codes = exc.get_codes()
    code = codes if isinstance(codes, str) else exc.default_code
    body: dict[str, Any] = {"detail": str(exc.detail), "code": code}
    wait = getattr(exc, "wait", None) if isinstance(exc, exceptions.Throttled) else None
    if wait is not None:
        body["wait_seconds"] = round(float(wait), 1)
    return body


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    converted = exc
    if not isinstance(converted, exceptions.APIException):  # Http404 / PermissionDenied, converted by DRF
        converted = exceptions.NotFound() if response.status_code == 404 else exceptions.PermissionDenied()
        if str(exc):
            converted.detail = exceptions.ErrorDetail(str(exc), code=converted.default_code)
    response.data = error_body(converted)
    return response
