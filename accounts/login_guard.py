"""Login throttling: a cache-based counter of failed logins per user name.

After ``LOGIN_MAX_FAILURES`` failed logins for one user name within ``LOGIN_LOCKOUT_SECONDS``,
that user name is locked for ``LOGIN_LOCKOUT_SECONDS``: the login form says so and the API's
Basic authentication answers 429 ``throttled``, even with the right password. A successful login
clears the count. Counting per user name (not per address) stops password guessing spread over
many addresses; the price is that anyone can lock a user name for a while, which the lockout's
expiry bounds. The counter lives in the default cache (Redis in production, shared by every
gunicorn worker). We chose a counter of our own over django-axes: axes adds models, migrations,
a middleware and an authentication backend for what here is two cache keys and two signals.

Counting happens on Django's ``user_login_failed`` / ``user_logged_in`` signals, so the form,
Basic authentication and the admin login all count the same way; ``ThrottledModelBackend``
refuses a locked user name whatever the path.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver
from django.http import HttpRequest

from accounts.roles import user_with_roles


def _max_failures() -> int:
    return int(getattr(settings, "LOGIN_MAX_FAILURES", 5))


def _lockout_seconds() -> int:
    return int(getattr(settings, "LOGIN_LOCKOUT_SECONDS", 900))


def _key(kind: str, username: str) -> str:
    digest = hashlib.sha256(username.strip().lower().encode("utf-8", "replace")).hexdigest()[:32]
    return f"login-guard:{kind}:{digest}"


def locked_for(username: str) -> float:
    """Seconds left of the user name's lockout (0 when it may try)."""
    until = cache.get(_key("until", username))
    return max(0.0, float(until) - time.time()) if until else 0.0


def record_failure(username: str) -> None:
    if locked_for(username):
        return  # attempts during a lockout do not extend it
    key = _key("failures", username)
    cache.add(key, 0, timeout=_lockout_seconds())
    try:
        failures = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=_lockout_seconds())
        failures = 1
    if failures >= _max_failures():
        cache.set(_key("until", username), time.time() + _lockout_seconds(), timeout=_lockout_seconds())
        cache.delete(key)


def clear(username: str) -> None:
    cache.delete_many([_key("failures", username), _key("until", username)])


def lockout_message(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return (f"Too many failed logins for this user name: it is locked for {minutes} more minute{'s' if minutes != 1 else ''}. "
            "Try again later or ask an admin.")


@receiver(user_login_failed)
def _on_failure(sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any) -> None:
    username = credentials.get("username")
    if isinstance(username, str) and username:
        record_failure(username)


@receiver(user_logged_in)
def _on_login(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    clear(user.get_username())


class ThrottledModelBackend(ModelBackend):
    """Django's backend, except that a locked user name cannot log in (right password or not), and
    the session's user comes with its roles in one statement (``roles.user_with_roles``)."""

    def get_user(self, user_id: Any) -> Any:
        user = user_with_roles(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None

    def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None,
                     **kwargs: Any) -> Any:
        if isinstance(username, str) and locked_for(username):
            raise PermissionDenied("locked")  # authenticate() stops here and sends user_login_failed
        return super().authenticate(request, username=username, password=password, **kwargs)
