"""Labeling data for the quality tests: a corpus through the one test-corpus builder, then jobs,
items and judgments through the ORM directly (no labeling services)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotation.models import CandidatePair, JobItem, Judgment, LabelingJob, Membership
from curation.models import Article, DocumentPair, Sentence
from curation.tests.corpus_builder import build_corpus

SENTENCES = [
    ("The committee, which had deliberated for several weeks, finally approved the controversial proposal on Tuesday.",
     "The committee approved the proposal on Tuesday."),
    ("Scientists believe that the ancient forest, buried under volcanic ash, was preserved for millions of years.",
     "The old forest was kept safe under ash for millions of years."),
    ("Despite heavy rain, thousands of runners completed the marathon, raising money for local hospitals.",
     "It rained a lot."),
    ("The mayor announced a new plan to reduce traffic by expanding bus routes and adding bicycle lanes.",
     "The city will add more buses and bike lanes."),
    ("Researchers found that students who slept at least eight hours performed better on memory tests.",
     "Students who sleep well remember more."),
    ("The museum's new exhibit features paintings that had never been shown to the public before.",
     "Bees are important for farms."),
]


def make_job(texts: Sequence[tuple[str, str]] = SENTENCES, name: str = "Quality test job", **job_fields: Any) -> tuple[LabelingJob, list[JobItem]]:
    slug = f"q{LabelingJob.objects.count()}x{Article.objects.count()}"
    corpus = build_corpus("quality tests", {slug: [[[c for c, _ in texts]], [[s for _, s in texts]]]})
    pair = DocumentPair.objects.get(corpus=corpus, article__slug=slug)
    sentences = [list(Sentence.objects.filter(document=doc).order_by("doc_position")) for doc in (pair.complex, pair.simple)]
    job = LabelingJob.objects.create(name=name, corpus=corpus, **job_fields)
    items = []
    for c, s in zip(sentences[0], sentences[1], strict=True):
        cand = CandidatePair.objects.create(pair=pair, complex=c, simple=s)
        items.append(JobItem.objects.create(job=job, candidate=cand))
    return job, items


def judge(job: LabelingJob, item: JobItem, votes: Sequence[tuple[Any, str]], valid: bool = True) -> None:
    """votes: (user, label) pairs."""
    for user, label in votes:
        Membership.objects.get_or_create(job=job, annotator=user)
        Judgment.objects.create(job=job, item=item, annotator=user, label=label, seconds=12.0, is_valid=valid)
    JobItem.objects.filter(pk=item.pk).update(judgments_count=Judgment.objects.filter(item=item, is_valid=True).count())
