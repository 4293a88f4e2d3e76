"""The annotation cost ledger: recounts of judgments, test answers, discarded judgments and the
server's time on task, priced with the job's pay settings; on the job page and in the API."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Assignment, Judgment, LabelingJob, Membership, VerifiedLabel
from annotation.models import TestAnswer as CheckAnswer
from annotation.services import assignment, labeling, ledger
from annotation.services.simulated_job import create_simulated_job
from annotation.tests.factories import make_job

pytestmark = pytest.mark.django_db
WRONG = {"aligned": "notAligned", "partialAligned": "aligned", "notAligned": "aligned"}


def answer(job: LabelingJob, user, n: int, seconds: float, wrong_tests: bool = False) -> int:  # type: ignore[no-untyped-def]
    """Answer ``n`` questions, each ``seconds`` after the previous answer (server clock); returns answers."""
    done = 0
    clock = timezone.now()
    for _ in range(n):
        try:
            a = assignment.next_question(job, user)
        except assignment.AnnotatorRemoved:
            break
        if a is None:
            break
        Assignment.objects.filter(pk=a.pk).update(served_at=clock)
        clock += timedelta(seconds=seconds)
        gold = a.test_question.gold_label if a.test_question else None
        label = (WRONG[gold] if wrong_tests else gold) if gold else "aligned"
        labeling.submit_answer(user, a.token, label, now=clock)
        done += 1
    return done


def test_ledger_recounts_rows_and_prices_them(make_user):
    job = make_job(every=3, min_tests=3, threshold=0.85, n_articles=3)
    LabelingJob.objects.filter(pk=job.pk).update(pay_per_judgment=Decimal("0.05"), pay_per_hour=Decimal("12"), currency="EUR")
    job.refresh_from_db()
    # fixed ids: serving draws from (job seed, user id, count), and ids from a sequence depend on which tests ran
    # before (under some orders the bad annotator drew three test questions first and had no judgment to discard)
    good, bad = make_user("good", "annotator", id=900_001), make_user("bad", "annotator", id=900_002)
    answer(job, good, 10, 15.0)
    answer(job, bad, 30, 11.0, wrong_tests=True)
    assert Membership.objects.get(job=job, annotator=bad).removed
    VerifiedLabel.objects.create(candidate=job.items.first().candidate, label="aligned", job=job)
    book = ledger.job_ledger(job)
    assert [r.annotator for r in book.rows] == ["bad", "good"]
    for row, user, secs in ((book.rows[0], bad, 11.0), (book.rows[1], good, 15.0)):
        judgments = Judgment.objects.filter(job=job, annotator=user)
        tests = CheckAnswer.objects.filter(job=job, annotator=user).count()
        assert row.judgments == judgments.count() and row.test_answers == tests
        assert row.discarded == judgments.filter(is_valid=False).count()
        assert row.seconds == pytest.approx(secs * (row.judgments + tests))
        expected = Decimal("0.05") * (row.judgments + tests) + Decimal("12") * Decimal(str(row.seconds)) / 3600
        assert row.cost == expected.quantize(Decimal("0.01"))
    assert book.rows[0].discarded == book.rows[0].judgments > 0 and book.rows[1].discarded == 0
    total = book.total
    assert total.cost == book.rows[0].cost + book.rows[1].cost
    assert total.valid_judgments == Judgment.objects.filter(job=job, is_valid=True).count()
    assert book.cost_per_valid_judgment == (total.cost / total.valid_judgments).quantize(Decimal("0.0001"))
    assert book.verified_pairs == 1 and book.cost_per_verified_pair == total.cost.quantize(Decimal("0.0001"))


def test_ledger_on_the_job_page_and_in_the_api(client, make_user, researcher):
    job = make_simulated_job_with_pay()
    client.force_login(researcher)
    page = client.get(reverse("annotation:job_detail", args=[job.pk])).content.decode()
    book = ledger.job_ledger(job)
    assert 'id="ledger-table"' in page and str(book.total.cost) in page and str(book.cost_per_valid_judgment) in page
    api = APIClient()
    api.force_login(researcher)
    data = api.get(reverse("labelingjob-ledger", args=[job.pk])).json()
    assert data["total"]["cost"] == str(book.total.cost) and data["currency"] == "GBP"
    assert len(data["annotators"]) == len(book.rows) and data["total"]["judgments"] == Judgment.objects.filter(job=job).count()
    annotator = APIClient()
    annotator.force_login(make_user("nosy", "annotator"))
    assert annotator.get(reverse("labelingjob-ledger", args=[job.pk])).status_code == 403


def make_simulated_job_with_pay() -> LabelingJob:
    return create_simulated_job("paid", n_items=30, pay_per_judgment="0.02", pay_per_hour="9.50", currency="GBP")


def test_simulated_job_fills_a_ledger():
    job = make_simulated_job_with_pay()
    book = ledger.job_ledger(job)
    judgments = Judgment.objects.filter(job=job)
    assert book.total.judgments == judgments.count() > 0
    tests = CheckAnswer.objects.filter(job=job)
    assert book.total.test_answers == tests.count() == 20 * Membership.objects.filter(job=job).count()
    assert book.total.test_answers == sum(Membership.objects.filter(job=job).values_list("tests_answered", flat=True))
    assert book.total.seconds == pytest.approx(sum(judgments.values_list("seconds", flat=True)) + sum(tests.values_list("seconds", flat=True)))
    assert book.total.cost > 0 and book.cost_per_valid_judgment is not None and book.cost_per_verified_pair is None
    # the memberships are recounts of the rows, as in a real job
    for m in Membership.objects.filter(job=job):
        mine = tests.filter(annotator=m.annotator)
        assert m.tests_correct == mine.filter(correct=True).count() and m.tests_answered == mine.count() == 20
        assert m.questions_answered == judgments.filter(annotator=m.annotator).count() + mine.count()
    assert job.test_questions.count() == 20 and not job.items.filter(candidate__in=job.test_questions.values("candidate")).exists()


def test_pay_is_changed_in_the_api_and_the_ledger_recounts(make_user, researcher):
    job = make_simulated_job_with_pay()
    api = APIClient()
    api.force_login(researcher)
    url = reverse("labelingjob-ledger", args=[job.pk])
    before = api.get(url).json()
    data = api.patch(url, {"pay_per_hour": "19.00"}, format="json").json()
    job.refresh_from_db()
    assert (job.pay_per_hour, job.pay_per_judgment, job.currency) == (Decimal("19.00"), Decimal("0.02"), "GBP")
    assert data == api.get(url).json() and data["pay_per_hour"] == "19.00"
    assert Decimal(data["total"]["cost"]) > Decimal(before["total"]["cost"])
    assert data["total"]["judgments"] == before["total"]["judgments"]
    for body, field in (({"currency": "pounds"}, "currency"), ({"pay_per_judgment": "-1"}, "pay_per_judgment"),
                        ({"pay_per_hour": "99999999"}, "pay_per_hour"), ({"pay_per_judgment": "0.12345"}, "pay_per_judgment"),
                        ({"pay_per_hour": 1e-7}, "pay_per_hour")):
        refused = api.patch(url, body, format="json")
        assert refused.status_code == 400 and refused.json()["code"] == "invalid" and field in refused.json()["errors"], body
    job.refresh_from_db()
    assert (job.pay_per_hour, job.currency) == (Decimal("19.00"), "GBP")  # nothing refused was saved
    unchanged = api.patch(url, {}, format="json")  # nothing to change: the ledger as it is
    assert unchanged.status_code == 200 and unchanged.json() == data
    assert api.patch(url, {"pay_per_judgment": "10000", "pay_per_hour": "1000000.00"}, format="json").status_code == 200
    annotator = APIClient()
    annotator.force_login(make_user("nosy", "annotator"))
    assert annotator.patch(url, {"pay_per_hour": "0"}, format="json").status_code == 403
    assert api.patch(reverse("labelingjob-ledger", args=[job.pk + 999]), {"pay_per_hour": "1"}, format="json").status_code == 404


def test_pay_is_changed_on_the_job_page(client, researcher):
    job = make_simulated_job_with_pay()
    client.force_login(researcher)
    url = reverse("annotation:job_detail", args=[job.pk])
    page = client.get(url).content.decode()
    assert 'id="pay-settings"' in page and 'name="save_pay"' in page and 'value="9.50"' in page
    refused = client.post(url, {"save_pay": "1", "pay_per_judgment": "0.02", "pay_per_hour": "-3", "currency": "GBP"})
    assert refused.status_code == 200 and "cannot be negative" in refused.content.decode()
    job.refresh_from_db()
    assert job.pay_per_hour == Decimal("9.50")
    saved = client.post(url, {"save_pay": "1", "pay_per_judgment": "0.02", "pay_per_hour": "", "currency": "EUR"})
    assert saved.status_code == 302 and saved["Location"].endswith("#ledger")
    job.refresh_from_db()
    assert (job.pay_per_judgment, job.pay_per_hour, job.currency) == (Decimal("0.02"), Decimal(0), "EUR")  # emptied: 0
    page = client.get(url).content.decode()
    assert f"{ledger.job_ledger(job).total.cost}</th>" in page and "EUR per hour" in page
