"""Settings helpers fail loudly on bad values; production settings refuse to start without a key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list, env_path

ROOT = Path(__file__).resolve().parent.parent


def test_env_bool_parses_and_rejects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_FLAG", "yes")
    assert env_bool("X_FLAG", False) is True
    monkeypatch.setenv("X_FLAG", "0")
    assert env_bool("X_FLAG", True) is False
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG='maybe' is not a boolean"):
        env_bool("X_FLAG", False)
    monkeypatch.delenv("X_FLAG")
    assert env_bool("X_FLAG", True) is True


def test_env_int_list_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("X_NUM", "12")
    assert env_int("X_NUM", 1) == 12
    monkeypatch.setenv("X_NUM", "twelve")
    with pytest.raises(ImproperlyConfigured, match="X_NUM='twelve' is not an integer"):
        env_int("X_NUM", 1)
    monkeypatch.setenv("X_HOSTS", "a.org, b.org,,")
    assert env_list("X_HOSTS", []) == ["a.org", "b.org"]
    monkeypatch.setenv("X_DIR", str(tmp_path / "sub"))
    assert env_path("X_DIR", Path("/nope")) == (tmp_path / "sub").resolve()


def _check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    dropped = ("DATABASE_URL", "DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE")
    full = {k: v for k, v in os.environ.items() if k not in dropped}
    full.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=full, capture_output=True, text=True, timeout=120,
    )


def test_production_needs_secret_key(tmp_path: Path) -> None:
    result = _check({"DEBUG": "0", "VAR_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG=0" in result.stderr


def test_bad_database_url_names_the_variable(tmp_path: Path) -> None:
    result = _check({"DATABASE_URL": "nonsense://", "VAR_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "DATABASE_URL='nonsense://'" in result.stderr


def test_check_deploy_is_clean_in_production(tmp_path: Path) -> None:
    result = _check(
        {"DEBUG": "0", "SECRET_KEY": "k" * 60 + "Zq9!x", "ALLOWED_HOSTS": "corpus.example.org", "VAR_DIR": str(tmp_path)}
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert "no issues" in result.stdout


@pytest.mark.django_db
def test_api_docs_use_local_swagger_files(client_for, researcher) -> None:  # type: ignore[no-untyped-def]
    html = client_for(researcher).get("/api/docs/").content.decode()
    assert "swagger-ui-bundle.js" in html
    assert "cdn." not in html and "//unpkg" not in html and "jsdelivr" not in html


def test_the_wsgi_entry_point_freezes_its_start_up_objects() -> None:
    """Full collections then skip the ~200k objects of start-up (0.2-0.7 s per collection under
    load at full size, docs/scale.md); the URLconf is loaded before the freeze."""
    import gc
    import importlib

    import config.wsgi

    try:
        gc.unfreeze()
        importlib.reload(config.wsgi)
        assert gc.get_freeze_count() > 10_000
        assert callable(config.wsgi.application)
        from django.urls import get_resolver

        assert get_resolver()._populated  # type: ignore[attr-defined]  # the reverse() tables of the {% url %} tags, built at start-up
    finally:
        gc.unfreeze()


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL (CI sets it)")
def test_redis_cache_reuses_one_client_and_sessions_read_from_it() -> None:
    """Production's cache keeps one redis client per pool (Django builds one per call) and still
    behaves as Django's; sessions go through it and are written through to the database."""
    from django.conf import settings
    from django.core.cache import caches

    from config.redis_cache import RedisCache

    cache = caches["default"]

    assert isinstance(cache, RedisCache)
    assert settings.SESSION_ENGINE == "django.contrib.sessions.backends.cached_db"
    client = cache._cache.get_client("k")
    assert cache._cache.get_client("other", write=True) is client
    cache.set("config-test-key", {"a": 1}, 30)
    assert cache.get("config-test-key") == {"a": 1}
    assert cache.add("config-test-key-n", 1, 30)
    assert cache.incr("config-test-key-n", 2) == 3
    cache.delete_many(["config-test-key", "config-test-key-n"])
    assert cache.get("config-test-key") is None


@pytest.mark.django_db
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL (CI sets it)")
def test_cached_sessions_survive_a_cache_flush() -> None:
    from django.contrib.sessions.backends.cached_db import SessionStore
    from django.contrib.sessions.models import Session
    from django.core.cache import cache

    store = SessionStore()
    store["who"] = "annotator"
    store.create()
    assert Session.objects.filter(session_key=store.session_key).exists()  # written through
    cache.delete(store.cache_key)  # Redis lost it (flush, eviction, restart)
    assert SessionStore(store.session_key).load()["who"] == "annotator"  # read back from the database
    assert cache.get(store.cache_key) is not None  # and cached again
