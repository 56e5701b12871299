"""Writes files in the CIFAR binary layout (an independent writer of the
format: NumPy arrays of NHWC images turned into CHW records), and the NHWC
images and labels it wrote, for the CIFAR tests.

usage: make_cifar.py DIR cifar10|cifar100 TRAIN_PER_FILE TEST_RECORDS
CIFAR-10: DIR/cifar-10-batches-bin/data_batch_1..5.bin, test_batch.bin
(a label byte, then 3072 bytes: the red, green, blue 32x32 planes).
CIFAR-100: DIR/cifar-100-binary/train.bin, test.bin (a coarse label byte, a
fine label byte, then the planes); fine labels 50..99, coarse 0..19.
Also DIR/train_images.npy (N, 32, 32, 3) uint8 and DIR/train_labels.npy, and the same of the test set.
Images of class k are brighter in channel k % 3, so a model can learn them.
"""
import os
import sys

import numpy as np


def images_and_labels(rng, n, classes, first_label):
    # Every class in turn, in a shuffled order: each file holds them all when n >= classes.
    labels = first_label + rng.permutation(np.arange(n) % classes)
    images = rng.integers(0, 160, (n, 32, 32, 3)).astype(np.uint8)
    for i, label in enumerate(labels):
        images[i, :, :, label % 3] += 90
    return images, labels


def records(images, labels, kind):
    chw = images.transpose(0, 3, 1, 2).reshape(len(images), 3072)
    if kind == "cifar10":
        head = labels.reshape(-1, 1).astype(np.uint8)
    else:
        head = np.stack([labels % 20, labels], axis=1).astype(np.uint8)  # coarse, fine
    return np.concatenate([head, chw], axis=1).tobytes()


def main(argv):
    out, kind, per_file, test_n = argv[1], argv[2], int(argv[3]), int(argv[4])
    rng = np.random.default_rng(3)
    classes, first = (10, 0) if kind == "cifar10" else (50, 50)
    folder = os.path.join(out, "cifar-10-batches-bin" if kind == "cifar10" else "cifar-100-binary")
    os.makedirs(folder, exist_ok=True)
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] if kind == "cifar10" else ["train.bin"]
    all_images, all_labels = [], []
    for name in names:
        images, labels = images_and_labels(rng, per_file, classes, first)
        with open(os.path.join(folder, name), "wb") as f:
            f.write(records(images, labels, kind))
        all_images.append(images)
        all_labels.append(labels)
    images, labels = images_and_labels(rng, test_n, classes, first)
    np.save(os.path.join(out, "test_images.npy"), images)
    np.save(os.path.join(out, "test_labels.npy"), labels)
    with open(os.path.join(folder, "test_batch.bin" if kind == "cifar10" else "test.bin"), "wb") as f:
        f.write(records(images, labels, kind))
    np.save(os.path.join(out, "train_images.npy"), np.concatenate(all_images))
    np.save(os.path.join(out, "train_labels.npy"), np.concatenate(all_labels))


if __name__ == "__main__":
    main(sys.argv)
