#!/usr/bin/env bash
# gputrain predict: train briefly on Fashion-MNIST, then predict the test images
# from the IDX file, from NPY copies (uint8 and float32) and from a CSV; every
# row is a probability distribution, the formats agree, and the argmax accuracy
# equals what 'gputrain evaluate' reports. Skipped without the data set.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

found=
for dir in ${GPUTRAIN_DATA:+"$GPUTRAIN_DATA/fashion-mnist"} datasets/fashion-mnist /usr/share/datasets/fashion-mnist; do
    if compgen -G "$dir/t10k-images-idx3-ubyte*" >/dev/null; then found=$dir; break; fi
done
[ -n "$found" ] || skip "Fashion-MNIST not found (apt-get install dataset-fashion-mnist)"
images=$(compgen -G "$found/t10k-images-idx3-ubyte*" | head -n 1)
labels=$(compgen -G "$found/t10k-labels-idx1-ubyte*" | head -n 1)
config=configs/fashion_mnist_mlp.yaml

step "fit: 1 epoch on 3000 samples"
run=$TMP/run
run_expect 0 fit "$config" --set training.epochs=1 --set data.limit=3000 --run-dir "$run" --quiet
ckpt=$run/last.safetensors

step "evaluate on the whole test set"
run_expect 0 evaluate "$config" --checkpoint "$ckpt" --json --device cpu
cp "$TMP/out" "$TMP/evaluate.json"
cat "$TMP/evaluate.json"

step "predict on the IDX images (CSV on stdout)"
run_expect 0 predict "$config" --checkpoint "$ckpt" --input "$images" --device cpu
cp "$TMP/out" "$TMP/idx.csv"
[ ! -s "$TMP/err" ] || fail "predict wrote to stderr: $(cat "$TMP/err")"

step "NPY copies of the images (uint8 and float32) and a labeled CSV of the first 50"
python3 - "$images" "$labels" "$TMP" <<'PY'
import gzip, struct, sys
images, labels, tmp = sys.argv[1:4]
def idx(path):
    raw = (gzip.open if path.endswith(".gz") else open)(path, "rb").read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return dims, raw[4 + 4 * ndim:]
dims, pixels = idx(images)
_, label_bytes = idx(labels)
def npy(path, descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, ", ".join(map(str, shape)))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload)
npy(tmp + "/images_u8.npy", "|u1", dims, pixels)
n = dims[0] * dims[1] * dims[2]
npy(tmp + "/images_f4.npy", "<f4", (dims[0], dims[1] * dims[2]), struct.pack("<%df" % n, *pixels))
npy(tmp + "/normalized_f4.npy", "<f4", (dims[0], dims[1] * dims[2]), struct.pack("<%df" % n, *[p / 255 for p in pixels]))
with open(tmp + "/first50.csv", "w") as f:
    f.write("label," + ",".join("pixel%d" % i for i in range(784)) + "\n")
    for i in range(50):
        f.write(str(label_bytes[i]) + "," + ",".join(map(str, pixels[i * 784:(i + 1) * 784])) + "\n")
PY

step "predict on the uint8 NPY (CSV file), the float32 NPY (NPY file), the CSV (stdout)"
run_expect 0 predict "$config" --checkpoint "$ckpt" --input "$TMP/images_u8.npy" --output "$TMP/u8.csv" --device cpu
run_expect 0 predict "$config" --checkpoint "$ckpt" --input "$TMP/images_f4.npy" --output "$TMP/f4.npy" --device cpu
run_expect 0 predict "$config" --checkpoint "$ckpt" --input "$TMP/first50.csv" --device cpu
cp "$TMP/out" "$TMP/first50_probs.csv"

step "inputs normalized already: predicts, and warns that data.scale applies again"
run_expect 0 predict "$config" --checkpoint "$ckpt" --input "$TMP/normalized_f4.npy" --output "$TMP/norm.csv" --device cpu
cat "$TMP/out" "$TMP/err" >"$TMP/both"
expect_in "$TMP/both" "normalized_f4.npy: every value is within [-1, 1] before data.scale (0.00392157) is applied"
run_expect 0 predict "$config" --checkpoint "$ckpt" --input "$TMP/normalized_f4.npy" --output "$TMP/norm1.csv" \
  --device cpu --set data.scale=1
if grep -q "every value is within" "$TMP/out" "$TMP/err"; then fail "warned with data.scale=1"; fi
# Following that advice is no model change: no warning at all.
[ ! -s "$TMP/err" ] || fail "predict with data.scale=1 warned: $(cat "$TMP/err")"

step "rows are distributions, formats agree, accuracy equals evaluate's"
python3 - "$TMP" "$labels" <<'PY' || fail "predictions are not as expected"
import gzip, json, struct, sys
tmp, labels = sys.argv[1:3]
raw = (gzip.open if labels.endswith(".gz") else open)(labels, "rb").read()
truth = raw[8:]
def read_csv(path):
    lines = open(path).read().splitlines()
    assert lines[0] == ",".join("class_%d" % j for j in range(10)), lines[0]
    return [[float(v) for v in line.split(",")] for line in lines[1:]]
def read_npy(path):
    blob = open(path, "rb").read()
    assert blob[:8] == b"\x93NUMPY\x01\x00", blob[:8]
    (n,) = struct.unpack("<H", blob[8:10])
    header = blob[10:10 + n].decode()
    assert (10 + n) % 64 == 0 and header.endswith("\n"), header
    shape = eval(header)["shape"]
    assert eval(header)["descr"] == "<f4", header
    values = struct.unpack("<%df" % (shape[0] * shape[1]), blob[10 + n:])
    return [list(values[i * shape[1]:(i + 1) * shape[1]]) for i in range(shape[0])]
idx = read_csv(tmp + "/idx.csv")
assert len(idx) == len(truth) == 10000, len(idx)
for row in idx:
    assert len(row) == 10 and all(0 <= p <= 1 for p in row), row
    assert abs(sum(row) - 1) < 1e-5, sum(row)
u8 = read_csv(tmp + "/u8.csv")
assert u8 == idx, "uint8 NPY predictions differ from the IDX ones"
f4 = read_npy(tmp + "/f4.npy")
# %.9g round-trips a float32: the CSV text, rounded to float32, is the NPY value.
as_f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]
differ = sum(as_f32(a) != b for ra, rb in zip(idx, f4) for a, b in zip(ra, rb))
assert len(f4) == 10000 and differ == 0, differ
first50 = read_csv(tmp + "/first50_probs.csv")
# The last batch has 18 rows here, 32 there: BLAS may round a shorter GEMM differently.
worst = max(abs(a - b) for ra, rb in zip(first50, idx) for a, b in zip(ra, rb))
assert len(first50) == 50 and worst < 1e-6, ("CSV predictions differ from the IDX ones", worst)
correct = sum(max(range(10), key=row.__getitem__) == t for row, t in zip(idx, truth))
accuracy = correct / len(truth)
reported = json.load(open(tmp + "/evaluate.json"))
print(f"predict accuracy {accuracy:.6f}, evaluate {reported['accuracy']:.6f}")
assert reported["samples"] == 10000, reported
assert abs(accuracy - reported["accuracy"]) < 1e-6, (accuracy, reported)
assert accuracy > 0.6, accuracy
PY

step "errors: wrong sample size, missing input, missing checkpoint"
python3 - "$TMP/bad.npy" <<'PY'
import struct, sys
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 5), }"
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + bytes(40))
PY
# A data file that cannot be used is a runtime error (1), as an unsupported dtype is.
run_expect 1 predict "$config" --checkpoint "$ckpt" --input "$TMP/bad.npy" --device cpu
expect_in "$TMP/err" "gputrain: error: $TMP/bad.npy: the array's shape [2, 5] does not hold samples of model.input_shape [28, 28]; expected [N, 784] or [N] + model.input_shape"
run_expect 1 predict "$config" --checkpoint "$ckpt" --input "$TMP/none.npy" --device cpu
expect_in "$TMP/err" "gputrain: error: $TMP/none.npy: no such file"
run_expect 2 predict "$config" --checkpoint "$TMP/none.safetensors" --input "$images" --device cpu
expect_in "$TMP/err" "gputrain: error: --checkpoint: '$TMP/none.safetensors' does not exist"
run_expect 2 predict "$config" --input "$images"
expect_in "$TMP/err" "--checkpoint is required"

step "errors: an input that is a directory, a NaN or an infinity among the values"
run_expect 1 predict "$config" --checkpoint "$ckpt" --input "$TMP" --device cpu
expect_in "$TMP/err" "gputrain: error: $TMP: not a regular file (a directory); give an IDX, CSV or NPY file"
python3 - "$TMP/nan.npy" "$TMP/inf.npy" <<'PY'
import struct, sys
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 784), }"
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
for path, bad in zip(sys.argv[1:], (float("nan"), float("inf"))):
    values = [0.5] * (2 * 784)
    values[784 + 3] = bad  # element 3 of sample 1
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() +
                           struct.pack("<%df" % len(values), *values))
PY
run_expect 1 predict "$config" --checkpoint "$ckpt" --input "$TMP/nan.npy" --device cpu
expect_in "$TMP/err" "gputrain: error: $TMP/nan.npy: element 3 of sample 1 is NaN; the model takes finite inputs"
run_expect 1 predict "$config" --checkpoint "$ckpt" --input "$TMP/inf.npy" --device cpu
expect_in "$TMP/err" "gputrain: error: $TMP/inf.npy: element 3 of sample 1 is infinite; the model takes finite inputs"

step "finite inputs the model overflows on: the rows are written, and a warning counts them"
python3 - "$TMP/huge.npy" <<'PY'
import struct, sys
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 784), }"
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
values = [0.5] * (3 * 784)
values[784:2 * 784] = [3e38] * 784  # sample 1: finite, far past training's inputs
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() +
                           struct.pack("<%df" % len(values), *values))
PY
run_expect 0 predict "$config" --checkpoint "$ckpt" --input "$TMP/huge.npy" --device cpu --set data.scale=1
expect_in "$TMP/err" "warning: 1 of 3 predictions are NaN or Inf (the first is sample 1): the model overflowed on those inputs; check their values and data.scale (1)"
[ "$(wc -l <"$TMP/out")" -eq 4 ] || fail "expected a header and 3 rows: $(cat "$TMP/out")"

step "--output naming the config, the checkpoint or the input is refused, the file untouched"
cp "$ckpt" "$TMP/model.safetensors"
cp "$TMP/first50.csv" "$TMP/in.csv"
cp "$config" "$TMP/config.yaml"
for target in "$TMP/model.safetensors:--checkpoint" "$TMP/./in.csv:--input" "$TMP/../$(basename "$TMP")/config.yaml:the config"; do
    path=${target%%:*}
    what=${target#*:}
    cp "$path" "$TMP/before"
    run_expect 2 predict "$TMP/config.yaml" --checkpoint "$TMP/model.safetensors" --input "$TMP/in.csv" --output "$path" --device cpu
    expect_in "$TMP/err" "gputrain: error: --output '$path' is $what ("
    expect_in "$TMP/err" "): writing the probabilities would replace it; give another file"
    cmp "$path" "$TMP/before" || fail "predict --output $path changed it"
done

step "--output in a folder that does not exist, or a folder: refused before anything is scored"
run_expect 2 predict "$config" --checkpoint "$ckpt" --input "$TMP/first50.csv" --output "$TMP/nodir/p.npy" --device cpu
expect_in "$TMP/err" "gputrain: error: --output '$TMP/nodir/p.npy': the folder '$TMP/nodir' does not exist; create it or give another path"
run_expect 2 predict "$config" --checkpoint "$ckpt" --input "$TMP/first50.csv" --output "$TMP" --device cpu
expect_in "$TMP/err" "gputrain: error: --output '$TMP' is a folder; give a file name, e.g. $TMP/probabilities.csv"

step "the format by extension, whatever its case (X.CSV, X.NPY)"
cp "$TMP/first50.csv" "$TMP/FIRST50.CSV"
run_expect 0 predict "$config" --checkpoint "$ckpt" --input "$TMP/FIRST50.CSV" --output "$TMP/OUT.NPY" --device cpu
python3 - "$TMP/OUT.NPY" <<'PY'
import sys
raw = open(sys.argv[1], "rb").read()
assert raw.startswith(b"\x93NUMPY") and b"'shape': (50, 10)" in raw, raw[:80]
PY
echo "ok"
