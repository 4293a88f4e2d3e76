"""OpenAPI post-processing: every operation documents the errors every API view can answer.

Any request can be refused before or around its view: 400 (``config.middleware`` refuses a NUL
or an over-long query value; serializers refuse bad input), 401/403 (not logged in, wrong
credentials, wrong role), 404 (no such object, or a page past the end), 429 (a user name locked
by ``accounts.login_guard``, or the answers' rate limit). Each body is the ``Error`` component,
the shape ``config.api_errors`` gives every error. Operations keep what they document
themselves (e.g. 409 and 410 of the labeling answers).
"""

from __future__ import annotations

from typing import Any

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Every error body of the API.",
    "properties": {
        "detail": {"type": "string", "description": "what went wrong, for people"},
        "code": {"type": "string", "description": "what went wrong, for programs (invalid, not_authenticated, "
                 "authentication_failed, permission_denied, not_found, throttled, too_fast, gone, job_closed, ...)"},
        "errors": {"type": "object", "additionalProperties": True, "description": "code invalid: messages per field"},
        "field": {"type": "string", "description": "the refused query or form field"},
        "wait_seconds": {"type": "number", "description": "429: seconds to wait before trying again"},
    },
    "required": ["detail", "code"],
}
ALWAYS = {
    "400": "invalid input (code invalid; the field is named)",
    "401": "wrong credentials (code authentication_failed)",
    "403": "not logged in (code not_authenticated) or a role without access (code permission_denied)",
    "404": "no such object, or a page past the end (code not_found)",
    "429": "too many requests or failed logins (code throttled, with wait_seconds)",
}
ERROR_REF = {"$ref": "#/components/schemas/Error"}


def document_errors(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            for status, description in ALWAYS.items():
                responses.setdefault(status, {"description": description})
            for status, response in responses.items():
                if status.startswith(("4", "5")):
                    response["content"] = {"application/json": {"schema": ERROR_REF}}
                    response.setdefault("description", ALWAYS.get(status, "error"))
    return result
