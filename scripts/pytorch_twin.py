#!/usr/bin/env python3
"""The PyTorch twin of a gputrain config, built from the same YAML, for scripts/bench.

Reads the gputrain config (PyYAML) with the same --set KEY=VALUE overrides and
builds the same model: flatten, dense, conv2d, max_pool2d/avg_pool2d, dropout
and relu/sigmoid/tanh/gelu/softmax layers (a config with any other layer is refused, naming it);
softmax cross-entropy on logits (the final softmax is fused as gputrain does);
Adam or SGD with the config's hyperparameters; Keras initialisation
(Glorot-uniform kernels, zero biases); inputs x * data.scale; data.limit.
Data: an IDX data set (data.dataset: fashion-mnist / mnist, or data.path), read
with gzip + numpy. Images are NHWC in gputrain and NCHW here (PyTorch's
layout), so only the order of the flattened features differs.

Two ways to time it:
  --epochs N   (default training.epochs) times each epoch's training loop
               (reshuffled every epoch when training.shuffle), as scripts/bench
               did with pytorch_mlp.py; reports each epoch's seconds and mean loss.
  --steps N    times N training steps after --warmup W untimed ones, cycling
               through the first batches of the training set in order, as
               `gputrain bench` does; reports the median step and the last loss.

  python3 scripts/pytorch_twin.py CONFIG [--set KEY=VALUE]... [--threads N] [--device cpu|cuda]
          [--epochs N [--cuda-graph] | --steps N [--warmup W]] [--autocast bf16] [--json] [--data DIR]

With --device cuda the model and the whole data set live on the GPU and every
timed interval ends with a synchronize; the epoch's loss and accuracy sums stay
on the GPU until its end. --cuda-graph (with --device cuda) captures the whole
training step once as a CUDA graph (torch.cuda.graph; Adam with
capturable=True) and replays it for every full batch: PyTorch's fastest way
to run a small model's step, the peer of gputrain's training.cuda_graphs.
--autocast bf16 runs forward under torch.autocast(dtype=torch.bfloat16), the
peer of training.precision: bf16 (works on the CPU too, slowly).

On a GPU the twin computes in what gputrain's training.precision asks for,
not in PyTorch's defaults (which let cuDNN run fp32 convolutions in TF32):
fp32 turns TF32 off for matrix products and convolutions, tf32 turns it on for
both, and bf16/fp16 (with --autocast) leave convolutions in TF32, as gputrain
runs them in those modes. The line printed at the start says which.
"""
import argparse
import gzip
import json
import os
import statistics
import sys
import time

# numpy and torch are imported by import_libraries(), after the thread counts
# are in the environment: OpenBLAS (used by both, under Debian) and OpenMP read
# it once, when they are loaded. OpenBLAS starts its own pool, one thread per
# core, that torch.set_num_threads does not size, and its idle workers spin; so
# the BLAS gets one thread and PyTorch's own intra-op (OpenMP) pool gets
# --threads. On 2 cores, giving both pools 2 threads was about 2.5x slower
# (W1, batch 32). A GEMM-bound job (W2) needs the BLAS threads instead: --blas-threads.
np = torch = nn = yaml = None


class TwinError(Exception):
    """A config the twin cannot mirror, or missing data: one line for the user."""


def import_libraries(threads, blas_threads):
    global np, torch, nn
    os.environ["OPENBLAS_NUM_THREADS"] = str(blas_threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import numpy as np
    import torch
    from torch import nn
    torch.set_num_threads(threads)


def set_tf32(cfg, autocast):
    """TF32 on the GPU as gputrain's training.precision has it; returns a note for the log."""
    precision = "bf16" if autocast else str(cfg.get("training", {}).get("precision", "fp32"))
    matmul = precision == "tf32"
    convolutions = precision != "fp32"
    torch.backends.cuda.matmul.allow_tf32 = matmul
    torch.backends.cudnn.allow_tf32 = convolutions
    return (f"precision {precision}: TF32 {'on' if matmul else 'off'} for matrix products, "
            f"{'on' if convolutions else 'off'} for convolutions")


def load_config(path, overrides):
    try:
        with open(path) as f:
            cfg = yaml.safe_load(f)
    except OSError as e:
        raise TwinError(f"cannot read config '{path}': {e.strerror}")
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise TwinError(f"--set '{item}': expected KEY=VALUE, e.g. training.epochs=1")
        node = cfg
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = yaml.safe_load(value)
    return cfg


def pair(value, default=None):
    if value is None:
        return default
    return tuple(value) if isinstance(value, list) else (value, value)


ACTIVATIONS = {"relu": lambda: nn.ReLU(), "sigmoid": lambda: nn.Sigmoid(), "tanh": lambda: nn.Tanh(),
               "gelu": lambda: nn.GELU(), "linear": None}


def activation(name, where):
    if name not in ACTIVATIONS:
        raise TwinError(f"{where}: activation '{name}' has no twin here")
    return ACTIVATIONS[name]() if ACTIVATIONS[name] else None


def build_model(cfg):
    """nn.Sequential from model.layers. Returns (model, channels_last_input_shape)."""
    shape = list(cfg["model"]["input_shape"])
    layers_cfg = cfg["model"]["layers"]
    modules = []
    # Tracks the per-sample shape as PyTorch sees it: [C, H, W] for images, [F] once flat.
    spatial = len(shape) == 3
    cur = [shape[2], shape[0], shape[1]] if spatial else list(shape)
    for i, spec in enumerate(layers_cfg):
        kind = spec["type"]
        where = f"model.layers[{i}] ({kind})"
        last = i + 1 == len(layers_cfg)
        if kind == "flatten":
            modules.append(nn.Flatten())
            n = 1
            for d in cur:
                n *= d
            cur = [n]
        elif kind == "dense":
            if len(cur) != 1:
                raise TwinError(f"{where}: dense on a {len(cur)}-axis input has no twin here; flatten first")
            modules.append(nn.Linear(cur[0], spec["units"], bias=spec.get("use_bias", True)))
            cur = [spec["units"]]
            act = spec.get("activation", "linear")
            if act == "softmax":
                if not last:
                    raise TwinError(f"{where}: softmax is only supported on the last layer")
            else:
                a = activation(act, where)
                if a:
                    modules.append(a)
        elif kind == "conv2d":
            kh, kw = pair(spec["kernel_size"])
            sh, sw = pair(spec.get("strides"), (1, 1))
            same = spec.get("padding", "valid") == "same"
            if same and (sh, sw) != (1, 1):
                raise TwinError(f"{where}: padding same with strides has no twin here")
            conv = nn.Conv2d(cur[0], spec["filters"], (kh, kw), stride=(sh, sw),
                             padding="same" if same else 0, bias=spec.get("use_bias", True))
            modules.append(conv)
            h = cur[1] if same else (cur[1] - kh) // sh + 1
            w = cur[2] if same else (cur[2] - kw) // sw + 1
            cur = [spec["filters"], h, w]
            a = activation(spec.get("activation", "linear"), where)
            if a:
                modules.append(a)
        elif kind in ("max_pool2d", "avg_pool2d"):
            ph, pw = pair(spec.get("pool_size"), (2, 2))
            sh, sw = pair(spec.get("strides"), (ph, pw))
            if spec.get("padding", "valid") != "valid":
                raise TwinError(f"{where}: only padding valid has a twin here")
            pool = nn.MaxPool2d if kind == "max_pool2d" else nn.AvgPool2d
            modules.append(pool((ph, pw), stride=(sh, sw)))
            cur = [cur[0], (cur[1] - ph) // sh + 1, (cur[2] - pw) // sw + 1]
        elif kind == "dropout":
            modules.append(nn.Dropout(spec.get("rate", 0.0)))
        elif kind == "softmax":
            if not last:
                raise TwinError(f"{where}: softmax is only supported as the last layer")
        elif kind in ACTIVATIONS and ACTIVATIONS[kind]:
            modules.append(ACTIVATIONS[kind]())
        else:
            raise TwinError(f"{where}: layer type '{kind}' has no PyTorch twin here "
                            "(known: flatten, dense, conv2d, max_pool2d, avg_pool2d, dropout, relu, sigmoid, tanh, gelu, softmax)")
    last = layers_cfg[-1]
    if last.get("activation") != "softmax" and last["type"] != "softmax":
        raise TwinError("model.layers: the twin needs a final softmax (fused into the cross-entropy, as in gputrain)")
    model = nn.Sequential(*modules)
    for m in model:
        # Keras' Glorot-uniform (xavier_uniform_ takes the same fans for convolutions).
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return model, spatial


def under_autocast(model, device):
    """The model under torch.autocast in bf16: matrix products and convolutions
    in bfloat16, fp32 weights and logits (bf16 needs no loss scaling), as
    PyTorch's mixed-precision recipe does; the peer of training.precision: bf16."""

    class Autocast(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            with torch.autocast(device_type=device, dtype=torch.bfloat16):
                return self.inner(x).float()

    return Autocast(model)


def make_optimizer(cfg, params, capturable=False):
    o = cfg.get("optimizer", {})
    kind = o.get("type", "adam")
    lr = float(o.get("learning_rate", 1e-3))
    if kind == "adam":
        # capturable: Adam's step count stays on the GPU, as a CUDA graph needs (PyTorch >= 1.12).
        extra = {"capturable": True} if capturable else {}
        return torch.optim.Adam(params, lr=lr, betas=(float(o.get("beta1", 0.9)), float(o.get("beta2", 0.999))),
                                eps=float(o.get("epsilon", 1e-7)), **extra)
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=float(o.get("momentum", 0.0)),
                               nesterov=bool(o.get("nesterov", False)))
    raise TwinError(f"optimizer.type: '{kind}' has no twin here (adam, sgd)")


def read_idx(path, header_bytes):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=header_bytes)


def find_idx(folder, stem):
    for name in (stem + ".gz", stem):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    raise TwinError(f"no {stem}[.gz] in '{folder}'; install dataset-fashion-mnist or pass --data DIR")


def load_train(cfg, data_dir, spatial):
    d = cfg.get("data", {})
    if data_dir is None:
        # Where gputrain looks (data/dataset_resolve.cpp): $GPUTRAIN_DATA/NAME, ./datasets/NAME, /usr/share/datasets/NAME.
        data_dir = d.get("path")
        if not data_dir:
            name = str(d.get("dataset", ""))
            roots = [r for r in (os.environ.get("GPUTRAIN_DATA"), "datasets", "/usr/share/datasets") if r]
            found = [os.path.join(r, name) for r in roots if os.path.isdir(os.path.join(r, name))]
            data_dir = found[0] if found else os.path.join("/usr/share/datasets", name)
    if d.get("format", "idx") != "idx" or d.get("dataset") == "synthetic":
        raise TwinError("data: the twin reads IDX data sets only (fashion-mnist, mnist or an IDX data.path)")
    images = read_idx(find_idx(data_dir, "train-images-idx3-ubyte"), 16)
    labels = read_idx(find_idx(data_dir, "train-labels-idx1-ubyte"), 8)
    limit = int(d.get("limit", 0) or 0)
    n = len(labels) if limit <= 0 else min(limit, len(labels))
    shape = cfg["model"]["input_shape"]
    x = images[: n * 784].reshape(n, 28, 28).astype(np.float32) * float(d.get("scale", 1.0))
    x = torch.from_numpy(x)
    x = x.reshape(n, shape[2], shape[0], shape[1]) if spatial else x.reshape([n] + list(shape))
    return x, torch.from_numpy(labels[:n].astype(np.int64))


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def train_step(model, optimizer, loss_fn, xb, yb):
    optimizer.zero_grad()
    logits = model(xb)
    loss = loss_fn(logits, yb)
    loss.backward()
    optimizer.step()
    return logits, loss


class GraphedStep:
    """The whole training step (forward, loss, backward, Adam/SGD) captured once
    as a CUDA graph on static input buffers and replayed, as PyTorch's CUDA
    graphs guide shows for whole-network capture. Warm-up steps run on a side
    stream first (required before capture: they create the optimizer's state);
    the weights are then copied back in place and that state zeroed in place
    (Adam's step and moments, SGD's momentum: as before a first step), so the
    timed run starts where the eager one does, on the tensors the graph uses."""

    def __init__(self, model, optimizer, loss_fn, x0, y0):
        import copy
        self.x, self.y = x0.clone(), y0.clone()
        saved_model = copy.deepcopy(model.state_dict())
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                train_step(model, optimizer, loss_fn, self.x, self.y)
        torch.cuda.current_stream().wait_stream(side)
        model.load_state_dict(saved_model)
        with torch.no_grad():
            for state in optimizer.state.values():
                for value in state.values():
                    if torch.is_tensor(value):
                        value.zero_()
        self.graph = torch.cuda.CUDAGraph()
        optimizer.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            self.logits = model(self.x)
            self.loss = loss_fn(self.logits, self.y)
            self.loss.backward()
            optimizer.step()

    def __call__(self, xb, yb):
        self.x.copy_(xb)
        self.y.copy_(yb)
        self.graph.replay()
        return self.logits, self.loss


def run_epochs(args, cfg, model, optimizer, loss_fn, x, y, log):
    batch = int(cfg["training"]["batch_size"])
    step_graph = None
    if args.cuda_graph and len(x) >= batch:
        step_graph = GraphedStep(model, optimizer, loss_fn, x[:batch], y[:batch])
        print(f"CUDA graph: {len(x) // batch} full batches per epoch replay the captured step", file=log)
    shuffle = bool(cfg["training"].get("shuffle", True))
    generator = torch.Generator().manual_seed(int(cfg["training"].get("seed", 42)))
    epochs = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        sync(args.device)
        start = time.perf_counter()
        order = (torch.randperm(len(x), generator=generator) if shuffle else torch.arange(len(x))).to(x.device)
        # On the GPU the sums stay on the device until the epoch ends (no wait per
        # step, as gputrain does); on the CPU .item() costs nothing.
        total_loss = torch.zeros((), device=x.device) if args.device == "cuda" else 0.0
        correct = torch.zeros((), dtype=torch.int64, device=x.device) if args.device == "cuda" else 0
        graphed = len(x) // batch if step_graph else 0  # full batches replay the graph
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            if i // batch < graphed:
                logits, loss = step_graph(x[idx], y[idx])
                yb = step_graph.y
            else:
                xb, yb = x[idx], y[idx]
                logits, loss = train_step(model, optimizer, loss_fn, xb, yb)
            if args.device == "cuda":
                total_loss += loss.detach() * len(idx)
                correct += (logits.argmax(1) == yb).sum()
            else:
                total_loss += loss.item() * len(idx)
                correct += (logits.argmax(1) == yb).sum().item()
        sync(args.device)
        seconds = time.perf_counter() - start
        total_loss, correct = float(total_loss), int(correct)
        epochs.append({"epoch": epoch, "seconds": seconds, "loss": total_loss / len(x), "accuracy": correct / len(x)})
        print(f"epoch {epoch}/{args.epochs}: {seconds:.3f}s - loss {epochs[-1]['loss']:.4f} - "
              f"accuracy {epochs[-1]['accuracy']:.4f}", file=log)
    median = statistics.median(e["seconds"] for e in epochs)
    return {"epochs": epochs, "median_epoch_seconds": median, "final_loss": epochs[-1]["loss"],
            "samples": len(x), "steps_per_epoch": (len(x) + batch - 1) // batch}


def run_steps(args, cfg, model, optimizer, loss_fn, x, y, log):
    # The first batches in order, as `gputrain bench` cycles them (at most 16).
    batch = int(cfg["training"]["batch_size"])
    distinct = max(1, min(args.warmup + args.steps, 16, (len(x) + batch - 1) // batch))
    batches = []
    for s in range(distinct):
        idx = torch.arange(s * batch, (s + 1) * batch) % len(x)
        batches.append((x[idx.to(x.device)], y[idx.to(x.device)]))
    model.train()
    times = []
    loss = None
    for step in range(args.warmup + args.steps):
        xb, yb = batches[step % distinct]
        sync(args.device)
        start = time.perf_counter()
        _, loss = train_step(model, optimizer, loss_fn, xb, yb)
        sync(args.device)
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    final = loss.item()
    median = statistics.median(times)
    print(f"{args.steps} steps after {args.warmup} warm-up: median {median * 1e3:.2f} ms/step; "
          f"last loss {final:.4f}", file=log)
    return {"step_seconds": times, "median_step_seconds": median, "final_loss": final}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", help="gputrain YAML config")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, as gputrain's --set (repeatable)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch.set_num_threads (default 1)")
    parser.add_argument("--blas-threads", type=int, default=1, help="OpenBLAS threads (default 1)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where to train (default cpu)")
    parser.add_argument("--epochs", type=int, help="timed epochs (default training.epochs)")
    parser.add_argument("--steps", type=int, help="time this many steps instead of epochs")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps before --steps (default 3)")
    parser.add_argument("--cuda-graph", action="store_true",
                        help="with --device cuda and --epochs: capture the training step as a CUDA graph "
                             "(torch.cuda.graph) and replay it for every full batch")
    parser.add_argument("--autocast", choices=["bf16"],
                        help="run forward under torch.autocast in this precision (fp32 weights)")
    parser.add_argument("--data", help="folder with the IDX files (default from the config)")
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args()
    for name in ("threads", "blas_threads", "epochs", "steps"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must be at least 0")
    if args.cuda_graph and (args.device != "cuda" or args.steps):
        parser.error("--cuda-graph needs --device cuda and times epochs (not --steps)")

    global yaml
    try:
        import yaml
    except ImportError:
        sys.exit("pytorch_twin: PyYAML is missing; run scripts/install-deps --bench (python3-yaml)")
    import_libraries(args.threads, args.blas_threads)
    try:
        cfg = load_config(args.config, args.set)
        torch.manual_seed(int(cfg["training"].get("seed", 42)))
        model, spatial = build_model(cfg)
        x, y = load_train(cfg, args.data, spatial)
        if args.device == "cuda":
            if not torch.cuda.is_available():
                raise TwinError("--device cuda but PyTorch sees no GPU")
            x, y = x.cuda(), y.cuda()
            tf32_note = set_tf32(cfg, args.autocast)
        model = model.to(args.device)
        if args.autocast:
            model = under_autocast(model, args.device)
        optimizer = make_optimizer(cfg, model.parameters(), capturable=args.cuda_graph)
    except (TwinError, KeyError) as e:
        sys.exit(f"pytorch_twin: {args.config}: {e}")
    loss_fn = nn.CrossEntropyLoss()
    log = sys.stderr if args.json else sys.stdout
    if args.device == "cuda":
        print(tf32_note, file=log)
    print(f"PyTorch {torch.__version__} on {args.device}{' (autocast ' + args.autocast + ')' if args.autocast else ''}, "
          f"{torch.get_num_threads()} thread(s) (BLAS: {args.blas_threads}), "
          f"{len(x)} training samples, batch {cfg['training']['batch_size']}", file=log)
    if args.steps:
        result = run_steps(args, cfg, model, optimizer, loss_fn, x, y, log)
    else:
        args.epochs = args.epochs or int(cfg["training"].get("epochs", 1))
        result = run_epochs(args, cfg, model, optimizer, loss_fn, x, y, log)
    if args.json:
        result.update({"torch": torch.__version__, "threads": torch.get_num_threads(), "blas_threads": args.blas_threads,
                       "device": args.device, "cuda_graph": args.cuda_graph, "autocast": args.autocast})
        print(json.dumps(result))


if __name__ == "__main__":
    main()
