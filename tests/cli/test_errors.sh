#!/usr/bin/env bash
# User mistakes give exit 2 (usage/config) or 1 (runtime) and a message that
# names the culprit and says what to do.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

cfg=$TMP/synthetic.yaml
write_synthetic_config "$cfg"

step "missing config file -> 2, names the file"
run_expect 2 fit "$TMP/no-such-config.yaml"
expect_in "$TMP/err" "$TMP/no-such-config.yaml"

step "unknown key -> 2, suggests the right one"
sed 's/shuffle: true/shufle: true/' "$cfg" >"$TMP/typo.yaml"
run_expect 2 fit "$TMP/typo.yaml" --run-dir "$TMP/run-typo"
expect_in "$TMP/err" "did you mean"
expect_in "$TMP/err" "shufle"
expect_in "$TMP/err" "$TMP/typo.yaml"

step "unknown layer type -> 2, lists the known types"
sed 's/type: flatten/type: flaten/' "$cfg" >"$TMP/layer.yaml"
run_expect 2 fit "$TMP/layer.yaml" --run-dir "$TMP/run-layer"
expect_in "$TMP/err" "flaten"
expect_in "$TMP/err" "known types"
expect_in "$TMP/err" "dense"

step "a misspelt required layer parameter -> 2, named as unknown with the right one"
sed 's/units: 16/unit: 16/' "$cfg" >"$TMP/unit.yaml"
run_expect 2 fit "$TMP/unit.yaml" --run-dir "$TMP/run-unit"
expect_in "$TMP/err" "model.layers[1] (dense): unit: unknown parameter for dense (did you mean 'units'?)"

step "--set training.epochs=0 -> 2"
run_expect 2 fit "$cfg" --set training.epochs=0 --run-dir "$TMP/run-epochs"
expect_in "$TMP/err" "training.epochs"

step "--set training.precision=fp8 -> 2, lists the precisions"
run_expect 2 fit "$cfg" --set training.precision=fp8 --run-dir "$TMP/run-precision"
expect_in "$TMP/err" "training.precision"
expect_in "$TMP/err" "bf16"

step "training.precision: bf16 on the CPU trains in fp32 and says so"
run_expect 0 fit "$cfg" --set training.precision=bf16 --set training.epochs=1 --run-dir "$TMP/run-bf16" --set logging.progress=none
cat "$TMP/out" "$TMP/err" >"$TMP/both"
expect_in "$TMP/both" "training.precision: bf16 changes GPU matrix products only; the CPU computes in fp32"

step "loss.from_logits: true with a softmax last layer: trains, and warns as Keras does"
run_expect 0 fit "$cfg" --set loss.from_logits=true --set training.epochs=1 --run-dir "$TMP/run-logits" \
  --set logging.progress=none
cat "$TMP/out" "$TMP/err" >"$TMP/both"
expect_in "$TMP/both" "warning: loss.from_logits is true, but the last layer 'dense_1' ends in softmax"
# Warnings go to stderr (as Keras' do), the epoch lines to stdout: `fit > log` keeps them apart.
expect_in "$TMP/err" "warning: loss.from_logits is true"
if grep -q "warning:" "$TMP/out"; then fail "a warning on stdout: $(grep "warning:" "$TMP/out")"; fi
expect_in "$TMP/out" "Done: 1 epoch"

step "GPU-only training keys set on the CPU: trains, and says they have no effect"
run_expect 0 fit "$cfg" --set training.gemm_epilogues=true --set training.deterministic=false --set training.epochs=1 \
  --run-dir "$TMP/run-gpu-keys" --set logging.progress=none
cat "$TMP/out" "$TMP/err" >"$TMP/both"
expect_in "$TMP/both" "training.gemm_epilogues, training.deterministic: only a GPU acts on this; no effect on the CPU"

step "data.path to an empty folder -> 1, names the folder"
mkdir "$TMP/empty-data"
sed -e 's/dataset: synthetic/path: EMPTY/' -e '/synthetic:/d' -e "s|EMPTY|$TMP/empty-data|" "$cfg" >"$TMP/empty.yaml"
run_expect 1 fit "$TMP/empty.yaml" --run-dir "$TMP/run-empty"
expect_in "$TMP/err" "$TMP/empty-data"

step "evaluate without a checkpoint -> 2"
run_expect 2 evaluate "$cfg" --run-dir "$TMP/never-trained"
expect_in "$TMP/err" "$TMP/never-trained"

step "evaluate a truncated checkpoint -> 1, names the file"
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/run" --quiet
head -c 100 "$TMP/run/last.safetensors" >"$TMP/bad.safetensors"
run_expect 1 evaluate "$cfg" --checkpoint "$TMP/bad.safetensors"
expect_in "$TMP/err" "$TMP/bad.safetensors"

step "no command -> 2, lists the commands"
run_expect 2
expect_in "$TMP/err" "gputrain: error: a command is required; commands: fit, evaluate, predict, generate, export, summary, data, bench, lr-find, devices"

step "an unknown command -> 2, one line listing the commands and the likely one"
run_expect 2 train "$cfg"
expect_in "$TMP/err" "gputrain: error: unknown command 'train'; commands: fit, evaluate, predict, generate, export, summary, data, bench, lr-find, devices (did you mean 'fit'?)"
[ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "expected one line on stderr"
run_expect 2 eval "$cfg"
expect_in "$TMP/err" "unknown command 'eval'; commands: fit, evaluate, predict, generate, export, summary, data, bench, lr-find, devices (did you mean 'evaluate'?)"
run_expect 2 infer "$cfg"
expect_in "$TMP/err" "(did you mean 'predict'?)"
run_expect 2 summry "$cfg"
expect_in "$TMP/err" "(did you mean 'summary'?)"
run_expect 2 frobnicate
expect_in "$TMP/err" "gputrain: error: unknown command 'frobnicate'; commands: fit, evaluate, predict, generate, export, summary, data, bench, lr-find, devices"
grep -q "did you mean" "$TMP/err" && fail "no command is near 'frobnicate', yet a suggestion"

step "a config value given as a flag -> 2, points at --set"
run_expect 2 fit "$cfg" --epochs 3
expect_in "$TMP/err" "gputrain: error: the following arguments were not expected: --epochs 3 (config values go through --set, e.g. --set training.epochs=3)"
run_expect 2 fit "$cfg" --batch-size=64
expect_in "$TMP/err" "(config values go through --set, e.g. --set training.batch_size=64)"
run_expect 2 summary "$cfg" --lr 0.1
expect_in "$TMP/err" "(config values go through --set, e.g. --set optimizer.learning_rate=0.1)"
run_expect 2 fit "$cfg" --no-such-option
expect_in "$TMP/err" "gputrain: error: the following argument was not expected: --no-such-option (see 'gputrain fit --help')"
run_expect 2 fit "$cfg" --- --=3
expect_in "$TMP/err" "gputrain: error: the following arguments were not expected: --- --=3 (see 'gputrain fit --help')"

step "--resume before the config -> 2, says --resume took the config"
# (Last on the line, CLI11 gives the path to CONFIG instead, and that resumes.)
run_expect 2 fit --resume "$cfg" --run-dir "$TMP/run-resume-first"
expect_in "$TMP/err" "gputrain: error: CONFIG is required; --resume took '$cfg' as its checkpoint: put --resume after the config (gputrain fit CONFIG --resume)"
run_expect 2 fit
expect_in "$TMP/err" "gputrain: error: config is required (see 'gputrain fit --help')"

step "a bad flag value -> 2, the validator's words with the error prefix"
run_expect 2 fit "$cfg" --device xyz
expect_in "$TMP/err" "gputrain: error: --device: xyz not in {auto,cpu,gpu}"
step "metrics_file that is TensorBoard's folder -> 2, before the run makes either"
run_expect 2 fit "$cfg" --set logging.tensorboard=true --set logging.metrics_file=tensorboard --run-dir "$TMP/run-tb"
expect_in "$TMP/err" "logging.metrics_file: 'tensorboard' is the folder logging.tensorboard writes its event files in; give another name, e.g. metrics_file: metrics.csv"
[ ! -e "$TMP/run-tb/tensorboard" ] || fail "a stray tensorboard file or folder was left"

step "an error quoting a huge input is one line of readable length, its raw bytes escaped"
run_expect 2 summary "$cfg" --set "optimizer.type=$(printf 'a%.0s' $(seq 100000))"
[ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "more than one line"
[ "$(wc -c <"$TMP/err")" -lt 2200 ] || fail "an error line of $(wc -c <"$TMP/err") bytes"
expect_in "$TMP/err" "bytes left out) ... "
expect_in "$TMP/err" "known optimizers: sgd, adam, adamw, rmsprop"
printf 'model: \xff\xfe\x80\n' >"$TMP/binary.yaml"
run_expect 2 summary "$TMP/binary.yaml"
python3 -c "import sys; open(sys.argv[1], encoding='utf-8').read()" "$TMP/err" || fail "the error is not UTF-8: $(cat -v "$TMP/err")"

step "a config that makes yaml-cpp loop forever -> a clear error within the time limit, exit 2"
run_expect 2 fit tests/fuzz/corpus/config/regression-yaml-cpp-hang
expect_in "$TMP/err" "gputrain: error: tests/fuzz/corpus/config/regression-yaml-cpp-hang: the YAML parser (yaml-cpp) did not finish within 5 s"

echo "ok"
