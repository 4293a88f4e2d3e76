"""Headless Chromium: the jobs page's live progress bars poll while a job runs and stop after.

Screenshot: $ARTIFACTS_DIR/jobs.png (default artifacts/).
"""

from __future__ import annotations

import pytest

from pipeline import jobs
from pipeline.models import Job
from tests.browser import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(browser_page, researcher):  # type: ignore[no-untyped-def]
    return browser_page(researcher, height=800)


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
    page.wait_for_function(f"() => document.querySelector('#job-progress-{running.pk}').innerText.includes('7/10')",
                           timeout=10_000)
    # the width is set by static/js/page.js on htmx:load, after htmx settles the swapped text (a
    # moment later): wait for it rather than read it at once (read at once, it failed under load)
    page.wait_for_function(
        f"() => document.querySelector('#job-progress-{running.pk} .progress > span').style.width === '70%'",
        timeout=10_000,
    )
    assert page.locator(f"#job-progress-{running.pk} .progress > span").evaluate("e => e.style.width") == "70%"
    jobs.set_progress(running.pk, 10)
    jobs.finish(running.pk, message="10 chunks aligned")
    page.wait_for_function(f"() => document.querySelector('#job-progress-{running.pk}').dataset.status === 'succeeded'",
                           timeout=10_000)
    # the cancel button of the other job (with its confirmation dialog)
    page.on("dialog", lambda d: d.accept())
    page.locator(f"#job-progress-{other.pk} button").click()
    page.wait_for_function(f"() => document.querySelector('#job-progress-{other.pk}').innerText.includes('stopping')",
                           timeout=10_000)
    assert Job.objects.get(pk=other.pk).cancel_requested
    screenshot(page, "jobs.png")
    # once finished, the bar asks no more
    jobs.mark_cancelled(other.pk)
    page.wait_for_function(f"() => document.querySelector('#job-progress-{other.pk}').dataset.status === 'cancelled'",
                           timeout=10_000)
    before = len(polls)
    page.wait_for_timeout(2500)
    assert len(polls) == before, "finished jobs keep polling"
    assert not page.locator("[hx-trigger]").count()
