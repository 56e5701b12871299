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
cat "$TMP/resumed/metrics.csv"

step "same tensors, same metrics"
safetensors identical "$TMP/straight/last.safetensors" "$TMP/resumed/last.safetensors"
# epoch, loss and accuracy of both epochs (seconds differ, of course)
diff <(cut -d, -f1-3 "$TMP/straight/metrics.csv") <(cut -d, -f1-3 "$TMP/resumed/metrics.csv") ||
    fail "metrics.csv differs between the straight and the resumed run"

step "--resume with nothing to resume from -> 2"
run_expect 2 fit "$cfg" --run-dir "$TMP/empty-run" --resume
echo "ok"
