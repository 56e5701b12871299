#!/usr/bin/env bash
# data.normalize and data.augment end to end on synthetic 8x9 RGB images:
# `gputrain data` prints the statistics normalize takes and writes samples as
# training makes them, which an independent NumPy reference of every
# augmentation reproduces pixel for pixel; training with augmentation gives
# the same weights on 1 and 3 replicas and across a resume; bad settings are
# one-line errors.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
PY=$(test_python)
"$PY" -c "import numpy" 2>/dev/null || skip "NumPy is not installed (apt-get install python3-numpy)"

cfg=$TMP/aug.yaml
cat >"$cfg" <<'YAML'
model:
  input_shape: [8, 9, 3]
  layers:
    - {type: conv2d, filters: 4, kernel_size: 3, padding: same, activation: relu}
    - {type: flatten}
    - {type: dense, units: 4, activation: softmax}
loss: sparse_categorical_crossentropy
optimizer: {type: adam, learning_rate: 0.01}
data:
  dataset: synthetic
  synthetic: {samples: 480, classes: 4, seed: 7}
  normalize: {mean: [0.5, 0.4, 0.6], std: [0.25, 0.2, 0.3]}
  augment:
    - random_crop: {padding: 2, mode: reflect}
    - random_flip: horizontal_and_vertical
    - random_translate: {height_factor: 0.25, width_factor: 0.2}
    - cutout: {size: 3, count: 2}
training: {epochs: 2, batch_size: 48, shuffle: true, seed: 5}
checkpoint: {monitor: loss}
logging: {progress: none}
YAML
steps='[["random_crop", {"padding": 2, "mode": "reflect"}], ["random_flip", {"mode": "horizontal_and_vertical"}],
        ["random_translate", {"height_factor": 0.25, "width_factor": 0.2}], ["cutout", {"size": 3, "count": 2}]]'
# A black pixel, normalized: (0 - mean) / std per channel.
fill="-2,-2,-2"

step "data: the statistics data.normalize takes"
run_expect 0 data "$cfg" --set 'data.augment=[]'
expect_in "$TMP/out" "480 samples of [8, 9, 3], stored as bytes (uint8), 4 classes (labels 0..3)"
expect_in "$TMP/out" "channel 2 after data.scale: mean"
expect_in "$TMP/out" "normalize: {mean: ["

step "data --augmented: every augmentation against the NumPy reference, pixel for pixel"
run_expect 0 data "$cfg" --set 'data.augment=[]' --augmented 40 --out "$TMP/plain.npy"
expect_in "$TMP/out" "data.augment is empty: scaled and normalized only"
for epoch in 0 3; do
    run_expect 0 data "$cfg" --augmented 40 --epoch $epoch --out "$TMP/aug$epoch.npy"
    expect_in "$TMP/out" "scaled, normalized and augmented"
    "$PY" "$HERE/augment_reference.py" "$TMP/plain.npy" "$TMP/aug$epoch.npy" 5 $epoch "$fill" "$steps" ||
        fail "epoch $epoch's augmentation differs from the NumPy reference"
done
"$PY" - "$TMP/aug0.npy" "$TMP/aug3.npy" "$TMP/plain.npy" <<'PY' || fail "normalization or epochs not as expected"
import sys
import numpy as np
a, b, plain = (np.load(p) for p in sys.argv[1:])
assert not np.array_equal(a, b), "epochs 0 and 3 augment alike"
# Synthetic bytes are 0..255: normalized channel 0 lies in [(0 - .5) / .25, (1 - .5) / .25].
assert plain[..., 0].min() >= -2 and plain[..., 0].max() <= 2, (plain.min(), plain.max())
PY

step "random_rotation: the reference's bilinear rotation, to float rounding"
rot='data.augment=[{random_flip: horizontal}, {random_rotation: {degrees: 25}}]'
run_expect 0 data "$cfg" --set "$rot" --augmented 24 --epoch 1 --out "$TMP/rot.npy"
"$PY" "$HERE/augment_reference.py" "$TMP/plain.npy" "$TMP/rot.npy" 5 1 "$fill" \
    '[["random_flip", {"mode": "horizontal"}], ["random_rotation", {"degrees": 25}]]' 1e-4 ||
    fail "rotation differs from the NumPy reference"

step "fit with augmentation: 3 replicas train the weights of 1"
run_expect 0 fit "$cfg" --run-dir "$TMP/one" --device cpu --replicas 1
expect_in "$TMP/one/config.yaml" "random_crop: {padding: 2, mode: reflect}"
run_expect 0 fit "$cfg" --run-dir "$TMP/three" --device cpu --replicas 3
safetensors close "$TMP/three/last.safetensors" "$TMP/one/last.safetensors" 1e-4

step "fit with augmentation: a resume after epoch 1 ends with the uninterrupted run's weights"
run_expect 0 fit "$cfg" --run-dir "$TMP/split" --device cpu --replicas 1 --set training.epochs=1
run_expect 0 fit "$cfg" --run-dir "$TMP/split" --device cpu --replicas 1 --resume
safetensors identical "$TMP/split/last.safetensors" "$TMP/one/last.safetensors"

step "evaluate reads bytes through the training's table, without augmentation"
run_expect 0 evaluate --json --run-dir "$TMP/one" "$cfg"
"$PY" - "$TMP/out" <<'PY' || fail "evaluate --json is not as expected"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["samples"] == 120 and r["accuracy"] > 0.3, r
PY
# Unaugmented, the synthetic classes are easy: evaluation sees what training saw.
run_expect 0 fit "$cfg" --run-dir "$TMP/plain" --device cpu --replicas 2 --set 'data.augment=[]'
run_expect 0 evaluate --json --run-dir "$TMP/plain" "$cfg" --set 'data.augment=[]'
"$PY" - "$TMP/out" <<'PY' || fail "evaluate --json is not as expected"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["samples"] == 120 and r["accuracy"] > 0.9, r
PY

step "bench: the input pipeline's share of the step (rows as stored, made floats and augmented)"
run_expect 0 bench "$cfg" --device cpu --replicas 2 --steps 3 --warmup 1
expect_in "$TMP/out" "= input copy + prepare (data.augment) "
expect_in "$TMP/out" "input pipeline: "

step "bad settings: one line each, exit 2"
bad() {  # bad EXPECTED --set ...
    local expected=$1
    shift
    run_expect 2 data "$cfg" "$@"
    expect_in "$TMP/err" "$expected"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "more than one line for: $*"
}
bad "data.augment[0].random_crop.padding: padding 8 is not smaller than the 8x9 images; give at most 7" \
    --set 'data.augment=[{random_crop: {padding: 8}}]'
bad "data.augment[0].cutout.size: a square of 10 pixels is larger than the 8x9 images" --set 'data.augment=[{cutout: {size: 10}}]'
bad "data.augment[0]: unknown augmentation 'random_flipp'" --set 'data.augment=[random_flipp]'
bad "data.augment[0].random_crop.padding: missing" --set 'data.augment=[random_crop]'
bad "data.augment[0].random_flip.mode: unknown flip mode 'sideways'" --set 'data.augment=[{random_flip: {mode: sideways}}]'
bad "data.augment[1]: a second random_rotation" \
    --set 'data.augment=[{random_rotation: {degrees: 5}}, {random_rotation: {degrees: 5}}]'
bad "data.augment[0].random_rotation.degrees: expected at most 180 degrees" \
    --set 'data.augment=[{random_rotation: {degrees: 200}}]'
bad "data.normalize.std" --set 'data.normalize={mean: [0.5], std: [0]}'
bad "data.normalize.std: has 2 values and mean has 3" --set 'data.normalize={mean: [0.5, 0.4, 0.6], std: [1, 1]}'
bad "data.normalize: 2 mean/std values for samples of shape (8, 9, 3) with 3 channels" \
    --set 'data.normalize={mean: [0.5, 0.4], std: [1, 1]}'
bad "data.augment: works on images: model.input_shape is (216)" --set 'model.input_shape=[216]' --set 'data.normalize=null' \
    --set 'model.layers=[{type: dense, units: 4, activation: softmax}]'
echo "PASS"
