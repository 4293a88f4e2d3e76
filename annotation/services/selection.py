"""Which candidate pairs a labeling job asks people to label: all of them (the default), a seeded
random sample, or the ones the promoted model is least sure about (active learning), optionally
with a share of the budget drawn at random (``random_share``: a mixed batch).

The scoring is the engine's (:mod:`alignment_engine.active`: exact CRF marginals closest to 0.5 or
their entropy, disagreement of the two CRF directions or of two model versions, document pairs
with the lowest expected F1), with a cap per document pair so one document does not take the
whole batch. Model versions belong to the pipeline, a floor above: the ``pipeline`` app
registers, in its ``AppConfig.ready()``, a :class:`ModelSource` that finds a language's promoted
model directory (and any other version's), so this module never imports the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from alignment_engine import active
from annotation.models import CandidatePair
from curation.plain import load_plain_pairs

ALL = "all"
RANDOM = "random"
SELECTIONS: tuple[str, ...] = (ALL, RANDOM, *active.STRATEGIES)
SELECTION_CHOICES: list[tuple[str, str]] = [
    (ALL, "every candidate pair"), (RANDOM, "a random sample"),
    *((name, f"uncertainty: {active.STRATEGY_HELP[name]}") for name in active.STRATEGIES),
]


class SelectionError(ValueError):
    """The selection cannot be made (no promoted CRF model, bad budget...)."""


@dataclass(frozen=True)
class ModelSource:
    choices: Callable[[], list[tuple[int, str]]]  # [(model version id, label)] of trained versions
    model_dir: Callable[[str, int | None], tuple[str, str]]  # (language, version id or None = promoted) -> (dir, name)


_registered: list[ModelSource] = []


def register(source: ModelSource) -> None:
    """Set the model source (registering again replaces it)."""
    _registered[:] = [source]


def model_choices() -> list[tuple[int, str]]:
    return _registered[0].choices() if _registered else []


def _model_dir(language: str, version: int | None) -> tuple[str, str]:
    if not _registered:
        raise SelectionError("no model source is installed (the pipeline app registers one)")
    return _registered[0].model_dir(language, version)


@dataclass(frozen=True)
class Selection:
    strategy: str = ALL
    budget: int | None = None  # items to choose; None: all (strategy "all") or required
    per_document: int | None = None  # cap per document pair; None: ceil(3 * budget / document pairs)
    seed: int = 0
    second_version: int | None = None  # strategy "versions": the model version to disagree with
    random_share: float = 0.0  # uncertainty strategies: share of the budget drawn at random (a mixed batch)

    def __post_init__(self) -> None:
        if self.strategy not in SELECTIONS:
            raise SelectionError(f"unknown selection {self.strategy!r}; choose one of {', '.join(SELECTIONS)}")
        if self.strategy != ALL and (self.budget is None or self.budget < 1):
            raise SelectionError(f"selection {self.strategy!r} needs a budget (how many pairs to label) of at least 1")
        if self.per_document is not None and self.per_document < 1:
            raise SelectionError("the cap per document pair must be at least 1")
        if self.strategy == "versions" and self.second_version is None:
            raise SelectionError("selection 'versions' needs a second model version")
        if not 0.0 <= self.random_share <= 1.0:
            raise SelectionError(f"the random share must be between 0 and 1, got {self.random_share}")
        if self.random_share and self.strategy in (ALL, RANDOM):
            raise SelectionError("a random share mixes an uncertainty strategy with random pairs: "
                                 "choose an uncertainty strategy")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Chosen = tuple[int, float | None, str]  # (candidate pk, score, reason)


def choose(candidate_pks: Sequence[int], selection: Selection, language: str,
           aligner_loader: Callable[[str], Any] | None = None) -> tuple[list[Chosen], dict[str, Any]]:
    """The candidates to label, in order, with their score and the reason each was chosen, and what
    the job records about the selection (strategy, model, cap). ``aligner_loader`` (a model directory
    -> aligner; default ``api.load_aligner("crf", dir)``) lets a test pass a trained model."""
    pks = list(dict.fromkeys(candidate_pks))
    if selection.strategy == ALL:
        return [(pk, None, "") for pk in pks], selection.to_dict()
    rows = list(CandidatePair.objects.filter(pk__in=pks).values_list("pk", "pair_id", "simple_id", "complex_id"))
    order = {pk: i for i, pk in enumerate(pks)}
    rows.sort(key=lambda r: order[r[0]])
    n_docs = len({r[1] for r in rows}) or 1
    budget = int(selection.budget or 0)
    cap = selection.per_document or active.default_cap(budget, n_docs)
    record = selection.to_dict() | {"per_document": cap}
    if selection.strategy == RANDOM:
        picked = active.random_select(rows, budget, selection.seed, document_of=lambda r: r[1], per_document=cap)
        return [(r[0], None, f"random sample (seed {selection.seed})") for r in picked], record
    load = aligner_loader or _load_crf
    model_dir, model_name = _model_dir(language, None)
    probs, cands = _probabilities(rows, load(model_dir))
    other = None
    if selection.strategy == "versions":
        other_dir, other_name = _model_dir(language, selection.second_version)
        other, _ = _probabilities(rows, load(other_dir))
        record["second_model"] = other_name
    record["model"] = model_name
    scored = active.score_candidates(selection.strategy, cands, probs, other)
    if selection.random_share:
        picked_scored = active.mixed_select(scored, budget, selection.random_share, selection.seed, cap)
    else:
        picked_scored = active.select(scored, budget, cap)
    return [(int(s.key), s.score, s.reason[:300]) for s in picked_scored], record  # type: ignore[call-overload]


def _load_crf(model_dir: str) -> Any:
    from alignment_engine import api

    return api.load_aligner("crf", model_dir, device="cpu")


def _probabilities(rows: Sequence[tuple[int, int, int, int]], aligner: Any
                   ) -> tuple[dict[int, active.CellProbabilities], list[active.Candidate]]:
    """The model's cell probabilities per document pair of ``rows`` and the rows as engine candidates."""
    plains = load_plain_pairs(sorted({r[1] for r in rows}))
    try:
        probs = active.model_probabilities(aligner, [p.doc for p in plains])
    except ValueError as exc:
        raise SelectionError(str(exc)) from None
    by_pair = {plain.pk: prob for plain, prob in zip(plains, probs, strict=True)}
    position: dict[int, int] = {}
    for plain in plains:
        for i, sid in enumerate(plain.doc.simple_ids()):
            position[plain.sentence_pk[sid]] = i
        for j, cid in enumerate(plain.doc.complex_ids()):
            position[plain.sentence_pk[cid]] = j
    cands = [active.Candidate(pk, pair, position[s], position[c]) for pk, pair, s, c in rows
             if s in position and c in position]
    return by_pair, cands  # type: ignore[return-value]
