#!/usr/bin/env python3
"""The PyTorch twin of gputrain's character GPT: same model, same data windows.

Trains nanoGPT's GPT (pre-norm transformer) on a text file with the
definitions gputrain uses, for the speed and accuracy comparison. Needs
PyTorch 1.13 or 2.x and NumPy, nothing else.

Data
  --tokenizer chars: the vocabulary is the sorted distinct Unicode code points
  of the whole file (read as UTF-8, line endings untouched); a token is the
  index of its character in that list. --tokenizer bytes: the file's bytes
  (vocabulary 256). With T = --block and tokens t[0..n), there are
  W = (n - 1) // T windows; window i is the input t[iT : iT+T] with the
  targets t[iT+1 : iT+T+1]. The LAST windows are the validation set (their
  count: split_count below); the others train. Each epoch draws a fresh random
  permutation of the training windows and takes batches of --batch
  consecutive entries of it; the last batch of an epoch is short (as in
  gputrain) unless --drop-last. --steps optimizer steps in all, epochs rolling
  over. The validation loss is the mean token cross-entropy over every position
  of every validation window, after every --eval-every steps and at the end.

Model (width C, L layers, H heads, D = C / H, dropout p)
  x = tok_emb[ids] + pos_emb[0..T); x = dropout(x); L blocks of
    a = x + dropout(attn(layer_norm(x)))
    x = a + dropout(W2 gelu(W1 layer_norm(a) + b1) + b2)      (hidden 4C)
  then layer_norm and a dense head C -> V with bias (not tied to tok_emb;
  with --tie its weight IS tok_emb's table, nanoGPT's lm_head.weight =
  wte.weight, gputrain's `tie_weights: embedding`: x tok_emb^T + b).
  attn: qkv = x Wqkv + bqkv, columns [q | k | v], head h uses columns
  h*D..(h+1)*D of each; causal dropout(softmax(q k^T / sqrt(D))) v, heads
  concatenated, then O Wo + bo: dropout p on the attention weights too in
  training (nanoGPT's attn_dropout; gputrain's causal_self_attention
  dropout: p, whose masks are its own hash, not PyTorch's). LayerNorm eps 1e-5,
  GELU exact (erf). F.scaled_dot_product_attention(is_causal=True) where
  PyTorch has it (2.x), else an explicit masked softmax (1.13).
  Init as gputrain's (Keras's): embeddings uniform(-0.05, 0.05), every dense
  kernel Glorot-uniform (limit sqrt(6 / (fan_in + fan_out))), biases 0,
  LayerNorm weight 1 and bias 0. With --tie the head draws no weight of its
  own: the table keeps its embedding init, as gputrain's tied layer has no
  kernel to draw (so the draws after it differ from the untied model's in
  gputrain; PyTorch's seeded draws never matched gputrain's anyway).

Optimizer
  torch.optim.AdamW(betas=(0.9, --beta2), eps=--eps, default 1e-7, Keras's
  epsilon; fused on CUDA where PyTorch has it). PyTorch adds eps to
  sqrt(v_hat), Keras and gputrain to sqrt(v) (eps * sqrt(1 - beta2^t) in
  PyTorch's terms): the same to within eps. Decoupled weight decay
  --weight-decay on the 2-D kernels of the dense layers only (not biases,
  LayerNorms or embeddings; with --tie the head's weight is the token
  table, an embedding: not decayed, as gputrain's no_decay: [embedding]
  leaves a tied table). Gradients clipped to global norm --clip (0: off).
  Learning rate at step s (0-based): lr_at() below, a linear warmup over
  --warmup steps from 0, then a cosine from --lr to --min-lr at --steps.

Presets (explicit flags override them)
  --preset small: nanoGPT's baby GPT for CPUs (block 64, 4 layers, 4 heads,
    width 128, batch 12, 2000 steps, dropout 0, lr 1e-3 -> 1e-4, warmup 100,
    beta2 0.99, weight decay 0.1, clip 1.0).
  --preset gpt: nanoGPT's shakespeare_char (block 256, 6 layers, 6 heads,
    width 384, dropout 0.2, batch 64, 5000 steps, lr 1e-3 -> 1e-4, warmup 100,
    beta2 0.99, weight decay 0.1, clip 1.0).

Timing: tokens/s counts the training steps after the first 10 (warm-up,
torch.compile), excluding the time spent evaluating; on CUDA each timed
interval ends with a synchronize. MFU (with --peak-tflops) uses nanoGPT's
estimate: 6 N + 12 L C T FLOPs per token, N = the parameters that are not
embeddings (the head's included; with --tie the token table counts once,
as the head, and only the positions are left out, as nanoGPT counts).

  python3 scripts/gpt_twin.py --text datasets/shakespeare/shakespeare.txt --preset small --threads 2 --json
"""
import argparse
import json
import math
import os
import sys
import time

# numpy and torch are imported after the thread counts are in the
# environment (OpenBLAS and OpenMP read them once, when loaded); see
# scripts/pytorch_twin.py.
np = torch = nn = F = None

PRESETS = {
    "small": dict(block=64, layers=4, heads=4, width=128, batch=12, steps=2000, dropout=0.0, lr=1e-3,
                  min_lr=1e-4, warmup=100, beta2=0.99, weight_decay=0.1, clip=1.0),
    "gpt": dict(block=256, layers=6, heads=6, width=384, dropout=0.2, batch=64, steps=5000, lr=1e-3,
                min_lr=1e-4, warmup=100, beta2=0.99, weight_decay=0.1, clip=1.0),
}
# Without a preset: the small one's shape and schedule.
DEFAULTS = dict(PRESETS["small"], eval_every=250, validation_split=0.1, eps=1e-7, seed=42)

TIMING_SKIP = 10  # training steps left out of tokens/s


class TwinError(Exception):
    """Bad input or flags: one line for the user."""


def split_count(windows, fraction):
    """How many of the `windows` windows train; the last (windows - that) validate.

    gputrain's rule for every format (src/data/dataset_split.cpp training_count,
    which its text reader uses too), Keras's: int(windows * (1 - fraction)).
    The same arithmetic in doubles as gputrain's. The other candidate,
    validation = round-half-up(windows * fraction), gives training one window
    more where windows * fraction has a fractional part in (0, 0.5) (the gpt
    preset on shakespeare.txt: 19754 windows, 17778 vs 17779 train).
    """
    return int(windows * (1.0 - fraction))
    # return windows - int(windows * fraction + 0.5)


def lr_at(step, lr, min_lr, warmup, steps):
    """The learning rate of optimizer step `step` (0-based)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * progress))


def epoch_batches(permutation, batch, drop_last):
    """The batches of one epoch: consecutive runs of `batch` entries of the permutation."""
    count = len(permutation)
    end = count - count % batch if drop_last else count
    return [permutation[i:min(i + batch, count)] for i in range(0, end, batch)]


def read_tokens(path, tokenizer):
    """(token ids as int64 NumPy array, vocabulary size, description of the vocabulary)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise TwinError(f"{path}: {e.strerror}")
    if tokenizer == "bytes":
        return np.frombuffer(raw, dtype=np.uint8).astype(np.int64), 256, "bytes"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TwinError(f"{path}: not UTF-8 at byte {e.start} ({e.reason}); --tokenizer bytes reads any file")
    points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    vocab = np.unique(points)  # sorted distinct code points
    ids = np.searchsorted(vocab, points).astype(np.int64)
    ascii_only = bool(vocab.size == 0 or vocab[-1] < 128)
    return ids, int(vocab.size), f"{vocab.size} distinct characters{' (ASCII)' if ascii_only else ''}"


def build_model(vocab, block, layers, heads, width, dropout, tie=False):
    sdpa = getattr(F, "scaled_dot_product_attention", None)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(width, 3 * width)
            self.out = nn.Linear(width, width)
            if sdpa is None:
                self.register_buffer("mask", torch.tril(torch.ones(block, block, dtype=torch.bool)), persistent=False)

        def forward(self, x):
            b, t, c = x.shape
            d = c // heads
            q, k, v = self.qkv(x).split(c, dim=2)
            q, k, v = (z.view(b, t, heads, d).transpose(1, 2) for z in (q, k, v))  # (b, heads, t, d)
            if sdpa is not None:
                o = sdpa(q, k, v, dropout_p=dropout if self.training else 0.0, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
                att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
                o = F.dropout(torch.softmax(att, dim=-1), p=dropout, training=self.training) @ v
            return self.out(o.transpose(1, 2).reshape(b, t, c))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(width, eps=1e-5)
            self.attn = Attention()
            self.norm2 = nn.LayerNorm(width, eps=1e-5)
            self.fc1 = nn.Linear(width, 4 * width)
            self.fc2 = nn.Linear(4 * width, width)
            self.drop = nn.Dropout(dropout)

        def forward(self, x):
            a = x + self.drop(self.attn(self.norm1(x)))
            return a + self.drop(self.fc2(F.gelu(self.fc1(self.norm2(a)))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb = nn.Embedding(vocab, width)
            self.pos_emb = nn.Embedding(block, width)
            self.drop = nn.Dropout(dropout)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.norm = nn.LayerNorm(width, eps=1e-5)
            self.head = nn.Linear(width, vocab)
            for module in self.modules():
                if isinstance(module, nn.Embedding):
                    nn.init.uniform_(module.weight, -0.05, 0.05)
                elif isinstance(module, nn.Linear):
                    nn.init.xavier_uniform_(module.weight)  # (out, in): the same limit as Keras's (in, out)
                    nn.init.zeros_(module.bias)
            if tie:  # after the init: the shared table keeps the embedding's
                self.head.weight = self.tok_emb.weight

        def forward(self, ids):
            t = ids.shape[1]
            x = self.drop(self.tok_emb(ids) + self.pos_emb.weight[:t])
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.norm(x))

    return GPT(), ("F.scaled_dot_product_attention" if sdpa is not None else "masked softmax")


def make_optimizer(model, args, device):
    # Dense kernels; a head tied to tok_emb (--tie) holds an embedding table.
    tables = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    decay = [m.weight for m in model.modules() if isinstance(m, nn.Linear) and id(m.weight) not in tables]
    decay_ids = {id(p) for p in decay}
    rest = [p for p in model.parameters() if id(p) not in decay_ids]
    groups = [{"params": decay, "weight_decay": args.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    kwargs = dict(lr=args.lr, betas=(0.9, args.beta2), eps=args.eps)
    fused = False
    if device.type == "cuda":
        try:
            opt = torch.optim.AdamW(groups, fused=True, **kwargs)
            fused = True
        except (TypeError, RuntimeError):
            opt = torch.optim.AdamW(groups, **kwargs)
    else:
        opt = torch.optim.AdamW(groups, **kwargs)
    return opt, fused


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[2:]))
    p.add_argument("--text", required=True, metavar="FILE", help="the text file to train on")
    p.add_argument("--tokenizer", choices=["chars", "bytes"], default="chars", help="default chars")
    p.add_argument("--preset", choices=sorted(PRESETS), help="small or gpt (see below); flags override it")
    p.add_argument("--block", type=int, help="T, the context length (default 64)")
    p.add_argument("--layers", type=int, help="transformer blocks (default 4)")
    p.add_argument("--heads", type=int, help="attention heads (default 4)")
    p.add_argument("--width", type=int, help="C, the embedding width (default 128)")
    p.add_argument("--dropout", type=float, help="dropout rate (default 0)")
    p.add_argument("--tie", action="store_true",
                   help="tie the head's weight to tok_emb (nanoGPT's weight tying; gputrain's tie_weights)")
    p.add_argument("--batch", type=int, help="windows per batch (default 12)")
    p.add_argument("--drop-last", action="store_true", help="skip each epoch's short last batch")
    p.add_argument("--steps", type=int, help="optimizer steps in all (default 2000)")
    p.add_argument("--lr", type=float, help="peak learning rate (default 1e-3)")
    p.add_argument("--min-lr", type=float, help="learning rate at the end of the cosine (default 1e-4)")
    p.add_argument("--warmup", type=int, help="linear warmup steps (default 100)")
    p.add_argument("--beta2", type=float, help="AdamW beta2 (default 0.99)")
    p.add_argument("--eps", type=float, help="AdamW epsilon (default 1e-7, Keras's and gputrain's)")
    p.add_argument("--weight-decay", type=float, help="decoupled weight decay of dense kernels (default 0.1)")
    p.add_argument("--clip", type=float, help="clip gradients to this global norm; 0 = off (default 1.0)")
    p.add_argument("--validation-split", type=float, help="fraction of windows held out, the last ones (default 0.1)")
    p.add_argument("--eval-every", type=int, help="validate every N steps, and at the end; 0 = at the end only (default 250)")
    p.add_argument("--seed", type=int, help="initialisation, dropout and shuffle seed (default 42)")
    p.add_argument("--threads", type=int, help="CPU threads (torch.set_num_threads; default PyTorch's)")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda (cuda:N)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch 2.x)")
    p.add_argument("--bf16", action="store_true", help="forward under torch.autocast(bfloat16)")
    p.add_argument("--tf32", action="store_true", help="let fp32 matrix products use TF32 on CUDA (off by default)")
    p.add_argument("--peak-tflops", type=float, help="the device's peak TFLOP/s, for MFU")
    p.add_argument("--json", action="store_true", help="print one JSON line of results at the end")
    args = p.parse_args(argv)
    settings = dict(DEFAULTS, **(PRESETS[args.preset] if args.preset else {}))
    for key, value in settings.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    checks = [
        (args.block >= 1, "--block must be at least 1"),
        (args.layers >= 0, "--layers must be at least 0"),
        (args.heads >= 1 and args.width % args.heads == 0, "--width must be a multiple of --heads"),
        (args.batch >= 1, "--batch must be at least 1"),
        (args.steps >= 1, "--steps must be at least 1"),
        (args.warmup >= 0, "--warmup must be at least 0"),
        (0.0 <= args.dropout < 1.0, "--dropout must be in [0, 1)"),
        (0.0 <= args.validation_split < 1.0, "--validation-split must be in [0, 1)"),
        (args.eval_every >= 0, "--eval-every must be at least 0"),
        (args.threads is None or args.threads >= 1, "--threads must be at least 1"),
    ]
    for ok, message in checks:
        if not ok:
            p.error(message)
    return args


def run(args):
    global np, torch, nn, F
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import numpy as np
    import torch
    from torch import nn
    from torch.nn import functional as F
    if args.threads:
        torch.set_num_threads(args.threads)

    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise TwinError("--device cuda: PyTorch sees no CUDA device")
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        torch.backends.cudnn.allow_tf32 = args.tf32
    elif device.type != "cpu":
        raise TwinError(f"--device {args.device}: cpu or cuda")
    if args.compile and not hasattr(torch, "compile"):
        raise TwinError(f"--compile needs PyTorch 2.x (this is {torch.__version__})")

    tokens, vocab, vocab_note = read_tokens(args.text, args.tokenizer)
    T, B = args.block, args.batch
    n = len(tokens)
    windows = (n - 1) // T if n > 0 else 0
    n_train = split_count(windows, args.validation_split)
    n_val = windows - n_train
    if n_train < 1:
        raise TwinError(f"{args.text}: {n} tokens make {windows} windows of {T}, leaving none to train on")
    if args.drop_last and n_train < B:
        raise TwinError(f"--drop-last: {n_train} training windows make no full batch of {B}")

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    all_tokens = torch.from_numpy(tokens[:windows * T + 1].copy()).to(device)
    inputs = all_tokens[:windows * T].view(windows, T)
    targets = all_tokens[1:windows * T + 1].view(windows, T)

    model, attention = build_model(vocab, T, args.layers, args.heads, args.width, args.dropout, args.tie)
    model.to(device)
    params = sum(p.numel() for p in model.parameters())  # a tied table once
    embedding_params = model.pos_emb.weight.numel() + (0 if args.tie else model.tok_emb.weight.numel())
    flops_per_token = 6 * (params - embedding_params) + 12 * args.layers * args.width * T
    opt, fused = make_optimizer(model, args, device)
    step_model = torch.compile(model) if args.compile else model

    def autocast():
        if args.bf16:
            return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
        return torch.autocast(device_type=device.type, enabled=False)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def validation_loss():
        if n_val == 0:
            return None
        model.eval()
        total = torch.zeros((), dtype=torch.float64, device=device)
        with torch.no_grad():
            for start in range(n_train, windows, B):
                end = min(start + B, windows)
                with autocast():
                    logits = step_model(inputs[start:end])
                total += F.cross_entropy(logits.float().reshape(-1, vocab), targets[start:end].reshape(-1),
                                         reduction="sum").double()
        model.train()
        return total.item() / (n_val * T)

    log = sys.stderr if args.json else sys.stdout
    print(f"gpt_twin: {args.text}: {n} tokens, {vocab_note}, vocabulary {vocab}; {windows} windows of {T}: "
          f"{n_train} train, {n_val} validation", file=log)
    print(f"gpt_twin: {params} parameters (L {args.layers}, H {args.heads}, C {args.width}, dropout {args.dropout}"
          f"{', head tied to tok_emb' if args.tie else ''}); "
          f"batch {B}, {args.steps} steps, lr {args.lr} -> {args.min_lr}, warmup {args.warmup}, "
          f"AdamW(0.9, {args.beta2}, eps {args.eps}{', fused' if fused else ''}), weight decay {args.weight_decay}, "
          f"clip {args.clip}; {attention}; torch {torch.__version__} on {device}"
          f"{' (' + torch.cuda.get_device_name(device) + ')' if device.type == 'cuda' else ''}, "
          f"threads {torch.get_num_threads()}{', bf16 autocast' if args.bf16 else ''}"
          f"{', compiled' if args.compile else ''}{', TF32' if args.tf32 and device.type == 'cuda' else ''}",
          file=log, flush=True)

    model.train()
    batches, epoch = [], 0
    loss_sum = torch.zeros((), dtype=torch.float32, device=device)
    loss_count = 0
    train_loss = None
    val_loss = best_val = None
    history = []
    timed_seconds, timed_tokens, timed_steps = 0.0, 0, 0
    mark = None
    started = time.perf_counter()
    for step in range(args.steps):
        if step == TIMING_SKIP or (step == 0 and args.steps <= TIMING_SKIP):
            sync()
            mark = time.perf_counter()
        if not batches:
            perm = torch.from_numpy(rng.permutation(n_train)).to(device)
            batches = epoch_batches(perm, B, args.drop_last)
            batches.reverse()
            epoch += 1
        idx = batches.pop()
        lr = lr_at(step, args.lr, args.min_lr, args.warmup, args.steps)
        for group in opt.param_groups:
            group["lr"] = lr
        with autocast():
            logits = step_model(inputs[idx])
        loss = F.cross_entropy(logits.float().reshape(-1, vocab), targets[idx].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        loss_sum += loss.detach()
        loss_count += 1
        if mark is not None:
            timed_tokens += len(idx) * T
            timed_steps += 1
        done = step + 1
        if done == args.steps or (args.eval_every and done % args.eval_every == 0):
            sync()
            if mark is not None:
                timed_seconds += time.perf_counter() - mark
            train_loss = loss_sum.item() / loss_count
            loss_sum.zero_()
            loss_count = 0
            val_loss = validation_loss()
            if val_loss is not None:
                best_val = val_loss if best_val is None else min(best_val, val_loss)
            history.append({"step": done, "train_loss": train_loss, "val_loss": val_loss})
            rate = f", {timed_tokens / timed_seconds:.0f} tokens/s" if timed_seconds > 0 else ""
            val_text = f"{val_loss:.4f}" if val_loss is not None else "-"
            print(f"step {done}/{args.steps} (epoch {epoch}): train loss {train_loss:.4f}, val loss {val_text}, "
                  f"lr {lr:.3g}, {time.perf_counter() - started:.1f} s{rate}", file=log, flush=True)
            if mark is not None:
                sync()
                mark = time.perf_counter()
    seconds = time.perf_counter() - started

    tokens_per_s = timed_tokens / timed_seconds if timed_seconds > 0 else None
    mfu = None
    if args.peak_tflops and tokens_per_s:
        mfu = flops_per_token * tokens_per_s / (args.peak_tflops * 1e12)
    result = {
        "final_val_loss": val_loss, "best_val_loss": best_val, "train_loss": train_loss,
        "tokens_per_s": tokens_per_s, "timed_steps": timed_steps, "steps": args.steps, "epochs": epoch,
        "seconds": seconds, "timed_seconds": timed_seconds, "params": params,
        "flops_per_token": flops_per_token, "mfu": mfu, "peak_tflops": args.peak_tflops,
        "vocab": vocab, "tokens": n, "train_windows": n_train, "val_windows": n_val,
        "preset": args.preset, "block": T, "layers": args.layers, "heads": args.heads, "width": args.width,
        "dropout": args.dropout, "tie": args.tie, "batch": B, "lr": args.lr, "min_lr": args.min_lr, "warmup": args.warmup,
        "beta2": args.beta2, "eps": args.eps, "weight_decay": args.weight_decay, "clip": args.clip,
        "validation_split": args.validation_split, "tokenizer": args.tokenizer, "seed": args.seed,
        "device": str(device), "threads": torch.get_num_threads(), "bf16": args.bf16, "compile": args.compile,
        "tf32": args.tf32, "attention": attention, "fused_adamw": fused, "torch": torch.__version__,
        "history": history,
    }
    if args.json:
        print(json.dumps(result))
    else:
        rate = f"{tokens_per_s:.0f} tokens/s over {timed_steps} steps" if tokens_per_s else "no timed steps"
        val_text = f"{val_loss:.4f} (best {best_val:.4f})" if val_loss is not None else "-"
        print(f"gpt_twin: done in {seconds:.1f} s: val loss {val_text}, train loss {train_loss:.4f}, {rate}"
              f"{f', MFU {100 * mfu:.1f}%' if mfu is not None else ''}")


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        run(args)
    except TwinError as e:
        print(f"gpt_twin: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
