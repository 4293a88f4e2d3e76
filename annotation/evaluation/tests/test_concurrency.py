"""20 raters race on PostgreSQL over a slider study while a researcher excludes flagged raters:
no item over capacity, no page rated twice, no rating lost or duplicated, retries idempotent,
the counters exact after exclusions in the middle of the race (as the labeling job's test)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection, connections

from annotation.evaluation.services import assignment, raters, rating
from annotation.evaluation.tests.factories import make_study
from annotation.models import EvalItem, EvalOutput, EvalPage, Rating, StudyRater

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

N_RATERS = 20
N_CARELESS = 3  # score controls like real versions: flagged, then excluded mid-race


@pytest.fixture
def postgres_only():  # type: ignore[no-untyped-def]
    if connection.vendor != "postgresql":
        pytest.skip("concurrency test needs PostgreSQL (set DATABASE_URL=postgres://...)")


def test_twenty_raters_race(postgres_only, make_user):  # type: ignore[no-untyped-def]
    study = make_study("slider", n_items=12, raters=4, min_control_pages=1, flag_share=0.0)
    users = [make_user(f"racer{i}", "annotator") for i in range(N_RATERS)]
    careless = {u.pk for u in users[:N_CARELESS]}
    controls = set(EvalOutput.objects.filter(item__study=study, is_control=True).values_list("pk", flat=True))
    barrier = threading.Barrier(N_RATERS + 1)
    told: dict[int, list[str]] = {u.pk: [] for u in users}
    errors: list[BaseException] = []
    stop = threading.Event()

    def work(user, race: bool = True, pages: int = 200) -> None:  # type: ignore[no-untyped-def]
        try:
            if race:
                barrier.wait()
            for _ in range(pages):
                try:
                    page = assignment.next_page(study, user)
                except assignment.RaterExcluded:
                    return
                if page is None:
                    return
                values = [90.0 if (pk not in controls or user.pk in careless) else 5.0 for pk in page.order]
                ratings = [{"position": p, "values": {"quality": v}} for p, v in enumerate(values)]
                try:
                    first = rating.submit_page(user, page.token, ratings)
                except (rating.Excluded, rating.PageGone):
                    continue  # excluded (or the page released by the exclusion) between serving and answering
                retry = rating.submit_page(user, page.token, ratings)  # a client retry: must not count twice
                assert retry.duplicate
                if not first.duplicate:
                    told[user.pk].append(page.token)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            if race:
                connections.close_all()

    def researcher() -> None:
        try:
            barrier.wait()
            while not stop.is_set():
                for m in StudyRater.objects.filter(study=study, flagged=True, excluded=False):
                    raters.exclude_rater(study, m.rater_id)
                stop.wait(0.02)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    # Each careless rater rates one page before the race (its control fails, so it is flagged): the researcher then
    # excludes them while the others race, whichever threads the scheduler runs first (without this, on a loaded
    # machine the 17 others could take every slot before a careless one was served, leaving nobody to exclude).
    for user in users[:N_CARELESS]:
        work(user, race=False, pages=1)
    assert not errors, errors[:3]
    assert StudyRater.objects.filter(study=study, rater_id__in=careless, flagged=True).count() == N_CARELESS
    threads = [threading.Thread(target=work, args=(u,)) for u in users]
    watcher = threading.Thread(target=researcher)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    stop.set()
    watcher.join(30)
    assert not errors, errors[:3]
    for m in StudyRater.objects.filter(study=study, flagged=True, excluded=False):
        raters.exclude_rater(study, m.rater_id)
    for user in users[N_CARELESS:]:  # items given back by exclusions are rated by the others
        work(user, race=False)
    assert not errors, errors[:3]

    cap = study.raters_per_item
    n_versions = len(study.systems) + 1
    valid_pages = Counter(item for item, _ in set(Rating.objects.filter(study=study, is_valid=True).values_list("item_id", "page_id")))
    for item in EvalItem.objects.filter(study=study):
        assert item.ratings_count == valid_pages[item.pk] == cap, item.pk
        assert item.reserved_count == EvalPage.objects.filter(item=item, answered_at__isnull=True).count() == 0
    pages = list(EvalPage.objects.filter(study=study))
    assert len({(p.rater_id, p.item_id) for p in pages}) == len(pages)  # never the same item twice
    excluded = set(StudyRater.objects.filter(study=study, excluded=True).values_list("rater_id", flat=True))
    assert excluded and excluded <= careless
    for user in users:
        for token in told[user.pk]:
            page = EvalPage.objects.get(token=token)
            got = list(Rating.objects.filter(page=page))
            assert page.answered_at is not None and len(got) == n_versions
            assert all(r.is_valid == (user.pk not in excluded) for r in got)
    assert Rating.objects.filter(study=study).count() == n_versions * sum(len(t) for t in told.values())
