#!/usr/bin/env bash
# Models as graphs, end to end, on a tiny residual network (tests/cli/configs/tiny_resnet.yaml:
# blocks, add, concatenate, a projection shortcut, batch norm):
# - summary's "Connected to" column and --dot (and scripts/plot-model with Graphviz);
# - 3 CPU replicas train the weights 1 replica does (global batch semantics);
# - 1 epoch + --resume to 2 is byte-identical to 2 epochs;
# - predict's probabilities match an independent NumPy forward pass of the
#   checkpoint and the run's config.yaml (tests/cli/numpy_graph_forward.py);
# - the resolved config.yaml names the scoped layers and their inputs, and
#   loads again (evaluate with it reports no change);
# - the reference MLP and CNN keep the config digests they had before graphs.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
cfg=$HERE/configs/tiny_resnet.yaml

step "summary: Connected to, scoped names"
run_expect 0 summary "$cfg"
cat "$TMP/out"
expect_in "$TMP/out" "Connected to"
expect_in "$TMP/out" "stage1/block2/add (add)"
grep -q "stage1/block2/add (add) .*stage1/block2/batch_norm_1, stage1/block2/batch_norm" "$TMP/out" ||
    grep -q "stage1/block2/batch_norm_1, stage1/block1/relu_1" "$TMP/out" || fail "the add's inputs are not listed"
expect_in "$TMP/out" "stage2/shortcut (conv2d)"
expect_in "$TMP/out" "concatenate (concatenate)"

step "--set on a block's parameter default: applies where an instance takes it, an error where none does"
run_expect 0 summary configs/fashion_mnist_densenet.yaml --set blocks.dense_layer.params.growth=16
expect_in "$TMP/out" "Total params: 137346"
run_expect 2 summary "$cfg" --set blocks.down.params.filters=9
expect_in "$TMP/err" "gputrain: error: --set blocks.down.params.filters=9: blocks.down.params.filters: no instance of block 'down' takes this default: each sets 'filters' itself (or none is used), so it would change nothing; set filters on the instances in model.layers (--set model.layers[N].filters=...)"

step "summary --dot"
run_expect 0 summary "$cfg" --dot
head -n 1 "$TMP/out" | grep -qx "digraph model {" || fail "--dot does not start a digraph"
expect_in "$TMP/out" 'n0 [label="input\n(None, 8, 8, 1)"];'
# One edge per input: 26 layers, each reading one, the 3 adds and the concatenation two.
edges=$(grep -c -- " -> " "$TMP/out")
[ "$edges" -eq 30 ] || fail "expected 30 edges in the DOT graph, got $edges"
if command -v dot >/dev/null 2>&1; then
    GPUTRAIN=$GPUTRAIN scripts/plot-model "$cfg" "$TMP/model.png" >/dev/null
    head -c 8 "$TMP/model.png" | od -An -tx1 | grep -q "89 50 4e 47 0d 0a 1a 0a" || fail "plot-model wrote no PNG"
else
    echo "(graphviz not installed: scripts/plot-model not run)"
fi

step "1 replica and 3 replicas train the same weights"
run_expect 0 fit "$cfg" --run-dir "$TMP/one" --replicas 1 --device cpu --quiet
run_expect 0 fit "$cfg" --run-dir "$TMP/three" --replicas 3 --device cpu --quiet
safetensors close "$TMP/three/last.safetensors" "$TMP/one/last.safetensors" 1e-4

step "1 epoch, then --resume to 2: byte-identical to 2 epochs"
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/resumed" --replicas 1 --device cpu --quiet
run_expect 0 fit "$cfg" --set training.epochs=2 --run-dir "$TMP/resumed" --replicas 1 --device cpu --resume --quiet
safetensors identical "$TMP/one/last.safetensors" "$TMP/resumed/last.safetensors"

step "config.yaml: every layer named, inputs where they are not the layer before"
expect_in "$TMP/one/config.yaml" "{type: add, name: stage1/block1/add, inputs: [stage1/block1/batch_norm_1, relu]}"
expect_in "$TMP/one/config.yaml" "{type: conv2d, name: stage1/block1/conv2d, filters: 4,"
grep -q "^blocks:" "$TMP/one/config.yaml" && fail "config.yaml keeps the blocks: section (it should be expanded)"
run_expect 0 evaluate "$TMP/one/config.yaml" --checkpoint "$TMP/one/last.safetensors" --device cpu
grep -q "differ" "$TMP/err" && fail "evaluate with the run's own config.yaml reports a change: $(cat "$TMP/err")"

step "predict, and an independent NumPy forward pass of the checkpoint"
python=$(test_python)
if "$python" -c "import numpy, yaml, safetensors.numpy" 2>/dev/null; then
    "$python" - "$TMP/x.npy" <<'PY'
import sys
import numpy as np
np.save(sys.argv[1], np.random.default_rng(5).uniform(-1, 1, size=(40, 8, 8, 1)).astype(np.float32))
PY
    run_expect 0 predict "$TMP/one/config.yaml" --checkpoint "$TMP/one/last.safetensors" --input "$TMP/x.npy" \
        --output "$TMP/p.npy" --device cpu
    "$python" "$HERE/numpy_graph_forward.py" "$TMP/one/config.yaml" "$TMP/one/last.safetensors" "$TMP/x.npy" 1.0 \
        "$TMP/p.npy" || fail "the NumPy forward pass does not match gputrain predict"
else
    echo "($python cannot import numpy, yaml and safetensors: the NumPy check is not run)"
fi

step "chains are what they were: the reference MLP's and the CNN's config digests as before graphs (pinned)"
# Digests written by the binary before models became graphs (commit 795fbf8),
# for these overrides; its checkpoints were byte-identical to this binary's too.
if compgen -G "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte*" >/dev/null ||
        compgen -G "datasets/fashion-mnist/t10k-images-idx3-ubyte*" >/dev/null || [ -n "${GPUTRAIN_DATA:-}" ]; then
    for pair in fashion_mnist_mlp:480e983c725f523a fashion_mnist_cnn:0e2fae740d5a761b; do
        name=${pair%%:*} digest=${pair#*:}
        run_expect 0 fit "configs/$name.yaml" --set training.epochs=1 --set data.limit=256 --set data.test_limit=64 \
            --run-dir "$TMP/$name" --device cpu --quiet
        got=$(safetensors metadata "$TMP/$name/last.safetensors" config_digest)
        [ "$got" = "$digest" ] || fail "$name: config digest $got, expected $digest (a chain's resolved config changed)"
        grep -q " inputs:" "$TMP/$name/config.yaml" && fail "$name: config.yaml writes inputs: for a chain"
    done
else
    echo "(Fashion-MNIST not installed: the digest rows are not run)"
fi

step "graph errors: one line with the place, exit 2"
sed 's/inputs: \[stage2, pooled\]/inputs: [stage2, poled]/' "$cfg" >"$TMP/bad.yaml"
run_expect 2 fit "$TMP/bad.yaml" --run-dir "$TMP/bad"
expect_in "$TMP/err" "bad.yaml:33:27: model.layers[6] (concatenate): inputs: unknown layer 'poled' (did you mean 'pooled'?)"
[ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "more than one line: $(cat "$TMP/err")"
[ ! -e "$TMP/bad" ] || fail "a config error left $TMP/bad"
echo "ok"
