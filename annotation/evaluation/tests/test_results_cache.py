"""The results page and API serve the figures from the cache until a row they describe changes:
a warm request computes nothing, and a new rating, an exclusion or a setting change is
recounted on the next request."""

from __future__ import annotations

from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.evaluation import metrics, stats
from annotation.evaluation.services import assignment, raters, rating, results, studies
from annotation.evaluation.tests.factories import full_ratings, make_study
from annotation.models import Rating

pytestmark = pytest.mark.django_db


def _answer(study, user, pages: int | None = None, value: float = 3) -> int:  # type: ignore[no-untyped-def]
    done = 0
    while (pages is None or done < pages) and (page := assignment.next_page(study, user)) is not None:
        rating.submit_page(user, page.token, full_ratings(study, len(study.systems) + (study.design == "slider"), value=value))
        done += 1
    return done


@pytest.fixture
def rated(make_user):  # type: ignore[no-untyped-def]
    study = make_study("likert", n_items=6, raters=3)
    users = [make_user(f"cache{i}", "annotator") for i in range(3)]
    _answer(study, users[0], value=4)
    _answer(study, users[1], value=2)
    return study, users


def _results(researcher, study):  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_login(researcher)
    r = api.get(reverse("evaluation-study-results", args=[study.pk]))
    assert r.status_code == 200
    return r.json()


def test_a_warm_request_computes_nothing_and_issues_fewer_queries(client, researcher, rated):
    study, _ = rated
    client.force_login(researcher)
    url = reverse("evaluation:results", args=[study.pk])
    with mock.patch.object(stats, "summarize", wraps=stats.summarize) as summarize:
        with CaptureQueriesContext(connection) as cold:
            first = client.get(url)
        with CaptureQueriesContext(connection) as warm:
            second = client.get(url)
    assert first.status_code == second.status_code == 200
    assert summarize.call_count == 1  # the second request came from the cache
    assert len(warm.captured_queries) < len(cold.captured_queries) - 8
    assert "Fluency" in second.content.decode() and "SARI" in second.content.decode()


def test_a_new_rating_is_recounted_on_the_next_request(researcher, rated):
    study, users = rated
    before = _results(researcher, study)
    assert before["counts"]["ratings"] == Rating.objects.filter(study=study, is_valid=True).count() == 2 * 6 * 3 * 3
    assert _answer(study, users[2], pages=1, value=1) == 1
    after = _results(researcher, study)
    assert after["counts"]["ratings"] == Rating.objects.filter(study=study, is_valid=True).count() == before["counts"]["ratings"] + 9
    assert after["counts"]["pages_answered"] == before["counts"]["pages_answered"] + 1
    n = {(s["system"], s["dimension"]): s["n"] for s in before["scores"]}
    assert any(s["n"] == n[(s["system"], s["dimension"])] + 1 for s in after["scores"])


def test_an_exclusion_is_recounted_on_the_next_request(researcher, rated):
    study, users = rated
    before = _results(researcher, study)
    assert all(s["mean"] == 3 for s in before["scores"])  # raters at 4 and 2
    assert raters.exclude_rater(study, users[1].pk) > 0
    after = _results(researcher, study)
    assert after["counts"]["raters_excluded"] == 1 and after["counts"]["ratings"] == before["counts"]["ratings"] // 2
    assert all(s["mean"] == 4 for s in after["scores"])  # only the rater at 4 is left


def test_a_setting_or_a_parameter_change_recomputes(make_user, researcher):
    study = make_study("slider", n_items=4, raters=2)
    _answer(study, make_user("sl0", "annotator"), value=18)
    assert _results(researcher, study)["controls"]["under_threshold"] == 1.0  # controls at 18 <= 20
    studies.update_settings(study, control_threshold=15.0)
    controls = _results(researcher, study)["controls"]
    assert controls["threshold"] == 15.0 and controls["under_threshold"] == 0.0
    with mock.patch.object(stats, "summarize", wraps=stats.summarize) as summarize:
        assert results.cached_study_results(study, n_boot=200).n_boot == 200
        assert results.cached_study_results(study, n_boot=300).n_boot == 300
        results.cached_study_results(study, n_boot=300)
    assert summarize.call_count == 2


def test_metrics_are_cached_apart_from_the_ratings(researcher, rated):
    study, users = rated
    first = _results(researcher, study)["metrics"]
    with mock.patch.object(metrics, "system_metrics", wraps=metrics.system_metrics) as system_metrics:
        raters.exclude_rater(study, users[0].pk)
        again = _results(researcher, study)
    assert again["counts"]["raters_excluded"] == 1  # the ratings were recounted ...
    assert system_metrics.call_count == 0 and again["metrics"] == first  # ... the outputs' metrics were not
