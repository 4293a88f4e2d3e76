"""Small corpora (through the one test-corpus builder), alignment runs and labels for the export tests."""

from __future__ import annotations

from typing import Any

from curation.models import Corpus, DocumentPair, Sentence
from curation.tests.corpus_builder import build_corpus
from pipeline.models import AlignmentRun, PredictedAlignment

# level 0 (complex), 1, 2 of one article: sentence texts per paragraph
LEVELS: list[list[list[str]]] = [
    [
        ["The mayor opened the new bridge on Monday, and thousands of people walked across it.",
         "The city council, which approved the project in 2019, celebrated the opening."],
        ["The bridge cost forty million dollars.", "Critics said the money should have gone to schools."],
    ],
    [
        ["The mayor opened the new bridge on Monday.", "Thousands of people walked across it.",
         "The city council celebrated the opening."],
        ["The bridge cost forty million dollars."],
    ],
    [
        ["The mayor opened a new bridge.", "Many people walked on it."],
        ["The bridge cost a lot of money."],
    ],
]


def make_corpus(name: str = "Demo", n_articles: int = 4, language: str = "en", all_levels: bool = False) -> Corpus:
    """Articles ``art000``, ... with the three levels of ``LEVELS``; pairs ``art000.0_1``, ``art000.1_2``
    (and ``art000.0_2`` with ``all_levels``)."""
    if not n_articles:
        return Corpus.objects.create(name=name, language=language)
    return build_corpus(name, {f"art{a:03d}": LEVELS for a in range(n_articles)}, language=language, all_levels=all_levels)


def sentence(pair: DocumentPair, side: int, p: int, s: int) -> Sentence:
    doc = pair.complex if side == 1 else pair.simple
    return Sentence.objects.get(document=doc, paragraph_position=p, position=s)


# (complex (p, s), simple (p, s), label) links of the 0-1 and 1-2 pairs of every article
LINKS_01 = [((0, 0), (0, 0), "aligned"), ((0, 0), (0, 1), "aligned"), ((0, 1), (0, 2), "partialAligned"),
            ((1, 0), (1, 0), "aligned")]
LINKS_12 = [((0, 0), (0, 0), "aligned"), ((0, 1), (0, 1), "aligned"), ((1, 0), (1, 0), "aligned")]


def make_run(corpus: Corpus, method: str = "test") -> AlignmentRun:
    run = AlignmentRun.objects.create(corpus=corpus, method=method)
    rows = []
    for pair in DocumentPair.objects.filter(corpus=corpus).select_related("complex", "simple"):
        links = LINKS_01 if pair.complex.level == 0 and pair.simple.level == 1 else LINKS_12
        for (cp, cs), (sp, ss), label in links:
            rows.append(PredictedAlignment(run=run, pair=pair, simple=sentence(pair, 0, sp, ss),
                                           complex=sentence(pair, 1, cp, cs), label=label, score=0.75))
    PredictedAlignment.objects.bulk_create(rows)
    return run


def bulk_predictions(corpus: Corpus, n: int) -> AlignmentRun:
    """A run with ``n`` prediction rows over synthetic documents (for memory tests)."""
    per_pair = 100
    n_pairs = max(1, n // per_pair)
    articles = {
        f"bulk{i:06d}": [
            [[f"Complex sentence number {k} of article {i} with some extra words in it." for k in range(10)]],
            [[f"Simple sentence {k} of article {i}." for k in range(10)]],
        ]
        for i in range(n_pairs)
    }
    build_corpus(corpus.name, articles, language=corpus.language)
    run = AlignmentRun.objects.create(corpus=corpus, method="bulk")
    ids: dict[tuple[int, int], int] = {}
    for pk, doc_id, pos in Sentence.objects.filter(document__article__corpus=corpus).values_list("pk", "document_id", "doc_position"):
        ids[(doc_id, pos)] = pk
    rows: list[PredictedAlignment] = []
    for pk, c_doc, s_doc in DocumentPair.objects.filter(corpus=corpus).values_list("pk", "complex_id", "simple_id"):
        for k in range(per_pair):
            rows.append(PredictedAlignment(run=run, pair_id=pk, simple_id=ids[(s_doc, k // 10)],
                                           complex_id=ids[(c_doc, k % 10)], label="aligned", score=0.5))
        if len(rows) >= 20000:
            PredictedAlignment.objects.bulk_create(rows, batch_size=5000)
            rows = []
    PredictedAlignment.objects.bulk_create(rows, batch_size=5000)
    return run


def params(**kw: Any) -> dict[str, Any]:
    return {"format": "tsv", "splits": "2/1/1", "seed": 0, **kw}
