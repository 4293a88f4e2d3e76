"""Annotation tests use an in-memory cache so answer throttling never leaks between tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _local_cache(settings):  # type: ignore[no-untyped-def]
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "annotation-tests"}}
    from django.core.cache import cache

    cache.clear()
