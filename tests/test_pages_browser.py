"""Headless Chromium over the researcher's and admin's pages, as a person would use them, with
axe-core on every page (0 serious or critical violations).

Screenshots go to $ARTIFACTS_DIR (default artifacts/): pages-<role>-<name>.png, pair-keyboard.png,
start-advanced.png.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from alignment_engine import model_store
from annotation.models import CandidatePair, VerifiedLabel
from curation.models import DocumentPair, ReferenceAlignment
from pipeline import jobs
from pipeline.exports.run import create_export, run_export
from pipeline.models import Job, ModelVersion, RunChunk
from pipeline.tests.export_factory import make_corpus, make_run, sentence
from tests.browser import assert_accessible, axe_available, axe_violations, describe_violations, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

METRICS = {
    "dev": {"task1": {"precision": 0.91, "recall": 0.84, "f1": 0.874}, "task2": {"precision": 0.8, "recall": 0.7, "f1": 0.747},
            "counts": {"gold_positive_pairs": 40}},
    "test": {"task1": {"precision": 0.88, "recall": 0.82, "f1": 0.849}, "task2": {"precision": 0.75, "recall": 0.62, "f1": 0.679},
             "counts": {"gold_positive_pairs": 55}},
}
COUNTS = {"train": {"articles": 7, "pairs": 14, "labels": 320, "aligned": 120, "partialAligned": 30, "notAligned": 170},
          "dev": {"articles": 1, "pairs": 2, "labels": 45, "aligned": 16, "partialAligned": 4, "notAligned": 25},
          "test": {"articles": 2, "pairs": 4, "labels": 80, "aligned": 30, "partialAligned": 6, "notAligned": 44}}


def build_site(exports_dir: Path) -> dict[str, Any]:
    """A corpus with candidates, a verified label, reference alignments, a finished alignment run with
    its chunks, two retrained models and a baseline, a retrain job, and a finished Auto export."""
    corpus = make_corpus("Newsela sample", n_articles=3)
    pair = DocumentPair.objects.get(pair_id="art000.0_1")
    run = make_run(corpus, method="crf")
    align = jobs.create_job(Job.Kind.ALIGN_CORPUS, {"method": "crf", "chunk_size": 2}, corpus=corpus, total=3)
    jobs.start(align.pk, total=3)
    run.job = align
    run.save(update_fields=["job"])
    started = Job.objects.get(pk=align.pk).started_at
    for i in range(3):
        RunChunk.objects.create(run=run, index=i, pair_ids=[], status="done", attempts=1, worker="embedded@vm:42",  # type: ignore[misc]
                                started_at=started, finished_at=started + timedelta(seconds=4 * (i + 1)))  # type: ignore[operator]
        jobs.set_progress(align.pk, i + 1, message=f"{i + 1}/3 chunks")
    jobs.finish(align.pk, result={"predictions": 42, "run": run.pk}, message="3 chunks aligned")
    ReferenceAlignment.objects.create(pair=pair, simple=sentence(pair, 0, 0, 0), complex=sentence(pair, 1, 0, 0), label="aligned")
    ReferenceAlignment.objects.create(pair=pair, simple=sentence(pair, 0, 0, 2), complex=sentence(pair, 1, 0, 1), label="aligned")
    cand = CandidatePair.objects.create(pair=pair, simple=sentence(pair, 0, 1, 0), complex=sentence(pair, 1, 1, 0), score=0.61)
    VerifiedLabel.objects.create(candidate=cand, label="notAligned")
    CandidatePair.objects.create(pair=pair, simple=sentence(pair, 0, 0, 0), complex=sentence(pair, 1, 0, 0), score=0.83)
    retrain = jobs.create_job(Job.Kind.RETRAIN, {"language": "en", "seed": 0, "ratios": [0.7, 0.1, 0.2], "config": {}},
                              corpus=corpus, total=100)
    jobs.start(retrain.pk, total=100)
    older_dir = exports_dir.parent / "models" / "en-a"  # a model directory whose model.json says what trained it
    older_dir.mkdir(parents=True, exist_ok=True)
    member = {"task1": {"precision": 0.81, "recall": 0.74, "f1": 0.7637}}  # and that it is a seed ensemble of three
    (older_dir / "model.json").write_text(json.dumps({
        "format_version": 2, "kind": "crf", "environment": model_store.environment(),
        "dev_metrics": {"task1": {"precision": 0.808, "recall": 0.761, "f1": 0.7834}},
        "ensemble": {"members": 3, "seeds": [0, 1, 2], "workers": 2, "seconds": 1080.0,
                     "member_dev_metrics": [member, member, {"task1": {"f1": 0.7875}}]}}))
    older = ModelVersion.objects.create(name="crf Newsela sample seed 0", method="crf", path=str(older_dir), metrics=METRICS,
                                        data_counts=COUNTS, config={"train": {}, "ratios": [0.7, 0.1, 0.2]})
    newer = ModelVersion.objects.create(
        name=f"crf Newsela sample seed 1 (job {retrain.pk})", method="crf", path="/models/en-b", job=retrain,
        metrics={"dev": {}, "test": {}}, data_counts=COUNTS | {"dev": {"articles": 0, "pairs": 0}, "test": {"articles": 0, "pairs": 0}},
        config={"train": {"crf_epochs": 30}, "ratios": [1, 0, 0], "splits": {"train": ["art000", "art001", "art002"]}},
    )
    ModelVersion.objects.filter(pk=older.pk).update(created_at=timezone.now() - timedelta(days=2))
    ModelVersion.objects.create(name="jaccard (baseline, Newsela sample)", method="jaccard", path="", metrics=METRICS,
                                data_counts=COUNTS)
    jobs.finish(retrain.pk, result={"model_version": newer.pk, "metrics": newer.metrics, "data_counts": newer.data_counts},
                message=f"registered {newer.name}")
    dataset = create_export(corpus.pk, "auto", {"format": "tsv", "splits": "2/1/0", "seed": 0, "filters": {"identical": {}}},
                            run_id=run.pk)
    run_export(dataset.pk)
    return {"corpus": corpus, "pair": pair, "run": run, "align": align, "retrain": retrain, "older": older, "newer": newer,
            "dataset": dataset}


@pytest.fixture
def site(settings: Any, tmp_path: Path) -> dict[str, Any]:
    settings.EXPORTS_DIR = tmp_path / "exports"
    settings.EXPORTS_DIR.mkdir()
    return build_site(settings.EXPORTS_DIR)


def visit(page: Any, url: str, name: str, problems: list[str]) -> None:
    """Open, check with axe-core and the console (problems collected, so one run names every page's), screenshot."""
    errors: list[str] = []

    def on_console(message: Any) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", on_console)
    response = page.goto(url)
    assert response is not None and response.status == 200, f"{url}: HTTP {response.status if response else '?'}"
    if not axe_available():
        pytest.skip("axe-core not installed (scripts/ensure_chromium.sh installs it)")
    found = axe_violations(page)
    if found:
        problems.append(f"{url}:\n{describe_violations(found)}")
    page.wait_for_timeout(100)
    if errors:  # e.g. a Content-Security-Policy refusal of an inline script or style
        problems.append(f"{url}: console errors: {errors}")
    page.remove_listener("console", on_console)
    screenshot(page, f"pages-{name}.png")


def test_every_page_of_each_role_is_accessible(browser_page, live_server, make_user, site) -> None:  # type: ignore[no-untyped-def]
    base = live_server.url
    problems: list[str] = []
    c, pair, dataset = site["corpus"], site["pair"], site["dataset"]
    researcher = make_user("rita", "researcher")
    second = make_run(c, method="crf")  # a second run that drops one link and adds one: the diff page has rows
    from pipeline.models import PredictedAlignment

    PredictedAlignment.objects.filter(run=second, pair=pair).order_by("pk").first().delete()  # type: ignore[union-attr]
    PredictedAlignment.objects.create(run=second, pair=pair, simple=sentence(pair, 0, 0, 1), complex=sentence(pair, 1, 1, 0),
                                      label="aligned", score=0.6)
    researcher_pages = {
        "home": "/", "corpora": "/corpora/", "corpus": f"/corpora/{c.pk}/", "article": f"/articles/{pair.article_id}/",
        "pair": f"/pairs/{pair.pk}/", "jobs": "/jobs/", "start": f"/jobs/start/?corpus={c.pk}",
        "job-align": f"/jobs/{site['align'].pk}/", "job-retrain": f"/jobs/{site['retrain'].pk}/", "models": "/models/",
        "model": f"/models/{site['older'].pk}/", "model-empty": f"/models/{site['newer'].pk}/", "stats": f"/corpora/{c.pk}/stats/",
        "labeling": "/annotate/", "agreement": "/annotate/stats/",
        "diff": f"/models/diff/?corpus={c.pk}&a={site['run'].pk}&b={second.pk}",
    }
    page = browser_page(researcher)
    for name, url in researcher_pages.items():
        visit(page, base + url, f"researcher-{name}", problems)
    page.goto(base + researcher_pages["model"])
    card = page.locator("section.card", has=page.get_by_role("heading", name="Seed ensemble"))
    assert card.is_visible() and "member 2 (seed 2) alone" in card.inner_text() and "78.8" in card.inner_text()
    verifier = make_user("vera", "verifier")
    page = browser_page(verifier)
    for name, url in {"home": "/", "correct": "/annotate/correct/", "verify": "/annotate/verify/"}.items():
        visit(page, base + url, f"verifier-{name}", problems)
    admin = make_user("adam", "admin")
    page = browser_page(admin)
    for name, url in {"home": "/", "exports": f"/exports/?corpus={c.pk}", "export": f"/exports/{dataset.pk}/",
                      "import": "/import/"}.items():
        visit(page, base + url, f"admin-{name}", problems)
    annotator = make_user("anna", "annotator")
    page = browser_page(annotator)
    visit(page, base + "/annotate/", "annotator-labeling", problems)
    anonymous = page.context.browser.new_context().new_page()
    visit(anonymous, base + "/login/", "login", problems)
    assert not problems, "serious or critical accessibility violations:\n" + "\n".join(problems)


def test_pair_page_compares_sources_with_keyboard_and_run_selector(browser_page, live_server, make_user, site) -> None:  # type: ignore[no-untyped-def]
    from pipeline.models import AlignmentRun, PredictedAlignment

    pair = site["pair"]
    other = AlignmentRun.objects.create(corpus=site["corpus"], method="jaccard")
    PredictedAlignment.objects.create(run=other, pair=pair, simple=sentence(pair, 0, 1, 0), complex=sentence(pair, 1, 1, 0),
                                      label="partialAligned", score=0.33)
    page = browser_page(make_user("vera", "verifier"), height=1000)
    page.goto(f"{live_server.url}/pairs/{pair.pk}/?run={site['run'].pk}")
    assert page.locator(".sid").first.is_hidden()  # ids behind the toggle
    page.locator("#toggle-sids").check()
    assert page.locator(".sid").first.is_visible()
    rows = page.locator(".pa-row")
    assert rows.count() == 4 and page.locator(".pa-row.disagree").count() >= 1
    page.keyboard.press("j")
    page.keyboard.press("j")
    second = rows.nth(1)
    assert "current" in (second.get_attribute("class") or "")
    complex_id = second.get_attribute("data-complex")
    assert "hot" in (page.locator(f"#{complex_id}").get_attribute("class") or "")
    page.keyboard.press("k")
    assert "current" in (rows.nth(0).get_attribute("class") or "")
    screenshot(page, "pair-keyboard.png")
    assert_accessible(page, "pair page with the ids shown")
    page.keyboard.press("r")
    assert page.evaluate("document.activeElement.id") == "pa-run"
    with page.expect_navigation():
        page.select_option("#pa-run", str(other.pk))
    assert re.search(rf"run={other.pk}", page.url)
    assert page.locator(".pa-row").count() == 3 and "0.330" in page.locator(".pa-table").inner_text()
    page.reload()
    assert page.locator(".sid").first.is_visible()  # the toggle is remembered


def test_start_form_folds_advanced_settings_and_carries_the_corpus(browser_page, live_server, make_user, site) -> None:  # type: ignore[no-untyped-def]
    from alignment_engine.crf_config import CRFConfig

    page = browser_page(make_user("rita", "researcher"), height=1100)
    page.goto(f"{live_server.url}/jobs/start/?corpus={site['corpus'].pk}")
    for form in ("prepopulate", "align", "retrain"):
        assert page.locator(f"#{form}-corpus").input_value() == str(site["corpus"].pk)
    assert page.get_by_label("CRF epochs").is_hidden()  # folded away
    page.locator("#form-retrain details.advanced summary").click()
    epochs = page.get_by_label("CRF epochs")
    assert epochs.is_visible() and epochs.input_value() == str(CRFConfig().crf_epochs)
    screenshot(page, "start-advanced.png")
    assert_accessible(page, "start page with advanced settings open")
    with page.expect_navigation():
        page.locator("#form-retrain button[type=submit]").click()
    job = Job.objects.filter(kind=Job.Kind.RETRAIN).order_by("-pk").first()
    assert job is not None and job.params["config"] == {} and page.url.endswith(f"/jobs/{job.pk}/")
    # the flash message can be dismissed
    message = page.locator(".messages .msg").first
    assert "Started" in message.inner_text()
    message.locator(".msg-close").click()
    page.wait_for_function("() => !document.querySelector('.messages .msg')", timeout=5_000)


def test_too_fast_notice_counts_down_with_the_timer(browser_page, live_server, make_user) -> None:  # type: ignore[no-untyped-def]
    from annotation.tests.factories import make_job

    job = make_job(min_seconds=6, every=0)
    page = browser_page(make_user("anna", "annotator"))
    page.goto(f"{live_server.url}/annotate/jobs/{job.pk}/label/")
    page.wait_for_function("() => document.getElementById('lab').dataset.ready === '1'")
    page.keyboard.press("1")
    notice = page.locator("#lab-notice")
    notice.wait_for(state="visible")
    first = int(re.search(r"in (\d+) s", notice.inner_text()).group(1))  # type: ignore[union-attr]
    page.wait_for_function(f"() => /in [0-{max(first - 2, 0)}] s/.test(document.getElementById('lab-notice').textContent)"
                           f" || /answer now/.test(document.getElementById('lab-notice').textContent)", timeout=8_000)
    page.wait_for_function("() => /You can answer now/.test(document.getElementById('lab-notice').textContent)", timeout=10_000)
    assert_accessible(page, "labeling page with the notice")
