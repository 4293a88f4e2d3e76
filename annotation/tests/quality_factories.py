"""Build labeling data through the ORM directly for the quality tests (no labeling services)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotation.models import CandidatePair, JobItem, Judgment, LabelingJob, Membership
from curation.models import Article, Corpus, Document, DocumentPair, Paragraph, Sentence

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
    corpus, _ = Corpus.objects.get_or_create(name="quality tests", defaults={"language": "en"})
    slug = f"q{LabelingJob.objects.count()}x{Article.objects.count()}"
    article = Article.objects.create(corpus=corpus, slug=slug, title=name, content_hash=slug)
    docs = [Document.objects.create(article=article, level=lv, level_label=lab) for lv, lab in ((0, "complex"), (1, "simple"))]
    pair = DocumentPair.objects.create(article=article, complex=docs[0], simple=docs[1], pair_id=slug, corpus=corpus)
    sentences: list[list[Sentence]] = []
    for doc, side in zip(docs, (0, 1), strict=True):
        para = Paragraph.objects.create(document=doc, position=0)
        sentences.append(
            [
                Sentence.objects.create(
                    document=doc, paragraph=para, paragraph_position=0, position=i, doc_position=i, text=t[side], token_count=len(t[side].split())
                )
                for i, t in enumerate(texts)
            ]
        )
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
