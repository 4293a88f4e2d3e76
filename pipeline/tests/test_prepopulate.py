"""Pre-population: auto paragraph links and candidates, idempotent, corrected pairs and used candidates kept."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation.models import CandidatePair, ParagraphAlignmentRevision, ParagraphLink, VerifiedLabel
from curation.models import Corpus
from pipeline.services.prepopulate import PrepopulateOptions, prepopulate
from pipeline.tests.pipeline_corpus import build_corpus, expected_alignment

pytestmark = pytest.mark.django_db


def snapshot(corpus: Corpus) -> tuple[set, set]:
    links = set(ParagraphLink.objects.filter(pair__corpus=corpus).values_list(
        "pair_id", "complex_paragraph_id", "simple_paragraph_id", "origin"))
    cands = set(CandidatePair.objects.filter(pair__corpus=corpus).values_list("pair_id", "simple_id", "complex_id", "source"))
    return links, cands


def test_links_and_candidates_are_created_and_rerun_is_idempotent() -> None:
    corpus = build_corpus(n_articles=3)
    pks = list(corpus.pairs.values_list("pk", flat=True))
    stats = prepopulate(pks)
    links, cands = snapshot(corpus)
    assert stats.pairs == 3 and stats.links_created == len(links) > 0
    assert {origin for *_, origin in links} == {ParagraphLink.Origin.AUTO}
    # every true sentence pair sits inside an aligned paragraph, so it is a candidate
    assert expected_alignment(corpus) <= {(s, c) for _, s, c, _ in cands}
    assert ParagraphAlignmentRevision.objects.filter(source="prepopulate").count() == 3
    again = prepopulate(pks)
    assert snapshot(corpus) == (links, cands)
    assert again.candidates_created == 0 and again.candidates_removed == 0
    assert ParagraphAlignmentRevision.objects.filter(source="prepopulate").count() == 3  # unchanged links: no revision


def test_corrected_pairs_keep_their_links_and_used_candidates_stay() -> None:
    corpus = build_corpus(n_articles=1, paragraphs=2, sentences=2)
    pair = corpus.pairs.get()
    prepopulate([pair.pk])
    # a person keeps only the link of paragraph 0 -> 0 and saves (manual revision)
    ParagraphLink.objects.filter(pair=pair).exclude(complex_paragraph__position=0, simple_paragraph__position=0).delete()
    ParagraphAlignmentRevision.objects.create(pair=pair, links=[[0, 0]], source="manual")
    # a verifier has labelled one candidate of paragraph 1 (now outside the links)
    used = CandidatePair.objects.filter(pair=pair, simple__paragraph_position=1).first()
    assert used is not None
    VerifiedLabel.objects.create(candidate=used, label="aligned")
    stats = prepopulate([pair.pk])
    assert stats.links_kept_manual == 1 and stats.links_created == 0
    assert ParagraphLink.objects.filter(pair=pair).count() == 1
    remaining = CandidatePair.objects.filter(pair=pair)
    assert remaining.filter(pk=used.pk).exists()  # never removed: it is verified
    assert not remaining.filter(simple__paragraph_position=1).exclude(pk=used.pk).exists()
    assert stats.candidates_removed >= 1


def test_topk_strategy_for_wikipedia_corpora() -> None:
    corpus = build_corpus(n_articles=1, kind=Corpus.Kind.WIKIPEDIA)
    stats = prepopulate(list(corpus.pairs.values_list("pk", flat=True)), PrepopulateOptions(top_k=1))
    sources = set(CandidatePair.objects.filter(pair__corpus=corpus).values_list("source", flat=True))
    assert sources == {CandidatePair.Source.TOPK} and stats.candidates_total > 0
    assert expected_alignment(corpus) <= set(CandidatePair.objects.values_list("simple_id", "complex_id"))


def test_missing_pairs_are_skipped_and_stop_is_honoured() -> None:
    corpus = build_corpus(n_articles=2)
    pks = list(corpus.pairs.values_list("pk", flat=True))
    stats = prepopulate([*pks, 10**9], should_stop=lambda: False)
    assert stats.skipped_pairs == [10**9] and stats.pairs == 2
    assert prepopulate(pks, should_stop=lambda: True).pairs == 0


def test_command_sync(capsys) -> None:  # type: ignore[no-untyped-def]
    corpus = build_corpus(n_articles=2)
    call_command("prepopulate", corpus.name, "--pairs", "art1.0_1", "--sync")
    assert "succeeded" in capsys.readouterr().out
    assert set(ParagraphLink.objects.values_list("pair__pair_id", flat=True)) == {"art1.0_1"}


def test_candidates_are_scored_with_the_promoted_model_or_a_method() -> None:
    from pipeline.models import ModelVersion

    corpus = build_corpus(n_articles=2)
    pks = list(corpus.pairs.values_list("pk", flat=True))
    assert prepopulate(pks).scored_with == ""  # nothing promoted: no scores
    assert set(CandidatePair.objects.values_list("score", flat=True)) == {None}
    stats = prepopulate(pks, PrepopulateOptions(score_with="jaccard"))
    gold = expected_alignment(corpus)
    scores = {(s, c): score for s, c, score in CandidatePair.objects.values_list("simple_id", "complex_id", "score")}
    assert stats.scored_with == "jaccard" and stats.candidates_scored == len(scores)
    assert all((scores[k] or 0) > 0 for k in gold) and all(v == 0 for k, v in scores.items() if k not in gold)
    ModelVersion.objects.create(name="tfidf promoted", method="tfidf", language="en", is_promoted=True)
    assert "tfidf promoted" in prepopulate(pks).scored_with


def writes(queries: list[dict[str, str]]) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].lstrip().split(" ", 1)[0].upper() in {"INSERT", "UPDATE", "DELETE"}]


def test_a_rerun_that_changes_nothing_writes_nothing() -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    corpus = build_corpus(n_articles=4)
    pks = list(corpus.pairs.values_list("pk", flat=True))
    options = PrepopulateOptions(score_with="jaccard")
    first = prepopulate(pks, options)
    assert first.links_written == first.links_created > 0
    before = snapshot(corpus), set(CandidatePair.objects.values_list("pk", "score"))
    link_pks = set(ParagraphLink.objects.values_list("pk", flat=True))
    with CaptureQueriesContext(connection) as ctx:
        again = prepopulate(pks, options)
    assert writes(ctx.captured_queries) == []  # not one row deleted, inserted or updated
    assert again.links_written == 0 and again.candidates_created == again.candidates_removed == 0
    assert (snapshot(corpus), set(CandidatePair.objects.values_list("pk", "score"))) == before
    assert set(ParagraphLink.objects.values_list("pk", flat=True)) == link_pks  # the same rows, not re-inserted
    # a real change writes only its difference: one pair's links differ, the others stay
    pair = corpus.pairs.order_by("pk").first()
    assert pair is not None
    ParagraphLink.objects.filter(pair=pair).order_by("pk").first().delete()  # type: ignore[union-attr]
    third = prepopulate(pks, options)
    assert third.links_written == 1
    assert set(ParagraphLink.objects.exclude(pair=pair).values_list("pk", flat=True)) <= link_pks


def test_rerunning_prepopulation_keeps_test_questions_and_human_work(make_user) -> None:  # type: ignore[no-untyped-def]
    """Issue 10 finding 4: a re-run whose candidates differ used to cascade-delete test questions."""
    from annotation.models import JobItem, Judgment, LabelingJob, TestQuestion
    from annotation.services import assignment, job_setup, labeling

    corpus = build_corpus(n_articles=2)
    pks = list(corpus.pairs.values_list("pk", flat=True))
    prepopulate(pks)
    first, second = corpus.pairs.order_by("pk")
    # items over the first pair; test questions and a verified label on the second pair
    paragraph_cands = list(CandidatePair.objects.filter(pair=second).order_by("pk"))
    tests = [(c.pk, "aligned", "because") for c in paragraph_cands[:2]]
    job = job_setup.create_job(name="j", corpus=corpus, created_by=None, gold=tests, pair_ids=[first.pair_id],
                               settings=job_setup.JobSettings(test_question_every=0, min_seconds=0))
    user = make_user("ann", "annotator")
    a = assignment.next_question(job, user)
    assert a is not None
    labeling.submit_answer(user, a.token, "aligned")
    VerifiedLabel.objects.create(candidate=paragraph_cands[2], label="aligned")
    assert len(paragraph_cands) > 3
    counts = TestQuestion.objects.count(), JobItem.objects.count(), Judgment.objects.count(), VerifiedLabel.objects.count()
    # regenerate with thresholds no paragraph passes: no links, every candidate is stale machine output
    none_pass = {"tau1": 2.0, "tau3": 2.0, "tau4": 2.0}
    stats = prepopulate(pks, PrepopulateOptions(thresholds=none_pass))
    assert not ParagraphLink.objects.filter(pair__corpus=corpus).exists()
    assert stats.candidates_removed > 0  # stale candidates nobody refers to did go
    assert (TestQuestion.objects.count(), JobItem.objects.count(), Judgment.objects.count(),
            VerifiedLabel.objects.count()) == counts
    assert set(TestQuestion.objects.values_list("candidate_id", flat=True)) == {pk for pk, _, _ in tests}
    assert LabelingJob.objects.get(pk=job.pk).test_questions.count() == 2
