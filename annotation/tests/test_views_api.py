"""Pages and API: no gold in an annotator's HTML/JSON, identical test questions, min time,
idempotency, privacy, CSRF, throttling, job creation, paragraph correction."""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Assignment, JobItem, Judgment, LabelingJob, Membership, ParagraphAlignmentRevision
from annotation.services import assignment, presenting
from annotation.tests.factories import gold_rows, make_corpus, make_job

pytestmark = pytest.mark.django_db


def api_for(user, csrf: bool = False) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


PRELOAD_RE = re.compile(r'(<script id="lab-preload" type="application/json">)(.*?)(</script>)')  # the page's preload


def normalised(html: str, *texts: str) -> str:
    for t in texts:
        html = html.replace(t, "TEXT")
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "CSRF", html)
    html = re.sub(r'"X-CSRFToken": "[^"]+"', "CSRF", html)
    html = PRELOAD_RE.sub(r"\1PRELOAD\3", html)
    return re.sub(r'id="lab-token" value="[^"]+"', "TOKEN", html)


def preloaded(html: str) -> dict[str, str]:
    """The question the labeling page carries for after the one on screen (its ``#lab-preload`` JSON)."""
    found = PRELOAD_RE.search(html)
    assert found, "the page carries no preloaded question"
    return json.loads(found.group(2))  # type: ignore[no-any-return]


def served(user) -> list[Assignment]:  # type: ignore[no-untyped-def]
    """The user's assignments in the order they were served (the shown one first)."""
    return list(Assignment.objects.filter(annotator=user).order_by("served_at", "pk"))


def test_test_questions_look_exactly_like_ordinary_ones(client, make_user):
    job = make_job(every=1, min_seconds=0)  # every question is a test question
    explanations = list(job.test_questions.values_list("explanation", flat=True))
    tester, plain = make_user("tess", "annotator"), make_user("paul", "annotator")
    client.force_login(tester)
    html_test = client.get(reverse("annotation:label", args=[job.pk])).content.decode()
    a_test, ahead_test = served(tester)  # the question on screen and the one the page preloads
    assert a_test.test_question_id is not None and ahead_test.test_question_id is not None
    for text in explanations:
        assert text not in html_test
    assert "gold" not in html_test.lower() and "test_question" not in html_test

    # the other annotator has seen every test question already, so gets ordinary items
    now = timezone.now()
    for n, tq in enumerate(job.test_questions.all()):
        Assignment.objects.create(job=job, annotator=plain, test_question=tq, token=f"seen{n}", served_at=now, expires_at=now, answered_at=now)
    client.force_login(plain)
    html_item = client.get(reverse("annotation:label", args=[job.pk])).content.decode()
    a_item, ahead_item = served(plain)[-2:]
    assert a_item.item_id is not None and ahead_item.item_id is not None
    # the preloaded question: the same keys for a test and an item, its own token and texts
    for html, ahead in ((html_test, ahead_test), (html_item, ahead_item)):
        cand = ahead.item.candidate if ahead.item_id else ahead.test_question.candidate
        assert preloaded(html) == {"token": ahead.token, "complex": cand.complex.text, "simple": cand.simple.text}
    cand_t, cand_i = a_test.test_question.candidate, a_item.item.candidate
    html_test = normalised(html_test, cand_t.simple.text, cand_t.complex.text, tester.username)
    html_item = normalised(html_item, cand_i.simple.text, cand_i.complex.text, plain.username)
    assert html_test == html_item


def test_api_question_has_no_gold_and_same_keys(make_user):
    job = make_job(every=1)
    user = make_user("tess", "annotator")
    api = api_for(user)
    r = api.post(reverse("labelingjob-next", args=[job.pk]), {}, format="json")
    assert r.status_code == 200 and set(r.json()) == {"token", "complex", "simple"}
    body = r.content.decode()
    for expl, gold in job.test_questions.values_list("explanation", "gold_label"):
        assert expl not in body and gold not in body
    job.test_question_every = 0
    job.save()
    r2 = api_for(make_user("paul", "annotator")).post(reverse("labelingjob-next", args=[job.pk]), {}, format="json")
    assert set(r2.json()) == set(r.json())
    # the context of a question is the annotator's own business
    ctx = api.get(reverse("annotation-context", args=[r.json()["token"]]))
    assert ctx.status_code == 200 and r.json()["simple"] in ctx.json()["simple_sentence"]
    assert api_for(make_user("eve", "annotator")).get(reverse("annotation-context", args=[r.json()["token"]])).status_code == 404


def test_api_answer_flow_too_fast_idempotent_private(make_user):
    job = make_job(every=0, min_seconds=30)
    user = make_user("anna2", "annotator")
    api = api_for(user)
    q = api.post(reverse("labelingjob-next", args=[job.pk]), {}, format="json").json()
    r = api.post(reverse("annotation-answer"), {"token": q["token"], "label": "aligned"}, format="json")
    assert r.status_code == 429 and r.json()["code"] == "too_fast" and "30 seconds" in r.json()["detail"]
    assert not Judgment.objects.exists()
    job.min_seconds = 0
    job.save()
    first = api.post(reverse("annotation-answer"), {"token": q["token"], "label": "aligned"}, format="json")
    again = api.post(reverse("annotation-answer"), {"token": q["token"], "label": "aligned"}, format="json")
    assert first.status_code == again.status_code == 200
    assert again.json()["duplicate"] is True and Judgment.objects.count() == 1
    other = api_for(make_user("eve", "annotator"))
    assert other.post(reverse("annotation-answer"), {"token": q["token"], "label": "notAligned"}, format="json").status_code == 410
    assert api.post(reverse("annotation-answer"), {"token": q["token"], "label": "maybe"}, format="json").status_code == 400
    me = api.get(reverse("labelingjob-me", args=[job.pk])).json()
    assert me["answered"] == 1 and me["removed"] is False
    assert api.get(reverse("labelingjob-list")).json()["results"][0]["id"] == job.pk


def test_a_blank_token_in_exclude_excludes_nothing(make_user):
    """The schema allows any string in ``exclude`` (schemathesis sent " "): a blank one is accepted."""
    job = make_job(every=0, min_seconds=0)
    api = api_for(make_user("blank", "annotator"))
    q = api.post(reverse("labelingjob-next", args=[job.pk]), {"exclude": [" ", ""]}, format="json")
    assert q.status_code == 200
    r = api.post(reverse("annotation-answer"),
                 {"token": q.json()["token"], "label": "aligned", "preload": True, "exclude": [" "]}, format="json")
    assert r.status_code == 200 and r.json()["next"]["token"] != q.json()["token"]


def test_csrf_is_enforced_for_session_auth(make_user):
    job = make_job(every=0)
    api = api_for(make_user("anna2", "annotator"), csrf=True)
    assert api.post(reverse("labelingjob-next", args=[job.pk]), {}, format="json").status_code == 403
    assert api.post(reverse("annotation-answer"), {"token": "x", "label": "aligned"}, format="json").status_code == 403


def test_answers_are_throttled(make_user, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"answers": "3/min"}}
    job = make_job(every=0)
    api = api_for(make_user("anna2", "annotator"))
    codes = []
    for _ in range(4):
        q = api.post(reverse("labelingjob-next", args=[job.pk]), {}, format="json").json()
        codes.append(api.post(reverse("annotation-answer"), {"token": q["token"], "label": "aligned"}, format="json").status_code)
    assert codes == [200, 200, 200, 429]


def test_removed_annotator_sees_kind_page_and_api_refuses(client, make_user):
    job = make_job(every=1, min_tests=1, threshold=0.99)
    user = make_user("anna2", "annotator")
    api = api_for(user)
    q = api.post(reverse("labelingjob-next", args=[job.pk]), {}, format="json").json()
    gold = Assignment.objects.get(token=q["token"]).test_question.gold_label
    wrong = "notAligned" if gold != "notAligned" else "aligned"
    r = api.post(reverse("annotation-answer"), {"token": q["token"], "label": wrong}, format="json").json()
    # a page of one question: this answer ends it, so its feedback and the removal come with it
    assert r["page_end"] and r["missed"] and r["removed"] and r["feedback"][0]["explanation"]
    assert r["feedback"][0]["expected"] == gold and r["feedback"][0]["given"] == wrong
    assert api.post(reverse("labelingjob-next", args=[job.pk]), {}, format="json").status_code == 403
    client.force_login(user)
    page = client.get(reverse("annotation:label", args=[job.pk]))
    assert page.status_code == 403 and "Thank you for your work" in page.content.decode()


def test_schema_lists_annotation_endpoints(client, admin_user):
    client.force_login(admin_user)
    schema = client.get("/api/schema/").content.decode()
    for path in ("/api/annotation/jobs/{id}/next/", "/api/annotation/answers/", "/api/annotation/jobs/{id}/me/"):
        assert path in schema


def test_roles_guard_pages(client, annotator, verifier):
    pair = make_corpus(n_articles=1).pairs.get()
    client.force_login(annotator)
    assert client.get(reverse("annotation:correct_pair", args=[pair.pk])).status_code == 403
    assert client.get(reverse("annotation:job_new")).status_code == 403
    assert client.get(reverse("annotation:home")).status_code == 200
    client.force_login(verifier)
    assert client.get(reverse("annotation:job_new")).status_code == 403


def test_job_form_with_tsv_upload(client, researcher):
    corpus = make_corpus()
    tsv = "".join(f"{r.label}\t{r.simple_id}\t{r.complex_id}\t{r.explanation}\n" for r in gold_rows(corpus))
    client.force_login(researcher)
    r = client.post(
        reverse("annotation:job_new"),
        {
            "name": "Pilot", "corpus": corpus.pk, "strategy": "paragraph", "top_k": 3, "pair_ids": "",
            "judgments_per_pair": 5, "test_question_every": 5, "min_seconds": 10, "accuracy_threshold": 0.85,
            "min_test_questions": 4, "reservation_minutes": 15, "gold_source": "tsv", "max_tests": 50,
            "gold_file": SimpleUploadedFile("gold.tsv", tsv.encode()),
        },
    )
    job = LabelingJob.objects.get(name="Pilot")
    assert r.status_code == 302 and job.test_questions.count() == 6 and job.items.exists()
    assert "Only the colour and size match." in job.test_questions.values_list("explanation", flat=True)
    detail = client.get(reverse("annotation:job_detail", args=[job.pk]))
    assert detail.status_code == 200 and "Pilot" in detail.content.decode()
    bad = client.post(reverse("annotation:job_new"), {"name": "x", "corpus": corpus.pk, "gold_source": "tsv"})
    assert bad.status_code == 200 and LabelingJob.objects.count() == 1


def test_correction_page_lock_and_save(client, verifier, make_user):
    pair = make_corpus(n_articles=1).pairs.get()
    client.force_login(verifier)
    page = client.get(reverse("annotation:correct_pair", args=[pair.pk])).content.decode()
    assert "Locked to you until" in page and 'data-readonly="0"' in page
    r = client.post(reverse("annotation:correct_pair", args=[pair.pk]), {"links": "0-0,1-1,2-2,3-3", "action": "save"})
    assert r.status_code == 302
    rev = ParagraphAlignmentRevision.objects.filter(pair=pair, source="manual").get()
    assert rev.user == verifier and rev.links == [[0, 0], [1, 1], [2, 2], [3, 3]]
    client.force_login(make_user("otto", "verifier"))
    other = client.get(reverse("annotation:correct_pair", args=[pair.pk])).content.decode()
    assert "Being corrected by <strong>vera</strong> until" in other and 'data-readonly="1"' in other
    client.post(reverse("annotation:correct_pair", args=[pair.pk]), {"links": "0-0"})
    assert ParagraphAlignmentRevision.objects.filter(pair=pair, source="manual").count() == 1
    assert client.get(reverse("annotation:correct_index")).status_code == 200


def test_correction_page_costs_the_same_in_a_corpus_of_one_pair_or_many(client, verifier):
    """The page reads one pair, its two documents, links and revisions: nothing over the corpus."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    small = make_corpus("one pair", n_articles=1).pairs.get()
    large = make_corpus("many pairs", n_articles=12).pairs.order_by("pk").last()
    client.force_login(verifier)
    counts = []
    for pair in (small, large):
        client.get(reverse("annotation:correct_pair", args=[pair.pk]))  # first open: the automatic alignment is stored
        with CaptureQueriesContext(connection) as captured:
            page = client.get(reverse("annotation:correct_pair", args=[pair.pk]))
        assert page.status_code == 200 and "Locked to you until" in page.content.decode()
        counts.append(len(captured))
    assert counts[0] == counts[1]


def test_label_page_and_fallback_form(client, annotator):
    job = make_job(every=0, min_seconds=0)
    client.force_login(annotator)
    page = client.get(reverse("annotation:label", args=[job.pk]))
    assert page.status_code == 200
    shown, ahead = served(annotator)  # the page reserves its question and the preloaded next one
    token = shown.token
    assert f'id="lab-token" value="{token}"' in page.content.decode()
    assert preloaded(page.content.decode())["token"] == ahead.token
    # a reload shows the same question and preloads the same next one: nothing more is reserved
    again = client.get(reverse("annotation:label", args=[job.pk])).content.decode()
    assert f'id="lab-token" value="{token}"' in again and preloaded(again)["token"] == ahead.token
    assert Assignment.objects.filter(annotator=annotator).count() == 2
    ctx = client.get(reverse("annotation:context", args=[token]))
    assert ctx.status_code == 200 and "<mark>" in ctx.content.decode()
    client.post(reverse("annotation:answer_form", args=[job.pk]), {"token": token, "label": "partialAligned"})
    assert Judgment.objects.get(annotator=annotator).label == "partialAligned"
    # without JavaScript the next page shows the question preloaded before (and preloads a third)
    after = client.get(reverse("annotation:label", args=[job.pk])).content.decode()
    assert f'id="lab-token" value="{ahead.token}"' in after and preloaded(after)["token"] not in (token, ahead.token)
    assert client.get(reverse("annotation:instructions", args=[job.pk])).status_code == 200
    # everything answered -> the done page
    while (a := assignment.next_question(job, annotator)) is not None:
        client.post(reverse("annotation:answer_form", args=[job.pk]), {"token": a.token, "label": "aligned"})
    assert "Nothing left for you" in client.get(reverse("annotation:label", args=[job.pk])).content.decode()


def test_home_and_api_list_show_closed_jobs_to_researchers_only(client, annotator, researcher):
    open_job = make_job()
    closed = make_job(open_job.corpus)
    closed.name, closed.status = "the closed one", LabelingJob.Status.CLOSED
    closed.save()
    for user, sees_closed in ((annotator, False), (researcher, True)):
        client.force_login(user)
        html = client.get(reverse("annotation:home")).content.decode()
        assert open_job.name in html and ("the closed one" in html) is sees_closed
        ids = {row["id"] for row in api_for(user).get(reverse("labelingjob-list")).json()["results"]}
        assert ids == ({open_job.pk, closed.pk} if sees_closed else {open_job.pk})


def test_job_progress_counts(make_user):
    job = make_job(judgments_per_pair=2)
    items = list(job.items.order_by("pk"))
    Membership.objects.create(job=job, annotator=make_user("ann", "annotator"))
    Membership.objects.create(job=job, annotator=make_user("bob", "annotator"), removed=True)
    JobItem.objects.filter(pk=items[0].pk).update(judgments_count=2)
    JobItem.objects.filter(pk=items[1].pk).update(judgments_count=1)
    assert presenting.job_progress(job) == {
        "items": len(items), "judgments": 3, "wanted": 2 * len(items), "complete": 1,
        "tests": job.test_questions.count(), "annotators": 2, "removed": 1,
    }


@pytest.mark.parametrize("status", [LabelingJob.Status.PAUSED, LabelingJob.Status.CLOSED])
def test_paused_or_closed_job_refuses_answers_with_409_in_api_and_html(client, make_user, status):
    job = make_job(every=0)
    user = make_user("anna2", "annotator")
    api = api_for(user)
    q1 = api.post(reverse("labelingjob-next", args=[job.pk]), {}, format="json").json()
    q2 = api.post(reverse("labelingjob-next", args=[job.pk]), {"exclude": [q1["token"]]}, format="json").json()
    LabelingJob.objects.filter(pk=job.pk).update(status=status)
    r = api.post(reverse("annotation-answer"), {"token": q1["token"], "label": "aligned"}, format="json")
    assert r.status_code == 409 and r.json()["code"] == "job_closed" and status in r.json()["detail"]
    client.force_login(user)
    page = client.post(reverse("annotation:answer_form", args=[job.pk]), {"token": q2["token"], "label": "aligned"})
    assert page.status_code == 409 and "answers are not accepted now" in page.content.decode()
    assert not Judgment.objects.exists()
    assert not Assignment.objects.filter(answered_at__isnull=False).exists()


def test_schema_documents_the_409_of_answers(client, admin_user):
    client.force_login(admin_user)
    schema = client.get("/api/schema/?format=json").json()
    responses = schema["paths"]["/api/annotation/answers/"]["post"]["responses"]
    assert "409" in responses and "page_end" in str(schema["components"]["schemas"]["AnswerResult"])


def test_me_counts_move_only_at_page_ends(make_user):
    job = make_job(every=3, min_seconds=0, min_tests=100, n_articles=3)
    user = make_user("anna3", "annotator")
    api = api_for(user)
    was_test: list[bool] = []
    shown: list[int] = []
    for _ in range(12):
        q = api.post(reverse("labelingjob-next", args=[job.pk]), {}, format="json")
        assert q.status_code == 200
        was_test.append(Assignment.objects.get(token=q.json()["token"]).test_question_id is not None)
        api.post(reverse("annotation-answer"), {"token": q.json()["token"], "label": "aligned"}, format="json")
        shown.append(api.get(reverse("labelingjob-me", args=[job.pk])).json()["tests_answered"])
    assert any(was_test)
    for n in range(1, 13):
        settled = n - n % 3  # the answers up to the last page end
        assert shown[n - 1] == sum(was_test[:settled])


def test_labeling_page_and_answer_stay_within_their_sql_budget(client, make_user, django_assert_max_num_queries, monkeypatch):
    """Statements per request (session, user with its roles, BEGIN/COMMIT included): the labeling
    page that serves a question 12 (13 when a test question's extra read runs; the expired-reservation
    sweep, 3 statements at most every 5 s, is kept out), the answer 10, 11 at a page's end, where
    settling the page and the answer's counters share one UPDATE (docs/annotation.md). Was 14 and
    11-12 before the user's roles came with the user and the job with the membership."""
    job = make_job(every=5, min_seconds=0, n_articles=3, min_tests=100)  # no removal: its statements are not the steady state
    user = make_user("counted", "annotator")
    client.force_login(user)
    client.get(reverse("annotation:label", args=[job.pk]))  # membership created, first question served
    monkeypatch.setattr(assignment, "SWEEP_EVERY_SECONDS", 1e9)  # swept above; not again (timing-free counts)
    token_re = re.compile(r'id="lab-token" value="([^"]+)"')
    for _ in range(6):  # past the end of the first page of five
        with django_assert_max_num_queries(13):
            page = client.get(reverse("annotation:label", args=[job.pk]))
        token = token_re.search(page.content.decode()).group(1)  # type: ignore[union-attr]
        with django_assert_max_num_queries(11):
            r = client.post(reverse("annotation-answer"), {"token": token, "label": "aligned"}, content_type="application/json")
        assert r.status_code == 200


# the labeling page of a user's first visit, which creates the membership and serves two questions:
# session, user, membership (none yet), job, the expiry sweep (SAVEPOINT, SELECT, RELEASE), then under
# one SAVEPOINT/RELEASE: the membership's INSERT ... ON CONFLICT DO NOTHING RETURNING (a new row is locked by
# its transaction: no lock statement), the pending questions (read once for both), and per question the
# free item, its UPDATE and the assignment's INSERT, the membership's save
PAGE_FIRST_VISIT = 18


def test_one_request_per_question_stays_within_its_sql_budget(client, make_user, django_assert_max_num_queries, monkeypatch):
    """What the page's script sends: the page once (it serves the question and the preloaded next
    one), then per question one answer with ``preload``: 14 statements (session, user with roles,
    BEGIN/COMMIT included), 15 at a page's end or when the item search wraps around. "next", sent
    only when no question is waiting, 11. The page on a user's first visit of the job creates the
    membership too: PAGE_FIRST_VISIT."""
    job = make_job(every=5, min_seconds=0, n_articles=3, min_tests=100)
    user = make_user("counted", "annotator")
    client.force_login(user)
    client.get(reverse("annotation:home"))  # the session's own first statements are not the page's
    with django_assert_max_num_queries(PAGE_FIRST_VISIT) as first:
        page = client.get(reverse("annotation:label", args=[job.pk])).content.decode()
    membership_sql = [q["sql"] for q in first.captured_queries if "annotation_membership" in q["sql"]]
    assert len(membership_sql) == 3, membership_sql  # the read (none), the insert, the save: no lock statement
    assert membership_sql[1].startswith("INSERT") and "FOR UPDATE" not in " ".join(membership_sql)
    shown = re.search(r'id="lab-token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    ahead = preloaded(page)["token"]
    monkeypatch.setattr(assignment, "SWEEP_EVERY_SECONDS", 1e9)  # the sweep (3 statements every 5 s) is not per question
    for _ in range(11):  # past two page ends
        body = {"token": shown, "label": "aligned", "preload": True, "exclude": [ahead]}
        with django_assert_max_num_queries(15):
            r = client.post(reverse("annotation-answer"), body, content_type="application/json")
        assert r.status_code == 200 and r.json()["next"]["token"] not in (shown, ahead)
        shown, ahead = ahead, r.json()["next"]["token"]
    assert Membership.objects.get(job=job, annotator=user).questions_answered == 11
    # an answer without preload leaves one question waiting; "next" past it serves a new one
    r = client.post(reverse("annotation-answer"), {"token": shown, "label": "aligned"}, content_type="application/json")
    assert r.status_code == 200
    with django_assert_max_num_queries(11):
        nxt = client.post(reverse("labelingjob-next", args=[job.pk]), {"exclude": [ahead]}, content_type="application/json")
    assert nxt.status_code == 200 and nxt.json()["token"] not in (shown, ahead)


def test_answer_with_preload_brings_the_question_after_the_preloaded_one(make_user):
    job = make_job(every=0, min_seconds=0)
    user = make_user("pre", "annotator")
    api = api_for(user)
    a = api.post(reverse("labelingjob-next", args=[job.pk]), {}, format="json").json()["token"]
    b = api.post(reverse("labelingjob-next", args=[job.pk]), {"exclude": [a]}, format="json").json()["token"]
    body = {"token": a, "label": "aligned", "preload": True, "exclude": [b]}
    first = api.post(reverse("annotation-answer"), body, format="json").json()
    c = first["next"]["token"]
    assert c not in (a, b) and set(first["next"]) == {"token", "complex", "simple"}
    pending = Assignment.objects.filter(annotator=user, answered_at__isnull=True)
    assert set(pending.values_list("token", flat=True)) == {b, c}  # the limit of two holds
    served = Assignment.objects.get(token=c)
    assert first["next"]["simple"] == served.item.candidate.simple.text
    # a retry (the response was lost) is a duplicate and resumes the same following question
    again = api.post(reverse("annotation-answer"), body, format="json").json()
    assert again["duplicate"] is True and again["next"]["token"] == c
    assert Judgment.objects.filter(annotator=user).count() == 1 and pending.count() == 2
    # nothing preloaded before (exclude empty): the answer brings the question to show now, b
    assert api.post(reverse("annotation-answer"), {"token": b, "label": "aligned", "preload": True}, format="json").json()["next"]["token"] == c
    # without preload nothing is served and next is null
    plain = api.post(reverse("annotation-answer"), {"token": c, "label": "aligned"}, format="json").json()
    assert plain["next"] is None and not pending.exists()


def test_answer_with_preload_serves_nothing_to_a_removed_annotator(make_user):
    job = make_job(every=1, min_tests=1, threshold=0.99, min_seconds=0)
    user = make_user("gone", "annotator")
    api = api_for(user)
    q = api.post(reverse("labelingjob-next", args=[job.pk]), {}, format="json").json()
    gold = Assignment.objects.get(token=q["token"]).test_question.gold_label
    wrong = "notAligned" if gold != "notAligned" else "aligned"
    r = api.post(reverse("annotation-answer"), {"token": q["token"], "label": wrong, "preload": True}, format="json").json()
    assert r["removed"] and r["next"] is None
    # the question served for the preload in the same transaction was released by the removal
    assert not Assignment.objects.filter(annotator=user, answered_at__isnull=True).exists()
    assert sum(JobItem.objects.filter(job=job).values_list("reserved_count", flat=True)) == 0


def test_the_labeling_benchmark_reads_both_questions_off_the_page(client, annotator):
    """scripts/bench_labeling.py acts as the page's script: it must find the shown and the preloaded
    question in the page the product renders, or it would fall back to a "next" per session."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "bench_labeling.py"
    spec = importlib.util.spec_from_file_location("bench_labeling", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    job = make_job(every=0, min_seconds=0)
    client.force_login(annotator)
    html = client.get(reverse("annotation:label", args=[job.pk])).content.decode()
    shown, ahead = served(annotator)
    assert bench.page_tokens(html) == (shown.token, ahead.token)
