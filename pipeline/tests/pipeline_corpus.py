"""A small synthetic corpus for the pipeline tests (built with the ORM, no files).

Every article has a complex and a simple document; simple sentence ``(p, s)`` is a shortened
copy of complex sentence ``(p, s)`` and every sentence uses its own words, so lexical
baselines (jaccard, tfidf) recover exactly the diagonal: the expected alignment is known.
"""

from __future__ import annotations

import random

from curation.models import Corpus
from curation.tests.corpus_builder import build_corpus as build_test_corpus
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
    """Articles ``art0``, ``art1``, ... with a complex and a simple document (pair ``art<n>.0_1``)."""
    rng = random.Random(seed)
    articles: dict[str, list[list[list[str]]]] = {}
    for a in range(n_articles):
        complex_doc: list[list[str]] = []
        simple_doc: list[list[str]] = []
        for _ in range(paragraphs):
            complex_doc.append([])
            simple_doc.append([])
            for _ in range(sentences):
                words = _sentence_words(rng, 9)
                complex_doc[-1].append(" ".join(words).capitalize() + " near the old town.")
                simple_doc[-1].append(" ".join(words[:6]).capitalize() + ".")
        articles[f"art{a}"] = [complex_doc, simple_doc]
    return build_test_corpus(name, articles, language=language, kind=kind)


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
