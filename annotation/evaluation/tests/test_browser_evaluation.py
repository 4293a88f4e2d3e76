"""Headless Chromium: rate a page of each design with the keyboard only (Likert 1-5 per scale,
slider arrows and digits, comparative 1-5), get refused for submitting too fast, and a
researcher creates a study, reads the results and exports them.

Screenshots go to $ARTIFACTS_DIR (default artifacts/): evaluation-*.png.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from annotation.evaluation.services import assignment, rating
from annotation.evaluation.tests.factories import full_ratings, make_study
from annotation.models import EvalOutput, EvalPage, Rating, Study
from tests.browser import screenshot

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "evaluation-outputs.tsv"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def ready(page) -> EvalPage:  # type: ignore[no-untyped-def]
    page.wait_for_function("document.getElementById('ev').dataset.ready === '1'")
    return EvalPage.objects.get(token=page.locator("#ev-token").input_value())


def wait_next(page, token: str) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function(f"document.getElementById('ev-token') === null || document.getElementById('ev-token').value !== '{token}'")
    page.wait_for_load_state("load")


def test_likert_page_by_keyboard(browser_page, live_server, annotator) -> None:  # type: ignore[no-untyped-def]
    study = make_study("likert", n_items=2, raters=1, min_seconds=1)
    page = browser_page(annotator)
    page.goto(f"{live_server.url}/annotate/evaluation/")
    screenshot(page, "evaluation-home.png")
    page.goto(f"{live_server.url}/annotate/evaluation/{study.pk}/instructions/")
    screenshot(page, "evaluation-instructions-likert.png")
    page.goto(f"{live_server.url}/annotate/evaluation/{study.pk}/rate/")
    first = ready(page)
    # version 1: fluency 5, adequacy 4, simplicity 3; version 2: 2 2 2; version 3: 1 then fix with arrows
    for key in "543222":
        page.keyboard.press(key)
    page.keyboard.press("1")
    page.keyboard.press("1")
    page.keyboard.press("ArrowUp")       # back to version 3's adequacy
    page.keyboard.press("ArrowRight")    # 1 -> 2
    page.keyboard.press("ArrowDown")     # simplicity, still empty
    screenshot(page, "evaluation-likert-partial.png")
    page.keyboard.press("Enter")         # incomplete: a notice, nothing stored
    page.locator("#lab-notice").wait_for(state="visible")
    assert "Every version needs a rating" in page.locator("#lab-notice").inner_text()
    page.keyboard.press("4")
    time.sleep(1.1)
    screenshot(page, "evaluation-likert.png")
    page.keyboard.press("Enter")
    wait_next(page, first.token)
    second = ready(page)
    assert second.token != first.token
    values = {(r.position, r.dimension): r.value for r in Rating.objects.filter(page=first)}
    assert values == {(0, "fluency"): 5, (0, "adequacy"): 4, (0, "simplicity"): 3, (1, "fluency"): 2, (1, "adequacy"): 2,
                      (1, "simplicity"): 2, (2, "fluency"): 1, (2, "adequacy"): 2, (2, "simplicity"): 4}
    assert page.locator("#ev-answered").inner_text() == "1"


def test_slider_page_by_keyboard_with_diff_highlighting(browser_page, live_server, annotator) -> None:  # type: ignore[no-untyped-def]
    study = make_study("slider", n_items=2, raters=1, min_seconds=1)
    page = browser_page(annotator)
    page.goto(f"{live_server.url}/annotate/evaluation/{study.pk}/rate/")
    first = ready(page)
    assert page.locator(".ev-version").count() == 4
    assert page.locator(".seg.added").count() > 0 and page.locator(".seg.deleted").count() > 0
    page.keyboard.press("8")                               # version 1 -> 80
    page.keyboard.press("ArrowRight")                      # 81
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Shift+ArrowLeft")                 # untouched starts at 50 -> 40
    page.keyboard.press("ArrowDown")
    page.keyboard.press("1")                               # 10
    page.keyboard.press("ArrowDown")
    page.keyboard.press("End")                             # 100
    time.sleep(1.1)
    screenshot(page, "evaluation-slider.png")
    page.keyboard.press("Enter")
    wait_next(page, first.token)
    got = {r.position: r.value for r in Rating.objects.filter(page=first)}
    assert got == {0: 81, 1: 40, 2: 10, 3: 100}
    control = EvalOutput.objects.get(pk__in=first.order, is_control=True)
    first.refresh_from_db()
    assert first.control_failed == (got[first.order.index(control.pk)] > 20)


def test_comparative_page_and_too_fast(browser_page, live_server, annotator) -> None:  # type: ignore[no-untyped-def]
    study = make_study("comparative", n_items=2, raters=1, min_seconds=30)
    page = browser_page(annotator)
    page.goto(f"{live_server.url}/annotate/evaluation/{study.pk}/rate/")
    first = ready(page)
    assert page.locator("#ev-reference").is_visible()
    for key in "514":
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    notice = page.locator("#lab-notice")
    notice.wait_for(state="visible")
    page.wait_for_function("document.getElementById('lab-notice').textContent.includes('30 seconds')")
    screenshot(page, "evaluation-comparative-too-fast.png")
    assert not Rating.objects.exists()
    Study.objects.filter(pk=study.pk).update(min_seconds=0)
    page.keyboard.press("Enter")
    wait_next(page, first.token)
    got = {r.position: r.value for r in Rating.objects.filter(page=first)}
    assert got == {0: 2, 1: -2, 2: 1}


def test_researcher_creates_rates_reads_results_and_exports(browser_page, live_server, researcher, make_user, tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.EXPORTS_DIR = tmp_path
    page = browser_page(researcher, height=1000)
    page.goto(f"{live_server.url}/annotate/evaluation/new/")
    page.fill("input[name=name]", "Pilot Likert")
    page.select_option("select[name=design]", "likert")
    page.set_input_files("input[name=outputs_file]", str(EXAMPLE))
    page.fill("input[name=raters_per_item]", "3")
    page.fill("input[name=min_seconds]", "0")
    screenshot(page, "evaluation-new.png")
    with page.expect_navigation():
        page.click("#study-form button[type=submit]")
    study = Study.objects.get(name="Pilot Likert")
    assert "Pilot Likert" in page.locator("h1").inner_text()
    raters = [make_user(f"r{i}", "annotator") for i in range(4)]
    for k, user in enumerate(raters):
        while (p := assignment.next_page(study, user)) is not None:
            ratings = full_ratings(study, len(p.order))
            for pos, entry in enumerate(ratings):
                entry["values"] = {d: 1 + (pos + k + i) % 5 for i, d in enumerate(("fluency", "adequacy", "simplicity"))}
            rating.submit_page(user, p.token, ratings)
    page.goto(f"{live_server.url}/annotate/evaluation/{study.pk}/")
    screenshot(page, "evaluation-detail.png")
    page.goto(f"{live_server.url}/annotate/evaluation/{study.pk}/results/")
    assert page.locator("#ev-results tbody tr").count() == 3 and page.locator(".ev-chart svg").count() == 1
    screenshot(page, "evaluation-results.png")
    page.goto(f"{live_server.url}/annotate/evaluation/{study.pk}/")
    with page.expect_navigation():
        page.click("text=Export ratings and aggregates")
    assert "Exported" in page.locator(".messages").inner_text()
    assert (tmp_path / "evaluation" / f"study-{study.pk}" / "1" / "card.json").is_file()
