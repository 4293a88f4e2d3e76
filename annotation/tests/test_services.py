"""Services: correction, job creation, serving questions, answers, quality removal."""

from __future__ import annotations

from datetime import timedelta
from typing import cast

import pytest
from django.utils import timezone

from annotation.models import (
    Assignment,
    CandidatePair,
    JobItem,
    Judgment,
    LabelingJob,
    Membership,
    ParagraphAlignmentRevision,
    ParagraphLink,
)
from annotation.models import (
    TestAnswer as CheckAnswer,
)
from annotation.services import assignment, candidates, correction, job_setup, labeling, removal
from annotation.tests.factories import gold_rows, make_corpus, make_job
from curation.models import AlignmentLabel
from curation.plain import load_plain_pairs

pytestmark = pytest.mark.django_db


def answer_all(job, user, label_for_test=None, label="aligned", limit=100):  # type: ignore[no-untyped-def]
    """Answer every question served to ``user``; tests get ``label_for_test(tq)`` if given."""
    n = 0
    while n < limit:
        try:
            a = assignment.next_question(job, user)
        except assignment.AnnotatorRemoved:
            break
        if a is None:
            break
        chosen = label_for_test(a.test_question) if (a.test_question and label_for_test) else label
        labeling.submit_answer(user, a.token, chosen)
        n += 1
    return n


def test_auto_alignment_then_correction_records_revision_and_candidates(verifier, make_user):
    corpus = make_corpus(n_articles=1)
    pair = corpus.pairs.get()
    assert candidates.ensure_auto_alignment(pair) is True
    assert candidates.ensure_auto_alignment(pair) is False
    auto = {(cast(int, x["c"]), cast(int, x["s"])) for x in candidates.current_links(pair)}
    assert (0, 0) in auto and (1, 1) in auto  # lexically obvious paragraph matches
    # every sentence pair inside aligned paragraphs is a candidate
    doc = load_plain_pairs([pair.pk])[0].doc
    n_expected = sum(len(doc.complex[c]) * len(doc.simple[s]) for c, s in auto)
    assert CandidatePair.objects.filter(pair=pair).count() == n_expected

    result = correction.save_links(pair, verifier, [(0, 0), (1, 1), (2, 2), (3, 3), (2, 3)])
    assert result.revision.user == verifier
    assert [2, 3] in result.added
    links = {(x["c"], x["s"]) for x in candidates.current_links(pair)}
    assert links == {(0, 0), (1, 1), (2, 2), (3, 3), (2, 3)}
    assert ParagraphLink.objects.get(pair=pair, complex_paragraph__position=2, simple_paragraph__position=3).origin == "manual"
    # complex ¶2 has 2 sentences x simple ¶3 has 1 sentence -> candidates exist for (2, 3)
    assert CandidatePair.objects.filter(pair=pair, complex__paragraph_position=2, simple__paragraph_position=3).count() == 2
    assert ParagraphAlignmentRevision.objects.filter(pair=pair).count() == 2

    # removing a link deletes its unused candidates
    correction.save_links(pair, verifier, [(0, 0)])
    assert set(CandidatePair.objects.filter(pair=pair).values_list("complex__paragraph_position", flat=True)) == {0}

    other = make_user("otto", "verifier")
    state = correction.acquire_lock(pair, other)
    assert not state.mine and state.holder == verifier.username
    with pytest.raises(correction.CorrectionError, match="being corrected by vera"):
        correction.save_links(pair, other, [(0, 0)])
    with pytest.raises(correction.CorrectionError, match="outside"):
        correction.save_links(pair, verifier, [(9, 0)])
    correction.release_lock(pair, verifier)
    assert correction.acquire_lock(pair, other).mine


def test_expired_lock_passes_to_the_next_verifier(verifier, make_user):
    pair = make_corpus(n_articles=1).pairs.get()
    correction.acquire_lock(pair, verifier)
    pair.lock.expires_at = timezone.now() - timedelta(seconds=1)
    pair.lock.save()
    assert correction.acquire_lock(pair, make_user("otto", "verifier")).mine


def test_job_creation_excludes_test_pairs_and_balances_labels():
    job = make_job()
    tests = list(job.test_questions.values_list("gold_label", flat=True))
    assert sorted(set(tests)) == sorted(AlignmentLabel.values)
    test_cands = set(job.test_questions.values_list("candidate_id", flat=True))
    item_cands = set(job.items.values_list("candidate_id", flat=True))
    assert item_cands and not (test_cands & item_cands)
    assert all(job.test_questions.values_list("explanation", flat=True))


def test_topk_strategy_gives_k_per_measure():
    corpus = make_corpus(n_articles=1)
    settings = job_setup.JobSettings(top_k=1)
    job = job_setup.create_job(name="wiki", corpus=corpus, created_by=None, strategy=LabelingJob.Strategy.TOPK, settings=settings)
    n_simple = sum(len(p) for p in load_plain_pairs([corpus.pairs.get().pk])[0].doc.simple)
    assert n_simple <= job.items.count() <= 3 * n_simple


def test_parse_gold_tsv_errors_and_columns():
    rows = job_setup.parse_gold_tsv("label\tsimple\tcomplex\taligned\nnotAligned\ta-0-0-0\ta-1-0-0\tbecause\n")
    assert rows == [job_setup.GoldRow("a-0-0-0", "a-1-0-0", "notAligned", "because")]
    with pytest.raises(job_setup.JobError, match="gold.tsv:1: unknown label"):
        job_setup.parse_gold_tsv("maybe\ta\tb\n")


def test_tests_come_at_the_configured_rate_not_one_per_page_and_never_twice(make_user):
    job = make_job(every=5, n_articles=4, judgments_per_pair=20)
    per_page: list[int] = []
    for u in range(3):
        user = make_user(f"rate{u}", "annotator")
        seen: set[tuple[str, int]] = set()
        kinds = []
        while True:
            a = assignment.next_question(job, user)
            if a is None:
                break
            key = ("test", a.test_question_id) if a.test_question_id else ("item", a.item_id)
            assert key not in seen
            seen.add(key)  # type: ignore[arg-type]
            kinds.append(a.test_question_id is not None)
            labeling.submit_answer(user, a.token, a.test_question.gold_label if a.test_question else "aligned")
        per_page += [sum(kinds[i : i + 5]) for i in range(0, len(kinds) - len(kinds) % 5, 5)]
    # pages hold 0, 1, 2... tests (binomial), never exactly one each
    assert len(set(per_page)) >= 3 and 0 in per_page
    assert 0.1 < sum(per_page) / (5 * len(per_page)) < 0.35


def test_capacity_and_valid_counts(make_user):
    job = make_job(judgments_per_pair=2, every=0, with_gold=False)
    users = [make_user(f"u{i}", "annotator") for i in range(4)]
    for u in users:
        answer_all(job, u)
    for item in JobItem.objects.filter(job=job):
        assert item.judgments_count == 2 == Judgment.objects.filter(item=item, is_valid=True).count()
        assert item.reserved_count == 0
    # the third and fourth annotators found nothing left
    assert Judgment.objects.filter(annotator=users[3]).count() == 0


def test_the_labeling_page_serves_its_question_and_the_next_until_none_is_left(annotator):
    """``page_served``: the question to show and the one to preload; the preloaded one is shown
    after an answer; one question left gives no preload; none left gives nothing."""
    job = make_job(every=0, judgments_per_pair=1, n_articles=1)
    n_items = JobItem.objects.filter(job=job).count()
    assert n_items >= 3
    shown, ahead = assignment.page_served(job, annotator)
    assert shown is not None and ahead is not None and shown[0] != ahead[0]
    assert assignment.page_served(job, annotator) == (shown, ahead)  # a reload reserves nothing more
    answered = 0
    while shown is not None:
        labeling.submit_answer(annotator, shown[0], "aligned")
        answered += 1
        before = ahead
        shown, ahead = assignment.page_served(job, annotator)
        assert shown == before  # the preloaded question comes next
        if answered == n_items - 1:  # the last question: nothing to preload
            assert shown is not None and ahead is None
    assert answered == n_items and (shown, ahead) == (None, None)
    assert Membership.objects.get(job=job, annotator=annotator).questions_served == n_items
    assert sum(JobItem.objects.filter(job=job).values_list("reserved_count", flat=True)) == 0


def test_min_time_is_enforced_from_serve_time(annotator):
    job = make_job(min_seconds=10, every=0)
    a = assignment.next_question(job, annotator)
    with pytest.raises(labeling.TooFast) as err:
        labeling.submit_answer(annotator, a.token, "aligned")
    assert 9 <= err.value.wait_seconds <= 10
    assert not Judgment.objects.exists()
    later = timezone.now() + timedelta(seconds=11)
    result = labeling.submit_answer(annotator, a.token, "aligned", now=later)
    assert not result.duplicate and Judgment.objects.count() == 1
    # the preloaded next question counts from the previous answer, not from when it was fetched
    b = assignment.next_question(job, annotator)
    Assignment.objects.filter(pk=b.pk).update(served_at=timezone.now() - timedelta(minutes=1))
    with pytest.raises(labeling.TooFast):
        labeling.submit_answer(annotator, b.token, "aligned", now=later + timedelta(seconds=2))


def test_resubmission_is_idempotent_and_tokens_are_private(annotator, make_user):
    job = make_job(every=0)
    a = assignment.next_question(job, annotator)
    assert a is not None and a.item_id is not None
    first = labeling.submit_answer(annotator, a.token, "aligned")
    again = labeling.submit_answer(annotator, a.token, "notAligned")
    assert again.duplicate and again.label == "aligned" == first.label
    assert Judgment.objects.count() == 1 and JobItem.objects.get(pk=a.item_id).judgments_count == 1
    with pytest.raises(labeling.QuestionGone):
        labeling.submit_answer(make_user("eve", "annotator"), a.token, "aligned")
    with pytest.raises(labeling.InvalidLabel):
        labeling.submit_answer(annotator, a.token, "yes")


def test_expired_reservations_return_to_the_queue(annotator):
    job = make_job(every=0, judgments_per_pair=1)
    a = assignment.next_question(job, annotator)
    assert a is not None and a.item_id is not None
    assert JobItem.objects.get(pk=a.item_id).reserved_count == 1
    Assignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert assignment.release_expired(job) == 1
    assert JobItem.objects.get(pk=a.item_id).reserved_count == 0
    with pytest.raises(labeling.QuestionGone):
        labeling.submit_answer(annotator, a.token, "aligned")


def test_missed_tests_are_explained_and_removal_happens_at_page_ends(annotator, make_user):
    job = make_job(every=2, min_tests=2, threshold=0.85, n_articles=4)
    wrong = {"aligned": "notAligned", "partialAligned": "aligned", "notAligned": "aligned"}
    good = make_user("gina", "annotator")
    answer_all(job, good, label_for_test=lambda tq: tq.gold_label, limit=6)
    explained: list[labeling.Feedback] = []
    missed_tests = 0
    for n in range(1, 80):
        try:
            a = assignment.next_question(job, annotator)
        except assignment.AnnotatorRemoved:
            break
        assert a is not None
        label = wrong[a.test_question.gold_label] if a.test_question else "aligned"
        missed_tests += a.test_question is not None
        r = labeling.submit_answer(annotator, a.token, label)
        assert r.page_end == (n % job.page_size == 0)
        if not r.page_end:  # nothing an annotator sees moves inside a page
            assert not r.missed and not r.feedback and not r.removed
        explained += r.feedback
        m = Membership.objects.get(job=job, annotator=annotator)
        assert r.tests_answered == m.shown_tests_answered and (m.removed or r.page_end or m.shown_tests_answered <= m.tests_answered)
    m = Membership.objects.get(job=job, annotator=annotator)
    assert m.removed and m.tests_answered >= 2 and m.shown_tests_answered == m.tests_answered == missed_tests
    assert len(explained) == missed_tests and all(f.explanation and f.expected != f.given for f in explained)
    assert Judgment.objects.filter(annotator=annotator).count() == m.questions_answered - missed_tests
    assert not Judgment.objects.filter(annotator=annotator, is_valid=True).exists()
    assert not Assignment.objects.filter(annotator=annotator, answered_at__isnull=True).exists()
    for item in JobItem.objects.filter(job=job):
        assert item.judgments_count == Judgment.objects.filter(item=item, is_valid=True).count()
        assert item.reserved_count == Assignment.objects.filter(item=item, answered_at__isnull=True).count()
    with pytest.raises(assignment.AnnotatorRemoved):
        assignment.next_question(job, annotator)
    assert CheckAnswer.objects.filter(annotator=annotator, correct=False).count() == missed_tests


def test_closing_a_job_settles_unfinished_pages(annotator):
    job = make_job(every=5, min_tests=1, threshold=0.85, n_articles=4)
    wrong = {"aligned": "notAligned", "partialAligned": "aligned", "notAligned": "aligned"}
    while True:  # answer until a test is answered wrongly before its page ends
        a = assignment.next_question(job, annotator)
        assert a is not None
        m = Membership.objects.get(job=job, annotator=annotator)
        ends_page = (m.questions_answered + 1) % job.page_size == 0
        # a test that ends its page is answered rightly: wrongly, the page's end would remove the annotator now
        # (which test comes where follows the serving draws, seeded by the annotator's pk, so by test order)
        label = "aligned" if a.test_question is None else a.test_question.gold_label if ends_page else wrong[a.test_question.gold_label]
        r = labeling.submit_answer(annotator, a.token, label)
        m.refresh_from_db()
        if m.tests_correct < m.tests_answered:
            assert m.tests_answered > m.shown_tests_answered and not r.page_end
            break
    assert not m.removed
    job.status = LabelingJob.Status.CLOSED
    job.save()
    assert removal.settle_job(job) == 1
    m.refresh_from_db()
    assert m.removed and m.shown_tests_answered == m.tests_answered


def test_closed_or_paused_job_refuses_answers_served_before(annotator):
    job = make_job(every=0)
    a = assignment.next_question(job, annotator)
    b = assignment.next_question(job, annotator, exclude=(a.token,))
    for status, pending in ((LabelingJob.Status.PAUSED, a), (LabelingJob.Status.CLOSED, b)):
        LabelingJob.objects.filter(pk=job.pk).update(status=status)
        with pytest.raises(labeling.JobNotOpen, match=status):
            labeling.submit_answer(annotator, pending.token, "aligned")
    assert not Judgment.objects.exists()
    assert Assignment.objects.get(pk=a.pk).answered_at is None


def test_each_job_samples_its_own_tests():
    corpus = make_corpus(n_articles=6)
    gold = job_setup.gold_from_rows(corpus, gold_rows(corpus))
    settings = job_setup.JobSettings(test_question_every=5)
    jobs = [job_setup.create_job(name=f"j{i}", corpus=corpus, created_by=None, settings=settings, gold=gold, max_tests=6)
            for i in range(3)]
    seeds = {j.seed for j in jobs}
    assert len(seeds) == 3 and 0 not in seeds
    samples = {frozenset(j.test_questions.values_list("candidate_id", flat=True)) for j in jobs}
    assert len(samples) >= 2  # 6 of 18 gold pairs: three jobs drawing the same six would be chance 1/18564^2
    again = job_setup.create_job(name="again", corpus=corpus, created_by=None, settings=settings, gold=gold, max_tests=6,
                                 seed=jobs[0].seed)
    assert set(again.test_questions.values_list("candidate_id", flat=True)) == set(jobs[0].test_questions.values_list("candidate_id", flat=True))


def test_create_labeling_job_command(tmp_path):
    from io import StringIO

    from django.core.management import call_command

    from annotation.tests.factories import gold_rows

    corpus = make_corpus()
    tsv = tmp_path / "gold.tsv"
    tsv.write_text("".join(f"{r.label}\t{r.simple_id}\t{r.complex_id}\t{r.explanation}\n" for r in gold_rows(corpus)))
    out = StringIO()
    call_command("create_labeling_job", "cli job", "--corpus", "toy", "--gold-tsv", str(tsv), stdout=out)
    job = LabelingJob.objects.get(name="cli job")
    assert "6 test questions" in out.getvalue() and job.test_questions.count() == 6


def test_gold_from_reference_adds_hard_not_aligned_and_verified_source(verifier):
    from annotation.models import VerifiedLabel
    from curation.models import ReferenceAlignment

    corpus = make_corpus(n_articles=1)
    pair = corpus.pairs.get()
    s = {(x.paragraph_position, x.position): x for x in pair.simple.sentences.all()}
    c = {(x.paragraph_position, x.position): x for x in pair.complex.sentences.all()}
    ReferenceAlignment.objects.create(pair=pair, simple=s[0, 0], complex=c[0, 0], label="aligned")
    ReferenceAlignment.objects.create(pair=pair, simple=s[1, 1], complex=c[1, 1], label="partialAligned")
    rows = job_setup.gold_from_reference(corpus, corpus.pairs.all())
    labels = [label for _, label, _ in rows]
    assert labels[:2] == ["aligned", "partialAligned"] and "notAligned" in labels
    gold_pairs = {(s[0, 0].pk, c[0, 0].pk), (s[1, 1].pk, c[1, 1].pk)}
    for pk, label, explanation in rows:
        cand = CandidatePair.objects.get(pk=pk)
        assert explanation and ((cand.simple_id, cand.complex_id) in gold_pairs) == (label != "notAligned")
    cand = CandidatePair.objects.get(pk=rows[0][0])
    VerifiedLabel.objects.create(candidate=cand, label="aligned", verifier=verifier)
    assert [(pk, label) for pk, label, _ in job_setup.gold_from_verified(corpus.pairs.all())] == [(cand.pk, "aligned")]


def test_prealignment_comes_from_the_engine():
    from alignment_engine.types import DocPair
    from annotation.tests.factories import COMPLEX, SIMPLE

    dp = DocPair("p", COMPLEX, SIMPLE)
    sim = candidates.paragraph_similarity(dp)
    assert len(sim) == len(COMPLEX) and len(sim[0]) == len(SIMPLE)
    assert all(sim[i][i] == max(row) for i, row in enumerate(sim[: len(SIMPLE)]))
    links = candidates.align_paragraphs(dp)
    assert {(c, s) for c, s, _ in links} >= {(0, 0), (1, 1), (2, 2), (3, 3)}
    cands = candidates.candidate_pairs(dp, [(0, 0, 1.0)])
    assert cands == [("p-0-0-0", "p-1-0-0"), ("p-0-0-0", "p-1-0-1"), ("p-0-0-1", "p-1-0-0"), ("p-0-0-1", "p-1-0-1")]
    top = candidates.top_k_candidates(dp, k=1)
    assert ("p-0-0-0", "p-1-0-0") in top and len({s for s, _ in top}) == sum(len(p) for p in SIMPLE)
