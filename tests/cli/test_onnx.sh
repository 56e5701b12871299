#!/usr/bin/env bash
# gputrain export --onnx: every layer kind gputrain has, written as ONNX and
# checked by ONNX's checker (Debian's python3-onnx) and run by ONNX Runtime
# (PyPI's onnxruntime in .venv-tests; the runtime checks are skipped without
# it), whose outputs must match gputrain predict within 1e-5: an MLP (softmax
# layer, and logits with the softmax added), a CNN of every image layer
# (reshape, conv2d same/valid/strided/dilated, batch norm, both poolings,
# dropout, 2-D batch norm), tests/cli/configs/tiny_resnet.yaml (blocks, add,
# concatenate, global pooling), a graph of multiply, layer_norm, rms_norm and
# activation layers, a GPT (against an independent NumPy forward pass), and
# every config in configs/ trained briefly, and a GPT with its head tied to the
# token table (tie_weights). Then the errors: a file in a
# missing folder, --onnx naming an input, a checkpoint of another model.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
PY=$(test_python)
"$PY" -c "import onnx, numpy" 2>/dev/null || skip "$PY cannot import onnx (apt-get install python3-onnx)"
"$GPUTRAIN" export --help >/dev/null || fail "no export command"
runtime=yes
"$PY" -c "import onnxruntime" 2>/dev/null || { runtime=no; echo "(onnxruntime cannot be imported: only ONNX's checker runs)"; }

# export_and_check NAME CONFIG CHECKPOINT INPUTS.npy: export, predict, compare.
# In a sanitizer build the ONNX module cannot be loaded (RTLD_DEEPBIND): the
# graph is still built (under the sanitizer) and export must say why it stops;
# the test then ends as skipped.
sanitized=no
export_and_check() {
    local name=$1 config=$2 ckpt=$3 inputs=$4 code=0
    echo "+ gputrain export $config --checkpoint $ckpt --onnx $TMP/$name.onnx"
    "$GPUTRAIN" export "$config" --checkpoint "$ckpt" --onnx "$TMP/$name.onnx" >"$TMP/out" 2>"$TMP/err" || code=$?
    if [ "$code" -ne 0 ] && grep -q "gputrain export: not in a sanitizer build" "$TMP/err" &&
        ! grep -q "Sanitizer" "$TMP/err"; then
        sanitized=yes
        echo "(a sanitizer build: $name's graph was built, the file not written)"
        return 0
    fi
    [ "$code" -eq 0 ] || { cat "$TMP/out" "$TMP/err"; fail "gputrain export of $name exited $code"; }
    cat "$TMP/out"
    expect_in "$TMP/out" "$TMP/$name.onnx: ONNX opset 17"
    run_expect 0 predict "$config" --checkpoint "$ckpt" --input "$inputs" --output "$TMP/$name.npy" --device cpu
    code=0
    "$PY" "$HERE/onnx_check.py" "$TMP/$name.onnx" --inputs "$inputs" --expect "$TMP/$name.npy" || code=$?
    [ "$code" -eq 0 ] || { [ "$code" -eq 77 ] && [ "$runtime" = no ]; } || fail "$name: the ONNX check failed"
}

random_inputs() {  # FILE SHAPE...: 24 samples, uniform in [0, 1)
    "$PY" - "$@" <<'PY'
import sys
import numpy as np
shape = [24] + [int(d) for d in sys.argv[2:]]
np.save(sys.argv[1], np.random.default_rng(11).random(shape, dtype=np.float32))
PY
}

step "an MLP: its softmax layer, then the same with logits (from_logits: the softmax is added, as predict adds it)"
cfg=$TMP/mlp.yaml
write_synthetic_config "$cfg"
run_expect 0 fit "$cfg" --run-dir "$TMP/mlp" --device cpu --quiet
random_inputs "$TMP/x8.npy" 8 8
export_and_check mlp "$cfg" "$TMP/mlp/last.safetensors" "$TMP/x8.npy"
[ "$sanitized" = yes ] || "$PY" -c "
import onnx, sys
ops = [n.op_type for n in onnx.load(sys.argv[1]).graph.node]
assert ops.count('Softmax') == 1, ops" "$TMP/mlp.onnx" || fail "the MLP's ONNX graph should have one Softmax"
logits=(--set 'model.layers[2].activation=linear' --set 'loss={name: sparse_categorical_crossentropy, from_logits: true}')
run_expect 0 fit "$cfg" "${logits[@]}" --run-dir "$TMP/logits" --device cpu --quiet
export_and_check logits "$TMP/logits/config.yaml" "$TMP/logits/last.safetensors" "$TMP/x8.npy"

step "a CNN of every image layer"
cat >"$TMP/cnn.yaml" <<'YAML'
model:
  input_shape: [12, 12]
  layers:
    - {type: reshape, target_shape: [12, 12, 1]}
    - {type: conv2d, filters: 4, kernel_size: 3, padding: same, activation: relu}
    - {type: batch_norm}
    - {type: max_pool2d, pool_size: 2}
    - {type: conv2d, filters: 5, kernel_size: 3, dilation_rate: 2, padding: same, activation: gelu}
    - {type: conv2d, filters: 6, kernel_size: [3, 2], strides: 2, activation: tanh}
    - {type: avg_pool2d, pool_size: 3, strides: 1, padding: same}
    - {type: max_pool2d, pool_size: 2, strides: 1, padding: same}
    - {type: dropout, rate: 0.3}
    - {type: conv2d, filters: 5, kernel_size: 1, use_bias: false, activation: sigmoid}
    - {type: flatten}
    - {type: dense, units: 12}
    - {type: batch_norm, center: false}
    - {type: relu}
    - {type: dense, units: 4, activation: softmax}
loss: sparse_categorical_crossentropy
optimizer: {type: adam, learning_rate: 0.01}
data:
  dataset: synthetic
  synthetic: {samples: 400, classes: 4, seed: 7}
training: {epochs: 2, batch_size: 32, seed: 3}
checkpoint: {monitor: loss}
logging: {progress: none}
YAML
run_expect 0 fit "$TMP/cnn.yaml" --run-dir "$TMP/cnn" --device cpu --quiet
random_inputs "$TMP/x12.npy" 12 12
export_and_check cnn "$TMP/cnn.yaml" "$TMP/cnn/last.safetensors" "$TMP/x12.npy"

step "tiny_resnet.yaml: blocks, add, concatenate, a projection shortcut, global pooling"
run_expect 0 fit "$HERE/configs/tiny_resnet.yaml" --run-dir "$TMP/resnet" --device cpu --quiet
random_inputs "$TMP/x881.npy" 8 8 1
export_and_check resnet "$HERE/configs/tiny_resnet.yaml" "$TMP/resnet/last.safetensors" "$TMP/x881.npy"

step "a graph of multiply, layer_norm, rms_norm and activation layers, logits out"
cat >"$TMP/graph.yaml" <<'YAML'
model:
  input_shape: [8, 8]
  layers:
    - {type: flatten}
    - {type: dense, units: 16, activation: tanh, name: stem}
    - {type: dense, units: 16, name: gate_in, inputs: stem}
    - {type: sigmoid, name: gate}
    - {type: multiply, inputs: [stem, gate]}
    - {type: layer_norm, center: false}
    - {type: gelu}
    - {type: rms_norm, inputs: stem}
    - {type: add, inputs: [gelu, rms_norm, stem]}
    - {type: dense, units: 3, use_bias: false}
loss: {name: sparse_categorical_crossentropy, from_logits: true}
optimizer: {type: adam, learning_rate: 0.01}
data:
  dataset: synthetic
  synthetic: {samples: 300, classes: 3, seed: 7}
training: {epochs: 2, batch_size: 32, seed: 3}
checkpoint: {monitor: loss}
logging: {progress: none}
YAML
run_expect 0 fit "$TMP/graph.yaml" --run-dir "$TMP/graph" --device cpu --quiet
export_and_check graph "$TMP/graph.yaml" "$TMP/graph/last.safetensors" "$TMP/x8.npy"

step "every config in configs/: a step or two of training (image configs on synthetic data of their shape), export, predict = ONNX Runtime"
# inputs_for RUN_DIR: RUN_DIR/x.npy, 24 samples of the run's model.input_shape.
inputs_for() {
    random_inputs "$1/x.npy" $("$PY" -c "
import sys, yaml
print(*yaml.safe_load(open(sys.argv[1]))['model']['input_shape'])" "$1/config.yaml")
}
# ~6 KB of play-like text (the GPT configs' data).
"$PY" - "$TMP/play.txt" <<'PY'
import sys
names, words = ["ROMEO", "JULIET", "NURSE"], ["the", "love", "night", "sweet", "my", "lord", "is", "fair"]
state, out = 12345, []
def draw(n):
    global state
    state = (state * 1103515245 + 12345) % 2**31
    return (state >> 16) % n
while sum(map(len, out)) < 6000:
    out.append(f"{names[draw(3)]}:\n{' '.join(words[draw(8)] for _ in range(3 + draw(5)))}.\n\n")
open(sys.argv[1], "w").write("".join(out))
PY
for config in configs/*.yaml; do
    name=$(basename "$config" .yaml)
    case "$name" in
        shakespeare_*)
            run_expect 0 fit "$config" --run-dir "$TMP/$name" --device cpu --quiet --set "data.path=$TMP/play.txt" \
                --set data.dataset=~ --set training.epochs=1 --set training.steps_per_epoch=1 --set training.batch_size=2
            [ "$sanitized" = no ] || continue
            run_expect 0 export "$config" --checkpoint "$TMP/$name/last.safetensors" --onnx "$TMP/$name.onnx"
            "$PY" "$HERE/onnx_check.py" "$TMP/$name.onnx" || fail "$name: ONNX's checker refuses it"
            code=0
            "$PY" "$HERE/numpy_gpt_forward.py" "$TMP/$name/last.safetensors" --onnx "$TMP/$name.onnx" || code=$?
            [ "$code" -eq 0 ] || [ "$code" -eq 77 ] || fail "$name: ONNX Runtime's GPT is not the NumPy forward pass's"
            ;;
        diabetes_regression)
            # 10 random features and a target, in make-diabetes' layout.
            mkdir -p "$TMP/diabetes"
            "$PY" - "$TMP/diabetes" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(2)
head = "age,sex,bmi,bp,s1,s2,s3,s4,s5,s6,progression"
for part in ("train", "test"):
    rows = np.column_stack([rng.normal(size=(40, 10)), rng.uniform(25, 350, size=40)])
    np.savetxt(f"{sys.argv[1]}/{part}.csv", rows, delimiter=",", header=head, comments="", fmt="%.6f")
PY
            run_expect 0 fit "$config" --run-dir "$TMP/$name" --device cpu --quiet --set data.dataset=~ \
                --set "data.path=$TMP/diabetes" --set training.epochs=1
            inputs_for "$TMP/$name"
            export_and_check "$name" "$TMP/$name/config.yaml" "$TMP/$name/last.safetensors" "$TMP/$name/x.npy"
            ;;
        *)
            run_expect 0 fit "$config" --run-dir "$TMP/$name" --device cpu --quiet --set data.dataset=synthetic \
                --set 'data.synthetic={samples: 64, classes: 10, seed: 1}' --set training.epochs=1 --set model.init_from=~ \
                $([ "$name" = fashion_mnist_finetune ] && echo --set model.init_skip=~)
            inputs_for "$TMP/$name"
            export_and_check "$name" "$TMP/$name/config.yaml" "$TMP/$name/last.safetensors" "$TMP/$name/x.npy"
            ;;
    esac
done

step "a GPT whose head is tied to the token table (tie_weights): a MatMul by the table transposed, the table stored once"
name=shakespeare_char_small
run_expect 0 fit "configs/$name.yaml" --run-dir "$TMP/tied" --device cpu --quiet --set "data.path=$TMP/play.txt" \
    --set data.dataset=~ --set training.epochs=1 --set training.steps_per_epoch=1 --set training.batch_size=2 \
    --set 'model.layers[4].tie_weights=embedding'
if [ "$sanitized" = no ]; then
    run_expect 0 export "$TMP/tied/config.yaml" --checkpoint "$TMP/tied/last.safetensors" --onnx "$TMP/tied.onnx"
    "$PY" "$HERE/onnx_check.py" "$TMP/tied.onnx" || fail "tied: ONNX's checker refuses it"
    "$PY" - "$TMP/tied.onnx" <<'PY' || fail "tied: the graph does not multiply by the table transposed, or stores it twice"
import sys
import onnx
g = onnx.load(sys.argv[1]).graph
names = [t.name for t in g.initializer]
assert "dense/kernel" not in names and names.count("embedding/embeddings") == 1, names
t = [n for n in g.node if n.op_type == "Transpose" and list(n.input) == ["embedding/embeddings"]]
assert len(t) == 1 and any(n.op_type == "MatMul" and t[0].output[0] in n.input for n in g.node)
PY
    code=0
    "$PY" "$HERE/numpy_gpt_forward.py" "$TMP/tied/last.safetensors" --onnx "$TMP/tied.onnx" || code=$?
    [ "$code" -eq 0 ] || [ "$code" -eq 77 ] || fail "tied: ONNX Runtime's GPT is not the NumPy forward pass's"
fi

step "a GPT with rotary position embeddings (no positional_embedding): RoPE as Slice/Neg/Concat, Mul and Add with cos and sin constants"
name=shakespeare_char_small
sed -e 's/- {type: causal_self_attention, heads: \$heads}/- {type: causal_self_attention, heads: $heads, rotary: true}/' \
    -e '/- {type: positional_embedding}/d' "configs/$name.yaml" >"$TMP/rotary.yaml"
grep -q 'rotary: true' "$TMP/rotary.yaml" || fail "the rotary config was not written"
run_expect 0 fit "$TMP/rotary.yaml" --run-dir "$TMP/rotary" --device cpu --quiet --set "data.path=$TMP/play.txt" \
    --set data.dataset=~ --set training.epochs=1 --set training.steps_per_epoch=2 --set training.batch_size=2
if [ "$sanitized" = no ]; then
    run_expect 0 export "$TMP/rotary/config.yaml" --checkpoint "$TMP/rotary/last.safetensors" --onnx "$TMP/rotary.onnx"
    "$PY" "$HERE/onnx_check.py" "$TMP/rotary.onnx" || fail "rotary: ONNX's checker refuses it"
    "$PY" - "$TMP/rotary.onnx" <<'PY' || fail "rotary: the graph has no cos and sin constants per attention layer"
import sys
import onnx
g = onnx.load(sys.argv[1]).graph
cos = [t for t in g.initializer if t.name.endswith("/rotary_cos")]
assert len(cos) == 4 and list(cos[0].dims) == [64, 32], [(t.name, list(t.dims)) for t in cos]
assert sum(n.op_type == "Neg" for n in g.node) == 8, "a Neg per query and key of each layer"
assert not any("positional_embedding" in t.name for t in g.initializer)
PY
    code=0
    "$PY" "$HERE/numpy_gpt_forward.py" "$TMP/rotary/last.safetensors" --onnx "$TMP/rotary.onnx" || code=$?
    [ "$code" -eq 0 ] || [ "$code" -eq 77 ] || fail "rotary: ONNX Runtime's GPT is not the NumPy forward pass's"
fi

step "errors: a missing folder, --onnx naming the checkpoint or the config, a checkpoint of another model"
run_expect 2 export "$cfg" --checkpoint "$TMP/mlp/last.safetensors" --onnx "$TMP/nowhere/m.onnx"
expect_in "$TMP/err" "gputrain: error: --onnx '$TMP/nowhere/m.onnx': the folder '$TMP/nowhere' does not exist; create it or give another path"
run_expect 2 export "$cfg" --checkpoint "$TMP/mlp/last.safetensors" --onnx "$TMP/mlp/last.safetensors"
expect_in "$TMP/err" "gputrain: error: --onnx '$TMP/mlp/last.safetensors' is --checkpoint ('$TMP/mlp/last.safetensors'): writing the model would replace it; give another file, e.g. model.onnx"
run_expect 2 export "$cfg" --checkpoint "$TMP/mlp/last.safetensors" --onnx "$cfg"
expect_in "$TMP/err" "is the config ('$cfg')"
run_expect 2 export "$cfg" --checkpoint "$TMP/mlp/last.safetensors" --onnx "$TMP"
expect_in "$TMP/err" "is a folder; give a file name"
code=0
"$GPUTRAIN" export "$TMP/cnn.yaml" --checkpoint "$TMP/mlp/last.safetensors" --onnx "$TMP/wrong.onnx" \
    >"$TMP/out" 2>"$TMP/err" || code=$?
[ "$code" -ne 0 ] || fail "a checkpoint of another model exported"
[ "$(wc -l <"$TMP/err")" -eq 1 ] || { cat "$TMP/err"; fail "expected a one-line error"; }
[ ! -e "$TMP/wrong.onnx" ] || fail "a failed export left a file"
ls "$TMP" | grep -q "\.tmp-" && fail "a failed export left a temporary file"
[ "$sanitized" = no ] || skip "a sanitizer build: every graph was built under the sanitizer, but the ONNX module cannot be loaded to write and check the files"
echo "ok"
