"""Headless Chromium: correct a paragraph alignment; label a page of five with the keyboard;
get refused for answering too fast; get removed after failing test questions.

Screenshots go to $ARTIFACTS_DIR (default artifacts/): correct*.png, label*.png, instructions.png,
too-fast.png, explanation.png, removed.png, jobs.png.
"""

from __future__ import annotations

import time

import pytest

from annotation.models import Assignment, Judgment, Membership, ParagraphAlignmentRevision
from annotation.models import TestAnswer as CheckAnswer
from annotation.tests.factories import make_corpus, make_job
from tests.browser import screenshot

KEY_FOR = {"aligned": "1", "partialAligned": "2", "notAligned": "3"}
WRONG = {"aligned": "notAligned", "partialAligned": "notAligned", "notAligned": "aligned"}

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def current(page) -> Assignment:  # type: ignore[no-untyped-def]
    """The assignment on screen, read once the page has finished preloading the next one
    (in-memory SQLite locks whole tables while the server thread writes)."""
    page.wait_for_function("document.getElementById('lab').dataset.ready === '1'")
    return Assignment.objects.select_related("test_question").get(token=page.locator("#lab-token").input_value())


def test_correct_paragraph_alignment(browser_page, live_server, verifier) -> None:  # type: ignore[no-untyped-def]
    pair = make_corpus(n_articles=1).pairs.get()
    page = browser_page(verifier)
    page.goto(f"{live_server.url}/annotate/correct/")
    screenshot(page, "correct-index.png")
    page.click("text=Correct next pair")
    page.wait_for_selector("#cx-svg path", state="attached")
    n_auto = int(page.locator("#cx-count").inner_text())
    assert page.locator("#cx-svg path").count() == n_auto > 0
    screenshot(page, "correct.png")
    # mouse: complex ¶2 then simple ¶3 adds a link
    page.click('.cx-para[data-side="c"][data-pos="2"]')
    page.click('.cx-para[data-side="s"][data-pos="3"]')
    assert int(page.locator("#cx-count").inner_text()) == n_auto + 1
    assert page.locator("#cx-dirty").is_visible()
    # keyboard: cursor to complex ¶0, anchor it, switch to the simple side (its partner ¶0), Space unlinks
    page.keyboard.press("Escape")
    page.click('.cx-para[data-side="c"][data-pos="0"]')
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Space")
    assert int(page.locator("#cx-count").inner_text()) == n_auto
    screenshot(page, "correct-edited.png")
    with page.expect_navigation():
        page.keyboard.press("s")
    assert "Saved" in page.locator(".messages").inner_text()
    rev = ParagraphAlignmentRevision.objects.filter(pair=pair, source="manual").get()
    assert rev.user_id == verifier.pk and [2, 3] in rev.added and [0, 0] in rev.removed
    assert page.locator("#cx-dirty").is_hidden()


def test_label_a_page_of_five_with_the_keyboard(browser_page, live_server, annotator) -> None:  # type: ignore[no-untyped-def]
    job = make_job(min_seconds=1, every=5, min_tests=4)
    page = browser_page(annotator)
    page.goto(f"{live_server.url}/annotate/")
    screenshot(page, "jobs.png")
    page.goto(f"{live_server.url}/annotate/jobs/{job.pk}/instructions/")
    screenshot(page, "instructions.png")
    posts: list[str] = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    page.goto(f"{live_server.url}/annotate/jobs/{job.pk}/label/")
    page.keyboard.press("c")
    page.wait_for_selector("#lab-context mark")
    screenshot(page, "label-context.png")
    page.keyboard.press("c")
    tokens = []
    for n in range(5):
        a = current(page)
        tokens.append(a.token)
        label = a.test_question.gold_label if a.test_question else ["aligned", "partialAligned", "notAligned"][n % 3]
        time.sleep(1.15)
        if n == 2:
            screenshot(page, "label.png")
        page.keyboard.press(KEY_FOR[label])
        page.wait_for_function(f"document.getElementById('lab-answered').textContent === '{n + 1}'")
        if n < 4:
            page.wait_for_function(f"document.getElementById('lab-token').value !== '{a.token}'")
    assert len(set(tokens)) == 5
    current(page)  # waits until the page is idle before reading the database
    # one request per question: the page carried the second question, each answer brought the
    # question after the preloaded one, so "next" was never asked
    assert sum("/answers/" in url for url in posts) == 5 and sum("/next/" in url for url in posts) == 0
    tests = CheckAnswer.objects.filter(annotator=annotator, correct=True).count()
    assert Judgment.objects.filter(annotator=annotator, is_valid=True).count() == 5 - tests
    assert Membership.objects.get(job=job, annotator=annotator).questions_answered == 5


def test_refused_for_answering_too_fast(browser_page, live_server, annotator) -> None:  # type: ignore[no-untyped-def]
    job = make_job(min_seconds=30, every=0)
    page = browser_page(annotator)
    page.goto(f"{live_server.url}/annotate/jobs/{job.pk}/label/")
    token = page.locator("#lab-token").input_value()
    page.keyboard.press("1")
    notice = page.locator("#lab-notice")
    notice.wait_for(state="visible")
    assert "at least 30 seconds" in notice.inner_text()
    assert page.locator("#lab-token").input_value() == token  # still the same question
    screenshot(page, "too-fast.png")
    current(page)
    assert not Judgment.objects.exists()


def test_removed_after_failing_test_questions(browser_page, live_server, annotator) -> None:  # type: ignore[no-untyped-def]
    job = make_job(min_seconds=1, every=1, min_tests=2, threshold=0.85)
    page = browser_page(annotator)
    page.goto(f"{live_server.url}/annotate/jobs/{job.pk}/label/")
    a = current(page)
    time.sleep(1.15)
    page.keyboard.press(KEY_FOR[WRONG[a.test_question.gold_label]])
    page.locator("#lab-explain").wait_for(state="visible")
    assert a.test_question.explanation in page.locator("#lab-explain-list").inner_text()
    screenshot(page, "explanation.png")
    page.keyboard.press("Enter")
    page.wait_for_function(f"document.getElementById('lab-token').value !== '{a.token}'")
    b = current(page)
    time.sleep(1.15)
    with page.expect_navigation():
        page.keyboard.press(KEY_FOR[WRONG[b.test_question.gold_label]])
    page.wait_for_selector("text=Thank you for your work on this job")
    screenshot(page, "removed.png")
    assert Membership.objects.get(job=job, annotator=annotator).removed


def test_researcher_creates_a_job(browser_page, live_server, researcher) -> None:  # type: ignore[no-untyped-def]
    from annotation.models import LabelingJob

    make_corpus()
    page = browser_page(researcher)
    page.goto(f"{live_server.url}/annotate/jobs/new/")
    page.fill("input[name=name]", "Pilot round")
    page.select_option("select[name=corpus]", label="toy")
    page.select_option("select[name=gold_source]", "none")
    page.fill("input[name=min_seconds]", "8")
    assert page.locator("input[name=skip_verified]").is_checked()  # pairs already verified are left out by default
    screenshot(page, "job-new.png")
    with page.expect_navigation():
        page.click("form.a-form button[type=submit]")
    job = LabelingJob.objects.get(name="Pilot round")
    assert job.min_seconds == 8 and job.items.exists()
    assert "Pilot round" in page.locator("h1").inner_text()
    screenshot(page, "job-detail.png")


def test_researcher_changes_the_pay_on_the_job_page(browser_page, live_server, researcher) -> None:  # type: ignore[no-untyped-def]
    from decimal import Decimal

    from annotation.models import LabelingJob
    from annotation.services import ledger
    from annotation.services.simulated_job import create_simulated_job
    from tests.browser import assert_accessible

    job = create_simulated_job("paid", n_items=30, pay_per_judgment="0.02", pay_per_hour="9.50", currency="GBP")
    page = browser_page(researcher)
    page.goto(f"{live_server.url}/annotate/jobs/{job.pk}/")
    before = page.locator("#ledger-table tfoot th").last.inner_text()
    page.click("#pay-settings summary")
    page.fill("#pay-settings input[name=pay_per_hour]", "-1")
    with page.expect_navigation():  # the POST's answer, not the page before it
        page.click("#pay-settings button[name=save_pay]")
    assert page.locator("#pay-settings[open] .error").count() >= 1  # refused, the form stays open with the reason
    assert LabelingJob.objects.get(pk=job.pk).pay_per_hour == Decimal("9.50")
    page.fill("#pay-settings input[name=pay_per_hour]", "19")
    with page.expect_navigation():
        page.click("#pay-settings button[name=save_pay]")
    page.wait_for_selector(".messages")
    job.refresh_from_db()
    after = page.locator("#ledger-table tfoot th").last.inner_text()
    assert job.pay_per_hour == Decimal("19") and after == str(ledger.job_ledger(job).total.cost) != before
    page.click("#pay-settings summary")
    screenshot(page, "job-pay.png")
    assert_accessible(page, "job page with the pay form")
