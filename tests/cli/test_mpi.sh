#!/usr/bin/env bash
# multi_worker_mirrored under mpirun (CPU workers): 2 processes x 1 replica
# train the weights of 1 process x 2 replicas and of 1 replica on the same
# global batch; only rank 0 prints and writes (fit, evaluate --json, predict); evaluate splits the test set
# over the workers and gives one process's loss and accuracy (1,001 samples); a checkpoint written by one
# process resumes on 2; without a launcher the strategy is plain mirrored.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
require_mpi

cfg=$TMP/synthetic.yaml
write_synthetic_config "$cfg"
multi=(--set strategy.type=multi_worker_mirrored --device cpu)

step "references: one process, 1 and 2 replicas"
run_expect 0 fit "$cfg" --run-dir "$TMP/one" --replicas 1 --quiet
run_expect 0 fit "$cfg" --run-dir "$TMP/two-threads" --replicas 2 --device cpu --quiet

step "mpirun -np 2, 1 replica each"
mpi_run -np 2 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --replicas 1 --run-dir "$TMP/mpi" >"$TMP/out" 2>"$TMP/err" ||
    { cat "$TMP/out" "$TMP/err" >&2; fail "mpirun -np 2 failed"; }
cat "$TMP/out"
expect_in "$TMP/out" "multi_worker_mirrored: 2 workers x 1 replica = 2 replicas (CPU threads), global batch 32 = 16 per replica"
[ "$(grep -c "^Done: 2 epochs" "$TMP/out")" -eq 1 ] || fail "expected one 'Done:' line (rank 0 only)"
[ "$(grep -c "^Total params" "$TMP/out")" -eq 1 ] || fail "expected one model summary (rank 0 only)"
[ "$(wc -l <"$TMP/mpi/metrics.csv")" -eq 3 ] || fail "metrics.csv should have a header and 2 rows"
safetensors close "$TMP/mpi/last.safetensors" "$TMP/two-threads/last.safetensors" 1e-5
safetensors close "$TMP/mpi/last.safetensors" "$TMP/one/last.safetensors" 1e-5

step "evaluate --json and predict under mpirun -np 2: rank 0 alone prints, what one process prints"
"$GPUTRAIN" evaluate "$cfg" --checkpoint "$TMP/mpi/last.safetensors" --json >"$TMP/eval-one" ||
    fail "evaluate in one process failed"
mpi_run -np 2 "$GPUTRAIN" evaluate "$cfg" "${multi[@]}" --checkpoint "$TMP/mpi/last.safetensors" --json \
    >"$TMP/eval-two" 2>"$TMP/err" || { cat "$TMP/eval-two" "$TMP/err" >&2; fail "evaluate under mpirun -np 2 failed"; }
grep -v '^+ mpirun' "$TMP/eval-two" >"$TMP/eval-two.json"
[ "$(grep -c '"loss"' "$TMP/eval-two.json")" -eq 1 ] || { cat "$TMP/eval-two.json"; fail "expected one JSON object"; }
same_scores "$TMP/eval-one" "$TMP/eval-two.json"
step "evaluate under mpirun -np 2 scores its share of 1,001 test samples on each worker: the loss and accuracy of one process"
# (synthetic: the test set is a quarter as many samples again; 4004 make 1,001)
big=(--set data.synthetic.samples=4004)
"$GPUTRAIN" evaluate "$cfg" "${big[@]}" --checkpoint "$TMP/mpi/last.safetensors" --json --device cpu --replicas 1 \
    >"$TMP/eval-1001" || fail "evaluate of 1,001 samples in one process failed"
expect_in "$TMP/eval-1001" '"samples": 1001'
"$GPUTRAIN" evaluate "$cfg" "${big[@]}" --checkpoint "$TMP/mpi/last.safetensors" --json --device cpu --replicas 3 \
    >"$TMP/eval-1001-three" || fail "evaluate of 1,001 samples on 3 replicas failed"
same_scores "$TMP/eval-1001" "$TMP/eval-1001-three"
for per in 1 3; do
    mpi_run -np 2 "$GPUTRAIN" evaluate "$cfg" "${multi[@]}" "${big[@]}" --replicas $per \
        --checkpoint "$TMP/mpi/last.safetensors" --json >"$TMP/eval-two" 2>"$TMP/err" ||
        { cat "$TMP/eval-two" "$TMP/err" >&2; fail "evaluate of 1,001 samples under mpirun -np 2 failed"; }
    same_scores "$TMP/eval-1001" "$TMP/eval-two"
    ! grep -qE "gputrain|warning|error" "$TMP/err" || { cat "$TMP/err"; fail "evaluate under mpirun -np 2 x $per printed to stderr"; }
done
mpi_run -np 2 "$GPUTRAIN" evaluate "$cfg" "${multi[@]}" "${big[@]}" --replicas 3 \
    --checkpoint "$TMP/mpi/last.safetensors" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "evaluate under mpirun failed"; }
expect_in "$TMP/out" "(1001 test samples, scored by 2 workers x 3 replicas)"
[ "$(grep -c "test samples" "$TMP/out")" -eq 1 ] || { cat "$TMP/out"; fail "expected one result line (rank 0 only)"; }
# Workers that would score different checkpoints (or test sets) stop at once, exit 2, each saying so.
code=0
mpi_run -np 1 "$GPUTRAIN" evaluate "$cfg" "${multi[@]}" "${big[@]}" --replicas 1 --set strategy.timeout_seconds=60 \
    --checkpoint "$TMP/mpi/last.safetensors" : -np 1 "$GPUTRAIN" evaluate "$cfg" "${multi[@]}" "${big[@]}" \
    --replicas 1 --set strategy.timeout_seconds=60 --checkpoint "$TMP/one/last.safetensors" >"$TMP/out" 2>&1 || code=$?
[ "$code" -eq 2 ] || { cat "$TMP/out"; fail "workers scoring different test sets: exit $code, expected 2"; }
expect_in "$TMP/out" "[rank 1] gputrain: error: evaluate: worker 1 scores another test set or checkpoint than worker 0 (fingerprint "
expect_in "$TMP/out" "[rank 0] gputrain: error: evaluate: 1 of 2 workers scores another test set or checkpoint than worker 0; give every worker the same test data and checkpoint (their paths may differ)"

"$(test_python)" -c "import numpy as np; np.save('$TMP/samples.npy', np.random.default_rng(1).random((5, 8, 8), dtype=np.float32))"
"$GPUTRAIN" predict "$cfg" --checkpoint "$TMP/mpi/last.safetensors" --input "$TMP/samples.npy" >"$TMP/pred-one" \
    2>"$TMP/err-one" || fail "predict in one process failed"
mpi_run -np 2 "$GPUTRAIN" predict "$cfg" "${multi[@]}" --checkpoint "$TMP/mpi/last.safetensors" \
    --input "$TMP/samples.npy" >"$TMP/pred-two" 2>"$TMP/err" || { cat "$TMP/err" >&2; fail "predict under mpirun failed"; }
grep -v '^+ mpirun' "$TMP/pred-two" >"$TMP/pred-two.csv"
cmp "$TMP/pred-one" "$TMP/pred-two.csv" || fail "predict under mpirun -np 2 printed other than one header and 5 rows"
# (rank 0 warns what one process warns: the inputs look scaled already)
cmp "$TMP/err-one" "$TMP/err" || { cat "$TMP/err"; fail "rank 1 was not quiet"; }

step "mpirun -np 2 x 2 replicas == one process x 4 replicas"
run_expect 0 fit "$cfg" --run-dir "$TMP/four-threads" --replicas 4 --device cpu --quiet
mpi_run -np 2 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --replicas 2 --run-dir "$TMP/mpi4" --quiet >"$TMP/out" 2>&1 ||
    { cat "$TMP/out" >&2; fail "mpirun -np 2 --replicas 2 failed"; }
safetensors close "$TMP/mpi4/last.safetensors" "$TMP/four-threads/last.safetensors" 1e-5
safetensors close "$TMP/mpi4/last.safetensors" "$TMP/one/last.safetensors" 1e-5

step "early stopping under mpirun -np 2: both workers stop after the epoch one process with 2 replicas stops at"
stop=(--set training.epochs=40 --set optimizer.learning_rate=0.05 --set data.synthetic.samples=120
      --set data.validation_split=0.5 --set 'early_stopping={patience: 0}')
run_expect 0 fit "$cfg" --run-dir "$TMP/stop-threads" --replicas 2 --device cpu --quiet "${stop[@]}"
mpi_run -np 2 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --replicas 1 --run-dir "$TMP/stop-mpi" "${stop[@]}" \
    --set strategy.timeout_seconds=60 >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; fail "mpirun -np 2 with early stopping failed"; }
stopped=$(($(wc -l <"$TMP/stop-threads/metrics.csv") - 1))
[ "$stopped" -lt 40 ] || fail "no early stop in the reference run"
[ "$(grep -c "^Epoch $stopped: early stopping: " "$TMP/out")" -eq 1 ] || { cat "$TMP/out"; fail "expected one early-stopping line at epoch $stopped"; }
[ "$(wc -l <"$TMP/stop-mpi/metrics.csv")" -eq $((stopped + 1)) ] || fail "the workers did not stop after epoch $stopped"
safetensors close "$TMP/stop-mpi/last.safetensors" "$TMP/stop-threads/last.safetensors" 1e-5

step "... and workers resuming from different checkpoints (or one without) all stop at once, exit 2"
for other in "--resume $TMP/stop-mpi/epoch-001.safetensors" ""; do
    code=0
    # shellcheck disable=SC2086 # $other is two words or none
    mpi_run -np 1 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --replicas 1 --run-dir "$TMP/stop-mpi" "${stop[@]}" \
        --set strategy.timeout_seconds=60 --set early_stopping.patience=9 --resume : \
        -np 1 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --replicas 1 --run-dir "$TMP/stop-mpi-other" "${stop[@]}" \
        --set strategy.timeout_seconds=60 --set early_stopping.patience=9 $other >"$TMP/out" 2>&1 || code=$?
    [ "$code" -eq 2 ] || { cat "$TMP/out" >&2; fail "exit $code with another worker starting from '$other'"; }
    expect_in "$TMP/out" "[rank 0] gputrain: error: the workers go on from different training states (this worker's: $TMP/stop-mpi/last.safetensors at epoch $stopped"
    expect_in "$TMP/out" "start every worker with the same --resume checkpoint, or all without one"
done

step "a checkpoint of one process resumes under mpirun -np 2"
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/resumed" --quiet
mpi_run -np 2 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --replicas 1 --run-dir "$TMP/resumed" --resume >"$TMP/out" 2>&1 ||
    { cat "$TMP/out" >&2; fail "mpirun -np 2 --resume failed"; }
[ "$(grep -c "^Resuming from" "$TMP/out")" -eq 1 ] || { cat "$TMP/out"; fail "expected one 'Resuming from' line"; }
[ "$(wc -l <"$TMP/resumed/metrics.csv")" -eq 3 ] || fail "the resumed metrics.csv should have 2 rows"
safetensors close "$TMP/resumed/last.safetensors" "$TMP/one/last.safetensors" 1e-5

step "without a launcher, multi_worker_mirrored is mirrored"
run_expect 0 fit "$cfg" "${multi[@]}" --replicas 2 --run-dir "$TMP/alone" --quiet
safetensors identical "$TMP/alone/last.safetensors" "$TMP/two-threads/last.safetensors"

step "workers started with different configs (epochs, batch size): every worker stops at once, exit 2, naming the one that differs"
for differing in "training.epochs=3" "training.batch_size=16"; do
    code=0
    # (strategy.timeout_seconds bounds it: a worker left waiting gives up after 60 s)
    mpi_run -np 1 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --replicas 1 --run-dir "$TMP/mixed" --set strategy.timeout_seconds=60 : \
        -np 1 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --replicas 1 --run-dir "$TMP/mixed" --set strategy.timeout_seconds=60 \
        --set "$differing" >"$TMP/out" 2>&1 || code=$?
    [ "$code" -ne 0 ] || { cat "$TMP/out" >&2; fail "exit $code with --set $differing on one worker"; }
    expect_in "$TMP/out" "[rank 1] gputrain: error: strategy: worker 1 trains another config than worker 0 (fingerprint "
    expect_in "$TMP/out" "[rank 0] gputrain: error: strategy: 1 of 2 workers trains another config than worker 0; start every worker"
done
step "... while keys that may differ per host (logging, checkpoint policy) do not stop the job"
mpi_run -np 1 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --replicas 1 --run-dir "$TMP/mixed-ok" --quiet : \
    -np 1 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --replicas 1 --run-dir "$TMP/mixed-ok" --quiet \
    --set logging.progress=none --set checkpoint.keep_last=1 >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; fail "the job failed"; }

step "a text (token windows, views of the ids): mpirun -np 2 trains what 2 threads train; evaluate --json is the same on 1 replica, 3 replicas and mpirun -np 2"
python3 - "$TMP/text.txt" <<'PY'
import sys
words = ["the", "love", "night", "sweet", "my", "lord", "is", "and", "to", "thee"]
state, out = 7, []
while sum(map(len, out)) < 3000:
    state = (state * 1103515245 + 12345) % 2**31
    out.append(words[(state >> 16) % len(words)] + (" " if state % 5 else ".\n"))
open(sys.argv[1], "w").write("".join(out))
PY
tcfg=$TMP/text.yaml
cat >"$tcfg" <<YAML
model:
  input_shape: [8]
  layers:
    - {type: embedding, input_dim: 24, output_dim: 16}
    - {type: positional_embedding}
    - {type: layer_norm}
    - {type: causal_self_attention, heads: 2}
    - {type: dense, units: 24}
loss: {name: sparse_categorical_crossentropy, from_logits: true}
optimizer: {type: adam, learning_rate: 3.0e-3}
data: {path: $TMP/text.txt, format: text, tokenizer: chars, validation_split: 0.25, sequence_stride: 3}
training: {epochs: 2, steps_per_epoch: 10, batch_size: 12, seed: 5}
checkpoint: {save_best: false}
YAML
run_expect 0 fit "$tcfg" --run-dir "$TMP/text-threads" --replicas 2 --device cpu --quiet
mpi_run -np 2 "$GPUTRAIN" fit "$tcfg" "${multi[@]}" --replicas 1 --run-dir "$TMP/text-mpi" --quiet >"$TMP/out" 2>&1 ||
    { cat "$TMP/out" >&2; fail "mpirun -np 2 on a text failed"; }
safetensors close "$TMP/text-mpi/last.safetensors" "$TMP/text-threads/last.safetensors" 1e-5
"$GPUTRAIN" evaluate "$tcfg" --checkpoint "$TMP/text-mpi/last.safetensors" --json --replicas 1 --device cpu \
    >"$TMP/teval-one" || fail "evaluate of the text on 1 replica failed"
"$GPUTRAIN" evaluate "$tcfg" --checkpoint "$TMP/text-mpi/last.safetensors" --json --replicas 3 --device cpu \
    >"$TMP/teval-three" || fail "evaluate of the text on 3 replicas failed"
same_scores "$TMP/teval-one" "$TMP/teval-three"
mpi_run -np 2 "$GPUTRAIN" evaluate "$tcfg" "${multi[@]}" --checkpoint "$TMP/text-mpi/last.safetensors" --json \
    >"$TMP/teval-two" 2>"$TMP/err" || { cat "$TMP/teval-two" "$TMP/err" >&2; fail "evaluate of the text under mpirun failed"; }
same_scores "$TMP/teval-one" "$TMP/teval-two"
cat "$TMP/teval-one"

step "mpirun with a single-process strategy warns"
# Both processes train alone into the same run dir: the run dir's lock lets
# one train and stops the other (or, started later, it finds the first's
# checkpoints), so the job may fail; the warning comes first either way.
mpi_run -np 2 "$GPUTRAIN" fit "$cfg" --set training.epochs=1 --device cpu --run-dir "$TMP/alone-each" >"$TMP/out" 2>&1 || true
expect_in "$TMP/out" "2 processes were launched, but strategy.type is mirrored: each trains alone"
echo "ok"
