#!/usr/bin/env bash
# SIGKILL at random moments (often in the middle of a checkpoint write: the
# epochs here are short and each writes three files) never leaves a damaged
# checkpoint: after every kill the newest checkpoint loads and --resume goes on.
# A file-size limit (as on a full disk) fails the write with a clear message and
# leaves nothing half-written.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

cfg=$TMP/synthetic.yaml
write_synthetic_config "$cfg"
dir=$TMP/run
# ~30 ms epochs of 2 MB checkpoints (a 512-wide layer), many epochs.
args=(--set training.epochs=400 --set "model.layers[1].units=512" --set checkpoint.keep_last=2 --run-dir "$dir" --quiet)

RANDOM=7  # the same kill times on every run of the test
for round in $(seq 12); do
    resume=()
    [ -e "$dir/last.safetensors" ] && resume=(--resume)
    "$GPUTRAIN" fit "$cfg" "${args[@]}" "${resume[@]}" >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    sleep "0.$((RANDOM % 9 + 1))$((RANDOM % 10))"
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    if [ -e "$dir/last.safetensors" ]; then
        epoch=$(python3 "$HERE/safetensors_check.py" metadata "$dir/last.safetensors" epoch)
        echo "round $round: killed; last.safetensors is complete at epoch $epoch"
        run_expect 0 evaluate "$cfg" --set "model.layers[1].units=512" --checkpoint "$dir/last.safetensors"
    else
        echo "round $round: killed before the first checkpoint"
    fi
done

step "resume runs to the end"
run_expect 0 fit "$cfg" "${args[@]}" --resume
[ "$(python3 "$HERE/safetensors_check.py" metadata "$dir/last.safetensors" epoch)" = 400 ] || fail "did not reach epoch 400"
for f in "$dir"/*; do
    case "$f" in *.tmp-*) fail "temporary file left behind: $f" ;; esac
done
[ "$(grep -c '' "$dir/metrics.csv")" -eq 401 ] || fail "metrics.csv should have a header and 400 rows: $(grep -c '' "$dir/metrics.csv") lines"

step "a write that fails (file size limit, like a full disk) stops with a clear message"
full=$TMP/full
if (ulimit -f 256; trap '' XFSZ; exec "$GPUTRAIN" fit "$cfg" --set "model.layers[1].units=2048" --run-dir "$full" --quiet) >"$TMP/out" 2>"$TMP/err"; then
    fail "fit succeeded although checkpoints could not be written"
fi
expect_in "$TMP/err" "gputrain: error: cannot write checkpoint '$full/"
expect_in "$TMP/err" "File too large"
for f in "$full"/*; do
    case "$f" in *.tmp-*) fail "temporary file left behind: $f" ;; esac
done
echo "ok"
