"""20 annotators race on PostgreSQL: no item over capacity, no judgment lost or duplicated,
retries idempotent, removals in the middle of the race keep the counters exact."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import TypeVar

import pytest
from django.db import connection, connections

from annotation.models import Assignment, JobItem, Judgment, Membership
from annotation.services import assignment, labeling
from annotation.tests.factories import make_job

T = TypeVar("T")

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

N_ANNOTATORS = 20
N_BAD = 3  # answer every check question wrongly and get removed mid-race


@pytest.fixture
def postgres_only():  # type: ignore[no-untyped-def]
    if connection.vendor != "postgresql":
        pytest.skip("concurrency test needs PostgreSQL (set DATABASE_URL=postgres://...)")


def in_parallel(n: int, call: Callable[[], T]) -> list[T]:
    """``call()`` in ``n`` threads released at once (a barrier), each on its own connection; the
    results, after asserting that none raised."""
    barrier = threading.Barrier(n)
    results: list[T] = []
    errors: list[BaseException] = []

    def request() -> None:
        try:
            barrier.wait()
            results.append(call())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=request) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[:3]
    return results


def test_twenty_annotators_race(postgres_only, make_user):  # type: ignore[no-untyped-def]
    job = make_job(n_articles=3, judgments_per_pair=3, every=3, min_tests=1, threshold=0.85, min_seconds=0)
    users = [make_user(f"racer{i}", "annotator") for i in range(N_ANNOTATORS)]
    bad = {u.pk for u in users[:N_BAD]}
    barrier = threading.Barrier(N_ANNOTATORS)
    told: dict[int, list[tuple[str, str]]] = {u.pk: [] for u in users}  # accepted (token, label), not duplicates
    errors: list[BaseException] = []

    def label_for(user, a) -> str:  # type: ignore[no-untyped-def]
        """The gold label, or a wrong one for the bad annotators; "aligned" for ordinary items."""
        if a.test_question_id is None:
            return "aligned"
        gold = a.test_question.gold_label
        return ("notAligned" if gold != "notAligned" else "aligned") if user.pk in bad else gold

    def work(user, race: bool = True) -> None:  # type: ignore[no-untyped-def]
        """Odd annotators answer as the page's script does (each answer preloads the following
        question in the answer's transaction), even ones answer and then ask "next"."""
        preloading = user.pk % 2 == 1
        queue: list[str] = []  # preloaded tokens, not on screen yet
        try:
            if race:
                barrier.wait()
            for _ in range(500):
                a: Assignment | None
                if queue:
                    a = Assignment.objects.select_related("test_question").get(token=queue.pop(0))
                else:
                    try:
                        a = assignment.next_question(job, user)
                    except assignment.AnnotatorRemoved:
                        return
                    if a is None:
                        return
                    if preloading:  # the page's first preload
                        pre = assignment.next_question(job, user, (a.token,))
                        queue += [pre.token] if pre else []
                label = label_for(user, a)
                preload = tuple(queue) if preloading else None
                try:
                    first = labeling.submit_answer(user, a.token, label, preload=preload)
                except labeling.Removed:
                    return
                retry = labeling.submit_answer(user, a.token, label, preload=preload)  # a client retry: must not count twice
                assert retry.duplicate and retry.label == first.label
                if preloading and not first.removed:
                    if first.next is not None:  # the retry resumes the question the answer reserved
                        assert retry.next is not None and retry.next.token == first.next.token
                    # (none reserved: the retry may find a pair a removal freed meanwhile)
                    pending = Assignment.objects.filter(job=job, annotator=user, answered_at__isnull=True).count()
                    assert pending <= assignment.MAX_PENDING
                if not first.duplicate:
                    told[user.pk].append((a.token, label))
                if first.removed:
                    return
                if preloading and first.next is not None and first.next.token not in queue:
                    queue.append(first.next.token)
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
    Membership.objects.get_or_create(job=job, annotator=user)
    found = in_parallel(20, lambda: assignment.next_question(job, user))
    tokens = [f.token if f else None for f in found]
    pending = Assignment.objects.filter(job=job, annotator=user, answered_at__isnull=True)
    assert pending.count() <= assignment.MAX_PENDING
    assert {t for t in tokens if t} <= set(pending.values_list("token", flat=True))
    items = list(JobItem.objects.filter(job=job))
    assert sum(i.reserved_count for i in items) == pending.exclude(item=None).count()


@pytest.mark.parametrize("first_question", [True, False])
def test_parallel_labeling_pages_reserve_two_questions_and_show_the_same_pair(postgres_only, make_user, first_question):  # type: ignore[no-untyped-def]
    """A new annotator opening the labeling page in 12 tabs at once: each page serves its question
    and the preloaded next one under one membership lock, so two questions are reserved in all and
    every tab shows the older and preloads the newer. ``first_question``: as the page calls it (each tab
    read no membership, so each inserts it first: one insert wins, the others wait for it and lock it)."""
    job = make_job(n_articles=3, judgments_per_pair=3, every=3, min_seconds=0)
    user = make_user("many-tabs", "annotator")
    pages = in_parallel(12, lambda: assignment.page_served(job, user, first_question=first_question))
    assert Membership.objects.filter(job=job, annotator=user).count() == 1
    pending = list(Assignment.objects.filter(job=job, annotator=user, answered_at__isnull=True).order_by("served_at", "pk"))
    assert [a.token for a in pending] == [pages[0][0][0], pages[0][1][0]]  # type: ignore[index]
    assert {(shown[0], ahead[0]) for shown, ahead in pages} == {(pending[0].token, pending[1].token)}  # type: ignore[index]
    assert Membership.objects.get(job=job, annotator=user).questions_served == 2
    items = list(JobItem.objects.filter(job=job))
    assert sum(i.reserved_count for i in items) == sum(1 for a in pending if a.item_id)


def test_parallel_first_requests_create_one_membership(postgres_only, make_user):  # type: ignore[no-untyped-def]
    """A new annotator's first "next" requests in parallel: serving creates the membership (INSERT ...
    ON CONFLICT DO NOTHING under the lock's transaction), once, and the reservation limit holds."""
    job = make_job(n_articles=3, judgments_per_pair=3, every=3, min_seconds=0)
    user = make_user("newcomer", "annotator")
    found = in_parallel(12, lambda: assignment.next_question(job, user))
    assert Membership.objects.filter(job=job, annotator=user).count() == 1
    pending = Assignment.objects.filter(job=job, annotator=user, answered_at__isnull=True)
    assert 1 <= pending.count() <= assignment.MAX_PENDING
    assert {f.token for f in found if f} <= set(pending.values_list("token", flat=True))
    assert Membership.objects.get(job=job, annotator=user).questions_served == pending.count()


def test_parallel_retries_of_an_answer_with_preload_store_it_once_and_reserve_one_question(postgres_only, make_user):  # type: ignore[no-untyped-def]
    """20 parallel copies of one answer with ``preload`` (a client retrying): one judgment, one
    question reserved for the preload and handed to every copy, never more than two pending."""
    job = make_job(n_articles=3, judgments_per_pair=3, every=0, min_seconds=0)
    user = make_user("retrier", "annotator")
    shown = assignment.next_question(job, user)
    assert shown is not None
    ahead = assignment.next_question(job, user, (shown.token,))
    assert ahead is not None
    results = in_parallel(20, lambda: labeling.submit_answer(user, shown.token, "aligned", preload=(ahead.token,)))
    assert sum(not r.duplicate for r in results) == 1 and Judgment.objects.filter(annotator=user).count() == 1
    following = {r.next.token for r in results if r.next is not None}
    assert len(following) == 1 and ahead.token not in following and len(results) == 20
    pending = Assignment.objects.filter(job=job, annotator=user, answered_at__isnull=True)
    assert set(pending.values_list("token", flat=True)) == following | {ahead.token}
    items = list(JobItem.objects.filter(job=job))
    assert sum(i.reserved_count for i in items) == pending.count()
