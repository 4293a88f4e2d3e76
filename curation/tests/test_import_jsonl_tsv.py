"""Document-pair JSONL and alignment TSV importers: real files, bad input, nothing written on error."""

from __future__ import annotations

import json

import pytest

from alignment_engine.ids import COMPLEX, SIMPLE, SentenceId, sentence_id
from curation.importers.run import run_import
from curation.importers.types import ImportFailed
from curation.models import AlignmentLabel, DocumentPair, ReferenceAlignment, Sentence
from curation.tests.conftest import options, plain_pair, row_counts

PAIR = {
    "pair_id": "p1",
    "language": "en",
    "complex": [["The cat sat on the mat.", "It was warm."], ["Then it slept."]],
    "simple": [["The cat sat."], ["It slept."]],
}
PAIR2 = dict(PAIR, pair_id="p2", complex=[["A dog ran in the park."], ["Then it rested there."]], simple=[["A dog ran."], ["It rested."]])


def jsonl(*objs: dict) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


@pytest.mark.django_db
def test_jsonl_import_pairs_and_ids(write_file):
    path = write_file("pairs.jsonl", jsonl(PAIR, dict(PAIR2, complex_title="Cats", meta={"x": 1})))
    summary = run_import(path, options("jsonl"))
    assert (summary.articles_created, summary.documents, summary.pairs, summary.sentences) == (2, 4, 2, 9)
    pair = DocumentPair.objects.get(pair_id="p1")
    assert plain_pair(pair) == {"pair_id": "p1", "language": "en", "complex": PAIR["complex"], "simple": PAIR["simple"]}
    sentence = Sentence.objects.get(document=pair.complex, paragraph_position=1, position=0)
    assert sentence.local_id(pair.pair_id, 1) == "p1-1-1-0" and sentence.text == "Then it slept."
    assert DocumentPair.objects.get(pair_id="p2").article.title == "Cats"


@pytest.mark.django_db
def test_onestopenglish_gold_dev_jsonl_and_tsv(shared_data):
    root = shared_data / "onestopenglish-gold-dev"
    summary = run_import(root / "dev_pairs.jsonl", options("jsonl", corpus="OSE gold"))
    assert summary.pairs == 12
    summary = run_import(root / "dev_gold.tsv", options("tsv", corpus="OSE gold"))
    assert summary.alignments_created == 374
    labels = dict(
        (label, ReferenceAlignment.objects.filter(label=label).count()) for label in (AlignmentLabel.ALIGNED, AlignmentLabel.PARTIAL)
    )
    assert sum(labels.values()) == 374 and labels[AlignmentLabel.PARTIAL] > 0
    first = (root / "dev_gold.tsv").read_text(encoding="utf-8").splitlines()[0].split("\t")
    simple_id, complex_id = SentenceId.parse(first[1]), SentenceId.parse(first[2])
    ra = ReferenceAlignment.objects.select_related("simple", "complex", "pair").get(
        pair__pair_id=simple_id.pair_id,
        simple__paragraph_position=simple_id.paragraph,
        simple__position=simple_id.sentence,
        complex__paragraph_position=complex_id.paragraph,
        complex__position=complex_id.sentence,
    )
    assert (ra.simple.text, ra.complex.text, ra.label) == (first[3], first[4], first[0])
    # re-importing the gold changes nothing
    again = run_import(root / "dev_gold.tsv", options("tsv", corpus="OSE gold"))
    assert (again.alignments_created, again.alignments_updated, again.alignments_unchanged) == (0, 0, 374)


@pytest.mark.django_db
def test_tsv_labels_role_scores_and_update(write_file):
    run_import(write_file("pairs.jsonl", jsonl(PAIR)), options("jsonl"))
    tsv = "label\tsimple\tcomplex\ts\tc\tgleu\naligned\tp1-0-0-0\tp1-1-0-0\ta\tb\t0.8\npartialAligned\tp1-0-1-0\tp1-1-1-0\ta\tb\t\n"
    summary = run_import(write_file("labels.tsv", tsv), options("tsv", role="labels"))
    assert summary.alignments_created == 2
    rows = {(r.label, r.score, r.role) for r in ReferenceAlignment.objects.all()}
    assert rows == {("aligned", 0.8, "labels"), ("partialAligned", None, "labels")}
    changed = tsv.replace("aligned\tp1-0-0-0", "notAligned\tp1-0-0-0")
    summary = run_import(write_file("labels2.tsv", changed), options("tsv", role="labels"))
    assert (summary.alignments_created, summary.alignments_updated, summary.alignments_unchanged) == (0, 1, 1)
    assert ReferenceAlignment.objects.get(simple__paragraph_position=0).label == "notAligned"


BAD_JSONL = [
    ("invalid json", '{"pair_id": "p3", "complex": [[\n', 2, "not valid JSON"),
    ("not an object", "[1, 2]\n", 2, "must be a JSON object"),
    ("missing field", '{"pair_id": "p3", "complex": [["A."]]}\n', 2, "missing field(s): simple"),
    ("bad pair id", json.dumps(dict(PAIR, pair_id="a-b")) + "\n", 2, "bad pair_id 'a-b'"),
    ("empty sentence", json.dumps(dict(PAIR, pair_id="p3", simple=[["  "]])) + "\n", 2, "holds an empty sentence"),
    ("empty paragraph", json.dumps(dict(PAIR, pair_id="p3", simple=[[]])) + "\n", 2, "is an empty paragraph"),
    ("wrong language", json.dumps(dict(PAIR, pair_id="p3", language="de")) + "\n", 2, "differs from the corpus language"),
    ("duplicate pair id", json.dumps(PAIR) + "\n", 2, "pair id 'p1' also on line 1"),
    # issue 10 finding 8: each of these gave a 500 or a traceback
    ("escaped NUL", json.dumps(dict(PAIR, pair_id="p3", simple=[["A\u0000b."]])) + "\n", 2, "simple[0][0]: a NUL byte at character 2"),
    ("raw NUL", '{"pair_id": "p3", \x00}\n', 2, "a NUL byte at byte 19 of the line"),
    ("control character", json.dumps(dict(PAIR, pair_id="p3", complex_title="A\x01")) + "\n", 2, "complex_title: control character U+0001"),
    ("nested 3,000 deep", '{"pair_id": "p3", "meta": ' + "[" * 3000 + "]" * 3000 + "}\n", 2, "JSON nested too deeply"),
    ("nested 100,000 deep", "[" * 100_000 + "]" * 100_000 + "\n", 2, "JSON nested too deeply"),
    ("pair id of 300", json.dumps(dict(PAIR, pair_id="p" * 300)) + "\n", 2, "a pair id has at most 200 characters (got 300)"),
    ("title of 600", json.dumps(dict(PAIR, pair_id="p3", complex_title="T" * 600)) + "\n", 2, "complex_title has 600 characters; at most 500"),
    ("article of 300", json.dumps(dict(PAIR, pair_id="p3", article="a" * 300)) + "\n", 2, "article has 300 characters; at most 200"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "second_line", "line", "problem"), BAD_JSONL, ids=[b[0] for b in BAD_JSONL])
def test_bad_jsonl_names_line_and_writes_nothing(write_file, name, second_line, line, problem):
    run_import(write_file("seed.jsonl", jsonl(PAIR2)), options("jsonl"))
    before = row_counts()
    path = write_file("bad.jsonl", jsonl(PAIR) + second_line)  # line 1 is fine, line 2 is bad
    with pytest.raises(ImportFailed) as info:
        run_import(path, options("jsonl"))
    assert problem in info.value.problem
    assert info.value.line == line
    assert str(path.name) in info.value.path
    assert row_counts() == before


@pytest.mark.django_db
def test_bad_utf8_and_empty_jsonl(write_file):
    path = write_file("bad.jsonl", jsonl(PAIR).encode() + b'{"pair_id": "\xff"}\n')
    with pytest.raises(ImportFailed, match=r"bad.jsonl:2: not valid UTF-8"):
        run_import(path, options("jsonl"))
    for content in ("", "\n\n  \n"):
        with pytest.raises(ImportFailed, match="nothing to import"):
            run_import(write_file("empty.jsonl", content), options("jsonl"))
    with pytest.raises(ImportFailed, match="expected a .jsonl file, got a folder"):
        run_import(path.parent, options("jsonl"))
    assert sum(row_counts().values()) == 0


BAD_TSV = [
    ("wrong columns", "aligned\tp1-0-0-0\tp1-1-0-0\n", "expected 5 or 6 tab-separated columns"),
    ("unknown label", "maybe\tp1-0-0-0\tp1-1-0-0\ta\tb\n", "unknown label 'maybe'"),
    ("bad score", "aligned\tp1-0-0-0\tp1-1-0-0\ta\tb\thigh\n", "score 'high' is not a number"),
    ("bad id", "aligned\tp1-0-0\tp1-1-0-0\ta\tb\n", "bad sentence id 'p1-0-0'"),
    ("swapped sides", "aligned\tp1-1-0-0\tp1-0-0-0\ta\tb\n", "should have level 0"),
    ("unknown pair", "aligned\tnope-0-0-0\tnope-1-0-0\ta\tb\n", "unknown document pair 'nope'"),
    ("unknown sentence", "aligned\tp1-0-9-0\tp1-1-0-0\ta\tb\n", "unknown sentence id 'p1-0-9-0'"),
    ("pairs differ", "aligned\tp1-0-0-0\tp2-1-0-0\ta\tb\n", "are from different pairs"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "bad_row", "problem"), BAD_TSV, ids=[b[0] for b in BAD_TSV])
def test_bad_tsv_names_line_and_writes_nothing(write_file, name, bad_row, problem):
    run_import(write_file("pairs.jsonl", jsonl(PAIR, PAIR2)), options("jsonl"))
    before = row_counts()
    path = write_file("gold.tsv", "aligned\tp1-0-0-0\tp1-1-0-0\ta\tb\n\n" + bad_row)
    with pytest.raises(ImportFailed) as info:
        run_import(path, options("tsv"))
    assert str(info.value).startswith(f"{path}:3: ")
    assert problem in info.value.problem
    assert row_counts() == before  # the good first row was not written either


@pytest.mark.django_db
def test_tsv_bad_utf8_empty_and_unknown_role(write_file):
    run_import(write_file("pairs.jsonl", jsonl(PAIR)), options("jsonl"))
    before = row_counts()
    with pytest.raises(ImportFailed, match=r"gold.tsv:2: not valid UTF-8"):
        run_import(write_file("gold.tsv", b"aligned\tp1-0-0-0\tp1-1-0-0\ta\tb\naligned\tp1-0-0-0\tp1-1-0-0\t\xe9\tb\n"), options("tsv"))
    with pytest.raises(ImportFailed, match="nothing to import"):
        run_import(write_file("empty.tsv", ""), options("tsv"))
    with pytest.raises(ImportFailed, match="unknown role 'silver'"):
        run_import(write_file("ok.tsv", "aligned\tp1-0-0-0\tp1-1-0-0\ta\tb\n"), options("tsv", role="silver"))
    assert row_counts() == before


@pytest.mark.django_db
def test_demo_corpus_round_trip_through_jsonl_and_tsv(write_file):
    """The demo corpus, written out as JSONL and a TSV of its copied sentences, imports again with the same ids."""
    from django.core.management import call_command

    call_command("load_demo")
    pairs = list(DocumentPair.objects.filter(corpus__name="Demo (English news)").select_related("corpus", "complex", "simple"))
    lines, rows = [], []
    for pair in pairs:
        plain = plain_pair(pair)
        lines.append(json.dumps(plain))
        complex_ids = {s: sentence_id(pair.pair_id, COMPLEX, p, i) for p, para in enumerate(plain["complex"]) for i, s in enumerate(para)}
        for p, para in enumerate(plain["simple"]):
            for i, s in enumerate(para):
                if s in complex_ids:
                    rows.append(f"aligned\t{sentence_id(pair.pair_id, SIMPLE, p, i)}\t{complex_ids[s]}\t{s}\t{s}\t1.0")
    run_import(write_file("demo.jsonl", "\n".join(lines) + "\n"), options("jsonl", corpus="Demo copy"))
    summary = run_import(write_file("demo.tsv", "\n".join(rows) + "\n"), options("tsv", corpus="Demo copy"))
    assert summary.alignments_created == len(rows) >= 15  # copied sentences across 16 pairs
    for pair in pairs:
        copy = DocumentPair.objects.get(corpus__name="Demo copy", pair_id=pair.pair_id)
        assert plain_pair(copy)["complex"] == plain_pair(pair)["complex"]
        assert plain_pair(copy)["simple"] == plain_pair(pair)["simple"]
    identical = ReferenceAlignment.objects.filter(pair__corpus__name="Demo copy").select_related("simple", "complex")
    assert all(ra.simple.text == ra.complex.text for ra in identical)


@pytest.mark.django_db
def test_pair_ids_follow_the_one_rule(write_file) -> None:  # type: ignore[no-untyped-def]
    """A pair id with '-' or spaces is refused by the validator of DocumentPair.pair_id and by the
    importer, which names the article (both use alignment_engine.ids.pair_id_problem)."""
    from django.core.exceptions import ValidationError

    from curation.importers.types import ParsedArticle, ParsedDocument
    from curation.importers.writer import write_import

    run_import(write_file("p.jsonl", json.dumps(PAIR) + "\n"), options("jsonl"))
    pair = DocumentPair.objects.get(pair_id="p1")
    pair.full_clean()
    for bad in ("a-b", "a b", ""):
        pair.pair_id = bad
        with pytest.raises(ValidationError) as caught:
            pair.full_clean()
        assert "pair_id" in caught.value.message_dict
    article = ParsedArticle(slug="x", title="", source="plan.csv", pairs=[(0, 1, "x-1")], documents=[
        ParsedDocument(0, "0", [["A complex sentence."]]), ParsedDocument(1, "1", [["A simple one."]])])
    with pytest.raises(ImportFailed, match=r"plan.csv: article 'x': pair id 'x-1': a pair id may not contain '-'"):
        write_import(write_file("plan.csv", ""), options("text"), [article], [])
    assert not DocumentPair.objects.filter(pair_id="x-1").exists()
