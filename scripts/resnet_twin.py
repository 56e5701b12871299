#!/usr/bin/env python3
"""The PyTorch twin of gputrain's Fashion-MNIST ResNet-20, to time epochs and compare accuracy.

The network (NHWC in gputrain, NCHW here; --channels-last runs it in
torch.channels_last memory format instead):
  input 28x28x1, pixels x 1/255 (no normalisation);
  stem: conv3x3 16 (padding same, no bias) -> BatchNorm -> ReLU;
  3 stages of 3 basic blocks with 16, 32, 64 filters; the first block of
  stages 2 and 3 has stride 2 and a projection shortcut (conv1x1 stride 2,
  no bias -> BatchNorm), every other block an identity shortcut;
  basic block: conv3x3 (stride s) -> BN -> ReLU -> conv3x3 -> BN -> + shortcut -> ReLU;
  head: global average pool -> Linear(64, 10): logits, softmax cross-entropy on them.
BatchNorm as Keras' defaults (epsilon 1e-3, Keras momentum 0.99 = PyTorch
momentum 0.01); Keras initialisation (Glorot-uniform conv and dense kernels,
zero biases, gamma 1, beta 0). 272,186 trainable parameters (ResNet-20 at
16/32/64 with projection shortcuts; Keras adds 1,568 non-trainable BN moving
statistics, 273,754 in all).

Optimizer: AdamW (default: lr 0.002, weight decay 0.004 decoupled as Keras'
AdamW: w -= lr * wd * w, betas 0.9/0.999, epsilon 1e-7) or SGD (momentum 0.9,
Nesterov, lr 0.1; weight decay 0 by default, as gputrain allows none for sgd;
a --weight-decay given is applied decoupled, as Keras does). The rate follows
gputrain's optimizer.schedule (src/optim/schedule.cpp): per step, linear
warmup from 0 over --warmup-epochs, then cosine annealing to 0 at the end of
the last epoch. Known small differences from gputrain: PyTorch's Adam adds
epsilon to the bias-corrected sqrt(v) (Keras' to the uncorrected one), its
Nesterov SGD keeps the momentum buffer in gradient units (Keras in step
units, which differ while the rate changes), and its BN's moving variance is
the unbiased one.

Augmentation (the twin of configs/fashion_mnist_resnet_aug.yaml):
--normalize MEAN STD subtracts and divides after the 1/255 (torchvision's
Normalize); --augment device crops each training image at a random offset
from its 2-pixel zero-padded copy and mirrors it with probability 1/2, with
tensor ops on the batch where the data set lives (the GPU with --device
cuda: GPU-side augmentation); --augment torchvision does the same with
torchvision's RandomCrop(28, padding=2) and RandomHorizontalFlip on the CPU,
one image at a time in a DataLoader with --loader-workers processes (the
usual PyTorch input pipeline). The draws differ from gputrain's (its own
counter-based hashes), the distribution is the same.

Data: Fashion-MNIST IDX files (gzip or not), found where gputrain looks:
$GPUTRAIN_DATA/fashion-mnist, ./datasets/fashion-mnist,
/usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist); or --data DIR.
The training set is reshuffled every epoch (seeded by --seed).

Prints a first line with the torch version, threads and oneDNN (mkldnn)
availability, the parameter count, one line per epoch
  epoch E: train_loss X train_acc Y time_s T
(T: the training pass only, no evaluation; --eval-every-epoch adds test_acc),
and at the end test_accuracy A and mean_epoch_s M (the mean over the epochs
after the first, or the only one's time).

  python3 scripts/resnet_twin.py [--epochs N] [--batch-size B] [--optimizer adamw|sgd] [--lr LR]
          [--weight-decay WD] [--warmup-epochs W] [--threads T] [--blas-threads T] [--limit N]
          [--test-limit N] [--seed S] [--eval-every-epoch] [--channels-last] [--compile] [--bf16]
          [--normalize MEAN STD] [--augment none|device|torchvision] [--loader-workers N] [--data DIR]
"""
import argparse
import gzip
import math
import os
import sys
import time

# numpy and torch are imported by import_libraries(), after the thread counts
# are in the environment (OpenBLAS and OpenMP read them once, when loaded), as
# scripts/pytorch_twin.py does: OpenBLAS's own pool, which torch.set_num_threads
# does not size, gets --blas-threads (default 1: its idle workers spin and slow
# PyTorch's pool on 2 cores); PyTorch's intra-op pool gets --threads, or
# PyTorch's own default when --threads is not given.
np = torch = nn = F = None

BN_EPS = 1e-3        # Keras BatchNormalization epsilon
BN_MOMENTUM = 0.01   # Keras momentum 0.99, in PyTorch's terms


class TwinError(Exception):
    """Missing data or an unusable option: one line for the user."""


def import_libraries(threads, blas_threads):
    global np, torch, nn, F
    os.environ["OPENBLAS_NUM_THREADS"] = str(blas_threads)
    if threads is not None:
        os.environ["OMP_NUM_THREADS"] = str(threads)
    import numpy as np
    import torch
    from torch import nn
    from torch.nn import functional as F
    if threads is not None:
        torch.set_num_threads(threads)


def build_model():
    def conv3x3(cin, cout, stride=1):
        return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)

    def bn(c):
        return nn.BatchNorm2d(c, eps=BN_EPS, momentum=BN_MOMENTUM)

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1, self.bn1 = conv3x3(cin, cout, stride), bn(cout)
            self.conv2, self.bn2 = conv3x3(cout, cout), bn(cout)
            self.shortcut = None
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), bn(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + (x if self.shortcut is None else self.shortcut(x)))

    class ResNet20(nn.Module):
        def __init__(self, widths=(16, 32, 64), blocks=3, classes=10):
            super().__init__()
            self.stem = nn.Sequential(conv3x3(1, widths[0]), bn(widths[0]), nn.ReLU())
            layers, cin = [], widths[0]
            for stage, width in enumerate(widths):
                for b in range(blocks):
                    layers.append(BasicBlock(cin, width, 2 if stage > 0 and b == 0 else 1))
                    cin = width
            self.blocks = nn.Sequential(*layers)
            self.head = nn.Linear(cin, classes)

        def forward(self, x):
            x = self.blocks(self.stem(x))
            return self.head(x.mean(dim=(2, 3)))  # global average pool -> logits

    model = ResNet20()
    for m in model.modules():
        # Keras' defaults: Glorot-uniform kernels (xavier_uniform_ takes the same
        # fans for convolutions), zero biases, BN gamma 1 and beta 0.
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
    return model


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


def data_folder(data_dir):
    if data_dir:
        return data_dir
    # Where gputrain looks (data/dataset_resolve.cpp): $GPUTRAIN_DATA/NAME, ./datasets/NAME, /usr/share/datasets/NAME.
    roots = [r for r in (os.environ.get("GPUTRAIN_DATA"), "datasets", "/usr/share/datasets") if r]
    found = [os.path.join(r, "fashion-mnist") for r in roots if os.path.isdir(os.path.join(r, "fashion-mnist"))]
    return found[0] if found else "/usr/share/datasets/fashion-mnist"


def load_split(folder, prefix, limit):
    """(images [N,1,28,28] float32 x 1/255, labels int64) of train or t10k, the first `limit` if > 0."""
    images = read_idx(find_idx(folder, f"{prefix}-images-idx3-ubyte"), 16)
    labels = read_idx(find_idx(folder, f"{prefix}-labels-idx1-ubyte"), 8)
    n = len(labels) if not limit or limit <= 0 else min(limit, len(labels))
    x = images[: n * 784].reshape(n, 1, 28, 28).astype(np.float32) * np.float32(1.0 / 255.0)
    return torch.from_numpy(x), torch.from_numpy(labels[:n].astype(np.int64))


def augment_on_device(xb, generator_device):
    """Random crop (2 pixels of zero padding) and horizontal flip of a batch [B,1,28,28], with tensor ops."""
    b = xb.shape[0]
    padded = F.pad(xb, (2, 2, 2, 2))
    dy = torch.randint(0, 5, (b,), device=xb.device, generator=generator_device)
    dx = torch.randint(0, 5, (b,), device=xb.device, generator=generator_device)
    rows = (dy[:, None] + torch.arange(28, device=xb.device)[None, :])  # [B, 28]
    cols = (dx[:, None] + torch.arange(28, device=xb.device)[None, :])
    flip = torch.rand(b, device=xb.device, generator=generator_device) < 0.5
    cols = torch.where(flip[:, None], cols.flip(1), cols)
    batch_index = torch.arange(b, device=xb.device)[:, None, None]
    return padded[:, 0][batch_index, rows[:, :, None], cols[:, None, :]].unsqueeze(1)


def torchvision_loader(x, y, args, generator):
    """torchvision's RandomCrop + RandomHorizontalFlip per image (CPU) in a DataLoader, then --normalize."""
    from torch.utils.data import DataLoader, Dataset
    from torchvision import transforms

    pipeline = transforms.Compose([transforms.RandomCrop(28, padding=2), transforms.RandomHorizontalFlip()])

    class Images(Dataset):
        def __len__(self):
            return len(x)

        def __getitem__(self, i):
            return pipeline(x[i]), y[i]

    return DataLoader(Images(), batch_size=args.batch_size, shuffle=True, generator=generator,
                      num_workers=args.loader_workers, persistent_workers=args.loader_workers > 0)


def learning_rate(base, epoch, step_in_epoch, steps_per_epoch, epochs, warmup_epochs):
    """gputrain's schedule (src/optim/schedule.cpp): linear warmup from 0, then cosine to 0."""
    position = epoch * steps_per_epoch + step_in_epoch
    warmup_steps = warmup_epochs * steps_per_epoch
    if epoch < warmup_epochs:
        return base * (position + 1.0) / warmup_steps
    span = max(1.0, epochs * steps_per_epoch - warmup_steps)
    progress = min(1.0, (position - warmup_steps) / span)
    return base * 0.5 * (1.0 + math.cos(math.pi * progress))


def make_optimizer(args, params):
    if args.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.999), eps=1e-7, weight_decay=args.weight_decay)
    # SGD's weight_decay in PyTorch is an L2 term; the decoupled one is applied in train_step.
    return torch.optim.SGD(params, lr=args.lr, momentum=0.9, nesterov=True)


def forward(model, xb, args):
    if args.channels_last:
        xb = xb.contiguous(memory_format=torch.channels_last)
    if args.bf16:
        with torch.autocast(device_type=xb.device.type, dtype=torch.bfloat16):
            return model(xb).float()
    return model(xb)


def train_step(model, optimizer, xb, yb, lr, args):
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.zero_grad(set_to_none=True)
    logits = forward(model, xb, args)
    loss = F.cross_entropy(logits, yb)
    loss.backward()
    if args.optimizer == "sgd" and args.weight_decay:
        with torch.no_grad():  # decoupled, as Keras: w -= lr * wd * w before the update
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.mul_(1.0 - lr * args.weight_decay)
    optimizer.step()
    return logits, loss


def evaluate(model, x, y, args, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            correct += (forward(model, x[i:i + batch], args).argmax(1) == y[i:i + batch]).sum().item()
    return correct / max(1, len(x))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10, help="training epochs (default 10)")
    parser.add_argument("--batch-size", type=int, default=128, help="batch size (default 128)")
    parser.add_argument("--optimizer", choices=["adamw", "sgd"], default="adamw", help="default adamw")
    parser.add_argument("--lr", type=float, help="peak learning rate (default 0.002 for adamw, 0.1 for sgd)")
    parser.add_argument("--weight-decay", type=float,
                        help="decoupled weight decay (default 0.004 for adamw, Keras' default; 0 for sgd)")
    parser.add_argument("--warmup-epochs", type=int, default=0, help="linear warmup epochs before the cosine (default 0)")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (default: PyTorch's own)")
    parser.add_argument("--blas-threads", type=int, default=1, help="OpenBLAS threads (default 1)")
    parser.add_argument("--limit", type=int, default=0, help="train on the first N training samples (default all)")
    parser.add_argument("--test-limit", type=int, default=0, help="test on the first N test samples (default all)")
    parser.add_argument("--seed", type=int, default=42, help="initialisation and shuffle seed (default 42)")
    parser.add_argument("--eval-every-epoch", action="store_true", help="evaluate on the test set after every epoch")
    parser.add_argument("--channels-last", action="store_true", help="model and inputs in torch.channels_last")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch 2.x)")
    parser.add_argument("--bf16", action="store_true", help="forward under torch.autocast(bfloat16) on the device")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda: the whole data set is moved there once")
    parser.add_argument("--data", help="folder with the Fashion-MNIST IDX files")
    parser.add_argument("--normalize", nargs=2, type=float, metavar=("MEAN", "STD"),
                        help="(x / 255 - MEAN) / STD, e.g. 0.2860 0.3530 (default: none)")
    parser.add_argument("--augment", choices=["none", "device", "torchvision"], default="none",
                        help="random crop (padding 2) + horizontal flip of training batches: on the data's device, "
                             "or torchvision's transforms in a DataLoader (default none)")
    parser.add_argument("--loader-workers", type=int, default=2,
                        help="DataLoader worker processes for --augment torchvision (default 2)")
    args = parser.parse_args()
    for name in ("epochs", "batch_size", "threads", "blas_threads"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.warmup_epochs < 0:
        parser.error("--warmup-epochs must be at least 0")
    if args.lr is None:
        args.lr = 0.002 if args.optimizer == "adamw" else 0.1
    if args.weight_decay is None:
        args.weight_decay = 0.004 if args.optimizer == "adamw" else 0.0

    import_libraries(args.threads, args.blas_threads)
    try:
        folder = data_folder(args.data)
        x, y = load_split(folder, "train", args.limit)
        x_test, y_test = load_split(folder, "t10k", args.test_limit)
    except TwinError as e:
        sys.exit(f"resnet_twin: {e}")

    device = torch.device(args.device)
    loader = None
    if args.augment == "torchvision":
        try:
            loader = torchvision_loader(x, y, args, torch.Generator().manual_seed(args.seed))
        except ImportError as e:
            sys.exit(f"resnet_twin: --augment torchvision needs torchvision ({e}; apt-get install python3-torchvision)")
    x, y, x_test, y_test = x.to(device), y.to(device), x_test.to(device), y_test.to(device)
    mean, std = args.normalize if args.normalize else (0.0, 1.0)
    if args.normalize:
        x_test = (x_test - mean) / std
    print(f"torch {torch.__version__} device {device} threads {torch.get_num_threads()} "
          f"blas_threads {args.blas_threads} mkldnn {torch.backends.mkldnn.is_available()}")
    torch.manual_seed(args.seed)
    model = build_model().to(device)
    params = sum(p.numel() for p in model.parameters())
    buffers = sum(b.numel() for name, b in model.named_buffers() if not name.endswith("num_batches_tracked"))
    print(f"params {params} (trainable; BN moving statistics {buffers} more, {params + buffers} as Keras counts)")
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    optimizer = make_optimizer(args, model.parameters())
    run_model = model
    if args.compile:
        if hasattr(torch, "compile"):
            run_model = torch.compile(model)
        else:
            print(f"note: torch {torch.__version__} has no torch.compile; running eagerly")
    batch = args.batch_size
    steps_per_epoch = (len(x) + batch - 1) // batch
    print(f"{len(x)} training samples, {len(x_test)} test, batch {batch}, {steps_per_epoch} steps/epoch, "
          f"{args.optimizer} lr {args.lr:g} weight_decay {args.weight_decay:g} warmup_epochs {args.warmup_epochs}, "
          f"cosine to 0{', channels_last' if args.channels_last else ''}{', bf16 autocast' if args.bf16 else ''}"
          f"{', compiled' if run_model is not model else ''}"
          f"{f', normalize {mean:g}/{std:g}' if args.normalize else ''}"
          f"{', augment ' + args.augment if args.augment != 'none' else ''}")

    generator = torch.Generator().manual_seed(args.seed)
    device_generator = torch.Generator(device=device).manual_seed(args.seed)
    times = []
    for epoch in range(args.epochs):
        run_model.train()
        start = time.perf_counter()
        order = torch.randperm(len(x), generator=generator).to(device)
        total_loss, correct = 0.0, 0

        def batches():
            if loader is not None:  # torchvision's CPU pipeline: batches arrive augmented
                for xb, yb in loader:
                    yield xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
                return
            for i in range(0, len(x), batch):
                idx = order[i:i + batch]
                xb = x[idx]
                if args.augment == "device":
                    xb = augment_on_device(xb, device_generator)
                yield xb, y[idx]

        for step, (xb, yb) in enumerate(batches()):
            if args.normalize:
                xb = (xb - mean) / std
            lr = learning_rate(args.lr, epoch, step, steps_per_epoch, args.epochs, args.warmup_epochs)
            logits, loss = train_step(run_model, optimizer, xb, yb, lr, args)
            total_loss += loss.item() * len(yb)
            correct += (logits.argmax(1) == yb).sum().item()
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        times.append(seconds)
        line = (f"epoch {epoch + 1}: train_loss {total_loss / len(x):.4f} train_acc {correct / len(x):.4f} "
                f"time_s {seconds:.3f}")
        if args.eval_every_epoch:
            line += f" test_acc {evaluate(run_model, x_test, y_test, args):.4f}"
        print(line, flush=True)
    print(f"test_accuracy {evaluate(run_model, x_test, y_test, args):.4f}")
    timed = times[1:] if len(times) > 1 else times
    print(f"mean_epoch_s {sum(timed) / len(timed):.3f}")


if __name__ == "__main__":
    main()
