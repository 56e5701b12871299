#!/usr/bin/env bash
# early_stopping end to end: fit stops at the epoch Keras' rule gives for the
# val_loss values it wrote to metrics.csv (recomputed here), writes that
# epoch's epoch-NNN, says why; a --resume of the stopped run trains nothing
# and writes nothing; raising patience trains on; bad keys name their place.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

cfg=$TMP/stopping.yaml
write_synthetic_config "$cfg"
# A high learning rate on few samples: the validation loss turns up within a few epochs.
cat >>"$cfg" <<'YAML'
early_stopping: {patience: 1}
YAML
run=(--set training.epochs=60 --set optimizer.learning_rate=0.05 --set data.synthetic.samples=120
     --set data.validation_split=0.5 --set checkpoint.monitor=val_loss --set checkpoint.every_epochs=100)

# keras_stop CSV PATIENCE: the epoch after which Keras' EarlyStopping stops on the file's val_loss column (0: never).
keras_stop() {
    python3 - "$1" "$2" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
patience, best, wait = int(sys.argv[2]), float("inf"), 0
for row in rows:
    epoch, value = int(row["epoch"]), float(row["val_loss"])
    wait += 1
    if value < best:
        best, wait = value, 0
    elif wait >= patience and epoch > 1:
        print(epoch)
        sys.exit()
print(0)
PY
}

step "fit stops where the rule says"
run_expect 0 fit "$cfg" --run-dir "$TMP/run" "${run[@]}"
rows=$(($(wc -l <"$TMP/run/metrics.csv") - 1))
[ "$rows" -lt 60 ] || fail "trained all 60 epochs; expected an early stop"
[ "$(keras_stop "$TMP/run/metrics.csv" 1)" -eq "$rows" ] || fail "stopped after $rows epochs; Keras' rule says $(keras_stop "$TMP/run/metrics.csv" 1)"
expect_in "$TMP/out" "Epoch $rows: early stopping: val_loss did not improve on "
expect_in "$TMP/out" "for 1 epoch (early_stopping.patience: 1); best.safetensors holds epoch $((rows - 1))'s weights"
expect_in "$TMP/out" "Done: $rows epochs (stopped early)"
epoch_file=$(printf '%s/run/epoch-%03d.safetensors' "$TMP" "$rows")
[ -f "$epoch_file" ] || fail "no $epoch_file (the stopping epoch writes its epoch-NNN)"
[ "$(safetensors metadata "$TMP/run/best.safetensors" epoch)" -eq $((rows - 1)) ] || fail "best.safetensors is not epoch $((rows - 1))"
[ "$(safetensors metadata "$TMP/run/last.safetensors" early_stopping_wait)" = 1 ] || fail "early_stopping_wait is not 1"

step "the stop line names the epoch best.safetensors really holds, also when it is not early stopping's best"
# min_delta 1e300: no epoch after the first improves enough, so early stopping's best is epoch 1; the file's is later.
run_expect 0 fit "$cfg" --run-dir "$TMP/delta" "${run[@]}" --set early_stopping.min_delta=1e300
best_epoch=$(safetensors metadata "$TMP/delta/best.safetensors" epoch)
[ "$best_epoch" -gt 1 ] || fail "best.safetensors is epoch $best_epoch; expected a later one"
expect_in "$TMP/out" "Epoch 2: early stopping: val_loss did not improve on "
expect_in "$TMP/out" " (epoch 1) by more than 1e+300 for 1 epoch (early_stopping.patience: 1); best.safetensors holds epoch $best_epoch's weights (the best by checkpoint.monitor, val_loss min)"

step "a resume of the stopped run trains nothing and writes nothing"
sum_before=$(sha256sum "$TMP/run/last.safetensors" "$TMP/run/metrics.csv")
run_expect 0 fit "$cfg" --run-dir "$TMP/run" "${run[@]}" --resume
expect_in "$TMP/out" "Nothing to do: early stopping ends this run after epoch $rows: val_loss did not improve on"
expect_in "$TMP/out" "to train on, raise early_stopping.patience or pass --set early_stopping=false"
[ "$(sha256sum "$TMP/run/last.safetensors" "$TMP/run/metrics.csv")" = "$sum_before" ] || fail "the resume changed files"

step "... nor does a resume with nothing to train into another folder (no best.safetensors copied there)"
run_expect 0 fit "$cfg" --run-dir "$TMP/two" --set training.epochs=2 --set early_stopping=false -q
[ "$(safetensors metadata "$TMP/two/best.safetensors" epoch)" = 2 ] || fail "epoch 2 is not the best of the short run"
run_expect 0 fit "$cfg" --run-dir "$TMP/elsewhere" --set training.epochs=2 --set early_stopping=false --resume "$TMP/two/last.safetensors"
expect_in "$TMP/out" "Nothing to do: the checkpoint already has 2 of 2 epochs"
[ ! -e "$TMP/elsewhere/best.safetensors" ] || fail "a resume with nothing to train wrote $TMP/elsewhere/best.safetensors"

step "... with more patience it trains on, and stops by the rule with that patience"
run_expect 0 fit "$cfg" --run-dir "$TMP/run" "${run[@]}" --resume --set early_stopping.patience=4
more=$(($(wc -l <"$TMP/run/metrics.csv") - 1))
[ "$more" -gt "$rows" ] || fail "the resume with patience 4 trained no epoch"
want=$(keras_stop "$TMP/run/metrics.csv" 4)
# (0: the rule never stops on these values, so all 60 epochs must have run)
[ "$want" -eq "$more" ] || { [ "$want" -eq 0 ] && [ "$more" -eq 60 ]; } ||
    fail "stopped after $more epochs; Keras' rule with patience 4 says $want"
[ ! -e "$TMP/run/config.previous-1.yaml" ] || fail "more patience kept the earlier config.yaml as a change"
grep -q "config differs" "$TMP/err" && fail "more patience warned of a config change"

step "-q keeps the stop quiet; early_stopping=false trains every epoch"
run_expect 0 fit "$cfg" --run-dir "$TMP/quiet" "${run[@]}" -q
[ ! -s "$TMP/out" ] || { cat "$TMP/out"; fail "-q printed to stdout"; }
run_expect 0 fit "$cfg" --run-dir "$TMP/off" "${run[@]}" --set training.epochs=8 --set early_stopping=false -q
[ "$(wc -l <"$TMP/off/metrics.csv")" -eq 9 ] || fail "early_stopping=false did not train all 8 epochs"
grep -q early_stopping "$TMP/off/config.yaml" && fail "config.yaml of a run without early stopping names it"

step "bad keys name their place"
run_expect 2 fit "$cfg" --run-dir "$TMP/bad" --set early_stopping.patience=-1
expect_in "$TMP/err" "--set early_stopping.patience=-1: early_stopping.patience: expected an integer >= 0, got '-1'"
run_expect 2 fit "$cfg" --run-dir "$TMP/bad" --set metrics=[loss] --set early_stopping.monitor=val_accuracy
expect_in "$TMP/err" "early_stopping.monitor: 'val_accuracy' needs the accuracy metric; add accuracy to metrics or monitor val_loss"
echo "early stopping: ok"
