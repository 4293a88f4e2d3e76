"""Sentence-level GLEU (Wu et al. 2016, "Google's Neural Machine Translation System", sec. 8).

For one hypothesis and one reference, collect all 1- to 4-grams of each; GLEU is the minimum
of n-gram recall and n-gram precision, i.e. ``matches / max(|hyp n-grams|, |ref n-grams|)``.
It is symmetric in its two arguments and lies in [0, 1]. This matches
``nltk.translate.gleu_score.sentence_gleu`` (min_len=1, max_len=4) on lower-cased tokens; it
is the score the Wiki-Auto release filtered on (keep pairs with 0.1 <= GLEU <= 0.9).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from alignment_engine.text import tokenize


def ngram_counts(tokens: Sequence[str], min_n: int = 1, max_n: int = 4) -> Counter[tuple[str, ...]]:
    counts: Counter[tuple[str, ...]] = Counter()
    for n in range(min_n, max_n + 1):
        counts.update(zip(*(tokens[i:] for i in range(n)), strict=False))
    return counts


def sentence_gleu_tokens(hypothesis: Sequence[str], reference: Sequence[str], min_n: int = 1, max_n: int = 4) -> float:
    hyp = ngram_counts(hypothesis, min_n, max_n)
    ref = ngram_counts(reference, min_n, max_n)
    total = max(sum(hyp.values()), sum(ref.values()))
    if total == 0:
        return 0.0
    matches = sum((hyp & ref).values())
    return matches / total


# One sentence's n-grams are counted once however many rows it is in (a complex sentence is in
# several links and, in leveled corpora, in every pair of its document). Rows arrive pair by
# pair and article by article, so a small cache sees nearly every repeat; each entry holds
# about a hundred n-grams, so the cache stays near 15 MiB.
NGRAM_CACHE_SIZE = 1024


@lru_cache(maxsize=NGRAM_CACHE_SIZE)
def _sentence_ngrams(text: str) -> tuple[frozenset[object], int]:
    """A sentence's 1-4-gram multiset as a plain set, and its size. Unigrams are the token
    strings, longer n-grams tuples of them; the k-th occurrence (k >= 2) of an n-gram ``g`` is
    the element ``(g, k)``, which equals no n-gram (its last item is an int). The size of the
    intersection of two such sets is the sum over n-grams of the smaller count, i.e. the
    clipped matches of :func:`sentence_gleu_tokens`, in one C-level set operation."""
    t = tokenize(text.lower())
    grams: list[object] = [*t, *zip(t, t[1:], strict=False), *zip(t, t[1:], t[2:], strict=False),
                           *zip(t, t[1:], t[2:], t[3:], strict=False)]
    counts = Counter(grams)  # one C-level pass; its keys are the distinct n-grams
    if len(counts) == len(grams):
        return frozenset(counts), len(grams)
    return frozenset(counts).union([(g, k) for g, c in counts.items() if c > 1 for k in range(2, c + 1)]), len(grams)


def sentence_gleu(hypothesis: str, reference: str) -> float:
    """GLEU of two sentences, tokenized with ``alignment_engine.text.tokenize`` and lower-cased
    (equal to :func:`sentence_gleu_tokens` on those tokens; each sentence's n-grams are cached)."""
    hyp, hyp_total = _sentence_ngrams(hypothesis)
    ref, ref_total = _sentence_ngrams(reference)
    total = max(hyp_total, ref_total)
    if total == 0:
        return 0.0
    return len(hyp & ref) / total
