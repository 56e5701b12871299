#!/usr/bin/env bash
# The reference job, cut down: one epoch on 4,000 Fashion-MNIST images, then
# evaluate the checkpoint on 1,000 test images. Skipped without the data set.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

found=
for dir in ${GPUTRAIN_DATA:+"$GPUTRAIN_DATA/fashion-mnist"} datasets/fashion-mnist /usr/share/datasets/fashion-mnist; do
    if compgen -G "$dir/train-images-idx3-ubyte*" >/dev/null; then found=$dir; break; fi
done
[ -n "$found" ] || skip "Fashion-MNIST not found (apt-get install dataset-fashion-mnist)"
echo "data: $found"

step "fit: 1 epoch, 4000 training samples"
run=$TMP/run
run_expect 0 fit configs/fashion_mnist_mlp.yaml --set training.epochs=1 --set data.limit=4000 \
    --set data.test_limit=1000 --run-dir "$run" --quiet

step "run dir holds the resolved config, metrics and checkpoints"
for f in config.yaml metrics.csv epoch-001.safetensors last.safetensors best.safetensors; do
    [ -f "$run/$f" ] || fail "$run/$f is missing (have: $(ls "$run"))"
done
header=$(head -n 1 "$run/metrics.csv")
[ "$header" = "epoch,loss,accuracy,val_loss,val_accuracy,learning_rate,seconds,samples_per_second" ] ||
    fail "metrics.csv header is '$header'"
cat "$run/metrics.csv"
rows=$(tail -n +2 "$run/metrics.csv" | wc -l)
[ "$rows" -eq 1 ] || fail "metrics.csv has $rows rows, expected 1"
tail -n 1 "$run/metrics.csv" | awk -F, '{ exit !($1 == 1 && $3 > 0.6) }' ||
    fail "epoch 1 accuracy is not above 0.6: $(tail -n 1 "$run/metrics.csv")"

step "checkpoint header"
safetensors header "$run/last.safetensors" dense/kernel 784,128

step "evaluate --json on 1000 test samples"
run_expect 0 evaluate --json --run-dir "$run" --set data.test_limit=1000 configs/fashion_mnist_mlp.yaml
cat "$TMP/out"
python3 - "$TMP/out" <<'PY' || fail "evaluate --json output is not as expected"
import json, sys
text = open(sys.argv[1]).read()
r = json.loads(text)
assert "loss" in r and r["loss"] > 0, r
assert r["accuracy"] > 0.6, r
assert r["samples"] == 1000, r
PY

step "evaluate --json of a checkpoint whose path is not UTF-8: valid JSON, the byte read as Latin-1"
latin1_dir=$TMP/caf$'\xe9'
mkdir -p "$latin1_dir"
cp "$run/last.safetensors" "$latin1_dir/"
run_expect 0 evaluate --json --checkpoint "$latin1_dir/last.safetensors" --set data.test_limit=100 configs/fashion_mnist_mlp.yaml
python3 - "$TMP/out" <<'PY' || fail "evaluate --json of a Latin-1 path is not valid JSON: $(cat -v "$TMP/out")"
import json, sys
r = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
assert r["checkpoint"].endswith("/caf\u00e9/last.safetensors"), r
PY

step "weights that overflow on the test inputs: the loss is said to be NaN, with a warning, and --json writes null"
python3 - "$run/last.safetensors" "$TMP/huge.safetensors" <<'PY'
import json, struct, sys
raw = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
begin, end = json.loads(raw[8:8 + n])["dense/kernel"]["data_offsets"]
raw[8 + n + begin:8 + n + end] = struct.pack("<f", 3e38) * ((end - begin) // 4)  # finite, so the file loads
open(sys.argv[2], "wb").write(raw)
PY
run_expect 0 evaluate configs/fashion_mnist_mlp.yaml --checkpoint "$TMP/huge.safetensors" --set data.test_limit=100
expect_in "$TMP/out" "$TMP/huge.safetensors: loss nan - accuracy "
expect_in "$TMP/err" "warning: the loss is NaN: the model's outputs overflowed on some test samples (weights or inputs far out of range; check data.scale (0.00392157)); accuracy counts their predictions as class 0"
run_expect 0 evaluate configs/fashion_mnist_mlp.yaml --checkpoint "$TMP/huge.safetensors" --set data.test_limit=100 --json
expect_in "$TMP/out" '"loss": null'

step "evaluate --checkpoint FILE --json --confusion"
run_expect 0 evaluate configs/fashion_mnist_mlp.yaml --checkpoint "$run/epoch-001.safetensors" \
    --set data.test_limit=1000 --json --confusion
python3 - "$TMP/out" <<'PY' || fail "the confusion matrix does not match the samples and the accuracy"
import json, sys
r = json.load(open(sys.argv[1]))
m = r["confusion"]
assert len(m) == 10 and all(len(row) == 10 for row in m), m
assert sum(map(sum, m)) == r["samples"] == 1000, r
assert abs(sum(m[i][i] for i in range(10)) / 1000 - r["accuracy"]) < 1e-6, r
PY

step "evaluate --confusion (table)"
run_expect 0 evaluate configs/fashion_mnist_mlp.yaml --run-dir "$run" --set data.test_limit=200 --confusion
expect_in "$TMP/out" "Confusion matrix"
expect_in "$TMP/out" "(200 test samples)"

step "the checkpoint holds the config it was trained with"
safetensors metadata "$run/last.safetensors" config >"$TMP/stored.yaml"
diff <(grep -v '^#' "$run/config.yaml") "$TMP/stored.yaml" || fail "the stored config differs from config.yaml"

step "evaluate with another model or input scaling than training's: scores, and names the keys on stderr"
run_expect 0 evaluate configs/fashion_mnist_mlp.yaml --run-dir "$run" --set data.test_limit=200 \
    --set "model.layers[1].activation=tanh" --set data.scale=1
expect_in "$TMP/err" "warning: $run/best.safetensors was trained with another model, loss or input scaling than configs/fashion_mnist_mlp.yaml gives (model.layers[1].activation: relu -> tanh; data.scale: 0.00392156862745098 -> 1); using configs/fashion_mnist_mlp.yaml's"
expect_in "$TMP/out" "(200 test samples)"
step "... but not for keys that do not change the weights' meaning (batch size, epochs, limits)"
run_expect 0 evaluate configs/fashion_mnist_mlp.yaml --run-dir "$run" --set data.test_limit=200 \
    --set training.batch_size=50 --set training.epochs=9 --set optimizer.learning_rate=0.5
if grep -q "warning" "$TMP/err"; then fail "an unexpected warning: $(cat "$TMP/err")"; fi

step "... nor for a layer default written out (use_bias, a name), or one a checkpoint of an earlier gputrain left out"
run_expect 0 evaluate configs/fashion_mnist_mlp.yaml --run-dir "$run" --set data.test_limit=200 \
    --set "model.layers[1].use_bias=yes" --set "model.layers[2].name=dense_1"
if grep -q "warning" "$TMP/err"; then fail "an unexpected warning: $(cat "$TMP/err")"; fi
grep -q 'use_bias: true' "$TMP/stored.yaml" || fail "the stored config lists no layer default: $(cat "$TMP/stored.yaml")"
sed -E 's/, name: [a-z_0-9]+//; s/, use_bias: true//' "$TMP/stored.yaml" >"$TMP/earlier.yaml"
if grep -q 'use_bias' "$TMP/earlier.yaml"; then fail "the earlier-style config still has use_bias"; fi
safetensors set-metadata "$run/last.safetensors" "$TMP/earlier.safetensors" config "$TMP/earlier.yaml"
run_expect 0 evaluate configs/fashion_mnist_mlp.yaml --checkpoint "$TMP/earlier.safetensors" --set data.test_limit=200
if grep -q "warning" "$TMP/err"; then fail "an unexpected warning: $(cat "$TMP/err")"; fi
run_expect 0 evaluate configs/fashion_mnist_mlp.yaml --checkpoint "$TMP/earlier.safetensors" --set data.test_limit=200 \
    --set "model.layers[2].use_bias=false"
expect_in "$TMP/err" "(model.layers[2].use_bias: true -> false)"

step "a checkpoint of another shape names the config key that made it so"
run_expect 1 evaluate configs/fashion_mnist_mlp.yaml --run-dir "$run" --set "model.layers[1].units=64"
expect_in "$TMP/err" "gputrain: error: $run/best.safetensors: tensor 'dense/kernel' has shape [784, 128] but the model expects [784, 64]; the config it was trained with differs: model.layers[1].units: 128 -> 64"

step "a stored config that cannot be compared (cyclic alias, alias bomb, not YAML) is said to be so, once, and scoring goes on"
printf 'model: &x {a: *x}\n' >"$TMP/cyclic.yaml"
python3 - "$TMP/bomb.yaml" <<'PY'
import sys
lines = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
lines += ["a%d: &a%d [%s]" % (i, i, ", ".join(["*a%d" % (i - 1)] * 10)) for i in range(1, 10)]
open(sys.argv[1], "w").write("model:\n  layers: []\n" + "\n".join(lines) + "\n")
PY
printf 'model: {layers: [\n' >"$TMP/broken.yaml"
for kind in cyclic bomb broken; do
    safetensors set-metadata "$run/last.safetensors" "$TMP/$kind.safetensors" config "$TMP/$kind.yaml"
    run_expect 0 evaluate configs/fashion_mnist_mlp.yaml --checkpoint "$TMP/$kind.safetensors" --set data.test_limit=200
    expect_in "$TMP/err" "warning: $TMP/$kind.safetensors: the config stored in it is not a readable gputrain config, so it is not checked against configs/fashion_mnist_mlp.yaml's model"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "expected one line on stderr: $(cat "$TMP/err")"
    expect_in "$TMP/out" "(200 test samples)"
done
echo "ok"
