"""Headless Chromium: the jobs page's live progress bars poll while a job runs and stop after.

Screenshot: $ARTIFACTS_DIR/jobs.png (default artifacts/).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from curation import jobs
from curation.models import Job

ARTIFACTS = Path(os.environ.get("ARTIFACTS_DIR", "artifacts"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(live_server, researcher, monkeypatch):  # type: ignore[no-untyped-def]
    # Playwright's sync API runs an event loop; allow the ORM in this test only (never at import:
    # the variable would leak into other tests' subprocesses, e.g. `check --deploy`).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    chromium = shutil.which("chromium")
    if not chromium:
        pytest.skip("Debian's chromium is not installed (scripts/ensure_chromium.sh installs it); browser test skipped")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright for Python is not installed")
    client = Client()
    client.force_login(researcher)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1360, "height": 800})
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME,
                              "value": client.cookies[settings.SESSION_COOKIE_NAME].value, "url": live_server.url}])
        yield context.new_page()
        browser.close()


def test_progress_bar_updates_live_and_polling_stops(page, live_server) -> None:  # type: ignore[no-untyped-def]
    running = jobs.create_job(Job.Kind.ALIGN_CORPUS, {"method": "tfidf"})
    jobs.start(running.pk, total=10)
    jobs.set_progress(running.pk, 2, message="2/10 chunks")
    other = jobs.create_job(Job.Kind.RETRAIN, {"seed": 0})
    jobs.start(other.pk, total=4)
    polls: list[str] = []
    page.on("request", lambda r: polls.append(r.url) if "/progress/" in r.url else None)
    page.goto(f"{live_server.url}/jobs/")
    bar = page.locator(f"#job-progress-{running.pk}")
    assert "2/10" in bar.inner_text()
    jobs.set_progress(running.pk, 7, message="7/10 chunks")
    page.wait_for_function(f"document.querySelector('#job-progress-{running.pk}').innerText.includes('7/10')",
                           timeout=10_000)
    assert page.locator(f"#job-progress-{running.pk} .progress > span").get_attribute("style") == "width: 70%"
    jobs.set_progress(running.pk, 10)
    jobs.finish(running.pk, message="10 chunks aligned")
    page.wait_for_function(f"document.querySelector('#job-progress-{running.pk}').dataset.status === 'succeeded'",
                           timeout=10_000)
    # the cancel button of the other job (with its confirmation dialog)
    page.on("dialog", lambda d: d.accept())
    page.locator(f"#job-progress-{other.pk} button").click()
    page.wait_for_function(f"document.querySelector('#job-progress-{other.pk}').innerText.includes('stopping')",
                           timeout=10_000)
    assert Job.objects.get(pk=other.pk).cancel_requested
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "jobs.png"), full_page=True)
    # once finished, the bar asks no more
    jobs.mark_cancelled(other.pk)
    page.wait_for_function(f"document.querySelector('#job-progress-{other.pk}').dataset.status === 'cancelled'",
                           timeout=10_000)
    before = len(polls)
    page.wait_for_timeout(2500)
    assert len(polls) == before, "finished jobs keep polling"
    assert not page.locator("[hx-trigger]").count()
