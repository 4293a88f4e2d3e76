"""Statistics: loading judgments from the ORM, storing aggregated labels, the page and the command."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import AggregatedLabel, Judgment, Membership, VerifiedLabel
from annotation.services import job_agreement
from annotation.services.simulated_job import create_simulated_job
from annotation.tests.quality_factories import judge, make_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def crowd(make_user):  # type: ignore[no-untyped-def]
    return [make_user(f"crowd{i}", "annotator") for i in range(5)]


@pytest.fixture
def job_with_votes(crowd):  # type: ignore[no-untyped-def]
    job, items = make_job()
    u = crowd
    judge(job, items[0], [(u[0], "aligned"), (u[1], "aligned"), (u[2], "aligned"), (u[3], "aligned"), (u[4], "partialAligned")])
    judge(job, items[1], [(u[0], "partialAligned"), (u[1], "aligned"), (u[2], "partialAligned"), (u[3], "notAligned")])
    judge(job, items[2], [(u[0], "notAligned"), (u[1], "notAligned"), (u[2], "notAligned")])
    judge(job, items[3], [(u[0], "aligned"), (u[1], "notAligned")])  # tie -> notAligned
    judge(job, items[4], [(u[4], "aligned")], valid=False)  # only an invalid judgment: not aggregated
    return job, items


def test_load_judgments_skips_invalid_and_removed(job_with_votes, crowd) -> None:  # type: ignore[no-untyped-def]
    job, _ = job_with_votes
    loaded = job_agreement.load_judgments(job)
    assert loaded.judgments.size == 14
    Membership.objects.filter(job=job, annotator=crowd[3]).update(removed=True)
    loaded = job_agreement.load_judgments(job)
    assert loaded.judgments.size == 12  # crowd3 judged items 0 and 1
    assert crowd[3].pk not in loaded.annotator_ids.tolist()


def test_write_aggregated_labels_upserts_and_drops_stale(job_with_votes, crowd) -> None:  # type: ignore[no-untyped-def]
    job, items = job_with_votes
    result = job_agreement.write_aggregated_labels(job, "majority")
    assert result.written == 4
    rows = {a.item_id: a for a in AggregatedLabel.objects.filter(item__job=job)}
    assert rows[items[0].pk].label == "aligned" and rows[items[0].pk].confidence == pytest.approx(0.8)
    assert rows[items[0].pk].votes == {"aligned": 4, "partialAligned": 1}
    assert rows[items[1].pk].label == "partialAligned"
    assert rows[items[2].pk].votes == {"notAligned": 3}
    assert rows[items[3].pk].label == "notAligned" and rows[items[3].pk].confidence == pytest.approx(0.5)
    assert items[4].pk not in rows
    # removing annotator 1 leaves item 3 with one vote (aligned); re-aggregation updates in place
    Judgment.objects.filter(job=job, annotator__in=[crowd[0]]).update(is_valid=False)
    job_agreement.write_aggregated_labels(job, "dawid_skene")
    assert AggregatedLabel.objects.get(item=items[3]).label == "notAligned"
    assert AggregatedLabel.objects.get(item=items[3]).method == "dawid_skene"
    assert AggregatedLabel.objects.filter(item__job=job).count() == 4
    Judgment.objects.filter(item=items[2]).update(is_valid=False)
    result = job_agreement.write_aggregated_labels(job)
    assert result.deleted == 1
    assert not AggregatedLabel.objects.filter(item=items[2]).exists()


def test_job_statistics_figures(job_with_votes, crowd) -> None:  # type: ignore[no-untyped-def]
    job, items = job_with_votes
    Membership.objects.filter(job=job, annotator=crowd[4]).update(tests_answered=10, tests_correct=6, removed=True)
    stats = job_agreement.job_statistics(job, min_shared=1)
    assert stats.counts["judgments"] == 13
    assert stats.counts["items"] == len(items) and stats.counts["complete_items"] == 1  # only item 0 has 5 valid
    assert stats.counts["invalid_judgments"] == 1
    assert [r.username for r in stats.removed_annotators] == ["crowd4"]
    removed = stats.removed_annotators[0]
    assert removed.test_accuracy == pytest.approx(0.6) and removed.judgments == 2
    assert stats.counts["disagreements"] == 2 and stats.counts["unanimous"] == 2
    assert stats.confusion_aggregated.sum() == 13
    assert stats.report.cohen_pairs > 0
    assert not stats.stored and stats.method == "majority"
    job_agreement.write_aggregated_labels(job)
    VerifiedLabel.objects.create(candidate=items[1].candidate, label="aligned", aggregated_label="partialAligned", job=job)
    stats = job_agreement.job_statistics(job, min_shared=1)
    assert stats.stored and stats.counts["verified"] == 1 and stats.counts["verified_changed"] == 1
    assert stats.confusion_verified is not None and stats.confusion_verified.sum() == 1
    data = json.loads(json.dumps(stats.as_dict()))
    assert data["fleiss_kappa"] == pytest.approx(stats.report.fleiss)
    assert data["counts"]["verified"] == 1 and len(data["annotators"]) == 5
    assert data["confusion_verified"] is not None


def test_stats_page_for_researcher_and_verifier_not_annotator(job_with_votes, researcher, verifier, annotator, client_for) -> None:  # type: ignore[no-untyped-def]
    job, _ = job_with_votes
    url = reverse("annotation:job_stats", kwargs={"job_id": job.pk})
    page = client_for(researcher).get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Fleiss" in html and "Krippendorff" in html and "<svg" in html and "crowd0" in html
    assert "Store aggregated labels" in html
    assert client_for(researcher).get(url + "?method=dawid_skene").status_code == 200
    assert client_for(researcher).get(reverse("annotation:stats_index")).status_code == 200
    page = client_for(verifier).get(url)
    assert page.status_code == 200 and "Store aggregated labels" not in page.content.decode()
    assert client_for(annotator).get(url).status_code == 403


def test_aggregate_action_needs_researcher(job_with_votes, researcher, verifier, client_for) -> None:  # type: ignore[no-untyped-def]
    job, _ = job_with_votes
    url = reverse("annotation:job_aggregate", kwargs={"job_id": job.pk})
    assert client_for(verifier).post(url, {"method": "majority"}).status_code == 403
    assert not AggregatedLabel.objects.exists()
    response = client_for(researcher).post(url, {"method": "dawid_skene"})
    assert response.status_code == 302
    assert AggregatedLabel.objects.filter(method="dawid_skene").count() == 4


def test_job_agreement_command_prints_the_page_figures_and_writes(job_with_votes) -> None:  # type: ignore[no-untyped-def]
    job, _ = job_with_votes
    out = StringIO()
    call_command("job_agreement", str(job.pk), "--min-shared", "1", stdout=out)
    text = out.getvalue()
    stats = job_agreement.job_statistics(job, min_shared=1)
    assert f"Fleiss' kappa: {stats.report.fleiss:.3f}" in text
    assert f"Krippendorff's alpha (nominal): {stats.report.alpha:.3f}" in text
    assert "crowd0" in text and "partialAligned" in text
    assert not AggregatedLabel.objects.exists()
    out = StringIO()
    call_command("job_agreement", str(job.pk), "--write", "--method", "majority", stdout=out)
    assert "stored 4 aggregated labels" in out.getvalue()
    assert AggregatedLabel.objects.filter(item__job=job).count() == 4


def test_simulated_job_in_the_database_matches_the_numpy_path() -> None:
    job = create_simulated_job("sim", n_items=300, seed=5)
    stats = job_agreement.job_statistics(job, min_shared=5)
    assert stats.counts["judgments"] == 1500 and stats.counts["annotators"] == 10
    from annotation import agreement
    from annotation.crowd_model import simulate

    direct = agreement.job_agreement(simulate(300, per_tier=2, seed=5).judgments, min_shared=5)
    assert stats.report.fleiss == pytest.approx(direct.fleiss)
    assert stats.report.cohen_mean == pytest.approx(direct.cohen_mean)


def test_cached_statistics_follow_changes(job_with_votes, crowd, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    job, items = job_with_votes
    first = job_agreement.cached_job_statistics(job, min_shared=1)
    calls: list[int] = []
    real = job_agreement.job_statistics

    def counting_job_statistics(*a: Any, **k: Any) -> job_agreement.JobStatistics:
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(job_agreement, "job_statistics", counting_job_statistics)
    again = job_agreement.cached_job_statistics(job, min_shared=1)
    assert calls == [] and again.report.fleiss == pytest.approx(first.report.fleiss)
    Membership.objects.filter(job=job, annotator=crowd[4]).update(removed=True)
    changed = job_agreement.cached_job_statistics(job, min_shared=1)
    assert calls == [1] and changed.counts["judgments"] == first.counts["judgments"] - 1
    job_agreement.write_aggregated_labels(job)
    assert job_agreement.cached_job_statistics(job, min_shared=1).stored
    VerifiedLabel.objects.create(candidate=items[0].candidate, label="aligned", job=job)
    assert job_agreement.cached_job_statistics(job, min_shared=1).counts["verified"] == 1
    assert len(calls) == 3


def test_stored_methods_are_the_aggregation_methods() -> None:
    from annotation import aggregation

    assert list(AggregatedLabel.Method.values) == list(aggregation.METHODS)
    assert dict(AggregatedLabel.Method.choices) == aggregation.NAMES
    assert max(len(v) for v in AggregatedLabel.Method.values) <= AggregatedLabel._meta.get_field("method").max_length  # type: ignore[operator]


@pytest.mark.parametrize(("method", "parameter"), [("mace", "competence θ"), ("glad", "ability α"), ("dawid_skene", "")])
def test_model_methods_store_posteriors_and_show_annotator_estimates(job_with_votes, method, parameter) -> None:  # type: ignore[no-untyped-def]
    from annotation import aggregation

    job, items = job_with_votes
    result = job_agreement.write_aggregated_labels(job, method)
    assert result.method == method and result.written == 4
    rows = {a.item_id: a for a in AggregatedLabel.objects.filter(item__job=job)}
    assert {a.method for a in rows.values()} == {method}
    fresh = aggregation.aggregate(job_agreement.load_judgments(job).judgments, method)
    assert isinstance(fresh, aggregation.ModelAggregate) and fresh.posterior is not None
    loaded = job_agreement.load_judgments(job)
    for code, item_id in enumerate(loaded.item_ids.tolist()):
        assert rows[item_id].confidence == pytest.approx(float(fresh.posterior[code].max()), abs=1e-6)
    assert rows[items[0].pk].label == "aligned" and rows[items[2].pk].label == "notAligned"
    stats = job_agreement.job_statistics(job, method=method, min_shared=1)
    assert not stats.stored and stats.method == method and stats.counts["iterations"] == fresh.iterations
    assert stats.parameter_name == parameter
    judged = [r for r in stats.annotators if r.judgments]
    assert all(r.estimated_accuracy is not None and 0 <= r.estimated_accuracy <= 1 for r in judged)
    assert all((r.model_parameter is not None) == bool(parameter) for r in judged)
    stored = job_agreement.job_statistics(job, min_shared=1)
    assert stored.stored and stored.method == method and stored.counts["iterations"] is None


def test_stats_page_offers_and_previews_every_method(job_with_votes, researcher, client_for) -> None:  # type: ignore[no-untyped-def]
    job, _ = job_with_votes
    url = reverse("annotation:job_stats", kwargs={"job_id": job.pk})
    html = client_for(researcher).get(url).content.decode()
    for value in ("majority", "dawid_skene", "mace", "glad"):
        assert f'data-method="{value}"' in html and f'<option value="{value}"' in html
    html = client_for(researcher).get(url + "?method=mace").content.decode()
    assert "MACE, preview" in html and "MACE competence θ" in html and "MACE accuracy" in html
    assert "learns which annotators spam" in html
    html = client_for(researcher).get(url + "?method=glad").content.decode()
    assert "GLAD ability α" in html
    html = client_for(researcher).get(url + "?method=majority").content.decode()
    assert "MACE competence" not in html and "majority vote, preview" in html
    response = client_for(researcher).post(reverse("annotation:job_aggregate", kwargs={"job_id": job.pk}), {"method": "glad"})
    assert response.status_code == 302
    assert AggregatedLabel.objects.filter(item__job=job, method="glad").count() == 4
    page = client_for(researcher).get(url)
    assert "GLAD, stored" in page.content.decode()
    bad = client_for(researcher).post(reverse("annotation:job_aggregate", kwargs={"job_id": job.pk}), {"method": "wawa"}, follow=True)
    assert bad.status_code == 200 and "Unknown aggregation method" in bad.content.decode()
    assert AggregatedLabel.objects.filter(item__job=job, method="glad").count() == 4


@pytest.mark.parametrize("method", ["mace", "glad"])
def test_job_agreement_command_writes_mace_and_glad(job_with_votes, method) -> None:  # type: ignore[no-untyped-def]
    job, _ = job_with_votes
    out = StringIO()
    call_command("job_agreement", str(job.pk), "--write", "--method", method, "--min-shared", "1", stdout=out)
    text = out.getvalue()
    assert f"stored 4 aggregated labels ({method})" in text
    assert f"aggregation: {method} (stored)" in text
    assert AggregatedLabel.objects.filter(item__job=job, method=method).count() == 4
    out = StringIO()
    call_command("job_agreement", str(job.pk), "--method", method, "--min-shared", "1", stdout=out)
    assert "EM iterations" in out.getvalue() and "est acc" in out.getvalue()
    assert ("theta" in out.getvalue() or "θ" in out.getvalue()) == (method == "mace")
