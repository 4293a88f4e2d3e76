"""What changes between two alignment runs (or two model versions' runs) over the same corpus.

Per document pair, every predicted alignment (aligned or partialAligned) is **added** (only in
run B), **removed** (only in run A) or **kept** (in both), and belongs to the phenomenon of its
group (:func:`curation.curate.phenomena.classify`: rephrasing, copying, splitting, merging,
fusion) in the run that predicts it (B for added and kept, A for removed). Where the truth of a
sentence pair is known, a change is:

- **fixed**: an added pair that is truly aligned, or a removed pair that is not;
- **broken**: an added pair that is not aligned, or a removed pair that is;
- **unverified**: no label says.

The truth is a verified label (what training and exports use) or, failing that, an imported gold
reference alignment; a document pair with gold reference rows is annotated completely (as the
engine's scorer assumes), so its unlisted sentence pairs are not aligned. Only document pairs
that both runs aligned are compared (their chunks say which).

:func:`compute_diff` is pure (rows in, counts out; tested by hand); :func:`diff_runs` reads the
rows of two runs; :func:`write_tsv` writes the export the page and ``manage.py diff_runs`` offer.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from alignment_engine.evaluation import prf
from alignment_engine.ids import COMPLEX, SIMPLE, sentence_id
from curation.curate import phenomena as ph
from curation.models import AlignmentLabel, DocumentPair, ReferenceAlignment, Sentence
from pipeline.models import AlignmentRun, ModelVersion, PredictedAlignment

POSITIVE = frozenset({AlignmentLabel.ALIGNED.value, AlignmentLabel.PARTIAL.value})
CHANGES = ("added", "removed", "kept")
OUTCOMES = ("fixed", "broken", "unverified")
TSV_COLUMNS = ("pair_id", "change", "outcome", "phenomenon", "label_a", "label_b", "score_a", "score_b", "truth",
               "truth_source", "simple_id", "complex_id", "simple_text", "complex_text")


class DiffError(ValueError):
    """The two runs cannot be compared (different corpora, unknown run or model version)."""


@dataclass(frozen=True)
class Prediction:
    pair: int
    simple: int
    complex: int
    label: str
    score: float | None = None


@dataclass(frozen=True)
class Truth:
    aligned: bool
    source: str  # "verified" | "gold"


@dataclass
class DiffRow:
    pair: int
    simple: int
    complex: int
    change: str
    phenomenon: str
    label_a: str = ""
    label_b: str = ""
    score_a: float | None = None
    score_b: float | None = None
    truth: Truth | None = None

    @property
    def outcome(self) -> str:
        """fixed / broken / unverified for a change; "" for a kept pair."""
        if self.change == "kept":
            return ""
        if self.truth is None:
            return "unverified"
        right = self.truth.aligned if self.change == "added" else not self.truth.aligned
        return "fixed" if right else "broken"


def _counts() -> Counter[str]:
    return Counter(dict.fromkeys((*CHANGES, *OUTCOMES), 0))


@dataclass
class RunDiff:
    rows: list[DiffRow]
    pairs: list[int]  # document pairs compared, in order
    only_a: list[int] = field(default_factory=list)  # document pairs only run A aligned (left out)
    only_b: list[int] = field(default_factory=list)
    quality: dict[str, dict[str, Any]] = field(default_factory=dict)  # Task 1 P/R/F1 of "a" and "b" on known labels
    texts: Mapping[int, str] = field(default_factory=dict)  # sentence pk -> text of every predicted pair's sentences

    def totals(self, rows: Iterable[DiffRow] | None = None) -> dict[str, int]:
        """Counts of changes and outcomes, and ``net`` = fixed - broken."""
        c = _counts()
        for row in self.rows if rows is None else rows:
            c[row.change] += 1
            if row.outcome:
                c[row.outcome] += 1
        return {**c, "net": c["fixed"] - c["broken"]}

    def by_phenomenon(self, rows: Iterable[DiffRow] | None = None) -> dict[str, dict[str, int]]:
        groups: dict[str, list[DiffRow]] = defaultdict(list)
        for row in self.rows if rows is None else rows:
            groups[row.phenomenon].append(row)
        return {name: self.totals(groups[name]) for name in ph.PHENOMENA_ORDER if name in groups}

    def by_pair(self, rows: Iterable[DiffRow] | None = None) -> dict[int, list[DiffRow]]:
        out: dict[int, list[DiffRow]] = defaultdict(list)
        for row in self.rows if rows is None else rows:
            out[row.pair].append(row)
        return dict(out)

    def totals_by_pair(self, rows: Iterable[DiffRow] | None = None) -> dict[int, dict[str, int]]:
        return {pair: self.totals(items) for pair, items in self.by_pair(rows).items()}


def compute_diff(
    a: Iterable[Prediction],
    b: Iterable[Prediction],
    truth: Mapping[tuple[int, int, int], Truth],
    complete_pairs: Iterable[int] = (),
    texts: Mapping[int, str] | None = None,
    pairs: Iterable[int] | None = None,
) -> RunDiff:
    """The diff of run A and run B (see the module docstring).

    ``truth`` maps (document pair, simple pk, complex pk) to its known label; sentence pairs of ``complete_pairs``
    (document pairs with a complete gold annotation) missing from it are not aligned. ``texts``
    (sentence pk -> text) tells copying from rephrasing. ``pairs`` restricts the comparison to
    these document pairs (default: every pair either run predicts for).
    """
    complete = set(complete_pairs)
    texts = texts or {}
    a_rows = {(p.pair, p.simple, p.complex): p for p in a if p.label in POSITIVE}
    b_rows = {(p.pair, p.simple, p.complex): p for p in b if p.label in POSITIVE}
    wanted = set(pairs) if pairs is not None else {k[0] for k in a_rows} | {k[0] for k in b_rows}
    phen_a = _phenomena(a_rows, texts)
    phen_b = _phenomena(b_rows, texts)
    rows: list[DiffRow] = []
    for key in sorted(set(a_rows) | set(b_rows)):
        pair, simple, complex_ = key
        if pair not in wanted:
            continue
        pa, pb = a_rows.get(key), b_rows.get(key)
        change = "kept" if pa and pb else "added" if pb else "removed"
        known = truth.get(key)
        if known is None and pair in complete:
            known = Truth(False, "gold")
        rows.append(DiffRow(
            pair, simple, complex_, change, (phen_b if pb else phen_a)[key],
            label_a=pa.label if pa else "", label_b=pb.label if pb else "",
            score_a=pa.score if pa else None, score_b=pb.score if pb else None, truth=known,
        ))
    diff = RunDiff(rows, sorted(wanted), texts=texts)
    diff.quality = {side: _quality(rows_of, truth, complete, wanted) for side, rows_of in (("a", a_rows), ("b", b_rows))}
    return diff


def _quality(predicted: Mapping[tuple[int, int, int], Prediction], truth: Mapping[tuple[int, int, int], Truth],
             complete: set[int], wanted: set[int]) -> dict[str, Any]:
    """Task 1 P/R/F1 of one run on the judged sentence pairs: its predictions with a known truth, and
    every known aligned pair of the compared document pairs (``prf`` of the engine's scorer)."""
    keys = [k for k in predicted if k[0] in wanted]
    tp = sum(1 for k in keys if (t := truth.get(k)) is not None and t.aligned)
    judged = sum(1 for k in keys if k in truth or k[0] in complete)
    positives = sum(1 for k, t in truth.items() if t.aligned and k[0] in wanted)
    return prf(tp, judged, positives)


def _phenomena(rows: Mapping[tuple[int, int, int], Prediction], texts: Mapping[int, str]) -> dict[tuple[int, int, int], str]:
    """Phenomenon of the group of every predicted link, per document pair (curation's classifier)."""
    by_pair: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for pair, simple, complex_ in rows:
        by_pair[pair].append((complex_, simple))
    out: dict[tuple[int, int, int], str] = {}
    for pair, links in by_pair.items():
        keyed: list[tuple[Hashable, Hashable]] = [(("c", c), ("s", s)) for c, s in links]
        keyed_texts: dict[Hashable, str] = {("c", c): texts.get(c, "") for c, _ in links}
        keyed_texts.update({("s", s): texts.get(s, "\0") for _, s in links})
        for group in ph.classify(keyed, keyed_texts):
            for c in group.complex:
                for s in group.simple:
                    key = (pair, s[1], c[1])  # type: ignore[index]
                    if key in rows:
                        out[key] = group.phenomenon.value
    return out


# --- reading runs ------------------------------------------------------------------------------------


def run_for(value: str | int, corpus_id: int | None = None, model: bool = False) -> AlignmentRun:
    """A run by id, or (``model=True``) the latest run of a model version on ``corpus_id``."""
    try:
        pk = int(value)
    except (TypeError, ValueError):
        raise DiffError(f"{value!r} is not a {'model version' if model else 'run'} id") from None
    if not model:
        run = AlignmentRun.objects.filter(pk=pk).select_related("corpus").first()
        if run is None:
            raise DiffError(f"no alignment run #{pk}")
        return run
    version = ModelVersion.objects.filter(pk=pk).first()
    if version is None:
        raise DiffError(f"no model version #{pk}")
    runs = AlignmentRun.objects.filter(model_version=version).select_related("corpus")
    if corpus_id is not None:
        runs = runs.filter(corpus_id=corpus_id)
    run = runs.order_by("-created_at", "-pk").first()
    if run is None:
        where = f" on corpus #{corpus_id}" if corpus_id is not None else ""
        raise DiffError(f"model version #{pk} ({version.name}) has no alignment run{where}; align the corpus with it first")
    return run


def covered_pairs(run: AlignmentRun) -> set[int]:
    """Document pairs a run aligned: its chunks' pairs (or, for a run without chunks, its predictions')."""
    out: set[int] = set()
    for ids in run.chunks.values_list("pair_ids", flat=True):
        out.update(int(i) for i in ids)
    if not out:
        out = set(PredictedAlignment.objects.filter(run=run).values_list("pair_id", flat=True).distinct())
    return out


def _predictions(run: AlignmentRun, pairs: set[int]) -> list[Prediction]:
    qs = PredictedAlignment.objects.filter(run=run, label__in=list(POSITIVE)).values_list(
        "pair_id", "simple_id", "complex_id", "label", "score")
    return [Prediction(p, s, c, label, score) for p, s, c, label, score in qs.iterator(chunk_size=5000) if p in pairs]


def known_truth(pairs: set[int]) -> tuple[dict[tuple[int, int, int], Truth], set[int]]:
    """Known labels of sentence pairs of ``pairs`` (verified over gold) and the pairs with gold rows."""
    from annotation.models import VerifiedLabel

    truth: dict[tuple[int, int, int], Truth] = {}
    complete: set[int] = set()
    gold = ReferenceAlignment.objects.filter(pair_id__in=pairs, role=ReferenceAlignment.Role.GOLD).values_list(
        "pair_id", "simple_id", "complex_id", "label")
    for pair, s, c, label in gold.iterator(chunk_size=5000):
        complete.add(pair)
        truth[(pair, s, c)] = Truth(label in POSITIVE, "gold")
    verified = VerifiedLabel.objects.filter(candidate__pair_id__in=pairs).values_list(
        "candidate__pair_id", "candidate__simple_id", "candidate__complex_id", "label")
    for v_pair, v_simple, v_complex, v_label in verified.iterator(chunk_size=5000):
        truth[(int(v_pair), int(v_simple), int(v_complex))] = Truth(str(v_label) in POSITIVE, "verified")
    return truth, complete


def diff_runs(run_a: AlignmentRun, run_b: AlignmentRun) -> RunDiff:
    """Compare two runs of the same corpus on the document pairs both aligned."""
    if run_a.pk == run_b.pk:
        raise DiffError(f"run #{run_a.pk} compared with itself")
    if run_a.corpus_id != run_b.corpus_id:
        raise DiffError(f"run #{run_a.pk} aligned corpus #{run_a.corpus_id} and run #{run_b.pk} corpus "
                        f"#{run_b.corpus_id}: a diff needs two runs over the same corpus")
    cov_a, cov_b = covered_pairs(run_a), covered_pairs(run_b)
    both = cov_a & cov_b
    a, b = _predictions(run_a, both), _predictions(run_b, both)
    truth, complete = known_truth(both)
    sentence_pks = {p.simple for p in (*a, *b)} | {p.complex for p in (*a, *b)}
    texts = dict(Sentence.objects.filter(pk__in=sentence_pks).values_list("pk", "text"))
    diff = compute_diff(a, b, truth, complete, texts, both)
    diff.only_a, diff.only_b = sorted(cov_a - cov_b), sorted(cov_b - cov_a)
    return diff


def filter_rows(diff: RunDiff, phenomenon: str = "", outcome: str = "", change: str = "") -> list[DiffRow]:
    """Rows of one phenomenon / outcome (fixed, broken, unverified) / change (added, removed, kept); "" = any."""
    for name, value, allowed in (("phenomenon", phenomenon, ph.PHENOMENA_ORDER), ("outcome", outcome, OUTCOMES),
                                 ("change", change, CHANGES)):
        if value and value not in allowed:
            raise DiffError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return [r for r in diff.rows if (not phenomenon or r.phenomenon == phenomenon)
            and (not outcome or r.outcome == outcome) and (not change or r.change == change)]


def write_tsv(out: IO[str], rows: Iterable[DiffRow]) -> int:
    """One header line, then one line per row (formats.md sentence ids; whitespace in texts collapsed,
    so a text never holds a tab or a newline). Returns the number of rows."""
    rows = list(rows)
    names = dict(DocumentPair.objects.filter(pk__in={r.pair for r in rows}).values_list("pk", "pair_id"))
    info = {pk: (para, pos, text) for pk, para, pos, text in Sentence.objects.filter(
        pk__in={r.simple for r in rows} | {r.complex for r in rows}).values_list(
            "pk", "paragraph_position", "position", "text")}
    out.write("\t".join(TSV_COLUMNS) + "\n")
    for r in rows:
        name = names.get(r.pair, "")
        sp, ss, s_text = info.get(r.simple, (0, 0, ""))
        cp, cs, c_text = info.get(r.complex, (0, 0, ""))
        values = (name, r.change, r.outcome, r.phenomenon, r.label_a, r.label_b, _num(r.score_a), _num(r.score_b),
                  "" if r.truth is None else ("aligned" if r.truth.aligned else "notAligned"),
                  "" if r.truth is None else r.truth.source, sentence_id(name, SIMPLE, sp, ss),
                  sentence_id(name, COMPLEX, cp, cs), s_text, c_text)
        out.write("\t".join(" ".join(str(v).split()) for v in values) + "\n")
    return len(rows)


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"
