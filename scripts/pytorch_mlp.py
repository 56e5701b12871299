#!/usr/bin/env python3
"""The reference job (configs/fashion_mnist_mlp.yaml) in PyTorch, for scripts/bench.

--model mlp (default): Flatten(28x28) -> Linear(784,128) + ReLU -> Linear(128,10).
--model cnn (configs/fashion_mnist_cnn.yaml): Conv(32,3x3,same)+ReLU -> MaxPool(2)
-> Conv(64,3x3,same)+ReLU -> MaxPool(2) -> Flatten -> Linear(3136,128)+ReLU ->
Dropout(0.3) -> Linear(128,10). Both: softmax cross-entropy
on logits, Adam (lr 1e-3, betas 0.9/0.999, eps 1e-7), batch 32, reshuffled every
epoch, Keras initialisation (Glorot-uniform kernels, zero biases), inputs x/255.
Reads the IDX .gz files with gzip + numpy. Times the training loop of each epoch
(not the data loading, not the test evaluation).

  python3 scripts/pytorch_mlp.py [--model mlp|cnn] [--epochs 5] [--threads N] [--device cpu|cuda] [--json] [--data DIR]

With --device cuda (scripts/gpu-check) the model and the whole data set live on
the GPU and each epoch's time includes a final synchronize.
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
# --threads. On 2 cores, giving both pools 2 threads was about 2.5x slower.
np = torch = nn = None


def import_libraries(threads):
    global np, torch, nn
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import numpy as np
    import torch
    from torch import nn
    torch.set_num_threads(threads)


def read_idx(path, header_bytes):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=header_bytes)


def load(data_dir, split):
    images = read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"), 16)
    labels = read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz"), 8)
    x = torch.from_numpy(images.reshape(-1, 28, 28).astype(np.float32) / 255.0)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


def make_model(kind):
    if kind == "cnn":
        model = nn.Sequential(nn.Unflatten(1, (1, 28)), nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 10))
    else:
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    for layer in model:
        # Keras' Glorot-uniform (xavier_uniform_ takes the same fans for convolutions).
        if isinstance(layer, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)
    return model


def train_epoch(model, optimizer, loss_fn, x, y, batch_size, generator):
    model.train()
    order = torch.randperm(len(x), generator=generator).to(x.device)
    total_loss, correct = 0.0, 0
    for i in range(0, len(x), batch_size):
        idx = order[i:i + batch_size]
        xb, yb = x[idx], y[idx]
        optimizer.zero_grad()
        logits = model(xb)
        loss = loss_fn(logits, yb)
        loss.backward()
        optimizer.step()
        total_loss += loss.item() * len(idx)
        correct += (logits.argmax(1) == yb).sum().item()
    return total_loss / len(x), correct / len(x)


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        logits = model(x)
    return (logits.argmax(1) == y).float().mean().item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mlp", choices=["mlp", "cnn"], help="which twin (default mlp)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch.set_num_threads (default 1); the BLAS always gets 1")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                        help="folder with the four IDX .gz files")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where to train (default cpu)")
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args()
    import_libraries(args.threads)

    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    try:
        x_train, y_train = load(args.data, "train")
        x_test, y_test = load(args.data, "t10k")
    except FileNotFoundError as e:
        sys.exit(f"pytorch_mlp: {e}; install dataset-fashion-mnist or pass --data DIR")

    if args.device == "cuda":
        if not torch.cuda.is_available():
            sys.exit("pytorch_mlp: --device cuda but PyTorch sees no GPU")
        x_train, y_train, x_test, y_test = (t.cuda() for t in (x_train, y_train, x_test, y_test))
    model = make_model(args.model).to(args.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()
    log = sys.stderr if args.json else sys.stdout
    print(f"PyTorch {torch.__version__} on {args.device}, {torch.get_num_threads()} thread(s) (BLAS: 1), "
          f"{len(x_train)} training samples, batch {args.batch_size}", file=log)

    epochs = []
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        loss, accuracy = train_epoch(model, optimizer, loss_fn, x_train, y_train, args.batch_size, generator)
        if args.device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        epochs.append({"epoch": epoch, "seconds": seconds, "loss": loss, "accuracy": accuracy})
        print(f"epoch {epoch}/{args.epochs}: {seconds:.2f}s - loss {loss:.4f} - accuracy {accuracy:.4f}", file=log)
    test_accuracy = evaluate(model, x_test, y_test)
    median = statistics.median(e["seconds"] for e in epochs)
    print(f"test accuracy {test_accuracy:.4f}; median epoch {median:.2f}s", file=log)
    if args.json:
        print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                          "epochs": epochs, "median_epoch_seconds": median,
                          "test_accuracy": test_accuracy}))


if __name__ == "__main__":
    main()
