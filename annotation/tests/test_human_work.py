"""Human work survives machine regeneration (issue 10 finding 4): every relation from human work
to candidate pairs is RESTRICT, regeneration keeps the candidates they refer to (hidden relations
such as ``TestQuestion.candidate`` with ``related_name="+"`` included), and saving a paragraph
correction with test questions present deletes none of them."""

from __future__ import annotations

import pytest
from django.db import models
from django.db.models import RestrictedError

from annotation.models import CandidatePair, JobItem, Judgment, LabelingJob, VerifiedLabel
from annotation.models import TestQuestion as GoldQuestion
from annotation.services import assignment, candidates, correction, labeling
from annotation.tests.factories import make_job

pytestmark = pytest.mark.django_db


def test_every_relation_to_candidates_is_protected_and_seen_by_the_owner():
    rels = candidates.human_references()
    names = {(r.related_model._meta.label, r.field.name) for r in rels}  # type: ignore[union-attr]
    assert {("annotation.TestQuestion", "candidate"), ("annotation.JobItem", "candidate"),
            ("annotation.VerifiedLabel", "candidate")} <= names
    for rel in rels:
        assert rel.on_delete in (models.RESTRICT, models.PROTECT), f"{rel.related_model.__name__}.{rel.field.name}"  # type: ignore[union-attr]


def test_saving_a_correction_keeps_test_questions_items_and_labels(verifier, make_user):
    job = make_job(every=1, min_seconds=0)
    pair = job.corpus.pairs.order_by("pk").first()
    tests_before = set(GoldQuestion.objects.filter(job=job).values_list("pk", "candidate_id"))
    on_pair = GoldQuestion.objects.filter(job=job, candidate__pair=pair).count()
    assert on_pair > 0
    user = make_user("ann", "annotator")
    a = assignment.next_question(job, user)
    labeling.submit_answer(user, a.token, "aligned")
    item = JobItem.objects.filter(job=job, candidate__pair=pair).first()
    VerifiedLabel.objects.create(candidate=item.candidate, label="aligned", job=job)
    counts = JobItem.objects.count(), Judgment.objects.count(), VerifiedLabel.objects.count()
    unused = CandidatePair.objects.filter(pair=pair).exclude(candidates.protected_candidates()).count()
    # the verifier removes every paragraph link: every paragraph candidate of the pair is stale
    correction.save_links(pair, verifier, [])  # type: ignore[arg-type]
    assert set(GoldQuestion.objects.filter(job=job).values_list("pk", "candidate_id")) == tests_before
    assert (JobItem.objects.count(), Judgment.objects.count(), VerifiedLabel.objects.count()) == counts
    assert CandidatePair.objects.filter(pair=pair).exclude(candidates.protected_candidates()).count() <= unused
    # the job still serves its tests
    assert assignment.next_question(job, make_user("bob", "annotator")) is not None


def test_deleting_a_referred_candidate_is_refused_but_deleting_the_corpus_still_works():
    job = make_job()
    test = GoldQuestion.objects.filter(job=job).first()
    with pytest.raises(RestrictedError):
        CandidatePair.objects.filter(pk=test.candidate_id).delete()
    assert GoldQuestion.objects.filter(pk=test.pk).exists()
    job.corpus.delete()  # the corpus and its jobs go together: nothing left dangling
    assert not LabelingJob.objects.exists() and not GoldQuestion.objects.exists() and not CandidatePair.objects.exists()


def test_replacing_an_article_with_human_work_is_refused_with_a_clear_error():
    from pathlib import Path

    from curation.importers.types import ImportFailed, ImportOptions, ParsedArticle, ParsedDocument
    from curation.importers.writer import write_import
    from curation.models import Article

    job = make_job(n_articles=1)
    changed = ParsedArticle(slug="art0", title="Article art0", source="new.txt", documents=[
        ParsedDocument(level=0, level_label="0", paragraphs=[["A different text now."]]),
        ParsedDocument(level=1, level_label="1", paragraphs=[["Different."]]),
    ])
    options = ImportOptions(corpus=job.corpus.name, format="test", replace=True)
    with pytest.raises(ImportFailed, match="new.txt: article 'art0' cannot be replaced: .* human work"):
        write_import(Path("new.txt"), options, [changed], [])
    assert Article.objects.filter(corpus=job.corpus, slug="art0").exists() and GoldQuestion.objects.filter(job=job).exists()
