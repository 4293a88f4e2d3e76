"""Test questions cannot be spotted: every strategy of the attack in issue 10 is played against
the services and does no better than chance.

The attacker sees only what an annotator sees: the questions' texts in serving order, the answer
results and ``/me/`` (``presenting.my_stats``). Each strategy flags questions as tests (or as
safe to answer carelessly) *before* answering them; the ground truth is the assignment's kind.
"No better than chance" is a one-sided binomial test: the flagged questions are tests no more
often than the base rate of tests allows (p > 0.001); with the old serving (one test per page at
a random place, items in (pair, simple, complex) order, counters updated per answer) each
strategy was right 100 % of the time, p < 1e-10.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from annotation.models import Membership
from annotation.services import assignment, labeling, presenting
from annotation.tests.factories import make_job

pytestmark = pytest.mark.django_db

PAGE = 4
N_ANNOTATORS = 4
QUESTIONS = 60


@dataclass
class Seen:
    simple: str
    is_test: bool
    page_position: int  # 0 .. PAGE-1, as the page dots show it
    counter_before: int  # tests_answered in /me/ just before answering
    counter_after: int  # ... and just after


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def assert_chance(flagged: list[bool], base: float, what: str) -> None:
    """``flagged``: for each flagged question, whether it was a test; no more tests than chance."""
    hits, n = sum(flagged), len(flagged)
    p = binomial_tail(hits, n, base)
    assert p > 0.001, f"{what}: {hits} of {n} flagged were tests (base rate {base:.2f}, p = {p:.2g})"


def play(job, user) -> list[Seen]:  # type: ignore[no-untyped-def]
    seen: list[Seen] = []
    membership = None
    for _ in range(QUESTIONS):
        a = assignment.next_question(job, user)
        if a is None:
            break
        membership = Membership.objects.get(job=job, annotator=user)
        before = presenting.my_stats(job, membership)
        candidate = (a.test_question or a.item).candidate  # type: ignore[union-attr]
        label = a.test_question.gold_label if a.test_question else "aligned"  # a careful annotator
        result = labeling.submit_answer(user, a.token, label)
        membership.refresh_from_db()
        after = presenting.my_stats(job, membership)
        assert result.tests_answered == after.tests_answered
        seen.append(Seen(candidate.simple.text, a.test_question_id is not None, before.page_position,
                         before.tests_answered, after.tests_answered))
    return seen


def test_no_strategy_does_better_than_chance(make_user):  # type: ignore[no-untyped-def]
    job = make_job(n_articles=12, every=PAGE, judgments_per_pair=N_ANNOTATORS, min_tests=100)
    runs = [play(job, make_user(f"attacker{i}", "annotator")) for i in range(N_ANNOTATORS)]
    questions = [q for run in runs for q in run]
    assert len(questions) >= N_ANNOTATORS * QUESTIONS * 0.9
    base = sum(q.is_test for q in questions) / len(questions)
    assert 0.15 < base < 0.4  # the configured rate 1/4, drawn per question
    counter_growth(runs, base)
    page_position(runs, base)
    neighbour_order(runs)


def counter_growth(runs: list[list[Seen]], base: float) -> None:
    # strategy 1a: the answer after which tests_answered grew was a test
    grew = [q.is_test for run in runs for q in run if q.counter_after > q.counter_before]
    assert grew, "the counter never moved"
    # it moves only at page ends: the growth is no news about the last answer of the page
    assert all(q.page_position == PAGE - 1 for run in runs for q in run if q.counter_after > q.counter_before)
    # given growth, every position of the page held tests equally often: the last is not special
    by_position = [0] * PAGE
    pages = 0
    for run in runs:
        for start in range(0, len(run) - PAGE + 1, PAGE):
            page = run[start : start + PAGE]
            if page[-1].counter_after > page[-1].counter_before:
                pages += 1
                for i, q in enumerate(page):
                    by_position[i] += q.is_test
    assert pages and sum(by_position)
    assert_chance([True] * by_position[-1] + [False] * (sum(by_position) - by_position[-1]), 1 / PAGE,
                  "the tests of a page whose counter grew sat at its last position")
    # strategy 1b: once the counter grew the page's test is spent: answer carelessly until the
    # page ends. Here the counter cannot grow inside a page, so the attacker has to wait for
    # the next page and guess; the questions they would treat as safe are tests at the base rate
    safe: list[bool] = []
    for run in runs:
        spent = False
        for q in run:
            if q.page_position == 0:
                spent = False
            if spent:
                safe.append(q.is_test)
            if q.counter_after > q.counter_before and q.page_position < PAGE - 1:
                spent = True
    assert not safe  # never a signal inside a page
    careless = [q.is_test for run in runs for q in run if q.page_position > 0]
    rate = sum(careless) / len(careless)
    assert abs(rate - base) < 0.12, "after the first question of a page, tests still come at the base rate"


def page_position(runs: list[list[Seen]], base: float) -> None:
    # strategy 2: if the first PAGE-1 questions of a page were ordinary, the last one is a test
    last_after_ordinary: list[bool] = []
    per_page: list[int] = []
    for run in runs:
        for start in range(0, len(run) - PAGE + 1, PAGE):
            page = run[start : start + PAGE]
            per_page.append(sum(q.is_test for q in page))
            if not any(q.is_test for q in page[:-1]):
                last_after_ordinary.append(page[-1].is_test)
    assert last_after_ordinary
    assert_chance(last_after_ordinary, base, "last question after ordinary ones")
    assert len(set(per_page)) >= 3  # 0, 1, 2 ... tests per page, not exactly one
    for position in range(PAGE):
        at = [q.is_test for run in runs for q in run if q.page_position == position]
        assert_chance(at, base, f"page position {position}")


def neighbour_order(runs: list[list[Seen]]) -> None:
    base = sum(q.is_test for run in runs for q in run) / sum(len(run) for run in runs)
    # strategy 3: ordinary items came in (pair, simple, complex) order, so a question whose
    # simple sentence differs from both neighbours while the neighbours share one is a test
    flagged: list[bool] = []
    shared_neighbours = 0
    for run in runs:
        for i in range(1, len(run) - 1):
            prev, q, nxt = run[i - 1], run[i], run[i + 1]
            if prev.simple == nxt.simple:
                shared_neighbours += 1
                if q.simple != prev.simple:
                    flagged.append(q.is_test)
    assert_chance(flagged, base, "neighbour-order heuristic")
    # items come in a random order: consecutive questions rarely share a simple sentence
    consecutive_same = sum(run[i].simple == run[i + 1].simple for run in runs for i in range(len(run) - 1))
    pairs = sum(len(run) - 1 for run in runs)
    assert consecutive_same / pairs < 0.25
    assert shared_neighbours / pairs < 0.25
