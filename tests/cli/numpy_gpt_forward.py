"""An independent forward pass of a gputrain GPT checkpoint (a model trained
on data.format: text), in NumPy (float64), written again from the layers'
definitions: the mean next-token cross-entropy over every position of the
held-out windows, the windows `gputrain evaluate` scores.

  numpy_gpt_forward.py CHECKPOINT [--text PATH] [--expect LOSS] [--tolerance TOL]
                       [--prompt TEXT --greedy FILE] [--onnx MODEL.onnx]

The checkpoint is read with the standard library and NumPy alone (an 8-byte
header length, a JSON header, F32 tensors), and the model from the resolved
config in its metadata ("config"). The text is the config's data.path (a
.txt file, or every .txt file of a folder, sorted), or --text PATH. It is cut
as gputrain cuts it: tokens (characters, or bytes with tokenizer: bytes),
windows of T = model.input_shape[0] tokens every T tokens, each position
labelled with the next token; the last windows are held out by Keras' rule
(train_count = int(W * (1 - data.validation_split))).

Layers: embedding, positional_embedding, layer_norm, rms_norm,
causal_self_attention (rotary: RoPE, GPT-NeoX's half split; its dropout is
training's only), dense (linear, relu, gelu, tanh, sigmoid, softmax;
tie_weights: the embedding's table, transposed, read once from the
checkpoint), dropout (identity), add. Prints the loss; with --expect, exits 1 when it
differs from LOSS by more than TOL (default 1e-4).

With --onnx MODEL.onnx (`gputrain export` of the checkpoint), ONNX Runtime
runs the file on the same windows: its probabilities must be NumPy's within
1e-5 at every position (exit 77 when onnxruntime cannot be imported).

With --greedy FILE, the output of `gputrain generate --prompt TEXT --top-k 1`
(chars tokenizer): each token after the prompt must be the full model's most
likely next token over the context generate keeps (the last block of tokens;
once the block is full, its last half, then growing again), or within 1e-4 of
it in logit (a near tie that float32 may break either way).
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import yaml

ERF = np.frompyfunc(math.erf, 1, 1)

ACTIVATIONS = {
    "linear": lambda z: z,
    "relu": lambda z: np.maximum(z, 0.0),
    "sigmoid": lambda z: 1.0 / (1.0 + np.exp(-z)),
    "tanh": np.tanh,
    # The exact GELU: x * Phi(x), Phi with the error function.
    "gelu": lambda z: 0.5 * z * (1.0 + ERF(z / math.sqrt(2.0)).astype(np.float64)),
}


def read_checkpoint(path):
    """(metadata, {name: float64 array}) of a safetensors file; optimizer state left out."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = memoryview(blob)[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or name.startswith("optimizer/"):
            continue
        if info["dtype"] != "F32":
            sys.exit(f"{path}: {name} is {info['dtype']}, expected F32")
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype="<f4").reshape(info["shape"]).astype(np.float64)
    return header.get("__metadata__", {}), tensors


def log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


def rms_norm(x, gamma, eps):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * gamma


def rotate(x):
    """RoPE, GPT-NeoX's half split (base 10000), on x (N, H, T, D): column i < D/2
    pairs with i + D/2 and turns by position * 10000^(-2i/D). The cosines and
    sines in float64, rounded to float32 as gputrain rounds them."""
    t, d = x.shape[-2], x.shape[-1]
    angle = np.arange(t, dtype=np.float64)[:, None] * 10000.0 ** (-2.0 * np.arange(d // 2) / d)
    cos, sin = np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)
    a, b = x[..., :d // 2], x[..., d // 2:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


def causal_self_attention(x, qkv_kernel, qkv_bias, out_kernel, out_bias, heads, rotary=False):
    """x: (N, T, C). qkv columns [q | k | v]; head h takes columns h*D..(h+1)*D of each."""
    n, t, c = x.shape
    d = c // heads
    qkv = x @ qkv_kernel
    if qkv_bias is not None:
        qkv = qkv + qkv_bias
    # (N, T, 3, H, D) -> q, k, v of (N, H, T, D)
    q, k, v = qkv.reshape(n, t, 3, heads, d).transpose(2, 0, 3, 1, 4)
    if rotary:
        q, k = rotate(q), rotate(k)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)          # (N, H, T, T)
    future = np.triu(np.ones((t, t), dtype=bool), k=1)           # key j after query i
    scores = np.where(future, -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(n, t, c)            # heads side by side
    y = o @ out_kernel
    if out_bias is not None:
        y = y + out_bias
    return y


def run(layers, tensors, ids):
    """The logits (or log-probabilities, for a softmax output) of ids (N, T)."""
    values = {"input": ids}
    previous = "input"
    logits = True
    for layer in layers:
        kind, name = layer["type"], layer["name"]
        given = layer.get("inputs", previous)
        ins = [values[i] for i in (given if isinstance(given, list) else [given])]
        a = ins[0]
        p = lambda key: tensors[f"{name}/{key}"]
        q = lambda key: tensors.get(f"{name}/{key}")
        logits = True
        if kind == "embedding":
            y = p("embeddings")[a.astype(np.int64)]
        elif kind == "positional_embedding":
            y = a + p("embeddings")[:a.shape[1]]
        elif kind == "layer_norm":
            y = layer_norm(a, q("gamma"), q("beta"), float(layer.get("epsilon", 1e-5)))
        elif kind == "rms_norm":
            y = rms_norm(a, p("gamma"), float(layer.get("epsilon", 1e-6)))
        elif kind == "causal_self_attention":
            y = causal_self_attention(a, p("qkv_kernel"), q("qkv_bias"), p("out_kernel"), q("out_bias"),
                                      int(layer["heads"]), str(layer.get("rotary", False)).lower() == "true")
        elif kind == "dense":
            # tie_weights: the kernel is the named embedding's table, transposed
            # (stored once, as that layer's tensor).
            tied = layer.get("tie_weights")
            z = a @ (tensors[f"{tied}/embeddings"].T if tied else p("kernel"))
            if layer.get("use_bias", True):
                z = z + p("bias")
            activation = layer.get("activation", "linear")
            if activation == "softmax":
                y, logits = log_softmax(z), False  # the log of the probabilities
            else:
                y = ACTIVATIONS[activation](z)
        elif kind == "dropout":
            y = a
        elif kind == "add":
            y = sum(ins)
        else:
            sys.exit(f"numpy_gpt_forward: no NumPy version of layer type '{kind}'")
        values[name] = y
        previous = name
    return values[previous], logits


def text_files(path):
    if os.path.isfile(path):
        return [path]
    files = sorted(os.path.join(path, f) for f in os.listdir(path)
                   if f.endswith(".txt") and os.path.isfile(os.path.join(path, f)))
    if not files:
        sys.exit(f"{path}: no .txt files")
    return files


def data_path(data):
    if data.get("path"):
        return data["path"]
    name = data["dataset"]
    roots = [os.environ.get("GPUTRAIN_DATA", ""), "datasets", "/usr/share/datasets"]
    for root in roots:
        if root and os.path.isdir(os.path.join(root, name)):
            return os.path.join(root, name)
    sys.exit(f"data.dataset {name}: not found under {', '.join(r for r in roots if r)}; give --text PATH")


def token_ids(files, tokenizer, metadata):
    """The token ids of the files, one after another, as gputrain reads them."""
    raw = b"".join(open(f, "rb").read() for f in files)
    if tokenizer == "bytes":
        return np.frombuffer(raw, dtype=np.uint8).astype(np.int64), 256
    chars = raw.decode("utf-8")  # from the bytes: no newline translation
    vocabulary = sorted(set(chars))  # every character, sorted by code point
    stored = metadata.get("vocabulary")
    if stored is not None and stored != "".join(vocabulary):
        sys.exit(f"the text's {len(vocabulary)} characters are not the checkpoint's vocabulary of {len(stored)}")
    index = {c: i for i, c in enumerate(vocabulary)}
    return np.array([index[c] for c in chars], dtype=np.int64), len(vocabulary)


def check_greedy(model, tensors, metadata, prompt, path):
    """generate's greedy text (FILE) against the full model, recomputed from each context."""
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    if not text.startswith(prompt) or not text.endswith("\n"):
        sys.exit(f"{path}: does not start with the prompt and end with a newline")
    generated = text[len(prompt):-1]
    if "vocabulary" not in metadata:
        sys.exit("--greedy reads models of tokenizer: chars (the checkpoint has no 'vocabulary')")
    index = {c: i for i, c in enumerate(metadata["vocabulary"])}
    context = [index[c] for c in prompt]
    t = int(model["input_shape"][0])
    kept = min(t, len(context))  # the tokens in generate's key/value cache
    ties = 0
    for i, c in enumerate(generated):
        out, _ = run(model["layers"], tensors, np.array([context[-kept:]]))
        scores = out[0, -1]
        chosen = index[c]
        if chosen != int(scores.argmax()):
            if scores.max() - scores[chosen] > 1e-4:
                sys.exit(f"generated token {i} ({c!r}) is not the model's most likely "
                         f"({metadata['vocabulary'][int(scores.argmax())]!r}, "
                         f"{scores.max() - scores[chosen]:.3g} more likely in logit); context {kept} tokens")
            ties += 1
        context.append(chosen)
        kept = max(1, t // 2) if kept == t else kept + 1
    print(f"{len(generated)} greedy tokens are the full model's most likely ({ties} near ties)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--text", help="the text file or folder (default: the config's data.path)")
    parser.add_argument("--expect", type=float, help="gputrain evaluate's loss, to compare with")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--prompt", help="the prompt of --greedy's text")
    parser.add_argument("--greedy", help="gputrain generate --top-k 1's output, to check token by token")
    parser.add_argument("--onnx", help="gputrain export's ONNX file of the checkpoint, to run on the windows")
    args = parser.parse_args()

    metadata, tensors = read_checkpoint(args.checkpoint)
    if "config" not in metadata:
        sys.exit(f"{args.checkpoint}: no resolved config in its metadata")
    config = yaml.safe_load(metadata["config"])
    model, data = config["model"], config["data"]
    if data.get("format") != "text":
        sys.exit(f"{args.checkpoint}: data.format is {data.get('format')}, not text")
    loss = config["loss"]
    from_logits = isinstance(loss, dict) and bool(loss.get("from_logits", False))

    if args.greedy:
        check_greedy(model, tensors, metadata, args.prompt, args.greedy)
        return
    tokenizer = data.get("tokenizer", "chars")
    ids, vocab = token_ids(text_files(args.text or data_path(data)), tokenizer, metadata)
    t = int(model["input_shape"][0])
    windows = (len(ids) - 1) // t
    limit = int(data.get("limit", 0) or 0)
    used = min(windows, limit) if limit > 0 else windows
    split = float(data.get("validation_split", 0.0))
    if split <= 0:
        sys.exit("data.validation_split is 0: no held-out windows")
    begin = int(used * (1.0 - split))  # Keras: train_count = int(W * (1 - v))
    starts = np.arange(begin, used) * t
    x = ids[starts[:, None] + np.arange(t)]
    y = ids[starts[:, None] + np.arange(t) + 1]

    session = None
    if args.onnx:
        try:
            import onnxruntime as ort
        except ImportError:
            print("onnxruntime cannot be imported: the ONNX file is not run")
            sys.exit(77)
        session = ort.InferenceSession(args.onnx, providers=["CPUExecutionProvider"])
        worst = 0.0
    total = 0.0
    for i in range(0, len(x), 256):  # a few windows at a time: (N, H, T, T) scores
        out, logits = run(model["layers"], tensors, x[i:i + 256])
        if out.shape[-1] < vocab:
            sys.exit(f"the model has {out.shape[-1]} outputs, fewer than the vocabulary of {vocab}")
        if logits and not from_logits:
            sys.exit("the last layer gives logits, and loss.from_logits is false: not a model this script reads")
        logp = log_softmax(out) if logits else out
        if session is not None:
            if session.get_inputs()[0].type != "tensor(int64)":  # a GPT's file takes token ids as int64
                sys.exit(f"{args.onnx}: the input is {session.get_inputs()[0].type}, not tensor(int64) token ids")
            probs = session.run(["output"], {"input": x[i:i + 256].astype(np.int64)})[0]
            worst = max(worst, float(np.max(np.abs(probs.astype(np.float64) - np.exp(logp)))))
        total += -np.take_along_axis(logp, y[i:i + 256][..., None], axis=-1).sum()
    mean = total / y.size
    print(f"{len(x)} held-out windows of {t} tokens ({y.size} positions), {len(model['layers'])} layers: "
          f"loss {mean:.6f}, perplexity {math.exp(mean):.4f}, {mean / math.log(2):.4f} bits per "
          f"{'byte' if tokenizer == 'bytes' else 'character'}")
    if session is not None:
        print(f"onnxruntime: max |onnx - numpy| probability = {worst:.3g}")
        if not worst <= 1e-5:
            sys.exit(f"ONNX Runtime's probabilities differ from NumPy's by {worst:.3g} > 1e-05")
    if args.expect is not None:
        diff = abs(mean - args.expect)
        print(f"|gputrain - numpy| = {diff:.3g}")
        if not diff <= args.tolerance:
            sys.exit(f"gputrain's loss {args.expect} differs from NumPy's {mean:.6f} by {diff:.3g} > {args.tolerance:g}")


main()
