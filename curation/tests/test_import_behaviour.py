"""Import behaviour shared by all formats: idempotence, --replace, --drop-short, stable ids,
one transaction and the management command (the upload page: pipeline/tests/test_import_jobs.py)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from curation.importers.run import keep_sentence, run_import
from curation.importers.types import ImportFailed
from curation.models import Article, DocumentPair, ReferenceAlignment, Sentence
from curation.tests.conftest import options, plain_pair, row_counts

PAIR = {
    "pair_id": "p1",
    "complex": [["Contents:", "The long original sentence is here.", "Short one."], ["Another full sentence stays."]],
    "simple": [["A simple sentence stays here."], ["Tiny."]],
}


def jsonl(*objs: dict) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


def sentence_ids() -> list[tuple[str, str]]:
    out = []
    for pair in DocumentPair.objects.select_related("complex", "simple"):
        for side, doc in ((1, pair.complex), (0, pair.simple)):
            out += [(s.local_id(pair.pair_id, side), s.text) for s in Sentence.objects.filter(document=doc).order_by("doc_position")]
    return sorted(out)


@pytest.mark.django_db
def test_reimport_same_file_changes_nothing(write_file):
    path = write_file("pairs.jsonl", jsonl(PAIR))
    run_import(path, options("jsonl"))
    before, rows = row_counts(), list(Sentence.objects.order_by("pk").values())
    summary = run_import(path, options("jsonl"))
    assert (summary.articles_created, summary.articles_unchanged, summary.sentences) == (0, 1, 0)
    after = row_counts()
    assert after.pop("ImportRecord") == before.pop("ImportRecord") + 1  # the run itself is recorded
    assert after == before
    assert list(Sentence.objects.order_by("pk").values()) == rows


@pytest.mark.django_db
def test_changed_text_needs_replace_and_replace_deletes_old_labels(write_file):
    run_import(write_file("pairs.jsonl", jsonl(PAIR)), options("jsonl"))
    run_import(write_file("gold.tsv", "aligned\tp1-0-0-0\tp1-1-0-1\ta\tb\n"), options("tsv"))
    changed = dict(PAIR, simple=[["A simple sentence stays here."], ["Tiny, but new."]])
    path = write_file("pairs2.jsonl", jsonl(changed))
    before = row_counts()
    with pytest.raises(ImportFailed, match="already exists in corpus 'Test' with different text; import with --replace"):
        run_import(path, options("jsonl"))
    assert row_counts() == before
    summary = run_import(path, options("jsonl", replace=True))
    assert (summary.articles_replaced, summary.articles_created) == (1, 0)
    assert Article.objects.count() == 1 and ReferenceAlignment.objects.count() == 0
    assert plain_pair(DocumentPair.objects.get())["simple"][1] == ["Tiny, but new."]


@pytest.mark.django_db
def test_sentence_ids_are_stable_across_reimports(write_file, demo_dir):
    run_import(demo_dir, options("text", corpus="Demo"))
    first = sentence_ids()
    Article.objects.all().delete()
    run_import(demo_dir, options("text", corpus="Demo"))
    assert sentence_ids() == first
    assert len(first) > 100
    assert dict(first)["city_bikes.0_1-1-0-0"].startswith("The city council of Harlow Bay voted on Tuesday")


def test_keep_sentence_rule():
    assert keep_sentence("This has four tokens")
    assert not keep_sentence("Too short here")  # 3 tokens
    assert not keep_sentence("A long sentence that introduces a list:")
    assert keep_sentence("Four tokens, yes!")  # punctuation counts as tokens


@pytest.mark.django_db
def test_drop_short_drops_short_and_colon_sentences_and_empty_paragraphs(write_file):
    summary = run_import(write_file("pairs.jsonl", jsonl(PAIR)), options("jsonl", drop_short=True))
    assert summary.sentences_dropped == 3  # "Contents:", "Short one.", "Tiny."
    plain = plain_pair(DocumentPair.objects.get())
    assert plain["complex"] == [["The long original sentence is here."], ["Another full sentence stays."]]
    assert plain["simple"] == [["A simple sentence stays here."]]
    assert Sentence.objects.filter(text="Tiny.").count() == 0


@pytest.mark.django_db
def test_drop_short_refused_for_deplain(write_file):
    with pytest.raises(ImportFailed, match="--drop-short cannot be used with DEplain"):
        run_import(write_file("plan_doc_1.csv", "x"), options("deplain", drop_short=True))


@pytest.mark.django_db
def test_multi_file_import_is_one_transaction(write_file):
    # the first article is fine and parsed; the write of the TSV in the same corpus fails later:
    run_import(write_file("pairs.jsonl", jsonl(PAIR)), options("jsonl"))
    for level in (0, 1):
        write_file(f"texts/good.en.{level}.txt", f"Good text number {level} is here.\n")
    write_file("texts/zbad.en.0.txt", "Fine.\n")
    bad = write_file("texts/zbad.en.1.txt", b"\xff\xfe\x00\x81\x8d")
    before = row_counts()
    with pytest.raises(ImportFailed) as info:
        run_import(bad.parent, options("text"))
    assert info.value.path == str(bad)
    assert row_counts() == before
    assert not Article.objects.filter(slug="good").exists()


@pytest.mark.django_db
def test_writer_failure_rolls_back_articles_already_written(write_file):
    """Documents are written before pair ids are checked: a clash must undo them."""
    run_import(write_file("a.jsonl", jsonl(PAIR)), options("jsonl"))
    for level in (0, 1):
        write_file(f"t/p1.en.{level}.txt", f"Text {level} here.\n")  # slug p1 clashes with the JSONL article
    before = row_counts()
    with pytest.raises(ImportFailed, match="already exists"):
        run_import(write_file("t/p1.en.0.txt", "Text 0 here.\n").parent, options("text"))
    assert row_counts() == before


@pytest.mark.django_db
def test_management_command_success_and_failure(write_file):
    path = write_file("pairs.jsonl", jsonl(PAIR))
    out = io.StringIO()
    call_command("import_corpus", str(path), "--format", "jsonl", "--corpus", "Cmd", "--language", "en", stdout=out)
    assert "1 articles created" in out.getvalue() and "corpus 'Cmd'" in out.getvalue()
    assert Article.objects.filter(corpus__name="Cmd").count() == 1
    bad = write_file("bad.jsonl", "{oops\n")
    before = row_counts()
    with pytest.raises(CommandError, match=r"import failed, nothing was written: .*bad.jsonl:1: not valid JSON"):
        call_command("import_corpus", str(bad), "--format", "jsonl", "--corpus", "Cmd")
    assert row_counts() == before


@pytest.mark.django_db
def test_management_command_exclude_and_deplain(write_file, demo_dir, shared_data):
    out = io.StringIO()
    call_command(
        "import_corpus", str(shared_data / "deplain-web" / "dev"), "--format", "deplain", "--corpus", "DE",
        "--language", "de", "--exclude", "plan_doc_1*", stdout=out,
    )
    assert Article.objects.filter(corpus__name="DE").count() == 17 - 6  # 112,117,119,123,126,154 excluded
    assert "alignments created" in out.getvalue()


@pytest.mark.django_db
def test_documents_in_another_language_than_the_corpus_are_refused(write_file):
    from curation.importers.run import run_import
    from curation.importers.types import ImportFailed
    from curation.tests.conftest import options, row_counts

    first = write_file("a.jsonl", '{"pair_id": "a", "complex": [["Eins zwei drei vier."]], "simple": [["Eins zwei."]]}\n')
    run_import(first, options("jsonl", corpus="German", language="de"))
    before = row_counts()
    second = write_file("b.jsonl", '{"pair_id": "b", "complex": [["One two three four."]], "simple": [["One two."]]}\n')
    with pytest.raises(ImportFailed, match="corpus 'German' is in language 'de', this import says 'en'"):
        run_import(second, options("jsonl", corpus="German", language="en"))
    assert row_counts() == before
