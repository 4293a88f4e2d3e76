"""Shared fixtures: users per role, the shared data folder, a role-aware client."""

from __future__ import annotations

from pathlib import Path

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

    def make(username: str, role: str | None = None, password: str = "pw-for-tests-1"):  # type: ignore[no-untyped-def]
        user = get_user_model().objects.create_user(username=username, password=password)
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
