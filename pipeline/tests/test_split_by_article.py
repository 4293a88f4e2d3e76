"""Retraining and exports split JSONL imports by article (issue 11): the two OneStopEnglish-like
pairs that share the intermediate text always land in one split, and the export card's leak
check says no sentence text is shared across splits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from curation.importers.run import run_import
from curation.importers.types import ImportOptions
from curation.models import Corpus
from pipeline.exports.run import create_export, run_export
from pipeline.models import ExportedDataset
from pipeline.services.labelled_data import collect_labelled_data

pytestmark = pytest.mark.django_db

ADV = [["Regular exercise lowers the risk of heart disease considerably, researchers said."]]
INT = [["Regular exercise lowers the risk of heart disease, researchers said."]]
ELE = [["Exercise is good for your heart."]]


def corpus_with_gold(tmp_path: Path, n_other: int = 5) -> Corpus:
    rows = [{"pair_id": "exercise_advint", "complex": ADV, "simple": INT}, {"pair_id": "exercise_intele", "complex": INT, "simple": ELE}]
    rows += [{"pair_id": f"story{i}", "complex": [[f"Story {i} has a long and complex first sentence here."]],
              "simple": [[f"Story {i} is short."]]} for i in range(n_other)]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    gold = "".join(f"aligned\t{r['pair_id']}-0-0-0\t{r['pair_id']}-1-0-0\ts\tc\n" for r in rows)
    (tmp_path / "g.tsv").write_text(gold)
    run_import(tmp_path / "p.jsonl", ImportOptions(corpus="OSE-like", format="jsonl"))
    run_import(tmp_path / "g.tsv", ImportOptions(corpus="OSE-like", format="tsv"))
    return Corpus.objects.get(name="OSE-like")


@pytest.mark.parametrize("seed", range(4))
def test_retraining_splits_keep_the_shared_text_pairs_together(tmp_path: Path, seed: int) -> None:
    corpus = corpus_with_gold(tmp_path)
    data = collect_labelled_data([corpus.pk], seed=seed, ratios=(0.4, 0.3, 0.3), reference_roles=["gold"])
    where = {p.pair_id: split for split, pairs in data.pairs.items() for p in pairs}
    assert where["exercise_advint"] == where["exercise_intele"]
    assert sum(len(a) for a in data.articles.values()) == 6  # 5 stories + one exercise article


@pytest.mark.parametrize("seed", range(4))
def test_export_splits_by_article_and_the_card_reports_no_leak(settings: Any, tmp_path: Path, seed: int) -> None:
    settings.EXPORTS_DIR = tmp_path / "exports"
    corpus = corpus_with_gold(tmp_path)
    dataset = create_export(corpus.pk, "manual", {"format": "jsonl", "splits": "2/1/1", "seed": seed, "include_reference": True})
    run_export(dataset.pk)
    dataset = ExportedDataset.objects.get(pk=dataset.pk)
    split_of_pair = {}
    for split in ("train", "dev", "test"):
        path = settings.EXPORTS_DIR / dataset.path / f"{split}.jsonl"
        for line in path.read_text().splitlines() if path.exists() else []:
            split_of_pair[json.loads(line)["pair_id"]] = split
    # the derived advanced -> elementary pair (exercise_advint.0_2) of the same article comes along
    assert {p for p in split_of_pair if p.startswith("exercise")} == {"exercise_advint", "exercise_intele", "exercise_advint.0_2"}
    assert len({split_of_pair[p] for p in split_of_pair if p.startswith("exercise")}) == 1
    assert dataset.card["splits"]["shared_sentences"] == {"count": 0, "examples": []}


def export_split_of_pairs(settings: Any, corpus: Corpus, splits: str, seed: int) -> dict[str, str]:
    dataset = create_export(corpus.pk, "manual", {"format": "jsonl", "splits": splits, "seed": seed, "include_reference": True})
    run_export(dataset.pk)
    dataset = ExportedDataset.objects.get(pk=dataset.pk)
    out: dict[str, str] = {}
    for split in ("train", "dev", "test"):
        path = settings.EXPORTS_DIR / dataset.path / f"{split}.jsonl"
        for line in path.read_text().splitlines() if path.exists() else []:
            out[json.loads(line)["pair_id"]] = split
    return out


@pytest.mark.parametrize("seed", range(4))
def test_retraining_puts_every_article_in_the_split_its_exports_give_it(settings: Any, tmp_path: Path, seed: int) -> None:
    """With unlabelled articles beside the labelled ones, a split drawn over the labelled articles alone
    would differ from the exports' (drawn over every article): retraining follows the exports, so an
    article of the Manual export's dev or test split is never in a model's train split."""
    settings.EXPORTS_DIR = tmp_path / "exports"
    corpus = corpus_with_gold(tmp_path, n_other=9)
    rows = [{"pair_id": f"unlabelled{i}", "complex": [[f"Unlabelled story {i} has a long first sentence here."]],
             "simple": [[f"Unlabelled story {i} is short."]]} for i in range(14)]
    (tmp_path / "more.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_import(tmp_path / "more.jsonl", ImportOptions(corpus="OSE-like", format="jsonl"))
    data = collect_labelled_data([corpus.pk], seed=seed, ratios=(0.7, 0.1, 0.2), reference_roles=["gold"])
    retrain_split = {p.pair_id: split for split, pairs in data.pairs.items() for p in pairs}
    exported = export_split_of_pairs(settings, corpus, "35/5/10", seed)
    assert {p: s for p, s in exported.items() if p in retrain_split} == retrain_split
    assert set(retrain_split) <= set(exported)
    assert len(retrain_split) == 11  # 9 stories + the two exercise pairs; the unlabelled ones are not training data
