#!/usr/bin/env bash
# The bad-input audit (README "Bad input"): every path a user controls --
# command-line flags, --set overrides, checkpoints, the run dir, data files and
# environment variables -- either works or ends with exit 1 or 2 and one
# "gputrain: ..." line naming the culprit; never a crash, a trace or a hang.
# One table row per case: exit code | stream (out/err) | text expected there |
# environment (VAR=VALUE ..., or -) | gputrain arguments. In the rows @CFG@ is
# the synthetic config, @DCFG@ the one reading @DATA@/good (IDX files), @DATA@
# the folder of damaged data sets (make_bad_data.py), @TMP@ this test's folder and
# @EMPTY@ an empty argument.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

cfg=$TMP/synthetic.yaml
write_synthetic_config "$cfg"
sed -i 's/samples: 500/samples: 100/' "$cfg"
data=$TMP/data
python3 "$HERE/make_bad_data.py" "$data"
sed -e "s|dataset: synthetic|path: $data/good|" -e '/synthetic:/d' "$cfg" >"$TMP/data.yaml"
sed -e "s|dataset: synthetic|dataset: no-such-set|" -e '/synthetic:/d' "$cfg" >"$TMP/named.yaml"

step "setup: a checkpoint to resume from, a damaged one, a file where a folder belongs"
run_expect 0 fit "$cfg" --run-dir "$TMP/ck" --quiet --set training.epochs=1
head -c 300 "$TMP/ck/last.safetensors" >"$TMP/truncated.safetensors"
: >"$TMP/empty.safetensors"
echo "not a folder" >"$TMP/file"
# Checkpoints with damaged metadata (the tensors intact).
python3 - "$TMP/ck/last.safetensors" "$TMP/negative-epoch.safetensors" "$TMP/bad-partial.safetensors" \
    "$TMP/bad-steps.safetensors" "$TMP/bad-config-bytes.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]

def variant(path, **changes):  # a key set to None is removed
    h = json.loads(raw[8:8 + n])
    h["__metadata__"].update(changes)
    h["__metadata__"] = {k: v for k, v in h["__metadata__"].items() if v is not None}
    t = json.dumps(h).encode()
    t += b" " * (-len(t) % 8)
    open(path, "wb").write(struct.pack("<Q", len(t)) + t + raw[8 + n:])
variant(sys.argv[2], epoch="-5")
# Stopped mid-epoch with sums that cannot be: more correct samples than samples.
variant(sys.argv[3], epoch="0", step_in_epoch="2", partial_samples="32", partial_correct="999", partial_loss_sum="1")
# Steps per epoch that do not add up to the global step; a config_bytes past Latin-1.
variant(sys.argv[4], steps_per_epoch="0:3")
variant(sys.argv[5], config=None, config_bytes="run_dir: \u0100")
PY
cp "$TMP/ck/config.yaml" "$TMP/ck-config-before.yaml"
# A model of one flatten layer: nothing to train. (Its output is 64 wide, the
# data's 4 classes fit in it.)
sed -e '/type: dense/d' "$cfg" >"$TMP/flatten-only.yaml"
mkdir "$TMP/blocked" && : >"$TMP/blocked/tensorboard"

run="--run-dir @TMP@/run --quiet --set training.epochs=1"
cases=(
# --- command-line flags
"2|err|--replicas: expected a number of CPU replicas from 1 to 1024, got '-1'|-|fit @CFG@ --replicas -1"
"2|err|--replicas: expected a number of CPU replicas from 1 to 1024, got '0'|-|fit @CFG@ --replicas 0"
"2|err|--replicas: expected a number of CPU replicas from 1 to 1024, got '100000'|-|fit @CFG@ --replicas 100000"
"2|err|--replicas: expected a number of CPU replicas from 1 to 1024, got 'abc'|-|evaluate @CFG@ --replicas abc"
"2|err|--replicas: expected a number of CPU replicas from 1 to 1024, got '2.5'|-|summary @CFG@ --replicas 2.5"
"2|err|--replicas: 64 replicas for a global batch of 32 leave some without samples; use at most training.batch_size replicas|-|fit @CFG@ --replicas 64 $run"
"2|err|--device: xyz not in {auto,cpu,gpu}|-|fit @CFG@ --device xyz"
"2|err|--resume: '@TMP@/nope.safetensors' does not exist|-|fit @CFG@ $run --resume @TMP@/nope.safetensors"
"2|err|--resume: no checkpoint in '@TMP@/never' (looked for last.safetensors and epoch-NNN.safetensors); train without --resume first|-|fit @CFG@ --run-dir @TMP@/never --resume"
"1|err|@TMP@/truncated.safetensors: header length|-|fit @CFG@ $run --resume @TMP@/truncated.safetensors"
"1|err|@TMP@/empty.safetensors: file is 0 bytes, shorter than the 8-byte header length; the file is truncated or not a safetensors file|-|fit @CFG@ $run --resume @TMP@/empty.safetensors"
"1|err|does not fit in the file|-|fit @CFG@ $run --resume @CFG@"
"2|err|--resume: '@TMP@' is a folder; give a checkpoint file in it, e.g. @TMP@/last.safetensors|-|fit @CFG@ $run --resume @TMP@"
"2|err|--checkpoint: '@TMP@/ck' is a folder; give a checkpoint file in it, e.g. @TMP@/ck/last.safetensors|-|evaluate @CFG@ --checkpoint @TMP@/ck"
"1|err|@TMP@/ck/last.safetensors: tensor 'dense/kernel' has shape [64, 16] but the model expects [64, 32]|-|fit @CFG@ --run-dir @TMP@/ck --quiet --set training.epochs=2 --set model.layers[1].units=32 --resume"
"1|err|cannot create run dir '@TMP@/file': Not a directory|-|fit @CFG@ --run-dir @TMP@/file --quiet"
"1|err|cannot create run dir '@TMP@/file/sub': Not a directory|-|fit @CFG@ --run-dir @TMP@/file/sub --quiet"
"2|err|--no-such-flag|-|fit @CFG@ --no-such-flag"
"2|err|--replicas is given more than once; give it once (see 'gputrain fit --help')|-|fit @CFG@ --replicas 2 --replicas 3"
"2|err|--run-dir: is empty; give a path|-|fit @CFG@ --run-dir @EMPTY@"
"2|err|--checkpoint: is empty; give a path|-|evaluate @CFG@ --checkpoint @EMPTY@"
"2|err|--resume: is empty; give a checkpoint path, or --resume alone for the run dir's latest checkpoint|-|fit @CFG@ --run-dir @TMP@/ck --resume @EMPTY@"
"2|err|--resume: is empty; give a checkpoint path, or --resume alone for the run dir's latest checkpoint|-|fit @CFG@ --run-dir @TMP@/ck --resume="
"2|err|--input: is empty; give a path|-|predict @CFG@ --checkpoint @TMP@/ck/last.safetensors --input @EMPTY@"
"1|err|@TMP@/truncated.safetensors: header length|-|evaluate @CFG@ --checkpoint @TMP@/truncated.safetensors"
"1|err|@TMP@/nope.csv: no such file|-|predict @CFG@ --checkpoint @TMP@/ck/last.safetensors --input @TMP@/nope.csv"
"1|err|@CFG@: not an IDX file (magic bytes|-|predict @CFG@ --checkpoint @TMP@/ck/last.safetensors --input @CFG@"
"2|err|--output '@TMP@/file/out.csv': the folder '@TMP@/file' is not a folder; create it or give another path|-|predict @CFG@ --checkpoint @TMP@/ck/last.safetensors --input @DATA@/csv-good/train.csv --output @TMP@/file/out.csv"
"2|err|cannot read config '@TMP@': Is a directory|-|summary @TMP@"
"2|err|/dev/null:1:1: the config is empty|-|fit /dev/null"
# --- where the run writes: checkpoint folder, metrics file, TensorBoard folder
"1|err|cannot create checkpoint folder '@TMP@/file': Not a directory; set checkpoint.dir or --run-dir to a writable folder|-|fit @CFG@ $run --set checkpoint.dir=@TMP@/file"
"1|err|cannot write metrics file '@TMP@/ck': Is a directory|-|fit @CFG@ $run --set logging.metrics_file=@TMP@/ck"
"1|err|cannot create TensorBoard folder '@TMP@/blocked/tensorboard': Not a directory|-|fit @CFG@ $run --set logging.tensorboard=true --set checkpoint.dir=@TMP@/blocked"
# --- --set overrides
"2|err|--set training.epochs: expected KEY.PATH=VALUE; e.g. --set training.epochs=10|-|fit @CFG@ --set training.epochs"
"2|err|--set =3: malformed key path ''|-|fit @CFG@ --set =3"
"2|err|--set nosuch.key=1: nosuch: unknown key; known keys: run_dir, blocks, model|-|fit @CFG@ --set nosuch.key=1"
"2|err|--set training.epochs=abc: training.epochs: expected a positive integer, got 'abc'|-|fit @CFG@ --set training.epochs=abc"
"2|err|model.layers[5]: no such item; model.layers has 3 items|-|fit @CFG@ --set model.layers[5].units=3"
"2|err|--set training=3: training: expected a mapping, got '3'|-|fit @CFG@ --set training=3"
"2|err|logging.every_steps: expected an integer >= 0, got '-1'|-|fit @CFG@ --set logging.every_steps=-1"
"2|err|strategy.replicas: at most 1024 replicas, got 5000; use fewer|-|fit @CFG@ --set strategy.replicas=5000 --set training.batch_size=8000"
"2|err|strategy.replicas: 64 replicas for a global batch of 32 leave some without samples|-|fit @CFG@ --set strategy.replicas=64"
"2|err|strategy.replicas_per_gpu: at most 1024, got 2000|-|fit @CFG@ --set strategy.replicas_per_gpu=2000"
# --- data files
"1|err|@DATA@/truncated/train-images-idx3-ubyte: truncated: the header's dimensions need 2560 bytes of data, the file holds 2460|-|fit @DCFG@ $run --set data.path=@DATA@/truncated"
"1|err|@DATA@/gz-corrupt/train-images-idx3-ubyte.gz: damaged gzip data|-|fit @DCFG@ $run --set data.path=@DATA@/gz-corrupt"
"1|err|@DATA@/gz-truncated/train-images-idx3-ubyte.gz: damaged gzip data (unexpected end of file)|-|fit @DCFG@ $run --set data.path=@DATA@/gz-truncated"
"1|err|@DATA@/count-mismatch/train-labels-idx1-ubyte: 39 labels for 40 images in @DATA@/count-mismatch/train-images-idx3-ubyte|-|fit @DCFG@ $run --set data.path=@DATA@/count-mismatch"
"2|err|@TMP@/data.yaml:7:21: model.layers[2]: the model has 4 outputs, but the data's labels go up to 9 (data.path train (@DATA@/labels-out-of-range)); set the last layer's units to at least 10|-|fit @DCFG@ $run --set data.path=@DATA@/labels-out-of-range"
"1|err|@DATA@/not-idx/train-images-idx3-ubyte: not an IDX file (magic bytes 68 65 6c 6c, expected 00 00 08 NN, NN the number of dimensions, 01 or more)|-|fit @DCFG@ $run --set data.path=@DATA@/not-idx"
"1|err|@DATA@/int-labels/train-labels-idx1-ubyte: IDX type 0c (int) is not supported; only unsigned byte (08) is|-|fit @DCFG@ $run --set data.path=@DATA@/int-labels"
"2|err|model.input_shape [8, 8] does not match the data's sample shape [4, 4] (@DATA@/wrong-shape/train-images-idx3-ubyte)|-|fit @DCFG@ $run --set data.path=@DATA@/wrong-shape"
"1|err|data.path: @DATA@/nope: no such directory|-|fit @DCFG@ $run --set data.path=@DATA@/nope"
"1|err|@DATA@/csv-ragged/train.csv:6: expected 65 fields like the first line, found 66|-|fit @DCFG@ $run --set data.format=csv --set data.path=@DATA@/csv-ragged"
"1|err|@DATA@/csv-bad-label/train.csv:3: label 'cat' is not a class index (a whole number from 0 to 2147483647)|-|fit @DCFG@ $run --set data.format=csv --set data.path=@DATA@/csv-bad-label"
"1|err|@DATA@/csv-negative-label/train.csv:3: label '-1' is not a class index (a whole number from 0 to 2147483647); for real-valued targets name their columns in data.target_columns|-|fit @DCFG@ $run --set data.format=csv --set data.path=@DATA@/csv-negative-label"
"1|err|@DATA@/csv-bad-field/train.csv:8: field 2 'x' is not a number|-|fit @DCFG@ $run --set data.format=csv --set data.path=@DATA@/csv-bad-field"
"1|err|@DATA@/csv-empty/train.csv: no data rows|-|fit @DCFG@ $run --set data.format=csv --set data.path=@DATA@/csv-empty"
"0|out|Done: 1 epoch|-|fit @DCFG@ --run-dir @TMP@/run --set training.epochs=1 --set data.path=@DATA@/gz-good"
"0|out|Done: 1 epoch|-|fit @DCFG@ --run-dir @TMP@/run --set training.epochs=1 --set data.format=csv --set data.path=@DATA@/csv-good"
# --- environment: CUDA_VISIBLE_DEVICES (no GPU here, or one hidden by the value)
"0|out|CPU |CUDA_VISIBLE_DEVICES=xyz|devices"
"0|out|CPU |CUDA_VISIBLE_DEVICES=|devices"
"0|out|\"cpu\": {|CUDA_VISIBLE_DEVICES=-1|devices --json"
"0|out|GPU|CUDA_VISIBLE_DEVICES=0,0|devices --topology"
"0|out|CPU |CUDA_VISIBLE_DEVICES=GPU-8932f937-d72c-4106-c12f-20bd9faed9f6|devices"
"0|out|Done: 1 epoch|CUDA_VISIBLE_DEVICES=xyz|fit @CFG@ --device auto --run-dir @TMP@/run --set training.epochs=1"
"0|out|Done: 1 epoch|CUDA_VISIBLE_DEVICES=|fit @CFG@ --device auto --run-dir @TMP@/run --set training.epochs=1"
"0|out|Done: 1 epoch|CUDA_VISIBLE_DEVICES=-1|fit @CFG@ --device auto --run-dir @TMP@/run --set training.epochs=1"
"0|out|Done: 1 epoch|CUDA_VISIBLE_DEVICES=0,0,,|fit @CFG@ --device cpu --run-dir @TMP@/run --set training.epochs=1"
"2|err|--device gpu: cannot use a GPU: |CUDA_VISIBLE_DEVICES=xyz|fit @CFG@ --device gpu $run"
"2|err|--device gpu: cannot use a GPU: |CUDA_VISIBLE_DEVICES=-1|fit @CFG@ --device gpu $run"
"2|err|--device gpu: cannot use a GPU: |CUDA_VISIBLE_DEVICES=|fit @CFG@ --device gpu $run"
# --- environment: data root, MPI launcher variables, thread counts, HOME and TMPDIR
"1|err|data.dataset: 'no-such-set' not found in @TMP@/nowhere/no-such-set, ./datasets/no-such-set, /usr/share/datasets/no-such-set (GPUTRAIN_DATA=@TMP@/nowhere is not a directory)|GPUTRAIN_DATA=@TMP@/nowhere|fit @TMP@/named.yaml $run"
"0|out|Done: 1 epoch|OMPI_COMM_WORLD_SIZE=abc|fit @CFG@ --run-dir @TMP@/run --set training.epochs=1"
"0|err|warning: 2 processes were launched, but strategy.type is mirrored|OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=5|fit @CFG@ --run-dir @TMP@/run --set training.epochs=1"
"0|out|Done: 1 epoch|PMI_SIZE=-3 PMI_RANK=x SLURM_NTASKS=2abc|fit @CFG@ --run-dir @TMP@/run --set training.epochs=1"
"0|out|Done: 1 epoch|OMP_NUM_THREADS=abc OPENBLAS_NUM_THREADS=-5|fit @CFG@ --run-dir @TMP@/run --set training.epochs=1 --replicas 2"
"0|out|Done: 1 epoch|OMP_NUM_THREADS=0 OPENBLAS_NUM_THREADS=100000|fit @CFG@ --run-dir @TMP@/run --set training.epochs=1"
"0|out|Done: 1 epoch|HOME=/nonexistent TMPDIR=/nonexistent|fit @CFG@ --run-dir @TMP@/run --set training.epochs=1"
"1|err|environment variable GPUTRAIN_CPU_CONV='fast': expected auto, onednn or im2col|GPUTRAIN_CPU_CONV=fast|fit @CFG@ $run"
"0|out|Done: 1 epoch|GPUTRAIN_CPU_CONV=im2col|fit @CFG@ --run-dir @TMP@/run --set training.epochs=1"
"1|err|environment variable GPUTRAIN_CPU_GEMM='mkl': expected auto, onednn or openblas|GPUTRAIN_CPU_GEMM=mkl|fit @CFG@ $run"
"0|out|Done: 1 epoch|GPUTRAIN_CPU_GEMM=openblas|fit @CFG@ --run-dir @TMP@/run --set training.epochs=1"
)

# The libcuda.so.1 stand-in of the device unit tests, when built: a driver with
# two GPUs, so what CUDA_VISIBLE_DEVICES hides is explained (the stand-in itself
# only honours an empty value).
fake_driver=$(dirname "$GPUTRAIN")/tests/unit/device
if [ -e "$fake_driver/libcuda.so.1" ]; then
    cases+=(
"0|out|Note: CUDA_VISIBLE_DEVICES=\"0,xyz\": 'xyz' is neither a GPU index nor a GPU UUID, so CUDA hides every GPU listed from there on|LD_LIBRARY_PATH=$fake_driver CUDA_VISIBLE_DEVICES=0,xyz|devices"
"0|out|CUDA driver present but cuInit failed: no CUDA-capable device is detected; CUDA_VISIBLE_DEVICES=\"\" hides every GPU; unset it (or list GPUs, e.g. 0,1) to use them|LD_LIBRARY_PATH=$fake_driver CUDA_VISIBLE_DEVICES=|devices"
    )
else
    echo "(no fake libcuda.so.1 in $fake_driver: its two cases are left out)"
fi

# Sizes past what the backends count with int, endless input, full disks,
# damaged checkpoint metadata (each once a crash, a hang or a silent loss).
cases+=(
"2|err|model.layers[1] (dense): units: 4294967296 is too large; layer sizes are at most 2147483647|-|fit @CFG@ $run --set model.layers[1].units=4294967296"
"2|err|--set model.input_shape=[4294967296,4294967296]: model.input_shape: (4294967296, 4294967296) has more than 2147483647 elements per sample; give a smaller shape|-|summary @CFG@ --set model.input_shape=[4294967296,4294967296]"
"2|err|data.synthetic.classes: 1152921504606846976 class means of|-|fit @CFG@ $run --set data.synthetic.classes=1152921504606846976"
"2|err|cannot read config '/dev/zero': longer than 16 MiB; give a YAML config file|-|fit /dev/zero"
"2|err|logging.metrics_file: 'last.safetensors' is a file the run writes itself (config or checkpoint); give another name, e.g. metrics_file: metrics.csv|-|fit @CFG@ $run --set logging.metrics_file=last.safetensors"
"2|err|@TMP@/flatten-only.yaml:5:5: model.layers: the model has no trainable parameters, so training would change nothing; add a dense or conv2d layer|-|fit @TMP@/flatten-only.yaml $run"
"2|err|--set optimizer.beta1=0.99999999: optimizer.beta1: is 1 in float32, in which the optimizer runs (it must be below 1); give at most 0.9999999|-|fit @CFG@ $run --set optimizer.beta1=0.99999999"
"2|err|--set optimizer.momentum=0.99999999: optimizer.momentum: is 1 in float32|-|fit @CFG@ $run --set optimizer.type=sgd --set optimizer.momentum=0.99999999"
"2|err|optimizer.epsilon: is 0 in float32 (below 1.4e-45); give at least 1e-38, e.g. epsilon: 1.0e-7|-|fit @CFG@ $run --set optimizer.epsilon=1e-50"
"1|err|cannot write metrics file '/dev/full': No space left on device|-|fit @CFG@ $run --set logging.metrics_file=/dev/full"
"1|err|@TMP@/bad-partial.safetensors: the interrupted epoch's metadata disagree (step_in_epoch 2, partial_samples 32, partial_correct 999, partial_loss_sum 1); the file is damaged: resume from an epoch-NNN.safetensors checkpoint instead|-|fit @CFG@ --run-dir @TMP@/run --quiet --resume @TMP@/bad-partial.safetensors"
"1|err|@TMP@/bad-steps.safetensors: metadata 'steps_per_epoch' (0:3) disagrees with 'epoch' (1), 'global_step' (|-|fit @CFG@ --run-dir @TMP@/run --quiet --resume @TMP@/bad-steps.safetensors --set training.epochs=2"
"1|err|@TMP@/bad-config-bytes.safetensors: metadata 'config_bytes' holds a character past U+00FF, which no byte gives; the file is damaged|-|evaluate @CFG@ --checkpoint @TMP@/bad-config-bytes.safetensors"
"2|err|--set optimizer.learning_rate=1e-50: optimizer.learning_rate: is 0 in float32 (below 1.4e-45), so no weight would ever change; give at least 1e-38, e.g. 0.001|-|fit @CFG@ $run --set optimizer.learning_rate=1e-50"
"1|err|@TMP@/negative-epoch.safetensors: metadata 'epoch' is not a whole number >= 0: '-5'; the file is damaged or not a gputrain checkpoint|-|fit @CFG@ $run --resume @TMP@/negative-epoch.safetensors"
)

expand() {
    local s=$1
    s=${s//@DCFG@/$TMP/data.yaml}
    s=${s//@CFG@/$cfg}
    s=${s//@DATA@/$data}
    echo "${s//@TMP@/$TMP}"
}

passed=0
for row in "${cases[@]}"; do
    IFS='|' read -r want stream text envs args <<<"$row"
    text=$(expand "$text")
    args=$(expand "$args")
    envs=$(expand "$envs")
    [ "$envs" != "-" ] || envs=""
    rm -rf "$TMP/run"
    read -ra words <<<"$args"
    for i in "${!words[@]}"; do [ "${words[$i]}" != "@EMPTY@" ] || words[i]=""; done
    echo "+ ${envs:+$envs }gputrain $args"
    got=0
    # shellcheck disable=SC2086  # the environment's words are split on purpose
    env $envs timeout 120 "$GPUTRAIN" "${words[@]}" >"$TMP/out" 2>"$TMP/err" || got=$?
    if [ "$got" -ne "$want" ]; then
        echo "stdout:" >&2; cat "$TMP/out" >&2
        echo "stderr:" >&2; cat "$TMP/err" >&2
        fail "exited $got, expected $want (124: it hung)"
    fi
    expect_in "$TMP/$stream" "$text"
    # Never a crash or a trace; a failure is one "gputrain:" line (CLI11 adds a usage hint after it).
    if grep -qE "terminate called|Aborted|Segmentation|core dumped|what\(\)|Traceback|AddressSanitizer|runtime error:" \
            "$TMP/out" "$TMP/err"; then
        cat "$TMP/err" >&2
        fail "a crash or trace"
    fi
    if [ "$want" -ne 0 ]; then
        [ "$(grep -c '^gputrain: ' "$TMP/err")" -eq 1 ] || { cat "$TMP/err" >&2; fail "expected one 'gputrain: ' line"; }
    fi
    passed=$((passed + 1))
done
# The resume above that failed on a tensor's shape left the run dir's config alone.
[ ! -e "$TMP/ck/config.previous-1.yaml" ] || fail "a failed --resume kept the run dir's config as config.previous-1.yaml"
cmp -s "$TMP/ck/config.yaml" "$TMP/ck-config-before.yaml" || fail "a failed --resume rewrote the run dir's config.yaml"
# predict's probabilities to a full disk: an error, not exit 0 with the rows lost.
got=0
"$GPUTRAIN" predict "$cfg" --checkpoint "$TMP/ck/last.safetensors" --input "$data/good/train-images-idx3-ubyte" \
    >/dev/full 2>"$TMP/err" || got=$?
[ "$got" -eq 1 ] || { cat "$TMP/err" >&2; fail "predict to a full disk exited $got, expected 1"; }
expect_in "$TMP/err" "cannot write the probabilities to standard output: No space left on device; give --output FILE"
# A newline inside a key stays inside the one error line, escaped.
got=0
"$GPUTRAIN" fit "$cfg" --set $'training.ep\nochs=1' >/dev/null 2>"$TMP/err" || got=$?
[ "$got" -eq 2 ] || fail "a key with a newline exited $got, expected 2"
[ "$(wc -l <"$TMP/err")" -eq 1 ] || { cat "$TMP/err" >&2; fail "a key with a newline gave more than one line"; }
expect_in "$TMP/err" 'training.ep\nochs: unknown key'
echo "ok: $passed cases"
