"""Builds small corpora, alignment runs and labels through the ORM for the export tests."""

from __future__ import annotations

from typing import Any

from alignment_engine.text import count_tokens
from curation.models import Article, Corpus, Document, DocumentPair, Paragraph, Sentence
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
    corpus = Corpus.objects.create(name=name, language=language)
    for a in range(n_articles):
        article = Article.objects.create(corpus=corpus, slug=f"art{a:03d}", title=f"Article {a}", content_hash=str(a))
        docs = []
        for level, paragraphs in enumerate(LEVELS):
            doc = Document.objects.create(article=article, level=level, level_label=str(level))
            docs.append(doc)
            k = 0
            for p, sentences in enumerate(paragraphs):
                para = Paragraph.objects.create(document=doc, position=p)
                for s, text in enumerate(sentences):
                    Sentence.objects.create(document=doc, paragraph=para, paragraph_position=p, position=s,
                                            doc_position=k, text=text,
                                            token_count=count_tokens(text))
                    k += 1
        combos = [(0, 1), (1, 2)] + ([(0, 2)] if all_levels else [])
        for c, s in combos:
            DocumentPair.objects.create(article=article, complex=docs[c], simple=docs[s], corpus=corpus,
                                        pair_id=f"art{a:03d}.{c}_{s}")
    return corpus


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
    run = AlignmentRun.objects.create(corpus=corpus, method="bulk")
    per_pair = 100
    n_pairs = max(1, n // per_pair)
    sentences: list[Sentence] = []
    pairs: list[DocumentPair] = []
    for i in range(n_pairs):
        article = Article.objects.create(corpus=corpus, slug=f"bulk{i:06d}", content_hash="x")
        c = Document.objects.create(article=article, level=0, level_label="0")
        s = Document.objects.create(article=article, level=1, level_label="1")
        pc = Paragraph.objects.create(document=c, position=0)
        ps = Paragraph.objects.create(document=s, position=0)
        for k in range(10):
            sentences.append(Sentence(document=c, paragraph=pc, paragraph_position=0, position=k, doc_position=k,
                                      text=f"Complex sentence number {k} of article {i} with some extra words in it.", token_count=14))
            sentences.append(Sentence(document=s, paragraph=ps, paragraph_position=0, position=k, doc_position=k,
                                      text=f"Simple sentence {k} of article {i}.", token_count=7))
        pairs.append(DocumentPair(article=article, complex=c, simple=s, corpus=corpus, pair_id=f"bulk{i:06d}.0_1"))
    Sentence.objects.bulk_create(sentences, batch_size=5000)
    DocumentPair.objects.bulk_create(pairs, batch_size=5000)
    rows: list[PredictedAlignment] = []
    ids: dict[tuple[int, int], list[int]] = {}
    for pk, doc_id, pos in Sentence.objects.filter(document__article__corpus=corpus).values_list("pk", "document_id", "doc_position"):
        ids.setdefault((doc_id, pos), []).append(pk)
    for pair in DocumentPair.objects.filter(corpus=corpus).values_list("pk", "complex_id", "simple_id"):
        pk, c_doc, s_doc = pair
        for k in range(per_pair):
            rows.append(PredictedAlignment(run=run, pair_id=pk, simple_id=ids[(s_doc, k // 10)][0],
                                           complex_id=ids[(c_doc, k % 10)][0], label="aligned", score=0.5))
        if len(rows) >= 20000:
            PredictedAlignment.objects.bulk_create(rows, batch_size=5000)
            rows = []
    PredictedAlignment.objects.bulk_create(rows, batch_size=5000)
    return run


def params(**kw: Any) -> dict[str, Any]:
    return {"format": "tsv", "splits": "2/1/1", "seed": 0, **kw}
