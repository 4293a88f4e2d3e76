"""Auto export with every filter (``--filter all``) on a fixed fixture: the rows and the card's
filter reports must stay exactly what the straightforward per-row filters produced (the file
``data/auto_all_filters.json`` was written by them, before the per-sentence caches).
``RECORD_GOLDEN=1`` rewrites it."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from curation.models import DocumentPair, Sentence
from curation.tests.corpus_builder import build_corpus
from pipeline.exports.run import create_export, run_export
from pipeline.models import AlignmentRun, PredictedAlignment

pytestmark = pytest.mark.django_db
GOLDEN = Path(__file__).parent / "data" / "auto_all_filters.json"
WORDS = ["the", "council", "said", "new", "bridge", "river", "people", "school", "money", "would", "be", "built", "after",
         "years", "of", "debate", "residents", "worried", "about", "traffic", "costs", "safety", "and", "jobs", "growth",
         "is", "was", "opened", "children", "playing", "near", "a", "old", "town", "market", "has", "had", "city"]


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _fixture() -> tuple[int, int]:
    """Six articles x 3 levels, all level pairs; per pair one-to-one rephrasings, 1-2 splits,
    2-1 merges, copies and loose pairs, so every filter removes and keeps something."""
    rng = random.Random(11)
    articles: dict[str, list[list[list[str]]]] = {}
    for a in range(6):
        complex_doc = [_sentence(rng, rng.randint(10, 24)) for _ in range(8)]
        levels = [complex_doc]
        for _ in range(2):
            prev = levels[-1]
            simple = []
            for i, text in enumerate(prev):
                words = text.rstrip(".").split()
                if i % 4 == 0 and len(words) > 6:  # a split: two halves
                    simple += [" ".join(words[: len(words) // 2]).capitalize() + ".", " ".join(words[len(words) // 2:]).capitalize() + "."]
                elif i % 4 == 1:  # a copy
                    simple.append(text)
                else:
                    simple.append(" ".join(w for j, w in enumerate(words) if j % 3 != 2).capitalize() + ".")
            levels.append(simple)
        articles[f"gold{a}"] = [[doc[:4], doc[4:]] for doc in levels]
    corpus = build_corpus("Golden", articles, all_levels=True)
    run = AlignmentRun.objects.create(corpus=corpus, method="golden")
    rows = []
    for pair in DocumentPair.objects.filter(corpus=corpus).order_by("pk"):
        complex_ids = list(Sentence.objects.filter(document=pair.complex).order_by("doc_position").values_list("pk", flat=True))
        simple_ids = list(Sentence.objects.filter(document=pair.simple).order_by("doc_position").values_list("pk", flat=True))
        links = set()
        for k, s_pk in enumerate(simple_ids):  # simple k from complex round(k * ratio), neighbours for splits and merges
            c = min(len(complex_ids) - 1, k * len(complex_ids) // len(simple_ids))
            links.add((s_pk, complex_ids[c]))
            if k % 5 == 3 and c + 1 < len(complex_ids):
                links.add((s_pk, complex_ids[c + 1]))
        for n, (s_pk, c_pk) in enumerate(sorted(links)):
            rows.append(PredictedAlignment(run=run, pair=pair, simple_id=s_pk, complex_id=c_pk,
                                           label="partialAligned" if n % 7 == 0 else "aligned", score=0.5 + (n % 5) / 10))
    PredictedAlignment.objects.bulk_create(rows)
    return corpus.pk, run.pk


def _fake_bertscore(candidates: list[str], references: list[str]) -> list[float]:
    """Deterministic stand-in for the encoder: word-set Jaccard, so the threshold removes some groups."""
    out = []
    for c, r in zip(candidates, references, strict=True):
        a, b = set(c.lower().split()), set(r.lower().split())
        out.append(len(a & b) / len(a | b) if a | b else 0.0)
    return out


def test_every_filter_gives_the_recorded_rows(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import curation.curate.bertscore as bertscore

    monkeypatch.setattr(bertscore, "bertscore_f1", _fake_bertscore)
    settings.EXPORTS_DIR = tmp_path
    corpus_id, run_id = _fixture()
    filters = {name: {} for name in ("identical", "adjacent_levels", "gleu", "flesch", "bisect")}  # type: ignore[var-annotated]
    filters["bisect"] = {"min_bertscore": 0.2}
    dataset = create_export(corpus_id, "auto", {"format": "jsonl", "splits": None, "seed": 0, "filters": filters}, run_id=run_id)
    run_export(dataset.pk)
    dataset.refresh_from_db()
    rows = [json.loads(line) for line in (tmp_path / dataset.path / "all.jsonl").read_text(encoding="utf-8").splitlines()]
    got = {"rows": rows, "filters": dataset.card["filters"], "input_rows": dataset.card["counts"]["input_rows"]}
    # the no-filter baseline of the same fixture, with GLEU and Flesch alone (their notes on every row)
    light = create_export(corpus_id, "auto", {"format": "jsonl", "splits": None, "seed": 0,
                                               "filters": {"gleu": {"min": 0.0, "max": 1.0}, "flesch": {"min_gain": -1000}}},
                          run_id=run_id)
    run_export(light.pk)
    light.refresh_from_db()
    got["scored"] = [json.loads(line) for line in (tmp_path / light.path / "all.jsonl").read_text(encoding="utf-8").splitlines()]
    if os.environ.get("RECORD_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert got["input_rows"] == expected["input_rows"] > 100
    assert [f["removed"] for f in got["filters"]] == [f["removed"] for f in expected["filters"]]
    assert all(f["removed"] > 0 for f in got["filters"][1:])  # every filter but identical removes rows here
    assert 0 < len(got["rows"]) == len(expected["rows"])
    assert got == expected
