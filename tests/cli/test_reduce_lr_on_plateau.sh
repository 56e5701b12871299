#!/usr/bin/env bash
# reduce_lr_on_plateau end to end: the learning_rate column of metrics.csv
# follows Keras' ReduceLROnPlateau rule over the val_loss column (recomputed
# here), each cut is logged, a resume in the middle continues the same rates
# and weights, and bad keys name their place.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

cfg=$TMP/plateau.yaml
write_synthetic_config "$cfg"
cat >>"$cfg" <<'YAML'
reduce_lr_on_plateau: {factor: 0.5, patience: 1, cooldown: 2, min_lr: 0.004}
YAML
run=(--set training.epochs=16 --set optimizer.learning_rate=0.2 --set data.synthetic.samples=120
     --set data.validation_split=0.5)

# keras_rates CSV FACTOR PATIENCE COOLDOWN MIN_LR MIN_DELTA: the rate each epoch should have trained with, one per line.
keras_rates() {
    python3 - "$@" <<'PY'
import csv, sys
path, factor, patience, cooldown, min_lr, min_delta = sys.argv[1], *map(float, sys.argv[2:])
rows = list(csv.DictReader(open(path)))
rate, best, wait, cool = float(rows[0]["learning_rate"]), float("inf"), 0, 0
for row in rows:
    print(f"{rate:.6g}")
    value = float(row["val_loss"])
    if cool > 0:
        cool, wait = cool - 1, 0
    if value < best - min_delta:
        best, wait = value, 0
    elif cool == 0:
        wait += 1
        if wait >= patience and rate > min_lr:
            rate, cool, wait = max(rate * factor, min_lr), int(cooldown), 0
PY
}
# rates CSV: the learning_rate column, %.6g.
rates() { python3 -c 'import csv,sys; [print("%.6g" % float(r["learning_rate"])) for r in csv.DictReader(open(sys.argv[1]))]' "$1"; }

step "the rates follow the rule"
run_expect 0 fit "$cfg" --run-dir "$TMP/run" "${run[@]}"
[ "$(rates "$TMP/run/metrics.csv")" = "$(keras_rates "$TMP/run/metrics.csv" 0.5 1 2 0.004 1e-4)" ] ||
    { paste <(rates "$TMP/run/metrics.csv") <(keras_rates "$TMP/run/metrics.csv" 0.5 1 2 0.004 1e-4); fail "rates differ from Keras' rule"; }
cuts=$(grep -c "reduce_lr_on_plateau: val_loss did not improve on " "$TMP/out" || true)
[ "$cuts" -ge 2 ] || { cat "$TMP/out"; fail "expected at least 2 cuts, got $cuts"; }
expect_in "$TMP/out" "(reduce_lr_on_plateau.patience: 1); learning rate 0.2 -> 0.1"
[ "$(rates "$TMP/run/metrics.csv" | sort -g | head -1)" = 0.004 ] || fail "the rate never reached min_lr 0.004"

step "a resume in the middle continues the same rates and weights"
run_expect 0 fit "$cfg" --run-dir "$TMP/half" "${run[@]}" --set training.epochs=7 -q
run_expect 0 fit "$cfg" --run-dir "$TMP/half" "${run[@]}" --resume -q
[ "$(rates "$TMP/half/metrics.csv")" = "$(rates "$TMP/run/metrics.csv")" ] || fail "the resumed run's rates differ"
safetensors identical "$TMP/half/last.safetensors" "$TMP/run/last.safetensors"

step "bad keys name their place"
run_expect 2 fit "$cfg" --run-dir "$TMP/bad" --set reduce_lr_on_plateau.factor=1.5
expect_in "$TMP/err" "reduce_lr_on_plateau.factor: must be below 1 in float32 (at most 0.9999999)"
run_expect 2 fit "$cfg" --run-dir "$TMP/bad" --set optimizer.schedule.type=step_decay
expect_in "$TMP/err" "reduce_lr_on_plateau: works on a constant learning rate, and optimizer.schedule.type is step_decay"
echo "reduce_lr_on_plateau: ok"
