"""The neural CRF sentence aligner (Jiang et al. 2020), in both directions.

For every simple sentence ``s_i`` the forward CRF picks a label ``a_i`` in ``{0..n}`` (0 = not
aligned, ``j`` = complex sentence ``c_j``) with score
``psi(a_i, a_{i-1}) = emission(s_i, c_{a_i}) + T(a_i, a_{i-1})``:

- ``emission`` is a small network over the cell's features: the fine-tuned cross-encoder's
  logit alone (``emission="encoder"``), lexical similarity features alone (``"lexical"``), or
  both (``"encoder+lexical"``, learned weights over :func:`alignment_engine.features.lexical_features`
  plus the encoder channels).  The null label's emission is a learned linear function of the
  row's feature maxima (how good the best candidate is).
- ``T`` is a 2-layer feed-forward network over the transition features g1..g4
  (:func:`alignment_engine.features.transition_features`: jump distance in several shapes and
  the three null indicators); the first step gets a learned start score.

Training maximises the exact ``log P(gold)`` (forward algorithm, :mod:`alignment_engine.crf`);
inference is Viterbi.  One label per simple sentence cannot express n-to-1 merges or m-to-n
fusions, so a second CRF aligns the other way (complex -> simple) and the two are combined
(``combine``: forward, reverse, union, intersection, or a threshold on the exact posterior
marginals of either direction; chosen on dev).

Sequences are whole documents (``unit="document"``) or paragraph pairs after paragraph
alignment (``unit="paragraph"``: each simple paragraph against the complex paragraphs aligned
to it); with ``paragraphs="predicted"|"gold"`` and ``unit="document"`` the paragraph
alignment only masks labels outside aligned paragraphs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from alignment_engine import crf
from alignment_engine.crf_config import EMISSIONS, CRFConfig
from alignment_engine.encoders import training_threads
from alignment_engine.errors import ModelError
from alignment_engine.features import (
    ENCODER_FEATURES,
    TRANSITION_FEATURES,
    candidate_mask,
    emission_features,
    lexical_feature_names,
    lexical_features,
    start_features,
    transition_table,
)
from alignment_engine.optim import adam_epochs
from alignment_engine.paragraph_model import cell_paragraph_values, paragraph_features
from alignment_engine.paragraphs import align_paragraphs
from alignment_engine.rows import rows_from_matrix
from alignment_engine.semimarkov import decode_spans
from alignment_engine.similarity import word_incidence
from alignment_engine.stacking import (
    Decoded,
    LearnedDecoder,
    candidates,
    closure,
    extra_candidates,
    group_features,
    predict_proba,
    span_features,
)
from alignment_engine.stacking import cell_features as stack_features
from alignment_engine.types import Alignment, DocPair, ProgressCallback, distinct_sentences

COMBINES = ("forward", "reverse", "union", "intersection", "marginal_max", "marginal_mean", "union_marginal")
LEARNED = "learned"  # thresholds["combine"] of a model decided by its LearnedDecoder
#: Documents aligned together (features, the CRF batches, one call of each decoder classifier) ...
CHUNK_DOCS = 128
#: ... up to about this many sentence pairs (memory stays bounded for long documents).
CHUNK_CELLS = 200_000
#: Sequences per padded CRF batch at inference (sorted by size, so padding stays small).
CRF_INFERENCE_BATCH = 32


# ---- per-document data --------------------------------------------------------------------

@dataclass
class DocData:
    """Everything the CRF needs about one document pair (sentences flattened in document order)."""

    pair: DocPair
    simple: list[str]
    complex: list[str]
    lex: np.ndarray  # (m, n, F_lex)
    enc_prob: np.ndarray  # (m, n), 0 where not scored
    enc_scored: np.ndarray  # (m, n) bool
    allowed: np.ndarray | None = None  # (m, n) bool: inside aligned paragraphs
    links: list[tuple[int, int, float]] = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.simple), len(self.complex)


def feature_names(emission: str, context: bool = False, span: bool = False, semantic: bool = False) -> list[str]:
    if emission == "encoder":
        return list(ENCODER_FEATURES)
    if emission == "lexical":
        return lexical_feature_names(context, span, semantic)
    if emission == "encoder+lexical":
        return lexical_feature_names(context, span, semantic) + list(ENCODER_FEATURES)
    raise ValueError(f"emission must be one of {EMISSIONS}, got {emission!r}")


def config_feature_names(config: CRFConfig) -> list[str]:
    """The emission's feature names of a model trained with ``config`` (the one reader of its feature options)."""
    return feature_names(config.emission, config.context_features, config.span_emission, config.semantic)


def paragraph_allowed(pair: DocPair, links: Sequence[tuple[int, int, float]]) -> np.ndarray:
    """(m, n) bool: simple sentence i may align to complex sentence j (their paragraphs are linked)."""
    sp = np.asarray(pair.simple_paragraph_of(), dtype=np.int64)
    cp = np.asarray(pair.complex_paragraph_of(), dtype=np.int64)
    linked = np.zeros((len(pair.simple), len(pair.complex)), dtype=bool)
    for cpar, spar, _ in links:
        if 0 <= spar < linked.shape[0] and 0 <= cpar < linked.shape[1]:
            linked[spar, cpar] = True
    if sp.size == 0 or cp.size == 0:
        return np.zeros((sp.size, cp.size), dtype=bool)
    return linked[sp[:, None], cp[None, :]]


# ---- sequences ----------------------------------------------------------------------------

@dataclass
class Seq:
    """One CRF sequence: steps are ``rows`` of the doc matrix, labels 1.. are ``cols``."""

    doc: int
    rows: np.ndarray
    cols: np.ndarray
    feats: np.ndarray  # (T, n_labels-1, F) standardised
    allowed: np.ndarray  # (T, n_labels-1) bool
    gold: np.ndarray | None = None  # (T,) labels
    gold_sets: np.ndarray | None = None  # (T, n_labels) bool: every gold label of each step (0 when none)
    partial: bool = False  # the document's labels are partial: training marginalises over ``gold_sets``


#: Cells of a *known* matrix (partial labels, :func:`alignment_engine.gold.known_matrix`).
KNOWN_POSITIVE, UNKNOWN, KNOWN_NEGATIVE = 1, 0, -1


def partial_gold_sets(known: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """(T, L) label sets of one sequence from its (T, L-1) *known* block (1 labelled positive, 0 unlabelled,
    -1 not aligned): a step with a labelled positive must take one of its labelled positives; otherwise
    null or any unlabelled allowed label, never a labelled negative. A fully known block gives the
    complete-label sets (the positives, or null)."""
    has_pos = (known == KNOWN_POSITIVE).any(axis=1)
    sets = np.zeros((known.shape[0], known.shape[1] + 1), dtype=bool)
    sets[:, 0] = ~has_pos
    sets[:, 1:] = np.where(has_pos[:, None], known == KNOWN_POSITIVE, known == UNKNOWN) & allowed
    sets[~sets.any(axis=1), 0] = True  # a labelled positive outside the allowed cells: null, never an empty set
    return sets


def build_sequences(
    docs: Sequence[DocData],
    direction: str,
    config: CRFConfig,
    mean: np.ndarray,
    scale: np.ndarray,
    gold: Sequence[np.ndarray] | None = None,
    known: Sequence[np.ndarray | None] | None = None,
) -> list[Seq]:
    """Sequences of one direction ("s2c": simple steps, complex labels; "c2s": the reverse).

    ``gold[d]`` is the (m, n) 0/1 gold matrix of document ``d``; a step whose gold has several
    labels takes the one with the highest C3G similarity (the other direction covers the rest).
    ``known[d]`` (None: the labels of ``d`` are complete) is the (m, n) *known* matrix of a document
    with partial labels (1 labelled positive, 0 unlabelled, -1 not aligned): its positives are its
    gold, its sequences are marked ``partial`` and carry :func:`partial_gold_sets`, so training
    marginalises the unlabelled cells out instead of reading them as not aligned.
    """
    out: list[Seq] = []
    for d, doc in enumerate(docs):
        feats = (emission_features(doc, config.emission) - mean) / scale
        allowed = doc.allowed if doc.allowed is not None else np.ones(doc.shape, dtype=bool)
        c3g = doc.lex[:, :, 0] if doc.lex.size else np.zeros(doc.shape)
        g = None if gold is None else gold[d]
        k = None if known is None else known[d]
        if k is not None:
            g = (k == KNOWN_POSITIVE).astype(np.int64)
        if direction == "c2s":
            feats = feats.transpose(1, 0, 2)
            allowed = allowed.T
            c3g = c3g.T
            g = None if g is None else g.T
            k = None if k is None else k.T
        m, n = allowed.shape
        if config.unit == "paragraph" and doc.allowed is not None:
            para_of = np.asarray(doc.pair.simple_paragraph_of() if direction == "s2c" else doc.pair.complex_paragraph_of())
            groups = [np.flatnonzero(para_of == p) for p in np.unique(para_of)] if m else []
        else:
            groups = [np.arange(m)] if m else []
        for rows in groups:
            cols = np.flatnonzero(allowed[rows].any(axis=0)) if n else np.zeros(0, dtype=np.int64)
            sub_allowed = allowed[np.ix_(rows, cols)]
            labels = None
            sets = None
            if g is not None:
                gsub = g[np.ix_(rows, cols)] * sub_allowed
                sim = np.where(gsub > 0, c3g[np.ix_(rows, cols)] + 1.0, -1.0)
                labels = np.where(gsub.any(axis=1), sim.argmax(axis=1) + 1, 0) if cols.size else np.zeros(len(rows), dtype=np.int64)
                sets = np.concatenate([~gsub.any(axis=1, keepdims=True), gsub > 0], axis=1)
                if k is not None:
                    sets = partial_gold_sets(k[np.ix_(rows, cols)], sub_allowed)
            out.append(Seq(d, rows, cols, feats[np.ix_(rows, cols)].astype(np.float32), sub_allowed, labels, sets,
                           partial=k is not None))
    return out


@dataclass
class Batch:
    """Padded tensors of several sequences of one direction (``B`` sequences, ``T`` steps, ``L`` labels)."""

    feats: torch.Tensor  # (B, T, L-1, F) standardised cell features
    label_mask: torch.Tensor  # (B, T, L) bool, label 0 always allowed
    step_mask: torch.Tensor  # (B, T) bool
    n_labels: torch.Tensor  # (B,) long: real labels + 1 of each sequence
    gold: torch.Tensor  # (B, T) long: the gold label of each step (0 when none or unknown)
    gold_sets: torch.Tensor  # (B, T, L) bool: every gold label of each step (0 when none)
    partial: torch.Tensor  # (B,) bool: the sequence's labels are partial (``Seq.partial``)
    # what the scorer reads that no weight changes, made once per batch (a training batch is scored every epoch or
    # L-BFGS evaluation):
    cells: torch.Tensor  # (N, F) the allowed cells' features, in the order of label_mask[:, :, 1:]'s True entries
    row_max: torch.Tensor  # (B, T, F) each step's feature maxima over its allowed cells (0 for a step with none)


def collate(seqs: Sequence[Seq], device: torch.device) -> Batch:
    b = len(seqs)
    t = max(len(s.rows) for s in seqs)
    lab = max(len(s.cols) for s in seqs) + 1
    f = seqs[0].feats.shape[-1]
    label_mask = np.zeros((b, t, lab), dtype=bool)
    label_mask[:, :, 0] = True
    step_mask = np.zeros((b, t), dtype=bool)
    n_labels = np.zeros(b, dtype=np.int64)
    gold = np.zeros((b, t), dtype=np.int64)
    gold_sets = np.zeros((b, t, lab), dtype=bool)
    gold_sets[:, :, 0] = True
    for i, s in enumerate(seqs):
        tt, ll = len(s.rows), len(s.cols)
        label_mask[i, :tt, 1 : ll + 1] = s.allowed
        step_mask[i, :tt] = True
        n_labels[i] = ll + 1
        if s.gold is not None:
            gold[i, :tt] = s.gold
        if s.gold_sets is not None:
            gold_sets[i, :tt, : ll + 1] = s.gold_sets
    feats_t = crf.padded([s.feats for s in seqs], (b, t, lab - 1, f), device)
    label_t = torch.from_numpy(label_mask).to(device)
    allowed = label_t[:, :, 1:]
    return Batch(
        feats=feats_t,
        label_mask=label_t,
        step_mask=torch.from_numpy(step_mask).to(device),
        n_labels=torch.from_numpy(n_labels).to(device),
        gold=torch.from_numpy(gold).to(device),
        gold_sets=torch.from_numpy(gold_sets).to(device),
        partial=torch.tensor([s.partial for s in seqs], dtype=torch.bool, device=device),
        cells=crf.masked_rows(feats_t, allowed),
        row_max=crf.step_maxima(feats_t, allowed),
    )


# ---- the network --------------------------------------------------------------------------

class ChainScorer(nn.Module):
    """Potentials of one direction: emissions (B, T, L), transitions (B, L, L), start (B, L)."""

    def __init__(self, n_features: int, hidden: int = 32, transition_hidden: int = 16,
                 transitions: bool = True) -> None:
        super().__init__()
        self.use_transitions = transitions
        self.emit = nn.Sequential(nn.Linear(n_features, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.null = nn.Linear(n_features, 1)
        self.trans = nn.Sequential(nn.Linear(len(TRANSITION_FEATURES), transition_hidden), nn.Tanh(),
                                   nn.Linear(transition_hidden, 1))
        self.start = nn.Linear(3, 1)
        self.to(crf.DTYPE)

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        feats, label_mask = batch.feats, batch.label_mask
        b, t, l1, _ = feats.shape
        allowed = label_mask[:, :, 1:]
        # the emission network runs on allowed cells only (padding and masked labels are skipped)
        real = feats.new_full((b, t, l1), crf.NEG_INF)
        if l1:
            real[allowed] = self.emit(batch.cells).squeeze(-1).to(real.dtype)
        null = self.null(batch.row_max)  # (B, T, 1)
        emissions = torch.cat([null, real], dim=2)
        lab = l1 + 1
        trans = feats.new_zeros((b, lab, lab))
        start = feats.new_zeros((b, lab))
        if not self.use_transitions:  # ablation "without the CRF": independent per-step choices
            return emissions, trans, start
        # without gradients (inference) sequences with the same number of labels share one evaluation of
        # the transition and start networks (the values are the same); training keeps one per sequence
        shared: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        for i, n in enumerate(batch.n_labels.tolist()):
            if n in shared:
                tr, st = shared[n]
            else:
                rows, index = transition_table(n, device=feats.device)
                tr = self.trans(rows).squeeze(-1)[index]
                st = self.start(start_features(n, device=feats.device)).squeeze(-1)
                if not torch.is_grad_enabled():
                    shared[n] = (tr, st)
            trans[i, :n, :n] = tr
            start[i, :n] = st
        return emissions, trans, start


class BiCRF(nn.Module):
    """The two directions' scorers (simple->complex ``s2c`` and complex->simple ``c2s``)."""

    def __init__(self, n_features: int, hidden: int = 32, transition_hidden: int = 16,
                 transitions: bool = True) -> None:
        super().__init__()
        self.s2c = ChainScorer(n_features, hidden, transition_hidden, transitions)
        self.c2s = ChainScorer(n_features, hidden, transition_hidden, transitions)

    def direction(self, name: str) -> ChainScorer:
        return self.s2c if name == "s2c" else self.c2s

    @classmethod
    def for_config(cls, config: CRFConfig) -> BiCRF:
        """The (untrained) CRFs of ``config``: its emission's features, layer sizes and transitions."""
        n_features = len(config_feature_names(config))
        return cls(n_features, config.hidden, config.transition_hidden, config.transitions)


def _batches(seqs: list[Seq], size: int, rng: np.random.Generator | None) -> list[list[Seq]]:
    order = sorted(range(len(seqs)), key=lambda i: (len(seqs[i].cols), len(seqs[i].rows)))
    chunks = [[seqs[i] for i in order[k : k + size]] for k in range(0, len(order), size)]
    if rng is not None:
        rng.shuffle(chunks)  # type: ignore[arg-type]
    return chunks


def sequence_log_likelihood(emis: torch.Tensor, trans: torch.Tensor, start: torch.Tensor, batch: Batch,
                            gold_target: str) -> torch.Tensor:
    """(B,) training log-likelihood of a batch's sequences.

    ``gold_target="any"`` and every partial sequence: log P(path within the gold label sets), the
    constrained forward algorithm minus log Z (an n:1 step may take any of its gold labels; a step of a
    partially labelled document any label its labels leave open). ``"best"`` for complete sequences:
    log P(the gold label with the highest C3G)."""
    def constrained() -> torch.Tensor:
        return crf.log_partition(emis, trans, start=start, step_mask=batch.step_mask,
                                 label_mask=batch.gold_sets & batch.label_mask, require_null=False) - \
            crf.log_partition(emis, trans, start=start, step_mask=batch.step_mask, label_mask=batch.label_mask)

    if gold_target == "any":
        return constrained()
    best = crf.log_likelihood(emis, trans, batch.gold, start=start, step_mask=batch.step_mask,
                              label_mask=batch.label_mask)
    if bool(batch.partial.any()):
        return torch.where(batch.partial, constrained(), best)
    return best


@training_threads()
def train_crf(
    model: BiCRF,
    train: dict[str, list[Seq]],
    config: CRFConfig,
    seed: int,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Maximise sum of exact log P(gold) over both directions' sequences; returns stats.

    ``progress(message)`` is called exactly once per epoch (training's ``RunProgress`` counts on it)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    device = next(model.parameters()).device
    stats: dict = {"epochs": config.crf_epochs, "loss": []}
    batches = {d: [collate(b, device) for b in _batches([s for s in seqs if len(s.rows)], config.crf_batch, None)]
               for d, seqs in train.items()}
    total_steps = {d: sum(int(b.step_mask.sum()) for b in bs) for d, bs in batches.items()}
    if config.crf_optimizer == "lbfgs":
        return _train_lbfgs(model, batches, total_steps, config, stats, progress)

    def log_likelihood(d: str, batch: Batch) -> torch.Tensor:
        emis, trans, start = model.direction(d)(batch)
        return sequence_log_likelihood(emis, trans, start, batch, config.gold_target)

    stats["loss"] = adam_epochs(model, batches, total_steps, log_likelihood, config.crf_epochs, config.crf_lr,
                                config.crf_weight_decay, rng, progress, "crf")
    return stats


#: Iterations of one L-BFGS round (``crf_optimizer="lbfgs"``: ``crf_epochs`` rounds).
LBFGS_ITERATIONS = 10


def _train_lbfgs(model: BiCRF, batches: dict[str, list[Batch]], total_steps: dict[str, int], config: CRFConfig,
                 stats: dict, progress: Callable[[str], None] | None) -> dict:
    """Full-batch L-BFGS with a strong-Wolfe line search on the same objective as Adam's epochs (each
    direction's negative log-likelihood per step, plus ``crf_weight_decay / 2 * |w|^2``, the L2 penalty
    Adam's ``weight_decay`` adds to the gradient). No minibatch order and no learning rate: given the
    initial weights the result is deterministic, and it stops when the objective stops moving."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.LBFGS(params, lr=1.0, max_iter=LBFGS_ITERATIONS, history_size=20,
                            tolerance_grad=1e-6, tolerance_change=1e-7, line_search_fn="strong_wolfe")
    evaluations = 0

    def closure() -> torch.Tensor:
        nonlocal evaluations
        evaluations += 1
        opt.zero_grad()
        total = torch.zeros((), device=params[0].device)
        for d, bs in batches.items():
            for batch in bs:
                emis, trans, start = model.direction(d)(batch)
                ll = sequence_log_likelihood(emis, trans, start, batch, config.gold_target)
                loss = -ll.sum() / max(total_steps[d], 1)
                loss.backward()  # one batch's graph at a time: memory as in an Adam step
                total = total + loss.detach()
        penalty = 0.5 * config.crf_weight_decay * torch.stack([(p * p).sum() for p in params]).sum()
        penalty.backward()
        return total + penalty.detach()

    for epoch in range(config.crf_epochs):
        value = float(opt.step(closure))  # type: ignore[no-untyped-call]  # the objective at the round's start
        stats["loss"].append(round(value, 5))
        if progress:
            progress(f"crf epoch {epoch + 1}/{config.crf_epochs} loss {value:.4f} (L-BFGS, {evaluations} evaluations)")
    stats["evaluations"] = evaluations
    return stats


@torch.no_grad()
def decode(model: BiCRF, seqs: dict[str, list[Seq]], docs: Sequence[DocData], batch_size: int = 16
           ) -> list[Decoded]:
    """Per document: both directions' Viterbi paths and exact marginals."""
    device = next(model.parameters()).device
    out = [Decoded.empty(doc.shape) for doc in docs]
    for d, items in seqs.items():
        nonempty = [s for s in items if len(s.rows) and len(s.cols)]
        for chunk in _batches(nonempty, batch_size, None):
            batch = collate(chunk, device)
            emis, trans, start = model.direction(d)(batch)
            kw = {"start": start, "step_mask": batch.step_mask, "label_mask": batch.label_mask}
            _, path = crf.viterbi(emis, trans, **kw)
            marg = crf.marginals(emis, trans, **kw)
            path_np, marg_np = path.cpu().numpy(), marg.float().cpu().numpy()
            for i, s in enumerate(chunk):
                tt, ll = len(s.rows), len(s.cols)
                labels = path_np[i, :tt]
                v = np.zeros((tt, ll), dtype=bool)
                hit = labels > 0
                v[np.flatnonzero(hit), labels[hit] - 1] = True
                mm = marg_np[i, :tt, 1 : ll + 1]
                dec = out[s.doc]
                if d == "c2s":
                    cells = np.ix_(s.cols, s.rows)
                    dec.reverse[cells] |= v.T
                    dec.reverse_marginals[cells] = np.maximum(dec.reverse_marginals[cells], mm.T)
                else:
                    cells = np.ix_(s.rows, s.cols)
                    dec.forward[cells] |= v
                    dec.forward_marginals[cells] = np.maximum(dec.forward_marginals[cells], mm)
    return out


def combine(dec: Decoded, rule: str, threshold: float = 0.5) -> np.ndarray:
    """(m, n) bool predicted alignment of one document from both directions."""
    vf, vr, mf, mr = dec.forward, dec.reverse, dec.forward_marginals, dec.reverse_marginals
    if rule == "forward":
        return vf
    if rule == "reverse":
        return vr
    if rule == "union":
        return vf | vr
    if rule == "intersection":
        return vf & vr
    if rule == "marginal_max":
        return np.maximum(mf, mr) >= threshold
    if rule == "marginal_mean":
        return (mf + mr) / 2 >= threshold
    if rule == "union_marginal":
        return vf | (vr & (mr >= threshold)) | (np.maximum(mf, mr) >= max(threshold, 0.5))
    raise ValueError(f"combine must be one of {COMBINES}, got {rule!r}")


def partial_labels(pred: np.ndarray, lex: np.ndarray, rule: dict) -> np.ndarray:
    """(m, n) bool: which predicted pairs are partialAligned (Task 2) under ``rule``.

    ``rule = {"group": bool, "min_len_ratio": float}``: a pair is partial when one of its
    sentences takes part in several predicted pairs (a split or merge; Jiang et al.'s guideline)
    and ``group`` is set, or when the character-length ratio (short / long) is below
    ``min_len_ratio`` (one side carries much more content).
    """
    if pred.size == 0:
        return np.zeros_like(pred)
    out = np.zeros_like(pred)
    if rule.get("group"):
        row = pred.sum(axis=1, keepdims=True) > 1
        col = pred.sum(axis=0, keepdims=True) > 1
        out |= pred & (row | col)
    ratio = float(rule.get("min_len_ratio", 0.0))
    if ratio > 0 and lex.size:
        len_ratio = lex[:, :, lexical_feature_names().index("len_ratio")]
        out |= pred & (len_ratio < ratio)
    return out


# ---- the aligner --------------------------------------------------------------------------

class CRFAligner:
    """A trained neural CRF aligner (``load_aligner("crf", model_dir)``)."""

    name = "crf"

    def __init__(self, model: BiCRF, encoder, config: CRFConfig, norm: dict, thresholds: dict,  # type: ignore[no-untyped-def]
                 device: torch.device, decoder: LearnedDecoder | None = None, semi_model: nn.Module | None = None
                 ) -> None:
        self.model = model.to(device).eval()
        self.semi_model = None if semi_model is None else semi_model.eval()  # config.semicrf (CPU)
        self.decoder = decoder
        self.encoder = encoder
        self.config = config
        self.mean = np.asarray(norm["mean"], dtype=np.float32)
        self.scale = np.asarray(norm["scale"], dtype=np.float32)
        self.thresholds = thresholds
        self.device = device
        self.timings: dict[str, float] = {}
        self.counters: dict[str, int] = {}
        self.members: list[CRFAligner] = []  # the other members of a seed ensemble (config.members > 1)
        self.semantic_precision: str
        self.semantic_device: str
        self.use_precision(config.semantic_precision)  # as trained; load() sets the default
        self.chunk_size = CHUNK_DOCS
        self.chunk_cells = CHUNK_CELLS
        self.crf_batch = CRF_INFERENCE_BATCH

    @classmethod
    def load(cls, model_dir: str | Path, device: str = "auto", quantize: bool = False,
             precision: str | None = None, members: int | None = None) -> CRFAligner:
        """Load a model directory. The semantic channels' sentence encoder runs in ``precision`` (one of
        :data:`alignment_engine.crf_config.PRECISIONS`; "float32" embeds exactly as a float32 model was trained); by
        default :func:`alignment_engine.semantic.alignment_precision` (int8 on a CPU for a model trained in float32,
        docs/engine-results.md Round 16), with ``quantize=True`` :func:`alignment_engine.semantic.fast_precision`.
        ``quantize=True`` also runs a cross-encoder int8-quantized (CPU). On a GPU (``device`` "cuda") the sentence
        encoder of a float32 model runs there too, in float32 unless asked otherwise; int8 runs on the CPU.
        A seed ensemble (``config.members`` > 1) loads its other members too (:meth:`add_members`); ``members`` = k
        keeps its first k (1: member 0 alone, the single model of seed ``seed``, faster; default: all)."""
        from alignment_engine import model_store
        from alignment_engine.encoders import CrossEncoder, configure_threads, resolve_device

        dev = resolve_device(device)
        configure_threads()
        meta = model_store.read_meta(model_dir)
        config = model_store.read_config(meta, model_dir)
        model = BiCRF.for_config(config)
        model.load_state_dict(torch.load(Path(model_dir) / model_store.CRF_WEIGHTS, map_location="cpu",
                                         weights_only=True))
        encoder = None
        if config.uses_encoder:
            encoder = CrossEncoder.load(Path(model_dir) / model_store.ENCODER_DIR, device=str(dev))
            if quantize and dev.type == "cpu":
                encoder.quantize()
        semi_model = None
        if config.semicrf:
            from alignment_engine.semicrf import BiSemiCRF

            semi_model = BiSemiCRF(len(meta["normalisation"]["mean"]), config)  # the features it was trained with
            semi_model.load_state_dict(torch.load(Path(model_dir) / model_store.SEMICRF_WEIGHTS, map_location="cpu",
                                                  weights_only=True))
        decoder: LearnedDecoder | None = None
        if meta["thresholds"].get("combine") == LEARNED:
            stored = model_store.read_decoder(model_dir)
            if not isinstance(stored, LearnedDecoder):
                raise ModelError(f"{Path(model_dir) / model_store.DECODER_FILE}: not a learned decoder")
            decoder = stored
        aligner = cls(model, encoder, config, meta["normalisation"], meta["thresholds"], dev, decoder, semi_model)
        if config.semantic:
            from alignment_engine.semantic import alignment_precision, fast_precision

            if precision is None:
                trained = config.semantic_precision
                precision = fast_precision(dev.type) if quantize and trained == "float32" else alignment_precision(
                    trained, dev.type)
            aligner.use_precision(precision)
        others = model_store.member_dirs(model_dir, config.members)
        if members is not None:
            if not 1 <= members <= len(others) + 1:
                raise ModelError(f"{model_dir}: asked for {members} ensemble member(s); the model has {len(others) + 1}")
            others = others[: members - 1]
        if others:
            try:
                aligner.add_members([cls.load(d, device, quantize, aligner.semantic_precision if config.semantic else None)
                                     for d in others])
            except ModelError as e:
                raise ModelError(f"{model_dir}: {e}") from None
        return aligner

    def add_members(self, others: Sequence[CRFAligner]) -> None:
        """Make this aligner a seed ensemble of itself (member 0, whose thresholds decide) and ``others``: models of
        the same configuration, so that they share the features; their learned decoders' cell probabilities are
        averaged (docs/engine-results.md, Round 17)."""
        for k, other in enumerate(others, start=1):
            if replace(other.config, members=1) != replace(self.config, members=1) or other.decoder is None:
                raise ModelError(f"ensemble member {k} is not a learned-decoder model of member 0's configuration")
            other.timings, other.counters = self.timings, self.counters  # one account of the time spent
        self.members = list(others)

    def use_precision(self, precision: str) -> None:
        """Embed the semantic channels' sentences in ``precision`` from now on; the sentence encoder runs with the
        CRFs, except int8, which runs on the CPU only."""
        from alignment_engine.e5_small import check_precision

        device = "cpu" if precision == "int8" else self.device.type
        check_precision(precision, device)
        self.semantic_precision, self.semantic_device = precision, device
        for member in self.members:
            member.use_precision(precision)

    def prepare(self, pairs: Sequence[DocPair], links: Sequence[list[tuple[int, int, float]]] | None = None,
                progress: ProgressCallback | None = None) -> list[DocData]:
        return prepare_docs(pairs, self.config, self.encoder, links=links, progress=progress, timings=self.timings,
                            counters=self.counters, semantic_precision=self.semantic_precision,
                            semantic_device=self.semantic_device)

    def sequences(self, docs: Sequence[DocData]) -> tuple[dict[str, list[Seq]], dict | None]:
        """The CRFs' input sequences of ``docs``: the first-order CRF's, and the semi-Markov CRF's (None without it)."""
        seqs = {d: build_sequences(docs, d, self.config, self.mean, self.scale) for d in ("s2c", "c2s")}
        if self.semi_model is None:
            return seqs, None
        from alignment_engine.semicrf import span_sequences

        return seqs, span_sequences(docs, self.config, self.mean, self.scale)

    def predict_docs(self, docs: Sequence[DocData],
                     sequences: tuple[dict[str, list[Seq]], dict | None] | None = None) -> list[Decoded]:
        """Both CRFs' decodings of ``docs`` (``sequences``: :meth:`sequences` of them when already built)."""
        t0 = time.perf_counter()
        seqs, span = self.sequences(docs) if sequences is None else sequences
        dec = decode(self.model, seqs, docs, batch_size=self.crf_batch)
        if self.semi_model is not None:
            from alignment_engine.semicrf import attach_extra

            attach_extra(self.semi_model, dec, docs, self.config, self.mean, self.scale, span)  # type: ignore[arg-type]
        self.timings["crf"] = self.timings.get("crf", 0.0) + time.perf_counter() - t0
        return dec

    def member_decodings(self, docs: Sequence[DocData]) -> list[list[Decoded]]:
        """Every member's decodings of ``docs`` (member 0, this model, first; one list for a single model). Members
        share the CRFs' input sequences when their normalisations are equal (the same train data gives the same)."""
        if not self.members:
            return [self.predict_docs(docs)]
        t0 = time.perf_counter()
        shared = self.sequences(docs)
        self.timings["crf"] = self.timings.get("crf", 0.0) + time.perf_counter() - t0
        same = [np.array_equal(m.mean, self.mean) and np.array_equal(m.scale, self.scale) for m in self.members]
        return [self.predict_docs(docs, shared),
                *(m.predict_docs(docs, shared if ok else None) for m, ok in zip(self.members, same, strict=True))]

    def cell_probabilities(self, docs: Sequence[DocData], decodings: Sequence[list[Decoded]]
                           ) -> list[np.ndarray | None]:
        """(m, n) P(aligned) of every document under the learned decoder, averaged over the members of a seed
        ensemble (``decodings``: :meth:`member_decodings`); None for each document of a rule-decoder model."""
        if self.decoder is None or self.thresholds.get("combine") != LEARNED:
            return [None] * len(docs)
        t0 = time.perf_counter()
        models = [self, *self.members]
        per_member = [learned_scores_many(docs, decs, m.decoder) for m, decs in zip(models, decodings, strict=True)
                      if m.decoder is not None]
        out: list[np.ndarray | None] = [p[0] if len(p) == 1 else np.mean(p, axis=0) for p in zip(*per_member, strict=True)]
        self.timings["decoder"] = self.timings.get("decoder", 0.0) + time.perf_counter() - t0
        return out

    def chunks(self, pairs: Sequence[DocPair]) -> list[list[DocPair]]:
        """Consecutive groups of at most ``chunk_size`` documents and about ``chunk_cells`` sentence pairs
        (a long document gets a group of its own), aligned together."""
        out: list[list[DocPair]] = []
        cur: list[DocPair] = []
        cells = 0
        for pair in pairs:
            size = len(pair.simple_sentences()) * len(pair.complex_sentences())
            if cur and (len(cur) >= max(int(self.chunk_size), 1) or cells + size > self.chunk_cells):
                out.append(cur)
                cur, cells = [], 0
            cur.append(pair)
            cells += size
        if cur:
            out.append(cur)
        return out

    def align(self, pairs: Sequence[DocPair], progress: ProgressCallback | None = None) -> list[list[Alignment]]:
        out: list[list[Alignment]] = []
        total = len(pairs)
        for part in self.chunks(pairs):
            docs = self.prepare(part)
            decodings = self.member_decodings(docs)
            probs = self.cell_probabilities(docs, decodings)
            t0 = time.perf_counter()
            for doc, dec, prob in zip(docs, decodings[0], probs, strict=True):
                out.append(alignments_from(doc, dec, self.thresholds, self.decoder, prob))
            self.timings["decoder"] = self.timings.get("decoder", 0.0) + time.perf_counter() - t0
            if progress:
                progress(len(out), total)
        if progress and total == 0:
            progress(0, 0)
        return out


def doc_paragraph_features(doc: DocData, dec: Decoded) -> np.ndarray:
    """(k, l, F) features of the learned paragraph step (:mod:`alignment_engine.paragraph_model`)."""
    c3g = doc.lex[:, :, 0] if doc.lex.size else np.zeros(doc.shape)
    return paragraph_features(c3g, doc.pair.simple, doc.pair.complex, dec.forward_marginals, dec.reverse_marginals,
                              dec.forward | dec.reverse)


def doc_cell_features(doc: DocData, dec: Decoded, para_prob: np.ndarray | None,
                      span: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Features of the candidate cells of one document (N, F) and the (m, n) candidate mask.

    ``para_prob`` is the (k, l) paragraph-link probability (None without the paragraph step); ``span``
    adds the group-level word-cover channels of :func:`alignment_engine.stacking.span_features`.
    """
    mask = candidates(dec.forward_marginals, dec.reverse_marginals, dec.forward, dec.reverse)
    if dec.extra is not None:  # the second model's candidates too
        mask |= extra_candidates(dec.extra)
    cells = None if para_prob is None else cell_paragraph_values(para_prob, doc.pair.simple, doc.pair.complex)
    spans = None
    if span:
        s_words, c_words = word_incidence(doc.simple, doc.complex)
        spans = span_features(s_words, c_words, np.maximum(dec.forward_marginals, dec.reverse_marginals))
    feats = stack_features(dec.forward_marginals, dec.reverse_marginals, dec.forward, dec.reverse, doc.lex, cells,
                           spans)
    if dec.extra is not None:  # the candidates' rows only (not every cell's: Round 26)
        return np.concatenate([feats[mask], dec.extra[mask].astype(np.float32)], axis=-1), mask
    return feats[mask], mask


def paragraph_probabilities(doc: DocData, dec: Decoded, decoder: LearnedDecoder) -> np.ndarray:
    """(k, l) P(paragraph pair linked) of the learned paragraph step."""
    feats = doc_paragraph_features(doc, dec)
    k, l_, f = feats.shape
    return predict_proba(decoder.paragraph_model, feats.reshape(k * l_, f)).reshape(k, l_)


def _predict_split(model: object, xs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``predict_proba`` of several documents' feature rows in one call (the classifiers decide each row
    on its own, so the probabilities equal those of one call per document), split back per document."""
    sizes = [len(x) for x in xs]
    if not sizes or sum(sizes) == 0:
        return [np.zeros(n, dtype=np.float64) for n in sizes]
    probs = predict_proba(model, np.concatenate([x for x in xs if len(x)], axis=0))
    return np.split(probs, np.cumsum(sizes)[:-1])


def learned_scores_many(docs: Sequence[DocData], decs: Sequence[Decoded], decoder: LearnedDecoder
                        ) -> list[np.ndarray]:
    """(m, n) P(aligned) of every cell of every document under the learned decoder (0 outside the
    candidates); the classifiers run once over all documents' rows."""
    paras: list[np.ndarray | None] = [None] * len(docs)
    if decoder.paragraph_step:
        feats = [doc_paragraph_features(doc, dec) for doc, dec in zip(docs, decs, strict=True)]
        flat = [f.reshape(f.shape[0] * f.shape[1], f.shape[2]) for f in feats]
        paras = [p.reshape(f.shape[0], f.shape[1]) for p, f in
                 zip(_predict_split(decoder.paragraph_model, flat), feats, strict=True)]
    spans = bool(getattr(decoder, "span_features", False))
    cells = [doc_cell_features(doc, dec, para, spans) for doc, dec, para in zip(docs, decs, paras, strict=True)]
    outs: list[np.ndarray] = []
    for doc, (_, mask), p in zip(docs, cells, _predict_split(decoder.cell_model, [x for x, _ in cells]), strict=True):
        out = np.zeros(doc.shape, dtype=np.float64)
        out[mask] = p
        outs.append(out)
    for group_model in decoder.group_rounds():  # each round sees the previous round's probabilities
        x2 = [np.concatenate([x, group_features(out)[mask]], axis=1) for (x, mask), out in zip(cells, outs, strict=True)]
        outs = []
        for doc, (_, mask), p in zip(docs, cells, _predict_split(group_model, x2), strict=True):
            out = np.zeros(doc.shape, dtype=np.float64)
            out[mask] = p
            outs.append(out)
    return outs


def learned_scores(doc: DocData, dec: Decoded, decoder: LearnedDecoder) -> np.ndarray:
    """(m, n) P(aligned) of every cell under the learned decoder (0 outside the candidates)."""
    return learned_scores_many([doc], [dec], decoder)[0]


def decide(prob: np.ndarray, threshold: float, use_closure: bool, span_width: int = 0) -> np.ndarray:
    """Cells at or above ``threshold``; with ``span_width`` > 0 plus the group-level span decoding's runs
    (:func:`alignment_engine.semimarkov.decode_spans`); then group closure if asked."""
    pred = prob >= threshold
    if span_width > 0:
        pred = pred | decode_spans(prob, threshold, span_width)
    return closure(pred) if use_closure else pred


def alignments_from(doc: DocData, dec: Decoded, thresholds: dict, decoder: LearnedDecoder | None = None,
                    prob: np.ndarray | None = None) -> list[Alignment]:
    """Rows of one document: the learned decoder's decision when ``thresholds["combine"]`` is "learned"
    (``prob`` reuses its cell probabilities), else the combination rule."""
    rule = thresholds.get("combine", "union")
    if rule == LEARNED:
        if prob is None:
            if decoder is None:
                raise ValueError("a learned decoder is needed for combine='learned'")
            prob = learned_scores(doc, dec, decoder)
        pred = decide(prob, float(thresholds.get("marginal", 0.5)), bool(thresholds.get("closure", False)),
                      int(thresholds.get("spans", 0)))
        score = prob
    else:
        pred = combine(dec, rule, thresholds.get("marginal", 0.5))
        score = dec.score
    partial = partial_labels(pred, doc.lex, thresholds.get("partial", {"group": True, "min_len_ratio": 0.0}))
    return rows_from_matrix(doc.pair, pred, score, partial)


def prepare_docs(
    pairs: Sequence[DocPair],
    config: CRFConfig,
    encoder,  # type: ignore[no-untyped-def]
    links: Sequence[list[tuple[int, int, float]]] | None = None,
    progress: ProgressCallback | None = None,
    timings: dict[str, float] | None = None,
    counters: dict[str, int] | None = None,
    enc_cache: dict[tuple[str, str], float] | None = None,
    semantic_precision: str | None = None,
    semantic_device: str = "cpu",
) -> list[DocData]:
    """Features (and encoder scores of candidate cells) of each pair; ``semantic_precision`` / ``semantic_device``:
    the sentence encoder's (:data:`alignment_engine.crf_config.PRECISIONS`, default ``config.semantic_precision``;
    models are trained in their config's precision on the CPU, whatever device trains the CRFs)."""
    timings = {} if timings is None else timings
    counters = {} if counters is None else counters
    docs: list[DocData] = []
    sentence_encoder = None
    if config.semantic:  # every sentence of the chunk in one call: batches of one token length across documents, each text once
        from alignment_engine.semantic import shared_encoder

        t0 = time.perf_counter()
        sentence_encoder = shared_encoder(semantic_precision or config.semantic_precision, semantic_device)
        before = sentence_encoder.encoded
        sentence_encoder.embed(distinct_sentences(pairs))
        timings["semantic"] = timings.get("semantic", 0.0) + time.perf_counter() - t0
        counters["semantic_sentences"] = counters.get("semantic_sentences", 0) + sentence_encoder.encoded - before
    t0 = time.perf_counter()
    for k, pair in enumerate(pairs):
        simple, complex_ = pair.simple_sentences(), pair.complex_sentences()
        lex = lexical_features(simple, complex_, config.context_features, config.span_emission,
                               config.span_emission_widths, config.semantic, sentence_encoder)
        allowed = None
        plinks: list[tuple[int, int, float]] = []
        if links is not None:
            plinks = list(links[k])
            allowed = paragraph_allowed(pair, plinks)
        elif config.paragraphs == "predicted":
            plinks = predicted_links(pair, config)
            allowed = paragraph_allowed(pair, plinks)
        m, n = len(simple), len(complex_)
        counters["cells"] = counters.get("cells", 0) + m * n
        counters["cells_in_paragraphs"] = counters.get("cells_in_paragraphs", 0) + (
            int(allowed.sum()) if allowed is not None else m * n)
        docs.append(DocData(pair, simple, complex_, lex, np.zeros((m, n), dtype=np.float32),
                            np.zeros((m, n), dtype=bool), allowed, plinks))
    timings["features"] = timings.get("features", 0.0) + time.perf_counter() - t0
    if config.uses_encoder and encoder is not None:
        score_candidates(docs, encoder, config.candidate_k, timings, counters, enc_cache)
    if progress:
        progress(len(pairs), len(pairs))
    return docs


def score_candidates(docs: Sequence[DocData], encoder, k: int, timings: dict[str, float],  # type: ignore[no-untyped-def]
                     counters: dict[str, int], cache: dict[tuple[str, str], float] | None = None) -> None:
    """Run the cross-encoder on the candidate cells of every document (one batched call)."""
    t0 = time.perf_counter()
    todo: list[tuple[int, int, int]] = []
    texts: list[tuple[str, str]] = []
    for d, doc in enumerate(docs):
        if not doc.lex.size:
            continue
        cand = candidate_mask(doc.lex[:, :, 0], k, doc.allowed)
        for i, j in zip(*np.nonzero(cand), strict=True):
            key = (doc.simple[i], doc.complex[j])
            if cache is not None and key in cache:
                doc.enc_prob[i, j] = cache[key]
                doc.enc_scored[i, j] = True
                continue
            todo.append((d, int(i), int(j)))
            texts.append(key)
    t1 = time.perf_counter()
    probs = encoder.predict(texts) if texts else np.zeros(0)
    t2 = time.perf_counter()
    for (d, i, j), p, key in zip(todo, probs, texts, strict=True):
        docs[d].enc_prob[i, j] = p
        docs[d].enc_scored[i, j] = True
        if cache is not None:
            cache[key] = float(p)
    counters["encoder_pairs"] = counters.get("encoder_pairs", 0) + len(texts)
    timings["candidates"] = timings.get("candidates", 0.0) + (t1 - t0) + (time.perf_counter() - t2)
    timings["encoder"] = timings.get("encoder", 0.0) + (t2 - t1)


def predicted_links(pair: DocPair, config: CRFConfig) -> list[tuple[int, int, float]]:
    """Paragraph alignment of the pair with the engine's paragraph aligner (Algorithms 1-4)."""
    return list(align_paragraphs(pair, similarity=config.paragraph_similarity, algorithm=config.paragraph_algorithm,
                                 thresholds=config.paragraph_thresholds))


def fit_normalisation(docs: Sequence[DocData], config: CRFConfig) -> dict:
    """Mean and scale of every emission feature over the cells of ``docs`` (prepared for ``config``)."""
    names = config_feature_names(config)
    xs = [emission_features(d, config.emission).reshape(-1, len(names)) for d in docs if d.lex.size]
    x = np.concatenate(xs) if xs else np.zeros((1, len(names)), dtype=np.float32)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    return {"mean": mean.astype(np.float32).tolist(), "scale": scale.astype(np.float32).tolist(),
            "features": names}


__all__ = ["COMBINES", "EMISSIONS", "Batch", "CRFAligner", "CRFConfig", "Decoded"]
