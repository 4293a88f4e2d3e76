"""The model-version diff: a hand-made pair of runs whose added / removed / kept, fixed / broken
counts are worked out by hand below, through the pure function, the ORM, the command and the page."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import CandidatePair, VerifiedLabel
from curation.models import DocumentPair, ReferenceAlignment, Sentence
from curation.tests.corpus_builder import build_corpus
from pipeline.models import AlignmentRun, PredictedAlignment, RunChunk
from pipeline.services import run_diff
from pipeline.services.run_diff import Prediction, Truth, compute_diff

# Pair 1 (gold, complete): simple 11, 12, 13; complex 21, 22, 23; gold 11-21, 12-22, 13-23.
# Pair 2 (no gold): simple 31, 32; complex 41; a verifier said 31-41 is aligned.
A = [Prediction(1, 11, 21, "aligned", 0.9), Prediction(1, 12, 23, "partialAligned", 0.4),
     Prediction(1, 13, 23, "aligned", 0.8), Prediction(2, 31, 41, "aligned", 0.7)]
B = [Prediction(1, 11, 21, "aligned", 0.95), Prediction(1, 12, 22, "aligned", 0.6),
     Prediction(1, 13, 23, "aligned", 0.85), Prediction(1, 11, 22, "partialAligned", 0.55),
     Prediction(2, 32, 41, "aligned", 0.5), Prediction(2, 31, 41, "notAligned", 0.1)]
TRUTH = {(1, 11, 21): Truth(True, "gold"), (1, 12, 22): Truth(True, "gold"), (1, 13, 23): Truth(True, "gold"),
         (2, 31, 41): Truth(True, "verified")}
TEXTS = {11: "One.", 12: "Two.", 13: "Same text.", 21: "One long.", 22: "Two long.", 23: "Same text.",
         31: "Three.", 32: "Four.", 41: "Three and four."}


def test_compute_diff_counts_by_hand() -> None:
    diff = compute_diff(A, B, TRUTH, complete_pairs={1}, texts=TEXTS)
    by_key = {(r.pair, r.simple, r.complex): r for r in diff.rows}
    assert {k: r.change for k, r in by_key.items()} == {
        (1, 11, 21): "kept", (1, 12, 23): "removed", (1, 13, 23): "kept", (1, 12, 22): "added",
        (1, 11, 22): "added", (2, 31, 41): "removed", (2, 32, 41): "added"}  # B's notAligned row is no alignment
    assert by_key[(1, 12, 23)].outcome == "fixed"  # removed, and gold (complete) says not aligned
    assert by_key[(1, 12, 22)].outcome == "fixed"  # added, gold aligned
    assert by_key[(1, 11, 22)].outcome == "broken"  # added, not in the complete gold
    assert by_key[(2, 31, 41)].outcome == "broken"  # removed a verified alignment
    assert by_key[(2, 32, 41)].outcome == "unverified"  # pair 2 has no complete gold
    assert by_key[(1, 11, 21)].outcome == ""
    assert diff.totals() == {"added": 3, "removed": 2, "kept": 2, "fixed": 2, "broken": 2, "unverified": 1, "net": 0}
    # phenomena: B's group {11, 12} x {21, 22} is a fusion, 13-23 copies; A's 23 -> {12, 13} is a split
    assert by_key[(1, 12, 22)].phenomenon == "fusion"
    assert by_key[(1, 13, 23)].phenomenon == "copying"
    assert by_key[(1, 12, 23)].phenomenon == "splitting"
    phen = diff.by_phenomenon()
    assert phen["fusion"] == {"added": 2, "removed": 0, "kept": 1, "fixed": 1, "broken": 1, "unverified": 0, "net": 0}
    assert phen["splitting"]["removed"] == 1 and phen["splitting"]["fixed"] == 1
    assert phen["rephrasing"] == {"added": 1, "removed": 1, "kept": 0, "fixed": 0, "broken": 1, "unverified": 1,
                                  "net": -1}
    assert list(phen) == [p for p in ("rephrasing", "copying", "splitting", "merging", "fusion") if p in phen]
    # scores of both runs: each has 3 true of 4 judged predictions, 4 known aligned pairs
    assert diff.quality["a"]["tp"] == 3 and diff.quality["a"]["n_pred"] == 4 and diff.quality["a"]["n_gold"] == 4
    assert diff.quality["b"]["tp"] == 3 and diff.quality["b"]["n_pred"] == 4  # 32-41 is unjudged
    assert diff.quality["b"]["precision"] == 0.75
    assert by_key[(1, 11, 21)].score_a == 0.9 and by_key[(1, 11, 21)].score_b == 0.95


def test_filters_and_restriction_to_pairs() -> None:
    diff = compute_diff(A, B, TRUTH, complete_pairs={1}, texts=TEXTS)
    assert {(r.simple, r.complex) for r in run_diff.filter_rows(diff, outcome="broken")} == {(11, 22), (31, 41)}
    assert [r.change for r in run_diff.filter_rows(diff, phenomenon="fusion", outcome="fixed")] == ["added"]
    assert len(run_diff.filter_rows(diff, change="kept")) == 2
    with pytest.raises(run_diff.DiffError, match="outcome must be one of"):
        run_diff.filter_rows(diff, outcome="better")
    only_one = compute_diff(A, B, TRUTH, complete_pairs={1}, texts=TEXTS, pairs=[2])
    assert only_one.totals()["added"] == 1 and only_one.totals()["removed"] == 1
    assert only_one.quality["a"]["n_gold"] == 1  # only pair 2's known aligned pair counts


# --- the same runs in the database -------------------------------------------------------------------------


@pytest.fixture
def two_runs(db):  # type: ignore[no-untyped-def]
    """Pair art0.0_1 with gold; pair art1.0_1 with one verified label; runs A and B as in A / B above."""
    corpus = build_corpus("Diff corpus", {
        "art0": [[["One long.", "Two long.", "Same text."]], [["One.", "Two.", "Same text."]]],
        "art1": [[["Three and four."]], [["Three.", "Four."]]],
    })
    p1, p2 = (DocumentPair.objects.get(corpus=corpus, pair_id=f"art{i}.0_1") for i in (0, 1))

    def s(pair: DocumentPair, side: str, k: int) -> Sentence:
        doc = pair.simple if side == "s" else pair.complex
        return Sentence.objects.get(document=doc, position=k)

    sent = {11: s(p1, "s", 0), 12: s(p1, "s", 1), 13: s(p1, "s", 2), 21: s(p1, "c", 0), 22: s(p1, "c", 1),
            23: s(p1, "c", 2), 31: s(p2, "s", 0), 32: s(p2, "s", 1), 41: s(p2, "c", 0)}
    pair_of = {1: p1, 2: p2}
    for simple, complex_ in ((11, 21), (12, 22), (13, 23)):
        ReferenceAlignment.objects.create(pair=p1, simple=sent[simple], complex=sent[complex_], label="aligned")
    cand = CandidatePair.objects.create(pair=p2, simple=sent[31], complex=sent[41])
    VerifiedLabel.objects.create(candidate=cand, label="aligned")
    runs = []
    for name, preds in (("a", A), ("b", B)):
        run = AlignmentRun.objects.create(corpus=corpus, method=f"test-{name}")
        RunChunk.objects.create(run=run, index=0, pair_ids=[p1.pk, p2.pk], status=RunChunk.Status.DONE)
        PredictedAlignment.objects.bulk_create([
            PredictedAlignment(run=run, pair=pair_of[p.pair], simple=sent[p.simple], complex=sent[p.complex],
                               label=p.label, score=p.score) for p in preds])
        runs.append(run)
    return corpus, runs[0], runs[1]


def test_diff_runs_from_the_database(two_runs) -> None:  # type: ignore[no-untyped-def]
    corpus, a, b = two_runs
    diff = run_diff.diff_runs(a, b)
    assert diff.totals() == {"added": 3, "removed": 2, "kept": 2, "fixed": 2, "broken": 2, "unverified": 1, "net": 0}
    assert diff.by_phenomenon()["fusion"]["added"] == 2
    assert diff.quality["a"]["precision"] == 0.75 and diff.quality["b"]["recall"] == 0.75


def test_runs_of_different_corpora_are_refused(two_runs) -> None:  # type: ignore[no-untyped-def]
    _, a, _ = two_runs
    other = build_corpus("Other corpus", {"x": [[["A b c."]], [["A b."]]]})
    run = AlignmentRun.objects.create(corpus=other, method="test")
    with pytest.raises(run_diff.DiffError, match="same corpus"):
        run_diff.diff_runs(a, run)
    with pytest.raises(run_diff.DiffError, match="no alignment run #999"):
        run_diff.run_for(999)
    with pytest.raises(run_diff.DiffError, match="has no alignment run"):
        from pipeline.models import ModelVersion

        run_diff.run_for(ModelVersion.objects.create(name="unused", path="/x").pk, model=True)


def test_command_prints_totals_and_writes_tsv(two_runs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _, a, b = two_runs
    out = io.StringIO()
    target = tmp_path / "diff.tsv"
    call_command("diff_runs", str(a.pk), str(b.pk), "--tsv", str(target), stdout=out)
    text = out.getvalue()
    assert "total\t3\t2\t2\t2\t2\t1\t0" in text
    assert "fusion\t2\t0\t1\t1\t1\t0\t0" in text
    rows = list(csv.DictReader(target.open(encoding="utf-8"), delimiter="\t"))
    assert len(rows) == 7
    broken = {(r["simple_id"], r["complex_id"]) for r in rows if r["outcome"] == "broken"}
    assert broken == {("art0.0_1-0-0-0", "art0.0_1-1-0-1"), ("art1.0_1-0-0-0", "art1.0_1-1-0-0")}  # simple side 0
    with pytest.raises(CommandError, match="compared with itself"):
        call_command("diff_runs", str(a.pk), str(a.pk), stdout=io.StringIO())


def test_page_filters_and_tsv_export(two_runs, client_for, researcher) -> None:  # type: ignore[no-untyped-def]
    corpus, a, b = two_runs
    client = client_for(researcher)
    url = reverse("pipeline:run_diff")
    page = client.get(url, {"corpus": corpus.pk, "a": a.pk, "b": b.pk})
    assert page.status_code == 200
    html = page.content.decode()
    assert "art0.0_1" in html and "fusion" in html and "Download these rows" in html
    totals = page.context["totals"]
    assert (totals["fixed"], totals["broken"], totals["unverified"]) == (2, 2, 1)
    shown = [(s_text, c_text) for _, rows in page.context["details"] for _, s_text, c_text in rows]
    assert shown and all(s_text and c_text for s_text, c_text in shown)  # every detail row shows both texts
    broken = client.get(url, {"a": a.pk, "b": b.pk, "outcome": "broken"})
    assert broken.context["totals"]["broken"] == 2 and broken.context["totals"]["fixed"] == 0
    tsv = client.get(url, {"a": a.pk, "b": b.pk, "phenomenon": "fusion", "format": "tsv"})
    assert tsv["Content-Type"].startswith("text/tab-separated-values")
    lines = tsv.content.decode().splitlines()
    assert lines[0].split("\t") == list(run_diff.TSV_COLUMNS) and len(lines) == 1 + 3
    bad = client.get(url, {"a": a.pk, "b": "nope"})
    assert bad.status_code == 400 and "is not a run id" in bad.content.decode()
    assert client.get(url).status_code == 200  # the empty form
    assert reverse("pipeline:run_diff") in client.get(reverse("pipeline:model_list")).content.decode()
