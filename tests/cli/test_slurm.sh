#!/usr/bin/env bash
# multi_worker_mirrored under Slurm, for real: a single-node Slurm cluster
# started here (munged, slurmctld and slurmd on localhost, a generated
# slurm.conf in the test's folder, every daemon stopped at the end), then
#  - srun -n 2 --mpi=pmix trains the weights of one process with 2 replicas;
#  - the sbatch script of docs/multi-node.md (srun inside) does too;
#  - srun -n 2 without an MPI plugin is an error naming --mpi=pmix, not two
#    runs training alone into one run dir.
# Every srun and sbatch is bounded (timeout 120), so a cluster that takes no
# job fails the test instead of hanging it. Skipped (77) without Slurm (apt-get install slurm-wlm munge), without root
# (the daemons run as root here), or when the cluster does not come up.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
require_mpi
for tool in munged slurmctld slurmd srun sbatch sinfo; do
    command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed (apt-get install slurm-wlm munge)"
done
[ "$(id -u)" -eq 0 ] || skip "the test's Slurm daemons run as root"

S=$TMP/slurm
mkdir -p "$S/state" "$S/spool"
chmod 700 "$TMP" "$S"
host=$(hostname -s)
port=$((20000 + $$ % 20000))
pids=()
stop_cluster() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
    done
    [ ! -f "$S/munged.pid" ] || kill "$(cat "$S/munged.pid")" 2>/dev/null || true
    # A daemon's last files may still be landing (slurmstepd): try again, then leave it.
    for _ in 1 2 3 4 5; do rm -rf "$TMP" 2>/dev/null && break; sleep 0.5; done
    return 0
}
trap stop_cluster EXIT

dd if=/dev/urandom of="$S/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$S/munge.key"
munged --force --key-file="$S/munge.key" --socket="$S/munge.sock" --pid-file="$S/munged.pid" \
    --log-file="$S/munged.log" --seed-file="$S/munged.seed" || skip "munged does not start: $(tail -n 2 "$S/munged.log")"
cat >"$S/slurm.conf" <<EOF
ClusterName=gputraintest
SlurmctldHost=$host(127.0.0.1)
AuthType=auth/munge
AuthInfo=socket=$S/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$S/slurm.conf
slurmctld -D -f "$SLURM_CONF" >"$S/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$host" -f "$SLURM_CONF" >"$S/slurmd.out" 2>&1 &
pids+=($!)
up=
for _ in $(seq 100); do
    if sinfo -h -o "%t" 2>/dev/null | grep -qx "idle"; then up=yes; break; fi
    sleep 0.2
done
[ -n "$up" ] || skip "the Slurm cluster did not come up: $(tail -n 3 "$S/slurmctld.log" "$S/slurmd.log" 2>&1 | tr '\n' ' ')"
sinfo

cfg=$TMP/synthetic.yaml
write_synthetic_config "$cfg"
multi=(--set strategy.type=multi_worker_mirrored --device cpu --replicas 1)

step "the reference: one process, 2 replicas"
run_expect 0 fit "$cfg" --run-dir "$TMP/threads" --replicas 2 --device cpu --quiet

step "srun -n 2 --mpi=pmix: 2 workers x 1 replica train the same weights"
timeout 120 srun -n 2 --mpi=pmix "$GPUTRAIN" fit "$cfg" "${multi[@]}" --run-dir "$TMP/srun" >"$TMP/out" 2>"$TMP/err" ||
    { cat "$TMP/out" "$TMP/err" >&2; fail "srun -n 2 failed"; }
cat "$TMP/out"
expect_in "$TMP/out" "multi_worker_mirrored: 2 workers x 1 replica = 2 replicas (CPU threads), global batch 32 = 16 per replica"
[ "$(grep -c "^Done: 2 epochs" "$TMP/out")" -eq 1 ] || fail "expected one 'Done:' line (rank 0 only)"
safetensors close "$TMP/srun/last.safetensors" "$TMP/threads/last.safetensors" 1e-5

step "sbatch: the script of docs/multi-node.md, srun inside, 2 tasks"
cat >"$TMP/train.sbatch" <<EOF
#!/bin/bash
#SBATCH --job-name=gputrain
#SBATCH --ntasks=2
#SBATCH --output=$TMP/sbatch.out
srun --mpi=pmix "$GPUTRAIN" fit "$cfg" ${multi[*]} --run-dir "$TMP/sbatch"
EOF
timeout 120 sbatch --wait "$TMP/train.sbatch" >"$TMP/out" 2>&1 || { cat "$TMP/out" "$TMP/sbatch.out" >&2; fail "sbatch --wait failed"; }
cat "$TMP/sbatch.out"
safetensors close "$TMP/sbatch/last.safetensors" "$TMP/threads/last.safetensors" 1e-5

step "srun -n 2 without an MPI plugin: an error naming --mpi=pmix, and nothing trained"
code=0
timeout 120 srun -n 2 "$GPUTRAIN" fit "$cfg" "${multi[@]}" --run-dir "$TMP/nompi" >"$TMP/out" 2>"$TMP/err" || code=$?
cat "$TMP/err"
[ "$code" -ne 0 ] || fail "srun -n 2 without --mpi exited 0"
expect_in "$TMP/err" "gputrain: error: strategy.type: multi_worker_mirrored: srun started 2 tasks, but without an MPI plugin (no PMIx or PMI in their environment), so each would train alone; run srun --mpi=pmix (or set MpiDefault=pmix in slurm.conf)"
[ ! -f "$TMP/nompi/last.safetensors" ] || fail "a task trained alone"
echo "ok"
