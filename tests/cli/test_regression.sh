#!/usr/bin/env bash
# Real-valued targets: a CSV with two target columns (data.target_columns, by
# header name) and an NPY float array of targets, made by NumPy from a known
# linear map. Checked against NumPy: gputrain data's target statistics,
# evaluate's loss and metric recomputed from predict's outputs (huber and
# mse), N replicas = 1, a resume, metrics.csv's columns; and the mismatches of
# loss, metric, targets and model as one-line errors. Targets reach the replicas
# through the resident gather and through the loader's batches alike.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
PY=$(test_python)
"$PY" -c "import numpy" 2>/dev/null || skip "NumPy is not installed (apt-get install python3-numpy)"

"$PY" - "$TMP" <<'PY'
import os, sys
import numpy as np
out = sys.argv[1]
rng = np.random.default_rng(7)
w = rng.normal(size=(5, 2))
def table(n):
    x = rng.normal(size=(n, 5))
    y = x @ w + np.array([3.0, -1.0]) + 0.1 * rng.normal(size=(n, 2))
    return x, y
os.makedirs(os.path.join(out, "csv"))
for split, n in (("train", 600), ("test", 200)):
    x, y = table(n)
    # The targets sit between the features and at the end: named, not placed.
    cols = np.column_stack([x[:, :2], y[:, 0], x[:, 2:], y[:, 1]])
    np.savetxt(os.path.join(out, "csv", split + ".csv"), cols, delimiter=",", fmt="%.7g",
               header="a,b,first,c,d,e,second", comments="")
os.makedirs(os.path.join(out, "npy"))
for split, n in (("train", 600), ("test", 200)):
    x, y = table(n)
    np.save(os.path.join(out, "npy", f"x_{split}.npy"), x.astype(np.float32))
    np.save(os.path.join(out, "npy", f"y_{split}.npy"), y[:, 0].astype(np.float64))
PY

cfg=$TMP/reg.yaml
cat >"$cfg" <<YAML
model:
  input_shape: [5]
  layers:
    - {type: dense, units: 16, activation: relu}
    - {type: dense, units: 2}
loss: {name: huber, delta: 0.5}
metrics: [mse]
optimizer: {type: adam, learning_rate: 0.01}
data: {path: $TMP/csv, format: csv, target_columns: [first, second], validation_split: 0.2}
training: {epochs: 4, batch_size: 32, seed: 3}
logging: {progress: none}
YAML

step "gputrain data: two real-valued targets per sample, their statistics as NumPy has them"
run_expect 0 data "$cfg"
expect_in "$TMP/out" "480 samples of [5], stored as float32, 2 real-valued targets per sample"
"$PY" - "$TMP/csv/train.csv" "$TMP/out" <<'PY' || fail "the target statistics are not NumPy's"
import sys
import numpy as np
t = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1)[:480][:, [2, 6]]
text = open(sys.argv[2]).read()
for j, name in enumerate(("first", "second")):
    line = f"target {j} ({name}): mean {t[:, j].mean():.4f}, std {t[:, j].std():.4f}"
    assert line in text, (line, text)
PY

step "fit: 3 replicas train the weights of 1; metrics.csv and the resolved config name what was used"
run_expect 0 fit "$cfg" --run-dir "$TMP/one" --device cpu --replicas 1
run_expect 0 fit "$cfg" --run-dir "$TMP/three" --device cpu --replicas 3
safetensors close "$TMP/three/last.safetensors" "$TMP/one/last.safetensors" 1e-4
# The targets reach the replicas by the loader's batches (resident: false) as by the resident gather.
run_expect 0 fit "$cfg" --run-dir "$TMP/loaded" --device cpu --replicas 1 --set data.resident=false
safetensors identical "$TMP/loaded/last.safetensors" "$TMP/one/last.safetensors"
[ "$(head -1 "$TMP/one/metrics.csv")" = "epoch,loss,mse,val_loss,val_mse,learning_rate,seconds,samples_per_second" ] ||
    fail "metrics.csv header: $(head -1 "$TMP/one/metrics.csv")"
expect_in "$TMP/one/config.yaml" "target_columns: [first, second]"
expect_in "$TMP/one/config.yaml" "scale: 1"
expect_in "$TMP/one/config.yaml" "delta: 0.5"
[ "$(safetensors metadata "$TMP/one/last.safetensors" val_mse)" != "" ] || fail "no val_mse in the checkpoint"

step "fit: a resume after epoch 2 ends with the uninterrupted run's weights"
run_expect 0 fit "$cfg" --run-dir "$TMP/split" --device cpu --replicas 1 --set training.epochs=2
run_expect 0 fit "$cfg" --run-dir "$TMP/split" --device cpu --replicas 1 --resume
safetensors identical "$TMP/split/last.safetensors" "$TMP/one/last.safetensors"

step "evaluate's huber loss and mse are NumPy's over predict's outputs (the test file, target columns left out)"
run_expect 0 evaluate --json "$cfg" --checkpoint "$TMP/one/last.safetensors" --device cpu
cp "$TMP/out" "$TMP/eval.json"
run_expect 0 predict "$cfg" --checkpoint "$TMP/one/last.safetensors" --input "$TMP/csv/test.csv" --output "$TMP/pred.csv" --device cpu
[ "$(head -1 "$TMP/pred.csv")" = "first,second" ] || fail "predict's header: $(head -1 "$TMP/pred.csv")"
"$PY" - "$TMP/eval.json" "$TMP/pred.csv" "$TMP/csv/test.csv" <<'PY' || fail "evaluate disagrees with NumPy"
import json, sys
import numpy as np
r = json.load(open(sys.argv[1]))
p = np.loadtxt(sys.argv[2], delimiter=",", skiprows=1)
t = np.loadtxt(sys.argv[3], delimiter=",", skiprows=1)[:, [2, 6]]
d = p - t
a = np.abs(d)
huber = np.where(a <= 0.5, 0.5 * d * d, 0.5 * a - 0.125).mean(axis=1).mean()
mse = (d * d).mean(axis=1).mean()
assert r["samples"] == 200, r
assert abs(r["loss"] - huber) <= 1e-4 * max(1, huber), (r, huber)
assert abs(r["mse"] - mse) <= 1e-4 * max(1, mse), (r, mse)
assert mse < 1.0, mse  # the map is learnable: far below the targets' variance
PY

step "format npy: a float64 y array is one real-valued target per sample, trained with mean_absolute_error"
run_expect 0 fit "$cfg" --run-dir "$TMP/npy" --device cpu --set data.format=npy --set data.path="$TMP/npy" \
    --set data.target_columns=null --set loss=mean_absolute_error --set metrics=[mae] --set 'model.layers[1].units=1'
run_expect 0 evaluate --json "$cfg" --run-dir "$TMP/npy" --device cpu --set data.format=npy --set data.path="$TMP/npy" \
    --set data.target_columns=null --set loss=mean_absolute_error --set metrics=[mae] --set 'model.layers[1].units=1'
"$PY" - "$TMP/out" <<'PY' || fail "evaluate --json is not as expected"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["samples"] == 200 and abs(r["loss"] - r["mae"]) < 1e-6 and r["mae"] < 2.0, r
PY

step "mismatches: one line each, naming the key and what to do"
expect_one_line_error 2 "metrics: accuracy counts class labels, and the targets of data.path train ($TMP/csv) are real values; use metrics: [mae] or [mse]" \
    fit "$cfg" --run-dir "$TMP/bad" --set metrics=[accuracy] --set loss=mean_squared_error
expect_one_line_error 2 "model.layers[1]: the model has 3 outputs, and data.path train ($TMP/csv) has 2 targets per sample; set the last layer's units to 2" \
    fit "$cfg" --run-dir "$TMP/bad" --set 'model.layers[1].units=3'
expect_one_line_error 2 "metrics: 'mse' measures real-valued targets, and sparse_categorical_crossentropy trains class labels; use metrics: [accuracy]" \
    fit "$cfg" --run-dir "$TMP/bad" --set loss=sparse_categorical_crossentropy
expect_one_line_error 2 "loss: sparse_categorical_crossentropy trains class labels, and the targets of data.path train ($TMP/csv) are real values; use mean_squared_error, mean_absolute_error or huber" \
    fit "$cfg" --run-dir "$TMP/bad" --set loss=sparse_categorical_crossentropy --set metrics=[accuracy]
expect_one_line_error 2 "$TMP/csv/train.csv: data.target_columns: no column 'frist' in the header (did you mean 'first'?); its columns are a, b, first, c, d, e, second" \
    fit "$cfg" --run-dir "$TMP/bad" --set 'data.target_columns=[frist]'
expect_one_line_error 2 "loss.delta: " \
    fit "$cfg" --run-dir "$TMP/bad" --set loss.delta=0
expect_one_line_error 2 "loss.delta: is huber's parameter, and the loss is mean_squared_error; remove it" \
    fit "$cfg" --run-dir "$TMP/bad" --set loss.name=mean_squared_error
expect_one_line_error 2 "data.target_columns: only used by format csv, not idx data" \
    fit "$cfg" --run-dir "$TMP/bad" --set data.format=idx
expect_one_line_error 2 "--confusion: counts predicted classes, and the targets of data.path test ($TMP/csv) are real values" \
    evaluate "$cfg" --checkpoint "$TMP/one/last.safetensors" --device cpu --confusion
# A test file whose columns are in another order than training's would be misread: refused.
mkdir -p "$TMP/swapped"
cp "$TMP/csv/train.csv" "$TMP/swapped/"
"$PY" -c "
import sys
lines = open(sys.argv[1]).read().splitlines()
with open(sys.argv[2], 'w') as f:
    for line in lines:
        v = line.split(',')
        f.write(','.join([v[1], v[0]] + v[2:]) + chr(10))
" "$TMP/csv/test.csv" "$TMP/swapped/test.csv"
expect_one_line_error 1 "$TMP/swapped/test.csv: its header (b,a,first,c,d,e,second) is not train.csv's (a,b,first,c,d,e,second); the columns are read by position" \
    evaluate "$cfg" --checkpoint "$TMP/one/last.safetensors" --device cpu --set data.path="$TMP/swapped"
# Without a metrics key, target columns make the metric mae.
grep -v "^metrics:" "$cfg" >"$TMP/no-metrics.yaml"
run_expect 0 fit "$TMP/no-metrics.yaml" --run-dir "$TMP/default-metric" --device cpu --set loss=mean_squared_error \
    --set training.epochs=1
expect_in "$TMP/default-metric/config.yaml" "metrics: [mae]"
[ "$(head -1 "$TMP/default-metric/metrics.csv")" = "epoch,loss,mae,val_loss,val_mae,learning_rate,seconds,samples_per_second" ] ||
    fail "metrics.csv header: $(head -1 "$TMP/default-metric/metrics.csv")"
# Class labels with a loss of real targets.
"$PY" - "$TMP/classes" <<'PY'
import os, sys
import numpy as np
os.makedirs(sys.argv[1])
rng = np.random.default_rng(1)
for split in ("train", "test"):
    np.savetxt(os.path.join(sys.argv[1], split + ".csv"), np.column_stack([rng.integers(0, 2, 40), rng.normal(size=(40, 5))]),
               delimiter=",", fmt="%.6g")
PY
expect_one_line_error 2 "loss: mean_absolute_error needs real-valued targets, and data.path train ($TMP/classes) has class labels; name the target columns in data.target_columns (CSV) or give a float y array (NPY)" \
    fit "$cfg" --run-dir "$TMP/bad" --set data.path="$TMP/classes" --set data.target_columns=null --set loss=mean_absolute_error --set metrics=[mae]
echo "PASS"
