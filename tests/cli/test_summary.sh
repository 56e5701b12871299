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

step "a config error is reported like fit's"
run_expect 2 summary "$config" --set training.batch_size=0
expect_in "$TMP/err" "training.batch_size"
echo "ok"
