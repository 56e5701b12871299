#!/usr/bin/env bash
# gputrain summary: the reference MLP's parameters and per-replica memory
# against a hand computation (float32 = 4 bytes):
#   params      784*128 + 128 + 128*10 + 10 = 101770
#   weights = gradients = 4 * 101770 = 407080; Adam's m and v: 2 * 407080
#   activations: rows * (784 + 128 + 10) layer outputs + 2 gradient buffers of rows * 784
#   scratch: none (the relu layer keeps no z: its derivative reads y; the last layer's softmax is fused)
#   workspace: rows * 128 (the relu layer's dz, within its backward call)
#   input shard: rows * (784 * 4 + 4) + 8 (the two running sums)
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
config=configs/fashion_mnist_mlp.yaml

# expect_bytes LABEL BYTES: the summary line starting with LABEL shows BYTES.
expect_bytes() {
    local got
    got=$(grep -E "^  $1 " "$TMP/out" | awk '{ for (i = 1; i < NF; ++i) if ($(i + 1) == "bytes") print $i }')
    [ "$got" = "$2" ] || { cat "$TMP/out" >&2; fail "$1: $got bytes, expected $2"; }
}

check() {  # check ROWS OPTIMIZER_SLOTS
    local rows=$1 slots=$2
    local params=$((784 * 128 + 128 + 128 * 10 + 10))
    expect_in "$TMP/out" "Total params: $params"
    expect_in "$TMP/out" "Memory per replica ($rows samples, float32):"
    expect_bytes weights $((4 * params))
    expect_bytes gradients $((4 * params))
    expect_bytes "optimizer state" $((slots * 4 * params))
    expect_bytes activations $((4 * rows * (784 + 128 + 10 + 2 * 784)))
    expect_bytes "layer scratch" 0
    expect_bytes "layer workspace" $((4 * rows * 128))
    expect_bytes "input shard" $((rows * (784 * 4 + 4) + 8))
    expect_bytes total $((4 * params * (2 + slots) + 4 * rows * (784 + 128 + 10 + 2 * 784) + 4 * rows * 128 +
                          rows * (784 * 4 + 4) + 8))
}

step "one replica, batch 32, Adam"
run_expect 0 summary "$config" --device cpu --replicas 1
cat "$TMP/out"
expect_in "$TMP/out" "dense_1 (dense)"
expect_in "$TMP/out" "optimizer state (adam, 2 x weights)"
expect_in "$TMP/out" "   397.5 KiB"
check 32 2

step "two replicas, batch 33 (17 + 16): the larger shard counts; SGD with momentum"
run_expect 0 summary "$config" --device cpu --replicas 2 --set training.batch_size=33 \
    --set optimizer.type=sgd --set optimizer.momentum=0.9
expect_in "$TMP/out" "optimizer state (sgd, 1 x weights)"
check 17 1

step "SGD without momentum keeps no state"
run_expect 0 summary "$config" --device cpu --replicas 1 --set optimizer.type=sgd --set optimizer.momentum=0
check 32 0

step "a model larger than any machine: summary sizes it without allocating it; fit refuses it, naming the layer"
# 1000 -> 16M -> 1000 -> 16M -> 10: three 1.6e10-parameter kernels, about 768 GB with Adam.
cat >"$TMP/huge.yaml" <<'YAML'
model:
  input_shape: [1000]
  layers:
    - {type: dense, units: 16000000, activation: relu}
    - {type: dense, units: 1000, activation: relu}
    - {type: dense, units: 16000000, activation: relu}
    - {type: dense, units: 10, activation: softmax}
data: {dataset: synthetic, synthetic: {samples: 64, classes: 10}}
training: {epochs: 1, batch_size: 32}
YAML
params=$((1000 * 16000000 + 16000000 + 16000000 * 1000 + 1000 + 1000 * 16000000 + 16000000 + 16000000 * 10 + 10))
run_expect 0 summary "$TMP/huge.yaml" --device cpu
expect_in "$TMP/out" "Total params: $params"
expect_bytes weights $((4 * params))
expect_bytes "optimizer state" $((8 * params))
run_expect 1 fit "$TMP/huge.yaml" --device cpu --replicas 1 --run-dir "$TMP/huge-run"
expect_in "$TMP/err" "gputrain: error: not enough memory on the CPU: the model needs "
expect_in "$TMP/err" "the largest layer is model.layers[0] (dense, 16016000000 parameters, $TMP/huge.yaml:4:7): make it smaller"
[ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "more than one line on stderr: $(cat "$TMP/err")"
run_expect 1 fit "$TMP/huge.yaml" --device cpu --replicas 2 --run-dir "$TMP/huge-run"
expect_in "$TMP/err" "2 replicas need "
expect_in "$TMP/err" "or use fewer replicas (--replicas)"

step "table layout: a softmax layer fused into the loss keeps its type, a long label gets a line of its own"
cat >"$TMP/layout.yaml" <<'YAML'
model:
  input_shape: [8, 8, 1]
  layers:
    - {type: conv2d, name: a_rather_long_convolution_name, filters: 2, kernel_size: 3, strides: 2, padding: same}
    - {type: flatten}
    - {type: dense, units: 3}
    - {type: softmax}
data: {dataset: synthetic, synthetic: {classes: 3}}
YAML
run_expect 0 summary "$TMP/layout.yaml" --device cpu
cat "$TMP/out"
grep -qx "a_rather_long_convolution_name (conv2d) 3x3 same stride 2x2" "$TMP/out" || fail "the long label is not on a line of its own"
grep -qE "^ {33}\(None, 4, 4, 2\) +20$" "$TMP/out" || fail "the long label's columns are not in line"
grep -qE "^softmax \(softmax\)\* +\(None, 3\) +0$" "$TMP/out" || fail "the fused softmax layer is not shown as one"

step "many replicas: the batch split in two terms, not one per replica"
run_expect 0 summary "$config" --device cpu --replicas 1000 --set training.batch_size=1001
expect_in "$TMP/out" "global batch 1001 = 1 x 2 + 999 x 1 per replica"
run_expect 0 summary "$config" --device cpu --replicas 3 --set training.batch_size=100
expect_in "$TMP/out" "global batch 100 = 34+33+33 per replica"

step "a config error is reported like fit's"
run_expect 2 summary "$config" --set training.batch_size=0
expect_in "$TMP/err" "training.batch_size"
echo "ok"
