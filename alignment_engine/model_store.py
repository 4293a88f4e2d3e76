"""Model directories of the neural CRF aligner: layout, save, load, format-version checks.

A model directory holds::

    model.json     {"format_version", "kind": "crf", "config", "normalisation", "thresholds",
                    "dev_metrics", "data", "timings", "encoder", "crf", "dev_rules", ...}
    crf.pt         state dict of the two CRFs (alignment_engine.crf_aligner.BiCRF)
    encoder/       the fine-tuned cross-encoder (transformers save_pretrained layout),
                   absent for emission="lexical"
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from alignment_engine.crf_config import CRFConfig
from alignment_engine.errors import ModelError

FORMAT_VERSION = 1
META_FILE = "model.json"
CRF_WEIGHTS = "crf.pt"
ENCODER_DIR = "encoder"
KIND = "crf"


def save(out_dir: str | Path, *, model: torch.nn.Module, encoder, config: CRFConfig, normalisation: dict,  # type: ignore[no-untyped-def]
         thresholds: dict, dev_metrics: dict, extra: dict | None = None) -> Path:
    """Write a model directory (created if needed) and return its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, out / CRF_WEIGHTS)
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
    (out / META_FILE).write_text(json.dumps(meta, indent=1, sort_keys=False, default=_default) + "\n", encoding="utf-8")
    return out


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
    if version != FORMAT_VERSION:
        raise ModelError(f"{meta_path}: format_version {version!r} is not supported (this engine reads {FORMAT_VERSION})")
    if meta.get("kind", KIND) != KIND:
        raise ModelError(f"{meta_path}: model kind {meta.get('kind')!r} is not {KIND!r}")
    for key in ("config", "normalisation", "thresholds"):
        if key not in meta:
            raise ModelError(f"{meta_path}: missing {key!r}")
    if not (path / CRF_WEIGHTS).is_file():
        raise ModelError(f"{path}: missing {CRF_WEIGHTS}")
    if meta["config"].get("emission") != "lexical" and not (path / ENCODER_DIR).is_dir():
        raise ModelError(f"{path}: missing {ENCODER_DIR}/ (the model's emission uses the cross-encoder)")
    return meta


def read_config(meta: dict, model_dir: str | Path = "") -> CRFConfig:
    """The :class:`CRFConfig` of a model's ``model.json`` (checked by :func:`read_meta`)."""
    try:
        return CRFConfig.from_dict(dict(meta["config"]))
    except (TypeError, ValueError) as e:
        raise ModelError(f"{Path(model_dir) / META_FILE}: bad config: {e}") from None
