"""SentenceId: one parser and formatter of ``<pair_id>-<side>-<paragraph>-<sentence>``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alignment_engine.ids import COMPLEX, SIMPLE, SentenceId, check_pair_id, pair_id_problem, sentence_id

pair_ids = st.text(
    st.characters(blacklist_characters="-", blacklist_categories=("Cc", "Zs", "Zl", "Zp", "Cs")),
    min_size=1,
    max_size=40,
)


@given(pair_ids, st.sampled_from([SIMPLE, COMPLEX]), st.integers(0, 10_000), st.integers(0, 10_000))
def test_format_and_parse_round_trip(pair_id: str, side: int, paragraph: int, sentence: int) -> None:
    sid = SentenceId(pair_id, side, paragraph, sentence)
    assert SentenceId.parse(str(sid)) == sid
    assert str(sid) == sentence_id(pair_id, side, paragraph, sentence)


def test_parse_reads_the_formats_examples() -> None:
    sid = SentenceId.parse("399_620677-0-3-7")
    assert (sid.pair_id, sid.side, sid.paragraph, sid.sentence) == ("399_620677", 0, 3, 7)
    assert sid.is_simple and sid.position == (3, 7)
    assert SentenceId.parse("amazon.adv_int-1-0-12").pair_id == "amazon.adv_int"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("86-1-0", "not a sentence id"),
        ("-1-0-0", "not a sentence id"),
        ("86-2-0-0", "side must be 0"),
        ("86-1-x-0", "non-negative integers"),
        ("86-1-0-²", "non-negative integers"),
        ("a b-1-0-0", "may not contain"),
    ],
)
def test_parse_names_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        SentenceId.parse(text)


def test_pair_id_rules() -> None:
    assert pair_id_problem("amazon.adv_int") is None
    assert check_pair_id("86") == "86"
    for bad in ("", "a-b", "a\x00b", "x" * 201, 5):
        assert pair_id_problem(bad) is not None
    with pytest.raises(ValueError, match="at most 200"):
        check_pair_id("x" * 300)
