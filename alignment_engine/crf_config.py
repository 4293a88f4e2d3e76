"""The configuration of the neural CRF aligner: one typed :class:`CRFConfig` with the training defaults.

``CRFConfig()`` is the best configuration measured (docs/engine-results.md): ``python -m
alignment_engine train`` with no ``--set`` option, ``api.train(...)`` with no option and the
product's retraining all train exactly this. A model directory stores ``CRFConfig.to_dict()`` in
``model.json`` and :meth:`CRFConfig.from_dict` reads it back.

Light on purpose (no torch import), so that the command line and the Django side can read the
defaults without loading the neural stack.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

EMISSIONS = ("encoder", "lexical", "encoder+lexical")
UNITS = ("document", "paragraph")
PARAGRAPH_MODES = ("none", "predicted", "gold")
GOLD_TARGETS = ("best", "any")
CRF_OPTIMIZERS = ("adam", "lbfgs")
#: What the semantic channels' sentence encoder can compute in (:meth:`alignment_engine.e5_small.E5Small.embed`):
#: float32, bf16 autocast, int8 layers.
PRECISIONS = ("float32", "bfloat16", "int8")
#: What a model's sentence encoder may be trained in (bf16 only some CPUs have natively).
SEMANTIC_PRECISIONS = tuple(p for p in PRECISIONS if p != "bfloat16")
DECODERS = ("learned", "rule")

#: Keys older model.json files carry in "config" that are not options (kept elsewhere now).
LEGACY_KEYS = frozenset({"paragraph_tuning"})


@dataclass(frozen=True)
class CRFConfig:
    """Every option of the neural CRF aligner (model and training); the defaults are the shipped model."""

    # --- emission and sequences
    emission: str = "lexical"  # "encoder" | "lexical" | "encoder+lexical"
    unit: str = "document"  # CRF sequences: whole documents or paragraph pairs
    paragraphs: str = "none"  # labels restricted to aligned paragraphs: "none" | "predicted" | "gold"
    paragraph_similarity: str = "c3g"
    paragraph_algorithm: str = "news"
    paragraph_thresholds: dict[str, float] | None = None  # None: tuned on dev (else train) when predicted
    paragraph_beta: float = 2.0  # F-beta of the paragraph threshold tuner
    candidate_k: int = 3  # cells sent to the encoder: top-k per row and per column under C3G
    context_features: bool = True  # C3G of the cell's row and column neighbours (splits, merges)
    span_emission: bool = False  # block-level channels of a sentence against runs of the other side
    #                              (span_emission.span_emission_features) in the emission and the decoder
    span_emission_widths: tuple[int, int] = (6, 3)  # longest runs of simple / complex sentences
    semantic: bool = True  # multilingual sentence-encoder channels (semantic.SEMANTIC_FEATURES: e5 cosines of the
    #                         cell, its neighbours and runs) in the emission and the decoder
    semantic_precision: str = "float32"  # what the sentence encoder computes in, in training and alignment:
    #                                      "float32" or "int8" (e5_int8: about 1.6x faster on AVX2; Round 15)
    semicrf: bool = True  # learned decoder: a semi-Markov CRF over span labels (semicrf.py; runs of at most
    #                       span_emission_widths) is cross-fitted too and its decodings are extra cell channels
    #                       (off by itself with decoder="rule", which cannot read them)
    semicrf_epochs: int = 20  # its training epochs (Adam, lr crf_lr decayed linearly to 10%)
    # --- networks and CRF training
    hidden: int = 32
    transition_hidden: int = 16
    crf_epochs: int = 20
    crf_lr: float = 0.01
    crf_weight_decay: float = 1e-4
    crf_batch: int = 8
    crf_optimizer: str = "adam"  # "adam": minibatches, linear lr decay; "lbfgs": full-batch L-BFGS (strong Wolfe),
    #                              crf_epochs rounds of LBFGS_ITERATIONS iterations, deterministic given the init
    transitions: bool = True  # False: the "without the CRF" ablation (independent choices)
    gold_target: str = "best"  # n:1 steps: the gold label with the best C3G, or "any" gold label
    # --- decoding of the two directions
    decoder: str = "learned"  # "learned": stacked classifiers fitted by cross-validation on train;
    #                           "rule": a combination rule and threshold tuned on dev (format 1 models)
    cv_folds: int = 4  # folds (by document) of the cross-fitted CRFs behind the learned decoder
    paragraph_step: bool = True  # learned decoder: paragraph-link probabilities feed the sentence decision
    decoder_rounds: int = 2  # learned decoder: 2 adds a second, group-level round (with semicrf: +1.5 train CV);
    #                          3+ add further rounds, each over the previous one (3: no train CV gain, stop 23)
    span_features: bool = False  # learned decoder: group-level word-cover channels (stacking.span_features)
    span_widths: tuple[int, ...] = ()  # learned decoder: span decoding widths offered to cross-validation
    refit_with_dev: bool = True  # learned decoder with dev gold: score dev with a model trained on train alone,
    #                              then write the model retrained on train + dev (training.train_model; Round 11)
    members: int = 3  # learned decoder: a seed ensemble of this many whole models (member k trained with seed + k,
    #                   in parallel processes; their cell probabilities averaged, decided with member 0's thresholds:
    #                   training.train_model, parallel.py, Round 17); 1 is a single model
    # --- cross-encoder fine-tuning
    encoder_steps: int = 150
    encoder_freeze_layers: int = 3
    encoder_batch: int = 16
    encoder_lr: float = 2e-5
    encoder_max_length: int = 128
    encoder_negatives: int = 3
    encoder_labels: int = 2
    encoder_init: str | None = None  # reuse a fine-tuned encoder directory instead of fine-tuning

    def __post_init__(self) -> None:
        for name, allowed in (("emission", EMISSIONS), ("unit", UNITS), ("paragraphs", PARAGRAPH_MODES),
                              ("gold_target", GOLD_TARGETS), ("decoder", DECODERS),
                              ("crf_optimizer", CRF_OPTIMIZERS)):
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
        if self.semantic_precision not in SEMANTIC_PRECISIONS:
            raise ValueError(f"semantic_precision must be one of {', '.join(SEMANTIC_PRECISIONS)}, "
                             f"got {self.semantic_precision!r}")
        if int(self.members) < 1:
            raise ValueError(f"members must be at least 1, got {self.members!r}")
        if self.paragraph_algorithm not in ("news", "wikipedia"):
            raise ValueError(f"paragraph_algorithm must be news or wikipedia, got {self.paragraph_algorithm!r}")

    @property
    def uses_encoder(self) -> bool:
        return self.emission != "lexical"

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON values (tuples as lists), as ``model.json`` stores them."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    def with_options(self, **options: Any) -> CRFConfig:
        """A copy with ``options`` changed; ValueError names unknown options."""
        unknown = sorted(set(options) - option_names())
        if unknown:
            raise ValueError(f"unknown training option(s): {', '.join(unknown)}; known: {', '.join(sorted(option_names()))}")
        if "span_widths" in options:
            options["span_widths"] = tuple(int(w) for w in options["span_widths"] or ())
        if "span_emission_widths" in options:
            widths = tuple(int(w) for w in options["span_emission_widths"])
            if len(widths) != 2 or min(widths) < 1:
                raise ValueError(f"span_emission_widths must be two widths >= 1, got {options['span_emission_widths']!r}")
            options["span_emission_widths"] = widths
        return replace(self, **options)

    @classmethod
    def from_dict(cls, data: dict[str, Any], base: CRFConfig | None = None) -> CRFConfig:
        """Read a stored config; keys missing from ``data`` come from :data:`ADDED_LATER` (a model written
        before an option existed was trained without it), then from ``base`` (default: the defaults)."""
        known = {k: v for k, v in data.items() if k not in LEGACY_KEYS}
        earlier = {k: v for k, v in ADDED_LATER.items() if k not in known}
        return (base or cls()).with_options(**earlier, **known)


#: Options added after models had been written, with the value such a model was trained with: a stored
#: config without the key means this, whatever today's default is (``to_dict`` writes every option, so a
#: model written since has the key).
ADDED_LATER: dict[str, Any] = {"span_emission": False, "semicrf": False, "decoder_rounds": 1, "refit_with_dev": False,
                               "semantic": False, "semantic_precision": "float32", "members": 1}

#: What a format-1 model (written before these options existed) was trained with.
FORMAT_1_BASE: dict[str, Any] = {"context_features": False, "decoder": "rule", "paragraph_step": False,
                                 "decoder_rounds": 1}


def option_names() -> set[str]:
    return {f.name for f in fields(CRFConfig)}


#: The defaults as a plain dict (``CRFConfig().to_dict()``).
DEFAULTS: dict[str, Any] = CRFConfig().to_dict()
