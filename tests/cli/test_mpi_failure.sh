#!/usr/bin/env bash
# A failing worker never leaves the others hanging (mpirun -np 2, CPU):
#  - a worker that raises prints its error with its rank and ends the job;
#  - a worker killed mid-epoch (SIGKILL) ends the job, naming the rank;
#  - a worker that stops answering (SIGSTOP) makes the others warn every
#    strategy.stall_warning_seconds which worker has not arrived (the stall
#    watchdog), then give up after strategy.timeout_seconds with an error
#    naming it, and the job ends;
#  - a normal run with a 2 s stall warning prints none.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
require_mpi

cfg=$TMP/synthetic.yaml
write_synthetic_config "$cfg"
timeout_s=4
long=(--set strategy.type=multi_worker_mirrored --set "strategy.timeout_seconds=$timeout_s" --device cpu
      --set strategy.stall_warning_seconds=1
      --replicas 1 --set training.epochs=100000 --set data.synthetic.samples=2000)

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

# Lines in file $1 (0 when it does not exist yet).
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }

# Starts a long mpirun -np ${2:-2} in the background (sets MPI_PID, RANK0, RANK1,
# RANK2 with 3) and waits until the first epoch is in metrics.csv: training is mid-run.
start_long_run() {
    mpi_run -np "${2:-2}" "$GPUTRAIN" fit "$cfg" "${long[@]}" --run-dir "$1" >"$TMP/out" 2>"$TMP/err" &
    MPI_PID=$!
    for _ in $(seq 300); do
        [ "$(lines "$1/metrics.csv")" -ge 2 ] && break
        sleep 0.1
    done
    [ "$(lines "$1/metrics.csv")" -ge 2 ] ||
        { cat "$TMP/out" "$TMP/err" >&2; kill -9 "$MPI_PID"; fail "no epoch finished within 30 s"; }
    RANK0=$(worker_pid "$1" 0)
    RANK1=$(worker_pid "$1" 1)
    RANK2=$([ "${2:-2}" -lt 3 ] || worker_pid "$1" 2)
    if [ -z "$RANK0" ] || [ -z "$RANK1" ]; then kill -9 "$MPI_PID"; fail "cannot find the workers of mpirun $MPI_PID"; fi
    echo "workers: rank 0 pid $RANK0, rank 1 pid $RANK1"
}

# Waits for mpirun; fails unless it ended non-zero within $1 seconds.
expect_job_ends_within() {
    local limit=$1 start=$SECONDS status=0
    while kill -0 "$MPI_PID" 2>/dev/null; do
        if [ $((SECONDS - start)) -gt "$limit" ]; then
            kill -9 "$MPI_PID" "$RANK0" "$RANK1" 2>/dev/null || true
            cat "$TMP/out" "$TMP/err" >&2
            fail "the job was still running $limit s after the failure"
        fi
        sleep 0.2
    done
    wait "$MPI_PID" || status=$?
    echo "mpirun exited $status after $((SECONDS - start)) s"
    cat "$TMP/err"
    [ "$status" -ne 0 ] || fail "mpirun exited 0 although a worker failed"
    # mpirun may return while its last worker is still being reaped.
    for _ in $(seq 50); do
        kill -0 "$RANK0" 2>/dev/null || kill -0 "$RANK1" 2>/dev/null || break
        sleep 0.1
    done
    ps -o pid,stat,etime,cmd -p "$RANK0,$RANK1" || true
    ! kill -0 "$RANK0" 2>/dev/null || fail "worker 0 (pid $RANK0) is still running 5 s after mpirun ended"
    ! kill -0 "$RANK1" 2>/dev/null || fail "worker 1 (pid $RANK1) is still running 5 s after mpirun ended"
}

step "a worker that raises: its error with its rank, and the job ends at once (not after the timeout)"
printf 'not a checkpoint' >"$TMP/bad.safetensors"
start=$SECONDS
status=0
# Only rank 1 resumes from a broken file: it fails inside training, after joining the job.
# shellcheck disable=SC2016
mpi_run -np 2 bash -c 'bad=$1; shift
    if [ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" = 1 ]; then exec "$@" --resume "$bad"; else exec "$@"; fi' \
    worker "$TMP/bad.safetensors" "$GPUTRAIN" fit "$cfg" "${long[@]}" --set strategy.timeout_seconds=120 \
    --run-dir "$TMP/raises" >"$TMP/out" 2>"$TMP/err" || status=$?
cat "$TMP/err"
[ "$status" -ne 0 ] || fail "mpirun exited 0 although worker 1 failed"
[ $((SECONDS - start)) -lt 60 ] || fail "the job took $((SECONDS - start)) s to end"
expect_in "$TMP/err" "[rank 1] gputrain: error: $TMP/bad.safetensors"

step "a worker killed mid-epoch (SIGKILL) ends the job, naming its rank"
start_long_run "$TMP/killed"
kill -9 "$RANK1"
expect_job_ends_within $((timeout_s + 10))
expect_in "$TMP/err" "rank 1"

step "a worker that stops answering (SIGSTOP), of 3: the others name it every second (the stall watchdog), then give up after strategy.timeout_seconds"
start_long_run "$TMP/stopped" 3
kill -STOP "$RANK2"
expect_job_ends_within $((timeout_s + 15))
kill -9 "$RANK2" 2>/dev/null || true
cat "$TMP/out" "$TMP/err" >"$TMP/all"
grep "stall" "$TMP/all" || true
expect_in "$TMP/all" "warning: stall: worker 0 has waited 1 s in all-reduce #"
expect_in "$TMP/all" "[rank 1] warning: stall: worker 1 has waited 1 s in all-reduce #"
# (the two waiting workers may be one collective apart: one completes before the other)
grep -E "stall: worker 0 has waited 1 s in all-reduce #[0-9]+ \(epoch [0-9]+, step [0-9]+\) for worker 2 \(no answer: still computing, stopped, hung or gone\); waiting in collectives: worker 0 \(#[0-9]+\), worker 1 \(#[0-9]+\); the run ends after $timeout_s s \(strategy.timeout_seconds\)$" \
    "$TMP/all" >/dev/null || fail "the stall warning does not name the missing worker, the step and the waiting ones"
warnings=$(grep -c "stall: worker 0 has waited" "$TMP/all")
[ "$warnings" -ge 2 ] || fail "expected a warning every second until the timeout ($timeout_s s), got $warnings"
# The error that ends the run names the missing worker too (one more question at the deadline).
# (worker 0's or worker 1's: the one that reached the collective first times out first and ends the job)
grep -E "gputrain: error: worker [01] got no answer from worker 2 for $timeout_s s in all-reduce #[0-9]+ \(epoch [0-9]+, step [0-9]+; strategy.timeout_seconds\): it is stopped, hung or gone, or cannot be reached \(if it is only slow, raise strategy.timeout_seconds\); waiting as well: worker [01] \(#[0-9]+\)$" \
    "$TMP/all" >/dev/null || fail "the timeout error does not name the missing worker and the waiting one"

step "a normal run with strategy.stall_warning_seconds=2: no stall warning"
mpi_run -np 2 "$GPUTRAIN" fit "$cfg" --set strategy.type=multi_worker_mirrored --set strategy.stall_warning_seconds=2 \
    --device cpu --replicas 1 --run-dir "$TMP/normal" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "the run failed"; }
! grep "warning: stall" "$TMP/out" || fail "a stall warning in a normal run"
echo "ok"
