"""Exports through the ORM: Auto and Manual datasets, pool, splits, filters, reproducibility,
atomicity, the card, the management command and the Celery task."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.core.management import call_command

from alignment_engine.ids import COMPLEX, SIMPLE, sentence_id
from curation.curate.rows import Row
from curation.models import DocumentPair, SyntheticPair
from pipeline import jobs
from pipeline.exports import writers
from pipeline.exports.manual import pseudonym
from pipeline.exports.run import create_export, run_export
from pipeline.models import ExportedDataset, Job
from pipeline.tests.export_factory import LINKS_01, LINKS_12, make_corpus, make_run, params, sentence

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def exports_dir(settings: Any, tmp_path: Path) -> Path:
    settings.EXPORTS_DIR = tmp_path / "exports"
    settings.EXPORTS_DIR.mkdir()
    return settings.EXPORTS_DIR


def folder_of(dataset: ExportedDataset, root: Path) -> Path:
    dataset.refresh_from_db()
    return root / dataset.path


def read_tsv(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_card_counts_the_articles_that_have_rows_not_the_articles_assigned(exports_dir: Path) -> None:
    from pipeline.models import PredictedAlignment

    corpus = make_corpus(n_articles=4)
    run = make_run(corpus)
    PredictedAlignment.objects.filter(run=run).exclude(pair__complex__article__slug="art000").delete()
    dataset = create_export(corpus.pk, "auto", params(), run_id=run.pk)
    assert run_export(dataset.pk) == "done"
    dataset.refresh_from_db()
    card = dataset.card
    assert card["splits"]["articles_assigned"] == {"dev": 1, "test": 1, "train": 2}
    assert sum(card["splits"]["articles"].values()) == 1  # every row comes from art000
    (split,) = [s for s, n in card["splits"]["articles"].items() if n]
    assert card["counts"]["by_split"] == {split: card["counts"]["rows"]}
    readme = (folder_of(dataset, exports_dir) / "README.md").read_text(encoding="utf-8")
    assert f"| {split} | {card['counts']['rows']} | 1 |" in readme


def test_auto_export_tsv_rows_ids_splits_and_card(exports_dir: Path) -> None:
    corpus = make_corpus(n_articles=4)
    run = make_run(corpus)
    dataset = create_export(corpus.pk, "auto", params(), run_id=run.pk)
    assert run_export(dataset.pk) == "done"
    folder = folder_of(dataset, exports_dir)
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["README.md", "card.json", "dev.tsv", "test.tsv", "train.tsv"]
    rows = [r for split in ("train", "dev", "test") for r in read_tsv(folder / f"{split}.tsv")]
    assert len(rows) == 4 * (len(LINKS_01) + len(LINKS_12))
    assert all(len(r) == 6 and r[0] in ("aligned", "partialAligned") for r in rows)
    first = next(r for r in rows if r[1] == "art000.0_1-0-0-1")
    assert first[2] == "art000.0_1-1-0-0"
    assert first[3] == "Thousands of people walked across it."
    assert first[4].startswith("The mayor opened the new bridge on Monday, and")
    assert float(first[5]) == 0.75
    # splits by article: 4 articles at 2/1/1
    card = dataset.card
    assert card["splits"]["articles"] == {"dev": 1, "test": 1, "train": 2}
    assert card["counts"]["rows"] == len(rows) and card["counts"]["by_split"]["train"] == 14
    # phenomena per article: 0-1 = 1 splitting, 1 rephrasing, 1 copying, 1 deletion; 1-2 = 3 rephrasing, 1 deletion
    groups = {k: v["count"] for k, v in card["phenomena"]["groups"].items()}
    assert groups == {"rephrasing": 16, "copying": 4, "splitting": 4, "merging": 0, "fusion": 0, "deletion": 8}
    assert card["source"]["run"]["id"] == run.pk
    assert card["lengths"]["all"]["complex_tokens"] > card["lengths"]["all"]["simple_tokens"]
    assert {f["name"] for f in dataset.files} == set(names)
    assert "| splitting | 4 |" in (folder / "README.md").read_text()
    assert dataset.job_id is not None
    assert Job.objects.get(pk=dataset.job_id).status == Job.Status.SUCCEEDED


def test_no_article_in_two_splits_and_deterministic_seed(exports_dir: Path) -> None:
    corpus = make_corpus(n_articles=8)
    run = make_run(corpus)
    seen: dict[str, set[str]] = {}
    assignments = []
    for seed in (1, 1, 2):
        dataset = create_export(corpus.pk, "auto", params(format="jsonl", seed=seed), run_id=run.pk)
        run_export(dataset.pk)
        folder = folder_of(dataset, exports_dir)
        split_of: dict[str, str] = {}
        for split in ("train", "dev", "test"):
            for row in read_jsonl(folder / f"{split}.jsonl"):
                assert row["split"] == split
                seen.setdefault(row["article"], set()).add(split)
                split_of[row["article"]] = split
        assert all(len(s) == 1 for s in seen.values())  # no article in two splits
        seen.clear()
        assignments.append(split_of)
    assert assignments[0] == assignments[1]
    assert assignments[0] != assignments[2]


def test_two_exports_are_byte_identical(exports_dir: Path) -> None:
    corpus = make_corpus(n_articles=3)
    run = make_run(corpus)
    for fmt in ("tsv", "jsonl", "parquet"):
        a = create_export(corpus.pk, "auto", params(format=fmt, filters={"identical": {}}), run_id=run.pk)
        b = create_export(corpus.pk, "auto", params(format=fmt, filters={"identical": {}}), run_id=run.pk)
        run_export(a.pk)
        run_export(b.pk)
        a.refresh_from_db()
        b.refresh_from_db()
        assert a.path != b.path
        assert [(f["name"], f["sha256"]) for f in a.files] == [(f["name"], f["sha256"]) for f in b.files]
        assert a.card == b.card


def test_parquet_and_jsonl_carry_the_same_rows(exports_dir: Path) -> None:
    corpus = make_corpus(n_articles=2)
    run = make_run(corpus)
    j = create_export(corpus.pk, "auto", params(format="jsonl", splits=None), run_id=run.pk)
    p = create_export(corpus.pk, "auto", params(format="parquet", splits=None, batch_size=3), run_id=run.pk)
    run_export(j.pk)
    run_export(p.pk)
    jrows = read_jsonl(folder_of(j, exports_dir) / "all.jsonl")
    parquet = pq.ParquetFile(folder_of(p, exports_dir) / "all.parquet")
    assert parquet.metadata.num_row_groups == -(-len(jrows) // 3)  # row groups of batch_size rows
    assert parquet.read().to_pylist() == jrows
    assert {r["phenomenon"] for r in jrows} == {"splitting", "rephrasing", "copying"}


def test_failure_mid_export_leaves_no_file_and_no_half_row(exports_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = make_corpus(n_articles=4)
    run = make_run(corpus)
    dataset = create_export(corpus.pk, "auto", params(format="jsonl"), run_id=run.pk)
    calls = {"n": 0}
    original = writers.SplitWriters.write

    def exploding(self: Any, split: str, row: Row) -> None:
        calls["n"] += 1
        if calls["n"] == 10:
            raise RuntimeError("disk on fire")
        original(self, split, row)

    monkeypatch.setattr(writers.SplitWriters, "write", exploding)
    with pytest.raises(RuntimeError, match="disk on fire"):
        run_export(dataset.pk)
    assert list(exports_dir.rglob("*")) == []  # no final folder, no staging folder, no temp file
    dataset.refresh_from_db()
    assert dataset.files == [] and dataset.card == {} and dataset.path == ""
    assert dataset.job_id is not None
    job = Job.objects.get(pk=dataset.job_id)
    assert job.status == Job.Status.FAILED and "disk on fire" in job.error
    # a later run of a fresh export succeeds
    monkeypatch.setattr(writers.SplitWriters, "write", original)
    again = create_export(corpus.pk, "auto", params(format="jsonl"), run_id=run.pk)
    assert run_export(again.pk) == "done"


def test_failure_while_saving_the_row_removes_the_folder(exports_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = make_corpus(n_articles=2)
    run = make_run(corpus)
    dataset = create_export(corpus.pk, "auto", params(), run_id=run.pk)

    def broken_finish(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("database went away")

    monkeypatch.setattr(jobs, "finish", broken_finish)
    with pytest.raises(RuntimeError):
        run_export(dataset.pk)
    assert list(exports_dir.iterdir()) == []
    dataset.refresh_from_db()
    assert dataset.files == [] and dataset.card == {}


def test_finished_export_is_not_redone(exports_dir: Path) -> None:
    corpus = make_corpus(n_articles=2)
    run = make_run(corpus)
    dataset = create_export(corpus.pk, "auto", params(), run_id=run.pk)
    assert run_export(dataset.pk) == "done"
    assert run_export(dataset.pk) == "skipped"
    assert run_export(999999) == "skipped"


def test_filters_report_removed_counts_in_the_card(exports_dir: Path) -> None:
    corpus = make_corpus(n_articles=2, all_levels=True)
    run = make_run(corpus)
    filters: dict[str, dict[str, Any]] = {"identical": {}, "adjacent_levels": {}, "gleu": {}, "flesch": {}}
    dataset = create_export(corpus.pk, "auto", params(filters=filters, splits=None), run_id=run.pk)
    run_export(dataset.pk)
    dataset.refresh_from_db()
    reports = {f["name"]: f for f in dataset.card["filters"]}
    assert list(reports) == ["identical", "adjacent_levels", "gleu", "flesch"]
    # per article: 4 rows in 0-1, 3 in 1-2, 3 in 0-2 (the 0-2 pair reuses the 1-2 links) = 20 rows
    assert reports["identical"]["removed"] == 2  # the copied "bridge cost" sentence of 0-1, once per article
    assert reports["adjacent_levels"]["seen"] == 18
    assert reports["adjacent_levels"]["removed"] == 2 * 3 + 2 * 3  # what is left of 0-1 and 1-2
    assert reports["gleu"]["defaults"] == {"min": 0.1, "max": 0.9}
    kept = dataset.card["counts"]["rows"]
    assert kept == reports["flesch"]["seen"] - reports["flesch"]["removed"]
    assert dataset.card["counts"]["input_rows"] == 20


def test_bisect_filter_through_the_service(exports_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import curation.curate.bertscore as bertscore

    monkeypatch.setattr(bertscore, "bertscore_f1", lambda c, r: [0.95] * len(c))
    corpus = make_corpus(n_articles=2)
    run = make_run(corpus)
    dataset = create_export(corpus.pk, "auto", params(format="jsonl", splits=None, filters={"bisect": {}}), run_id=run.pk)
    run_export(dataset.pk)
    rows = read_jsonl(folder_of(dataset, exports_dir) / "all.jsonl")
    assert len(rows) == 4  # the 1-2 split of each article's 0-1 pair
    assert {r["group_shape"] for r in rows} == {"1-2"}
    assert {r["split_category"] for r in rows} == {"direct_insertion"}
    report = dataset.card["filters"][0]
    assert report["removed"] == 14 - 4 and report["removed_by"]["shape"] == 10


def test_test_set_filter_through_the_command(exports_dir: Path, tmp_path: Path) -> None:
    corpus = make_corpus(n_articles=2)
    make_run(corpus)
    test_file = tmp_path / "test_complex.txt"
    test_file.write_text("The bridge cost forty million dollars.\n", encoding="utf-8")
    call_command("export_dataset", corpus.name, "auto", "--sync", "--splits", "none", "--test-set", str(test_file),
                 "--format", "jsonl")
    dataset = ExportedDataset.objects.get()
    report = dataset.card["filters"][0]
    # the sentence is the complex side of the 0-1 copy and of the 1-2 rephrasing, in both articles
    assert report["name"] == "test_set" and report["removed"] == 4
    assert dataset.card["counts"]["rows"] == 14 - 4


def test_synthetic_pairs_are_mixed_in_and_marked(exports_dir: Path, tmp_path: Path) -> None:
    corpus = make_corpus(n_articles=4)
    run = make_run(corpus)
    source = tmp_path / "bt.jsonl"
    source.write_text("".join(json.dumps({"complex": f"Complex {i}.", "simple": f"Simple {i}.", "model": "bt"}) + "\n"
                              for i in range(40)), encoding="utf-8")
    call_command("import_synthetic", corpus.name, str(source), "--batch", "bt-1")
    call_command("import_synthetic", corpus.name, str(source), "--batch", "bt-1")  # idempotent
    assert SyntheticPair.objects.filter(corpus=corpus).count() == 40
    assert SyntheticPair.objects.first().meta == {"model": "bt"}  # type: ignore[union-attr]
    dataset = create_export(corpus.pk, "auto", params(format="jsonl", synthetic_ratio=0.5), run_id=run.pk)
    run_export(dataset.pk)
    folder = folder_of(dataset, exports_dir)
    train = read_jsonl(folder / "train.jsonl")
    synthetic = [r for r in train if r["synthetic"]]
    real = [r for r in train if not r["synthetic"]]
    assert len(synthetic) == round(0.5 * len(real)) == 7
    assert all(r["simple_id"].startswith("synthetic_") for r in synthetic)
    assert not any(r["synthetic"] for s in ("dev", "test") for r in read_jsonl(folder / f"{s}.jsonl"))
    assert dataset.card["counts"]["synthetic"] == 7 and dataset.card["source"]["synthetic_rows"] == 7


def test_pool_of_simple_sentences(exports_dir: Path) -> None:
    corpus = make_corpus(n_articles=3)
    dataset = create_export(corpus.pk, "pool", {"format": "jsonl", "min_words": 6, "max_words": 7})
    run_export(dataset.pk)
    rows = read_jsonl(folder_of(dataset, exports_dir) / "pool.jsonl")
    texts = [r["text"] for r in rows]
    assert len(texts) == len(set(texts))  # deduplicated across the 3 identical articles
    assert all(6 <= r["words"] <= 7 for r in rows)
    assert "Thousands of people walked across it." in texts  # level 1 is the simple side of 0-1
    assert "The mayor opened the new bridge on Monday, and thousands of people walked across it." not in texts
    pool = dataset.card["source"]["pool"]
    assert pool["removed_duplicate"] > 0 and pool["removed_length"] > 0


# --- Manual -----------------------------------------------------------------------------------


def make_labels(corpus: Any, users: list[Any]) -> None:
    from annotation.models import AggregatedLabel, CandidatePair, JobItem, Judgment, LabelingJob, VerifiedLabel

    job = LabelingJob.objects.create(name="job", corpus=corpus, judgments_per_pair=3)
    for pair in DocumentPair.objects.filter(corpus=corpus).select_related("complex", "simple"):
        links = LINKS_01 if pair.complex.level == 0 else LINKS_12
        for (cp, cs), (sp, ss), label in links:
            cand = CandidatePair.objects.create(pair=pair, simple=sentence(pair, 0, sp, ss), complex=sentence(pair, 1, cp, cs))
            item = JobItem.objects.create(job=job, candidate=cand, judgments_count=3)
            votes = [label, label, "notAligned"]
            for user, vote in zip(users, votes, strict=True):
                Judgment.objects.create(job=job, item=item, annotator=user, label=vote, seconds=12.5)
            AggregatedLabel.objects.create(item=item, label=label, confidence=2 / 3, votes={label: 2, "notAligned": 1})
            VerifiedLabel.objects.create(candidate=cand, label=label, aggregated_label=label, verifier=users[0], job=job)


def test_manual_export_keeps_judgments_aggregates_and_verified_apart(exports_dir: Path, make_user: Any) -> None:
    corpus = make_corpus(n_articles=4)
    users = [make_user(f"crowd{i}", "annotator") for i in range(3)]
    make_labels(corpus, users)
    from annotation.models import LabelingJob

    LabelingJob.objects.filter(corpus=corpus).update(pay_per_judgment="0.10", currency="EUR")
    dataset = create_export(corpus.pk, "manual", params(format="jsonl"))
    run_export(dataset.pk)
    folder = folder_of(dataset, exports_dir)
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["README.md", "aggregated.jsonl", "card.json", "dev.jsonl", "judgments.jsonl", "test.jsonl", "train.jsonl"]
    judgments = read_jsonl(folder / "judgments.jsonl")
    assert len(judgments) == 4 * 7 * 3
    annotators = {j["annotator"] for j in judgments}
    assert annotators == {pseudonym(u.pk) for u in users}
    assert not any(u.username in json.dumps(judgments) for u in users)
    aggregated = read_jsonl(folder / "aggregated.jsonl")
    assert len(aggregated) == 28 and aggregated[0]["votes"] == {"aligned": 2, "notAligned": 1}
    verified = [r for s in ("train", "dev", "test") for r in read_jsonl(folder / f"{s}.jsonl")]
    sources = {r["source"] for r in verified}
    assert sources == {"verified", "derived"}
    # judgments and aggregated labels name the same sentence pairs, with the same split, as the verified rows
    split_of_pair = {(r["pair_id"], r["simple_id"], r["complex_id"]): r["split"] for r in verified if r["source"] == "verified"}
    for rows in (judgments, aggregated):
        assert {(r["pair_id"], r["simple_id"], r["complex_id"]): r["split"] for r in rows} == split_of_pair
    derived = [r for r in verified if r["source"] == "derived"]
    # 0-1 and 1-2 compose into 0-2 links under a synthesized pair id (no 0-2 DocumentPair here)
    assert derived and all(r["complex_level"] == 0 and r["simple_level"] == 2 for r in derived)
    assert {r["pair_id"] for r in derived} == {f"art{a:03d}.0_2" for a in range(4)}
    # c(0,0) -> b(0,0)/b(0,1) -> s(0,0)/s(0,1): two aligned; c(0,1) -> b(0,2) has no 1-2 link; c(1,0) -> s(1,0)
    assert sorted((r["complex_id"].split("-", 1)[1], r["simple_id"].split("-", 1)[1], r["label"]) for r in derived
                  if r["article"] == "art000") == [("1-0-0", "0-0-0", "aligned"), ("1-0-0", "0-0-1", "aligned"),
                                                    ("1-1-0", "0-1-0", "aligned")]
    card = dataset.card
    assert card["source"]["labels"]["verified"] == 28 and card["source"]["labels"]["judgments"] == 84
    agreement = next(iter(card["source"]["agreement"].values()))
    assert agreement["observed_agreement"] == pytest.approx(1 / 3, abs=1e-3)
    assert agreement["krippendorff_alpha"] is not None
    assert card["counts"]["by_source"]["verified"] == 28
    # the cost ledger of the job: 84 judgments of 12.5 s at 0.10 EUR each, 28 verified pairs
    cost = next(iter(card["source"]["annotation_cost"].values()))
    assert cost["total"]["judgments"] == 84 and cost["total"]["seconds"] == 1050.0 and cost["currency"] == "EUR"
    assert cost["total"]["cost"] == "8.40" and cost["cost_per_valid_judgment"] == "0.1000"
    assert cost["verified_pairs"] == 28 and cost["cost_per_verified_pair"] == "0.3000"
    assert "annotators" not in cost and "annotation_cost" in (folder / "README.md").read_text()


def test_manual_export_records_the_aggregation_method_and_its_confidence(exports_dir: Path, make_user: Any) -> None:
    from annotation.models import AggregatedLabel
    from annotation.services import job_agreement

    corpus = make_corpus(n_articles=2)
    users = [make_user(f"crowd{i}", "annotator") for i in range(3)]
    make_labels(corpus, users)
    job = AggregatedLabel.objects.first().item.job
    job_agreement.write_aggregated_labels(job, "mace")  # overwrites the majority rows make_labels stored
    stored = {a.item_id: a for a in AggregatedLabel.objects.filter(item__job=job)}
    dataset = create_export(corpus.pk, "manual", params(format="jsonl"))
    run_export(dataset.pk)
    aggregated = read_jsonl(folder_of(dataset, exports_dir) / "aggregated.jsonl")
    assert len(aggregated) == len(stored) == 14
    assert {r["method"] for r in aggregated} == {"mace"}
    for row in aggregated:
        assert row["label"] == stored[row["item"]].label
        assert row["confidence"] == pytest.approx(stored[row["item"]].confidence)
    assert all(0.0 < r["confidence"] < 1.0 for r in aggregated)  # a posterior, not a vote share of 2/3
    assert {round(r["confidence"], 6) for r in aggregated} != {round(2 / 3, 6)}
    assert dataset.card["source"]["labels"]["aggregated_by_method"] == {"mace": 14}


def test_manual_export_with_reference_gold(exports_dir: Path) -> None:
    from curation.models import ReferenceAlignment

    corpus = make_corpus(n_articles=2)
    pair = DocumentPair.objects.filter(corpus=corpus).order_by("pair_id").first()
    assert pair is not None
    ReferenceAlignment.objects.create(pair=pair, simple=sentence(pair, 0, 0, 0), complex=sentence(pair, 1, 0, 0), label="aligned")
    dataset = create_export(corpus.pk, "manual", params(format="tsv", splits=None))
    run_export(dataset.pk)
    rows = read_tsv(folder_of(dataset, exports_dir) / "all.tsv")
    assert rows == [["aligned", sentence_id(pair.pair_id, SIMPLE, 0, 0), sentence_id(pair.pair_id, COMPLEX, 0, 0),
                     "The mayor opened the new bridge on Monday.",
                     "The mayor opened the new bridge on Monday, and thousands of people walked across it.", ""]]
    assert dataset.card["counts"]["by_source"] == {"reference": 1}


@pytest.mark.parametrize("score", [float("inf"), float("-inf"), float("nan")])
def test_manual_jsonl_export_never_writes_nan_or_infinity(exports_dir: Path, score: float) -> None:
    """Issue 10: a score stored before the importer refused non-finite numbers is written as null."""
    from curation.models import ReferenceAlignment

    corpus = make_corpus(n_articles=2)
    pair = DocumentPair.objects.filter(corpus=corpus).order_by("pair_id").first()
    assert pair is not None
    ReferenceAlignment.objects.create(pair=pair, simple=sentence(pair, 0, 0, 0), complex=sentence(pair, 1, 0, 0),
                                      label="aligned", score=score)
    dataset = create_export(corpus.pk, "manual", params(format="jsonl", splits=None))
    run_export(dataset.pk)
    text = (folder_of(dataset, exports_dir) / "all.jsonl").read_text()

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} written into JSON")

    rows = [json.loads(line, parse_constant=refuse) for line in text.splitlines()]
    assert len(rows) == 1 and rows[0]["score"] is None


def test_jsonl_writer_replaces_non_finite_numbers_inside_values(tmp_path: Path) -> None:
    writer = writers.open_writer("jsonl", tmp_path / "x.jsonl", writers.columns("a", ("b", "json")))
    writer.write({"a": float("nan"), "b": {"x": [1.5, float("inf")]}})
    writer.close()
    assert json.loads((tmp_path / "x.jsonl").read_text()) == {"a": None, "b": {"x": [1.5, None]}}


def test_celery_task_runs_the_export_eagerly(exports_dir: Path, settings: Any) -> None:
    from config.celery import app

    corpus = make_corpus(n_articles=2)
    run = make_run(corpus)
    dataset = create_export(corpus.pk, "auto", params(), run_id=run.pk)
    app.conf.task_always_eager = True
    try:
        from pipeline.tasks import export_dataset

        assert export_dataset.delay(dataset.pk).get() == "done"
    finally:
        app.conf.task_always_eager = False
    assert app.tasks["pipeline.export_dataset"].name == export_dataset.name
    dataset.refresh_from_db()
    assert dataset.files


def test_batched_prediction_query_keeps_the_global_order() -> None:
    from pipeline.exports.auto import _auto_rows

    corpus = make_corpus(n_articles=5, all_levels=True)
    run = make_run(corpus)
    labels = ["aligned", "partialAligned"]
    one = list(_auto_rows(run.pk, corpus.pk, labels, chunk_size=3, rows_per_query=10_000))
    many = list(_auto_rows(run.pk, corpus.pk, labels, chunk_size=3, rows_per_query=5))
    assert one == many and len(one) == 5 * 10
    keys = [(r[0], r[7], r[8], r[12], r[13]) for r in one]  # pair id, simple (p, s), complex (p, s)
    assert [k[0] for k in keys] == sorted(k[0] for k in keys)


def test_cancelling_the_job_stops_the_export_and_leaves_nothing(exports_dir: Path) -> None:
    from pipeline.tests.export_factory import bulk_predictions

    corpus = make_corpus("big", n_articles=0)
    run = bulk_predictions(corpus, 3_000)
    dataset = create_export(corpus.pk, "auto", params(format="jsonl"), run_id=run.pk)
    job_id = dataset.job_id
    assert job_id is not None
    seen: list[int] = []

    def progress(done: int, total: int) -> None:
        seen.append(done)
        Job.objects.filter(pk=job_id).update(cancel_requested=True)

    assert run_export(dataset.pk, progress) == "cancelled"
    assert seen and seen[0] < 3_000  # stopped before the end
    assert list(exports_dir.iterdir()) == []
    dataset.refresh_from_db()
    assert dataset.job_id is not None
    assert dataset.files == [] and Job.objects.get(pk=dataset.job_id).status == Job.Status.CANCELLED


def test_export_command_filter_options_and_manual_export(exports_dir: Path) -> None:
    from pipeline.management.commands.export_dataset import parse_filters

    assert parse_filters(["gleu:min=0.2,max=0.8", "identical"]) == {"gleu": {"min": 0.2, "max": 0.8}, "identical": {}}
    assert set(parse_filters(["all"])) == {"identical", "adjacent_levels", "gleu", "flesch", "bisect"}
    corpus = make_corpus(n_articles=2)
    make_run(corpus)
    call_command("export_dataset", corpus.name, "auto", "--sync", "--format", "parquet", "--filter", "gleu:min=0.2,max=0.8")
    dataset = ExportedDataset.objects.get()
    assert dataset.card["filters"][0]["params"] == {"min": 0.2, "max": 0.8}
    assert dataset.format == "parquet" and {f["name"] for f in dataset.files} >= {"train.parquet", "card.json"}
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="unknown filter"):
        call_command("export_dataset", corpus.name, "auto", "--sync", "--filter", "nonsense")
    assert ExportedDataset.objects.count() == 1  # the rejected export left no row


def test_an_export_whose_filters_remove_every_row_says_so(exports_dir: Path, client_for: Any, admin_user: Any) -> None:
    from django.urls import reverse

    corpus = make_corpus(n_articles=2, all_levels=True)
    run = make_run(corpus)
    dataset = create_export(corpus.pk, "auto", params(filters={"gleu": {"min": 0.99, "max": 1.0}, "flesch": {"min_gain": 500}},
                                                      splits=None), run_id=run.pk)
    run_export(dataset.pk)
    dataset.refresh_from_db()
    assert dataset.card["counts"]["rows"] == 0
    html = client_for(admin_user).get(reverse("pipeline:export_detail", args=[dataset.pk])).content.decode()
    assert "This export has 0 rows: the filters removed all" in html
    listing = client_for(admin_user).get(reverse("pipeline:export_list")).content.decode()
    assert 'class="badge warn"' in listing and ">empty<" in listing
