import numpy as np
import pytest

from alignment_engine import api
from alignment_engine.errors import ModelError
from alignment_engine.types import Alignment, DocPair

PAIR = DocPair("k", complex=[["The cat sat on the mat.", "Dogs bark at night.", "Fish swim in the sea."]],
               simple=[["A cat sat on a mat.", "Fish swim."]])


def test_top_k_candidates():
    one = api.top_k_candidates(PAIR, k=1, measures=("c3g",))
    assert one == [("k-0-0-0", "k-1-0-0"), ("k-0-0-1", "k-1-0-2")]
    everything = api.top_k_candidates(PAIR, k=5)
    assert len(everything) == 6  # k larger than the document: every pair
    assert api.top_k_candidates(DocPair("e", [], [["x"]]), k=3) == []


def test_similarity_matrix_and_evaluate():
    mat = api.similarity_matrix("c3g", PAIR.simple_sentences(), PAIR.complex_sentences())
    assert mat.shape == (2, 3) and np.argmax(mat[0]) == 0
    gold = [Alignment("aligned", "k-0-0-0", "k-1-0-0")]
    assert api.evaluate(gold, gold, [PAIR])["task1"]["f1"] == 1.0


def test_default_method_and_method_list():
    assert api.DEFAULT_METHOD == "sequence"
    assert {"crf", "massalign", "cats", "jaccard", "tfidf", "lr", "cats-sequence"} <= set(api.METHODS)
    aligner = api.load_aligner()
    assert aligner.name == "sequence"
    rows = aligner.align([PAIR])[0]
    assert {(a.simple_id, a.complex_id) for a in rows} >= {("k-0-0-0", "k-1-0-0"), ("k-0-0-1", "k-1-0-2")}


def test_load_aligner_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown method"):
        api.load_aligner("nope")
    with pytest.raises(ModelError, match="--model"):
        api.load_aligner("crf")
    with pytest.raises(ModelError, match="not a model directory"):
        api.load_aligner("lr", tmp_path)
    (tmp_path / "model.json").write_text('{"config": {"partial_len_unit": "bytes"}}')
    with pytest.raises(ModelError, match="bad sequence config.*partial_len_unit"):
        api.load_aligner("sequence", tmp_path)  # refused at load, not at the first document
    (tmp_path / "model.json").write_text('{"kind": "crf", "config": {"emission": "lexical"}}')
    for method in ("sequence", "lr"):  # another method's model: named as such, not as a bad config
        with pytest.raises(ModelError, match="holds a 'crf' model, not one for '" + method + "': align it with --method crf"):
            api.load_aligner(method, tmp_path)
    (tmp_path / "model.json").write_text('{"method": "lr", "config": {}}')
    with pytest.raises(ModelError, match="holds a 'lr' model, not one for 'crf'"):
        api.load_aligner("crf", tmp_path)


def test_align_paragraphs_contract():
    links = api.align_paragraphs(PAIR, similarity="c3g", algorithm="news")
    assert links == [(0, 0, links[0][2])]
    assert len(api.candidate_pairs(PAIR, links)) == 6
    with pytest.raises(ValueError):
        api.align_paragraphs(PAIR, algorithm="nope")


def test_train_defaults_are_the_one_crf_config_default():
    from alignment_engine.crf_config import CRFConfig

    got = api.train_defaults()
    assert got == CRFConfig().to_dict()
    assert got["emission"] == "lexical" and got["decoder"] == "learned"
