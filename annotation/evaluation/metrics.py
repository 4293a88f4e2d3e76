"""Automatic metrics beside the human scores (no Django): SARI, Flesch-Kincaid grade, length
and BLEU.

SARI (Xu et al. 2016) averages, over n-gram orders 1..4, the F1 of added n-grams, the F1 of
kept n-grams and the precision of deleted n-grams, each judged against the references. This
implementation follows the tensor2tensor variant (``sari_hook``): n-grams are counted once per
sentence, kept/deleted n-grams are weighted by the share of references that contain them, and
it reproduces that implementation's published test values for the three outputs of the
paper's example (0.2695360, 0.6170966, 0.5088682; tested). EASSE's corpus SARI follows Xu's
original Java code and gives slightly different numbers on the same sentences (it counts
repeated n-grams; the paper itself reports 0.2683 for the first example). Sentences are
lower-cased and split on whitespace after separating punctuation (sacrebleu's 13a
tokenizer); reported SARI is the mean sentence score x 100.

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
    """Sentence SARI on token lists, in 0..1."""
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


def tokenize(text: str) -> list[str]:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()(text.lower()).split()


def sari(source: str, prediction: str, references: Sequence[str]) -> Sari:
    return sari_tokens(tokenize(source), tokenize(prediction), [tokenize(r) for r in references])


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
    system: str, sources: Sequence[str], outputs: Sequence[str], references: Sequence[Sequence[str]], language: str = "en"
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
    scores = [sari(s, o, refs) for s, o, refs in zip(sources, outputs, references, strict=True)]
    width = max(len(refs) for refs in references)
    streams = [[refs[k] if k < len(refs) else refs[0] for refs in references] for k in range(width)]
    bleu = sacrebleu.corpus_bleu(list(outputs), streams, force=True).score  # force: already-tokenized text is scored as is, without a warning

    def avg(values: list[float]) -> float:
        return round(100 * sum(values) / len(values), 2)

    return SystemMetrics(
        system, avg([s.sari for s in scores]), avg([s.add for s in scores]), avg([s.keep for s in scores]),
        avg([s.delete for s in scores]), round(bleu, 2), round(fkgl, 2), round(length, 2), n,
    )
