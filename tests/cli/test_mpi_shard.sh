#!/usr/bin/env bash
# data.shard_files under mpirun -np 2 (CPU workers): each worker reads only its
# half of train.csv and builds its rows of every global batch from it.
#  - Without shuffling, worker w's rows of step s are rows [4s, 4s+4) of its
#    half, so one process with 2 replicas on a file that interleaves the halves
#    in that order trains the same weights (1e-5).
#  - A broken row in worker 0's half fails on rank 0 only: worker 1 never parsed it.
#  - validation_split: every worker reads the validation tail whole.
#  - With data.stream each worker reads its half's rows from an NPY file: the
#    weights of the in-memory run, bit for bit.
#  - Without a launcher shard_files changes nothing.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
require_mpi

# 71 rows (an odd count): halves of 35 and 36 rows; a global batch of 8 takes 4
# rows of each, so an epoch has min(35, 36) / 4 = 8 steps and leaves 3 and 4 rows unused.
mkdir -p "$TMP/data" "$TMP/interleaved"
python3 - "$TMP/data/train.csv" "$TMP/interleaved/train.csv" <<'PY'
import random, sys
rng = random.Random(5)
rows = []
for i in range(71):
    label = i % 3
    rows.append([label] + [round(rng.gauss(label, 1.0), 4) for _ in range(6)])
with open(sys.argv[1], "w") as f:
    f.write("label," + ",".join(f"x{j}" for j in range(6)) + "\n")
    for r in rows:
        f.write(",".join(str(v) for v in r) + "\n")
halves = [rows[:35], rows[35:]]
with open(sys.argv[2], "w") as f:
    for s in range(8):
        for half in halves:
            for r in half[4 * s:4 * s + 4]:
                f.write(",".join(str(v) for v in r) + "\n")
PY
cp "$TMP/data/train.csv" "$TMP/data/test.csv"
cp "$TMP/data/train.csv" "$TMP/interleaved/test.csv"

cfg=$TMP/csv.yaml
cat >"$cfg" <<YAML
model:
  input_shape: [6]
  layers:
    - {type: dense, units: 8, activation: relu}
    - {type: dense, units: 3, activation: softmax}
loss: sparse_categorical_crossentropy
optimizer: {type: adam, learning_rate: 0.01}
data: {format: csv, path: $TMP/data, scale: 1.0}
training: {epochs: 3, batch_size: 8, shuffle: false, seed: 3}
checkpoint: {monitor: loss}
logging: {progress: none}
YAML
multi=(--set strategy.type=multi_worker_mirrored --device cpu --replicas 1)

step "mpirun -np 2 with data.shard_files: each worker reads its half"
mpi_run -np 2 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --set data.shard_files=true --run-dir "$TMP/shard" \
    >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/out" "$TMP/err" >&2; fail "mpirun -np 2 with shard_files failed"; }
cat "$TMP/out"
expect_in "$TMP/out" "Data: 35 training samples; data.path train ($TMP/data): samples 0..34 of 71 (worker 0 of 2, data.shard_files)"
[ "$(wc -l <"$TMP/shard/metrics.csv")" -eq 4 ] || fail "metrics.csv should have a header and 3 rows"

step "one process, 2 replicas, on the halves interleaved as the workers' batches: the same weights"
run_expect 0 fit "$cfg" --set "data.path=$TMP/interleaved" --device cpu --replicas 2 --run-dir "$TMP/reference" --quiet
safetensors close "$TMP/shard/last.safetensors" "$TMP/reference/last.safetensors" 1e-5
# Without shard_files the 2 workers read every row in file order: other batches, other weights.
mpi_run -np 2 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --run-dir "$TMP/whole" --quiet >"$TMP/out" 2>&1 ||
    { cat "$TMP/out" >&2; fail "mpirun -np 2 without shard_files failed"; }
if safetensors close "$TMP/whole/last.safetensors" "$TMP/reference/last.safetensors" 1e-5 >/dev/null 2>&1; then
    fail "the run without shard_files should not match the interleaved reference"
fi

step "a broken row in worker 0's half stops rank 0 only: worker 1 does not parse it"
mkdir -p "$TMP/broken"
sed '4s/,/,oops/' "$TMP/data/train.csv" >"$TMP/broken/train.csv"  # data row 3: worker 0's half
cp "$TMP/data/test.csv" "$TMP/broken/test.csv"
status=0
mpi_run -np 2 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --set data.shard_files=true --set "data.path=$TMP/broken" \
    --run-dir "$TMP/broken-run" >"$TMP/out" 2>"$TMP/err" || status=$?
cat "$TMP/err"
[ "$status" -ne 0 ] || fail "a broken row in worker 0's half should fail"
expect_in "$TMP/err" "[rank 0] gputrain: error: $TMP/broken/train.csv:4:"
! grep -qF "[rank 1] gputrain: error: $TMP/broken/train.csv" "$TMP/err" || fail "worker 1 parsed worker 0's rows"

step "validation_split with shard_files: the training rows are sharded, the validation tail is read whole"
mpi_run -np 2 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --set data.shard_files=true --set data.validation_split=0.2 \
    --set training.shuffle=true --run-dir "$TMP/val" >"$TMP/out" 2>&1 ||
    { cat "$TMP/out" >&2; fail "mpirun -np 2 with shard_files and validation_split failed"; }
# int(71 * 0.8) = 56 training rows (28 per worker), 15 validation rows.
expect_in "$TMP/out" "Data: 28 training samples, 15 validation samples; data.path train ($TMP/data): samples 0..27 of 56 (worker 0 of 2, data.shard_files)"
python3 - "$TMP/val/metrics.csv" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 3, rows
for r in rows:
    assert math.isfinite(float(r["val_loss"])) and 0 <= float(r["val_accuracy"]) <= 1, r
print("val_loss per epoch:", [r["val_loss"] for r in rows])
PY

step "shard_files with data.stream: each worker reads its half's rows from the NPY file, the weights of reading them"
PY=$(test_python)
if "$PY" -c "import numpy" 2>/dev/null; then
    "$PY" - "$TMP/data/train.csv" "$TMP/npy" <<'PY'
import os, sys
import numpy as np
t = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1)
os.makedirs(sys.argv[2])
x = np.clip(np.round((t[:, 1:] + 3) * 30), 0, 255).astype(np.uint8)  # the features as bytes
for split in ("train", "test"):
    np.save(os.path.join(sys.argv[2], f"x_{split}.npy"), x)
    np.save(os.path.join(sys.argv[2], f"y_{split}.npy"), t[:, 0].astype(np.int64))
PY
    npy=(--set data.format=npy --set "data.path=$TMP/npy" --set data.scale=auto --set data.shard_files=true)
    for stream in true false; do
        mpi_run -np 2 "$GPUTRAIN" fit "$cfg" "${multi[@]}" "${npy[@]}" --set data.stream=$stream \
            --run-dir "$TMP/npy-$stream" >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; fail "mpirun -np 2 with stream: $stream failed"; }
    done
    expect_in "$TMP/out" "Data: 35 training samples; data.path train ($TMP/npy): samples 0..34 of 71 (worker 0 of 2, data.shard_files)"
    safetensors identical "$TMP/npy-true/last.safetensors" "$TMP/npy-false/last.safetensors"
else
    echo "(NumPy not installed: the streamed part is skipped)"
fi

step "without a launcher shard_files changes nothing"
run_expect 0 fit "$cfg" --device cpu --replicas 2 --run-dir "$TMP/plain" --quiet
run_expect 0 fit "$cfg" --set data.shard_files=true --device cpu --replicas 2 --run-dir "$TMP/plain-shard" --quiet
safetensors identical "$TMP/plain/last.safetensors" "$TMP/plain-shard/last.safetensors"
echo "ok"
