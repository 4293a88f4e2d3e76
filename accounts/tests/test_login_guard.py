"""Login throttling: the form and Basic auth lock a user name after LOGIN_MAX_FAILURES wrong
passwords, even against the right one, and say so; Basic auth only when API_BASIC_AUTH."""

from __future__ import annotations

import base64

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _local_cache(settings):  # type: ignore[no-untyped-def]
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "login-guard"}}
    settings.LOGIN_MAX_FAILURES = 5
    settings.LOGIN_LOCKOUT_SECONDS = 900
    from django.core.cache import cache

    cache.clear()


def _basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def test_form_locks_after_five_failures_and_says_so(client, make_user) -> None:  # type: ignore[no-untyped-def]
    make_user("rita", "researcher", password="right-password-1")
    for _ in range(5):
        page = client.post(reverse("login"), {"username": "rita", "password": "wrong"})
        assert page.status_code == 200 and "Wrong username or password." in page.content.decode()
    page = client.post(reverse("login"), {"username": "rita", "password": "right-password-1"})
    text = page.content.decode()
    assert page.status_code == 200 and "Too many failed logins for this user name" in text and "15 more minutes" in text
    assert "_auth_user_id" not in client.session
    other = make_user("vera", "verifier", password="right-password-2")  # another user name is not locked
    assert client.post(reverse("login"), {"username": other.username, "password": "right-password-2"}).status_code == 302


def test_success_before_the_limit_clears_the_count(client, make_user) -> None:  # type: ignore[no-untyped-def]
    make_user("rita", "researcher", password="right-password-1")
    for _ in range(4):
        client.post(reverse("login"), {"username": "rita", "password": "wrong"})
    assert client.post(reverse("login"), {"username": "rita", "password": "right-password-1"}).status_code == 302
    client.logout()
    for _ in range(4):
        client.post(reverse("login"), {"username": "rita", "password": "wrong"})
    assert client.post(reverse("login"), {"username": "rita", "password": "right-password-1"}).status_code == 302


def test_basic_auth_is_off_unless_configured(client, make_user, settings) -> None:  # type: ignore[no-untyped-def]
    make_user("rita", "researcher", password="right-password-1")
    settings.API_BASIC_AUTH = False
    response = client.get("/api/corpora/", HTTP_AUTHORIZATION=_basic("rita", "right-password-1"))
    assert response.status_code == 403 and response.json()["code"] == "not_authenticated"
    settings.API_BASIC_AUTH = True
    assert client.get("/api/corpora/", HTTP_AUTHORIZATION=_basic("rita", "right-password-1")).status_code == 200


def test_basic_auth_locks_with_429_throttled(client, make_user, settings) -> None:  # type: ignore[no-untyped-def]
    settings.API_BASIC_AUTH = True
    make_user("rita", "researcher", password="right-password-1")
    for _ in range(5):
        body = client.get("/api/corpora/", HTTP_AUTHORIZATION=_basic("rita", "wrong")).json()
        assert body["code"] == "authentication_failed"
    response = client.get("/api/corpora/", HTTP_AUTHORIZATION=_basic("rita", "right-password-1"))
    assert response.status_code == 429
    body = response.json()
    assert body["code"] == "throttled" and "Too many failed logins" in body["detail"] and body["wait_seconds"] > 800
    # the form shares the count
    page = client.post(reverse("login"), {"username": "rita", "password": "right-password-1"})
    assert "Too many failed logins" in page.content.decode()
