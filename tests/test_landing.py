"""The landing page: a card per role with counts and a next step; the navigation marks where the user is; no favicon 404."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_each_role_lands_on_its_cards(client_for, annotator, verifier, researcher, admin_user) -> None:  # type: ignore[no-untyped-def]
    from pipeline import jobs
    from pipeline.models import Job

    jobs.create_job(Job.Kind.RETRAIN, {})  # one queued job
    assert client_for(annotator).get(reverse("home"))["Location"] == reverse("annotation:home")
    v = client_for(verifier).get(reverse("home")).content.decode()
    assert 'id="h-verifier"' in v and "labels to verify" in v and 'id="h-researcher"' not in v
    r = client_for(researcher).get(reverse("home")).content.decode()
    assert 'id="h-researcher"' in r and re.search(r"<strong>1</strong> jobs running or queued", r)
    assert "Align a corpus" in r and 'id="h-admin"' not in r  # no run yet: the next step is aligning
    a = client_for(admin_user).get(reverse("home")).content.decode()
    assert 'id="h-admin"' in a and "people" in a and "Import a corpus" in a  # no corpus yet


def test_navigation_marks_the_current_section(client_for, verifier, researcher) -> None:  # type: ignore[no-untyped-def]
    page = client_for(researcher).get(reverse("pipeline:model_list")).content.decode()
    nav = page[page.index('<nav class="mainnav"'):page.index("</nav>")]
    assert nav.count('aria-current="page"') == 1
    assert re.search(r'href="/models/"[^>]*aria-current="page"', nav)
    verify = client_for(verifier).get(reverse("annotation:verify_index")).content.decode()
    nav = verify[verify.index('<nav class="mainnav"'):verify.index("</nav>")]
    assert re.search(r'href="/annotate/verify/"[^>]*aria-current="page"', nav) and nav.count('aria-current="page"') == 1


def test_favicon_is_served(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("favicon.svg")


def test_the_verifier_card_costs_the_same_queries_for_one_job_or_many(client_for, make_user, verifier) -> None:  # type: ignore[no-untyped-def]
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.services import job_agreement
    from annotation.tests.quality_factories import judge, make_job

    raters = [make_user(f"rater{i}", "annotator") for i in range(3)]

    def aggregated_job(name: str) -> None:
        job, items = make_job(name=name)
        judge(job, items[0], [(raters[0], "aligned"), (raters[1], "aligned"), (raters[2], "notAligned")])
        job_agreement.write_aggregated_labels(job)

    def landing() -> tuple[int, str]:
        cache.clear()  # no cached queue snapshot either
        with CaptureQueriesContext(connection) as queries:
            page = client_for(verifier).get(reverse("home")).content.decode()
        return len(queries), page

    aggregated_job("first")
    landing()  # warm-up: the first request of a session reads more (content types, the session's first save)
    one, page = landing()
    assert re.search(r"<strong>1</strong> labels to verify", page) and re.search(r"<strong>1</strong> of them with disagreement", page)
    for name in ("second", "third", "fourth"):
        aggregated_job(name)
    four, page = landing()
    assert re.search(r"<strong>4</strong> labels to verify", page) and re.search(r"<strong>4</strong> of them with disagreement", page)
    assert four == one
