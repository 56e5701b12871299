"""Reads a gputrain checkpoint with Python's safetensors and runs the reference
MLP (configs/fashion_mnist_mlp.yaml: flatten -> dense 128 relu -> dense 10
softmax) forward in NumPy, to check that the checkpoint is usable outside gputrain.

  numpy_forward.py CHECKPOINT IMAGES.npy SCALE PREDICTIONS.npy

Checks the tensor names, shapes and dtypes of docs/checkpoints.md, then compares
the probabilities with gputrain predict's (PREDICTIONS.npy); exits 1 when they
differ by more than 1e-5.
"""
import json
import struct
import sys

import numpy as np
from safetensors.numpy import load_file


def metadata(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n)).get("__metadata__", {})


def main():
    checkpoint, images_path, scale, predictions_path = sys.argv[1:5]
    tensors = load_file(checkpoint)
    weights = {
        "dense/kernel": (784, 128), "dense/bias": (128,),
        "dense_1/kernel": (128, 10), "dense_1/bias": (10,),
    }
    expected = dict(weights)
    for slot in ("adam_m", "adam_v"):
        expected.update({f"optimizer/{slot}/{name}": shape for name, shape in weights.items()})
    if set(tensors) != set(expected):
        sys.exit(f"tensor names {sorted(tensors)} differ from {sorted(expected)}")
    for name, shape in expected.items():
        t = tensors[name]
        if t.shape != shape or t.dtype != np.float32:
            sys.exit(f"{name}: shape {t.shape} dtype {t.dtype}, expected {shape} float32")
    meta = metadata(checkpoint)
    if meta.get("format") != "gputrain-checkpoint/1" or meta.get("optimizer") != "adam":
        sys.exit(f"metadata {meta}")

    # The same arithmetic as gputrain, in float64: x @ kernel + bias.
    x = np.load(images_path).reshape(-1, 784).astype(np.float64) * float(scale)
    h = np.maximum(x @ tensors["dense/kernel"] + tensors["dense/bias"], 0.0)
    logits = h @ tensors["dense_1/kernel"] + tensors["dense_1/bias"]
    logits -= logits.max(axis=1, keepdims=True)
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=1, keepdims=True)

    predicted = np.load(predictions_path)
    if predicted.shape != probabilities.shape or predicted.dtype != np.float32:
        sys.exit(f"predictions: shape {predicted.shape} dtype {predicted.dtype}, expected {probabilities.shape} float32")
    worst = float(np.abs(predicted - probabilities).max())
    agree = float((predicted.argmax(axis=1) == probabilities.argmax(axis=1)).mean())
    print(f"{len(x)} samples: max |gputrain - numpy| = {worst:.3g}, argmax agreement {agree:.4f}")
    if worst > 1e-5:
        sys.exit(f"gputrain's probabilities differ from NumPy's by {worst:.3g} > 1e-5")


main()
