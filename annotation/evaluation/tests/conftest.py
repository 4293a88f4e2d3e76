"""Evaluation tests share the annotation tests' in-memory cache (throttle counters never leak)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _local_cache(settings):  # type: ignore[no-untyped-def]
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "evaluation-tests"}}
    from django.core.cache import cache

    cache.clear()
