#!/usr/bin/env bash
# The CNN config end to end, cut down: one epoch on 2,000 Fashion-MNIST images,
# then evaluate on 500 test images; the same with synchronized batch norm on 2
# CPU replicas; and the layout error for an input shape that does not fit the
# data. Skipped without the data set.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

found=
for dir in ${GPUTRAIN_DATA:+"$GPUTRAIN_DATA/fashion-mnist"} datasets/fashion-mnist /usr/share/datasets/fashion-mnist; do
    if compgen -G "$dir/train-images-idx3-ubyte*" >/dev/null; then found=$dir; break; fi
done
[ -n "$found" ] || skip "Fashion-MNIST not found (apt-get install dataset-fashion-mnist)"
echo "data: $found"
cfg=configs/fashion_mnist_cnn.yaml

step "fit: 1 epoch, 2000 training samples; the summary shows the image layers"
run=$TMP/run
run_expect 0 fit "$cfg" --set training.epochs=1 --set data.limit=2000 --set data.test_limit=500 \
    --run-dir "$run" --device cpu --replicas 1 --set logging.progress=none
expect_in "$TMP/out" "conv2d (conv2d) 3x3 same relu"
expect_in "$TMP/out" "(None, 28, 28, 32)"
expect_in "$TMP/out" "(None, 7, 7, 64)"
expect_in "$TMP/out" "Non-trainable params: 0"
tail -n 1 "$run/metrics.csv" | awk -F, '{ exit !($1 == 1 && $3 > 0.5) }' ||
    fail "epoch 1 accuracy is not above 0.5: $(tail -n 1 "$run/metrics.csv")"

step "checkpoint holds the NHWC conv kernels [filters, kh, kw, in_c]"
safetensors header "$run/last.safetensors" conv2d/kernel 32,3,3,1
safetensors header "$run/last.safetensors" conv2d_1/kernel 64,3,3,32
safetensors header "$run/last.safetensors" dense/kernel 3136,128

step "evaluate --json on 500 test samples"
run_expect 0 evaluate --json --run-dir "$run" --set data.test_limit=500 "$cfg"
cat "$TMP/out"
python3 - "$TMP/out" <<'PY' || fail "evaluate --json output is not as expected"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["samples"] == 500, r
assert r["accuracy"] > 0.55, r
PY

step "sync batch norm on 2 replicas: trains, checkpoints the moving statistics, evaluates"
bn=$TMP/bn
bn_layers='model.layers=[{type: conv2d, filters: 8, kernel_size: 3, padding: same, use_bias: false},
  {type: batch_norm, sync: true}, {type: relu}, {type: max_pool2d}, {type: flatten},
  {type: dense, units: 10, activation: softmax}]'
run_expect 0 fit "$cfg" --set training.epochs=1 --set data.limit=600 --set data.test_limit=200 \
    --set "$bn_layers" --run-dir "$bn" --device cpu --replicas 2 --set logging.progress=none
expect_in "$TMP/out" "batch_norm (batch_norm) sync"
expect_in "$TMP/out" "Non-trainable params: 16"
safetensors header "$bn/last.safetensors" batch_norm/moving_mean 8
safetensors header "$bn/last.safetensors" batch_norm/moving_variance 8
run_expect 0 evaluate --json --run-dir "$bn" --set data.test_limit=200 --set "$bn_layers" "$cfg"
cat "$TMP/out"
python3 - "$TMP/out" <<'PY' || fail "evaluate --json output is not as expected"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["samples"] == 200 and r["accuracy"] > 0.3, r
PY

step "an input shape that does not match the images -> 2, one line naming both shapes"
run_expect 2 fit "$cfg" --set 'model.input_shape=[28, 28, 3]' --set data.limit=100 --run-dir "$TMP/bad"
expect_in "$TMP/err" "model.input_shape [28, 28, 3] does not match the data's sample shape [28, 28]"

step "a conv layer fed flat images -> 2, with the reshape hint"
run_expect 2 fit "$cfg" --set 'model.input_shape=[784]' --set data.limit=100 --run-dir "$TMP/flat"
expect_in "$TMP/err" "layer 'conv2d' (conv2d): needs input (height, width, channels), got (784); add a reshape layer with target_shape [28, 28, 1]"
echo "ok"
