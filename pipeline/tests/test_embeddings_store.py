"""The product keeps the aligner's sentence embeddings on disk, shared by workers and runs."""

from __future__ import annotations

from django.conf import settings

from alignment_engine import semantic


def test_the_pipeline_points_the_engine_at_the_embeddings_cache() -> None:
    assert semantic._STORE is not None
    assert semantic._STORE.path == settings.EMBEDDINGS_CACHE
    assert semantic.shared_encoder().store is semantic._STORE
