"""JSONL grouping after the speed-up: the same groups as counting the tokens of every sentence."""

from __future__ import annotations

import json

import pytest

from alignment_engine.text import count_tokens
from curation.importers import jsonl_pairs
from curation.importers.types import ImportFailed
from curation.tests.conftest import options

SENTENCES = [
    "Yes.", "Photo: AP", "Hi, you!", "Hi, you", "U.S. troops left", "a b c", "a b c d", "one two three four five",
    "Well... no", "«Oui», dit-il", "3.5 % up", "Ça va ?", "x", "!!", "end ,",
]


@pytest.mark.parametrize("sentence", SENTENCES)
def test_long_enough_is_the_token_count_rule(sentence: str) -> None:
    assert jsonl_pairs.long_enough(sentence) is (count_tokens(sentence) >= jsonl_pairs.SHARED_MIN_TOKENS)


def _line(pair_id: str, complex_side: list[list[str]], simple_side: list[list[str]], **extra: str) -> str:
    return json.dumps({"pair_id": pair_id, "complex": complex_side, "simple": simple_side, **extra}, ensure_ascii=False) + "\n"


CRAFTED = "".join([
    _line("a", [["Hi, you!", "Shared text of four words."]], [["Short."]]),  # 0
    _line("b", [["Hi, you!"]], [["Yes."]]),  # 1: "Hi, you!" has 4 tokens in 2 words -> joins 0
    _line("c", [["Yes.", "Photo: AP"]], [["Other."]]),  # 2: only short sentences shared -> alone
    _line("d", [["Nothing   in common here."]], [["Shared text  of four words."]]),  # 3: same text once cleaned -> joins 0
    _line("e", [["Photo: AP"]], [["Yes, sir"]]),  # 4: alone (3 tokens each)
    _line("f", [["A b c d"]], [["z"]], article="x"),  # 5: by its article field, not by text
    _line("g", [["Nothing in common here."]], [["q"]]),  # 6: joins 3, so 0
    "\n",
    _line("h", [["w"]], [["v"]], article="x"),  # 7 (line 9): joins 5
])


def test_crafted_groups_are_the_same_as_counting_every_sentence(write_file, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = write_file("g.jsonl", CRAFTED)
    fast = jsonl_pairs.group_lines(path, options("jsonl"))
    assert fast == [0, 0, 2, 0, 4, 5, 0, 5]
    monkeypatch.setattr(jsonl_pairs, "long_enough", lambda s: count_tokens(s) >= jsonl_pairs.SHARED_MIN_TOKENS)
    assert jsonl_pairs.group_lines(path, options("jsonl")) == fast
    articles = list(jsonl_pairs.iter_articles(path, options("jsonl")))
    assert sorted(len(a.pairs or []) for a in articles) == [1, 1, 2, 4]


def test_escaped_control_character_names_its_sentence(write_file) -> None:  # type: ignore[no-untyped-def]
    path = write_file("c.jsonl", _line("a", [["Fine."], ["Fine too.", "Also fine.", "Bad \u0007 bell."]], [["Ok."]]))
    with pytest.raises(ImportFailed) as caught:
        jsonl_pairs.group_lines(path, options("jsonl"))
    assert caught.value.line == 1 and caught.value.problem.startswith("complex[1][2]: control character U+0007")
