"""A BERT sentence encoder as an ONNX graph, built from a ``model.safetensors`` file with no PyTorch.

The packaged model ships only the PyTorch-format weights (safetensors) and a ``tokenizer.json``; onnxruntime
needs a graph. The graph below is the standard BERT encoder (absolute positions, post-LayerNorm, exact GELU),
written out op by op with ``onnx.helper`` and fed the weights straight from the file, so the weights that run
are exactly the bytes whose hash was checked. Mean pooling and L2 normalisation are done by the caller.

The server does not run that float32 graph: ``quantize`` turns it, once per data directory, into an int8 file
with onnxruntime's own dynamic quantization (``python -m pillbox.embeddings.onnx_bert SOURCE_DIR OUT``, run in a
child process so that the server never holds the float32 weights). The result is the same bytes on every machine
for a given quantizer, and ``pillbox.embeddings.embedders`` pins its SHA-256. The tokenizer is ``wordpiece``.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file (an 8-byte header length, a JSON header, then raw little-endian data)."""
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    base = 8 + length
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        tensors[name] = np.frombuffer(data[base + start:base + end], dtype=dtype).reshape(info["shape"])
    return tensors


def build_graph(weights: dict[str, np.ndarray], config: dict[str, Any]) -> bytes:
    """A serialized ONNX model: inputs ``input_ids`` and ``attention_mask`` (int64, [batch, tokens]), output
    ``hidden`` ([batch, tokens, hidden]) — the last layer's token states."""
    from onnx import NodeProto, TensorProto, helper, numpy_helper

    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    layers = int(config["num_hidden_layers"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    head_size = hidden // heads
    nodes: list[NodeProto] = []
    initializers: list[TensorProto] = []
    counter = iter(range(1_000_000))

    def const(name: str, array: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(kind: str, inputs: list[str], **attributes: Any) -> str:
        out = f"{kind.lower()}_{next(counter)}"
        nodes.append(helper.make_node(kind, inputs, [out], **attributes))
        return out

    def linear(x: str, prefix: str) -> str:
        # torch Linear keeps weights as [out, in]; MatMul wants [in, out].
        w = const(f"{prefix}.w", weights[f"{prefix}.weight"].T.astype(np.float32))
        b = const(f"{prefix}.b", weights[f"{prefix}.bias"].astype(np.float32))
        return op("Add", [op("MatMul", [x, w]), b])

    def layer_norm(x: str, prefix: str) -> str:
        scale = const(f"{prefix}.g", weights[f"{prefix}.weight"].astype(np.float32))
        bias = const(f"{prefix}.beta", weights[f"{prefix}.bias"].astype(np.float32))
        return op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=eps)

    # Embeddings: word + position + token type 0, then LayerNorm.
    words = op("Gather", [const("word_embeddings", weights["embeddings.word_embeddings.weight"]), "input_ids"])
    # The first ``tokens`` rows of the position table (1-D starts/ends, as Slice requires).
    length = op("Shape", ["input_ids"], start=1, end=2)
    placed = op("Slice", [const("position_embeddings", weights["embeddings.position_embeddings.weight"]),
                          const("zero", np.array([0], dtype=np.int64)), length,
                          const("axis0", np.array([0], dtype=np.int64))])
    token_type = const("token_type", weights["embeddings.token_type_embeddings.weight"][0])
    x = layer_norm(op("Add", [op("Add", [words, placed]), token_type]), "embeddings.LayerNorm")

    # Padding mask as an additive bias on the attention scores: [batch, 1, 1, tokens].
    mask = op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask = op("Unsqueeze", [mask, const("mask_axes", np.array([1, 2], dtype=np.int64))])
    bias = op("Mul", [op("Sub", [const("one_f", np.array(1.0, dtype=np.float32)), mask]),
                      const("neg", np.array(-10000.0, dtype=np.float32))])
    split_shape = const("split_shape", np.array([0, 0, heads, head_size], dtype=np.int64))
    merge_shape = const("merge_shape", np.array([0, 0, hidden], dtype=np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(head_size), dtype=np.float32))
    sqrt_half = const("sqrt_half", np.array(1.0 / np.sqrt(2.0), dtype=np.float32))
    half = const("half", np.array(0.5, dtype=np.float32))
    one = const("one_g", np.array(1.0, dtype=np.float32))

    def heads_of(tensor: str, perm: list[int]) -> str:
        return op("Transpose", [op("Reshape", [tensor, split_shape])], perm=perm)

    for index in range(layers):
        p = f"encoder.layer.{index}"
        q = heads_of(linear(x, f"{p}.attention.self.query"), [0, 2, 1, 3])
        k = heads_of(linear(x, f"{p}.attention.self.key"), [0, 2, 3, 1])
        v = heads_of(linear(x, f"{p}.attention.self.value"), [0, 2, 1, 3])
        scores = op("Add", [op("Mul", [op("MatMul", [q, k]), scale]), bias])
        context = op("MatMul", [op("Softmax", [scores], axis=-1), v])
        context = op("Reshape", [op("Transpose", [context], perm=[0, 2, 1, 3]), merge_shape])
        attended = op("Add", [linear(context, f"{p}.attention.output.dense"), x])
        x = layer_norm(attended, f"{p}.attention.output.LayerNorm")
        inner = linear(x, f"{p}.intermediate.dense")
        gelu = op("Mul", [op("Mul", [inner, half]), op("Add", [op("Erf", [op("Mul", [inner, sqrt_half])]), one])])
        x = layer_norm(op("Add", [linear(gelu, f"{p}.output.dense"), x]), f"{p}.output.LayerNorm")

    nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    graph = helper.make_graph(
        nodes, "bert_encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "tokens", hidden])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    serialized: bytes = model.SerializeToString()
    return serialized


def quantize(source: Path, out: Path) -> None:
    """The int8 model file: the float32 graph of ``source`` (a model directory) through onnxruntime's
    ``quantize_dynamic`` (int8 weights per output channel for every MatMul and the word-embedding Gather),
    written to ``out`` with a fixed producer, so the bytes depend only on the weights and the quantizer."""
    import tempfile

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = build_graph(read_safetensors(source / "model.safetensors"),
                        json.loads((source / "config.json").read_text(encoding="utf-8")))
    with tempfile.TemporaryDirectory() as tmp:
        quantize_dynamic(onnx.load_from_string(graph), Path(tmp) / "int8.onnx", weight_type=QuantType.QInt8,
                         op_types_to_quantize=["MatMul", "Gather"], per_channel=True)
        model = onnx.load(Path(tmp) / "int8.onnx")
    model.producer_name, model.producer_version = "pillbox", "1"
    out.write_bytes(model.SerializeToString())


if __name__ == "__main__":
    import logging
    import sys

    logging.disable(logging.WARNING)  # the quantizer's advice on pre-processing is not for our users
    quantize(Path(sys.argv[1]), Path(sys.argv[2]))
