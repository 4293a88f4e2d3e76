"""Exports on a real corpus from ../shared/data: the OneStopEnglish gold dev set (12 pairs, 374 gold pairs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from curation.importers.run import run_import
from curation.importers.types import ImportOptions
from curation.models import Corpus, ReferenceAlignment
from pipeline.exports.run import create_export, run_export
from pipeline.models import AlignmentRun, PredictedAlignment
from pipeline.services.corpus_stats import corpus_table

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def ose(shared_data: Path) -> Corpus:
    folder = shared_data / "onestopenglish-gold-dev"
    run_import(folder / "dev_pairs.jsonl", ImportOptions(corpus="OSE dev", format="jsonl"))
    run_import(folder / "dev_gold.tsv", ImportOptions(corpus="OSE dev", format="tsv"))
    return Corpus.objects.get(name="OSE dev")


def test_manual_auto_and_stats_on_onestopenglish(ose: Corpus, settings: Any, tmp_path: Path) -> None:
    settings.EXPORTS_DIR = tmp_path
    assert ReferenceAlignment.objects.filter(pair__corpus=ose).count() == 374
    # derive off: the grouped articles (adv, int, ele) would add derived adv -> ele links
    manual = create_export(ose.pk, "manual", {"format": "jsonl", "splits": "35/5/10", "seed": 0, "derive": False})
    assert run_export(manual.pk) == "done"
    manual.refresh_from_db()
    assert manual.card["counts"]["rows"] == 374 and manual.card["counts"]["by_source"] == {"reference": 374}
    groups = {k: v["count"] for k, v in manual.card["phenomena"]["groups"].items()}
    assert groups["rephrasing"] + groups["copying"] > 200 and groups["splitting"] > 0
    assert sum(manual.card["splits"]["articles"].values()) == 6  # the 12 pairs are 6 article groups (shared texts)
    assert manual.card["splits"]["shared_sentences"]["count"] == 0
    table = corpus_table(ose, "reference")
    assert table["totals"]["aligned_pairs"] == 374 and table["labelled_pairs"] == 12

    # an Auto export from a run whose predictions are the gold pairs, with every filter
    run = AlignmentRun.objects.create(corpus=ose, method="gold-as-run")
    PredictedAlignment.objects.bulk_create([
        PredictedAlignment(run=run, pair_id=r.pair_id, simple_id=r.simple_id, complex_id=r.complex_id, label=r.label, score=1.0)
        for r in ReferenceAlignment.objects.filter(pair__corpus=ose)
    ])
    test_set = tmp_path / "test.txt"
    first = ReferenceAlignment.objects.filter(pair__corpus=ose).select_related("complex").order_by("pk").first()
    assert first is not None
    test_set.write_text(first.complex.text + "\n", encoding="utf-8")
    filters = {"identical": {}, "test_set": {"path": str(test_set)}, "gleu": {}, "flesch": {"min_gain": 0}}
    auto = create_export(ose.pk, "auto", {"format": "parquet", "splits": None, "filters": filters}, run_id=run.pk)
    run_export(auto.pk)
    auto.refresh_from_db()
    reports = {f["name"]: f["removed"] for f in auto.card["filters"]}
    assert reports["identical"] > 0 and reports["test_set"] >= 1 and reports["gleu"] > 0
    assert auto.card["counts"]["rows"] == 374 - sum(reports.values())
    bisect = create_export(ose.pk, "auto", {"format": "jsonl", "splits": None, "filters": {"bisect": {}}}, run_id=run.pk)
    run_export(bisect.pk)
    bisect.refresh_from_db()
    rows = [json.loads(line) for line in (tmp_path / bisect.path / "all.jsonl").read_text().splitlines()]
    report = bisect.card["filters"][0]
    assert report["seen"] == 374 and len(rows) == 374 - report["removed"]
    assert all(r["group_shape"] in ("1-2", "2-1") and r["split_category"] for r in rows)
    print("bisect on OSE dev:", len(rows), "rows kept;", report["removed_by"],
          {c: sum(1 for r in rows if r["split_category"] == c) for c in {r["split_category"] for r in rows}})
