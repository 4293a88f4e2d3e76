"""Build a labeling job in the database from a simulation (annotators of known accuracy).

Used by the statistics tests, the ORM benchmark (``scripts/bench_agreement.py --orm``), the
simulation script (``scripts/simulate_job.py --write-job``) and demos. Rows are written with
``bulk_create``; nothing here goes through the labeling services, so it works on its own.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from decimal import Decimal

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from accounts.roles import Role
from annotation.agreement import LABELS
from annotation.crowd_model import DEFAULT_ACCURACIES, DEFAULT_PRIORS, simulate
from annotation.models import CandidatePair, JobItem, Judgment, LabelingJob, Membership, TestAnswer, TestQuestion
from curation.models import Article, Corpus, Document, DocumentPair, Paragraph, Sentence

BATCH = 5000


def _sentences(document: Document, texts: Sequence[str]) -> list[Sentence]:
    paragraph = Paragraph.objects.create(document=document, position=0)
    rows = [
        Sentence(
            document=document,
            paragraph=paragraph,
            paragraph_position=0,
            position=i,
            doc_position=i,
            text=text,
            token_count=len(text.split()),
        )
        for i, text in enumerate(texts)
    ]
    return Sentence.objects.bulk_create(rows, batch_size=BATCH)


def _document_pair(corpus: Corpus, slug: str, title: str) -> tuple[DocumentPair, Document, Document]:
    """A one-article complex/simple document pair named ``slug`` (article slug, content hash and pair id)."""
    article = Article.objects.create(corpus=corpus, slug=slug, title=title, content_hash=slug)
    complex_doc = Document.objects.create(article=article, level=0, level_label="complex")
    simple_doc = Document.objects.create(article=article, level=1, level_label="simple")
    pair = DocumentPair.objects.create(article=article, complex=complex_doc, simple=simple_doc, pair_id=slug, corpus=corpus)
    return pair, complex_doc, simple_doc


WRONG = {"aligned": "notAligned", "partialAligned": "notAligned", "notAligned": "aligned"}


def _test_questions(job: LabelingJob, corpus: Corpus, tag: str, n: int, rng: np.random.Generator) -> list[TestQuestion]:
    """``n`` test questions on a document pair of their own (gold labels drawn uniformly), so that every
    simulated test answer is a ``TestAnswer`` row as in a real job."""
    if n < 1:
        return []
    doc_pair, complex_doc, simple_doc = _document_pair(corpus, f"sim{tag}-tests", f"{job.name} (test questions)")
    complex_s = _sentences(complex_doc, [f"Complex test sentence {i} of the simulated article." for i in range(n)])
    simple_s = _sentences(simple_doc, [f"Simple test sentence {i}." for i in range(n)])
    candidates = CandidatePair.objects.bulk_create(
        [CandidatePair(pair=doc_pair, complex=c, simple=s_) for c, s_ in zip(complex_s, simple_s, strict=True)], batch_size=BATCH)
    labels = rng.choice(LABELS, size=n).tolist()
    TestQuestion.objects.bulk_create(
        [TestQuestion(job=job, candidate=cand, gold_label=label, explanation="simulated gold")
         for cand, label in zip(candidates, labels, strict=True)])
    return list(TestQuestion.objects.filter(job=job).order_by("pk"))


@transaction.atomic
def create_simulated_job(
    name: str,
    n_items: int = 200,
    accuracies: tuple[float, ...] = DEFAULT_ACCURACIES,
    priors: tuple[float, ...] = DEFAULT_PRIORS,
    per_tier: int = 2,
    seed: int = 0,
    texts: Sequence[tuple[str, str]] | None = None,
    tests_per_annotator: int = 20,
    pay_per_judgment: str = "0",
    pay_per_hour: str = "0",
    currency: str = "USD",
) -> LabelingJob:
    """A job of ``n_items`` candidate pairs, each judged once by an annotator of every accuracy tier.

    ``texts`` (complex, simple) gives readable sentences (and sets ``n_items``); otherwise
    sentences are numbered placeholders. Test-question accuracy of each membership is drawn
    from the annotator's accuracy. Pay settings (decimal strings) fill the job's cost ledger.
    """
    if texts is not None:
        n_items = len(texts)
    if n_items < 1:
        raise ValueError(f"n_items must be >= 1, got {n_items}")
    rng = np.random.default_rng(seed)
    tag = uuid.uuid4().hex[:6]
    corpus, _ = Corpus.objects.get_or_create(name="simulated jobs", defaults={"language": "en"})
    doc_pair, complex_doc, simple_doc = _document_pair(corpus, f"sim{tag}", name)
    if texts is not None:
        complex_s = _sentences(complex_doc, [c for c, _ in texts])
        simple_s = _sentences(simple_doc, [s for _, s in texts])
        index_pairs = [(i, i) for i in range(n_items)]
    else:
        side = math.ceil(math.sqrt(n_items))
        complex_s = _sentences(complex_doc, [f"Complex sentence {i} of the simulated article." for i in range(side)])
        simple_s = _sentences(simple_doc, [f"Simple sentence {i}." for i in range(side)])
        index_pairs = [(i // side, i % side) for i in range(n_items)]
    candidates = CandidatePair.objects.bulk_create(
        [CandidatePair(pair=doc_pair, complex=complex_s[c], simple=simple_s[s]) for c, s in index_pairs], batch_size=BATCH
    )
    job = LabelingJob.objects.create(name=name, corpus=corpus, pay_per_judgment=Decimal(pay_per_judgment),
                                     pay_per_hour=Decimal(pay_per_hour), currency=currency)
    items = JobItem.objects.bulk_create(
        [JobItem(job=job, candidate=cand, judgments_count=len(accuracies)) for cand in candidates], batch_size=BATCH
    )
    sim = simulate(n_items, accuracies=accuracies, priors=priors, per_tier=per_tier, seed=seed)
    user_model = get_user_model()
    users = user_model.objects.bulk_create(
        [user_model(username=f"sim{tag}-{code:02d}", password="!") for code in range(sim.judgments.n_annotators)]
    )
    if users and users[0].pk is None:  # backends without RETURNING
        users = list(user_model.objects.filter(username__startswith=f"sim{tag}-").order_by("username"))
    group, _ = Group.objects.get_or_create(name=Role.ANNOTATOR.value)
    group.user_set.add(*users)
    tests_correct = rng.binomial(tests_per_annotator, sim.annotator_accuracy) if tests_per_annotator else np.zeros(len(users), int)
    tests = _test_questions(job, corpus, tag, tests_per_annotator, rng)
    answers: list[TestAnswer] = []
    for user, correct in zip(users, tests_correct, strict=True):
        right = set(rng.permutation(len(tests))[: int(correct)].tolist())
        for k, question in enumerate(tests):
            label = question.gold_label if k in right else WRONG[question.gold_label]
            answers.append(TestAnswer(job=job, test_question=question, annotator=user, label=label, correct=k in right,
                                      seconds=float(rng.uniform(10, 45))))
    TestAnswer.objects.bulk_create(answers, batch_size=BATCH)
    j = sim.judgments
    per_user = np.bincount(j.annotators, minlength=len(users)) if j.size else np.zeros(len(users), int)
    Membership.objects.bulk_create(
        [
            Membership(job=job, annotator=user, tests_answered=len(tests), tests_correct=int(correct),
                       shown_tests_answered=len(tests), shown_tests_correct=int(correct),
                       questions_served=int(n) + len(tests), questions_answered=int(n) + len(tests))
            for user, correct, n in zip(users, tests_correct, per_user.tolist(), strict=True)
        ]
    )
    seconds = rng.uniform(10, 45, size=j.size)
    Judgment.objects.bulk_create(
        [
            Judgment(job=job, item=items[i], annotator=users[a], label=LABELS[lab], seconds=float(sec))
            for i, a, lab, sec in zip(j.items.tolist(), j.annotators.tolist(), j.labels.tolist(), seconds.tolist(), strict=True)
        ],
        batch_size=BATCH,
    )
    return job
