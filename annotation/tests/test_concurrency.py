"""20 annotators race on PostgreSQL: no item over capacity, no judgment lost or duplicated,
retries idempotent, removals in the middle of the race keep the counters exact."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection, connections

from annotation.models import Assignment, JobItem, Judgment, Membership
from annotation.services import assignment, labeling
from annotation.tests.factories import make_job

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

N_ANNOTATORS = 20
N_BAD = 3  # answer every check question wrongly and get removed mid-race


@pytest.fixture
def postgres_only():  # type: ignore[no-untyped-def]
    if connection.vendor != "postgresql":
        pytest.skip("concurrency test needs PostgreSQL (set DATABASE_URL=postgres://...)")


def test_twenty_annotators_race(postgres_only, make_user):  # type: ignore[no-untyped-def]
    job = make_job(n_articles=3, judgments_per_pair=3, every=3, min_tests=1, threshold=0.85, min_seconds=0)
    users = [make_user(f"racer{i}", "annotator") for i in range(N_ANNOTATORS)]
    bad = {u.pk for u in users[:N_BAD]}
    barrier = threading.Barrier(N_ANNOTATORS)
    told: dict[int, list[tuple[str, str]]] = {u.pk: [] for u in users}  # accepted (token, label), not duplicates
    errors: list[BaseException] = []

    def work(user, race: bool = True) -> None:  # type: ignore[no-untyped-def]
        try:
            if race:
                barrier.wait()
            for _ in range(500):
                try:
                    a = assignment.next_question(job, user)
                except assignment.AnnotatorRemoved:
                    return
                if a is None:
                    return
                label = "aligned"
                if a.test_question_id is not None:
                    gold = a.test_question.gold_label
                    label = ("notAligned" if gold != "notAligned" else "aligned") if user.pk in bad else gold
                try:
                    first = labeling.submit_answer(user, a.token, label)
                except labeling.Removed:
                    return
                retry = labeling.submit_answer(user, a.token, label)  # a client retry: must not count twice
                assert retry.duplicate and retry.label == first.label
                if not first.duplicate:
                    told[user.pk].append((a.token, label))
                if first.removed:
                    return
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            if race:
                connections.close_all()

    threads = [threading.Thread(target=work, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    # annotators who found every open pair reserved by others stopped early; pairs released by a
    # removal mid-race are still open: the good annotators come back once more
    for user in users[N_BAD:]:
        work(user, race=False)
    assert not errors, errors[:3]

    cap = job.judgments_per_pair
    items = list(JobItem.objects.filter(job=job))
    valid = Counter(Judgment.objects.filter(job=job, is_valid=True).values_list("item_id", flat=True))
    for item in items:
        assert item.judgments_count == valid[item.pk] <= cap, item.pk
        assert item.reserved_count == Assignment.objects.filter(item=item, answered_at__isnull=True).count()
    # with 17 good annotators every pair got all its judgments in the end
    assert all(valid[item.pk] == cap for item in items)
    # nothing the clients were told is lost, nothing is duplicated
    removed = set(Membership.objects.filter(job=job, removed=True).values_list("annotator_id", flat=True))
    assert removed and removed <= bad  # a bad annotator who finished no page with a check question stays
    for m in Membership.objects.filter(job=job, annotator_id__in=bad):
        assert m.removed == (m.shown_tests_answered >= 1)
    for user in users:
        for token, label in told[user.pk]:
            a = Assignment.objects.get(token=token)
            assert a.answered_at is not None and a.answer == label
            if a.item_id is not None:
                j = Judgment.objects.get(item_id=a.item_id, annotator=user)
                assert j.label == label and j.is_valid == (user.pk not in removed)
    told_items = sum(1 for u in users for t, _ in told[u.pk] if Assignment.objects.get(token=t).item_id)
    assert Judgment.objects.filter(job=job).count() == told_items


@pytest.mark.parametrize("trial", range(3))
def test_twenty_parallel_next_requests_leave_at_most_two_reservations(postgres_only, make_user, trial):  # type: ignore[no-untyped-def]
    """Issue 10 finding 6: one annotator's 20 parallel "next" requests left 3 reservations (limit 2)."""
    job = make_job(n_articles=3, judgments_per_pair=3, every=3, min_seconds=0)
    user = make_user(f"greedy{trial}", "annotator")
    assignment.membership_for(job, user)
    barrier = threading.Barrier(20)
    tokens: list[str | None] = []
    errors: list[BaseException] = []

    def request() -> None:
        try:
            barrier.wait()
            found = assignment.next_question(job, user)
            tokens.append(found.token if found else None)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=request) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[:3]
    pending = Assignment.objects.filter(job=job, annotator=user, answered_at__isnull=True)
    assert pending.count() <= assignment.MAX_PENDING
    assert {t for t in tokens if t} <= set(pending.values_list("token", flat=True))
    items = list(JobItem.objects.filter(job=job))
    assert sum(i.reserved_count for i in items) == pending.exclude(item=None).count()
