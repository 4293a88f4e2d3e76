"""Export BERTScore's encoder to ONNX, once, from the installed package's weights (no network).

    python -m curation.curate.bertscore_onnx TARGET.onnx

Run by ``curation.curate.bertscore.export_onnx`` in a child process, so the process that scores
never imports torch. The layer-``LAYER`` token states of ``AutoModel`` are traced (opset 17,
batch and length dynamic, token types zero as the tokenizer gives them for single sentences),
written to a temporary file, run through ONNX Runtime on probe sentences of several lengths
and padding, and kept (``os.replace``) only when every state equals torch's within 1e-4;
otherwise the command exits 1 and the scorer stays on torch.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from curation.curate import bertscore

PROBES = [
    "The city council said on Monday that a new bridge over the river would be built after years of debate.",
    "Rain.",
    "Der Bürgermeister eröffnete am Montag die neue Brücke, und Tausende Menschen gingen darüber.",
    "Scientists say the Arctic ice melts faster now. Sea levels rise.",
    " ".join(["word"] * 300),  # truncated at MAX_LENGTH
]
TOLERANCE = 1e-4


def export(target: Path) -> float:
    """Write the ONNX file to ``target``; return the largest difference to torch on the probes."""
    import onnxruntime
    import torch

    _, model = bertscore._load()
    last = model.config.num_hidden_layers == bertscore.LAYER

    class LayerStates(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=torch.zeros_like(input_ids), output_hidden_states=not last)
            return out.last_hidden_state if last else out.hidden_states[bertscore.LAYER]  # type: ignore[no-any-return]

    ids = bertscore.tokenize(PROBES)
    width = max(len(t) for t in ids)
    input_ids = np.zeros((len(ids), width), dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for i, tokens in enumerate(ids):
        input_ids[i, : len(tokens)] = tokens
        mask[i, : len(tokens)] = 1
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".export-", suffix=".onnx", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                LayerStates(model).eval(), (torch.from_numpy(input_ids[:2, :8]), torch.from_numpy(mask[:2, :8])), str(tmp),
                input_names=["input_ids", "attention_mask"], output_names=["hidden"],
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in ("input_ids", "attention_mask", "hidden")},
                opset_version=17, dynamo=False,
            )
        session = onnxruntime.InferenceSession(str(tmp), providers=["CPUExecutionProvider"])
        got = session.run(None, {"input_ids": input_ids, "attention_mask": mask})[0]
        want = bertscore._torch_hidden(input_ids, mask)
        diff = max(float(np.abs(got[i, : len(t)] - want[i, : len(t)]).max()) for i, t in enumerate(ids))
        if diff > TOLERANCE:
            raise RuntimeError(f"ONNX export differs from torch by {diff:.2e} (> {TOLERANCE})")
        tmp.chmod(0o644)
        os.replace(tmp, target)
        return diff
    finally:
        tmp.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m curation.curate.bertscore_onnx TARGET.onnx", file=sys.stderr)
        return 2
    try:
        diff = export(Path(argv[0]))
    except Exception as exc:  # reported to the parent, which falls back to torch
        print(f"ONNX export failed: {exc}", file=sys.stderr)
        return 1
    print(f"exported {argv[0]} (largest difference to torch {diff:.2e})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
