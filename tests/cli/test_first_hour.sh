#!/usr/bin/env bash
# The first hour of a Keras or PyTorch user (issue 25): the mistakes they
# really make get the message that names the fix, exactly as printed.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

# A small CNN on synthetic data; each case edits one line of it.
base() {
    cat <<'YAML'
model:
  input_shape: [8, 8, 1]
  layers:
    - {type: conv2d, filters: 4, kernel_size: 3}
    - {type: flatten}
    - {type: dense, units: 4, activation: softmax}
loss: sparse_categorical_crossentropy
data: {dataset: synthetic, format: synthetic, synthetic: {samples: 64, classes: 4}}
training: {epochs: 1, batch_size: 16}
YAML
}
# config SED [EXTRA_LINE]: writes $TMP/c.yaml
config() {
    base | sed "$1" >"$TMP/c.yaml"
    if [ $# -gt 1 ]; then echo "$2" >>"$TMP/c.yaml"; fi
}
# error CODE TEXT: `summary` of $TMP/c.yaml exits CODE with stderr exactly "gputrain: error: $TMP/c.yaml:TEXT"
error() {
    run_expect "$1" summary "$TMP/c.yaml"
    [ "$(cat "$TMP/err")" = "gputrain: error: $TMP/c.yaml:$2" ] ||
        { echo "got:      $(cat "$TMP/err")" >&2; echo "expected: gputrain: error: $TMP/c.yaml:$2" >&2; fail "message"; }
}

step "5: a Python tuple, in a flow mapping and as a block value"
config 's/kernel_size: 3}/kernel_size: (3, 3)}/'
error 2 "4:47: model.layers[0].kernel_size: expected a number or a list, got (3, 3), a Python tuple; YAML writes a list in brackets: kernel_size: [3, 3]"
config 's/input_shape: \[8, 8, 1\]/input_shape: (8, 8, 1)/'
error 2 "2:16: model.input_shape: expected a list of positive integers, got (8, 8, 1), a Python tuple; YAML writes a list in brackets: input_shape: [8, 8, 1]"

step "6: an unknown key comes before the missing one, with the name gputrain uses"
config 's/{type: flatten}/{type: dropout, p: 0.2}/'
error 2 "5:23: model.layers[1] (dropout): p: unknown parameter for dropout (did you mean 'rate'?); it takes: rate"
config 's/filters: 4/out_channels: 4/'
error 2 "4:22: model.layers[0] (conv2d): out_channels: unknown parameter for conv2d (did you mean 'filters'?); it takes: filters, kernel_size, strides, padding, dilation_rate, use_bias, activation, trainable, lr_multiplier"

step "7: Keras' and PyTorch's names"
config 's/{type: flatten}/{type: BatchNormalization}/'
error 2 "5:8: model.layers[1] (BatchNormalization): type: unknown layer type 'BatchNormalization' (did you mean 'batch_norm'?); known types: add, avg_pool2d, batch_norm, causal_self_attention, concatenate, conv2d, dense, dropout, embedding, flatten, gelu, global_avg_pool2d, layer_norm, max_pool2d, multiply, positional_embedding, relu, reshape, rms_norm, sigmoid, softmax, tanh"
config 's/{type: flatten}/{type: MaxPooling2D}/'
error 2 "5:8: model.layers[1] (MaxPooling2D): type: unknown layer type 'MaxPooling2D' (did you mean 'max_pool2d'?); known types: add, avg_pool2d, batch_norm, causal_self_attention, concatenate, conv2d, dense, dropout, embedding, flatten, gelu, global_avg_pool2d, layer_norm, max_pool2d, multiply, positional_embedding, relu, reshape, rms_norm, sigmoid, softmax, tanh"
config 's/^loss: .*/loss: CrossEntropyLoss/'
error 2 "7:7: loss: unknown loss 'CrossEntropyLoss' (did you mean 'sparse_categorical_crossentropy'? PyTorch's CrossEntropyLoss takes logits: write loss: {name: sparse_categorical_crossentropy, from_logits: true} and no softmax on the last layer); known losses: sparse_categorical_crossentropy, categorical_crossentropy, mean_squared_error, mean_absolute_error, huber"
config 's/x/x/' "metrics: [acc]"
error 2 "10:11: metrics[0]: unknown metric 'acc' (did you mean 'accuracy'?); known metrics: accuracy, mae, mse, loss"
config 's/x/x/' "checkpoint: {monitor: val_acc}"
error 2 "10:23: checkpoint.monitor: unknown monitored metric 'val_acc' (did you mean 'val_accuracy'?); known monitored metrics: loss, accuracy, val_loss, val_accuracy, mae, val_mae, mse, val_mse"
config 's/x/x/' "checkpoint: {save_best_only: true}"
error 2 "10:14: checkpoint.save_best_only: unknown key (did you mean 'save_best'?)"
config 's/x/x/' "optimizer: {schedule: {type: step_decay, step_size: 2}}"
error 2 "10:42: optimizer.schedule.step_size: unknown key (did you mean 'decay_epochs'?)"
config 's/x/x/' "optimizer: {schedule: {type: step_decay, gamma: 0.5}}"
error 2 "10:42: optimizer.schedule.gamma: unknown key (did you mean 'decay_rate'?)"
config 's/x/x/' "optimizer: Adam"
error 2 "10:12: optimizer: unknown optimizer 'Adam' (did you mean 'adam'?); known optimizers: sgd, adam, adamw, rmsprop"
step "... and a bare optimizer name is the type with its defaults, as Keras' compile(optimizer='adam')"
config 's/x/x/' "optimizer: sgd"
run_expect 0 fit "$TMP/c.yaml" --run-dir "$TMP/sgd" --quiet
grep -q "^  learning_rate: 0.01$" "$TMP/sgd/config.yaml" || fail "optimizer: sgd did not take sgd's learning rate 0.01"
config 's/dataset: synthetic, format: synthetic, synthetic: {samples: 64, classes: 4}/dataset: fashion_mnist/'
if [ -d /usr/share/datasets/fashion-mnist ]; then
    run_expect 1 fit "$TMP/c.yaml" --run-dir "$TMP/fm"
    expect_in "$TMP/err" "data.dataset: 'fashion_mnist' not found in "
    expect_in "$TMP/err" "/usr/share/datasets/fashion_mnist (did you mean 'fashion-mnist'?)"
fi

step "8: misindented lines are pointed at"
base | sed 's/^data: .*/data:\n  dataset: synthetic\n    format: synthetic/' >"$TMP/c.yaml"
error 2 "10:11: YAML syntax error: illegal map value; line 10 is indented deeper than the line before (line 9), which ends with a value, not ':'; align it with the keys it belongs with"

step "1: a channels-first input_shape is named, with the shape to write"
config 's/input_shape: \[8, 8, 1\]/input_shape: [1, 8, 8]/'
run_expect 2 summary "$TMP/c.yaml"
expect_in "$TMP/err" "layer 'conv2d' (conv2d): kernel 3x3 is larger than its input (1, 8, 8) with padding valid; use a smaller kernel_size or padding: same; gputrain's images are (height, width, channels), not PyTorch's (channels, height, width): for 1-channel images write input_shape: [8, 8, 1]"
config 's/input_shape: \[8, 8, 1\]/input_shape: [1, 8, 8]/; s/kernel_size: 3}/kernel_size: 3, padding: same}/'
run_expect 0 fit "$TMP/c.yaml" --run-dir "$TMP/cf" --quiet
expect_in "$TMP/err" "warning: model.input_shape [1, 8, 8] reads as images 1 pixel high and 8 wide with 8 channels; gputrain's images are (height, width, channels), not PyTorch's (channels, height, width): for 1-channel images write input_shape: [8, 8, 1]"

step "2: a val_* monitor without validation data says what it watches instead"
config 's/x/x/' "early_stopping: true"
run_expect 0 fit "$TMP/c.yaml" --run-dir "$TMP/es" --quiet
expect_in "$TMP/err" "warning: early_stopping.monitor is val_loss, but there is no validation data, so it watches the training loss; set data.validation_split (e.g. 0.1) to watch val_loss"
config 's/x/x/' "checkpoint: {monitor: val_accuracy}"
run_expect 0 fit "$TMP/c.yaml" --run-dir "$TMP/cm" --quiet --set 'metrics=[accuracy]'
expect_in "$TMP/err" "warning: checkpoint.monitor is val_accuracy, but there is no validation data, so it watches the training accuracy; set data.validation_split (e.g. 0.1) to watch val_accuracy"
step "... the default monitor falls back quietly; with validation nothing is said"
config 's/x/x/'
run_expect 0 fit "$TMP/c.yaml" --run-dir "$TMP/quiet" --quiet
[ ! -s "$TMP/err" ] || { cat "$TMP/err"; fail "a run with the default monitor warned"; }
config 's/x/x/' "early_stopping: true"
run_expect 0 fit "$TMP/c.yaml" --run-dir "$TMP/esv" --quiet --set data.validation_split=0.25
[ ! -s "$TMP/err" ] || { cat "$TMP/err"; fail "a run with validation warned"; }

step "3: a cross-entropy on a last layer that is not softmax is warned about"
config 's/activation: softmax}/activation: relu}/'
run_expect 0 fit "$TMP/c.yaml" --run-dir "$TMP/relu" --quiet
expect_in "$TMP/err" "warning: loss.from_logits is false, but the last layer 'dense' does not end in softmax: the loss will take its outputs for probabilities (clipped to [1e-7, 1 - 1e-7]) and learn little; set that layer's activation: softmax, or loss.from_logits: true"

step "9: evaluate, predict and summary without CONFIG use the run's own"
config 's/x/x/'
run_expect 0 fit "$TMP/c.yaml" --run-dir "$TMP/own" --quiet
run_expect 0 evaluate --run-dir "$TMP/own" --json
expect_in "$TMP/out" '"checkpoint": "'"$TMP/own/best.safetensors"'"'
run_expect 0 evaluate --checkpoint "$TMP/own/last.safetensors" --json
expect_in "$TMP/out" '"samples": '
run_expect 0 summary --run-dir "$TMP/own"
expect_in "$TMP/out" "Total params: "
run_expect 2 evaluate --checkpoint "$TMP/nope.safetensors"
expect_in "$TMP/err" "gputrain: error: --checkpoint: '$TMP/nope.safetensors' does not exist"
run_expect 2 evaluate --run-dir "$TMP"
expect_in "$TMP/err" "gputrain: error: no CONFIG given, and $TMP/config.yaml does not exist (fit writes it into the run dir); give the config file the run was trained with"
run_expect 2 evaluate
expect_in "$TMP/err" "gputrain: error: give the config file (CONFIG), or --run-dir RUN_DIR to use the config.yaml that fit wrote there (or --checkpoint FILE, whose config is stored in it)"
step "... and optimizer: NAME takes --set of its other keys, as loss: NAME does"
config 's/x/x/' "optimizer: sgd"
run_expect 0 summary "$TMP/c.yaml" --set optimizer.momentum=0.9
expect_in "$TMP/out" "optimizer state (sgd, 1 x weights)"

step "10: rmsprop and warmup_steps train"
config 's/x/x/' "optimizer: {type: rmsprop, momentum: 0.5, centered: true, schedule: {warmup_steps: 3}}"
run_expect 0 fit "$TMP/c.yaml" --run-dir "$TMP/rms" --quiet --set training.epochs=2
python3 - "$TMP/rms/last.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
slots = sorted({k.split("/")[1] for k in header if k.startswith("optimizer/")})
assert slots == ["rmsprop_mean_grad", "rmsprop_momentum", "rmsprop_v"], slots
PY
# 64 samples at batch 16: the first epoch's rate is warmup's first (1/3 of 0.001), the second's is past warmup.
awk -F, 'NR == 2 && ($6 + 0 < 3.33e-4 || $6 + 0 > 3.34e-4) { exit 1 } NR == 3 && $6 + 0 != 0.001 { exit 1 }' \
    "$TMP/rms/metrics.csv" || { cat "$TMP/rms/metrics.csv"; fail "warmup_steps' rates"; }

step "... and PyTorch's batch-norm momentum is named"
config 's/- {type: flatten}/- {type: batch_norm, momentum: 0.1}\n    - {type: flatten}/'
run_expect 0 summary "$TMP/c.yaml"
expect_in "$TMP/err" "warning: layer 'batch_norm' (batch_norm): momentum 0.1 keeps that much of the moving statistics at each step (Keras' convention, as gputrain's); PyTorch's momentum 0.1 is momentum 0.9 here"

step "11: the CPU replica count is the machine's by default, and says so"
config 's/x/x/'
run_expect 0 fit "$TMP/c.yaml" --run-dir "$TMP/auto" --device cpu
grep -Eq "^mirrored: [0-9]+ replicas? \(CPU( threads)?; auto: [0-9]+ cores?(, 8\+ samples each)?\), global batch 16" "$TMP/out" ||
    { cat "$TMP/out"; fail "no auto replica count in the start-up line"; }

step "a resume with every epoch done prints no model table before 'Nothing to do'"
config 's/x/x/'
run_expect 0 fit "$TMP/c.yaml" --run-dir "$TMP/done" --quiet
run_expect 0 fit "$TMP/c.yaml" --run-dir "$TMP/done" --resume
expect_in "$TMP/out" "Nothing to do: the checkpoint already has 1 of 1 epochs (raise training.epochs to continue)"
if grep -q "Total params" "$TMP/out"; then cat "$TMP/out"; fail "the model table was printed"; fi
