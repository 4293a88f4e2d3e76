"""Leveled plain-text importer: paragraph rule, level headings, encodings, OneStopEnglish, demo corpus."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from curation.importers.leveled_text import paragraphs_from_text
from curation.importers.run import run_import
from curation.importers.types import ImportFailed
from curation.models import Article, Document, DocumentPair, Paragraph, Sentence
from curation.tests.conftest import options, plain_pair, row_counts


def test_paragraph_rule_one_per_line_when_every_block_is_one_line():
    text = "First paragraph. Two sentences.\n\nSecond paragraph.\nThird paragraph.\n"
    assert paragraphs_from_text(text) == ["First paragraph. Two sentences.", "Second paragraph.", "Third paragraph."]


def test_paragraph_rule_blank_line_blocks_when_a_block_has_several_lines():
    text = "A wrapped\nparagraph here.\n\nAnother one\nwrapped too.\nStill the same.\n\n\nLast."
    assert paragraphs_from_text(text) == ["A wrapped paragraph here.", "Another one wrapped too. Still the same.", "Last."]


def test_paragraph_rule_drops_level_heading_and_handles_crlf_and_trailing_spaces():
    text = "Intermediate\r\nOne line here. \r\n\r\nTwo lines here.  \r\n"
    assert paragraphs_from_text(text) == ["One line here.", "Two lines here."]


@pytest.mark.django_db
def test_newsela_style_group_levels_pairs_and_ids(write_file):
    write_file("c/moon.en.0.txt", "The Moon is far away. It is about 384,000 kilometres from Earth.\n\nIt has no air.\n")
    write_file("c/moon.en.1.txt", "The Moon is far away.\n\nIt has no air. Nobody lives there.\n")
    write_file("c/moon.en.2.txt", "The Moon is far.\n")
    summary = run_import(write_file("c/x.txt", "ignored").parent, options("text"))
    assert (summary.articles_created, summary.documents, summary.pairs, summary.sentences) == (1, 3, 2, 7)
    pairs = list(DocumentPair.objects.order_by("pair_id").values_list("pair_id", "complex__level", "simple__level"))
    assert pairs == [("moon.0_1", 0, 1), ("moon.1_2", 1, 2)]
    plain = plain_pair(DocumentPair.objects.get(pair_id="moon.0_1"))
    assert plain["complex"] == [["The Moon is far away.", "It is about 384,000 kilometres from Earth."], ["It has no air."]]
    assert plain["simple"] == [["The Moon is far away."], ["It has no air.", "Nobody lives there."]]


@pytest.mark.django_db
def test_all_levels_gives_every_combination(write_file):
    for level in range(3):
        write_file(f"c/sun.en.{level}.txt", f"The Sun is hot at level {level}.\n")
    summary = run_import(write_file("c/sun.en.0.txt", "The Sun is hot at level 0.\n").parent, options("text", all_levels=True))
    assert summary.pairs == 3
    assert set(DocumentPair.objects.values_list("pair_id", flat=True)) == {"sun.0_1", "sun.0_2", "sun.1_2"}


@pytest.mark.django_db
def test_onestop_quirks_bom_cp1252_heading(write_file):
    write_file("t/adv/News item-adv.txt", "\ufeffThe minister’s plan – announced today – costs £5m. \n\nCritics disagree.\n".encode("utf-8"))
    write_file("t/int/News item-int.txt", "Intermediate\nThe ministers plan costs 5m.\n\nCritics disagree.\n")
    write_file("t/ele/News item-ele.txt", b"The minister\x92s plan costs a lot.\n")
    summary = run_import(write_file("t/adv/News item-adv.txt", "\ufeffThe minister’s plan – announced today – costs £5m. \n\nCritics disagree.\n").parent.parent, options("text"))
    assert summary.articles_created == 1
    article = Article.objects.get()
    assert article.slug == "news_item" and article.title == "News item"
    assert [d.level_label for d in article.documents.order_by("level")] == ["adv", "int", "ele"]
    texts = {d.level_label: [s.text for s in Sentence.objects.filter(document=d).order_by("doc_position")] for d in Document.objects.all()}
    assert texts["adv"][0] == "The minister’s plan – announced today – costs £5m."  # BOM dropped, UTF-8 kept
    assert texts["int"][0] == "The ministers plan costs 5m."  # heading line dropped
    assert texts["ele"] == ["The minister’s plan costs a lot."]  # Windows-1252 decoded


@pytest.mark.django_db
def test_two_files_for_one_level_need_exclude(write_file):
    write_file("t/adv/A-adv.txt", "Advanced text here.\n")
    write_file("t/int/A-int.txt", "Intermediate\nIntermediate text.\n")
    write_file("t/int-utf8/A-int.txt", "\ufeffIntermediate text, UTF-8.\n")
    root = write_file("t/ele/A-ele.txt", "Elementary text.\n").parent.parent
    with pytest.raises(ImportFailed, match=r"level 'int' of article 'A' also in .*--exclude") as info:
        run_import(root, options("text"))
    assert "int-utf8/A-int.txt" in info.value.path
    assert row_counts()["Article"] == 0
    summary = run_import(root, options("text", exclude=["int/*"]))
    assert summary.articles_created == 1
    assert Sentence.objects.filter(document__level_label="int").get().text == "Intermediate text, UTF-8."


@pytest.mark.django_db
def test_single_level_and_empty_and_unnamed_files_fail(write_file):
    only = write_file("one/lonely.en.0.txt", "Just one level.\n")
    with pytest.raises(ImportFailed, match="only one reading level"):
        run_import(only.parent, options("text"))
    write_file("empty/e.en.0.txt", "Some text.\n")
    blank = write_file("empty/e.en.1.txt", "\n\n  \n")
    with pytest.raises(ImportFailed, match="holds no text") as info:
        run_import(blank.parent, options("text"))
    assert info.value.path == str(blank)
    odd = write_file("odd/notes.txt", "hello\n")
    with pytest.raises(ImportFailed, match="file name matches neither"):
        run_import(odd, options("text"))
    with pytest.raises(ImportFailed, match="nothing to import"):
        run_import(odd.parent, options("text"))
    assert row_counts()["Corpus"] == 0


@pytest.mark.django_db
def test_undecodable_text_file_fails(write_file):
    write_file("bad/b.en.0.txt", "Fine text.\n")
    bad = write_file("bad/b.en.1.txt", b"Line one.\nBad \x81\x8d\x8f\x90\x9d bytes.\n")
    with pytest.raises(ImportFailed, match="neither UTF-8 nor Windows-1252") as info:
        run_import(bad.parent, options("text"))
    assert info.value.line == 2
    assert row_counts()["Sentence"] == 0


@pytest.mark.django_db
def test_onestopenglish_real_files(shared_data):
    root = shared_data / "onestopenglish" / "texts"
    stems = ["Malala", "Arctic mapping"]
    exclude = ["int/*", *[f"*/{s}-*" for s in _other_stems(root, stems)]]
    summary = run_import(root, options("text", exclude=exclude))
    assert summary.articles_created == 2 and summary.pairs == 4
    docs = Document.objects.filter(article__slug="arctic_mapping").order_by("level")
    assert [d.level_label for d in docs] == ["adv", "int", "ele"]
    for doc in docs:
        first = Sentence.objects.filter(document=doc).order_by("doc_position").first()
        assert first is not None and not first.text.startswith(("\ufeff", "Intermediate"))
    # paragraphs are the non-blank lines (one paragraph per line, no blank lines in between)
    adv_file = (root / "adv" / "Arctic mapping-adv.txt").read_text(encoding="utf-8-sig")
    assert Paragraph.objects.filter(document=docs[0]).count() == sum(1 for line in adv_file.splitlines() if line.strip())
    # the shared gold-dev JSONL was built the same way (non-empty lines, pysbd, int-utf8)
    reference = {}
    for line in (shared_data / "onestopenglish-gold-dev" / "dev_pairs.jsonl").read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        reference[obj["pair_id"]] = obj
    for ours, theirs in (("malala.adv_int", "malala_advint"), ("malala.int_ele", "malala_intele")):
        plain = plain_pair(DocumentPair.objects.get(pair_id=ours))
        assert plain["complex"] == reference[theirs]["complex"]
        assert plain["simple"] == reference[theirs]["simple"]


def _other_stems(root, keep):  # type: ignore[no-untyped-def]
    return sorted({p.name.rsplit("-", 1)[0] for p in (root / "adv").glob("*-adv.txt")} - set(keep))


@pytest.mark.django_db
def test_load_demo_imports_the_demo_corpus_and_is_idempotent(demo_dir):
    files = sorted(demo_dir.glob("*.en.*.txt"))
    assert len(files) == 24
    call_command("load_demo")
    counts = row_counts()
    assert counts["Article"] == 8 and counts["Document"] == 24 and counts["DocumentPair"] == 16
    for doc in Document.objects.all():
        assert 4 <= doc.paragraphs.count() <= 6, doc
    sentences = list(Sentence.objects.order_by("pk").values_list("pk", "document_id", "paragraph_position", "position", "text"))
    call_command("load_demo")
    again = row_counts()
    assert again["ImportRecord"] == counts["ImportRecord"] + 1
    assert {k: v for k, v in again.items() if k != "ImportRecord"} == {k: v for k, v in counts.items() if k != "ImportRecord"}
    assert list(Sentence.objects.order_by("pk").values_list("pk", "document_id", "paragraph_position", "position", "text")) == sentences


@pytest.mark.django_db
def test_demo_corpus_has_simplification_phenomena(demo_dir):
    call_command("load_demo")
    pair = plain_pair(DocumentPair.objects.get(pair_id="city_bikes.0_1"))
    complex_sents = [s for p in pair["complex"] for s in p]
    simple_sents = [s for p in pair["simple"] for s in p]
    copied = set(complex_sents) & set(simple_sents)
    assert len(copied) >= 3  # sentences copied unchanged
    # a split: one original sentence became two in the intermediate version
    assert any(s.startswith("The city council of Harlow Bay voted on Tuesday to expand") for s in complex_sents)
    assert "It will add 600 bicycles and 45 docking stations by next spring." in simple_sents
    elementary = [s for p in plain_pair(DocumentPair.objects.get(pair_id="city_bikes.1_2"))["simple"] for s in p]
    assert "A station is a place where people can take a bike and bring it back." in elementary  # added explanation
    assert sum(len(p) for p in pair["simple"]) > 0 and len(simple_sents) != len(complex_sents)


def test_split_files_process_pool_matches_serial_and_reports_errors(demo_dir, tmp_path, monkeypatch):
    from curation.importers import leveled_text

    files = sorted(demo_dir.glob("*.txt"))
    assert len(files) >= leveled_text.POOL_MIN_FILES
    monkeypatch.setenv("IMPORT_WORKERS", "2")
    monkeypatch.setattr(leveled_text, "_single_threaded", lambda: False)
    assert leveled_text._workers(len(files)) == 1  # never fork a process with other threads running
    monkeypatch.setattr(leveled_text, "_single_threaded", lambda: True)  # earlier tests may leave threads behind
    monkeypatch.setenv("IMPORT_WORKERS", "1")
    assert leveled_text._workers(len(files)) == 1
    serial = leveled_text.split_files(files, "en")
    monkeypatch.setenv("IMPORT_WORKERS", "2")
    assert leveled_text._workers(len(files)) == 2
    assert leveled_text._workers(3) == 1  # small imports stay in-process
    assert leveled_text.split_files(files, "en") == serial  # same order, same sentences
    bad = tmp_path / "bad.en.1.txt"
    bad.write_bytes(b"ok\n\x81\x8d\x8f\x90\x9d\n")
    with pytest.raises(ImportFailed, match="neither UTF-8 nor Windows-1252") as info:
        leveled_text.split_files([*files, bad], "en")
    assert info.value.path == str(bad) and info.value.line == 2
