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
from curation.tests.corpus_builder import build_corpus
from pipeline.exports.run import create_export, run_export
from pipeline.models import AlignmentRun, ExportedDataset, Job
from pipeline.services.corpus_stats import corpus_table
from pipeline.tests.export_factory import LEVELS, LINKS_01, LINKS_12, make_corpus, make_run, params, sentence

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


def _touches_predictions(queries: list[dict[str, Any]]) -> bool:
    return any("curation_predictedalignment" in q["sql"] for q in queries)


def test_a_runs_statistics_are_stored_once_and_recomputed_when_the_corpus_changes() -> None:
    corpus = make_corpus(n_articles=2)
    run = make_run(corpus)  # a run without stored statistics (as runs from before they were stored)
    with CaptureQueriesContext(connection) as lazy:
        first = corpus_table(corpus, f"run:{run.pk}")
    assert _touches_predictions(lazy.captured_queries)
    run.refresh_from_db()
    assert run.stats["labelled_pairs"] == first["labelled_pairs"] == 4
    with CaptureQueriesContext(connection) as stored:
        again = corpus_table(corpus, f"run:{run.pk}")
    assert again == first and not _touches_predictions(stored.captured_queries)
    # an import into the corpus changes its documents: the stored part is recomputed, the new pairs counted
    build_corpus("Demo", {"art900": LEVELS})
    with CaptureQueriesContext(connection) as changed:
        after = corpus_table(corpus, f"run:{run.pk}")
    assert _touches_predictions(changed.captured_queries)
    assert after["totals"]["pairs"] == first["totals"]["pairs"] + 2
    assert after["rows"][0]["phenomena"] == first["rows"][0]["phenomena"]  # the run's predictions did not change
    with pytest.raises(ValueError, match="no such run"):
        corpus_table(make_corpus(name="Other", n_articles=1), f"run:{run.pk}")


def test_stored_statistics_equal_a_recount() -> None:
    corpus = make_corpus(n_articles=3)
    run = make_run(corpus)
    add_reference(corpus)
    stored = corpus_table(corpus, f"run:{run.pk}")
    AlignmentRun.objects.filter(pk=run.pk).update(stats={})
    assert corpus_table(corpus, f"run:{run.pk}") == stored
    reference = corpus_table(corpus, "reference")
    assert {r["levels"]: r["pairs"] for r in reference["rows"]} == {"0-1": 3, "1-2": 3}
    assert reference["totals"]["complex_sentences"] == sum(r["complex_sentences"] for r in reference["rows"])


def test_corpus_page_query_count_does_not_grow_with_runs(client_for: Any, researcher: Any,
                                                         django_assert_max_num_queries: Any) -> None:
    corpus = make_corpus(n_articles=1)
    url = reverse("curation:corpus_detail", args=[corpus.pk])
    run = make_run(corpus)
    AlignmentRun.objects.filter(pk=run.pk).update(prediction_count=1234, job=Job.objects.create(kind=Job.Kind.ALIGN_CORPUS))
    client = client_for(researcher)
    client.get(url)  # warm the session and role caches
    with CaptureQueriesContext(connection) as one_run:
        body = client.get(url).content.decode()
    assert "1,234 predictions" in body or "1234 predictions" in body
    for _ in range(6):
        extra = make_run(corpus)
        AlignmentRun.objects.filter(pk=extra.pk).update(job=Job.objects.create(kind=Job.Kind.ALIGN_CORPUS))
    with django_assert_max_num_queries(len(one_run.captured_queries)):
        body = client.get(url).content.decode()
    assert body.count("run #") == 5
    assert not _touches_predictions(one_run.captured_queries)


def test_the_corpus_part_is_cached_until_the_corpus_changes() -> None:
    corpus = make_corpus(n_articles=2)
    first = corpus_table(corpus, "reference")
    with CaptureQueriesContext(connection) as cached:
        assert corpus_table(corpus, "reference") == first
    assert not any("curation_sentence" in q["sql"] and "GROUP BY" in q["sql"] for q in cached.captured_queries)
    build_corpus("Demo", {"art900": LEVELS})
    assert corpus_table(corpus, "reference")["totals"]["pairs"] == first["totals"]["pairs"] + 2
