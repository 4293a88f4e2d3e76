"""Verification queue: order, separation of raw/aggregated/verified, pages and permissions."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import AggregatedLabel, Judgment, VerifiedLabel
from annotation.services import job_agreement, verification
from annotation.tests.quality_factories import judge, make_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def aggregated_job(make_user):  # type: ignore[no-untyped-def]
    u = [make_user(f"crowd{i}", "annotator") for i in range(5)]
    job, items = make_job()
    judge(job, items[0], [(x, "aligned") for x in u])  # unanimous, confidence 1.0
    judge(job, items[1], [(u[0], "aligned"), (u[1], "aligned"), (u[2], "aligned"), (u[3], "aligned"), (u[4], "notAligned")])  # 0.8
    judge(job, items[2], [(u[0], "aligned"), (u[1], "partialAligned"), (u[2], "notAligned"), (u[3], "notAligned"), (u[4], "aligned")])  # A-N tie -> notAligned, 0.4
    judge(job, items[3], [(x, "notAligned") for x in u[:3]])  # unanimous, 1.0
    judge(job, items[4], [(u[0], "partialAligned"), (u[1], "partialAligned"), (u[2], "partialAligned"), (u[3], "notAligned")])  # 0.75
    job_agreement.write_aggregated_labels(job)
    # a unanimous item with a low (Dawid-Skene-like) confidence still comes after every disagreement
    AggregatedLabel.objects.filter(item=items[3]).update(confidence=0.55)
    return job, items


def test_queue_puts_disagreements_then_low_confidence_first(aggregated_job) -> None:  # type: ignore[no-untyped-def]
    job, items = aggregated_job
    order = [a.item_id for a in verification.queue(job)]
    assert order == [items[2].pk, items[4].pk, items[1].pk, items[3].pk, items[0].pk]
    counts = verification.queue_counts(job)
    assert (counts.aggregated, counts.verified, counts.remaining, counts.disagreements_remaining) == (5, 0, 5, 3)


def test_verified_labels_are_stored_apart_from_raw_and_aggregated(aggregated_job, verifier) -> None:  # type: ignore[no-untyped-def]
    job, items = aggregated_job
    raw_before = list(Judgment.objects.order_by("id").values_list("id", "label", "is_valid"))
    agg_before = list(AggregatedLabel.objects.order_by("id").values_list("id", "label", "confidence", "votes"))
    verified = verification.verify(items[2], "notAligned", verifier)  # 2 aligned, 2 not, 1 partial: tie goes to notAligned
    assert verified.aggregated_label == "notAligned" and not verified.changed
    verified = verification.verify(items[1], "partialAligned", verifier)
    assert verified.changed and verified.aggregated_label == "aligned" and verified.verifier == verifier
    assert verified.verified_at is not None and verified.job == job
    assert list(Judgment.objects.order_by("id").values_list("id", "label", "is_valid")) == raw_before
    assert list(AggregatedLabel.objects.order_by("id").values_list("id", "label", "confidence", "votes")) == agg_before
    assert AggregatedLabel.objects.get(item=items[1]).label == "aligned"
    assert VerifiedLabel.objects.get(candidate=items[1].candidate).label == "partialAligned"
    # verifying again updates the one row
    verification.verify(items[1], "notAligned", verifier)
    assert VerifiedLabel.objects.filter(candidate=items[1].candidate).count() == 1
    assert VerifiedLabel.objects.get(candidate=items[1].candidate).label == "notAligned"
    # re-aggregation leaves verified labels alone, and verified items leave the queue
    job_agreement.write_aggregated_labels(job, "dawid_skene")
    assert VerifiedLabel.objects.get(candidate=items[1].candidate).label == "notAligned"
    assert items[1].pk not in [a.item_id for a in verification.queue(job)]
    with pytest.raises(ValueError, match="unknown label"):
        verification.verify(items[0], "maybe", verifier)


def test_verify_page_shows_the_head_of_the_queue(aggregated_job, verifier, client_for) -> None:  # type: ignore[no-untyped-def]
    job, items = aggregated_job
    page = client_for(verifier).get(reverse("annotation:verify_job", kwargs={"job_id": job.pk}))
    assert page.status_code == 200
    html = page.content.decode()
    assert f'data-item="{items[2].pk}"' in html
    assert items[2].candidate.complex.text in html and items[2].candidate.simple.text in html
    assert "crowd disagreed" in html and 'id="v-confidence">0.40<' in html
    assert client_for(verifier).get(reverse("annotation:verify_index")).status_code == 200


def test_verify_post_saves_and_moves_on(aggregated_job, verifier, client_for) -> None:  # type: ignore[no-untyped-def]
    job, items = aggregated_job
    client = client_for(verifier)
    url = reverse("annotation:verify_save", kwargs={"job_id": job.pk, "item_id": items[2].pk})
    response = client.post(url, {"label": "notAligned"})
    assert response.status_code == 302
    assert VerifiedLabel.objects.get(candidate=items[2].candidate).verifier == verifier
    page = client.get(response.url)
    assert f'data-item="{items[4].pk}"' in page.content.decode()
    bad = client.post(url, {"label": ""})
    assert bad.status_code == 302 and VerifiedLabel.objects.get(candidate=items[2].candidate).label == "notAligned"


def test_verification_needs_the_verifier_role(aggregated_job, annotator, researcher, client_for) -> None:  # type: ignore[no-untyped-def]
    job, items = aggregated_job
    url = reverse("annotation:verify_save", kwargs={"job_id": job.pk, "item_id": items[2].pk})
    for user in (annotator, researcher):
        client = client_for(user)
        assert client.get(reverse("annotation:verify_job", kwargs={"job_id": job.pk})).status_code == 403
        assert client.post(url, {"label": "aligned"}).status_code == 403
    assert not VerifiedLabel.objects.exists()


def test_verify_page_query_count_does_not_grow_with_the_lists(aggregated_job, verifier, client_for, django_assert_max_num_queries) -> None:  # type: ignore[no-untyped-def]
    job, items = aggregated_job
    for item in items[:3]:
        verification.verify(item, "aligned", verifier)
    client = client_for(verifier)
    url = reverse("annotation:verify_job", kwargs={"job_id": job.pk})
    client.get(url)  # warm the queue snapshot
    with django_assert_max_num_queries(16):
        page = client.get(url)
    assert page.status_code == 200 and "Recently verified" in page.content.decode()


def _aggregated(make_user, prefix: str):  # type: ignore[no-untyped-def]
    u = [make_user(f"{prefix}{i}", "annotator") for i in range(3)]
    job, items = make_job(name=f"job {prefix}")
    judge(job, items[0], [(u[0], "aligned"), (u[1], "aligned"), (u[2], "notAligned")])  # a disagreement
    judge(job, items[1], [(x, "aligned") for x in u])
    job_agreement.write_aggregated_labels(job)
    return job, items


def test_jobs_with_queues_counts_every_job_in_a_constant_number_of_queries(make_user, verifier, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    job, items = _aggregated(make_user, "a")
    verification.verify(items[0], "aligned", verifier)
    make_job(name="nothing aggregated")  # not listed
    cache.clear()
    with CaptureQueriesContext(connection) as one:
        rows = verification.jobs_with_queues()
    assert [(j.pk, (c.aggregated, c.verified, c.remaining, c.disagreements_remaining)) for j, c in rows] == [(job.pk, (2, 1, 1, 0))]
    more = [_aggregated(make_user, p)[0] for p in ("b", "c", "d")]
    cache.clear()
    with CaptureQueriesContext(connection) as four:
        rows = verification.jobs_with_queues()
    assert len(four) == len(one) == 3  # jobs, aggregated labels of the uncached jobs, verified labels
    assert [j.pk for j, _ in rows] == [j.pk for j in reversed([job, *more])]  # newest first
    for j, counts in rows:  # the same counts as one job at a time
        assert counts == verification.queue_counts(j)
    with django_assert_num_queries(2):  # every snapshot cached: jobs, verified labels
        verification.jobs_with_queues()
