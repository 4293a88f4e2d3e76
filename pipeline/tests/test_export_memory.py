"""Constant memory: writers and the export service stream; peak memory does not grow with rows."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alignment_engine.ids import COMPLEX, SIMPLE, sentence_id
from pipeline.exports.run import create_export, run_export
from pipeline.exports.writers import ROW_COLUMNS, columns, open_alignment_writer
from pipeline.tests.export_factory import bulk_predictions, make_corpus


def rows(n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {
            "label": "aligned", "simple_id": sentence_id(f"p{i // 100}", SIMPLE, 0, i % 100),
            "complex_id": sentence_id(f"p{i // 100}", COMPLEX, 0, i % 100),
            "simple": f"Simple sentence number {i}.", "complex": f"The complex sentence number {i}, which is longer.",
            "score": 0.5 + (i % 7) / 100, "pair_id": f"p{i // 100}", "article": f"a{i // 300}", "complex_level": 0,
            "simple_level": 1, "split": "train", "phenomenon": "rephrasing", "group_shape": "1-1",
            "split_category": None, "synthetic": False,
        }


def peak_of_writing(fmt: str, n: int, path: Path) -> int:
    tracemalloc.start()
    try:
        writer = open_alignment_writer(fmt, path, ROW_COLUMNS, batch_size=2000)
        for row in rows(n):
            writer.write(row)
        info = writer.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info["rows"] == n
    return peak


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["tsv", "jsonl", "parquet"])
def test_writer_peak_memory_does_not_grow_with_rows(fmt: str, tmp_path: Path) -> None:
    small = peak_of_writing(fmt, 6_000, tmp_path / f"small.{fmt}")
    big = peak_of_writing(fmt, 60_000, tmp_path / f"big.{fmt}")
    # 10x the rows: the peak stays within 1.5x (+256 KiB slack), far below what holding the rows would need
    print(fmt, small, big)
    assert big < 1.5 * small + 256 * 1024, (small, big)
    assert (tmp_path / f"big.{fmt}").stat().st_size > 5 * (tmp_path / f"small.{fmt}").stat().st_size


def test_writer_columns_helper() -> None:
    cols = columns("a", ("b", "int"))
    assert [(c.name, c.type) for c in cols] == [("a", "str"), ("b", "int")]


def peak_of_export(corpus_id: int, run_id: int, fmt: str) -> tuple[int, int]:
    dataset = create_export(corpus_id, "auto", {"format": fmt, "splits": "35/5/10", "chunk_size": 2000, "batch_size": 2000},
                            run_id=run_id)
    tracemalloc.start()
    try:
        run_export(dataset.pk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    dataset.refresh_from_db()
    return peak, dataset.card["counts"]["rows"]


@pytest.mark.slow
@pytest.mark.django_db
def test_export_service_streams_from_the_database(settings: Any, tmp_path: Path) -> None:
    settings.EXPORTS_DIR = tmp_path
    small_corpus = make_corpus("small", n_articles=0)
    big_corpus = make_corpus("big", n_articles=0)
    small_run = bulk_predictions(small_corpus, 2_000)
    big_run = bulk_predictions(big_corpus, 20_000)
    for fmt in ("jsonl", "parquet"):
        small_peak, small_rows = peak_of_export(small_corpus.pk, small_run.pk, fmt)
        big_peak, big_rows = peak_of_export(big_corpus.pk, big_run.pk, fmt)
        assert (small_rows, big_rows) == (2_000, 20_000)
        # rows held at once are bounded by chunk_size / batch_size, not by the 10x larger run
        print(fmt, small_peak, big_peak)
        assert big_peak < 2 * small_peak + 512 * 1024, (fmt, small_peak, big_peak)
