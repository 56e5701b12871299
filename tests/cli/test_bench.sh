#!/usr/bin/env bash
# gputrain bench: a row per layer with positive times, the step split, the
# dense layers' GEMM shapes as Dense calls them (checked against a hand
# computation for the synthetic MLP 64-16-4), --json that parses and agrees with
# itself, and one-line errors. Also scripts/bench's argument errors (no PyTorch needed).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
config=$TMP/tiny.yaml
write_synthetic_config "$config"

step "text: a row per layer, the step line and the GEMM table (batch 32, one replica)"
run_expect 0 bench "$config" --device cpu --replicas 1 --steps 5 --warmup 1
cat "$TMP/out"
expect_in "$TMP/out" "1 warm-up + 5 timed steps"
expect_in "$TMP/out" "global batch 32"
for layer in flatten dense dense_1 "(loss)"; do
    grep -qE "^$(printf '%s' "$layer" | sed 's/[()]/\\&/g') " "$TMP/out" || fail "no row for layer '$layer'"
done
# Forward and backward ms of the two dense layers are positive numbers.
awk '$1 ~ /^dense/ && $2 == "dense" { if (!($4 > 0 && $5 > 0)) bad = 1; n++ }
     END { exit (n == 2 && !bad) ? 0 : 1 }' "$TMP/out" || fail "dense rows without positive forward/backward ms"
grep -qE '^step: [0-9.]+ ms = input copy [0-9.]+ \+ forward\+backward [0-9.]+ \+ all-reduce [0-9.]+ \+ optimizer [0-9.]+' \
    "$TMP/out" || fail "no step split line"
grep -qE '^step queued as fit queues it \(no timing between parts, no CUDA graph; shards copied in\): [0-9.]+ ms' \
    "$TMP/out" || fail "no line for the step as fit queues it"
grep -qE '^throughput at that step: [0-9.]+ samples/s' "$TMP/out" || fail "no throughput line"
# Dense(16) on 64 inputs and Dense(4) on 16, 32 rows: forward x*W is m x n x k =
# 32x16x64, the weight gradient x^T*dz 64x16x32 (TN), the input gradient dz*W^T
# 32x16x4 (NT) for dense_1 only: nothing in front of the first dense layer
# (a flatten) needs a gradient, so it computes none.
for row in "dense forward 32x16x64 (NN)" "dense weight grad 64x16x32 (TN)" \
           "dense_1 forward 32x4x16 (NN)" "dense_1 weight grad 16x4x32 (TN)" "dense_1 input grad 32x16x4 (NT)"; do
    pattern=$(echo "$row" | sed 's/[()]/\\&/g; s/ /  */g')
    grep -qE "^$pattern " "$TMP/out" || fail "no GEMM row '$row'"
done
if grep -qE "^dense +input grad" "$TMP/out"; then fail "the first dense layer lists an input gradient"; fi

step "--json: parses, names the layers, and its numbers agree"
run_expect 0 bench "$config" --device cpu --replicas 2 --steps 4 --warmup 1 --json
python3 - "$TMP/out" <<'PY' || fail "--json output is wrong (above)"
import json, math, sys
r = json.load(open(sys.argv[1]))
assert [l["name"] for l in r["layers"]] == ["flatten", "dense", "dense_1"], r["layers"]
assert [l["type"] for l in r["layers"]] == ["flatten", "dense", "dense"]
assert r["layers"][1]["output_shape"] == [16] and r["layers"][2]["output_shape"] == [4]
assert r["replicas"] == 2 and r["global_batch"] == 32 and r["timed_steps"] == 4 and r["warmup_steps"] == 1
for l in r["layers"]:
    assert l["forward_ms"] >= 0 and l["backward_ms"] >= 0, l
for l in r["layers"][1:]:
    assert l["forward_ms"] > 0 and l["backward_ms"] > 0, l
# A layer's achieved rate is its GEMM FLOPs over its measured time; no GEMMs, no rate.
assert r["layers"][0]["forward_gemm_gflops"] == 0 and r["layers"][0]["gemm_gflop"] == 0
d = r["layers"][1]
assert abs(d["forward_gemm_gflops"] - 2 * 16 * 16 * 64 / 1e9 / (d["forward_ms"] / 1e3)) <= 1e-3 * d["forward_gemm_gflops"]
# The first dense layer (after flatten) computes no input gradient: only dW backward.
assert abs(d["backward_gemm_gflops"] - 2 * 16 * 16 * 64 / 1e9 / (d["backward_ms"] / 1e3)) <= 1e-3 * d["backward_gemm_gflops"]
assert abs(d["gemm_gflop"] - 2 * 2 * 16 * 16 * 64 / 1e9) < 1e-12
s = r["step_ms"]
assert s["total"] > 0 and s["forward_backward"] > 0 and s["allreduce"] >= 0 and s["optimizer"] > 0, s
# samples/s and the GEMM share come from the steps queued as fit queues them.
p = r["pipelined_step_ms"]
assert p > 0, p
assert abs(r["samples_per_second"] - 32 / (p / 1e3)) <= 1e-3 * r["samples_per_second"]
# Two replicas: each has 16 rows. 2*m*n*k FLOPs per GEMM.
shapes = [(g["layer"], g["pass"], g["m"], g["n"], g["k"], g["op"]) for g in r["gemms"]]
assert shapes == [("dense", "forward", 16, 16, 64, "NN"), ("dense", "weight grad", 64, 16, 16, "TN"),
                  ("dense_1", "forward", 16, 4, 16, "NN"),
                  ("dense_1", "weight grad", 16, 4, 16, "TN"), ("dense_1", "input grad", 16, 16, 4, "NT")], shapes
for g in r["gemms"]:
    assert abs(g["gflop"] - 2 * g["m"] * g["n"] * g["k"] / 1e9) < 1e-12 and g["bare_gflops"] > 0, g
total = sum(g["gflop"] for g in r["gemms"])
assert abs(r["gemm_gflop_per_step"] - total) < 1e-9
bare_ms = sum(g["gflop"] / g["bare_gflops"] * 1e3 for g in r["gemms"])
assert abs(r["gemm_bare_ms_per_step"] - bare_ms) <= 1e-4 * bare_ms + 1e-9
assert abs(r["fraction_of_bare_gemm"] - bare_ms / p) <= 1e-3 * r["fraction_of_bare_gemm"] + 1e-9
# The CPU has no GEMM epilogues: none asked for, none taken.
assert r["gemm_epilogue_shapes"] == {"asked": 0, "taken": 0}, r["gemm_epilogue_shapes"]
# A freshly initialized 4-class model: the loss is near ln 4 = 1.386, finite.
assert math.isfinite(r["final_loss"]) and 0.3 < r["final_loss"] < 3, r["final_loss"]
print("json ok:", len(r["layers"]), "layers,", len(r["gemms"]), "GEMMs")
PY

step "bench's layer-by-layer step does what fit's step does: the loss after one update matches fit's epoch 2"
# One batch of all 64 samples in order, no dropout: fit's epoch 1 is one step
# from the initial weights and its epoch 2 loss is measured after that update;
# bench --warmup 1 --steps 1 reports the loss of the same second step. Equal
# losses mean the observed forward/backward gave the same gradients.
cat >"$TMP/one_batch.yaml" <<'YAML'
model:
  input_shape: [8, 8]
  layers:
    - {type: flatten}
    - {type: dense, units: 16, activation: relu}
    - {type: batch_norm}
    - {type: dense, units: 4, activation: softmax}
loss: sparse_categorical_crossentropy
optimizer: {type: adam, learning_rate: 0.05}
data: {dataset: synthetic, synthetic: {samples: 64, classes: 4, seed: 5}}
training: {epochs: 2, batch_size: 64, shuffle: false, seed: 11}
checkpoint: {monitor: loss}
logging: {progress: none}
YAML
for replicas in 1 2; do
    run_expect 0 fit "$TMP/one_batch.yaml" --device cpu --replicas "$replicas" --run-dir "$TMP/fit-$replicas" --quiet
    fit_loss=$(sed -n 3p "$TMP/fit-$replicas/metrics.csv" | cut -d, -f2)
    run_expect 0 bench "$TMP/one_batch.yaml" --device cpu --replicas "$replicas" --warmup 1 --steps 1 --json
    python3 - "$TMP/out" "$fit_loss" <<'PY' || fail "bench's loss after one update differs from fit's ($replicas replicas)"
import json, sys
bench, fit = json.load(open(sys.argv[1]))["final_loss"], float(sys.argv[2])
print(f"bench {bench}, fit {fit}")
assert abs(bench - fit) <= 2e-5 * abs(fit), (bench, fit)
PY
done

step "a model without dense layers has no GEMM table"
cat >"$TMP/conv.yaml" <<'YAML'
model:
  input_shape: [8, 8, 1]
  layers:
    - {type: conv2d, filters: 2, kernel_size: 3, activation: relu}
    - {type: global_avg_pool2d}
    - {type: softmax}
loss: sparse_categorical_crossentropy
optimizer: {type: sgd, learning_rate: 0.1}
data: {dataset: synthetic, synthetic: {samples: 64, classes: 2, seed: 1}}
training: {epochs: 1, batch_size: 8}
YAML
run_expect 0 bench "$TMP/conv.yaml" --device cpu --replicas 1 --steps 2 --warmup 0
expect_in "$TMP/out" "conv2d"
grep -q "Dense GEMMs" "$TMP/out" && fail "a GEMM table without dense layers"

step "errors: one line, non-zero exit"
run_expect 2 bench "$TMP/missing.yaml" --device cpu
[ "$(wc -l <"$TMP/err")" -eq 1 ] || { cat "$TMP/err" >&2; fail "expected one line on stderr"; }
expect_in "$TMP/err" "missing.yaml"
run_expect 2 bench "$config" --steps 0
expect_in "$TMP/err" "--steps"
expect_in "$TMP/err" "expected a number of steps from 1 to 1000000, got '0'"
run_expect 2 bench "$config" --warmup -1
expect_in "$TMP/err" "expected a number of steps from 0 to 1000000, got '-1'"

step "on the CPU, bench says that bf16 and the GPU-only keys change nothing there (its figures are fp32's)"
run_expect 0 bench "$config" --device cpu --replicas 1 --steps 1 --warmup 0 --set training.precision=bf16 \
  --set training.gemm_epilogues=true
cat "$TMP/out" "$TMP/err" >"$TMP/both"
expect_in "$TMP/both" "training.precision: bf16 changes GPU matrix products only; the CPU computes in fp32"
expect_in "$TMP/both" "training.gemm_epilogues: only a GPU acts on this; no effect on the CPU"
run_expect 2 bench "$config" --set training.batch_size=0
[ "$(wc -l <"$TMP/err")" -eq 1 ] || { cat "$TMP/err" >&2; fail "expected one line on stderr"; }
expect_in "$TMP/err" "training.batch_size"

step "scripts/bench: --help and argument errors (exit 2, one line), before any PyTorch or build"
scripts/bench --help >"$TMP/out"
expect_in "$TMP/out" "scripts/bench [--device cpu|gpu] [--quick] [--epochs N] [--out FILE.md]"
bench_expect_error() {  # bench_expect_error TEXT ARGS...
    local text=$1 got=0
    shift
    scripts/bench "$@" >"$TMP/out" 2>"$TMP/err" || got=$?
    [ "$got" -eq 2 ] || fail "scripts/bench $* exited $got, expected 2"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || { cat "$TMP/err" >&2; fail "scripts/bench $*: expected one line"; }
    expect_in "$TMP/err" "$text"
}
bench_expect_error "--device must be cpu or gpu, got 'tpu'" --device tpu
bench_expect_error "--epochs must be a positive integer, got '0'" --epochs 0
bench_expect_error "--epochs must be a positive integer, got 'x'" --epochs=x
bench_expect_error "unknown argument '--fast'" --fast
bench_expect_error "--out: folder '$TMP/nope' does not exist" --out "$TMP/nope/table.md"
bench_expect_error "--device needs cpu or gpu" --device

step "scripts/pytorch_twin.py: --cuda-graph needs --device cuda and epochs (exit 2, before PyTorch loads)"
for args in "--cuda-graph" "--cuda-graph --device cpu" "--cuda-graph --device cuda --steps 5"; do
    got=0
    # shellcheck disable=SC2086
    python3 scripts/pytorch_twin.py "$config" $args >"$TMP/out" 2>"$TMP/err" || got=$?
    [ "$got" -eq 2 ] || fail "pytorch_twin.py $args exited $got, expected 2"
    expect_in "$TMP/err" "--cuda-graph needs --device cuda and times epochs (not --steps)"
done
got=0
python3 scripts/pytorch_twin.py "$config" --autocast fp16 >"$TMP/out" 2>"$TMP/err" || got=$?
[ "$got" -eq 2 ] || fail "pytorch_twin.py --autocast fp16 exited $got, expected 2"
expect_in "$TMP/err" "argument --autocast: invalid choice: 'fp16'"

step "--json of a run whose loss diverges: final_loss is null, the JSON parses"
cat >"$TMP/diverges.yaml" <<'YAML'
model: {input_shape: [8, 8], layers: [{type: flatten}, {type: dense, units: 16}, {type: batch_norm}, {type: relu},
                                      {type: dense, units: 10, activation: softmax}]}
data: {dataset: synthetic, synthetic: {samples: 500}}
optimizer: {type: sgd, learning_rate: 1e30}
YAML
run_expect 0 bench "$TMP/diverges.yaml" --device cpu --steps 20 --warmup 1 --json
python3 -c "import json, sys; r = json.load(open(sys.argv[1])); assert r['final_loss'] is None, r['final_loss']" "$TMP/out" ||
    fail "final_loss is not null: $(grep final_loss "$TMP/out")"

echo "PASS"
