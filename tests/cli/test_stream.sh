#!/usr/bin/env bash
# data.stream: a uint8 NPY training set of 400 MB is trained on while the
# process's peak resident memory stays under a quarter of it (rows are read
# from the file as batches need them); on a small set, streaming trains the
# weights the in-memory run trains, bit for bit (NPY and an image folder's
# cache); what cannot be streamed is a one-line error.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
PY=$(test_python)
"$PY" -c "import numpy" 2>/dev/null || skip "NumPy is not installed (apt-get install python3-numpy)"
free_mb=$(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
disk_mb=$(df -Pm "$TMP" | awk 'NR == 2 {print $4}')
[ "$disk_mb" -gt 1200 ] || skip "less than 1.2 GB free under $TMP"
# Under AddressSanitizer (scripts/test --sanitize) freed batches wait in its
# quarantine (256 MB by default), which the memory check would count.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8"

make() {  # make DIR SAMPLES: 28x28 uint8 images of 10 classes, and a small test set
    "$PY" - "$1" "$2" <<'PY'
import os, sys
import numpy as np
out, n = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(2)
patterns = rng.integers(0, 200, (10, 28, 28)).astype(np.uint8)
for split, count in (("train", n), ("test", 500)):
    y = np.arange(count) % 10
    x = np.lib.format.open_memmap(os.path.join(out, f"x_{split}.npy"), mode="w+", dtype=np.uint8, shape=(count, 28, 28))
    for first in range(0, count, 50000):  # in chunks: the writer's memory stays small too
        last = min(count, first + 50000)
        x[first:last] = patterns[y[first:last]] + rng.integers(0, 56, (last - first, 28, 28)).astype(np.uint8)
    x.flush()
    del x
    np.save(os.path.join(out, f"y_{split}.npy"), y.astype(np.uint8))
PY
}
cfg=$TMP/stream.yaml
cat >"$cfg" <<YAML
model:
  input_shape: [28, 28]
  layers:
    - {type: flatten}
    - {type: dense, units: 16, activation: relu}
    - {type: dense, units: 10, activation: softmax}
loss: sparse_categorical_crossentropy
optimizer: {type: adam, learning_rate: 0.003}
data: {path: $TMP/small, format: npy, stream: true}
training: {epochs: 2, batch_size: 256, seed: 1}
checkpoint: {monitor: loss}
logging: {progress: none}
YAML

step "a small set: streamed and in memory train the same weights"
make "$TMP/small" 3000
run_expect 0 fit "$cfg" --run-dir "$TMP/streamed" --device cpu --replicas 2
expect_in "$TMP/streamed/config.yaml" "stream: true"
run_expect 0 fit "$cfg" --run-dir "$TMP/memory" --device cpu --replicas 2 --set data.stream=false
safetensors identical "$TMP/streamed/last.safetensors" "$TMP/memory/last.safetensors"
run_expect 0 data "$cfg"
expect_in "$TMP/out" "stored as bytes (uint8), streamed from $TMP/small/x_train.npy"

step "400 MB of training images: peak resident memory grows by less than a quarter of them over a 3,000-sample run's"
make "$TMP/big" 510000
size_mb=$(( $(stat -c %s "$TMP/big/x_train.npy") / 1048576 ))
echo "x_train.npy: $size_mb MB; memory available: $free_mb MB"
"$PY" - "$GPUTRAIN" "$cfg" "$TMP/big" "$TMP/bigrun" "$size_mb" <<'PY' || fail "streaming did not keep memory bounded"
import resource, subprocess, sys
gputrain, cfg, data, run, size_mb = sys.argv[1:6]
def peak(path, run_dir):
    # ru_maxrss of the children: the largest so far, so the small run goes first.
    subprocess.run([gputrain, "fit", cfg, "--set", f"data.path={path}", "--set", "training.epochs=1",
                    "--run-dir", run_dir, "--device", "cpu", "--replicas", "2", "--quiet"], check=True)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
# The process's own (libraries, threads' buffers, the model) is what a small set's run peaks at.
base_mb = peak(data.replace("big", "small"), run + "-small")
peak_mb = peak(data, run)
print(f"peak resident memory: {base_mb:.0f} MB with 3,000 samples, {peak_mb:.0f} MB with {size_mb} MB of them")
assert peak_mb - base_mb < int(size_mb) / 4, (base_mb, peak_mb)
PY
tail -n 1 "$TMP/bigrun/metrics.csv" | awk -F, '{ exit !($3 > 0.9) }' ||
    fail "the streamed epoch did not learn: $(tail -n 1 "$TMP/bigrun/metrics.csv")"

step "an image folder's cache, streamed: the in-memory run's weights"
"$PY" "$HERE/make_images.py" "$TMP/images" 12 16
export GPUTRAIN_CACHE=$TMP/cache
img=(--set data.format=image_folder --set data.path="$TMP/images" --set 'model.input_shape=[12, 16, 3]'
     --set 'model.layers=[{type: flatten}, {type: dense, units: 3, activation: softmax}]' --set training.batch_size=8)
run_expect 0 fit "$cfg" "${img[@]}" --run-dir "$TMP/img-streamed" --device cpu --replicas 1
run_expect 0 fit "$cfg" "${img[@]}" --set data.stream=false --run-dir "$TMP/img-memory" --device cpu --replicas 1
safetensors identical "$TMP/img-streamed/last.safetensors" "$TMP/img-memory/last.safetensors"

step "stream: auto streams what takes more than stream_memory_fraction of the memory available, and says so"
run_expect 0 data "$cfg" --set data.stream=auto
grep -q "streamed from" "$TMP/out" && fail "auto streamed 3,000 samples at the default fraction"
tiny=(--set data.stream=auto --set data.stream_memory_fraction=1e-9)
run_expect 0 data "$cfg" "${tiny[@]}"
expect_in "$TMP/out" "stored as bytes (uint8), streamed from $TMP/small/x_train.npy"
run_expect 0 fit "$cfg" "${tiny[@]}" --run-dir "$TMP/auto" --device cpu --replicas 2
expect_in "$TMP/out" "data.stream: auto: $TMP/small/x_train.npy holds 2.24 MiB of samples, more than data.stream_memory_fraction (1e-09) of the memory available: streamed from disk"
safetensors identical "$TMP/auto/last.safetensors" "$TMP/memory/last.safetensors"
expect_in "$TMP/auto/config.yaml" "stream: auto"
run_expect 0 fit "$cfg" "${img[@]}" "${tiny[@]}" --run-dir "$TMP/img-auto" --device cpu --replicas 1
expect_in "$TMP/out" "data.stream: auto: the 24 images of $TMP/images/train take"
safetensors identical "$TMP/img-auto/last.safetensors" "$TMP/img-memory/last.safetensors"
run_expect 2 fit "$cfg" --set data.stream_memory_fraction=0.3 --run-dir "$TMP/bad"
expect_in "$TMP/err" "data.stream_memory_fraction: is only used with stream: auto; remove it or set stream: auto"

step "what cannot be streamed: one line each"
run_expect 2 data "$cfg" --set data.format=csv
expect_in "$TMP/err" "data.stream: reads rows from IDX, NPY (uint8) and image folder caches, not csv data; set data.stream: false"
"$PY" -c "import numpy as np, sys; np.save(sys.argv[1], np.zeros((3000, 28, 28), np.float32))" "$TMP/small/x_train.npy"
run_expect 2 data "$cfg"
expect_in "$TMP/err" "x_train.npy: data.stream reads uint8 arrays (bytes, like images), and this one is float32"
run_expect 2 fit "$cfg" --set data.path="$TMP/big" --set data.resident=true --run-dir "$TMP/never"
expect_in "$TMP/err" "data.resident: true holds the training set in memory, and data.stream reads it from disk"
mkdir -p "$TMP/idx"
"$PY" - "$TMP/idx" <<'PY'
import gzip, os, struct, sys
with gzip.open(os.path.join(sys.argv[1], "train-images-idx3-ubyte.gz"), "wb") as f:
    f.write(struct.pack(">iiii", 0x803, 2, 28, 28) + bytes(2 * 784))
with gzip.open(os.path.join(sys.argv[1], "train-labels-idx1-ubyte.gz"), "wb") as f:
    f.write(struct.pack(">ii", 0x801, 2) + bytes(2))
PY
run_expect 1 fit "$cfg" --set data.format=idx --set data.path="$TMP/idx" --run-dir "$TMP/never"
expect_in "$TMP/err" "train-images-idx3-ubyte.gz: data.stream reads rows from an uncompressed file; unpack it next to the .gz (gunzip -k"
gunzip -k "$TMP/idx/train-images-idx3-ubyte.gz"
run_expect 0 data "$cfg" --set data.format=idx --set data.path="$TMP/idx"
expect_in "$TMP/out" "2 samples of [28, 28], stored as bytes (uint8), streamed from $TMP/idx/train-images-idx3-ubyte"
echo "PASS"
