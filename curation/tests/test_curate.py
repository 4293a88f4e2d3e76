"""Phenomena classification and derivation of non-adjacent level alignments (pure functions)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import cast

from alignment_engine.ids import COMPLEX, SIMPLE, sentence_id
from curation.curate.derive import LevelLink, derive_links
from curation.curate.gleu import sentence_gleu
from curation.curate.phenomena import Phenomenon, classify, components, count_phenomena


def test_components_group_a_bipartite_graph() -> None:
    comps = components([("c1", "s1"), ("c1", "s2"), ("c2", "s3"), ("c3", "s3"), ("c4", "s4")])
    assert comps == [(["c1"], ["s1", "s2"]), (["c2", "c3"], ["s3"]), (["c4"], ["s4"])]


def test_classify_every_phenomenon() -> None:
    texts: dict[Hashable, str] = {
        "c1": "The cat sat on the mat.", "s1": "The cat sat on the mat.",  # copying
        "c2": "He went home early.", "s2": "He left early.",  # rephrasing
        "c3": "A long one, which has two parts.", "s3a": "A long one.", "s3b": "It has two parts.",  # splitting
        "c4a": "One.", "c4b": "Two.", "s4": "One and two.",  # merging
        "c5a": "x", "c5b": "y", "s5a": "x y", "s5b": "y x",  # fusion
    }
    links = [("c1", "s1"), ("c2", "s2"), ("c3", "s3a"), ("c3", "s3b"), ("c4a", "s4"), ("c4b", "s4"),
             ("c5a", "s5a"), ("c5b", "s5a"), ("c5b", "s5b")]
    groups = classify(links, texts, complex_sentences=["c1", "c2", "c3", "c4a", "c4b", "c5a", "c5b", "c6"])
    by = {g.complex: g.phenomenon for g in groups}
    assert by[("c1",)] is Phenomenon.COPYING
    assert by[("c2",)] is Phenomenon.REPHRASING
    assert by[("c3",)] is Phenomenon.SPLITTING
    assert by[("c4a", "c4b")] is Phenomenon.MERGING
    assert by[("c5a", "c5b")] is Phenomenon.FUSION
    assert by[("c6",)] is Phenomenon.DELETION
    assert count_phenomena(groups) == {
        "rephrasing": 1, "copying": 1, "splitting": 1, "merging": 1, "fusion": 1, "deletion": 1,
    }
    shapes = {g.complex: g.shape for g in groups}
    assert shapes[("c3",)] == "1-2" and shapes[("c4a", "c4b")] == "2-1" and shapes[("c6",)] == "1-0"


def test_derive_composes_adjacent_levels() -> None:
    links = [
        LevelLink(0, 1, "a0", "b1", "aligned"),
        LevelLink(1, 2, "b1", "c2", "aligned"),
        LevelLink(1, 2, "b1", "d2", "partialAligned"),
        LevelLink(0, 1, "e0", "f1", "notAligned"),
        LevelLink(1, 2, "f1", "g2", "aligned"),
    ]
    derived = derive_links(links)
    assert [(d.complex_level, d.simple_level, d.complex, d.simple, d.label) for d in derived] == [
        (0, 2, "a0", "c2", "aligned"),
        (0, 2, "a0", "d2", "partialAligned"),
    ]


def test_derive_chains_three_levels_and_keeps_direct_links() -> None:
    links = [
        LevelLink(0, 1, "a", "b", "aligned"),
        LevelLink(1, 2, "b", "c", "aligned"),
        LevelLink(2, 3, "c", "d", "partialAligned"),
        LevelLink(0, 2, "a", "c", "partialAligned"),  # a direct label wins over the derived one
    ]
    derived = {(d.complex, d.simple): d.label for d in derive_links(links)}
    assert derived == {("a", "d"): "partialAligned", ("b", "d"): "partialAligned"}


def test_sentence_gleu_matches_hand_computation() -> None:
    # 11 matching n-grams of 18 (see curation/curate/gleu.py)
    assert abs(sentence_gleu("the cat sat on the mat", "the cat sat on a mat") - 11 / 18) < 1e-9
    assert sentence_gleu("Same words here.", "same words here .") == 1.0
    assert sentence_gleu("alpha beta", "gamma delta") == 0.0


def test_sentence_gleu_set_form_equals_counting_on_random_texts() -> None:
    """The cached set form (k-th repeat of an n-gram as ``(gram, k)``) gives exactly the clipped
    counts of ``sentence_gleu_tokens``, also with repeated words and n-grams, and is symmetric."""
    import random

    from alignment_engine.text import tokenize
    from curation.curate.gleu import sentence_gleu_tokens

    rng = random.Random(3)
    vocabulary = ["the", "a", "cat", "sat", "on", "mat", ".", ",", "dog", "The", "it's", "2"]
    for _ in range(3000):
        a = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 20)))
        b = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 20)))
        want = sentence_gleu_tokens(tokenize(a.lower()), tokenize(b.lower()))
        assert sentence_gleu(a, b) == want == sentence_gleu(b, a), (a, b)
    assert sentence_gleu("the the the", "the the") == 3 / 6  # unigrams 2 of 3, bigram 1 of 2, 0 of 1


def _number(key: Hashable) -> int:
    """The sentence number of a ``("c" | "s", number)`` key of ``classify``."""
    return cast(tuple[str, int], key)[1]


def test_fast_row_classification_agrees_with_classify() -> None:
    import random
    from collections import Counter

    from curation.curate.phenomena import classify_rows
    from curation.curate.rows import Row

    rng = random.Random(7)
    for trial in range(400):
        links = sorted({(rng.randint(1, 6), rng.randint(1, 6)) for _ in range(rng.randint(1, 8))})
        if trial % 2:  # in any order, a link possibly given twice
            links = rng.sample(links, len(links)) + rng.sample(links, rng.randint(0, 1))
        texts: dict[Hashable, str] = {**{("c", c): f"t{c}" for c, _ in links}, **{("s", s): f"t{s}" for _, s in links}}
        rows = [Row("aligned", sentence_id("p", SIMPLE, 0, s), sentence_id("p", COMPLEX, 0, c), f"t{s}", f"t{c}") for c, s in links]
        counted: Counter[str] = Counter()
        classify_rows(rows, links, counted)
        groups = classify([(("c", c), ("s", s)) for c, s in links], texts)
        by_link = {(_number(c), _number(s)): g for g in groups for c in g.complex for s in g.simple}
        number = {id(g): n for n, g in enumerate(groups)}  # classify lists groups in order of first appearance
        for row, link in zip(rows, links, strict=True):
            assert row.phenomenon == by_link[link].phenomenon.value
            assert row.group_shape == by_link[link].shape
            assert row.group == number[id(by_link[link])]
        if len(set(links)) < len(links):
            continue  # a repeated 1-1 link counts once per row here, once in classify
        assert {k: v for k, v in counted.items() if v} == {
            k: v for k, v in count_phenomena(groups).items() if v
        }


def test_normalise_space_fast_path_equals_split_and_join() -> None:
    """The fast path keeps a text that is printable with single inner spaces: every whitespace
    character but the space is unprintable (checked here over every code point), so such a text
    is its own normal form; the rest goes through ``split``/``join``."""
    import sys

    from curation.curate.text import normalise_space

    assert all(not c.isprintable() for c in map(chr, range(sys.maxunicode + 1)) if c.isspace() and c != " ")
    for text in ["", " ", "a", "a b", " a b", "a b ", "a  b", "a\tb", "a\xa0b", "a\u2028b", "a\x1cb", "x\u200by", "Straße  ß", "a\n"]:
        assert normalise_space(text) == " ".join(text.split()), repr(text)


def _odd_texts() -> list[str]:
    import random

    rng = random.Random(5)
    vocabulary = ["the", "a", "Cat", "sat", ".", ",", "it's", "2", "x.y", "?!", "Über", "straße", "’s", "İ", "...", "ΣΑΣ", "x_y", "\t", "\xa0"]
    fixed = ["", "...", "a", "Don't stop!", "İstanbul ΣΑΣ x_y 3.5 — end", "the the the", "  spaced   out  ", "\x1cA\x1fb\u2028c.",
             "U.S. is big. Really?! Yes... no", "l'été ’tis Straße", "123 456.", "end.\n", "Über die Brücke gehen wir heute.",
             "a\x00b", "\x00", "ΑΣ ΑΣ. ΑΣ\tΣ"]
    return fixed + [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 20))) for _ in range(1500)]


def test_gleu_scores_of_many_pairs_equal_the_counting_form() -> None:
    """The vectorised form, on pairs scored together and apart and with its chunk table emptied
    between calls, gives exactly ``sentence_gleu_tokens`` (same counts, one division)."""
    import random

    from alignment_engine.text import tokenize
    from curation.curate import gleu
    from curation.curate.gleu import gleu_scores, sentence_gleu_tokens

    texts = _odd_texts()
    rng = random.Random(6)
    pairs = [(rng.choice(texts), rng.choice(texts)) for _ in range(3000)] + [(t, t) for t in texts[:50]]
    want = [sentence_gleu_tokens(tokenize(a.lower()), tokenize(b.lower())) for a, b in pairs]
    assert gleu_scores(pairs) == want
    assert [gleu_scores(pairs[i : i + 7]) for i in range(0, 700, 7)] == [want[i : i + 7] for i in range(0, 700, 7)]
    small = gleu.CHUNK_TABLE_SIZE
    try:
        gleu.CHUNK_TABLE_SIZE = 3
        assert gleu_scores(pairs[:500]) == want[:500] and gleu_scores(pairs[500:900]) == want[500:900]
    finally:
        gleu.CHUNK_TABLE_SIZE = small
    assert sum(0 < w < 1 for w in want) > 0 and gleu_scores([]) == []


def test_flesch_scores_equal_the_scalar_formula() -> None:
    from curation.curate import readability
    from curation.curate.readability import flesch_reading_ease, flesch_scores

    texts = _odd_texts()
    for language in ("en", "de"):
        want = [flesch_reading_ease.__wrapped__(t, language) for t in texts]  # type: ignore[attr-defined]
        assert flesch_scores(texts, language) == want
        small = readability.CHUNK_TABLE_SIZE
        try:
            readability.CHUNK_TABLE_SIZE = 3
            assert flesch_scores(texts[:300], language) == want[:300] and flesch_scores(texts[300:], language) == want[300:]
        finally:
            readability.CHUNK_TABLE_SIZE = small
        assert len(set(want)) > 50
