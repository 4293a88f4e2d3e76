import json
import subprocess
import sys
from pathlib import Path

import pytest

from alignment_engine.cli import main
from alignment_engine.io import read_alignment_tsv, write_pairs_jsonl
from alignment_engine.types import DocPair, distinct_sentences

ROOT = Path(__file__).resolve().parents[2]

PAIRS = [
    DocPair("a1", complex=[["The old mayor opened the new bridge on Monday.", "Hundreds of people watched it."],
                           ["The bridge cost ten million pounds."]],
            simple=[["The mayor opened the bridge on Monday."], ["The bridge cost a lot of money."]]),
    DocPair("empty", complex=[], simple=[]),
    DocPair("one", complex=[["Just one sentence here."]], simple=[["Just one sentence here."]]),
    DocPair("nosimple", complex=[["Something."]], simple=[]),
]


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pairs.jsonl"
    write_pairs_jsonl(path, PAIRS)
    return path


@pytest.mark.parametrize("method", ["sequence", "jaccard", "tfidf", "cats", "cats-sequence", "massalign", "lr"])
def test_align_methods(pairs_file, tmp_path, method):
    out = tmp_path / "out.tsv"
    assert main(["-q", "align", "--input", str(pairs_file), "--output", str(out), "--method", method]) == 0
    rows = read_alignment_tsv(out)
    pairs = {(r.simple_id, r.complex_id) for r in rows}
    assert ("a1-0-0-0", "a1-1-0-0") in pairs
    assert all(r.label in ("aligned", "partialAligned") for r in rows)
    assert all(len(line.split("\t")) == 6 for line in out.read_text().splitlines())


def test_align_default_is_sequence_and_progress_on_stderr(pairs_file, tmp_path, capsys):
    out = tmp_path / "out.tsv"
    assert main(["align", "--input", str(pairs_file), "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "(sequence)" in err and "4 document pairs" in err
    assert read_alignment_tsv(out)


def test_align_to_stdout(pairs_file, capsys):
    assert main(["-q", "align", "--input", str(pairs_file)]) == 0
    assert capsys.readouterr().out.startswith(("aligned\ta1-0-0-0", "partialAligned\ta1-0-0-0"))


def test_malformed_input_exits_2_with_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"pair_id": "ok", "complex": [], "simple": []}\n{"pair_id": "x", "complex": "nope"}\n')
    assert main(["align", "--input", str(bad), "--output", str(tmp_path / "o.tsv")]) == 2
    assert f"{bad}:2:" in capsys.readouterr().err


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["evaluate", "--gold", str(tmp_path / "no.tsv"), "--pred", str(tmp_path / "no.tsv")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_crf_without_model_exits_2(pairs_file, capsys):
    assert main(["align", "--input", str(pairs_file), "--method", "crf"]) == 2
    assert "--model" in capsys.readouterr().err


def test_evaluate_prints_json(pairs_file, tmp_path, capsys):
    pred = tmp_path / "pred.tsv"
    main(["-q", "align", "--input", str(pairs_file), "--output", str(pred)])
    capsys.readouterr()
    assert main(["evaluate", "--gold", str(pred), "--pred", str(pred), "--pairs", str(pairs_file)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["task1"]["f1"] == 1.0
    assert set(result) >= {"task1", "task2", "with_identical", "counts"}
    assert "documents" not in result
    assert main(["evaluate", "--gold", str(pred), "--pred", str(pred), "--pairs", str(pairs_file), "--by-document"]) == 0
    docs = json.loads(capsys.readouterr().out)["documents"]
    assert len(docs) == result["counts"]["docs_scored"] and all(d["task1"]["f1"] == 1.0 for d in docs.values()
                                                                 if d["task1"]["n_gold"])
    assert sum(d["task1"]["tp"] for d in docs.values()) == result["task1"]["tp"]


def test_train_lr_and_align_with_model(pairs_file, tmp_path, capsys):
    gold = tmp_path / "gold.tsv"
    gold.write_text("aligned\ta1-0-0-0\ta1-1-0-0\ts\tc\naligned\ta1-0-1-0\ta1-1-1-0\ts\tc\n")
    model = tmp_path / "lr_model"
    assert main(["-q", "train", "--method", "lr", "--pairs", str(pairs_file), "--gold", str(gold),
                 "--out", str(model)]) == 0
    meta = json.loads((model / "model.json").read_text())
    assert meta["method"] == "lr" and meta["format_version"] == 1
    out = tmp_path / "o.tsv"
    assert main(["-q", "align", "--input", str(pairs_file), "--output", str(out), "--model", str(model)]) == 0
    assert {(r.simple_id, r.complex_id) for r in read_alignment_tsv(out)} >= {("a1-0-0-0", "a1-1-0-0")}


def test_tune_baseline_and_paragraphs(pairs_file, tmp_path, capsys):
    gold = tmp_path / "gold.tsv"
    gold.write_text("aligned\ta1-0-0-0\ta1-1-0-0\ts\tc\naligned\ta1-0-1-0\ta1-1-1-0\ts\tc\n")
    assert main(["-q", "tune", "--pairs", str(pairs_file), "--gold", str(gold), "--method", "tfidf"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["task1"]["f1"] == 1.0 and 0 <= res["threshold"] < 1
    assert main(["-q", "tune", "--pairs", str(pairs_file), "--gold", str(gold), "--paragraphs", "news",
                 "--eval-pairs", str(pairs_file), "--eval-gold", str(gold)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["recall"] == 1.0 and res["eval"]["recall"] == 1.0


def test_methods_lists_default(capsys):
    assert main(["methods"]) == 0
    assert "sequence" in capsys.readouterr().out


def test_module_entry_point(pairs_file, tmp_path):
    out = tmp_path / "o.tsv"
    proc = subprocess.run([sys.executable, "-m", "alignment_engine", "align", "--input", str(pairs_file),
                           "--output", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().count("\n") >= 2
    bad = subprocess.run([sys.executable, "-m", "alignment_engine", "align", "--input", str(tmp_path / "none")],
                         cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2


def test_make_pairs_from_onestop(shared_data, tmp_path):
    from alignment_engine.io import read_pairs_jsonl

    out = tmp_path / "ose.jsonl"
    assert main(["make-pairs", "--onestop", str(shared_data / "onestopenglish" / "texts"), "--output", str(out),
                 "--limit", "2"]) == 0
    pairs = read_pairs_jsonl(out)
    assert len(pairs) == 4
    assert pairs[0].pair_id.endswith("_advint") and pairs[1].pair_id.endswith("_intele")
    assert all(p.complex and p.simple for p in pairs)
    assert main(["make-pairs", "--onestop", str(tmp_path), "--output", str(out)]) == 2


def test_sequence_model_dir_overrides_config(pairs_file, tmp_path):
    model = tmp_path / "seq"
    model.mkdir()
    (model / "model.json").write_text(json.dumps({"format_version": 1, "method": "sequence",
                                                  "config": {"null_threshold": 5.0, "extra_threshold": 9.0}}))
    out = tmp_path / "o.tsv"
    assert main(["-q", "align", "--input", str(pairs_file), "--output", str(out), "--model", str(model)]) == 0
    assert out.read_text() == ""  # nothing clears a null threshold of 5
    (model / "model.json").write_text(json.dumps({"method": "sequence", "config": {"nope": 1}}))
    assert main(["-q", "align", "--input", str(pairs_file), "--output", str(out), "--model", str(model)]) == 2


def test_train_without_options_trains_the_default_config_and_align_uses_it(tmp_path, capsys):
    """`train` with no --set trains CRFConfig() (the documented best configuration) with the learned decoder;
    `align --model` then runs that model as trained."""
    from alignment_engine.crf_config import CRFConfig
    from alignment_engine.io import write_alignment_tsv
    from alignment_engine.tests.test_training import _tiny

    pairs, gold = _tiny()
    pairs_path, gold_path = tmp_path / "p.jsonl", tmp_path / "g.tsv"
    write_pairs_jsonl(pairs_path, pairs)
    write_alignment_tsv(gold_path, gold)
    model = tmp_path / "m"
    assert main(["-q", "train", "--pairs", str(pairs_path), "--gold", str(gold_path), "--dev-pairs", str(pairs_path),
                 "--dev-gold", str(gold_path), "--out", str(model), "--device", "cpu"]) == 0
    meta = json.loads((model / "model.json").read_text())
    assert meta["config"] == CRFConfig().to_dict()
    assert meta["thresholds"]["combine"] == "learned" and "groups" in meta["dev_metrics"]
    printed = json.loads(capsys.readouterr().out)
    assert printed["trained_on"] == "train"  # dev repeats the train pairs: nothing to refit on
    assert printed["dev_metrics"] == meta["dev_metrics"]
    out = tmp_path / "out.tsv"
    assert main(["-q", "align", "--input", str(pairs_path), "--output", str(out), "--model", str(model),
                 "--device", "cpu"]) == 0
    rows = read_alignment_tsv(out)
    assert rows and all(r.pair_id in {"a", "b"} for r in rows)
    assert meta["ensemble"]["members"] == CRFConfig().members and (model / "members").is_dir()  # the default's
    bad = main(["-q", "train", "--pairs", str(pairs_path), "--gold", str(gold_path), "--out", str(tmp_path / "w"),
                "--workers", "0"])
    assert bad == 2 and "--workers must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()


def test_embeddings_cache_lets_a_second_align_embed_nothing_and_write_the_same_rows(tmp_path):
    """`align --embeddings-cache FILE`: the first run stores every sentence's embedding, a later run (its memory
    cache emptied, as in a new process) reads them all back and writes the same rows."""
    from alignment_engine import semantic
    from alignment_engine.tests.test_training import _tiny
    from alignment_engine.training import train_model

    pairs, gold = _tiny()
    model = train_model(pairs, gold, out_dir=tmp_path / "m", seed=0, device="cpu", crf_epochs=2, hidden=8,
                        transition_hidden=4, semicrf_epochs=1, cv_folds=2, members=1)
    pairs_path, cache = tmp_path / "p.jsonl", tmp_path / "cache" / "emb.sqlite3"
    write_pairs_jsonl(pairs_path, pairs)
    # the encoder `align` embeds with by default (int8 on a CPU with ONNX Runtime)
    encoder, before = semantic.shared_encoder(semantic.alignment_precision("float32", "cpu")), semantic._STORE
    texts = set(distinct_sentences(pairs))
    outputs, encoded = [], []
    try:
        for k in range(2):
            encoder.clear()
            start = encoder.encoded
            out = tmp_path / f"out{k}.tsv"
            assert main(["-q", "align", "--input", str(pairs_path), "--output", str(out), "--model", str(model),
                         "--device", "cpu", "--embeddings-cache", str(cache)]) == 0
            outputs.append(out.read_text(encoding="utf-8"))
            encoded.append(encoder.encoded - start)
    finally:
        semantic.use_store(before)
    assert encoded == [len(texts), 0]
    assert outputs[0] and outputs[0] == outputs[1]
    import sqlite3

    with sqlite3.connect(cache) as conn:
        assert conn.execute("SELECT count(*) FROM embedding").fetchone()[0] == len(texts)


def test_an_embeddings_cache_that_is_not_one_is_an_input_error_naming_it(pairs_file, tmp_path, capsys):
    from alignment_engine import semantic

    bad = tmp_path / "notes.txt"
    bad.write_text("these are my notes, not a database\n" * 200, encoding="utf-8")
    out = tmp_path / "out.tsv"
    before = semantic._STORE
    try:
        assert main(["-q", "align", "--input", str(pairs_file), "--output", str(out), "--method", "sequence",
                     "--embeddings-cache", str(bad)]) == 2
        assert semantic._STORE is before  # the bad file was never installed
    finally:
        semantic.use_store(before)
    err = capsys.readouterr().err
    assert str(bad) in err and "embeddings cache" in err and "Traceback" not in err
    assert not out.exists()
    assert bad.read_text(encoding="utf-8").startswith("these are my notes")  # left as it was
