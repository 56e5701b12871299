"""NumPy reference of data.augment: the same draws as gputrain
(backend/ops/prepare_inputs.hpp: splitmix64-style mixing of (seed, epoch,
sample index)), applied forward, step by step, as array operations
(np.pad, slicing, flips, bilinear sampling), to the unaugmented samples.

usage: augment_reference.py PLAIN.npy AUGMENTED.npy SEED EPOCH FILL STEPS_JSON [TOLERANCE]
PLAIN: the samples scaled and normalized, not augmented (gputrain data
--augmented with data.augment empty); FILL: per-channel value of a black
pixel, comma-separated; STEPS_JSON: [["random_crop", {"padding": 2, "mode":
"reflect"}], ...]. Exits 1 naming the first sample and pixel that differ.
"""
import json
import math
import sys

import numpy as np

M = (1 << 64) - 1


def mix64(z):
    z = (z + 0x9E3779B97F4A7C15) & M
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


def sample_key(seed, epoch, index):
    return mix64(mix64(mix64(seed) ^ epoch) ^ index)


def draw(key, k, j):
    return mix64(key ^ (((k * 64 + j + 1) * 0xD1B54A32D192ED03) & M))


def below(key, k, j, n):
    return draw(key, k, j) % n


def shifted(img, dy, dx, reflect, fill):
    """out[y, x] = img[y + dy, x + dx], past the edge a mirror image or fill."""
    h, w, _ = img.shape
    py, px = abs(dy), abs(dx)
    if reflect:
        padded = np.pad(img, ((py, py), (px, px), (0, 0)), mode="reflect")
    else:
        padded = np.empty((h + 2 * py, w + 2 * px, img.shape[2]), img.dtype)
        padded[...] = fill
        padded[py:py + h, px:px + w] = img
    return padded[py + dy:py + dy + h, px + dx:px + dx + w]


def rotate(img, degrees, fill):
    h, w, _ = img.shape
    t = math.radians(degrees)
    cy, cx = (h - 1) / 2, (w - 1) / 2
    out = np.empty_like(img)
    for y in range(h):
        for x in range(w):
            sy = cy + math.cos(t) * (y - cy) - math.sin(t) * (x - cx)
            sx = cx + math.sin(t) * (y - cy) + math.cos(t) * (x - cx)
            y0, x0 = math.floor(sy), math.floor(sx)
            acc = np.zeros(img.shape[2])
            for ny, wy in ((y0, 1 - (sy - y0)), (y0 + 1, sy - y0)):
                for nx, wx in ((x0, 1 - (sx - x0)), (x0 + 1, sx - x0)):
                    inside = 0 <= ny < h and 0 <= nx < w
                    acc += wy * wx * (img[ny, nx] if inside else fill)
            out[y, x] = acc
    return out


def augment(img, key, steps, fill):
    h, w, _ = img.shape
    for k, (name, p) in enumerate(steps):
        if name == "random_crop":
            pad = p["padding"]
            dy, dx = below(key, k, 0, 2 * pad + 1) - pad, below(key, k, 1, 2 * pad + 1) - pad
            img = shifted(img, dy, dx, p.get("mode") == "reflect", fill)
        elif name == "random_translate":
            my, mx = int(p["height_factor"] * h), int(p["width_factor"] * w)
            dy, dx = below(key, k, 0, 2 * my + 1) - my, below(key, k, 1, 2 * mx + 1) - mx
            img = shifted(img, dy, dx, p.get("mode") == "reflect", fill)
        elif name == "random_flip":
            mode = p.get("mode", "horizontal")
            if mode != "vertical" and draw(key, k, 0) & 1:
                img = img[:, ::-1]
            if mode != "horizontal" and draw(key, k, 1) & 1:
                img = img[::-1, :]
        elif name == "cutout":
            img = img.copy()
            s = p["size"]
            for j in range(p.get("count", 1)):
                y0 = below(key, k, 2 * j, h) - s // 2
                x0 = below(key, k, 2 * j + 1, w) - s // 2
                img[max(y0, 0):y0 + s, max(x0, 0):x0 + s] = fill
        elif name == "random_rotation":
            u = np.float32(draw(key, k, 0) >> 40) * np.float32(1.0 / 16777216.0)
            degrees = float((np.float32(2.0) * u - np.float32(1.0)) * np.float32(p["degrees"]))
            img = rotate(img, degrees, fill)
        else:
            raise SystemExit("unknown step " + name)
    return img


def main(argv):
    plain, augmented = np.load(argv[1]), np.load(argv[2])
    seed, epoch = int(argv[3]), int(argv[4])
    fill = np.array([float(v) for v in argv[5].split(",")])
    steps = json.loads(argv[6])
    tolerance = float(argv[7]) if len(argv) > 7 else 0.0
    plain = plain[:augmented.shape[0]]  # the reference may hold more samples than were augmented
    if plain.ndim == 3:
        plain, augmented = plain[..., None], augmented[..., None]
    assert plain.shape == augmented.shape, (plain.shape, augmented.shape)
    changed = 0
    for i in range(plain.shape[0]):
        want = augment(plain[i].astype(np.float64), sample_key(seed, epoch, i), steps, fill)
        got = augmented[i].astype(np.float64)
        if not np.array_equal(want, plain[i]):
            changed += 1
        diff = np.abs(want - got)
        if diff.max() > tolerance:
            y, x, c = np.unravel_index(np.argmax(diff), diff.shape)
            raise SystemExit(f"sample {i}, pixel ({y}, {x}), channel {c}: gputrain {got[y, x, c]!r}, "
                             f"NumPy {want[y, x, c]!r}")
    print(f"{plain.shape[0]} samples match the NumPy reference ({changed} changed by augmentation)")
    if changed == 0:
        raise SystemExit("no sample was changed: the reference checks nothing")


if __name__ == "__main__":
    main(sys.argv)
