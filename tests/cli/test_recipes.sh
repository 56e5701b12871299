#!/usr/bin/env bash
# Training recipes end to end, on the synthetic MLP (lib.sh) and the tiny
# ResNet (configs/tiny_resnet.yaml):
# - model.init_from: a new run starts from another run's checkpoint (the
#   loaded tensors byte-identical), init_skip keeps a new head's initializer,
#   init_map renames the tensors of a file written by Python's safetensors
#   from NumPy arrays; --resume with another run's checkpoint points to it;
# - trainable: false: a frozen layer's tensors leave the trainable count and
#   never change (in front of the trainable layers, or between them), a block
#   instance freezes its layers, frozen batch norm keeps its moving
#   statistics, and 1 and 3 replicas still train the same weights;
# - training.accumulate_steps: 4 micro-batches of 32 train the weights of
#   batch 128 (within float rounding) on 1 and on 3 replicas, and a resume is
#   exact (a stop lands between optimizer steps);
# - training.ema: the average copies the weights before start_epoch (equal
#   tensors in the checkpoint), then follows them; validation and evaluate
#   score it; 1 and 3 replicas agree and a resume is exact;
# - optimizer.schedule one_cycle and linear: the rates (unit tests hold
#   PyTorch's OneCycleLR numbers), here their keys' errors;
# - gputrain lr-find: exponentially rising rates, fastai's smoothed loss (both
#   recomputed from the CSV), a suggestion, a stop on divergence, no checkpoint;
# - loss.label_smoothing: evaluate's loss is affine in the smoothing (the
#   formula (1 - e) CE + e * mean -log p, checked at e = 0, 0.2 and 0.6);
# - each bad input is a one-line error naming the key and the file.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

base=$TMP/base.yaml
write_synthetic_config "$base"
step "a base run to start from"
run_expect 0 fit "$base" --run-dir "$TMP/base" --device cpu --quiet
ckpt=$TMP/base/last.safetensors

# The synthetic MLP with a new head (named, so its tensors are not the file's)
# and its hidden layer frozen; extra model keys from $1.
write_finetune() {
    cat >"$TMP/ft.yaml" <<YAML
model:
  input_shape: [8, 8]
  layers:
    - {type: flatten}
    - {type: dense, units: 16, activation: relu, trainable: false}
    - {type: dense, name: head, units: 4, activation: softmax}
$1
loss: sparse_categorical_crossentropy
optimizer: {type: adam, learning_rate: 0.01}
data:
  dataset: synthetic
  synthetic: {samples: 500, classes: 4, seed: 7}
training: {epochs: 2, batch_size: 32, shuffle: true, seed: 3}
checkpoint: {monitor: loss}
logging: {progress: none}
YAML
}

step "init_from without init_skip: the tensors the file lacks are listed"
write_finetune "  init_from: $ckpt"
expect_one_line_error 1 "model.init_from: $ckpt lacks 2 tensors of the model: head/kernel, head/bias; keep their initializers with model.init_skip (e.g. init_skip: [head]) or name the file's tensors for them in model.init_map (the file has: dense/kernel, dense/bias, dense_1/kernel, dense_1/bias)" \
    fit "$TMP/ft.yaml" --run-dir "$TMP/ft0" --device cpu
[ ! -e "$TMP/ft0" ] || fail "a failed init_from left a run dir"

step "init_from + init_skip: the frozen hidden layer is the base run's, byte for byte, after training"
write_finetune "  init_from: $ckpt
  init_skip: [head]"
run_expect 0 fit "$TMP/ft.yaml" --run-dir "$TMP/ft" --device cpu
cat "$TMP/out"
grep -q "^dense (dense) relu frozen +" "$TMP/out" || fail "the summary does not mark dense as frozen and loaded"
expect_in "$TMP/out" "Trainable params: 68"
expect_in "$TMP/out" "Non-trainable params: 1040"
expect_in "$TMP/out" "+ weights from $ckpt (model.init_from: 2 tensors)"
expect_in "$TMP/out" "left at their initializers (model.init_skip): head/kernel, head/bias"
expect_in "$TMP/out" "not used from the file: dense_1/kernel, dense_1/bias"
safetensors same "$TMP/ft/last.safetensors" "$ckpt" dense/kernel dense/bias
safetensors names "$TMP/ft/last.safetensors" >"$TMP/names"
if grep -q "optimizer/.*/dense/" "$TMP/names"; then fail "a frozen layer got optimizer slots"; fi
expect_in "$TMP/names" "optimizer/adam_m/head/kernel"

step "a resume of the fine-tuning run is the straight run, byte for byte"
run_expect 0 fit "$TMP/ft.yaml" --run-dir "$TMP/ft1" --device cpu --quiet --set training.epochs=1
run_expect 0 fit "$TMP/ft.yaml" --run-dir "$TMP/ft1" --device cpu --quiet --resume
safetensors identical "$TMP/ft1/last.safetensors" "$TMP/ft/last.safetensors"

step "--resume with another run's checkpoint points to init_from"
expect_one_line_error 2 "--resume $ckpt: that checkpoint is another run's (model.layers[1].trainable: (none) -> false; model.layers[2].name: dense_1 -> head; model.init_from: (none) -> $ckpt; and 1 more), and --resume continues a run where it stopped; to start this run from its weights, drop --resume and set model.init_from: $ckpt (or --set model.init_from=$ckpt)" \
    fit "$TMP/ft.yaml" --run-dir "$TMP/ft2" --device cpu --resume "$ckpt"

step "init_map: a file written by Python's safetensors from NumPy arrays, under other names"
py=$(test_python)
if "$py" -c "import numpy, safetensors" 2>/dev/null; then
    "$py" - "$ckpt" "$TMP/features.safetensors" <<'PY'
import sys
from safetensors.numpy import load_file, save_file
t = load_file(sys.argv[1])
save_file({"features/kernel": t["dense/kernel"] * 0.5, "features/bias": t["dense/bias"] + 1.0}, sys.argv[2])
PY
    write_finetune "  init_from: $TMP/features.safetensors
  init_map: {features/kernel: dense/kernel, features/bias: dense/bias}
  init_skip: head"
    run_expect 0 fit "$TMP/ft.yaml" --run-dir "$TMP/mapped" --device cpu --quiet --set training.epochs=1
    safetensors same "$TMP/mapped/last.safetensors" "$TMP/features.safetensors" dense/kernel=features/kernel \
        dense/bias=features/bias
    write_finetune "  init_from: $TMP/features.safetensors
  init_map: {features/kernels: dense/kernel}
  init_skip: head"
    expect_one_line_error 2 "model.init_map: 'features/kernels' is not a tensor of $TMP/features.safetensors (did you mean 'features/kernel'?); its tensors: features/bias, features/kernel" \
        fit "$TMP/ft.yaml" --run-dir "$TMP/bad" --device cpu
    write_finetune "  init_from: $TMP/features.safetensors
  init_map: {features/kernel: dense/kernal}
  init_skip: head"
    expect_one_line_error 2 "model.init_map: 'dense/kernal' (for the file's 'features/kernel') is not a tensor of the model (did you mean 'dense/kernel'?)" \
        fit "$TMP/ft.yaml" --run-dir "$TMP/bad" --device cpu
else
    echo "(NumPy or safetensors missing for $py: the init_map run is skipped)"
fi

step "init_from errors: a missing file, a damaged one, another shape, a skip naming nothing, a map without a file"
write_finetune "  init_from: $TMP/nowhere.safetensors"
expect_one_line_error 2 "model.init_from: '$TMP/nowhere.safetensors' does not exist; give the path of a checkpoint or safetensors file, e.g. runs/mnist/best.safetensors" \
    fit "$TMP/ft.yaml" --run-dir "$TMP/bad" --device cpu
head -c 100 "$ckpt" >"$TMP/damaged.safetensors"
write_finetune "  init_from: $TMP/damaged.safetensors
  init_skip: [head]"
expect_one_line_error 1 "model.init_from: $TMP/damaged.safetensors: " fit "$TMP/ft.yaml" --run-dir "$TMP/bad" --device cpu
write_finetune "  init_from: $ckpt
  init_skip: [head]"
expect_one_line_error 1 "model.init_from: $ckpt: tensor 'dense/kernel' has shape [64, 16] but the model's is [64, 8]; keep the model's initializer for its layer (model.init_skip: [dense]) or map another tensor to it (model.init_map)" \
    fit "$TMP/ft.yaml" --run-dir "$TMP/bad" --device cpu --set model.layers[1].units=8
write_finetune "  init_from: $ckpt
  init_skip: [haed]"
expect_one_line_error 2 "model.init_skip: 'haed' is no layer or tensor of the model (did you mean 'head'?)" \
    fit "$TMP/ft.yaml" --run-dir "$TMP/bad" --device cpu
write_finetune "  init_from: $ckpt
  init_map: {dense_1/kernel: head/kernel}
  init_skip: [head]"
expect_one_line_error 2 "model.init_map: maps the file's 'dense_1/kernel' to 'head/kernel', which model.init_skip keeps at its initializer; remove one of the two" \
    fit "$TMP/ft.yaml" --run-dir "$TMP/bad" --device cpu
write_finetune "  init_from: $ckpt
  init_skip: [flatten, head]"
expect_one_line_error 2 "model.init_skip: layer 'flatten' (flatten) has no weights to skip; remove it" \
    fit "$TMP/ft.yaml" --run-dir "$TMP/bad" --device cpu
# init_from: ~ (here from --set) means none: the same config trains from its initializers.
write_finetune "  init_from: $ckpt
  init_skip: [head]"
run_expect 0 fit "$TMP/ft.yaml" --run-dir "$TMP/scratch" --device cpu --quiet --set training.epochs=1 --set "model.init_from=~" \
    --set "model.init_skip=~"
safetensors differ "$TMP/scratch/last.safetensors" "$ckpt" dense/kernel
write_finetune "  init_skip: [head]"
expect_one_line_error 2 "model.init_skip: needs model.init_from: it says how to load that file's tensors; add model.init_from, e.g. init_from: runs/mnist/best.safetensors" \
    fit "$TMP/ft.yaml" --run-dir "$TMP/bad" --device cpu

step "trainable: false between trainable layers: unchanged, and 1 and 3 replicas agree"
mid=$TMP/mid.yaml
write_synthetic_config "$mid"
sed -i 's/    - {type: dense, units: 16, activation: relu}/    - {type: dense, units: 16, activation: relu}\n    - {type: dense, units: 12, activation: relu, trainable: false}/' "$mid"
run_expect 0 fit "$mid" --run-dir "$TMP/mid1" --device cpu --replicas 1 --set checkpoint.every_epochs=1
expect_in "$TMP/out" "Trainable params: 1092"
run_expect 0 fit "$mid" --run-dir "$TMP/mid3" --device cpu --replicas 3 --quiet --set checkpoint.every_epochs=1
safetensors same "$TMP/mid1/epoch-001.safetensors" "$TMP/mid1/epoch-002.safetensors" dense_1/kernel dense_1/bias
safetensors differ "$TMP/mid1/epoch-001.safetensors" "$TMP/mid1/epoch-002.safetensors" dense/kernel dense_2/kernel
safetensors close "$TMP/mid3/last.safetensors" "$TMP/mid1/last.safetensors" 1e-4

step "a block instance's trainable: false; frozen batch norm keeps its moving statistics"
res=$HERE/configs/tiny_resnet.yaml
expect_one_line_error 2 "layer 'stage1/block1/batch_norm' (batch_norm, blocks.basic.layers[1]): trainable: a frozen batch_norm runs in inference mode (its moving statistics, as Keras does), and a trainable layer before it would need its backward pass in that mode, which gputrain does not have yet; freeze the layers before it too, or leave it trainable" \
    fit "$res" --run-dir "$TMP/bad" --device cpu --set "model.layers[3].trainable=false"
frozen=(--set "model.layers[0].trainable=false" --set "model.layers[1].trainable=false"
        --set "model.layers[3].trainable=false" --set checkpoint.every_epochs=1)
run_expect 0 fit "$res" --run-dir "$TMP/res1" --device cpu --replicas 1 "${frozen[@]}"
grep -q "^stage1/block2/conv2d (conv2d).* frozen" "$TMP/out" || fail "the block's conv2d is not marked frozen"
run_expect 0 fit "$res" --run-dir "$TMP/res3" --device cpu --replicas 3 --quiet "${frozen[@]}"
safetensors same "$TMP/res1/epoch-001.safetensors" "$TMP/res1/epoch-002.safetensors" stem/kernel \
    batch_norm/moving_mean batch_norm/moving_variance stage1/block1/conv2d/kernel stage1/block2/batch_norm_1/gamma \
    stage1/block2/batch_norm_1/moving_mean
safetensors differ "$TMP/res1/epoch-001.safetensors" "$TMP/res1/epoch-002.safetensors" stage2/conv2d/kernel dense/kernel
safetensors close "$TMP/res3/last.safetensors" "$TMP/res1/last.safetensors" 1e-4

step "trainable errors: a layer without weights"
expect_one_line_error 2 "trainable: unknown parameter for dropout" fit "$base" --run-dir "$TMP/bad" \
    --device cpu --set "model.layers[1]={type: dropout, rate: 0.1, trainable: false}"

step "accumulate_steps 4 x batch 32 = batch 128, on 1 and 3 replicas"
run_expect 0 fit "$base" --run-dir "$TMP/b128" --device cpu --replicas 1 --quiet --set training.batch_size=128
run_expect 0 fit "$base" --run-dir "$TMP/acc1" --device cpu --replicas 1 --set training.batch_size=32 \
    --set training.accumulate_steps=4
expect_in "$TMP/out" "global batch 128 on one replica; each optimizer step sums 4 micro-batches of 32 (training.accumulate_steps), one all-reduce"
run_expect 0 fit "$base" --run-dir "$TMP/acc3" --device cpu --replicas 3 --quiet --set training.batch_size=32 \
    --set training.accumulate_steps=4
safetensors close "$TMP/acc1/last.safetensors" "$TMP/b128/last.safetensors" 1e-5
safetensors close "$TMP/acc3/last.safetensors" "$TMP/b128/last.safetensors" 1e-5
python3 - "$TMP/acc1/metrics.csv" "$TMP/b128/metrics.csv" <<'PY'
import csv, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:])
assert len(a) == len(b) == 2, (len(a), len(b))
for ra, rb in zip(a, b):
    if abs(float(ra["loss"]) - float(rb["loss"])) > 1e-5:
        sys.exit(f"FAIL: epoch losses differ: {ra['loss']} vs {rb['loss']}")
PY
step "accumulation: a resume is the straight run, byte for byte"
run_expect 0 fit "$base" --run-dir "$TMP/accr" --device cpu --replicas 3 --quiet --set training.batch_size=32 \
    --set training.accumulate_steps=4 --set training.epochs=1
run_expect 0 fit "$base" --run-dir "$TMP/accr" --device cpu --replicas 3 --quiet --set training.batch_size=32 \
    --set training.accumulate_steps=4 --resume
safetensors identical "$TMP/accr/last.safetensors" "$TMP/acc3/last.safetensors"
expect_one_line_error 2 "training.accumulate_steps: expected a positive integer, got '0'" fit "$base" --run-dir "$TMP/bad" \
    --set training.accumulate_steps=0

step "label smoothing: evaluate's loss is affine in it, as (1 - e) CE + e mean(-log p) is"
run_expect 0 fit "$base" --run-dir "$TMP/smooth" --device cpu --quiet --set loss.label_smoothing=0.1 --set training.epochs=1
for e in 0 0.2 0.6; do
    run_expect 0 evaluate "$base" --checkpoint "$TMP/smooth/last.safetensors" --device cpu --json \
        --set "loss.label_smoothing=$e" --set data.validation_split=0.2
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['loss'])" "$TMP/out" >"$TMP/loss-$e"
done
python3 - "$(cat "$TMP/loss-0")" "$(cat "$TMP/loss-0.2")" "$(cat "$TMP/loss-0.6")" <<'PY'
import sys
l0, l2, l6 = map(float, sys.argv[1:])
if not (abs((l6 - l0) - 3 * (l2 - l0)) <= 1e-4 * max(1.0, abs(l6))):
    sys.exit(f"FAIL: losses {l0} {l2} {l6} are not affine in the smoothing")
if not l2 > l0:
    sys.exit(f"FAIL: smoothing 0.2 should cost more than none on a trained model: {l2} vs {l0}")
print(f"label smoothing 0, 0.2, 0.6: {l0:.6f} {l2:.6f} {l6:.6f}")
PY
expect_one_line_error 2 "loss.label_smoothing: expected a number in [0, 1), got '1'" fit "$base" --run-dir "$TMP/bad" \
    --set loss.label_smoothing=1
expect_one_line_error 2 "loss.label_smoothing: smooths class labels, and the loss is mean_squared_error; use it with sparse_categorical_crossentropy or categorical_crossentropy, or remove it" \
    fit "$base" --run-dir "$TMP/bad" --set "loss={name: mean_squared_error, label_smoothing: 0.1}"

step "training.ema: a copy before start_epoch, an average after; validation and evaluate score it"
ema=(--set "training.ema={decay: 0.9, start_epoch: 1}" --set checkpoint.every_epochs=1 --set data.validation_split=0.2)
run_expect 0 fit "$base" --run-dir "$TMP/ema1" --device cpu --replicas 1 --quiet "${ema[@]}"
e1=$TMP/ema1/epoch-001.safetensors
e2=$TMP/ema1/epoch-002.safetensors
safetensors same "$e1" "$e1" dense/kernel=ema/dense/kernel dense/bias=ema/dense/bias dense_1/kernel=ema/dense_1/kernel
safetensors differ "$e2" "$e2" dense/kernel=ema/dense/kernel dense_1/kernel=ema/dense_1/kernel
for f in 1 2; do
    for use in true false; do
        run_expect 0 evaluate "$base" --checkpoint "$TMP/ema1/epoch-00$f.safetensors" --device cpu --json "${ema[@]}" \
            --set "training.ema.evaluate=$use"
        python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['loss'])" "$TMP/out" >"$TMP/ema-$f-$use"
    done
done
[ "$(cat "$TMP/ema-1-true")" = "$(cat "$TMP/ema-1-false")" ] || fail "epoch 1: the average should equal the weights"
expect_in "$TMP/out" '"checkpoint": '
run_expect 0 evaluate "$base" --checkpoint "$e2" --device cpu --json "${ema[@]}"
expect_in "$TMP/out" '"weights": "ema"}'

[ "$(cat "$TMP/ema-2-true")" != "$(cat "$TMP/ema-2-false")" ] || fail "epoch 2: evaluate did not score the average"
run_expect 0 fit "$base" --run-dir "$TMP/ema3" --device cpu --replicas 3 --quiet "${ema[@]}"
safetensors close "$TMP/ema3/last.safetensors" "$TMP/ema1/last.safetensors" 1e-4
safetensors names "$TMP/ema3/last.safetensors" >"$TMP/names"
expect_in "$TMP/names" "ema/dense_1/bias"
run_expect 0 fit "$base" --run-dir "$TMP/emar" --device cpu --replicas 3 --quiet "${ema[@]}" --set training.epochs=1
expect_in "$TMP/err" "warning: training.ema.start_epoch is 1, but training stops after epoch 1: the average never starts, so the EMA weights are the raw weights; lower start_epoch (epochs count from 0)"
run_expect 0 fit "$base" --run-dir "$TMP/emar" --device cpu --replicas 3 --quiet "${ema[@]}" --resume
safetensors identical "$TMP/emar/last.safetensors" "$TMP/ema3/last.safetensors"
expect_one_line_error 2 "training.ema.decay: must be in (0, 1) (and below 1 in float32): the weight the average keeps each step; e.g. decay: 0.999" \
    fit "$base" --run-dir "$TMP/bad" --set "training.ema={decay: 0}"

step "schedules: one_cycle and linear train; their keys' errors"
run_expect 0 fit "$base" --run-dir "$TMP/cycle" --device cpu --quiet \
    --set "optimizer={type: sgd, learning_rate: 0.1, schedule: {type: one_cycle, pct_start: 0.25}}"
run_expect 0 fit "$base" --run-dir "$TMP/linear" --device cpu --quiet \
    --set "optimizer={type: adam, learning_rate: 0.01, schedule: {type: linear, min_lr: 0.001, warmup_steps: 5}}"
expect_one_line_error 2 "optimizer.schedule.min_lr: is above the cycle's peak, max_lr 0.1 (optimizer.learning_rate); one_cycle rises to max_lr and anneals down to min_lr: give a min_lr below it" \
    fit "$base" --run-dir "$TMP/bad" --set "optimizer={type: sgd, learning_rate: 0.1, schedule: {type: one_cycle, min_lr: 0.5}}"
expect_one_line_error 2 "optimizer.schedule.warmup_epochs: one_cycle warms up itself (from max_lr / div_factor over pct_start of the steps); remove it, or set pct_start" \
    fit "$base" --run-dir "$TMP/bad" --set "optimizer.schedule={type: one_cycle, warmup_epochs: 1}"
expect_one_line_error 2 "optimizer.schedule.max_lr: is one_cycle's key, and the schedule is cosine; use it with type: one_cycle, or remove it" \
    fit "$base" --run-dir "$TMP/bad" --set "optimizer.schedule={type: cosine, max_lr: 0.1}"

step "one_cycle's cycle_momentum: trains, changes the weights, resumes bit for bit; its errors"
cyc=(--set "optimizer={type: adam, learning_rate: 0.01, schedule: {type: one_cycle, cycle_momentum: true}}")
run_expect 0 fit "$base" --run-dir "$TMP/cm" --device cpu --replicas 1 --quiet "${cyc[@]}" --set checkpoint.every_epochs=1
run_expect 0 fit "$base" --run-dir "$TMP/cm0" --device cpu --replicas 1 --quiet \
    --set "optimizer={type: adam, learning_rate: 0.01, schedule: {type: one_cycle}}"
safetensors differ "$TMP/cm/last.safetensors" "$TMP/cm0/last.safetensors" dense/kernel=dense/kernel
# (one_cycle spans training.epochs, so the resume goes on from the 2-epoch run's epoch-1 checkpoint)
run_expect 0 fit "$base" --run-dir "$TMP/cmr" --device cpu --replicas 1 --quiet "${cyc[@]}" \
    --resume "$TMP/cm/epoch-001.safetensors"
safetensors identical "$TMP/cmr/last.safetensors" "$TMP/cm/last.safetensors"
expect_in "$TMP/cm/config.yaml" "cycle_momentum: true"
expect_one_line_error 2 "optimizer.schedule.cycle_momentum: cycles Adam's beta1 or SGD's momentum, and the optimizer is rmsprop; use adam, adamw or sgd with momentum, or remove cycle_momentum" \
    fit "$base" --run-dir "$TMP/bad" --set "optimizer={type: rmsprop, schedule: {type: one_cycle, cycle_momentum: true}}"
expect_one_line_error 2 "optimizer.schedule.cycle_momentum: SGD without momentum has none to cycle; set optimizer.momentum (e.g. 0.9), or remove cycle_momentum" \
    fit "$base" --run-dir "$TMP/bad" --set "optimizer={type: sgd, schedule: {type: one_cycle, cycle_momentum: true}}"
expect_one_line_error 2 "optimizer.schedule.base_momentum: base_momentum 0.99 is above max_momentum 0.95; the momentum cycles between them: give base_momentum <= max_momentum" \
    fit "$base" --run-dir "$TMP/bad" --set "optimizer.schedule={type: one_cycle, cycle_momentum: true, base_momentum: 0.99}"
expect_one_line_error 2 "optimizer.schedule.base_momentum: is a key of cycle_momentum, which is off; add cycle_momentum: true, or remove it" \
    fit "$base" --run-dir "$TMP/bad" --set "optimizer.schedule={type: one_cycle, base_momentum: 0.8}"

step "lr_multiplier: a millionth of the rate on the output layer trains what freezing it does; 1 = 3 replicas"
sgd=(--set training.epochs=1 --set "optimizer={type: sgd, learning_rate: 0.1}")
run_expect 0 fit "$base" --run-dir "$TMP/mult1" --device cpu --replicas 1 --quiet "${sgd[@]}" --set "model.layers[2].lr_multiplier=0.000001"
run_expect 0 fit "$base" --run-dir "$TMP/mult3" --device cpu --replicas 3 --quiet "${sgd[@]}" --set "model.layers[2].lr_multiplier=0.000001"
run_expect 0 fit "$base" --run-dir "$TMP/froze" --device cpu --replicas 1 --quiet "${sgd[@]}" --set "model.layers[2].trainable=false"
run_expect 0 fit "$base" --run-dir "$TMP/plain" --device cpu --replicas 1 --quiet "${sgd[@]}"
safetensors close "$TMP/mult3/last.safetensors" "$TMP/mult1/last.safetensors" 1e-4
safetensors close "$TMP/mult1/last.safetensors" "$TMP/froze/last.safetensors" 1e-3
if safetensors close "$TMP/plain/last.safetensors" "$TMP/froze/last.safetensors" 1e-3 >/dev/null 2>&1; then
    fail "the plain run should differ from the one with a frozen output layer"
fi
step "adamw with no_decay and two lr_multipliers (five parameter kinds, more than one upload of scalars holds) trains; 1 = 3 replicas"
groups=(--set training.epochs=1 --set "optimizer={type: adamw, no_decay: [bias]}" --set "model.layers[1].lr_multiplier=0.5"
    --set "model.layers[2].lr_multiplier=2")
run_expect 0 fit "$base" --run-dir "$TMP/groups1" --device cpu --replicas 1 --quiet "${groups[@]}"
run_expect 0 fit "$base" --run-dir "$TMP/groups3" --device cpu --replicas 3 --quiet "${groups[@]}"
safetensors close "$TMP/groups3/last.safetensors" "$TMP/groups1/last.safetensors" 1e-4

expect_one_line_error 2 "lr_multiplier: must be a number above 0 (the factor on the learning rate, e.g. lr_multiplier: 64)" \
    fit "$base" --run-dir "$TMP/bad" --set "model.layers[1].lr_multiplier=0"
expect_one_line_error 2 "lr_multiplier: unknown parameter for flatten" fit "$base" --run-dir "$TMP/bad" \
    --set "model.layers[0].lr_multiplier=2"

step "lr-find: rates rising exponentially, fastai's smoothed loss, a suggestion, no checkpoint"
run_expect 0 lr-find "$base" --run-dir "$TMP/lrf" --device cpu --steps 30 --start 1e-5 --end 1
cat "$TMP/out"
expect_in "$TMP/out" "suggested optimizer.learning_rate: "
python3 - "$TMP/lrf/lr_find.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
if len(rows) != 30:
    sys.exit(f"FAIL: {len(rows)} steps, expected 30 (no divergence up to 1)")
avg = 0.0
for i, r in enumerate(rows):
    want = 1e-5 * 1e5 ** (i / 29)
    if abs(float(r["learning_rate"]) / want - 1) > 1e-5:
        sys.exit(f"FAIL: step {i + 1}: rate {r['learning_rate']}, expected {want:.6g}")
    avg = 0.98 * avg + 0.02 * float(r["loss"])
    smooth = avg / (1 - 0.98 ** (i + 1))
    if abs(smooth - float(r["smoothed_loss"])) > 1e-5 * abs(smooth):
        sys.exit(f"FAIL: step {i + 1}: smoothed {r['smoothed_loss']}, expected {smooth:.6g}")
PY
[ ! -e "$TMP/lrf/last.safetensors" ] || fail "lr-find wrote a checkpoint"
run_expect 0 lr-find "$base" --out "$TMP/diverge.csv" --device cpu --steps 60 --start 1e-3 --end 1e6
expect_in "$TMP/out" "(stopped: "
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
    scripts/plot -o "$TMP/lrf.png" "$TMP/lrf/lr_find.csv" >/dev/null
    head -c 8 "$TMP/lrf.png" | od -An -tx1 | grep -q "89 50 4e 47 0d 0a 1a 0a" || fail "scripts/plot drew no PNG of lr_find.csv"
fi
expect_one_line_error 2 "--start 0 and --end 10: give 0 < start < end, e.g. --start 1e-7 --end 10" \
    lr-find "$base" --start 0
cp "$ckpt" "$TMP/precious.safetensors"
expect_one_line_error 2 "--out $TMP/precious.safetensors: the file exists and is not an lr-find CSV; give another path" \
    lr-find "$base" --out "$TMP/precious.safetensors"
safetensors identical "$TMP/precious.safetensors" "$ckpt"
expect_one_line_error 2 "--out $TMP/nowhere/lr.csv: the folder '$TMP/nowhere' does not exist; create it or give another path" \
    lr-find "$base" --out "$TMP/nowhere/lr.csv"

echo "PASS"
