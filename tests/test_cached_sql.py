"""CachedQuery / CachedUpdate: compiled once, the same rows or the same UPDATE as the queryset they stand
for, for any parameters."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Assignment, JobItem, Judgment, LabelingJob, Membership
from annotation.services import assignment
from annotation.tests.factories import make_job
from config.cached_sql import (
    CachedInsert,
    CachedInsertOrNothing,
    CachedQuery,
    CachedSave,
    CachedUpdate,
    concrete_attnames,
    instance,
    instances,
)

pytestmark = pytest.mark.django_db


def pending(job: int, user: int, now):  # type: ignore[no-untyped-def]
    return (
        Assignment.objects.filter(job_id=job, annotator_id=user, answered_at__isnull=True, expires_at__gt=now)
        .order_by("served_at", "pk")
        .values_list("pk", "token", "served_at")
    )


def test_cached_query_returns_what_the_queryset_returns(make_user):
    job = make_job(every=0, min_seconds=0)
    users = [make_user(f"cq{i}", "annotator") for i in range(2)]
    for user in users:
        first = assignment.next_question(job, user)
        assert first is not None
        assignment.next_question(job, user, (first.token,))
    cached = CachedQuery(pending, job=int, user=int, now=type(timezone.now()))
    now = timezone.now()
    for user in users:
        for when in (now, now + timedelta(days=1)):  # the second: every reservation expired
            assert cached.rows(job=job.pk, user=user.pk, now=when) == list(pending(job.pk, user.pk, when))
    assert len(cached.rows(job=job.pk, user=users[0].pk, now=now)) == 2
    with CaptureQueriesContext(connection) as ctx:
        cached.rows(job=job.pk, user=users[1].pk, now=now)
    assert len(ctx) == 1  # one statement, counted like any other
    m = Membership.objects.get(job=job, annotator=users[0])
    row = CachedQuery(lambda pk: Membership.objects.filter(pk=pk).values_list(*concrete_attnames(Membership)), pk=int).rows(pk=m.pk)[0]
    rebuilt = instance(Membership, row)
    joined = CachedQuery(  # a row of two models side by side, split back by instances()
        lambda pk: Membership.objects.filter(pk=pk).values_list(*concrete_attnames(Membership), *concrete_attnames(LabelingJob, "job__")),
        pk=int,
    ).rows(pk=m.pk)[0]
    member, its_job = instances(joined, Membership, LabelingJob)
    assert (member.pk, member.job_id, its_job.pk, its_job.min_seconds) == (m.pk, job.pk, job.pk, job.min_seconds)
    assert (rebuilt.pk, rebuilt.questions_served, rebuilt.removed, rebuilt.last_answer_at) == (m.pk, 2, False, m.last_answer_at)


def test_cached_query_refuses_a_parameter_the_orm_does_not_pass_as_is():
    cached = CachedQuery(lambda token: Assignment.objects.filter(token__startswith=token).values_list("pk"), token=str)
    with pytest.raises(ValueError, match="token"):
        cached.rows(token="abc")  # the ORM sends "abc%": the sentinel cannot be found, so neither could the value


def test_cached_update_runs_what_queryset_update_runs(make_user):
    job = make_job(every=0, min_seconds=0)
    user = make_user("cu0", "annotator")
    first = assignment.next_question(job, user)
    assert first is not None and first.item_id is not None
    m = Membership.objects.get(job=job, annotator=user)
    when = timezone.now() + timedelta(minutes=3)

    def build(pk, answered, last, served):  # type: ignore[no-untyped-def]
        return Membership.objects.filter(pk=pk), {"questions_answered": answered, "last_answer_at": last, "questions_served": served}

    cached = CachedUpdate(build, pk=int, answered=int, last=type(when), served=int)
    with CaptureQueriesContext(connection) as orm:
        qs, values = build(m.pk, 4, when, 7)
        assert qs.update(**values) == 1
    with CaptureQueriesContext(connection) as ours:
        assert cached.run(pk=m.pk, answered=5, last=when + timedelta(seconds=1), served=9) == 1
    assert len(ours) == len(orm) == 1  # one UPDATE, as update() sends, counted like any other
    assert ours[0]["sql"].split(" SET ")[0] == orm[0]["sql"].split(" SET ")[0]
    m.refresh_from_db()
    assert (m.questions_answered, m.last_answer_at, m.questions_served) == (5, when + timedelta(seconds=1), 9)
    assert cached.run(pk=m.pk + 10_000, answered=1, last=when, served=1) == 0  # no such row: nothing changed
    m.questions_served, m.tests_answered, m.questions_answered = 11, 3, 0  # the last one is not saved
    assert CachedSave(Membership, questions_served=int, tests_answered=int).save(m) == 1
    m.refresh_from_db()
    assert (m.questions_served, m.tests_answered, m.questions_answered) == (11, 3, 5)

    slot = CachedUpdate(  # a guarded update with expressions of the row's own columns
        lambda item, capacity: (
            JobItem.objects.filter(pk=item, reserved_count__gt=0, judgments_count__lt=capacity),
            {"judgments_count": F("judgments_count") + 1, "reserved_count": F("reserved_count") - 1},
        ),
        item=int, capacity=int,
    )
    item = JobItem.objects.get(pk=first.item_id)
    assert (item.judgments_count, item.reserved_count) == (0, 1)
    assert slot.run(item=item.pk, capacity=3) == 1
    assert slot.run(item=item.pk, capacity=3) == 0  # no reservation left: the guard holds
    item.refresh_from_db()
    assert (item.judgments_count, item.reserved_count) == (1, 0)


def test_cached_update_refuses_a_join():
    cached = CachedUpdate(lambda job: (JobItem.objects.filter(job__min_seconds=job), {"reserved_count": 0}), job=int)
    with pytest.raises(ValueError, match="single-table"):
        cached.run(job=1)


def test_cached_insert_stores_what_create_stores(make_user):
    job = make_job(every=0, min_seconds=0)
    users = [make_user(f"ci{i}", "annotator") for i in range(2)]
    served = [assignment.next_question(job, user) for user in users]
    items = [int(a.item_id) for a in served if a is not None and a.item_id is not None]
    assert len(items) == 2
    when = timezone.now() - timedelta(seconds=5)
    insert = CachedInsert(Judgment, job_id=int, item_id=int, annotator_id=int, label=str, seconds=float, created_at=type(when))
    with CaptureQueriesContext(connection) as orm:
        made = Judgment.objects.create(job=job, item_id=items[0], annotator=users[0], label="aligned", seconds=1.5, created_at=when)
    with CaptureQueriesContext(connection) as ours:
        pk = insert.insert(job_id=job.pk, item_id=items[1], annotator_id=users[1].pk, label="notAligned", seconds=2.25, created_at=when)
    assert len(ours) == len(orm) == 1  # one INSERT, counted like any other
    assert ours[0]["sql"].split(" VALUES ")[0] == orm[0]["sql"].split(" VALUES ")[0]
    stored = Judgment.objects.get(pk=pk)
    assert pk != made.pk
    assert (stored.job_id, stored.item_id, stored.annotator_id, stored.label, stored.seconds, stored.is_valid, stored.created_at) == (
        job.pk, items[1], users[1].pk, "notAligned", 2.25, True, when,  # is_valid: its constant default
    )


def test_cached_insert_or_nothing_inserts_once_and_then_does_nothing(make_user):
    job = make_job(every=0, min_seconds=0)
    users = [make_user(f"cn{i}", "annotator") for i in range(2)]
    insert = CachedInsertOrNothing(Membership, {"last_answer_at": None, "removed_at": None}, job_id=int, annotator_id=int)
    with CaptureQueriesContext(connection) as ours:
        pk = insert.insert_or_nothing(job_id=job.pk, annotator_id=users[0].pk)
    assert len(ours) == 1 and ours[0]["sql"].startswith("INSERT")  # one statement: no read of the row after it
    stored = Membership.objects.get(job=job, annotator=users[0])
    assert pk == stored.pk and (stored.questions_served, stored.removed, stored.last_answer_at) == (0, False, None)
    stored.questions_served = 7
    stored.save()
    with CaptureQueriesContext(connection) as again:  # the unique (job, annotator) row exists: nothing written
        assert insert.insert_or_nothing(job_id=job.pk, annotator_id=users[0].pk) is None
    assert len(again) == 1 and Membership.objects.filter(job=job).count() == 1
    assert Membership.objects.get(pk=pk).questions_served == 7
    other = insert.insert_or_nothing(job_id=job.pk, annotator_id=users[1].pk)  # another user: a row of its own
    assert other is not None and other != pk and Membership.objects.filter(job=job).count() == 2
    with pytest.raises(TypeError, match="insert_or_nothing"):  # no pk to promise
        insert.insert(job_id=job.pk, annotator_id=users[1].pk)


def test_cached_insert_refuses_a_column_it_would_freeze():
    with pytest.raises(ValueError, match="created_at"):  # auto_now_add: the caller gives it
        CachedInsert(Judgment, job_id=int, item_id=int, annotator_id=int, label=str, seconds=float)
    with pytest.raises(ValueError, match="no column nope"):
        CachedInsert(Judgment, job_id=int, item_id=int, annotator_id=int, label=str, seconds=float, created_at=str, nope=int)
