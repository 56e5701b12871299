#!/usr/bin/env bash
# CIFAR-10 and CIFAR-100 binary files, written by an independent NumPy writer
# of the format (make_cifar.py; the real files need internet, which the tests
# do not have): read across file boundaries into the NHWC images NumPy wrote,
# CIFAR-100's fine labels, a short fit and evaluate, and the damaged files'
# one-line errors.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
PY=$(test_python)
"$PY" -c "import numpy" 2>/dev/null || skip "NumPy is not installed (apt-get install python3-numpy)"

c10=$TMP/c10
"$PY" "$HERE/make_cifar.py" "$c10" cifar10 40 50
cfg=$TMP/cifar.yaml
cat >"$cfg" <<YAML
model:
  input_shape: [32, 32, 3]
  layers:
    - {type: conv2d, filters: 8, kernel_size: 3, strides: 2, activation: relu}
    - {type: global_avg_pool2d}
    - {type: dense, units: 10, activation: softmax}
loss: sparse_categorical_crossentropy
optimizer: {type: adam, learning_rate: 0.01}
data:
  path: $c10
  format: cifar10
  augment: [{random_crop: {padding: 4}}, random_flip]
training: {epochs: 2, batch_size: 40, seed: 1}
checkpoint: {monitor: loss}
logging: {progress: none}
YAML

step "CIFAR-10: 5 training files of 40 records and a test file of 50, images as NumPy wrote them"
run_expect 0 data "$cfg" --set data.scale=1 --set 'data.augment=[]' --augmented 120 --out "$TMP/x.npy"
expect_in "$TMP/out" "200 samples of [32, 32, 3], stored as bytes (uint8), 10 classes (labels 0..9)"
expect_in "$TMP/out" "test: data.path test ($c10)"
expect_in "$TMP/out" "50 samples of [32, 32, 3]"
"$PY" - "$TMP/x.npy" "$c10/train_images.npy" <<'PY' || fail "the images are not NumPy's NHWC images"
import sys
import numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])[:120].astype(np.float32)
assert got.shape == want.shape, (got.shape, want.shape)
assert np.array_equal(got, want), np.argwhere(got != want)[:3]
print("120 images (3 files) equal NumPy's")
PY

step "fit 2 epochs with crop and flip, evaluate on the 50 test images"
run_expect 0 fit "$cfg" --run-dir "$TMP/run" --device cpu --replicas 2
run_expect 0 evaluate --json --run-dir "$TMP/run" "$cfg"
"$PY" - "$TMP/out" <<'PY' || fail "evaluate --json is not as expected"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["samples"] == 50, r
PY

step "evaluate --tta flip: the mean of predict's probabilities on the images and their mirrors (NumPy)"
run_expect 0 evaluate --json --tta flip --run-dir "$TMP/run" "$cfg"
cp "$TMP/out" "$TMP/tta.json"
"$PY" -c "import numpy as np, sys; x = np.load(sys.argv[1]); np.save(sys.argv[2], x[:, :, ::-1].copy())" \
    "$c10/test_images.npy" "$TMP/mirrored.npy"
run_expect 0 predict "$cfg" --checkpoint "$TMP/run/best.safetensors" --input "$c10/test_images.npy" --output "$TMP/p.npy"
run_expect 0 predict "$cfg" --checkpoint "$TMP/run/best.safetensors" --input "$TMP/mirrored.npy" --output "$TMP/q.npy"
"$PY" - "$TMP/tta.json" "$TMP/p.npy" "$TMP/q.npy" "$c10/test_labels.npy" <<'PY' || fail "--tta flip differs from NumPy's average"
import json, sys
import numpy as np
r = json.load(open(sys.argv[1]))
p, q, y = np.load(sys.argv[2]).astype(np.float64), np.load(sys.argv[3]).astype(np.float64), np.load(sys.argv[4])
mean = (p + q) / 2
loss = -np.log(np.clip(mean[np.arange(len(y)), y], 1e-7, 1 - 1e-7)).mean()
accuracy = (mean.argmax(1) == y).mean()
assert r["samples"] == 50 and abs(r["accuracy"] - accuracy) < 1e-6 and abs(r["loss"] - loss) < 1e-5, (r, loss, accuracy)
assert not np.allclose(p, q), "the mirror changed nothing: the test checks nothing"
print(f"tta: loss {loss:.6f}, accuracy {accuracy:.4f} as NumPy's")
PY

step "dataset: cifar10 finds the archive's folder under \$GPUTRAIN_DATA/cifar10, format from the name"
mkdir -p "$TMP/root"
ln -s "$c10" "$TMP/root/cifar10"
# No data.format: dataset: cifar10 says it.
grep -v "format: cifar10" "$cfg" | sed "s|path: $c10|dataset: cifar10|" >"$TMP/named.yaml"
GPUTRAIN_DATA=$TMP/root "$GPUTRAIN" data "$TMP/named.yaml" 2>"$TMP/err" >"$TMP/out" ||
    fail "dataset: cifar10 was not found: $(cat "$TMP/err")"
expect_in "$TMP/out" "cifar10 train ($TMP/root/cifar10)"

step "CIFAR-100: two label bytes, the fine label is the class"
c100=$TMP/c100
"$PY" "$HERE/make_cifar.py" "$c100" cifar100 60 20
run_expect 0 data "$cfg" --set data.path="$c100" --set data.format=cifar100 --set data.scale=1 \
    --set 'data.augment=[]' --augmented 60 --out "$TMP/y.npy"
expect_in "$TMP/out" "60 samples of [32, 32, 3], stored as bytes (uint8), 100 classes (labels 50..99)"
"$PY" -c "import sys, numpy as np; assert np.array_equal(np.load(sys.argv[1]), np.load(sys.argv[2]).astype(np.float32))" \
    "$TMP/y.npy" "$c100/train_images.npy" || fail "CIFAR-100 images differ from NumPy's"

step "damaged files: one line each"
bad() { expect_one_line_error "$1" "$2" data "$cfg" "${@:3}"; }  # bad CODE EXPECTED ARGS...
cp -r "$c10" "$TMP/cut"
truncate -s -100 "$TMP/cut/cifar-10-batches-bin/data_batch_2.bin"
bad 1 "data_batch_2.bin: 122820 bytes is not a whole number of 3073-byte CIFAR-10 records (1 label byte and 3072 pixel bytes each); the file is truncated or not the binary version" \
    --set data.path="$TMP/cut"
cp -r "$c10" "$TMP/label"
printf '\x0c' | dd of="$TMP/label/cifar-10-batches-bin/data_batch_1.bin" bs=1 seek=3073 conv=notrunc status=none
bad 1 "data_batch_1.bin: record 1 has label 12, not a CIFAR-10 class (0-9); the file is not CIFAR-10 binary" \
    --set data.path="$TMP/label"
cp -r "$c10" "$TMP/missing"
rm "$TMP/missing/cifar-10-batches-bin/data_batch_3.bin"
bad 1 "no data_batch_3.bin found (CIFAR-10 binary version: run datasets/fetch-cifar10" --set data.path="$TMP/missing"
bad 1 "data.path: $TMP: no data_batch_1.bin (CIFAR-10 binary) found there or in its cifar-10-batches-bin folder" \
    --set data.path="$TMP"
bad 2 "model.input_shape [28, 28, 1] does not match the data's sample shape [32, 32, 3]" \
    --set 'model.input_shape=[28, 28, 1]'
echo "PASS"
