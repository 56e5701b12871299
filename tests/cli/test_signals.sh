#!/usr/bin/env bash
# SIGINT/SIGTERM: the first signal finishes the step, writes last.safetensors
# and exits 128+signal; --resume then ends with exactly the weights of an
# uninterrupted run. Two signals in a row exit at once and leave the previous
# checkpoint intact.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

cfg=$TMP/synthetic.yaml
write_synthetic_config "$cfg"
# Epochs long enough (12500 steps: 0.5 s on a fast core, seconds on a busy one)
# that a signal sent 0.1 s after epoch 1 ends lands mid-epoch.
# A rate that rises every step (warmup over both epochs): the interrupted
# epoch's metrics row must give the epoch's first, not the rate where it resumed.
long=(--set data.synthetic.samples=100000 --set training.batch_size=8 --set training.epochs=2 --set "model.layers[1].units=1024"
      --set optimizer.schedule.warmup_epochs=2)

# start_fit RUN_DIR [ARGS...]: fit in the background; sets PID.
start_fit() {
    local dir=$1
    shift
    "$GPUTRAIN" fit "$cfg" "${long[@]}" --run-dir "$dir" "$@" >"$TMP/out" 2>"$TMP/err" &
    PID=$!
}

# wait_for FILE: until FILE exists (120 s at most: the machine may be busy;
# times GPUTRAIN_TEST_TIME_SCALE, which scripts/test --sanitize sets, since
# sanitized builds run an epoch several times slower).
wait_for() {
    for _ in $(seq $((1200 * ${GPUTRAIN_TEST_TIME_SCALE:-1}))); do [ -e "$1" ] && return 0; sleep 0.1; done
    fail "$1 did not appear"
}

# finish: waits for PID; sets CODE.
finish() {
    CODE=0
    wait "$PID" || CODE=$?
}

step "uninterrupted reference run"
run_expect 0 fit "$cfg" "${long[@]}" --run-dir "$TMP/straight" --quiet

for sig in INT TERM; do
    step "SIG$sig during epoch 2"
    dir=$TMP/run-$sig
    start_fit "$dir"
    wait_for "$dir/best.safetensors"  # the last file epoch 1 writes
    sleep 0.1
    kill -"$sig" "$PID"
    finish
    want=$([ "$sig" = INT ] && echo 130 || echo 143)
    [ "$CODE" -eq "$want" ] || { cat "$TMP/out" "$TMP/err" >&2; fail "exit $CODE after SIG$sig, expected $want"; }
    expect_in "$TMP/err" "gputrain: stopped: interrupted by SIG$sig at epoch"
    expect_in "$TMP/err" "checkpoint written to $dir/last.safetensors; continue with: gputrain fit $cfg --run-dir $dir --set data.synthetic.samples=100000"
    expect_in "$TMP/err" " --resume"
    python3 - "$dir/last.safetensors" "SIG$sig" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    meta = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))["__metadata__"]
assert meta.get("interrupted_by") == sys.argv[2], meta
print("interrupted at epoch", int(meta["epoch"]) + 1, "step", meta.get("step_in_epoch", "(epoch end)"))
PY

    step "resume after SIG$sig with another batch size: refused (it would skip or repeat samples), nothing written"
    cp "$dir/last.safetensors" "$TMP/before-resume.safetensors"
    run_expect 2 fit "$cfg" "${long[@]}" --run-dir "$dir" --resume --set training.batch_size=10
    expect_in "$TMP/err" "samples: batches of 8, not training.batch_size 10; resume with that batch size to finish this epoch (a resume from the end of an epoch may change it)"
    cmp "$dir/last.safetensors" "$TMP/before-resume.safetensors" || fail "the refused resume changed last.safetensors"

    step "resume after SIG$sig matches the uninterrupted run"
    run_expect 0 fit "$cfg" "${long[@]}" --run-dir "$dir" --resume --set logging.progress=lines
    expect_in "$TMP/out" "Resuming from $dir/last.safetensors"
    # The epoch's line counts its time per step over the steps this run trained.
    resumed_at=$(sed -n 's/^Continuing epoch 2 after step \([0-9]*\)\/12500$/\1/p' "$TMP/out")
    [ -n "$resumed_at" ] || { cat "$TMP/out"; fail "no 'Continuing epoch 2 after step N/12500' line"; }
    expect_in "$TMP/out" "Epoch 2/2 - 12500 steps (from step $((resumed_at + 1))) - "
    safetensors identical "$TMP/straight/last.safetensors" "$dir/last.safetensors"
    # Epochs, accuracy (whole counts) and learning rate alike; the loss within
    # rounding (its float32 sums restart at the interruption).
    python3 - "$TMP/straight/metrics.csv" "$dir/metrics.csv" <<'PY'
import csv, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:])
assert [r["epoch"] for r in a] == [r["epoch"] for r in b] == ["1", "2"], (a, b)
for x, y in zip(a, b):
    assert x["accuracy"] == y["accuracy"] and x["learning_rate"] == y["learning_rate"], (x, y)
    assert abs(float(x["loss"]) - float(y["loss"])) <= 2e-6, (x, y)
assert float(a[1]["learning_rate"]) > 1000 * float(a[0]["learning_rate"]), a
PY
done

step "SIGINT with progress reports far apart: still noticed within 1% of an epoch"
dir=$TMP/run-sparse
start_fit "$dir" --set logging.every_steps=1000000000
wait_for "$dir/best.safetensors"
sleep 0.1
kill -INT "$PID"
finish
[ "$CODE" -eq 130 ] || { cat "$TMP/out" "$TMP/err" >&2; fail "exit $CODE after SIGINT, expected 130"; }
expect_in "$TMP/err" "gputrain: stopped: interrupted by SIGINT at epoch 2, step "

step "two signals (SIGINT, then SIGTERM): immediate exit, previous checkpoint intact"
dir=$TMP/run-twice
start_fit "$dir"
wait_for "$dir/best.safetensors"
sleep 0.1
# Two different signals: two of the same kind may merge into one delivery.
kill -INT "$PID"
kill -TERM "$PID"
finish
# 128 + the signal handled second: which thread takes which signal first is the kernel's choice.
[ "$CODE" -eq 143 ] || [ "$CODE" -eq 130 ] || fail "exit $CODE after SIGINT + SIGTERM, expected 130 or 143"
expect_in "$TMP/err" "second interrupt; exiting without a new checkpoint"
[ ! -e "$dir/epoch-002.safetensors" ] || fail "a checkpoint was written after the second signal"
run_expect 0 evaluate "$cfg" "${long[@]}" --checkpoint "$dir/last.safetensors"
run_expect 0 fit "$cfg" "${long[@]}" --run-dir "$dir" --resume --quiet
echo "ok"
