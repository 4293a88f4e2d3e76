"""multilingual-e5-small's 12 layers with int8 matrix products, through ONNX Runtime (how the semantic channels
embed when a model aligns on a CPU: :func:`alignment_engine.semantic.alignment_precision`).

:class:`alignment_engine.e5_small.E5Small` runs its Linear layers in float32, which on one core is as fast as the
CPU multiplies float32 (docs/engine-results.md, Rounds 13-14); bf16 doubles that only where the CPU has it natively.
This module builds, from the same network's weights, an ONNX graph of its layers whose six matrix products per
layer (q, k and v as one) run in integers:

- **activations per row**: each token's input vector is scaled by its own largest magnitude to [-127, 127] and
  shifted to uint8 (``QuantizeLinear`` along axis 0, zero point 128), so a sentence's result never depends on
  the other texts of its batch (torch's dynamic int8 shares one scale per batch: vectors moved by up to 3e-2,
  Round 14);
- **weights per output channel, 7 bits** ([-63, 63]): ONNX Runtime's uint8 x int8 product on AVX2 adds pairs
  of byte products in 16 bits, which saturate with 8-bit weights (measured: wrong sums); with 7 bits every sum
  is exact, so the integer part gives the same result on every CPU;
- ``MatMulIntegerToFloat`` applies the weight scales, then the row scales and the bias are applied in float32;
  attention (``MultiHeadAttention``), GELU and layer norms stay float32.

One intra-op thread, like the float32 path. Embeddings are within a cosine of about .999 of float32 (measured on
DEplain-web dev's 1,107 sentences: mean .99882, min .99809) and are computed about 1.6 times as fast on an AVX2
CPU (Round 15).
The embeddings and the mean pooling stay in torch (:meth:`E5Small._forward`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from alignment_engine.errors import ModelError

if TYPE_CHECKING:
    import onnxruntime

#: Largest weight magnitude after quantization: 7 bits (module docstring).
WEIGHT_MAX = 63
#: Largest activation magnitude after quantization (int8, symmetric).
ACTIVATION_MAX = 127


def quantize_weight(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(in, out) int8 weights in [-WEIGHT_MAX, WEIGHT_MAX] and (out,) float32 scales of an (out, in) float matrix,
    one scale per output channel: ``w ~= (q * scale).T``."""
    scale = np.abs(w).max(axis=1) / WEIGHT_MAX
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale[:, None]), -WEIGHT_MAX, WEIGHT_MAX).astype(np.int8)
    return np.ascontiguousarray(q.T), scale


class _Graph:
    """Nodes and initialisers of the ONNX graph being built."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.inits: list = []
        self._n = 0
        # the constants every _linear reads
        self.const("axis_last", np.array([-1], np.int64))
        self.const("tiny", np.array(1e-12, np.float32))
        self.const("act_max", np.array(ACTIVATION_MAX, np.float32))
        self.const("u128", np.array([128], np.uint8))
        self.const("u128s", np.array(128, np.uint8))
        self.const("one", np.array(1.0, np.float32))

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def ops(self, op_type: str, inputs: list[str], outputs: int, domain: str = "", **attrs: Any) -> list[str]:
        """Add a node; the names of its ``outputs`` outputs."""
        from onnx import helper

        self._n += 1
        names = [f"t{self._n}_{k}" for k in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, domain=domain, **attrs))
        return names

    def op(self, op_type: str, inputs: list[str], domain: str = "", **attrs: Any) -> str:
        """Add a node of one output; its name."""
        return self.ops(op_type, inputs, 1, domain, **attrs)[0]

    def serialise(self, x: str, y: str, shape: list[str | int], name: str,
                  y_shape: list[str | int] | None = None) -> bytes:
        """The graph from float32 input ``x`` of ``shape`` to float32 output ``y`` (of ``y_shape``, default the
        same), as an ONNX model."""
        from onnx import TensorProto, helper

        graph = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info(y, TensorProto.FLOAT, y_shape or shape)], self.inits)
        model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 18),
                                                                        helper.make_opsetid("com.microsoft", 1)])
        return bytes(model.SerializeToString())


def _linear(g: _Graph, x: str, weight: np.ndarray, bias: np.ndarray, name: str) -> str:
    """``x @ weight.T + bias`` with per-row int8 activations and 7-bit per-channel weights (module docstring)."""
    n_out, n_in = weight.shape
    q_w, w_scale = quantize_weight(weight)
    rows = g.op("Reshape", [x, g.const(f"{name}.in_shape", np.array([-1, n_in], np.int64))])
    # each row's largest magnitude as max(max, -min): the value of max |x| without writing |x| (4 % faster layers)
    peak = g.op("Max", [g.op("ReduceMax", [rows, "axis_last"], keepdims=0),
                        g.op("Neg", [g.op("ReduceMin", [rows, "axis_last"], keepdims=0)])])
    scale = g.op("Div", [g.op("Max", [peak, "tiny"]), "act_max"])  # (rows,)
    zero = g.op("Expand", ["u128", g.op("Shape", [peak])])
    q = g.op("QuantizeLinear", [rows, scale, zero], axis=0)
    y = g.op("MatMulIntegerToFloat", [q, g.const(f"{name}.q", q_w), "one", g.const(f"{name}.scale", w_scale), "u128s"],
             domain="com.microsoft")
    y = g.op("Add", [g.op("Mul", [y, g.op("Unsqueeze", [scale, "axis_last"])]),
                     g.const(f"{name}.b", bias.astype(np.float32))])
    out_shape = g.op("Concat", [g.op("Shape", [x], end=-1), g.const(f"{name}.out", np.array([n_out], np.int64))], axis=0)
    return g.op("Reshape", [y, out_shape])


def _layer_norm(g: _Graph, x: str, weight: np.ndarray, bias: np.ndarray, eps: float, name: str) -> str:
    return g.op("LayerNormalization", [x, g.const(f"{name}.w", weight), g.const(f"{name}.b", bias)], axis=-1,
                epsilon=eps)


def build_model(tensors: dict[str, np.ndarray], n_layers: int, hidden: int, heads: int, eps: float) -> bytes:
    """The serialised ONNX graph of the network's layers: (B, T, hidden) float32 in (after the embeddings' layer
    norm), (B, T, hidden) out (before pooling). ``tensors``: layer ``i``'s weights and biases as
    :func:`alignment_engine.e5_small.read_model` names them (``l{i}.q.w``, ``l{i}.q.b``, ... ``l{i}.oln.b``;
    Linear weights (out, in))."""
    try:
        import onnx  # noqa: F401
    except ImportError as exc:
        raise ModelError("the int8 sentence encoder needs the package onnx (requirements.txt)") from exc

    def w(name: str) -> np.ndarray:
        return np.asarray(tensors[name], dtype=np.float32)

    g = _Graph()
    x = "x"
    for i in range(n_layers):
        p = f"l{i}."
        qkv_w = np.concatenate([w(p + "q.w"), w(p + "k.w"), w(p + "v.w")])
        qkv_b = np.concatenate([w(p + "q.b"), w(p + "k.b"), w(p + "v.b")])
        qkv = _linear(g, x, qkv_w, qkv_b, p + "qkv")
        split = g.const(p + "split", np.array([hidden] * 3, np.int64))
        ctx = g.op("MultiHeadAttention", g.ops("Split", [qkv, split], 3, axis=-1), domain="com.microsoft",
                   num_heads=heads)
        attended = g.op("Add", [x, _linear(g, ctx, w(p + "ao.w"), w(p + "ao.b"), p + "ao")])
        x = _layer_norm(g, attended, w(p + "aln.w"), w(p + "aln.b"), eps, p + "aln")
        inner = g.op("Gelu", [_linear(g, x, w(p + "fi.w"), w(p + "fi.b"), p + "fi")], domain="com.microsoft")
        out = g.op("Add", [x, _linear(g, inner, w(p + "fo.w"), w(p + "fo.b"), p + "fo")])
        x = _layer_norm(g, out, w(p + "oln.w"), w(p + "oln.b"), eps, p + "oln")
    return g.serialise("x", x, ["B", "T", hidden], "e5_small_int8")


def session(model: bytes) -> onnxruntime.InferenceSession:
    """An ONNX Runtime session of the serialised ``model`` on one CPU thread."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise ModelError("the int8 sentence encoder needs the package onnxruntime (requirements.txt)") from exc
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


class Int8Layers:
    """The network's layers (:func:`build_model`'s arguments) as an ONNX Runtime session on one CPU thread;
    :meth:`__call__` maps (B, T, hidden) float32 hidden states after the embeddings to those after the last layer."""

    def __init__(self, tensors: dict[str, np.ndarray], n_layers: int, hidden: int, heads: int, eps: float) -> None:
        self.session = session(build_model(tensors, n_layers, hidden, heads, eps))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.session.run(None, {"x": np.ascontiguousarray(x, dtype=np.float32)})[0])


def available() -> bool:
    """Whether ONNX Runtime and onnx can be imported (both are in requirements.txt)."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True
