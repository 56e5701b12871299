#!/usr/bin/env bash
# Resuming is exact: 2 epochs in one go and 1 epoch + --resume to 2 end with
# byte-identical weights and optimizer state.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

cfg=$TMP/synthetic.yaml
write_synthetic_config "$cfg"

step "2 epochs in one run"
run_expect 0 fit "$cfg" --set training.epochs=2 --run-dir "$TMP/straight" --quiet

step "1 epoch, then --resume to 2"
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/resumed" --quiet
run_expect 0 fit "$cfg" --set training.epochs=2 --run-dir "$TMP/resumed" --resume
expect_in "$TMP/out" "Resuming from"
expect_in "$TMP/out" "Done: 2 epochs (1 in this run)"
cat "$TMP/resumed/metrics.csv"

step "same tensors, same metrics"
safetensors identical "$TMP/straight/last.safetensors" "$TMP/resumed/last.safetensors"
# epoch, loss and accuracy of both epochs (seconds differ, of course)
diff <(cut -d, -f1-3 "$TMP/straight/metrics.csv") <(cut -d, -f1-3 "$TMP/resumed/metrics.csv") ||
    fail "metrics.csv differs between the straight and the resumed run"

step "raising epochs keeps config.yaml; another batch size keeps the earlier one and names the change"
[ ! -e "$TMP/resumed/config.previous-1.yaml" ] || fail "raising training.epochs kept a previous config"
run_expect 0 fit "$cfg" --set training.epochs=3 --set training.batch_size=16 --run-dir "$TMP/resumed" --resume
cat "$TMP/out" "$TMP/err" >"$TMP/both"
expect_in "$TMP/both" "the config differs from the one this run dir was trained with (training.batch_size: "
expect_in "$TMP/both" "config.previous-1.yaml"
# Once: the checkpoint's stored config says the same as the run dir's config.yaml.
[ "$(grep -c "warning" "$TMP/err")" -eq 1 ] || fail "expected one warning, got: $(cat "$TMP/err")"
grep -q "batch_size: 16" "$TMP/resumed/config.yaml" || fail "config.yaml does not hold the new batch size"
grep -q "batch_size: 16" "$TMP/resumed/config.previous-1.yaml" && fail "config.previous-1.yaml holds the new batch size"
grep -q "batch_size:" "$TMP/resumed/config.previous-1.yaml" || fail "config.previous-1.yaml has no batch size"

step "--resume from another run dir's checkpoint names what changed against the checkpoint's config; -q hides the info lines"
run_expect 0 fit "$cfg" --set training.epochs=4 --set optimizer.learning_rate=0.002 --run-dir "$TMP/elsewhere" \
    --resume "$TMP/straight/last.safetensors" --quiet
expect_in "$TMP/err" "warning: $TMP/straight/last.safetensors was written with a different config (run_dir: $TMP/straight -> $TMP/elsewhere; optimizer.learning_rate: 0.01 -> 0.002); continuing with the current config"
if grep -q "Resuming from" "$TMP/out"; then fail "--quiet printed: $(cat "$TMP/out")"; fi

step "a --resume that fails into a new run dir leaves no folder behind"
run_expect 1 fit "$cfg" --run-dir "$TMP/never-made" --resume "$TMP/straight/last.safetensors" --set optimizer.type=rmsprop
expect_in "$TMP/err" "holds no such optimizer state"
[ ! -e "$TMP/never-made" ] || fail "a failed resume left $TMP/never-made: $(ls -A "$TMP/never-made")"
# Another model: not a resume of that run; the error points to model.init_from, before anything is made.
run_expect 2 fit "$cfg" --run-dir "$TMP/never-made" --resume "$TMP/straight/last.safetensors" --set "model.layers[1].units=9"
expect_in "$TMP/err" "that checkpoint is another run's (model.layers[1].units: 16 -> 9)"
[ ! -e "$TMP/never-made" ] || fail "a refused resume left $TMP/never-made: $(ls -A "$TMP/never-made")"

step "--resume with nothing to resume from -> 2"
run_expect 2 fit "$cfg" --run-dir "$TMP/empty-run" --resume

step "a fresh fit into a run dir with checkpoints -> 2, nothing touched; --overwrite starts afresh"
before=$(cd "$TMP/resumed" && sha256sum ./*.safetensors config.yaml metrics.csv)
run_expect 2 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/resumed" --quiet
expect_in "$TMP/err" "gputrain: error: '$TMP/resumed' holds the checkpoints of an earlier run (best.safetensors, epoch-001.safetensors, epoch-002.safetensors and 2 more); continue that run with --resume, start afresh there with --overwrite (deletes them), or give another --run-dir"
[ "$(cd "$TMP/resumed" && sha256sum ./*.safetensors config.yaml metrics.csv)" = "$before" ] ||
    fail "the refused fit changed the run dir"
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/resumed" --overwrite
expect_in "$TMP/out" "--overwrite: deleted the earlier run's 5 checkpoints and 1 TensorBoard or config file in $TMP/resumed"
# Only this run's epoch is left, and it is a fresh run's: the same as epoch 1 of a run from scratch.
[ "$(cd "$TMP/resumed" && ls ./*.safetensors | tr '\n' ' ')" = "./best.safetensors ./epoch-001.safetensors ./last.safetensors " ] ||
    fail "after --overwrite: $(ls "$TMP/resumed")"
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/fresh" --quiet
safetensors identical "$TMP/fresh/last.safetensors" "$TMP/resumed/last.safetensors"
run_expect 2 fit "$cfg" --run-dir "$TMP/resumed" --overwrite --resume
expect_in "$TMP/err" "--resume excludes --overwrite"

step "--overwrite deletes nothing when the run then fails to start (here: no data)"
before=$(cd "$TMP/resumed" && sha256sum ./*.safetensors)
run_expect 2 fit "$cfg" --run-dir "$TMP/resumed" --overwrite --set data.dataset= --set data.path="$TMP/no-data"
[ "$(cd "$TMP/resumed" && sha256sum ./*.safetensors)" = "$before" ] || fail "--overwrite deleted checkpoints of a run that never started"

step "a second fit into a run dir in use stops at once; the first goes on"
long=(--set data.synthetic.samples=200000 --set training.batch_size=8 --set training.epochs=1000)  # stopped below
"$GPUTRAIN" fit "$cfg" "${long[@]}" --run-dir "$TMP/busy" --quiet >"$TMP/first.out" 2>&1 &
first=$!
for _ in $(seq 600); do [ -e "$TMP/busy/config.yaml" ] && break; sleep 0.1; done  # written once it holds the lock
run_expect 1 fit "$cfg" --run-dir "$TMP/busy" --overwrite --quiet
expect_in "$TMP/err" "gputrain: error: '$TMP/busy' is in use by another gputrain fit (it holds $TMP/busy/.gputrain.lock); wait for that run to end or give another --run-dir"
kill -TERM "$first"
code=0
wait "$first" || code=$?
[ "$code" -eq 143 ] || { cat "$TMP/first.out" >&2; fail "the first run exited $code after SIGTERM, expected 143"; }

step "exponential_decay after warmup, resumed with another batch size, decays from where warmup really ended"
decay=(--set optimizer.schedule.type=exponential_decay --set optimizer.schedule.warmup_epochs=1
       --set optimizer.schedule.decay_rate=0.5 --set optimizer.schedule.decay_steps=10)
run_expect 0 fit "$cfg" "${decay[@]}" --set training.epochs=2 --run-dir "$TMP/decay" --quiet
run_expect 0 fit "$cfg" "${decay[@]}" --set training.epochs=4 --set training.batch_size=64 --run-dir "$TMP/decay" \
    --resume --quiet
python3 - "$TMP/decay" <<'PY' || fail "the decay did not start where warmup ended: $(cat "$TMP/decay/metrics.csv")"
import csv, json, struct, sys
def meta(path):
    with open(path, "rb") as f:
        return json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))["__metadata__"]
two, four = meta(sys.argv[1] + "/epoch-002.safetensors"), meta(sys.argv[1] + "/epoch-004.safetensors")
warmup_end = int(two["global_step"]) // 2           # one epoch at batch 32
later = (int(four["global_step"]) - int(two["global_step"])) // 2  # steps of an epoch at batch 64
assert two["steps_per_epoch"] == f"0:{warmup_end}", two["steps_per_epoch"]
assert four["steps_per_epoch"] == f"0:{warmup_end},2:{later}", four["steps_per_epoch"]
assert later < warmup_end, (later, warmup_end)
rows = list(csv.DictReader(open(sys.argv[1] + "/metrics.csv")))
for epoch, first_step in ((2, warmup_end), (3, 2 * warmup_end), (4, 2 * warmup_end + later)):
    want = 0.01 * 0.5 ** ((first_step - warmup_end) / 10)
    got = float(rows[epoch - 1]["learning_rate"])
    assert abs(got - want) <= 1e-6 * want, (epoch, got, want)
print("epochs 3 and 4 start at", rows[2]["learning_rate"], rows[3]["learning_rate"])
PY

step "a config that is not UTF-8 (a Latin-1 run dir) is kept whole in its checkpoints; evaluate names what changed"
latin1_run=$TMP/caf$'\xe9'
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$latin1_run" --quiet
python3 - "$latin1_run/last.safetensors" "$latin1_run/config.yaml" <<'PY' || fail "config_bytes is not the config's bytes"
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    meta = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))["__metadata__"]
assert "config" not in meta, meta
stored = meta["config_bytes"].encode("latin-1")
written = b"".join(l for l in open(sys.argv[2], "rb").readlines() if not l.startswith(b"#"))
assert stored.rstrip(b"\n") == written.rstrip(b"\n") and b"caf\xe9" in stored, (stored, written)
PY
run_expect 0 evaluate "$cfg" --run-dir "$latin1_run" --set "model.layers[1].activation=tanh"
expect_in "$TMP/err" "(model.layers[1].activation: relu -> tanh)"

step "a best value of NaN (a diverged epoch) is no best: the resumed run's first epoch becomes best.safetensors"
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/nan-best" --quiet
printf nan >"$TMP/nan.txt"
safetensors set-metadata "$TMP/nan-best/last.safetensors" "$TMP/nan-best.safetensors" best_value "$TMP/nan.txt"
run_expect 0 fit "$cfg" --set training.epochs=2 --run-dir "$TMP/nan-best" --resume "$TMP/nan-best.safetensors" --quiet
[ "$(safetensors metadata "$TMP/nan-best/best.safetensors" epoch)" = 2 ] || fail "best.safetensors is not epoch 2's"

step "best.safetensors after resumes is the best row of metrics.csv (from an older epoch, save_best turned on, another folder)"
osc=(--set optimizer.type=sgd --set optimizer.learning_rate=0.5 --set data.validation_split=0.25 --set checkpoint.keep_last=0
     --set checkpoint.monitor=val_loss --set training.seed=5 --set data.synthetic.samples=400)
# val_loss is best at epoch 6 of 6, and at epoch 3 of the first 5: a resume from epoch 3 finds a later best in the folder.
# best_is_best DIR: best.safetensors' epoch has the lowest val_loss of DIR/metrics.csv.
best_is_best() {
    python3 - "$1" <<'PY' || fail "best.safetensors of $1 is not its best epoch: $(cat "$1/metrics.csv")"
import csv, json, struct, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/metrics.csv")))
with open(sys.argv[1] + "/best.safetensors", "rb") as f:
    meta = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))["__metadata__"]
best = min(rows, key=lambda r: float(r["val_loss"]))
assert meta["epoch"] == best["epoch"], (meta["epoch"], best["epoch"])
print("best.safetensors is epoch", meta["epoch"], "of", len(rows))
PY
}
run_expect 0 fit "$cfg" "${osc[@]}" --set training.epochs=6 --run-dir "$TMP/older" --quiet
best_is_best "$TMP/older"
for from in 1 2 3; do
    cp -r "$TMP/older" "$TMP/older-$from"
    run_expect 0 fit "$cfg" "${osc[@]}" --set training.epochs=5 --run-dir "$TMP/older-$from" \
        --resume "$TMP/older-$from/epoch-00$from.safetensors"
    best_is_best "$TMP/older-$from"
done
run_expect 0 fit "$cfg" "${osc[@]}" --set training.epochs=2 --set checkpoint.save_best=false --run-dir "$TMP/nobest" --quiet
[ ! -e "$TMP/nobest/best.safetensors" ] || fail "save_best: false wrote best.safetensors"
run_expect 0 fit "$cfg" "${osc[@]}" --set training.epochs=4 --run-dir "$TMP/nobest" --resume --quiet
best_is_best "$TMP/nobest"
run_expect 0 fit "$cfg" "${osc[@]}" --set training.epochs=3 --run-dir "$TMP/elsewhere-best" \
    --resume "$TMP/older/epoch-002.safetensors" --quiet
[ -e "$TMP/elsewhere-best/best.safetensors" ] || fail "a resume into another folder wrote no best.safetensors"

step "--overwrite whose metrics file cannot be written deletes nothing"
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/keep" --quiet
run_expect 1 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/keep" --overwrite --set logging.metrics_file=no/such/m.csv
expect_in "$TMP/err" "cannot write metrics file '$TMP/keep/no/such/m.csv'"
for f in last.safetensors best.safetensors epoch-001.safetensors; do
    [ -e "$TMP/keep/$f" ] || fail "the failed --overwrite deleted $f"
done

run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/keep" --set logging.tensorboard=true --overwrite --quiet
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/keep" --overwrite
expect_in "$TMP/out" "--overwrite: deleted the earlier run's 3 checkpoints and 2 TensorBoard or config files in $TMP/keep"
if compgen -G "$TMP/keep/tensorboard/events.out.tfevents.*" >/dev/null; then fail "--overwrite kept TensorBoard events"; fi

step "checkpoint.dir naming the run dir another way is the run dir, not a second lock"
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/same" --set "checkpoint.dir=$TMP/same/" --quiet
run_expect 0 fit "$cfg" --set training.epochs=2 --run-dir "$TMP/same/" --set "checkpoint.dir=$TMP/./same" --resume --quiet

step "metrics.csv on resume: a torn last row is dropped with a warning; a file without the header is moved aside"
run_expect 0 fit "$cfg" --set training.epochs=2 --run-dir "$TMP/torn" --quiet
truncate -s -1 "$TMP/torn/metrics.csv"
run_expect 0 fit "$cfg" --set training.epochs=3 --run-dir "$TMP/torn" --resume --quiet
expect_in "$TMP/err" "warning: metrics file '$TMP/torn/metrics.csv': the row of epoch 2 was cut short"
[ "$(cut -d, -f1 "$TMP/torn/metrics.csv" | tr '\n' ' ')" = "epoch 1 3 " ] || fail "rows: $(cat "$TMP/torn/metrics.csv")"
: >"$TMP/torn/metrics.csv"
run_expect 0 fit "$cfg" --set training.epochs=4 --run-dir "$TMP/torn" --resume --quiet
expect_in "$TMP/err" "warning: metrics file '$TMP/torn/metrics.csv' does not start with gputrain's header (it is empty): kept as $TMP/torn/metrics.csv.unreadable, and a new one started with this run's epochs"
[ "$(head -1 "$TMP/torn/metrics.csv")" = "epoch,loss,accuracy,val_loss,val_accuracy,learning_rate,seconds,samples_per_second" ] ||
    fail "no header: $(cat "$TMP/torn/metrics.csv")"

step "a fresh run replacing a metrics file outside its run dir (another run's) says so"
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/shared-a" --set "logging.metrics_file=$TMP/shared.csv" --quiet
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/shared-b" --set "logging.metrics_file=$TMP/shared.csv" --quiet
expect_in "$TMP/err" "warning: metrics file '$TMP/shared.csv' held 1 rows of an earlier run: replaced by this run's (a fresh fit starts it anew; give each run its own logging.metrics_file)"

step "a metrics file that is a device is written, never read or moved aside (/dev/zero never ends)"
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/device-log" --set logging.metrics_file=/dev/null --quiet
run_expect 0 fit "$cfg" --set training.epochs=2 --run-dir "$TMP/device-log" --set logging.metrics_file=/dev/zero --resume --quiet
[ -c /dev/zero ] || fail "/dev/zero is no longer a device"

step "a resume with nothing left to train rewrites nothing"
cp "$TMP/torn/config.yaml" "$TMP/config-before.yaml"
run_expect 0 fit "$cfg" --set training.epochs=2 --run-dir "$TMP/torn" --resume
expect_in "$TMP/out" "Nothing to do"
cmp "$TMP/torn/config.yaml" "$TMP/config-before.yaml" || fail "a resume with nothing to do rewrote config.yaml"

step "a closed stdout: the console output goes nowhere, not into the lock file"
"$GPUTRAIN" fit "$cfg" --set training.epochs=1 --run-dir "$TMP/closed" >&- 2>"$TMP/err" || fail "fit with stdout closed failed: $(cat "$TMP/err")"
[ ! -s "$TMP/closed/.gputrain.lock" ] || fail "the lock file holds: $(head -c 200 "$TMP/closed/.gputrain.lock")"

step "a closed stdout pipe does not stop training"
"$GPUTRAIN" fit "$cfg" --run-dir "$TMP/piped" --set training.epochs=3 --set logging.progress=lines \
    --set logging.every_steps=1 2>"$TMP/err" | head -1 >/dev/null
[ -e "$TMP/piped/epoch-003.safetensors" ] || { cat "$TMP/err" >&2; fail "training stopped when stdout closed"; }
echo "ok"
