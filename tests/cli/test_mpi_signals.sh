#!/usr/bin/env bash
# A signal under mpirun -np 2 (CPU workers): every worker stops after the same
# step, rank 0 writes last.safetensors, all finalize MPI and exit 128 + signal
# (no MPI_Abort), mpirun exits 143, and --resume under mpirun ends with the
# weights of an uninterrupted run. The signal goes to every worker (as Slurm's
# scancel does) or to one worker only. SIGTERM to mpirun itself is not tested:
# Open MPI 4.1 passes it on but SIGKILLs the workers 1 s later
# (odls_base_sigkill_timeout) and exits 1; see docs/multi-node.md.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
require_mpi

cfg=$TMP/synthetic.yaml
write_synthetic_config "$cfg"
# Epochs long enough (~1-3 s each, even after speed-ups) that a signal lands mid-epoch.
long=(--set strategy.type=multi_worker_mirrored --device cpu --replicas 1 --set data.synthetic.samples=60000
      --set training.batch_size=8 --set training.epochs=2 --set "model.layers[1].units=256")

# The pid of the gputrain worker with rank $2 whose command line names run dir $1.
worker_pid() {
    local p
    for p in $(pgrep -f -- "--run-dir $1"); do
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
            echo "$p"
            return
        fi
    done
}

# wait_for FILE: until FILE exists (120 s at most: the machine may be busy).
wait_for() {
    for _ in $(seq 1200); do [ -e "$1" ] && return 0; sleep 0.1; done
    fail "$1 did not appear"
}

step "uninterrupted reference: mpirun -np 2"
mpi_run -np 2 "$GPUTRAIN" fit "$cfg" "${long[@]}" --run-dir "$TMP/straight" --quiet >"$TMP/out" 2>&1 ||
    { cat "$TMP/out" >&2; fail "the uninterrupted run failed"; }

for target in every-worker rank1; do
    step "SIGTERM to $target during epoch 2"
    dir=$TMP/run-$target
    mpi_run -np 2 "$GPUTRAIN" fit "$cfg" "${long[@]}" --run-dir "$dir" >"$TMP/out" 2>"$TMP/err" &
    MPI_PID=$!
    wait_for "$dir/best.safetensors"  # the last file epoch 1 writes
    sleep 0.2
    RANK0=$(worker_pid "$dir" 0)
    RANK1=$(worker_pid "$dir" 1)
    if [ -z "$RANK0" ] || [ -z "$RANK1" ]; then kill -9 "$MPI_PID"; fail "cannot find the workers of mpirun $MPI_PID"; fi
    if [ "$target" = every-worker ]; then kill -TERM "$RANK0" "$RANK1"; else kill -TERM "$RANK1"; fi
    CODE=0
    wait "$MPI_PID" || CODE=$?
    echo "mpirun exited $CODE"
    cat "$TMP/err"
    [ "$CODE" -eq 143 ] || { cat "$TMP/out" >&2; fail "mpirun exited $CODE after SIGTERM to $target, expected 143"; }
    expect_in "$TMP/err" "gputrain: stopped: interrupted by SIGTERM at epoch 2"
    expect_in "$TMP/err" "checkpoint written to $dir/last.safetensors; continue with: gputrain fit $cfg --run-dir $dir"
    ! grep -q "MPI_ABORT" "$TMP/err" || fail "the job was aborted instead of ending cleanly"
    ! grep -q "gputrain: error" "$TMP/err" || fail "a worker reported an error"
    [ "$(grep -c "gputrain: stopped" "$TMP/err")" -eq 1 ] || fail "expected one 'stopped' line (rank 0 only)"
    python3 - "$dir/last.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    meta = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))["__metadata__"]
assert meta.get("interrupted_by") == "SIGTERM", meta
print("interrupted at epoch", int(meta["epoch"]) + 1, "step", meta.get("step_in_epoch", "(epoch end)"))
PY

    step "mpirun --resume after SIGTERM to $target matches the uninterrupted run"
    mpi_run -np 2 "$GPUTRAIN" fit "$cfg" "${long[@]}" --run-dir "$dir" --resume >"$TMP/out" 2>&1 ||
        { cat "$TMP/out" >&2; fail "mpirun --resume failed"; }
    expect_in "$TMP/out" "Resuming from $dir/last.safetensors"
    safetensors close "$TMP/straight/last.safetensors" "$dir/last.safetensors" 1e-6
done
echo "ok"
