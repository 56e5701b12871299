# shellcheck shell=bash
# Shared helpers for the end-to-end tests; sourced by test_*.sh.
# Usage in a test: source "$(dirname "$0")/lib.sh" "$@"   (sets GPUTRAIN, TMP, HERE)
# A test exits 0 on success, 1 on failure (with a FAIL line), 77 to be skipped.

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 PATH/TO/gputrain" >&2
    exit 2
fi
GPUTRAIN=$1
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gputrain-cli.XXXXXX")
# Caches (decoded image folders, token ids of texts) go with the test, never to ~/.cache.
export GPUTRAIN_CACHE=$TMP/cache
trap 'rm -rf "$TMP"' EXIT

# Prints the step a test is at, so a failure's log reads as a story.
step() { echo "--- $*"; }

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

skip() {
    echo "SKIP: $*"
    exit 77
}

# run_expect CODE ARGS...: runs gputrain ARGS, expects exit status CODE; keeps
# the output in $TMP/out and $TMP/err for the checks that follow.
run_expect() {
    local want=$1 got=0
    shift
    echo "+ gputrain $*"
    "$GPUTRAIN" "$@" >"$TMP/out" 2>"$TMP/err" || got=$?
    if [ "$got" -ne "$want" ]; then
        echo "stdout:" >&2; cat "$TMP/out" >&2
        echo "stderr:" >&2; cat "$TMP/err" >&2
        fail "gputrain $* exited $got, expected $want"
    fi
}

# expect_in FILE TEXT: FILE contains TEXT (fixed string).
expect_in() {
    grep -qF -- "$2" "$1" || { echo "--- $1:" >&2; cat "$1" >&2; fail "expected '$2' in $(basename "$1")"; }
}

# expect_one_line_error CODE EXPECTED ARGS...: gputrain ARGS exits CODE with
# exactly one line on stderr, which contains EXPECTED.
expect_one_line_error() {
    local code=$1 expected=$2
    shift 2
    run_expect "$code" "$@"
    expect_in "$TMP/err" "$expected"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "more than one line on stderr for: $*"
}

# safetensors FILE|A B ...: the safetensors checks in safetensors_check.py.
safetensors() { python3 "$HERE/safetensors_check.py" "$@"; }

# same_scores A B: two `evaluate --json` outputs (other lines, e.g. mpirun's
# echo, skipped) agree: the same samples, checkpoint and accuracy (counts, so
# exact), losses within 2e-6 (the per-batch sums are float: another split of
# the batches over replicas or workers rounds the 6th decimal otherwise).
same_scores() {
    python3 - "$1" "$2" <<'PY' || fail "evaluate --json: $1 and $2 differ"
import json, sys
a, b = ([json.loads(l) for l in open(p) if l.startswith("{")] for p in sys.argv[1:3])
assert len(a) == 1 and len(b) == 1, f"expected one JSON object in each, got {len(a)} and {len(b)}"
a, b = a[0], b[0]
assert a.keys() == b.keys(), (a, b)
for k in a:
    if k == "loss":
        assert abs(a[k] - b[k]) <= 2e-6, (k, a[k], b[k])
    else:
        assert a[k] == b[k], (k, a[k], b[k])
print("same scores:", json.dumps(a))
PY
}

# A small model on synthetic data: trains in well under a second.
write_synthetic_config() {
    cat >"$1" <<'YAML'
# Synthetic 8x8 inputs in 4 classes; a tiny MLP. Used by the cli tests.
model:
  input_shape: [8, 8]
  layers:
    - {type: flatten}
    - {type: dense, units: 16, activation: relu}
    - {type: dense, units: 4, activation: softmax}
loss: sparse_categorical_crossentropy
optimizer: {type: adam, learning_rate: 0.01}
data:
  dataset: synthetic
  synthetic: {samples: 500, classes: 4, seed: 7}
training: {epochs: 2, batch_size: 32, shuffle: true, seed: 3}
checkpoint: {monitor: loss}
logging: {progress: none}
YAML
}

# mpi_run ARGS...: mpirun, with the flags Open MPI needs here (running as root,
# more processes than cores). Skips the test when no MPI launcher is installed
# or this gputrain was built without MPI.
mpi_run() {
    local extra=()
    if mpirun --version 2>&1 | grep -q "Open MPI"; then
        extra=(--oversubscribe)
        [ "$(id -u)" -ne 0 ] || extra+=(--allow-run-as-root)
    fi
    echo "+ mpirun ${extra[*]} $*"
    mpirun "${extra[@]}" "$@"
}

require_mpi() {
    command -v mpirun >/dev/null 2>&1 || skip "mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)"
    "$GPUTRAIN" --version >/dev/null
    # A build without MPI says so when a launcher starts multi_worker_mirrored.
    local probe=$TMP/mpi-probe.yaml
    write_synthetic_config "$probe"
    if ! mpi_run -np 1 "$GPUTRAIN" fit "$probe" --set strategy.type=multi_worker_mirrored --set training.epochs=1 \
            --set data.limit=32 --run-dir "$TMP/mpi-probe" --device cpu --quiet >"$TMP/probe.out" 2>&1; then
        grep -q "built without MPI" "$TMP/probe.out" && skip "this gputrain was built without MPI (meson -Dmpi=enabled)"
        cat "$TMP/probe.out" >&2
        fail "mpirun -np 1 could not run gputrain"
    fi
}

# The Python for tests that need packages beyond the standard library (NumPy,
# safetensors, tensorboard): $GPUTRAIN_TEST_PYTHON, else the venv that
# scripts/install-deps makes (.venv-tests, with the system site packages), else /usr/bin/python3.
test_python() {
    if [ -n "${GPUTRAIN_TEST_PYTHON:-}" ]; then
        echo "$GPUTRAIN_TEST_PYTHON"
    elif [ -x .venv-tests/bin/python ]; then
        echo "$PWD/.venv-tests/bin/python"
    else
        echo /usr/bin/python3
    fi
}
