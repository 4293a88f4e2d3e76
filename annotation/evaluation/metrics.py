"""Automatic metrics beside the human scores (no Django): SARI, Flesch-Kincaid grade, length
and BLEU.

SARI (Xu et al. 2016) averages, over n-gram orders 1..4, a score for added n-grams, one for
kept n-grams and the precision of deleted n-grams, each judged against the references. Two
variants, both checked against published values on the paper's example (source "About 95
species are currently accepted .", three references, three outputs; tested):

- ``xu`` (the default): the algorithm of Xu et al.'s released code, which EASSE's
  ``sari_sentence`` follows: n-gram counts multiplied by the number of references, kept and
  deleted n-grams weighted by how many references hold them. It gives 26.8278, 58.8999 and
  50.7161 for the three outputs, EASSE's values (the paper prints 0.2683 for the first);
- ``t2t``: tensor2tensor's ``sari_hook``: n-grams counted once per sentence, the keep recall
  computed as the paper defines it (tensor2tensor notes the original code's keep-recall bug).
  It gives 0.2695360, 0.6170966 and 0.5088682, tensor2tensor's test values.

Sentences are lower-cased and split after separating punctuation (sacrebleu's 13a
tokenizer, as EASSE does by default); a system's SARI is the mean of its sentence scores x 100
(EASSE's ``corpus_sari`` pools the n-gram statistics over the corpus instead, so corpus
figures can differ slightly from it).

BLEU is sacrebleu's corpus BLEU (13a tokenizer, default smoothing). FKGL is the Flesch-Kincaid
grade of all outputs of a system joined, with textstat's formula; textstat itself looks
syllables up in NLTK's cmudict, a download that fails offline, so the grade comes from
``curation.curate.readability`` (pyphen syllables, textstat's own fallback). Length is mean
tokens per output.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

MAX_N = 4


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter({tuple(tokens[i:i + n]): 1 for i in range(len(tokens) - n + 1)})


def _f(true_positives: float, selected: float, relevant: float, beta: float = 1.0) -> float:
    precision = true_positives / selected if selected > 0 else 1.0
    if beta == 0:
        return precision
    recall = true_positives / relevant if relevant > 0 else 1.0
    if precision <= 0 or recall <= 0:
        return 0.0
    b2 = beta * beta
    return (1 + b2) * precision * recall / (b2 * precision + recall)


def keep_score(source: Counter, prediction: Counter, target: Counter) -> float:  # type: ignore[type-arg]
    kept = source & prediction
    wanted = source & target
    return _f(sum((kept & wanted).values()), sum(kept.values()), sum(wanted.values()))


def deletion_score(source: Counter, prediction: Counter, target: Counter, beta: float = 0.0) -> float:  # type: ignore[type-arg]
    deleted = source - prediction
    should = source - target
    return _f(sum((deleted & should).values()), sum(deleted.values()), sum(should.values()), beta)


def addition_score(source: Counter, prediction: Counter, target: Counter) -> float:  # type: ignore[type-arg]
    added = prediction - source
    return _f(sum((added & target).values()), sum(added.values()), sum((target - source).values()))


@dataclass(frozen=True)
class Sari:
    sari: float
    keep: float
    add: float
    delete: float


def sari_tokens(source: Sequence[str], prediction: Sequence[str], references: Sequence[Sequence[str]], max_n: int = MAX_N) -> Sari:
    """Sentence SARI on token lists as tensor2tensor computes it, in 0..1."""
    keeps, adds, deletes = [], [], []
    for n in range(1, max_n + 1):
        src, pred = _ngrams(source, n), _ngrams(prediction, n)
        weighted: Counter[tuple[str, ...]] = Counter()
        nonempty = 0
        for ref in references:
            grams = _ngrams(ref, n)
            if grams:
                weighted += grams
                nonempty += 1
        binary: Counter[tuple[str, ...]] = Counter()
        for gram in list(weighted):
            weighted[gram] = weighted[gram] / nonempty  # type: ignore[assignment]
            binary[gram] = 1
        keeps.append(keep_score(src, pred, weighted))
        deletes.append(deletion_score(src, pred, weighted))
        adds.append(addition_score(src, pred, binary))
    keep, add, delete = sum(keeps) / max_n, sum(adds) / max_n, sum(deletes) / max_n
    return Sari((keep + add + delete) / 3, keep, add, delete)


def _grams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def _xu_order(source: list[tuple[str, ...]], prediction: list[tuple[str, ...]], references: list[list[tuple[str, ...]]]) -> tuple[float, float, float]:
    """``(keep F1, deletion precision, addition F1)`` of one n-gram order, Xu et al.'s way."""
    k = len(references)
    in_refs: Counter[tuple[str, ...]] = Counter(g for ref in references for g in ref)
    src = Counter({g: c * k for g, c in Counter(source).items()})
    pred = Counter({g: c * k for g, c in Counter(prediction).items()})
    kept = src & pred
    kept_good = kept & in_refs
    kept_wanted = src & in_refs
    # sums over kept_good: every other kept n-gram adds 0 (and may be absent from kept_wanted)
    keep_p = sum(kept_good[g] / kept[g] for g in kept_good) / len(kept) if kept else 0.0
    keep_r = sum(kept_good[g] / kept_wanted[g] for g in kept_good) / len(kept_wanted) if kept_wanted else 0.0
    keep = 2 * keep_p * keep_r / (keep_p + keep_r) if keep_p + keep_r > 0 else 0.0
    deleted = src - pred
    deleted_good = deleted - in_refs
    delete = sum(deleted_good[g] / deleted[g] for g in deleted_good) / len(deleted) if deleted else 0.0
    added = set(pred) - set(src)
    added_good = added & set(in_refs)
    wanted = set(in_refs) - set(src)
    add_p = len(added_good) / len(added) if added else 0.0
    add_r = len(added_good) / len(wanted) if wanted else 0.0
    add = 2 * add_p * add_r / (add_p + add_r) if add_p + add_r > 0 else 0.0
    return keep, delete, add


def sari_xu_tokens(source: Sequence[str], prediction: Sequence[str], references: Sequence[Sequence[str]], max_n: int = MAX_N) -> Sari:
    """Sentence SARI on token lists as Xu et al.'s code and EASSE compute it, in 0..1."""
    keeps, deletes, adds = [], [], []
    for n in range(1, max_n + 1):
        keep, delete, add = _xu_order(_grams(source, n), _grams(prediction, n), [_grams(r, n) for r in references])
        keeps.append(keep)
        deletes.append(delete)
        adds.append(add)
    keep, add, delete = sum(keeps) / max_n, sum(adds) / max_n, sum(deletes) / max_n
    return Sari((keep + add + delete) / 3, keep, add, delete)


VARIANTS = ("xu", "t2t")


def tokenize(text: str) -> list[str]:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()(text.lower()).split()


def sari(source: str, prediction: str, references: Sequence[str], variant: str = "xu") -> Sari:
    if variant not in VARIANTS:
        raise ValueError(f"SARI variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    compute = sari_xu_tokens if variant == "xu" else sari_tokens
    return compute(tokenize(source), tokenize(prediction), [tokenize(r) for r in references])


@dataclass(frozen=True)
class SystemMetrics:
    system: str
    sari: float | None
    sari_add: float | None
    sari_keep: float | None
    sari_del: float | None
    bleu: float | None
    fkgl: float
    length: float
    n: int

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def system_metrics(
    system: str, sources: Sequence[str], outputs: Sequence[str], references: Sequence[Sequence[str]], language: str = "en",
    variant: str = "xu",
) -> SystemMetrics:
    """Corpus metrics of one system over aligned lists; SARI and BLEU need a reference per item."""
    import sacrebleu

    from curation.curate.readability import flesch_kincaid_grade

    if not (len(sources) == len(outputs) == len(references)):
        raise ValueError("sources, outputs and references must have one entry per item")
    n = len(outputs)
    length = sum(len(tokenize(o)) for o in outputs) / n if n else 0.0
    fkgl = flesch_kincaid_grade(" ".join(outputs), language) if n else 0.0
    if n == 0 or any(not refs for refs in references):
        return SystemMetrics(system, None, None, None, None, None, round(fkgl, 2), round(length, 2), n)
    scores = [sari(s, o, refs, variant) for s, o, refs in zip(sources, outputs, references, strict=True)]
    width = max(len(refs) for refs in references)
    streams = [[refs[k] if k < len(refs) else refs[0] for refs in references] for k in range(width)]
    bleu = sacrebleu.corpus_bleu(list(outputs), streams, force=True).score  # force: already-tokenized text is scored as is, without a warning

    def avg(values: list[float]) -> float:
        return round(100 * sum(values) / len(values), 2)

    return SystemMetrics(
        system, avg([s.sari for s in scores]), avg([s.add for s in scores]), avg([s.keep for s in scores]),
        avg([s.delete for s in scores]), round(bleu, 2), round(fkgl, 2), round(length, 2), n,
    )
