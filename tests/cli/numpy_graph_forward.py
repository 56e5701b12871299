"""An independent forward pass of any gputrain model, in NumPy (float64), from
the run folder's resolved config.yaml and a checkpoint: every layer kind
gputrain has, written again from its definition (Keras' padding rules, NHWC
images, conv kernels stored [filters, kh, kw, in_channels], batch norm from
its moving statistics), and graphs (inputs:, add, concatenate, multiply).

  numpy_graph_forward.py CONFIG.yaml CHECKPOINT IMAGES.npy SCALE PREDICTIONS.npy [TOLERANCE]

Compares its probabilities with `gputrain predict`'s (PREDICTIONS.npy) and
exits 1 when they differ by more than TOLERANCE (default 1e-5).
"""
import math
import sys

import numpy as np
import yaml
from safetensors.numpy import load_file

ACTIVATIONS = {
    "linear": lambda z: z,
    "relu": lambda z: np.maximum(z, 0.0),
    "sigmoid": lambda z: 1.0 / (1.0 + np.exp(-z)),
    "tanh": np.tanh,
    "gelu": lambda z: 0.5 * z * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0))),
}


def softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def activate(name, z):
    return softmax(z) if name == "softmax" else ACTIVATIONS[name](z)


def pair(value, default=None):
    if value is None:
        return default
    if isinstance(value, list):
        return int(value[0]), int(value[1])
    return int(value), int(value)


def window(size, k, stride, dilation, padding):
    """Keras: output size and padding before, for one axis."""
    span = dilation * (k - 1) + 1
    if padding == "same":
        out = -(-size // stride)
        total = max((out - 1) * stride + span - size, 0)
        return out, total // 2, total
    return (size - span) // stride + 1, 0, 0


def padded(x, k, s, d, padding, fill):
    n, h, w, c = x.shape
    oh, top, th = window(h, k[0], s[0], d[0], padding)
    ow, left, tw = window(w, k[1], s[1], d[1], padding)
    xp = np.full((n, h + th, w + tw, c), fill, dtype=np.float64)
    xp[:, top:top + h, left:left + w, :] = x
    return xp, oh, ow


def patches(xp, oh, ow, k, s, d):
    """(n, oh, ow, kh, kw, c) windows."""
    out = np.empty((xp.shape[0], oh, ow, k[0], k[1], xp.shape[3]))
    for i in range(k[0]):
        for j in range(k[1]):
            out[:, :, :, i, j, :] = xp[:, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                                       j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1], :]
    return out


def run(layers, tensors, x):
    values = {"input": x}
    previous = "input"
    for layer in layers:
        kind, name = layer["type"], layer["name"]
        given = layer.get("inputs", previous)
        ins = [values[n] for n in (given if isinstance(given, list) else [given])]
        a = ins[0]
        p = lambda key: tensors[f"{name}/{key}"].astype(np.float64)
        if kind == "dense":
            z = a @ p("kernel")
            if layer.get("use_bias", True):
                z = z + p("bias")
            y = activate(layer.get("activation", "linear"), z)
        elif kind == "conv2d":
            k, s = pair(layer["kernel_size"]), pair(layer.get("strides"), (1, 1))
            d = pair(layer.get("dilation_rate"), (1, 1))
            xp, oh, ow = padded(a, k, s, d, layer.get("padding", "valid"), 0.0)
            z = np.einsum("nhwijc,fijc->nhwf", patches(xp, oh, ow, k, s, d), p("kernel"))
            if layer.get("use_bias", True):
                z = z + p("bias")
            y = activate(layer.get("activation", "linear"), z)
        elif kind in ("max_pool2d", "avg_pool2d"):
            k = pair(layer.get("pool_size"), (2, 2))
            s = pair(layer.get("strides"), k)
            fill = -np.inf if kind == "max_pool2d" else np.nan
            xp, oh, ow = padded(a, k, s, (1, 1), layer.get("padding", "valid"), fill)
            w = patches(xp, oh, ow, k, s, (1, 1))
            y = w.max(axis=(3, 4)) if kind == "max_pool2d" else np.nanmean(w, axis=(3, 4))
        elif kind == "global_avg_pool2d":
            y = a.mean(axis=(1, 2))
        elif kind == "batch_norm":
            eps = float(layer.get("epsilon", 0.001))
            y = (a - p("moving_mean")) / np.sqrt(p("moving_variance") + eps)
            if layer.get("scale", True):
                y = y * p("gamma")
            if layer.get("center", True):
                y = y + p("beta")
        elif kind == "flatten":
            y = a.reshape(a.shape[0], -1)
        elif kind == "reshape":
            y = a.reshape((a.shape[0],) + tuple(int(v) for v in layer["target_shape"]))
        elif kind == "dropout":
            y = a
        elif kind in ACTIVATIONS or kind == "softmax":
            y = activate(kind, a)
        elif kind == "add":
            y = sum(ins)
        elif kind == "multiply":
            y = ins[0]
            for other in ins[1:]:
                y = y * other
        elif kind == "concatenate":
            y = np.concatenate(ins, axis=-1)
        else:
            sys.exit(f"numpy_graph_forward: no NumPy version of layer type '{kind}'")
        values[name] = y
        previous = name
    return values[previous]


def main():
    config_path, checkpoint, images_path, scale, predictions_path = sys.argv[1:6]
    tolerance = float(sys.argv[6]) if len(sys.argv) > 6 else 1e-5
    with open(config_path) as f:
        config = yaml.safe_load(f)
    model = config["model"]
    tensors = load_file(checkpoint)
    shape = tuple(int(v) for v in model["input_shape"])
    x = np.load(images_path).astype(np.float64).reshape((-1,) + shape) * float(scale)
    out = run(model["layers"], tensors, x)
    last = model["layers"][-1]
    if last.get("activation") != "softmax" and last["type"] != "softmax":
        out = softmax(out)  # predict writes probabilities
    predicted = np.load(predictions_path)
    if predicted.shape != out.shape:
        sys.exit(f"predictions: shape {predicted.shape}, expected {out.shape}")
    worst = float(np.abs(predicted - out).max())
    agree = float((predicted.argmax(axis=1) == out.argmax(axis=1)).mean())
    print(f"{len(x)} samples, {len(model['layers'])} layers: max |gputrain - numpy| = {worst:.3g}, "
          f"argmax agreement {agree:.4f}")
    if worst > tolerance:
        sys.exit(f"gputrain's probabilities differ from NumPy's by {worst:.3g} > {tolerance:g}")


main()
