"""Seed ensembles of whole models (CRFConfig.members): training in worker processes, the model directory,
alignment by averaged probabilities, the held-out dev figures."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

import numpy as np
import pytest
import torch

from alignment_engine import model_store, training
from alignment_engine.crf_aligner import CRFAligner, alignments_from, learned_scores_many
from alignment_engine.errors import ModelError
from alignment_engine.evaluation import evaluate
from alignment_engine.tests.test_training import _crf_weights, _progress_recorder, _synthetic
from alignment_engine.training import train_model
from alignment_engine.types import distinct_sentences


class Small(TypedDict):
    """test_training's fast options, without its members=1."""

    emission: str
    crf_epochs: int
    hidden: int
    transition_hidden: int


SMALL: Small = {"emission": "lexical", "crf_epochs": 3, "hidden": 8, "transition_hidden": 4}


def _split(n: int = 8) -> tuple[list, list, list, list]:
    pairs, gold = _synthetic(n)
    train, dev = pairs[: n - 2], pairs[n - 2:]
    dev_ids = {p.pair_id for p in dev}
    return train, [a for a in gold if a.pair_id not in dev_ids], dev, [a for a in gold if a.pair_id in dev_ids]


def _same_weights(a: Path, b: Path) -> bool:
    wa, wb = _crf_weights(a), _crf_weights(b)
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two-member ensembles of the same data: members trained in two worker processes, and in this process; and the
    single models of seeds 2 and 3, with the same refit on train + dev."""
    tmp = tmp_path_factory.mktemp("ensembles")
    train, train_gold, dev, dev_gold = _split()
    counts, lines, progress = _progress_recorder()
    with pytest.MonkeyPatch.context() as mp:  # the workers embed the sentences in shares first, as for real data
        mp.setattr(training, "SHARED_EMBEDDING_MIN", 0)
        procs = train_model(train, train_gold, dev, dev_gold, out_dir=tmp / "procs", seed=2, device="cpu", members=2,
                            workers=2, progress=progress, cv_folds=2, **SMALL)
    out = {
        "procs": procs,
        "here": train_model(train, train_gold, dev, dev_gold, out_dir=tmp / "here", seed=2, device="cpu",
                            members=2, workers=1, cv_folds=2, **SMALL),
        "seed2": train_model(train, train_gold, dev, dev_gold, out_dir=tmp / "seed2", seed=2, device="cpu", members=1,
                              cv_folds=2, **SMALL),
        "seed3": train_model(train, train_gold, dev, dev_gold, out_dir=tmp / "seed3", seed=3, device="cpu", members=1,
                              cv_folds=2, **SMALL),
        "held2": train_model(train, train_gold, dev, dev_gold, out_dir=tmp / "held2", seed=2, device="cpu",
                             refit_with_dev=False, members=1, cv_folds=2, **SMALL),
        "held3": train_model(train, train_gold, dev, dev_gold, out_dir=tmp / "held3", seed=3, device="cpu",
                             refit_with_dev=False, members=1, cv_folds=2, **SMALL),
    }
    return {**out, "counts": counts, "lines": lines, "data": (train, train_gold, dev, dev_gold)}


def test_member_k_is_the_single_model_of_seed_plus_k_in_processes_or_here(trained: dict) -> None:
    procs, here = trained["procs"], trained["here"]
    member = model_store.member_dir(procs, 1)
    assert _same_weights(procs, trained["seed2"]) and _same_weights(member, trained["seed3"])
    assert _same_weights(procs, here) and _same_weights(member, model_store.member_dir(here, 1))
    assert not _same_weights(procs, member)  # two seeds, two models
    meta, meta3 = (json.loads((d / "model.json").read_text()) for d in (member, trained["seed3"]))
    # a member's own model.json is the single model's: its held-out dev figures and refit record
    assert meta["config"] == meta3["config"] and meta["config"]["members"] == 1
    assert meta["dev_metrics"] == meta3["dev_metrics"]
    held, held3 = meta["refit"]["held_out_model"], meta3["refit"]["held_out_model"]
    assert meta["refit"]["final_model"] == "train + dev" and {**held, "seconds": 0} == {**held3, "seconds": 0}
    assert meta["thresholds"] == meta3["thresholds"]


def test_the_ensembles_directory_and_model_json(trained: dict) -> None:
    procs = trained["procs"]
    meta = json.loads((procs / "model.json").read_text())
    single = json.loads((trained["seed2"] / "model.json").read_text())
    assert meta["config"] == {**single["config"], "members": 2}
    assert meta["ensemble"]["members"] == 2 and meta["ensemble"]["seeds"] == [2, 3]
    assert meta["ensemble"]["workers"] == 2
    held = [json.loads((trained[k] / "model.json").read_text())["dev_metrics"] for k in ("held2", "held3")]
    assert meta["ensemble"]["member_dev_metrics"] == held
    assert meta["refit"]["final_model"] == "train + dev"
    assert meta["refit"]["held_out_model"]["thresholds"] == json.loads((trained["held2"] / "model.json").read_text())[
        "thresholds"]
    assert meta["data"]["train_pairs"] == 8  # the written members saw train + dev
    assert sorted(p.name for p in (procs / model_store.MEMBERS_DIR).iterdir()) == ["1"]


def test_the_ensemble_aligns_by_its_members_averaged_probabilities_with_member_0s_thresholds(trained: dict) -> None:
    train, _, dev, _ = trained["data"]
    pairs = [*train, *dev]
    ensemble = CRFAligner.load(trained["procs"], "cpu")
    assert len(ensemble.members) == 1
    a, b = CRFAligner.load(trained["seed2"], "cpu"), CRFAligner.load(trained["seed3"], "cpu")
    docs = a.prepare(pairs)
    decs_a, decs_b = a.predict_docs(docs), b.predict_docs(docs)
    prob_a = learned_scores_many(docs, decs_a, a.decoder)  # type: ignore[arg-type]
    prob_b = learned_scores_many(docs, decs_b, b.decoder)  # type: ignore[arg-type]
    expected = [alignments_from(doc, dec, a.thresholds, a.decoder, (pa + pb) / 2)
                for doc, dec, pa, pb in zip(docs, decs_a, prob_a, prob_b, strict=True)]
    assert ensemble.align(pairs) == expected
    assert expected != a.align(pairs) or expected != b.align(pairs)  # the average decides, not member 0 alone
    probs = ensemble.cell_probabilities(docs, ensemble.member_decodings(docs))
    assert all(p is not None and np.allclose(p, (pa + pb) / 2) for p, pa, pb in zip(probs, prob_a, prob_b, strict=True))


def test_align_with_fewer_members_uses_the_first_ones_and_one_is_member_0s_single_model(trained: dict, tmp_path: Path
                                                                                      ) -> None:
    from alignment_engine.cli import main
    from alignment_engine.io import read_alignment_tsv, write_pairs_jsonl

    train, _, dev, _ = trained["data"]
    pairs = [*train, *dev]
    one = CRFAligner.load(trained["procs"], "cpu", members=1)
    assert one.members == [] and one.align(pairs) == CRFAligner.load(trained["seed2"], "cpu").align(pairs)
    assert len(CRFAligner.load(trained["procs"], "cpu", members=2).members) == 1
    with pytest.raises(ModelError, match=r"asked for 3 ensemble member\(s\); the model has 2"):
        CRFAligner.load(trained["procs"], "cpu", members=3)
    write_pairs_jsonl(tmp_path / "p.jsonl", pairs)
    assert main(["-q", "align", "--input", str(tmp_path / "p.jsonl"), "--output", str(tmp_path / "one.tsv"),
                 "--model", str(trained["procs"]), "--members", "1", "--device", "cpu"]) == 0
    def key(rows: list) -> list[tuple[str, str, str]]:
        return [(r.label, r.simple_id, r.complex_id) for r in rows]

    assert key(read_alignment_tsv(tmp_path / "one.tsv")) == key([r for doc in one.align(pairs) for r in doc])
    assert main(["-q", "align", "--input", str(tmp_path / "p.jsonl"), "--method", "sequence", "--members", "1"]) == 2


def test_the_written_dev_figures_are_the_held_out_members_ensemble_as_align_decides(trained: dict) -> None:
    _, _, dev, dev_gold = trained["data"]
    meta = json.loads((trained["procs"] / "model.json").read_text())
    held = CRFAligner.load(trained["held2"], "cpu")
    held.add_members([CRFAligner.load(trained["held3"], "cpu")])
    rows = [r for doc in held.align(dev) for r in doc]
    scored = evaluate(dev_gold, rows, dev)
    assert meta["dev_metrics"]["task1"] == pytest.approx({k: round(v, 6) if isinstance(v, float) else v
                                                          for k, v in scored["task1"].items()})
    assert meta["dev_metrics"]["semantic_precision"] == held.semantic_precision
    assert "paragraphs" in meta["dev_metrics"]


def test_one_progress_plan_over_every_member_run(trained: dict) -> None:
    counts, lines = trained["counts"], trained["lines"]
    totals = {t for _, t in counts}
    assert len(totals) == 1
    done = [d for d, _ in counts]
    assert done[-1] == counts[-1][1] and done == sorted(done)
    assert any(line.startswith("member 2/2 (train + dev): ") for line in lines)
    assert any(line.startswith("seed ensemble of 2 models (seeds 2-3): 4 training runs, 2 at a time") for line in lines)
    train, _, dev, _ = trained["data"]
    distinct, dev_texts = distinct_sentences([*train, *dev]), distinct_sentences(dev)
    # float32 for the runs, int8 for dev; those the store already holds (the product's, under Django) are not run again
    shared = [re.fullmatch(r"embedded (\d+) of (\d+) sentences in 2 processes before the runs \(\d+ s\)", line)
              for line in lines if line.startswith("embedded ")]
    assert len(shared) == 1 and shared[0] is not None
    assert int(shared[0][2]) == len(distinct) + len(dev_texts) and int(shared[0][1]) <= int(shared[0][2])


def test_a_missing_member_is_a_model_error_naming_it(trained: dict, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(trained["procs"], broken)
    shutil.rmtree(model_store.member_dir(broken, 1))
    with pytest.raises(ModelError, match=r"missing members/1/ \(member 1 of its 2-model seed ensemble\)"):
        CRFAligner.load(broken, "cpu")
    other = tmp_path / "other"
    shutil.copytree(trained["procs"], other)
    meta_path = model_store.member_dir(other, 1) / "model.json"
    meta = json.loads(meta_path.read_text())
    meta["config"]["semantic_precision"] = "int8"  # another configuration: the members could not share features
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ModelError, match="member 1 is not a learned-decoder model of member 0's configuration"):
        CRFAligner.load(other, "cpu")


def test_retraining_into_an_ensembles_directory_leaves_no_stale_member(trained: dict, tmp_path: Path) -> None:
    train, train_gold, dev, dev_gold = trained["data"]
    out = tmp_path / "m"
    shutil.copytree(trained["procs"], out)
    (model_store.member_dir(out, 2)).mkdir(parents=True)  # as if an earlier ensemble had three members
    train_model(train, train_gold, dev, dev_gold, out_dir=out, seed=2, device="cpu", members=2, workers=1,
                refit_with_dev=False, cv_folds=2, **SMALL)
    assert sorted(p.name for p in (out / model_store.MEMBERS_DIR).iterdir()) == ["1"]
    assert _same_weights(model_store.member_dir(out, 1), trained["held3"])


def test_members_need_the_learned_decoder(tmp_path: Path) -> None:
    train, train_gold, _, _ = _split()
    with pytest.raises(ValueError, match="members > 1 needs decoder='learned'"):
        train_model(train, train_gold, out_dir=tmp_path / "m", device="cpu", members=2, decoder="rule", **SMALL)
    with pytest.raises(ValueError, match="members must be at least 1"):
        train_model(train, train_gold, out_dir=tmp_path / "m", device="cpu", members=0, **SMALL)


def test_members_with_the_same_normalisation_share_the_crfs_sequences(trained: dict, monkeypatch: pytest.MonkeyPatch
                                                                      ) -> None:
    from alignment_engine import crf_aligner, semicrf

    train, _, dev, _ = trained["data"]
    ensemble = CRFAligner.load(trained["procs"], "cpu")
    docs = ensemble.prepare([*train, *dev])
    expected = ensemble.member_decodings(docs)
    built: list[str] = []

    def spy(name: str, real: Callable) -> Callable:
        def counted(*args: object, **kwargs: object) -> object:
            built.append(name)
            return real(*args, **kwargs)
        return counted

    for module, name in ((crf_aligner, "build_sequences"), (semicrf, "build_span_sequences")):
        monkeypatch.setattr(module, name, spy(name, getattr(module, name)))
    again = ensemble.member_decodings(docs)
    assert sorted(built) == ["build_sequences"] * 2 + ["build_span_sequences"] * 2  # once per direction, not per member
    for decs, decs_again in zip(expected, again, strict=True):
        assert all(np.array_equal(a.forward_marginals, b.forward_marginals)
                   and np.array_equal(np.asarray(a.extra), np.asarray(b.extra)) for a, b in zip(decs, decs_again, strict=True))
    built.clear()
    ensemble.members[0].scale = ensemble.members[0].scale * 2  # another normalisation: its own sequences
    ensemble.member_decodings(docs)
    assert sorted(built) == ["build_sequences"] * 4 + ["build_span_sequences"] * 4


def test_sentences_embedded_in_shares_by_workers_are_stored_as_computed_here(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An ensemble's worker processes embed the runs' sentences once, in shares, into the shared store (a text's
    vector does not depend on the others embedded with it); what a later call finds stored it does not embed again."""
    from alignment_engine import semantic

    monkeypatch.setattr(training, "SHARED_EMBEDDING_MIN", 0)
    texts = ["Der Hund bellt.", "Die Katze schläft auf dem Sofa.", "Es regnet.", "Morgen kommt die Post.",
             "Ein sehr langer Satz über das Wetter, die Stadt und den Fluss, der durch sie fließt.", "Ja."]
    path = tmp_path / "store.sqlite3"
    lines: list[str] = []
    ticks: list[None] = []
    training._embed_in_workers({"float32": [*texts, *texts[:2]]}, str(path), 2, lines.append, lambda: ticks.append(None))
    assert len(ticks) == 2  # a report per chunk of a share: two shares of three sentences
    store = semantic.EmbeddingStore(path)
    found = store.get([semantic.EmbeddingStore.key("float32", t) for t in texts])
    here = semantic.network("cpu").embed(texts, precision="float32")
    assert len(found) == len(texts)
    assert all(np.array_equal(found[semantic.EmbeddingStore.key("float32", t)], v) for t, v in zip(texts, here,
                                                                                                  strict=True))
    assert lines[-1].startswith("embedded 6 of 6 sentences in 2 processes before the runs")
    training._embed_in_workers({"float32": texts}, str(path), 1, lines.append)
    assert lines[-1].startswith("embedded 0 of 6 sentences in 1 process before")
    reports: list[tuple] = []  # a worker's share in chunks, reported after each
    monkeypatch.setattr(training, "EMBED_CHUNK", 4)
    assert training.embed_job(training.EmbedJob({"float32": texts}, str(path)), lambda *a: reports.append(a)) == 0
    assert reports == [(4, 6), (6, 6)]
    monkeypatch.setattr(training, "SHARED_EMBEDDING_MIN", 7)  # too few to be worth the worker processes
    training._embed_in_workers({"float32": texts}, str(path), 2, lines.append)
    assert len(lines) == 2

    class Cancelled(Exception):
        pass

    def cancel() -> None:  # as a cancelled job's progress callback does
        raise Cancelled

    monkeypatch.setattr(training, "SHARED_EMBEDDING_MIN", 0)
    with pytest.raises(Cancelled):  # the workers are stopped and the caller's exception comes through
        training._embed_in_workers({"float32": texts}, str(tmp_path / "other.sqlite3"), 2, lines.append, cancel)
    assert len(lines) == 2
