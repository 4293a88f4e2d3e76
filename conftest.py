"""Shared fixtures: users per role, the shared data folder, a role-aware client."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(__file__).resolve().parent.parent / "shared"
SHARED_DATA = SHARED / "data"


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):  # type: ignore[no-untyped-def]
    """PBKDF2 with a million rounds costs ~0.5 s per user on this machine; tests need no strength."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA} (tests on real corpora need ../shared/data)")
    return SHARED_DATA


@pytest.fixture
def make_user(db):  # type: ignore[no-untyped-def]
    from django.contrib.auth import get_user_model

    from accounts.roles import Role, grant

    def make(username: str, role: str | None = None, password: str = "pw-for-tests-1", **fields):  # type: ignore[no-untyped-def]
        user = get_user_model().objects.create_user(username=username, password=password, **fields)
        if role:
            grant(user, Role(role))
        return user

    return make


@pytest.fixture
def annotator(make_user):  # type: ignore[no-untyped-def]
    return make_user("anna", "annotator")


@pytest.fixture
def verifier(make_user):  # type: ignore[no-untyped-def]
    return make_user("vera", "verifier")


@pytest.fixture
def researcher(make_user):  # type: ignore[no-untyped-def]
    return make_user("rita", "researcher")


@pytest.fixture
def admin_user(make_user):  # type: ignore[no-untyped-def]
    return make_user("adam", "admin")


@pytest.fixture
def client_for(client):  # type: ignore[no-untyped-def]
    def login(user):  # type: ignore[no-untyped-def]
        client.force_login(user)
        return client

    return login


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Headless Debian chromium through Playwright; skips with a reason when either is missing."""
    from tests.browser import CHROMIUM_ARGS

    chromium = shutil.which("chromium")
    if not chromium:
        pytest.skip("Debian's chromium is not installed (scripts/ensure_chromium.sh installs it); browser test skipped")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright for Python is not installed")
    # Playwright's sync API runs an event loop in this thread; allow the ORM for this test only
    # (never at import: the variable would leak into other tests' subprocesses).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()
            # Inside sync_playwright() an asyncio loop runs in this thread, and Django keeps the ORM connections
            # opened there apart from this thread's others (asgiref's thread-critical Local switches to a
            # context variable while a loop runs). Close them here: once the loop stops nothing can reach them,
            # and left open they kept the PostgreSQL test database from being dropped at the session's end.
            from django.db import connections

            connections.close_all()


@pytest.fixture
def browser_page(browser: Any, live_server: Any) -> Callable[..., Any]:
    """``browser_page(user, width=1360, height=860)``: a page logged in as ``user`` on the live server."""
    from tests.browser import logged_in_page

    def open_as(user: Any, width: int = 1360, height: int = 860) -> Any:
        return logged_in_page(browser, live_server.url, user, width, height)

    return open_as
