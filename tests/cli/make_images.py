"""Writes an image folder for the image_folder tests with Pillow (an
independent PNG/JPEG writer and decoder), and what gputrain should read from
it: DIR/train/{cat,dog,fish}/ and DIR/test/{cat,dog,fish}/ images, and
DIR/expected_train.npy, the training images in gputrain's order (the classes
in turn: each one's first file by name, then each one's second...) at
HEIGHT x WIDTH x 3 as Pillow decodes them, resized where a file is another
size by a NumPy bilinear of TensorFlow's half-pixel rule; and
DIR/expected_gray.npy, the same through Pillow's convert("L") (JPEG: its
luma plane, as libjpeg decodes it to gray).

usage: make_images.py DIR HEIGHT WIDTH
"""
import os
import sys

import numpy as np
from PIL import Image


def tf_bilinear(img, h, w):
    """tf.image.resize(method='bilinear', antialias=False), half-pixel centers, rounded."""
    ih, iw, _ = img.shape
    out = np.empty((h, w, img.shape[2]))
    for y in range(h):
        fy = min(max((y + 0.5) * ih / h - 0.5, 0.0), ih - 1)
        y0 = int(fy)
        y1, wy = min(y0 + 1, ih - 1), fy - y0
        for x in range(w):
            fx = min(max((x + 0.5) * iw / w - 0.5, 0.0), iw - 1)
            x0 = int(fx)
            x1, wx = min(x0 + 1, iw - 1), fx - x0
            out[y, x] = ((1 - wy) * ((1 - wx) * img[y0, x0] + wx * img[y0, x1]) +
                         wy * ((1 - wx) * img[y1, x0] + wx * img[y1, x1]))
    return np.clip(np.floor(out + 0.5), 0, 255).astype(np.uint8)


def main(argv):
    root, h, w = argv[1], int(argv[2]), int(argv[3])
    rng = np.random.default_rng(5)
    classes = ["cat", "dog", "fish"]
    expected = []
    for split, count in (("train", 8), ("test", 3)):
        for k, name in enumerate(classes):
            folder = os.path.join(root, split, name)
            os.makedirs(folder, exist_ok=True)
            for i in range(count):
                # Class k is brighter in channel k; smooth so JPEG keeps it.
                size = (h, w) if i % 4 != 3 else (h + 5, w * 2)
                base = rng.integers(0, 120, (size[0], size[1], 3)).astype(np.uint8)
                base[:, :, k] += 120
                kind = ("png", "jpg", "gray.png", "png")[i % 4]
                path = os.path.join(folder, f"{i:02d}.{kind}")
                if kind == "gray.png":
                    Image.fromarray(base[:, :, 0]).save(path)
                else:
                    Image.fromarray(base).save(path, quality=95) if kind == "jpg" else Image.fromarray(base).save(path)
                decoded = np.array(Image.open(path).convert("RGB"))
                # A JPEG's gray is its luma plane as libjpeg decodes it (TensorFlow's
                # decode_jpeg(channels=1) too): Pillow's draft mode asks libjpeg for it.
                image = Image.open(path)
                if kind == "jpg":
                    image.draft("L", image.size)
                gray = np.array(image.convert("L"))[:, :, None]
                if split == "train":
                    expected.append((name, f"{i:02d}.{kind}", tf_bilinear(decoded, h, w), tf_bilinear(gray, h, w)))
    # gputrain's order: the classes in turn, each one's files by name
    expected.sort(key=lambda e: (e[1], e[0]))
    np.save(os.path.join(root, "expected_train.npy"), np.stack([e[2] for e in expected]))
    np.save(os.path.join(root, "expected_gray.npy"), np.stack([e[3] for e in expected]))
    with open(os.path.join(root, "train", "cat", "notes.txt"), "w") as f:
        f.write("not an image: ignored by its name\n")


if __name__ == "__main__":
    main(sys.argv)
