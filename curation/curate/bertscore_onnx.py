"""Export BERTScore's encoder to ONNX, once, from the installed package's weights (no network).

    python -m curation.curate.bertscore_onnx FOLDER/model.onnx

Run by ``curation.curate.bertscore.export_onnx`` in a child process, so the process that scores
never imports torch. The layer-``LAYER`` token states of ``AutoModel`` are traced (opset 17,
batch and length dynamic, token types zero as the tokenizer gives them for single sentences),
saved with its weights in ``model.onnx.data`` beside it (ONNX Runtime maps them) in a temporary
folder, run through ONNX Runtime on probe sentences of several lengths and padding, and the
folder is renamed into place only when every state equals torch's within 1e-4; otherwise the
command exits 1 and the scorer stays on torch.
"""

from __future__ import annotations

import shutil
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
    import onnx
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
    input_ids, mask = bertscore.padded(ids)
    target.parent.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent.parent))
    traced = staging / "traced.onnx"
    graph = staging / target.name
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                LayerStates(model).eval(), (torch.from_numpy(input_ids[:2, :8]), torch.from_numpy(mask[:2, :8])), str(traced),
                input_names=["input_ids", "attention_mask"], output_names=["hidden"],
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in ("input_ids", "attention_mask", "hidden")},
                opset_version=17, dynamo=False,
            )
        onnx.save_model(onnx.load(str(traced)), str(graph), save_as_external_data=True, all_tensors_to_one_file=True,
                        location=f"{target.name}.data", size_threshold=1024)
        traced.unlink()
        session = onnxruntime.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
        got = session.run(None, {"input_ids": input_ids, "attention_mask": mask})[0]
        want = bertscore._torch_hidden(input_ids, mask)
        diff = max(float(np.abs(got[i, : len(t)] - want[i, : len(t)]).max()) for i, t in enumerate(ids))
        if diff > TOLERANCE:
            raise RuntimeError(f"ONNX export differs from torch by {diff:.2e} (> {TOLERANCE})")
        for path in (staging, *staging.iterdir()):
            path.chmod(0o755 if path.is_dir() else 0o644)
        try:
            staging.rename(target.parent)
        except OSError:  # another process exported it meanwhile: keep theirs
            if not target.exists():
                raise
        return diff
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m curation.curate.bertscore_onnx FOLDER/model.onnx", file=sys.stderr)
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
