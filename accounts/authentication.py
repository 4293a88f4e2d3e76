"""The API's authentication classes: session (with CSRF) and, only when ``API_BASIC_AUTH`` is on,
HTTP Basic that refuses hostile user names before they reach the database and answers 429
``throttled`` for a user name locked by ``accounts.login_guard``."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from accounts.login_guard import locked_for, lockout_message

MAX_USERNAME = 150  # django.contrib.auth's User.username


class BasicAuthentication(authentication.BasicAuthentication):
    """DRF's Basic authentication, off unless ``settings.API_BASIC_AUTH`` (env ``API_BASIC_AUTH=1``)."""

    def authenticate(self, request: Request) -> Any:
        if not getattr(settings, "API_BASIC_AUTH", False):
            return None
        return super().authenticate(request)

    def authenticate_header(self, request: Request) -> str | None:
        return super().authenticate_header(request) if getattr(settings, "API_BASIC_AUTH", False) else None

    def authenticate_credentials(self, userid: str, password: str, request: Request | None = None) -> Any:
        if "\x00" in userid or "\x00" in password or len(userid) > MAX_USERNAME or len(password) > 4096:
            raise exceptions.AuthenticationFailed("Invalid username/password.")
        if wait := locked_for(userid):
            raise exceptions.Throttled(wait=wait, detail=lockout_message(wait))
        return super().authenticate_credentials(userid, password, request)


class BasicAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """Documents the Basic scheme in the OpenAPI schema (drf-spectacular finds it by subclassing)."""

    target_class = "accounts.authentication.BasicAuthentication"
    name = "basicAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "basic"}
