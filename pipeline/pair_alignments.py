"""The alignments of one document pair side by side, for its page: candidate pairs (with their
similarity), imported reference alignments, verified labels and the predictions of a chosen corpus
run (with their score or marginal), one row per sentence pair, marked by how far the sources agree.

Read-only, a handful of queries per pair; the pair page shows it through the ``pair_detail`` slot.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from alignment_engine.ids import COMPLEX, SIMPLE, sentence_id
from annotation.models import CandidatePair, VerifiedLabel
from curation.models import DocumentPair, ReferenceAlignment, Sentence
from pipeline.models import AlignmentRun, PredictedAlignment

POSITIVE = ("aligned", "partialAligned")
SOURCES = ("reference", "verified", "run")


@dataclass
class Cell:
    label: str  # aligned | partialAligned | notAligned | "" (this source says nothing)
    score: float | None = None
    implied: bool = False  # notAligned because the source covers the pair but has no row for it

    @property
    def short(self) -> str:
        return {"aligned": "aligned", "partialAligned": "partial", "notAligned": "not aligned"}.get(self.label, "—")


@dataclass
class Row:
    complex_pk: int
    simple_pk: int
    complex_sid: str
    simple_sid: str
    complex_text: str
    simple_text: str
    order: tuple[int, int]
    candidate: Cell | None = None
    cells: dict[str, Cell] = field(default_factory=dict)

    @property
    def quiet(self) -> bool:
        """No source calls it aligned or partially aligned (a candidate nobody aligned)."""
        return not any(c.label in POSITIVE for c in self.cells.values())

    @property
    def agreement(self) -> str:
        """agree: every source with a label says the same; close: they agree on aligned or not but not
        on partial; disagree: some say aligned, some not; single: only one source has a label."""
        labels = [c.label for c in self.cells.values() if c.label]
        if len(labels) < 2:
            return "single"
        if len(set(labels)) == 1:
            return "agree"
        if len({lab in POSITIVE for lab in labels}) == 1:
            return "close"
        return "disagree"


@dataclass
class Comparison:
    rows: list[Row]
    runs: list[AlignmentRun]
    run: AlignmentRun | None
    has_reference: bool
    n_candidates: int
    n_verified: int
    n_predicted: int

    @property
    def agreement_counts(self) -> dict[str, int]:
        counts = {"agree": 0, "close": 0, "disagree": 0, "single": 0}
        for row in self.rows:
            counts[row.agreement] += 1
        return counts


def _sentences(pair: DocumentPair) -> dict[int, tuple[str, str, int, int]]:
    """pk -> (formats.md id, text, side, doc position) for both documents of the pair."""
    out: dict[int, tuple[str, str, int, int]] = {}
    for doc_id, side in ((pair.complex_id, COMPLEX), (pair.simple_id, SIMPLE)):
        for pk, p, s, d, text in Sentence.objects.filter(document_id=doc_id).values_list(
            "pk", "paragraph_position", "position", "doc_position", "text"
        ):
            out[pk] = (sentence_id(pair.pair_id, side, p, s), text, side, d)
    return out


def compare(pair: DocumentPair, run_id: int | None = None) -> Comparison:
    """Every sentence pair some source mentions. ``run_id``: a run of the pair's corpus (default:
    the newest run with predictions for this pair)."""
    runs = list(AlignmentRun.objects.filter(corpus_id=pair.corpus_id).select_related("model_version").order_by("-pk")[:50])
    run = next((r for r in runs if r.pk == run_id), None)
    if run is None:
        covered = set(PredictedAlignment.objects.filter(pair=pair, run__in=runs).values_list("run_id", flat=True).distinct())
        run = next((r for r in runs if r.pk in covered), None)
    sentences = _sentences(pair)
    rows: dict[tuple[int, int], Row] = {}

    def row(complex_pk: int, simple_pk: int) -> Row:
        key = (complex_pk, simple_pk)
        if key not in rows:
            c_sid, c_text, _, c_pos = sentences.get(complex_pk, ("?", "", COMPLEX, 0))
            s_sid, s_text, _, s_pos = sentences.get(simple_pk, ("?", "", SIMPLE, 0))
            rows[key] = Row(complex_pk, simple_pk, c_sid, s_sid, c_text, s_text, (c_pos, s_pos))
        return rows[key]

    candidates = list(CandidatePair.objects.filter(pair=pair).values_list("pk", "complex_id", "simple_id", "score"))
    for _, c, s, score in candidates:
        row(c, s).candidate = Cell("", score)
    candidate_key = {pk: (c, s) for pk, c, s, _ in candidates}
    verified = list(VerifiedLabel.objects.filter(candidate__pair=pair).values_list("candidate_id", "label"))
    for candidate_id, label in verified:
        row(*candidate_key[candidate_id]).cells["verified"] = Cell(label)
    reference = list(ReferenceAlignment.objects.filter(pair=pair).values_list("complex_id", "simple_id", "label", "score"))
    for c, s, label, score in reference:
        row(c, s).cells["reference"] = Cell(label, score)
    predicted = list(PredictedAlignment.objects.filter(run=run, pair=pair).values_list("complex_id", "simple_id", "label", "score")) if run else []
    for c, s, label, score in predicted:
        row(c, s).cells["run"] = Cell(label, score)
    # a source that covers the pair says "not aligned" of every other sentence pair it leaves out
    for r in rows.values():
        if reference and "reference" not in r.cells:
            r.cells["reference"] = Cell("notAligned", implied=True)
        if predicted and "run" not in r.cells:
            r.cells["run"] = Cell("notAligned", implied=True)
    ordered = sorted(rows.values(), key=lambda r: r.order)
    return Comparison(ordered, runs, run, bool(reference), len(candidates), len(verified), len(predicted))
