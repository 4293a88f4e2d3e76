"""Headless Chromium: the statistics page and verifying a pair with the keyboard.

Screenshots go to $ARTIFACTS_DIR (default artifacts/): stats.png, verify.png.
"""

from __future__ import annotations

import pytest

from accounts.roles import Role, grant
from annotation.models import AggregatedLabel, JobItem, Judgment, Membership, VerifiedLabel
from annotation.services import job_agreement, verification
from annotation.services.simulated_job import create_simulated_job
from annotation.tests.quality_factories import SENTENCES
from tests.browser import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_stats_page_and_keyboard_verification(browser_page, live_server, make_user) -> None:  # type: ignore[no-untyped-def]
    lead = make_user("lena", "verifier")
    grant(lead, Role.RESEARCHER)
    texts = [SENTENCES[i % len(SENTENCES)] for i in range(240)]
    job = create_simulated_job("Newsela sample · crowd round 1", texts=texts, per_tier=2, seed=2)
    # the least accurate annotator was removed: their judgments no longer count
    weakest = Membership.objects.filter(job=job).order_by("tests_correct", "id").first()
    Membership.objects.filter(pk=weakest.pk).update(removed=True)
    Judgment.objects.filter(job=job, annotator_id=weakest.annotator_id).update(is_valid=False)
    job_agreement.write_aggregated_labels(job, "majority")
    for agg in AggregatedLabel.objects.filter(item__job=job).order_by("-confidence")[:12]:
        verification.verify(agg.item, agg.label if agg.item_id % 4 else "partialAligned", lead)

    page = browser_page(lead, height=900)
    page.goto(f"{live_server.url}/annotate/jobs/{job.pk}/stats/")
    assert page.locator("#fleiss").inner_text() not in ("", "–")
    assert page.locator("svg.chart").count() >= 3
    screenshot(page, "stats.png")

    page.goto(f"{live_server.url}/annotate/verify/{job.pk}/")
    first = int(page.locator("#v-item").get_attribute("data-item"))
    assert first == verification.queue(job).first().item_id  # head of the queue
    page.keyboard.press("j")
    page.wait_for_url(f"**/verify/{job.pk}/?item=*")
    second = int(page.locator("#v-item").get_attribute("data-item"))
    assert second != first
    with page.expect_navigation():
        page.keyboard.press("k")
    assert int(page.locator("#v-item").get_attribute("data-item")) == first
    page.keyboard.press("2")
    assert page.locator('input[value="partialAligned"]').is_checked()
    assert not page.locator('input[value="notAligned"]').is_checked()
    screenshot(page, "verify.png")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    item = JobItem.objects.get(pk=first)
    verified = VerifiedLabel.objects.get(candidate_id=item.candidate_id)
    assert verified.label == "partialAligned" and verified.verifier_id == lead.pk and verified.job_id == job.pk
    assert AggregatedLabel.objects.get(item=item).label == verified.aggregated_label
    # the page moved on to the next pair in the queue
    assert int(page.locator("#v-item").get_attribute("data-item")) != first
    assert "Confirmed" in page.content() or "Changed" in page.content()


def test_stats_page_previews_mace_and_stores_glad(browser_page, live_server, make_user) -> None:  # type: ignore[no-untyped-def]
    lead = make_user("lena", "verifier")
    grant(lead, Role.RESEARCHER)
    texts = [SENTENCES[i % len(SENTENCES)] for i in range(240)]
    job = create_simulated_job("Newsela sample · crowd round 2", texts=texts, per_tier=2, seed=3)
    page = browser_page(lead, height=1100)
    page.goto(f"{live_server.url}/annotate/jobs/{job.pk}/stats/")
    with page.expect_navigation():
        page.locator('a.q-chip[data-method="mace"]').click()
    assert page.locator("#agg-method").inner_text() == "MACE, preview"
    assert "learns which annotators spam" in page.locator("#method-note").inner_text()
    header = page.locator("#annotators thead").inner_text()
    assert "MACE accuracy" in header and "MACE competence θ" in header
    first_row = page.locator("#annotators tbody tr").first.inner_text()
    assert any(ch.isdigit() for ch in first_row)
    page.locator("#annotators").scroll_into_view_if_needed()
    screenshot(page, "stats_mace.png")
    page.select_option('select[name="method"]', "glad")
    with page.expect_navigation():
        page.get_by_role("button", name="Store aggregated labels").click()
    assert "by GLAD" in page.content()
    assert page.locator("#agg-method").inner_text() == "GLAD, stored"
    assert AggregatedLabel.objects.filter(item__job=job, method="glad").count() == JobItem.objects.filter(job=job).count()
    screenshot(page, "stats_glad_stored.png")
