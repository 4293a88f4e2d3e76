"""CachedQuery: compiled once, the same rows as the queryset it stands for, for any parameters."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Assignment, Membership
from annotation.services import assignment
from annotation.services.cached_sql import CachedQuery, concrete_attnames, instance
from annotation.tests.factories import make_job

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
    assert (rebuilt.pk, rebuilt.questions_served, rebuilt.removed, rebuilt.last_answer_at) == (m.pk, 2, False, m.last_answer_at)


def test_cached_query_refuses_a_parameter_the_orm_does_not_pass_as_is():
    cached = CachedQuery(lambda token: Assignment.objects.filter(token__startswith=token).values_list("pk"), token=str)
    with pytest.raises(ValueError, match="token"):
        cached.rows(token="abc")  # the ORM sends "abc%": the sentinel cannot be found, so neither could the value
