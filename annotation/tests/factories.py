"""Small corpora (through the one test-corpus builder) and jobs for annotation tests."""

from __future__ import annotations

from alignment_engine import ids
from annotation.models import LabelingJob
from annotation.services import job_setup
from curation.models import AlignmentLabel, Corpus
from curation.tests.corpus_builder import build_corpus

COMPLEX = [
    ["The city council approved a new budget on Tuesday after a long debate.", "It includes more money for schools."],
    ["Scientists discovered a new species of frog in the rainforest of Peru.", "The frog is bright blue and very small."],
    ["Heavy rain caused flooding in several villages near the river.", "Hundreds of families left their homes."],
    ["The museum will open a new exhibition about ancient Egypt next month."],
]
SIMPLE = [
    ["The city council approved a new budget.", "Schools will get more money."],
    ["Scientists found a new kind of frog in Peru.", "It is tiny and blue."],
    ["Rain flooded villages near the river."],
    ["A museum will show things from ancient Egypt."],
]


def make_corpus(name: str = "toy", n_articles: int = 2, kind: str = Corpus.Kind.NEWS) -> Corpus:
    """Articles ``art0``, ``art1``, ... with the COMPLEX and SIMPLE documents (pair ``art<n>.0_1``)."""
    return build_corpus(name, {f"art{a}": [COMPLEX, SIMPLE] for a in range(n_articles)}, kind=kind)


def gold_rows(corpus: Corpus) -> list[job_setup.GoldRow]:
    """Three gold rows per article pair: aligned, partialAligned, notAligned."""
    rows = []
    for pair in corpus.pairs.all():
        pid = pair.pair_id
        rows += [
            job_setup.GoldRow(ids.sentence_id(pid, ids.SIMPLE, 0, 0), ids.sentence_id(pid, ids.COMPLEX, 0, 0), AlignmentLabel.ALIGNED,
                              "Same budget news."),
            job_setup.GoldRow(ids.sentence_id(pid, ids.SIMPLE, 1, 1), ids.sentence_id(pid, ids.COMPLEX, 1, 1), AlignmentLabel.PARTIAL,
                              "Only the colour and size match."),
            job_setup.GoldRow(ids.sentence_id(pid, ids.SIMPLE, 3, 0), ids.sentence_id(pid, ids.COMPLEX, 2, 1), AlignmentLabel.NOT_ALIGNED,
                              "Museum versus flood: different events."),
        ]
    return rows


def make_job(
    corpus: Corpus | None = None,
    *,
    judgments_per_pair: int = 5,
    min_seconds: int = 0,
    every: int = 5,
    threshold: float = 0.85,
    min_tests: int = 2,
    n_articles: int = 2,
    with_gold: bool = True,
    seed: int | None = 7,
) -> LabelingJob:
    """A job over a toy corpus; ``seed`` fixed by default so serving draws repeat (None: random)."""
    corpus = corpus or make_corpus(n_articles=n_articles)
    gold = job_setup.gold_from_rows(corpus, gold_rows(corpus)) if with_gold else []
    settings = job_setup.JobSettings(
        judgments_per_pair=judgments_per_pair, test_question_every=every, min_seconds=min_seconds,
        accuracy_threshold=threshold, min_test_questions=min_tests,
    )
    return job_setup.create_job(name="toy job", corpus=corpus, created_by=None, settings=settings, gold=gold, seed=seed)
