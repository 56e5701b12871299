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
run_expect 1 fit "$cfg" --run-dir "$TMP/never-made" --resume "$TMP/straight/last.safetensors" --set "model.layers[1].units=9"
[ ! -e "$TMP/never-made" ] || fail "a failed resume left $TMP/never-made: $(ls -A "$TMP/never-made")"

step "--resume with nothing to resume from -> 2"
run_expect 2 fit "$cfg" --run-dir "$TMP/empty-run" --resume

step "a fresh fit into a run dir with checkpoints -> 2, nothing touched; --overwrite starts afresh"
before=$(cd "$TMP/resumed" && sha256sum ./*.safetensors config.yaml metrics.csv)
run_expect 2 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/resumed" --quiet
expect_in "$TMP/err" "gputrain: error: '$TMP/resumed' holds the checkpoints of an earlier run (best.safetensors, epoch-001.safetensors, epoch-002.safetensors and 2 more); continue that run with --resume, start afresh there with --overwrite (deletes them), or give another --run-dir"
[ "$(cd "$TMP/resumed" && sha256sum ./*.safetensors config.yaml metrics.csv)" = "$before" ] ||
    fail "the refused fit changed the run dir"
run_expect 0 fit "$cfg" --set training.epochs=1 --run-dir "$TMP/resumed" --overwrite
expect_in "$TMP/out" "--overwrite: deleted the earlier run's 5 checkpoints in $TMP/resumed"
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

step "a closed stdout pipe does not stop training"
"$GPUTRAIN" fit "$cfg" --run-dir "$TMP/piped" --set training.epochs=3 --set logging.progress=lines \
    --set logging.every_steps=1 2>"$TMP/err" | head -1 >/dev/null
[ -e "$TMP/piped/epoch-003.safetensors" ] || { cat "$TMP/err" >&2; fail "training stopped when stdout closed"; }
echo "ok"
