#!/usr/bin/env bash
# The stall watchdog's questions between workers over MPI (the PeerChannel
# that NCCL runs across workers use): mpirun -np 3 of mpi_peers_check, whose
# workers 0 and 1 wait in collective #5 while worker 2 is behind (answers: at
# #4) or silent (answers nothing). Workers 0 and 1 must name it every second.
# Skipped (77) without mpirun.
set -euo pipefail
check=$1
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun is not installed"; exit 77; }
extra=()
if mpirun --version 2>&1 | grep -q "Open MPI"; then
    extra=(--oversubscribe)
    [ "$(id -u)" -ne 0 ] || extra+=(--allow-run-as-root)
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for mode in behind silent; do
    echo "--- worker 2 $mode"
    timeout 120 mpirun "${extra[@]}" -np 3 "$check" "$mode" >"$out" 2>&1 || { cat "$out"; echo "FAIL: mpirun exited non-zero"; exit 1; }
    cat "$out"
    if [ "$mode" = behind ]; then
        missing="worker 2 (at #4: still computing or hung)"
    else
        missing="worker 2 (no answer: stopped, hung or gone)"
    fi
    for w in 0 1; do
        other=$((1 - w))
        line="[rank $w] warning: stall: every replica of worker $w (replica $w (cpu)) has waited 1 s in an all-reduce #5 (outside a training step); not arrived: $missing; arrived: worker $other (#5)"
        grep -qxF "$line" "$out" || { echo "FAIL: no line: $line"; exit 1; }
        n=$(grep -c "^\[rank $w\] warning: stall: every replica of worker $w" "$out")
        [ "$n" -ge 2 ] || { echo "FAIL: worker $w warned $n times in 5 s (every second expected)"; exit 1; }
    done
    ! grep -q "^\[rank 2\] warning" "$out" || { echo "FAIL: worker 2 warned, its replica is not waiting"; exit 1; }
done
echo ok
