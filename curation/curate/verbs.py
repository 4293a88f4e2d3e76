"""Offline "does this sentence contain a verb?" check for English and German.

No part-of-speech model is available offline here (spaCy models are not on the registry; see
``../shared/notes/offline-resources.md``), so BiSECT's "a verb in every sentence" rule uses a
small heuristic instead of a tagger:

1. a lexicon of frequent finite verbs, auxiliaries and modals (``is``, ``said``, ``hat``,
   ``wurde`` ...) - the large majority of real sentences contain one of these;
2. English suffix rules: a word ending in ``-ed`` / ``-ing`` (at least 5 letters, not in a
   small list of frequent non-verbs such as ``thing``, ``during``, ``need``), or a word
   ending in ``-s`` / ``-es`` right after a subject pronoun or ``who``/``that``;
3. German: a lower-case word (German nouns are capitalised) that is not the first word,
   at least 4 letters, ending in ``-t`` / ``-te`` / ``-ten`` / ``-en`` / ``-st`` and not in a
   stop list of function words and adjective endings.

It is a filter, not a tagger: it errs towards "has a verb". Measured on the hand-labelled
examples in ``curation/tests/test_filters.py`` (20 English, 10 German sentences and fragments).
"""

from __future__ import annotations

import re
from functools import lru_cache

WORD = re.compile(r"[^\W\d_]+", re.UNICODE)

EN_VERBS = frozenset(
    ["is", "are", "was", "were", "be", "been", "being", "am", "'s", "'re", "'m", "isn", "aren", "wasn", "weren", "has", "have", "had", "having", "hasn", "haven", "hadn", "do", "does", "did", "doesn", "don", "didn", "done", "will", "would", "can", "could", "may", "might", "shall", "should", "must", "won", "wouldn", "couldn", "shouldn", "ll", "say", "says", "said", "get", "gets", "got", "make", "makes", "made", "go", "goes", "went", "gone", "take", "takes", "took", "taken", "come", "comes", "came", "see", "sees", "saw", "seen", "know", "knows", "knew", "known", "think", "thinks", "thought", "give", "gives", "gave", "given", "find", "finds", "found", "tell", "tells", "told", "become", "becomes", "became", "leave", "leaves", "left", "feel", "feels", "felt", "put", "puts", "bring", "brings", "brought", "begin", "begins", "began", "keep", "keeps", "kept", "hold", "holds", "held", "write", "writes", "wrote", "written", "stand", "stands", "stood", "hear", "hears", "heard", "let", "lets", "mean", "means", "meant", "set", "sets", "meet", "meets", "met", "run", "runs", "ran", "pay", "pays", "paid", "sit", "sits", "sat", "speak", "speaks", "spoke", "lie", "lies", "lay", "lead", "leads", "led", "grow", "grows", "grew", "lose", "loses", "lost", "fall", "falls", "fell", "send", "sends", "sent", "build", "builds", "built", "understand", "understands", "understood", "draw", "drew", "break", "breaks", "broke", "spend", "spends", "spent", "cut", "cuts", "rise", "rises", "rose", "drive", "drives", "drove", "buy", "buys", "bought", "wear", "wears", "wore", "choose", "chose", "seek", "seeks", "sought", "throw", "threw", "catch", "caught", "deal", "deals", "dealt", "win", "wins", "won", "want", "wants", "like", "likes", "need", "needs", "use", "uses", "live", "lives", "help", "helps", "show", "shows", "call", "calls", "seem", "seems"]
)
EN_NOT_VERBS = frozenset(
    ["thing", "things", "nothing", "something", "anything", "everything", "king", "ring", "spring", "string", "during", "morning", "evening", "ceiling", "building", "bed", "red", "need", "seed", "speed", "feed", "hundred", "shed", "indeed", "ed", "bleed", "breed", "greed", "this", "is", "as", "us", "was", "has", "his", "its", "gas", "bus", "yes", "less", "plus", "thus", "always", "sometimes", "perhaps", "news", "series", "species"]
)
EN_SUBJECTS = frozenset(["he", "she", "it", "who", "that", "which", "this", "one", "everyone", "someone", "nobody"])

DE_VERBS = frozenset(
    ["ist", "sind", "war", "waren", "bin", "bist", "seid", "sei", "wäre", "wären", "gewesen", "sein", "hat", "haben", "hatte", "hatten", "habe", "hast", "habt", "hätte", "hätten", "wird", "werden", "wurde", "wurden", "worden", "werde", "wirst", "würde", "würden", "kann", "können", "konnte", "konnten", "muss", "müssen", "musste", "mussten", "soll", "sollen", "sollte", "sollten", "darf", "dürfen", "durfte", "will", "wollen", "wollte", "wollten", "mag", "mögen", "möchte", "möchten", "gibt", "gab", "geben", "sagt", "sagte", "sagen", "geht", "ging", "gehen", "kommt", "kam", "kommen", "macht", "machte", "machen", "steht", "stand", "stehen", "liegt", "lag", "sieht", "sah", "heißt", "hieß", "bleibt", "blieb", "lebt", "lebte", "leben"]
)
DE_NOT_VERBS = frozenset(
    ["nicht", "nichts", "jetzt", "erst", "selbst", "sonst", "bereits", "meist", "zuerst", "zuletzt", "mindestens", "höchstens", "oft", "heute", "gestern", "morgen", "seit", "welt", "mit", "bist", "einen", "keinen", "seinen", "ihren", "meinen", "deinen", "unseren", "diesen", "jeden", "allen", "vielen", "anderen", "beiden", "guten", "neuen", "alten", "großen", "kleinen", "ersten", "letzten", "eigenen", "weiteren", "wichtigen", "verschiedenen", "denen", "wegen", "gegen", "unten", "oben", "hinten", "innen", "außen", "zwischen", "neben", "recht", "leicht", "schlecht", "acht", "nacht", "macht", "nächsten", "meisten"]
)
DE_SUFFIXES = ("ten", "te", "en", "st", "t")


def _has_verb_en(tokens: list[str]) -> bool:
    lower = [t.lower() for t in tokens]
    for i, word in enumerate(lower):
        if word in EN_VERBS:
            return True
        if word in EN_NOT_VERBS:
            continue
        if len(word) >= 5 and (word.endswith("ed") or word.endswith("ing")):
            return True
        if i > 0 and lower[i - 1] in EN_SUBJECTS and len(word) >= 3 and word.endswith("s"):
            return True
    return False


def _has_verb_de(tokens: list[str]) -> bool:
    for i, word in enumerate(tokens):
        lower = word.lower()
        if lower in DE_VERBS:
            return True
        if i == 0 or word[:1].isupper() or lower in DE_NOT_VERBS or len(lower) < 4:
            continue
        if lower.endswith(("ische", "ischen", "lichen", "igen", "enen")):
            continue
        if lower.endswith(DE_SUFFIXES):
            return True
    return False


@lru_cache(maxsize=65536)
def has_verb(sentence: str, language: str = "en") -> bool:
    """Cached per sentence: an export asks for the same sentence once per group it is in."""
    tokens = WORD.findall(sentence)
    if language.startswith("de"):
        return _has_verb_de(tokens)
    return _has_verb_en(tokens)
