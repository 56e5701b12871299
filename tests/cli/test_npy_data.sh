#!/usr/bin/env bash
# format: npy against arrays NumPy saved (x_train.npy, y_train.npy, x_test.npy,
# y_test.npy, Keras' names): uint8 images kept as bytes with scale: auto's
# 1/255, float64 features with its 1, int64 and (N, 1) labels, a short fit and
# evaluate, and bad arrays' one-line errors.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
PY=$(test_python)
"$PY" -c "import numpy" 2>/dev/null || skip "NumPy is not installed (apt-get install python3-numpy)"

make() {  # make DIR XDTYPE: 4 classes of 6x5 samples
    "$PY" - "$1" "$2" <<'PY'
import os, sys
import numpy as np
out, dtype = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(4)
for split, n in (("train", 240), ("test", 60)):
    y = rng.integers(0, 4, n)
    x = rng.integers(0, 150, (n, 6, 5)).astype(np.float64)
    for i, label in enumerate(y):
        x[i, label, :] += 100
    if dtype == "uint8":
        x = x.astype(np.uint8)
    else:
        x = (x / 255.0).astype(dtype)
    np.save(os.path.join(out, f"x_{split}.npy"), x)
    np.save(os.path.join(out, f"y_{split}.npy"), y.astype(np.int64) if split == "train" else y.reshape(-1, 1).astype(np.int32))
PY
}
make "$TMP/u8" uint8
make "$TMP/f64" float64
cfg=$TMP/npy.yaml
cat >"$cfg" <<YAML
model:
  input_shape: [6, 5]
  layers:
    - {type: flatten}
    - {type: dense, units: 16, activation: relu}
    - {type: dense, units: 4, activation: softmax}
loss: sparse_categorical_crossentropy
optimizer: {type: adam, learning_rate: 0.01}
data: {path: $TMP/u8, format: npy}
training: {epochs: 8, batch_size: 24, seed: 1}
checkpoint: {monitor: loss}
logging: {progress: none}
YAML

step "uint8 samples stay bytes; scale: auto gives them 1/255, float64 samples 1: the same values"
run_expect 0 data "$cfg" --augmented 240 --out "$TMP/u8.npy"
expect_in "$TMP/out" "240 samples of [6, 5], stored as bytes (uint8), 4 classes (labels 0..3)"
expect_in "$TMP/out" "60 samples of [6, 5], stored as bytes (uint8)"
run_expect 0 data "$cfg" --set data.path="$TMP/f64" --augmented 240 --out "$TMP/f64.npy"
expect_in "$TMP/out" "240 samples of [6, 5], stored as float32, 4 classes (labels 0..3)"
"$PY" - "$TMP/u8.npy" "$TMP/f64.npy" "$TMP/u8/x_train.npy" <<'PY' || fail "the values are not NumPy's"
import sys
import numpy as np
a, b, raw = np.load(sys.argv[1]), np.load(sys.argv[2]), np.load(sys.argv[3])
want = (raw.astype(np.float64) / 255).astype(np.float32)
assert np.array_equal(a, want), "uint8 / 255"
assert np.abs(b - want).max() < 1e-6, np.abs(b - want).max()
PY
run_expect 0 fit "$cfg" --run-dir "$TMP/run" --device cpu --replicas 2
expect_in "$TMP/run/config.yaml" "scale: auto"

step "fit and evaluate (int64 training labels, (N, 1) int32 test labels)"
run_expect 0 evaluate --json --run-dir "$TMP/run" "$cfg"
"$PY" - "$TMP/out" <<'PY' || fail "evaluate --json is not as expected"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["samples"] == 60 and r["accuracy"] > 0.8, r
PY

step "format npz: the same arrays in an archive, stored (np.savez) and deflated (np.savez_compressed)"
"$PY" - "$TMP/u8" "$TMP" <<'PY'
import os, sys
import numpy as np
src, out = sys.argv[1], sys.argv[2]
arrays = {name: np.load(os.path.join(src, name + ".npy")) for name in ("x_train", "y_train", "x_test", "y_test")}
np.savez(os.path.join(out, "stored.npz"), **arrays)
np.savez_compressed(os.path.join(out, "deflated.npz"), **arrays)
np.savez(os.path.join(out, "partial.npz"), x_train=arrays["x_train"], labels=arrays["y_train"])
PY
for kind in stored deflated; do
    run_expect 0 data "$cfg" --set data.format=npz --set data.path="$TMP/$kind.npz" --augmented 240 --out "$TMP/$kind.npy"
    expect_in "$TMP/out" "240 samples of [6, 5], stored as bytes (uint8), 4 classes (labels 0..3)"
    cmp "$TMP/$kind.npy" "$TMP/u8.npy" || fail "$kind.npz read other values than the .npy files"
done
run_expect 1 data "$cfg" --set data.format=npz --set data.path="$TMP/partial.npz"
expect_in "$TMP/err" "partial.npz: no array 'y_train' (it holds x_train, labels)"
head -c 3000 "$TMP/deflated.npz" >"$TMP/cut.npz"
run_expect 1 data "$cfg" --set data.format=npz --set data.path="$TMP/cut.npz"
expect_in "$TMP/err" "cut.npz: not an NPZ file (no ZIP directory at its end)"
run_expect 1 data "$cfg" --set data.format=npz --set data.path="$TMP/none.npz"
expect_in "$TMP/err" "data.path: $TMP/none.npz: no such file (format npz: data.path is an .npz archive"

step "bad arrays: one line each"
bad() {  # bad EXPECTED DIR
    run_expect 1 data "$cfg" --set data.path="$2"
    expect_in "$TMP/err" "$1"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "more than one line"
}
cp -r "$TMP/f64" "$TMP/nan"
"$PY" -c "import numpy as np, sys; x = np.load(sys.argv[1]); x[7, 2, 3] = np.nan; np.save(sys.argv[1], x)" "$TMP/nan/x_train.npy"
bad "x_train.npy: sample 7, element 13 is NaN; the model takes finite inputs" "$TMP/nan"
cp -r "$TMP/u8" "$TMP/short"
"$PY" -c "import numpy as np, sys; np.save(sys.argv[1], np.load(sys.argv[1])[:200])" "$TMP/short/y_train.npy"
bad "y_train.npy: 200 labels for the 240 samples of $TMP/short/x_train.npy" "$TMP/short"
cp -r "$TMP/u8" "$TMP/real"
"$PY" -c "import numpy as np, sys; np.save(sys.argv[1], np.linspace(0, 1, 240))" "$TMP/real/y_train.npy"
bad "y_train.npy: label 0.0041841 of sample 1 is not a class index (a whole number >= 0); the loss is a crossentropy, and real-valued targets need mean_squared_error, mean_absolute_error or huber" "$TMP/real"
cp -r "$TMP/u8" "$TMP/complex"
"$PY" -c "import numpy as np, sys; np.save(sys.argv[1], np.zeros((240, 6, 5), np.complex64))" "$TMP/complex/x_train.npy"
bad "x_train.npy: dtype '<c8' is not supported" "$TMP/complex"
mkdir -p "$TMP/none"
bad "data.path: $TMP/none: no x_train.npy found" "$TMP/none"
cp -r "$TMP/u8" "$TMP/chw"
"$PY" -c "import numpy as np, sys; np.save(sys.argv[1], np.zeros((240, 3, 2, 5), np.uint8))" "$TMP/chw/x_train.npy"
run_expect 2 data "$cfg" --set data.path="$TMP/chw" --set 'model.input_shape=[2, 5, 3]'
expect_in "$TMP/err" "x_train.npy: samples of shape [3, 2, 5] are not laid out as model.input_shape [2, 5, 3]; transpose them"
run_expect 1 data "$cfg" --set data.path="$TMP/stored.npz"
expect_in "$TMP/err" "stored.npz: a file, and data.format is npy; add data.format: npz"
run_expect 2 data "$cfg" --set 'model.input_shape=[31]'
expect_in "$TMP/err" "model.input_shape [31] does not match the data's sample shape [6, 5]"
echo "PASS"
