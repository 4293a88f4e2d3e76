"""A small synthetic corpus for the pipeline tests (built with the ORM, no files).

Every article has a complex and a simple document; simple sentence ``(p, s)`` is a shortened
copy of complex sentence ``(p, s)`` and every sentence uses its own words, so lexical
baselines (jaccard, tfidf) recover exactly the diagonal: the expected alignment is known.
"""

from __future__ import annotations

import random

from curation.models import Article, Corpus, Document, DocumentPair, Paragraph, Sentence
from pipeline.models import AlignmentRun

WORDS = [
    "river", "mountain", "teacher", "bicycle", "harbor", "lantern", "violin", "orchard", "glacier", "market",
    "rocket", "meadow", "engine", "castle", "pepper", "window", "island", "thunder", "garden", "ladder",
    "camera", "desert", "blanket", "tunnel", "parrot", "forest", "kettle", "planet", "saddle", "bridge",
    "candle", "jacket", "puzzle", "harvest", "compass", "sailor", "copper", "festival", "library", "canyon",
    "ferry", "meteor", "pillow", "statue", "basket", "cottage", "volcano", "hammer", "pencil", "dolphin",
    "bakery", "factory", "lemon", "mirror", "needle", "ocean", "palace", "quilt", "rabbit", "spider",
    "tractor", "umbrella", "valley", "walnut", "yacht", "zebra", "anchor", "barrel", "cactus", "dragon",
    "feather", "guitar", "helmet", "igloo", "jungle", "kitten", "lobster", "magnet", "noodle", "otter",
]


def _sentence_words(rng: random.Random, n: int) -> list[str]:
    return rng.sample(WORDS, n)


def build_corpus(
    name: str = "Pipeline test corpus",
    n_articles: int = 6,
    paragraphs: int = 2,
    sentences: int = 2,
    language: str = "en",
    kind: str = Corpus.Kind.NEWS,
    seed: int = 7,
) -> Corpus:
    rng = random.Random(seed)
    corpus = Corpus.objects.create(name=name, language=language, kind=kind)
    for a in range(n_articles):
        article = Article.objects.create(corpus=corpus, slug=f"art{a}", title=f"Article {a}", content_hash=str(a))
        complex_doc = Document.objects.create(article=article, level=0, level_label="complex")
        simple_doc = Document.objects.create(article=article, level=1, level_label="simple")
        position = {complex_doc.pk: 0, simple_doc.pk: 0}
        for p in range(paragraphs):
            cpara = Paragraph.objects.create(document=complex_doc, position=p)
            spara = Paragraph.objects.create(document=simple_doc, position=p)
            for s in range(sentences):
                words = _sentence_words(rng, 9)
                complex_text = " ".join(words).capitalize() + " near the old town."
                simple_text = " ".join(words[:6]).capitalize() + "."
                for doc, para, text in ((complex_doc, cpara, complex_text), (simple_doc, spara, simple_text)):
                    Sentence.objects.create(
                        document=doc, paragraph=para, paragraph_position=p, position=s,
                        doc_position=position[doc.pk], text=text, token_count=len(text.split()),
                    )
                    position[doc.pk] += 1
        DocumentPair.objects.create(
            article=article, complex=complex_doc, simple=simple_doc, pair_id=f"art{a}_0_1", corpus=corpus
        )
    return corpus


def expected_alignment(corpus: Corpus) -> set[tuple[int, int]]:
    """(simple sentence pk, complex sentence pk) of the diagonal: what a good aligner finds."""
    out = set()
    for pair in corpus.pairs.all():
        complex_by_pos = {
            (p, s): pk for pk, p, s in pair.complex.sentences.values_list("pk", "paragraph_position", "position")
        }
        for pk, p, s in pair.simple.sentences.values_list("pk", "paragraph_position", "position"):
            out.add((pk, complex_by_pos[(p, s)]))
    return out


def job_id(run: AlignmentRun) -> int:
    """The run's job id (runs made by ``plan_run`` always have one)."""
    if run.job_id is None:
        raise AssertionError(f"run {run.pk} has no job")
    return run.job_id
