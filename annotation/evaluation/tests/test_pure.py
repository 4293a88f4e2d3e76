"""SARI against published values, metrics, balanced orders, importers, controls and diffs."""

from __future__ import annotations

import random
from collections import Counter
from collections import Counter as C  # noqa: N817

import pytest

from annotation.evaluation import balance, controls, importers, metrics

SOURCE = ["About", "95", "species", "are", "currently", "accepted", "."]
REFS = [r.split() for r in ("About 95 species are currently known .", "About 95 species are now accepted .", "95 species are now accepted .")]


@pytest.mark.parametrize(
    ("output", "expected"),
    [  # the three outputs of Xu et al. 2016's example, values of tensor2tensor's sari_hook tests
        ("About 95 you now get in .", 0.2695360),
        ("About 95 species are now agreed .", 0.6170966),
        ("About 95 species are currently agreed .", 0.5088682),
    ],
)
def test_sari_published_examples(output: str, expected: float) -> None:
    assert metrics.sari_tokens(SOURCE, output.split(), REFS).sari == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize(
    ("output", "expected"),
    [  # the same three outputs: EASSE's sari_sentence values (Xu et al.'s released algorithm)
        ("About 95 you now get in .", 26.82782411698074),
        ("About 95 species are now agreed .", 58.89995423074248),
        ("About 95 species are currently agreed .", 50.71608864657479),
    ],
)
def test_sari_xu_matches_easse(output: str, expected: float) -> None:
    assert 100 * metrics.sari_xu_tokens(SOURCE, output.split(), REFS).sari == pytest.approx(expected, abs=1e-9)
    assert 100 * metrics.sari("About 95 species are currently accepted.", output.replace(" .", "."),
                              [" ".join(r) for r in REFS]).sari == pytest.approx(expected, abs=1e-9)  # 13a splits the full stop
    with pytest.raises(ValueError, match="variant"):
        metrics.sari("a", "b", ["c"], variant="easse")


def test_sari_components_and_edge_cases():
    assert metrics.keep_score(C({1: 1, 2: 1}), C({2: 1}), C({1: 1, 2: 0.5})) == pytest.approx(6 / 15)
    assert metrics.deletion_score(C({1: 1, 2: 1}), C({1: 1, 2: 1}), C({1: 1}), beta=1) == 0
    assert metrics.deletion_score(C({1: 1, 2: 1}), C({1: 1, 2: 1}), C({1: 1}), beta=0) == 1
    def t(*ids: int) -> list[str]:
        return [str(i) for i in ids]

    same = t(3, 1, 4, 1, 5, 9, 2, 6, 5)
    assert metrics.sari_tokens(same, same, [same]).sari == 1
    out = t(3, 1, 4, 1, 80, 70)
    assert metrics.sari_tokens(same, out, [out]).sari == 1
    assert metrics.sari_tokens(t(3, 1, 4), t(3, 3, 1, 1, 1, 4), [t(3, 3, 3, 1, 1, 4, 4)], max_n=1).sari == 1


def test_system_metrics():
    sources = ["The council approved the budget after a protracted debate."]
    refs = [["The council approved the budget after a long debate."]]
    perfect = metrics.system_metrics("p", sources, [refs[0][0]], refs)
    copy = metrics.system_metrics("c", sources, sources, refs)
    assert perfect.sari == 100.0 and perfect.bleu == pytest.approx(100.0)
    assert copy.sari is not None and copy.sari < perfect.sari
    assert perfect.length == 10 and 0 < perfect.fkgl < copy.fkgl  # 9 words and the full stop; "protracted" is harder
    none = metrics.system_metrics("n", sources, sources, [[]])
    assert none.sari is None and none.bleu is None and none.length == 10


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7])
def test_williams_rows_balance_positions_and_carry_over(n: int) -> None:
    rows = balance.williams_rows(n)
    assert len(rows) == (n if n % 2 == 0 or n == 1 else 2 * n)
    reps = len(rows) // n
    for pos in range(n):
        assert Counter(row[pos] for row in rows) == {m: reps for m in range(n)}
    if n > 1:
        follows = Counter((row[i], row[i + 1]) for row in rows for i in range(n - 1))
        assert set(follows.values()) == {reps} and len(follows) == n * (n - 1)


def test_slot_orders_balance_every_complete_block():
    members = ["a", "b", "c", "d"]
    orders = [balance.page_members(members, 3, t)[0] for t in range(12)]
    for pos in range(4):
        assert Counter(o[pos] for o in orders) == {m: 3 for m in members}
    assert balance.page_members(members, 3, 5) == balance.page_members(members, 3, 5)
    assert [balance.page_members(members, 4, t)[0] for t in range(4)] != orders[:4]


def test_tsv_import_and_errors():
    good = "item_id\tsource\treference\tsystem\toutput\n1\tA long sentence.\tShort.\tx\tShort one.\n1\tA long sentence.\tShort.\ty\tLong one.\n"
    items = importers.parse_outputs(good, "out.tsv")
    assert len(items) == 1 and items[0].outputs == {"x": "Short one.", "y": "Long one."} and items[0].references == ["Short."]
    bad = (
        "item_id\tsource\tsystem\toutput\n"
        "1\tA.\tx\tone\n"
        "1\tA.\tx\ttwo\n"          # duplicate
        "2\tB.\tx\n"               # too few fields
        "3\tC.\ty\t \n"            # empty output
        "4\tD.\ty\tfour\n"          # item 4 lacks x, item 1 lacks y
    )
    with pytest.raises(importers.InputError) as err:
        importers.parse_outputs(bad, "out.tsv")
    text = str(err.value)
    assert "out.tsv:3: item '1' has a second output of system 'x' (first on line 2)" in text
    assert "out.tsv:4: 3 fields, the header has 4" in text
    assert "out.tsv:5: output is missing or empty" in text
    assert "out.tsv:2: item '1' has no output of system(s) y" in text and "out.tsv:6: item '4' has no output of system(s) x" in text
    with pytest.raises(importers.InputError, match="out.tsv:1: the header has no 'output' column"):
        importers.parse_outputs("item_id\tsystem\n1\tx\n", "out.tsv")


def test_jsonl_import_both_shapes_and_errors():
    good = (
        '{"item_id": 1, "source": "A.", "references": ["a"], "outputs": {"x": "one", "y": "two"}}\n'
        '{"item_id": "2", "source": "B.", "reference": "b", "system": "x", "output": "three"}\n'
        '{"item_id": "2", "source": "B.", "reference": "b", "system": "y", "output": "four"}\n'
    )
    items = importers.parse_outputs(good, "o.jsonl")
    assert [i.key for i in items] == ["1", "2"] and items[1].references == ["b"]
    with pytest.raises(importers.InputError) as err:
        importers.parse_outputs('{"item_id": 1, "source": "A.", "system": "x", "output": "o"}\nnot json\n[1]\n'
                                '{"item_id": 1, "source": "Other.", "system": "y", "output": "p"}\n', "o.jsonl")
    text = str(err.value)
    assert "o.jsonl:2: not valid JSON" in text and "o.jsonl:3: each line must be a JSON object" in text
    assert "o.jsonl:4: item '1' has a different source than on line 1" in text


def test_items_from_an_export_split(tmp_path):
    (tmp_path / "test.tsv").write_text(
        "aligned\tp1-0-0-1\tp1-1-0-0\tIt is small.\tThe frog, which is small, is blue.\t0.9\n"
        "partialAligned\tp1-0-0-0\tp1-1-0-0\tThe frog is blue.\tThe frog, which is small, is blue.\t0.8\n"
        "notAligned\tp1-0-1-0\tp1-1-1-0\tOther.\tSomething else.\t0.1\n"
        "aligned\tp2-0-0-0\tp2-1-0-0\tRain fell.\tHeavy rain fell all day.\t0.95\n"
    )
    items = importers.items_from_export(tmp_path)
    by_key = {i.key: i for i in items}
    assert set(by_key) == {"p1-1-0-0", "p2-1-0-0"}
    assert by_key["p1-1-0-0"].references == ["The frog is blue. It is small."]  # document order
    outputs = importers.parse_outputs("item_id\tsystem\toutput\np1-1-0-0\tm\tA blue frog.\np2-1-0-0\tm\tIt rained.\n", "o.tsv", require_source=False)
    merged = importers.merge_outputs(items, outputs, "o.tsv", reference_as_system=True)
    assert {i.key: sorted(i.outputs) for i in merged} == {"p1-1-0-0": ["m", "reference"], "p2-1-0-0": ["m", "reference"]}
    with pytest.raises(importers.InputError, match="o.tsv:2: item 'nope' is not in the export's split"):
        importers.merge_outputs(items, importers.parse_outputs("item_id\tsystem\toutput\nnope\tm\tx\n", "o.tsv", False), "o.tsv")
    with pytest.raises(importers.InputError, match="no test.tsv, test.jsonl or test.parquet"):
        importers.items_from_export(tmp_path / "missing")


def test_controls_and_diff():
    vocab = controls.vocabulary(["The Quick brown fox, jumps!", "over 2 lazy dogs"])
    assert vocab == ["brown", "dogs", "fox", "jumps", "lazy", "over", "quick", "the"]
    text = "Scientists found a new kind of frog in Peru last year."
    c = controls.make_control(text, vocab, random.Random(1))
    assert 4 <= len(c.replaced) <= 8 and c.text != text
    for pos, old, new in c.replaced:
        assert text.split()[pos].startswith(old) and new.lower() in vocab
    with pytest.raises(ValueError):
        controls.make_control("1 2 3", vocab, random.Random(1))
    segs = controls.word_diff("The frog, which is small, is blue.", "The frog is blue and tiny.")
    kinds = [k for k, _ in segs]
    assert "added" in kinds and "deleted" in kinds
    assert " ".join(t for k, t in segs if k != "deleted") == "The frog is blue and tiny."


def test_flesch_kincaid_grade_offline():
    from curation.curate.readability import flesch_kincaid_grade

    # 6 words, 1 sentence, 6 syllables: 0.39 * 6 + 11.8 * 1 - 15.59
    assert flesch_kincaid_grade("The cat sat on the mat.") == pytest.approx(-1.45)
    hard = "The municipal legislature ratified an extraordinarily controversial appropriation."
    assert flesch_kincaid_grade(hard) > 15 and flesch_kincaid_grade("") == 0.0
