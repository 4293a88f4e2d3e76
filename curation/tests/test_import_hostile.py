"""Hostile input to the importers (issue 10 finding 8): every case is refused with
``file:line: problem`` and leaves the database exactly as it was."""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from curation.importers.reading import MAX_LINE_BYTES
from curation.importers.run import run_import
from curation.importers.types import ImportFailed
from curation.models import Article, ReferenceAlignment
from curation.tests.conftest import options, row_counts

PAIR = {"pair_id": "p1", "complex": [["The cat sat on the mat."]], "simple": [["The cat sat."]]}


def refused(path: Path, **kwargs: object) -> ImportFailed:
    fmt = str(kwargs.pop("fmt", "jsonl"))
    before = row_counts()
    with pytest.raises(ImportFailed) as info:
        run_import(path, options(fmt, **kwargs))  # type: ignore[arg-type]
    assert row_counts() == before
    return info.value


@pytest.mark.django_db
def test_random_binary_as_text_is_refused_not_decoded(write_file):
    rng = random.Random(7)
    data = bytes(rng.randrange(256) for _ in range(20_000))
    write_file("up/a.en.0.txt", "A fine first level.\n")
    write_file("up/a.en.1.txt", data)
    exc = refused(Path(write_file("up/a.en.0.txt", "A fine first level.\n")).parent, fmt="text")
    assert exc.path.endswith("a.en.1.txt") and exc.line is not None
    assert "binary file, not text" in exc.problem or "not text" in exc.problem
    assert Article.objects.count() == 0


@pytest.mark.django_db
def test_control_characters_in_text_name_their_line(write_file):
    write_file("t/b.en.0.txt", "First line.\nSecond line.\n")
    write_file("t/b.en.1.txt", "Good line.\nBad \x07 bell.\n")
    exc = refused(write_file("t/b.en.0.txt", "First line.\nSecond line.\n").parent, fmt="text")
    assert (Path(exc.path).name, exc.line) == ("b.en.1.txt", 2) and "U+0007" in exc.problem


@pytest.mark.django_db
def test_nul_in_a_text_file_names_its_line(write_file):
    write_file("n/c.en.0.txt", "One.\nTwo.\n")
    write_file("n/c.en.1.txt", b"One.\nTw\x00o.\n")
    exc = refused(write_file("n/c.en.0.txt", "One.\nTwo.\n").parent, fmt="text")
    assert (Path(exc.path).name, exc.line) == ("c.en.1.txt", 2) and "NUL byte" in exc.problem


@pytest.mark.django_db
@pytest.mark.parametrize("score", ["nan", "inf", "-inf", "NaN", "Infinity"])
def test_tsv_score_nan_or_inf_is_refused(write_file, score):
    run_import(write_file("p.jsonl", json.dumps(PAIR) + "\n"), options("jsonl"))
    path = write_file("g.tsv", f"aligned\tp1-0-0-0\tp1-1-0-0\ta\tb\t0.5\naligned\tp1-0-0-0\tp1-1-0-0\ta\tb\t{score}\n")
    exc = refused(path, fmt="tsv")
    assert exc.line == 2 and "is not a finite number" in exc.problem
    assert ReferenceAlignment.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(("corpus", "problem"), [("C" * 250, "corpus name has 250 characters; at most 200"),
                                                 ("bad\x00name", "corpus name: a NUL byte"), ("  ", "corpus name: is empty")])
def test_corpus_name_is_checked_before_anything_is_written(write_file, corpus, problem):
    exc = refused(write_file("p.jsonl", json.dumps(PAIR) + "\n"), corpus=corpus)
    assert problem in str(exc)


@pytest.mark.django_db
def test_an_over_long_line_fails_fast(write_file):
    path = write_file("big.jsonl", b"[" + b" " * (MAX_LINE_BYTES + 10) + b"]\n")
    started = time.monotonic()
    exc = refused(path)
    assert exc.line == 1 and "line longer than" in exc.problem
    assert time.monotonic() - started < 10


@pytest.mark.django_db
@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize(("fmt", "problem"), [("jsonl", "line longer than 16 MiB"), ("tsv", "line longer than 16 MiB"),
                                              ("text", "file name matches neither"), ("deplain", "expected a plan_doc")])
def test_dev_zero_fails_fast_with_a_clear_error(fmt, problem):
    before = row_counts()
    started = time.monotonic()
    with pytest.raises(CommandError) as info:
        call_command("import_corpus", "/dev/zero", "--format", fmt, "--corpus", "Z")
    assert time.monotonic() - started < 10
    assert f"nothing was written: /dev/zero:1: {problem}" in str(info.value) or f"/dev/zero: {problem}" in str(info.value)
    assert row_counts() == before


@pytest.mark.django_db
def test_error_in_a_late_batch_rolls_back_the_earlier_batches(write_file, monkeypatch):
    from curation.importers import run

    def line(i: int, text: str = "of the complex side") -> str:
        return json.dumps(dict(PAIR, pair_id=f"p{i}", complex=[[f"Sentence number {i} {text}."]], simple=[[f"Simple {i}."]]))

    run_import(write_file("seed.jsonl", line(5, "as it was before") + "\n"), options("jsonl"))
    monkeypatch.setattr(run, "ARTICLE_BATCH", 2)
    exc = refused(write_file("many.jsonl", "\n".join(line(i) for i in range(7)) + "\n"))
    assert exc.path == "many.jsonl:6" and "already exists" in exc.problem
    assert Article.objects.count() == 1
