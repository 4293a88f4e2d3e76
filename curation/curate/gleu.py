"""Sentence-level GLEU (Wu et al. 2016, "Google's Neural Machine Translation System", sec. 8).

For one hypothesis and one reference, collect all 1- to 4-grams of each; GLEU is the minimum
of n-gram recall and n-gram precision, i.e. ``matches / max(|hyp n-grams|, |ref n-grams|)``.
It is symmetric in its two arguments and lies in [0, 1]. This matches
``nltk.translate.gleu_score.sentence_gleu`` (min_len=1, max_len=4) on lower-cased tokens; it
is the score the Wiki-Auto release filtered on (keep pairs with 0.1 <= GLEU <= 0.9).

:func:`gleu_scores` scores many pairs at once (an export passes the rows of one document pair)
with numpy instead of one Python ``Counter`` of n-gram tuples per sentence (~100 us a sentence):

- tokens: each whitespace-separated chunk of the lower-cased text is tokenized once per process
  (a bounded table: chunk -> token ids), so a sentence is ``lower().split()`` and one dict look-up
  per chunk, all in C;
- n-grams: every distinct n-gram of the call gets a dense integer id, order by order: the id of
  an n-gram is the rank of ``(id of its first n-1 tokens, id of its last token)`` (``np.unique``),
  so no tuple is built or hashed;
- clipped matches: per sentence the count of each n-gram id, as one sorted array of
  ``(sentence, n-gram)`` keys; per row each n-gram of the hypothesis is looked up under the
  reference (``np.searchsorted``) and a hit adds the smaller of the two counts.

The result equals :func:`sentence_gleu_tokens` on ``tokenize(text.lower())`` exactly (same integer
counts, one IEEE division); a randomized test checks it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import chain

import numpy as np

from alignment_engine.text import TOKEN_RE
from curation.curate.text import SEPARATOR, Ids, joined_chunks


def ngram_counts(tokens: Sequence[str], min_n: int = 1, max_n: int = 4) -> Counter[tuple[str, ...]]:
    counts: Counter[tuple[str, ...]] = Counter()
    for n in range(min_n, max_n + 1):
        counts.update(zip(*(tokens[i:] for i in range(n)), strict=False))
    return counts


def sentence_gleu_tokens(hypothesis: Sequence[str], reference: Sequence[str], min_n: int = 1, max_n: int = 4) -> float:
    """The reference form: two ``Counter``\\ s of n-gram tuples."""
    hyp = ngram_counts(hypothesis, min_n, max_n)
    ref = ngram_counts(reference, min_n, max_n)
    total = max(sum(hyp.values()), sum(ref.values()))
    if total == 0:
        return 0.0
    matches = sum((hyp & ref).values())
    return matches / total


MAX_N = 4
# Distinct chunks ("said", "river.", "don't" ...) remembered with their token ids; the table is
# emptied when it grows past this (a real corpus has a few hundred thousand distinct chunks, most
# of the text is the frequent ones), so it stays under ~10 MiB.
CHUNK_TABLE_SIZE = 65_536


class _ChunkTable:
    """Chunk id -> its tokens' ids (``TOKEN_RE`` on the chunk; a whitespace-free chunk has >= 1 token,
    and tokenizing a text equals tokenizing its chunks one after the other, since no token holds
    whitespace), as numpy arrays grown on demand."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.chunks = Ids()
        self.tokens = Ids()
        self.counts = np.zeros(0, dtype=np.int64)  # tokens per chunk id
        self.starts = np.zeros(0, dtype=np.int64)  # where each chunk's tokens start in ``ids``
        self.ids = np.zeros(0, dtype=np.int64)

    def chunk_ids(self, chunks: list[str]) -> np.ndarray:
        if len(self.chunks) > CHUNK_TABLE_SIZE:
            self.reset()  # start over: bounded memory
        ids = np.fromiter(map(self.chunks.__getitem__, chunks), dtype=np.int64, count=len(chunks))
        if self.chunks.fresh:
            new = [[c] if c.isalnum() else TOKEN_RE.findall(c) for c in self.chunks.take_fresh()]
            counts = np.fromiter(map(len, new), dtype=np.int64, count=len(new))
            token_ids = np.fromiter(map(self.tokens.__getitem__, chain.from_iterable(new)), dtype=np.int64, count=int(counts.sum()))
            self.starts = np.concatenate((self.starts, len(self.ids) + np.cumsum(counts) - counts))
            self.counts = np.concatenate((self.counts, counts))
            self.ids = np.concatenate((self.ids, token_ids))
        return ids


_table = _ChunkTable()


def _spread(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])`` without the Python loop."""
    total = int(counts.sum())
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (np.cumsum(counts) - counts), counts)


def gleu_scores(pairs: Sequence[tuple[str, str]], max_n: int = MAX_N) -> list[float]:
    """GLEU of each ``(hypothesis, reference)``: ``sentence_gleu_tokens`` of their lower-cased
    ``tokenize`` tokens, for all pairs in a few numpy calls (see the module docstring)."""
    if not pairs:
        return []
    hyps, refs = [h for h, _ in pairs], [r for _, r in pairs]
    index = {text: i for i, text in enumerate(dict.fromkeys(chain(hyps, refs)))}  # distinct sentences of the call
    hyp = np.fromiter(map(index.__getitem__, hyps), dtype=np.int64, count=len(pairs))
    ref = np.fromiter(map(index.__getitem__, refs), dtype=np.int64, count=len(pairs))
    n_sent = len(index)
    joined = joined_chunks(list(index), lower=True)
    if joined is not None:
        chunks = _table.chunk_ids(joined)
        separator = chunks == _table.chunks.get(SEPARATOR, -1)
        text_of = np.cumsum(separator)[~separator]
        chunks = chunks[~separator]
    else:
        split = [text.lower().split() for text in index]
        chunks = _table.chunk_ids(list(chain.from_iterable(split)))
        text_of = np.repeat(np.arange(n_sent), np.fromiter(map(len, split), dtype=np.int64, count=n_sent))
    per_chunk = _table.counts[chunks]
    codes = _table.ids[_spread(_table.starts[chunks], per_chunk)]  # every token of every sentence
    lens = np.bincount(text_of, weights=per_chunk, minlength=n_sent).astype(np.int64)
    n_tokens = len(codes)
    vocabulary = max(len(_table.tokens), 1)
    sentence = np.repeat(np.arange(n_sent, dtype=np.int64), lens)
    left = np.repeat(np.cumsum(lens), lens) - np.arange(n_tokens, dtype=np.int64)  # tokens from here to the end
    sentences, grams = [sentence], [codes]  # unigram ids: the token ids
    offset = vocabulary
    prefix = codes  # id of the (n-1)-gram starting at each position
    for n in range(2, max_n + 1):
        at = np.flatnonzero(left >= n)
        if not len(at):
            break
        distinct, ids = np.unique(prefix[at] * vocabulary + codes[at + n - 1], return_inverse=True)
        prefix = np.zeros(n_tokens, dtype=np.int64)
        prefix[at] = ids
        sentences.append(sentence[at])
        grams.append(ids + offset)
        offset += len(distinct)
    width = offset  # n-gram ids of every order are below this
    keys, counts = np.unique(np.concatenate(sentences) * width + np.concatenate(grams), return_counts=True)
    key_sentence = keys // width
    key_gram = keys - key_sentence * width
    degree = np.bincount(key_sentence, minlength=n_sent)  # distinct n-grams per sentence
    first = np.cumsum(degree) - degree
    # each row's hypothesis n-grams, looked up among its reference's: a hit adds the smaller count
    at = _spread(first[hyp], degree[hyp])
    wanted = np.repeat(ref, degree[hyp]) * width + key_gram[at]
    found = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    hit = keys[found] == wanted
    clipped = np.where(hit, np.minimum(counts[at], counts[found]), 0)
    matches = np.bincount(np.repeat(np.arange(len(pairs)), degree[hyp]), weights=clipped, minlength=len(pairs))
    ngrams = np.zeros(n_sent, dtype=np.int64)  # 1- to max_n-grams of each sentence
    for n in range(1, max_n + 1):
        ngrams += np.maximum(lens - n + 1, 0)
    total = np.maximum(ngrams[hyp], ngrams[ref]).astype(np.float64)
    return np.divide(matches, total, out=np.zeros(len(pairs)), where=total > 0).tolist()  # type: ignore[no-any-return]


def sentence_gleu(hypothesis: str, reference: str) -> float:
    """GLEU of two sentences, tokenized with ``alignment_engine.text.tokenize`` and lower-cased."""
    return gleu_scores([(hypothesis, reference)])[0]
