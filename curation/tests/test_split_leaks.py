"""Splits by article (issue 11): JSONL pairs that share a document are one article group, so the
one splitter (``assign_splits``) keeps them together, and the leak check finds any sentence text
in two splits. The onestopenglish-like case: ``exercise_advint`` and ``exercise_intele`` share
the intermediate text."""

from __future__ import annotations

import json
import random

import pytest
from django.core.management import CommandError, call_command

from curation.curate.splits import assign_splits, count_shared_across_splits, parse_ratios, shared_across_splits
from curation.importers.run import run_import
from curation.models import Article, Document, DocumentPair
from curation.queries import split_leaks
from curation.tests.conftest import options, plain_pair, row_counts

ADV = [["Regular exercise lowers the risk of heart disease considerably, researchers said."], ["It also improves sleep quality for most adults."]]
INT = [["Regular exercise lowers the risk of heart disease, researchers said."], ["It also improves sleep for most adults."]]
ELE = [["Exercise is good for your heart."], ["It helps you sleep better."]]
OTHER_C = [["The city opened a new bridge over the river on Monday."]]
OTHER_S = [["The city has a new bridge."]]


def lines(*objs: dict) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


def onestop_like() -> str:
    return lines(
        {"pair_id": "exercise_advint", "complex": ADV, "simple": INT},
        {"pair_id": "bridge", "complex": OTHER_C, "simple": OTHER_S},
        {"pair_id": "exercise_intele", "complex": INT, "simple": ELE},
    )


@pytest.mark.django_db
def test_pairs_sharing_a_document_become_one_article_with_the_document_once(write_file):
    summary = run_import(write_file("ose.jsonl", onestop_like()), options("jsonl"))
    assert (summary.articles_created, summary.documents, summary.pairs) == (2, 5, 3)
    advint = DocumentPair.objects.get(pair_id="exercise_advint")
    intele = DocumentPair.objects.get(pair_id="exercise_intele")
    assert advint.article_id == intele.article_id and advint.article.slug == "exercise_advint"
    assert advint.simple_id == intele.complex_id  # the intermediate text is stored once
    assert [(d.level, d.level_label) for d in Document.objects.filter(article=advint.article)] == [(0, "0"), (1, "1"), (2, "2")]
    # each pair still reads back exactly as its line, with the same sentence ids
    assert plain_pair(advint)["simple"] == INT and plain_pair(intele)["complex"] == INT and plain_pair(intele)["simple"] == ELE
    bridge = DocumentPair.objects.get(pair_id="bridge")
    assert (bridge.article.slug, bridge.complex.level_label, bridge.simple.level_label) == ("bridge", "complex", "simple")


@pytest.mark.django_db
def test_reimport_of_a_grouped_file_changes_nothing(write_file):
    path = write_file("ose.jsonl", onestop_like())
    run_import(path, options("jsonl"))
    before = row_counts()
    again = run_import(path, options("jsonl"))
    assert (again.articles_created, again.articles_unchanged) == (0, 2)
    assert {k: v for k, v in row_counts().items() if k != "ImportRecord"} == {k: v for k, v in before.items() if k != "ImportRecord"}


@pytest.mark.django_db
def test_article_field_groups_pairs_that_share_no_text(write_file):
    text = lines(
        {"pair_id": "a1", "article": "Story A", "complex": OTHER_C, "simple": OTHER_S},
        {"pair_id": "a2", "article": "Story A", "complex": ADV, "simple": ELE},
        {"pair_id": "b1", "complex": INT, "simple": ELE},
    )
    run_import(write_file("art.jsonl", text), options("jsonl"))
    a = Article.objects.get(slug="story_a")
    assert a.title == "Story A" and sorted(a.pairs.values_list("pair_id", flat=True)) == ["a1", "a2"]
    assert DocumentPair.objects.get(pair_id="b1").article.slug == "b1"  # an explicit article is not merged by text


@pytest.mark.django_db
def test_pairs_in_both_directions_are_refused(write_file):
    text = lines({"pair_id": "x1", "complex": ADV, "simple": INT}, {"pair_id": "x2", "complex": INT, "simple": ADV})
    before = row_counts()
    with pytest.raises(Exception, match="both more and less complex"):
        run_import(write_file("cyc.jsonl", text), options("jsonl"))
    assert row_counts() == before


@pytest.mark.django_db
@pytest.mark.parametrize("seed", range(6))
def test_splits_keep_the_onestopenglish_pairs_together_and_nothing_leaks(write_file, seed):
    run_import(write_file("ose.jsonl", onestop_like()), options("jsonl"))
    corpus = Article.objects.get(slug="bridge").corpus
    split_of = assign_splits(corpus.articles.values_list("slug", flat=True), parse_ratios("1/1"), seed)
    assert split_leaks(corpus, split_of) == []
    # per-pair articles (the old JSONL import) put the two exercise pairs apart for some seed and leak
    per_pair = {"exercise_advint": "split0", "exercise_intele": "split1"}
    texts = [(p.pair_id, s.text) for p in DocumentPair.objects.filter(pair_id__in=per_pair)
             for doc in (p.complex, p.simple) for s in doc.sentences.all()]
    leaks = shared_across_splits(texts, per_pair)
    assert [leak.text for leak in leaks] == sorted(s for para in INT for s in para)
    assert leaks[0].articles == {"split0": ["exercise_advint"], "split1": ["exercise_intele"]}


def test_shared_across_splits_min_tokens_and_unknown_keys():
    texts = [("a", "Yes."), ("b", "Yes."), ("a", "A  long shared sentence here."), ("b", "A long shared sentence here."), ("c", "Yes.")]
    split_of = {"a": "train", "b": "test"}
    assert [t.text for t in shared_across_splits(texts, split_of)] == ["A long shared sentence here.", "Yes."]
    assert [t.text for t in shared_across_splits(texts, split_of, min_tokens=4)] == ["A long shared sentence here."]
    assert shared_across_splits(texts, {"a": "train", "b": "train"}) == []


@pytest.mark.django_db
def test_onestopenglish_gold_dev_articles_and_check_command(shared_data):
    run_import(shared_data / "onestopenglish-gold-dev" / "dev_pairs.jsonl", options("jsonl", corpus="OSE"))
    articles = Article.objects.filter(corpus__name="OSE")
    assert articles.count() == 6 and all(a.pairs.count() == 2 and a.documents.count() == 3 for a in articles)
    assert DocumentPair.objects.get(pair_id="exercise_advint").article_id == DocumentPair.objects.get(pair_id="exercise_intele").article_id
    for seed in range(5):
        call_command("check_splits", "OSE", "--splits", "4/1/1", "--seed", str(seed))  # raises on a leak


@pytest.mark.django_db
def test_check_command_reports_a_leak(write_file):
    text = lines({"pair_id": "p1", "article": "A", "complex": ADV, "simple": INT}, {"pair_id": "p2", "article": "B", "complex": INT, "simple": ELE})
    run_import(write_file("leak.jsonl", text), options("jsonl", corpus="L"))
    leaked = False
    for seed in range(10):
        try:
            call_command("check_splits", "L", "--splits", "1/1", "--seed", str(seed))
        except CommandError as exc:
            assert "2 sentence text(s) shared across splits" in str(exc)
            leaked = True
    assert leaked


def test_count_shared_across_splits_equals_the_full_list():
    rng = random.Random(5)
    texts = [(f"a{rng.randrange(30)}", f"Sentence  {rng.randrange(60)} here.") for _ in range(400)]
    split_of = {f"a{i}": ("train", "dev", "test")[i % 3] for i in range(28)}  # a28, a29 unknown
    full = shared_across_splits(texts, split_of)
    assert len(full) > 5
    assert count_shared_across_splits(lambda: iter(texts), split_of, limit=5) == (len(full), full[:5])
    assert count_shared_across_splits(lambda: iter(texts), split_of, limit=5, min_tokens=4) == (
        len(shared_across_splits(texts, split_of, min_tokens=4)), shared_across_splits(texts, split_of, min_tokens=4)[:5])
    assert count_shared_across_splits(lambda: iter(texts), dict.fromkeys(split_of, "train"), limit=5) == (0, [])


def test_count_shared_across_splits_second_pass_by_value_equals_the_full_list(monkeypatch):
    """With ``texts_equal_to`` (the export card's query by value) the second pass reads only the
    sentences equal to a listed text plus the first pass's texts not in normal form; the result
    is that of the full list, also when there are too many of those and it falls back to a pass."""
    from curation.curate import splits

    rng = random.Random(8)
    variants = ["Sentence {} here.", "Sentence  {} here.", " Sentence {} here.", "Sentence\t{} here.", "Sentence {}\xa0here."]
    texts = [(f"a{rng.randrange(30)}", rng.choice(variants).format(rng.randrange(40))) for _ in range(500)]
    split_of = {f"a{i}": ("train", "dev", "test")[i % 3] for i in range(28)}
    asked: list[frozenset[str]] = []

    def equal_to(wanted: frozenset[str]):
        asked.append(wanted)
        return [(key, text) for key, text in texts if text in wanted]

    full = shared_across_splits(texts, split_of)
    assert len(full) > 5 and sum(" ".join(text.split()) != text for _, text in texts) > 100  # many texts not in normal form
    assert count_shared_across_splits(lambda: iter(texts), split_of, limit=5, texts_equal_to=equal_to) == (len(full), full[:5])
    assert asked == [frozenset(t.text for t in full[:5])]
    monkeypatch.setattr(splits, "ODD_ROWS_KEPT", 3)
    assert count_shared_across_splits(lambda: iter(texts), split_of, limit=5, texts_equal_to=equal_to) == (len(full), full[:5])
    assert len(asked) == 1  # too many texts out of normal form: a second full pass instead


@pytest.mark.django_db
def test_the_card_count_of_a_real_leak_equals_the_full_list(write_file):
    """The export card's count (batched reads, second pass by value in the database) against
    ``split_leaks`` on a corpus that does leak, one sentence per query to exercise the batches."""
    from curation.models import Corpus
    from curation.queries import (
        article_sentence_texts,
        article_sentence_texts_batched,
        article_splits,
        count_split_leaks,
    )

    text = lines({"pair_id": "p1", "article": "A", "complex": ADV, "simple": INT}, {"pair_id": "p2", "article": "B", "complex": INT, "simple": ELE})
    run_import(write_file("leak.jsonl", text), options("jsonl", corpus="L2"))
    corpus = Corpus.objects.get(name="L2")
    assert sorted(article_sentence_texts_batched(corpus, sentences_per_query=1)) == sorted(article_sentence_texts(corpus))
    leaky = next(split_of for seed in range(10)
                 if split_leaks(corpus, split_of := article_splits(corpus.pk, parse_ratios("1/1"), seed)))
    full = split_leaks(corpus, leaky)
    assert count_split_leaks(corpus, leaky, limit=1) == (len(full), full[:1]) and len(full) == 2
