"""Statistics pages (Table 1 per corpus, Table 4 per export) and the export pages: roles,
creating an export from the browser, progress polling, streamed downloads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from curation.models import DocumentPair, ReferenceAlignment
from pipeline.exports.run import create_export, run_export
from pipeline.models import ExportedDataset, Job
from pipeline.services.corpus_stats import corpus_table
from pipeline.tests.export_factory import LINKS_01, LINKS_12, make_corpus, make_run, params, sentence

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def exports_dir(settings: Any, tmp_path: Path) -> Path:
    settings.EXPORTS_DIR = tmp_path / "exports"
    settings.EXPORTS_DIR.mkdir()
    return settings.EXPORTS_DIR


@pytest.fixture
def eager() -> Any:
    from config.celery import app

    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = False


def add_reference(corpus: Any) -> None:
    for pair in DocumentPair.objects.filter(corpus=corpus).select_related("complex", "simple"):
        links = LINKS_01 if pair.complex.level == 0 else LINKS_12
        for (cp, cs), (sp, ss), label in links:
            ReferenceAlignment.objects.create(pair=pair, simple=sentence(pair, 0, sp, ss), complex=sentence(pair, 1, cp, cs), label=label)


def test_corpus_table_counts_sentences_tokens_and_phenomena() -> None:
    corpus = make_corpus(n_articles=2)
    add_reference(corpus)
    table = corpus_table(corpus, "reference")
    rows = {r["levels"]: r for r in table["rows"]}
    assert list(rows) == ["0-1", "1-2"]
    assert rows["0-1"]["pairs"] == 2
    assert rows["0-1"]["complex_sentences"] == 2 * 4 and rows["0-1"]["simple_sentences"] == 2 * 4
    assert rows["1-2"]["simple_sentences"] == 2 * 3
    assert rows["0-1"]["aligned_pairs"] == 2 * 4
    assert rows["0-1"]["phenomena"] == {"rephrasing": 2, "copying": 2, "splitting": 2, "merging": 0, "fusion": 0, "deletion": 2}
    assert rows["1-2"]["phenomena"]["rephrasing"] == 6 and rows["1-2"]["phenomena"]["deletion"] == 2
    assert rows["0-1"]["avg_complex_tokens"] > rows["1-2"]["avg_simple_tokens"]
    run = make_run(corpus)
    assert corpus_table(corpus, f"run:{run.pk}")["rows"][0]["phenomena"] == rows["0-1"]["phenomena"]


def test_corpus_table_queries_do_not_grow_with_document_pairs(django_assert_max_num_queries: Any) -> None:
    small, large = make_corpus(n_articles=1), make_corpus(name="Large", n_articles=4)
    add_reference(small)
    add_reference(large)
    with CaptureQueriesContext(connection) as few:
        corpus_table(small, "reference")
    with django_assert_max_num_queries(len(few.captured_queries)):
        table = corpus_table(large, "reference")
    assert table["labelled_pairs"] == 4 * 2


def test_corpus_stats_page_for_researchers_only(client_for: Any, researcher: Any, verifier: Any) -> None:
    corpus = make_corpus(n_articles=1)
    add_reference(corpus)
    url = reverse("pipeline:corpus_stats", args=[corpus.pk])
    response = client_for(researcher).get(url)
    assert response.status_code == 200
    body = response.content.decode()
    assert "splitting" in body and "Aligned groups" in body
    assert client_for(verifier).get(url).status_code == 403


def test_exports_page_is_admin_only(client_for: Any, researcher: Any) -> None:
    assert client_for(researcher).get(reverse("pipeline:export_list")).status_code == 403


def test_admin_creates_an_export_follows_it_and_downloads_files(
    client_for: Any, admin_user: Any, researcher: Any, eager: Any, django_capture_on_commit_callbacks: Any
) -> None:
    corpus = make_corpus(n_articles=3)
    run = make_run(corpus)
    client = client_for(admin_user)
    page = client.get(reverse("pipeline:export_list") + f"?corpus={corpus.pk}")
    assert page.status_code == 200 and "New export" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(reverse("pipeline:export_list"), {
            "corpus": corpus.pk, "kind": "auto", "format": "jsonl", "run": run.pk, "splits": "35/5/10", "seed": 0,
            "f_identical": "on", "gleu_min": 0.1, "gleu_max": 0.9, "flesch_min_gain": 10, "bisect_min_overlap": 0.25,
            "bisect_min_bertscore": 0.4, "synthetic_ratio": 0,
        })
    assert len(callbacks) == 1  # enqueued on commit
    dataset = ExportedDataset.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("pipeline:export_detail", args=[dataset.pk])
    assert dataset.job is not None and dataset.job.kind == Job.Kind.EXPORT
    dataset.refresh_from_db()
    assert dataset.files, "the eager task ran on commit"
    assert dataset.card["filters"][0]["name"] == "identical" and dataset.card["filters"][0]["removed"] == 3
    detail = client.get(reverse("pipeline:export_detail", args=[dataset.pk]))
    body = detail.content.decode()
    assert "train.jsonl" in body and "Table 4" in body and "identical" in body
    partial = client.get(reverse("pipeline:export_detail", args=[dataset.pk]), HTTP_HX_REQUEST="true")
    assert partial.content.decode().lstrip().startswith('<div id="export-status"')
    assert "hx-trigger" not in partial.content.decode()  # finished: no more polling
    download = client.get(reverse("pipeline:export_download", args=[dataset.pk, "train.jsonl"]))
    assert download.status_code == 200 and download.streaming
    content = b"".join(download.streaming_content)
    assert content == (Path(dataset_folder(dataset)) / "train.jsonl").read_bytes()
    assert client.get(reverse("pipeline:export_download", args=[dataset.pk, "..secret"])).status_code == 404
    assert client.get(reverse("pipeline:export_download", args=[dataset.pk, "nope.jsonl"])).status_code == 404
    assert client_for(researcher).get(reverse("pipeline:export_download", args=[dataset.pk, "train.jsonl"])).status_code == 403
    assert client_for(researcher).get(reverse("pipeline:export_stats", args=[dataset.pk])).status_code == 200


def dataset_folder(dataset: ExportedDataset) -> str:
    from django.conf import settings

    return str(Path(settings.EXPORTS_DIR) / dataset.path)


def test_running_export_page_polls(client_for: Any, admin_user: Any) -> None:
    corpus = make_corpus(n_articles=1)
    run = make_run(corpus)
    dataset = create_export(corpus.pk, "auto", params(), run_id=run.pk)  # not run: job stays queued
    body = client_for(admin_user).get(reverse("pipeline:export_detail", args=[dataset.pk])).content.decode()
    assert 'hx-trigger="every 1s"' in body
    run_export(dataset.pk)
    body = client_for(admin_user).get(reverse("pipeline:export_detail", args=[dataset.pk])).content.decode()
    assert 'hx-trigger="every 1s"' not in body


def test_auto_export_form_needs_a_run_of_the_same_corpus(client_for: Any, admin_user: Any) -> None:
    corpus = make_corpus("A", n_articles=1)
    other = make_corpus("B", n_articles=1)
    run = make_run(other)
    response = client_for(admin_user).post(reverse("pipeline:export_list"), {
        "corpus": corpus.pk, "kind": "auto", "format": "tsv", "run": run.pk, "splits": "35/5/10", "seed": 0,
        "gleu_min": 0.1, "gleu_max": 0.9, "flesch_min_gain": 10, "bisect_min_overlap": 0.25, "bisect_min_bertscore": 0.4,
        "synthetic_ratio": 0,
    })
    assert response.status_code == 200 and "another corpus" in response.content.decode()
    assert not ExportedDataset.objects.exists()
