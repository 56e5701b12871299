#!/usr/bin/env bash
# 'devices' lists the GPUs or says there is none, then the CPU; --json is one
# JSON object; --topology runs. Also --version and --help.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

step "devices"
run_expect 0 devices
cat "$TMP/out"
grep -q '^No GPU' "$TMP/out" || grep -q '^GPU ' "$TMP/out" || fail "neither 'No GPU' nor a GPU table"
grep -q '^CPU ' "$TMP/out" || fail "no CPU line"
grep -Eq '^CPU convolutions: (oneDNN [0-9.]+ where it has a fast kernel|im2col \+ OpenBLAS \(this build has no oneDNN)' "$TMP/out" ||
    fail "no 'CPU convolutions:' line saying oneDNN or im2col"
grep -Eq "^CPU GEMMs: (oneDNN|OpenBLAS), small shapes by gputrain's own kernel" "$TMP/out" ||
    fail "no 'CPU GEMMs:' line"
GPUTRAIN_CPU_CONV=im2col run_expect 0 devices
grep -q '^CPU convolutions: im2col + OpenBLAS' "$TMP/out" || fail "GPUTRAIN_CPU_CONV=im2col not shown by devices"
GPUTRAIN_CPU_GEMM=openblas run_expect 0 devices
grep -q "^CPU GEMMs: OpenBLAS (GPUTRAIN_CPU_GEMM=openblas), small shapes by gputrain's own kernel" "$TMP/out" ||
    fail "GPUTRAIN_CPU_GEMM=openblas not shown by devices"

step "devices --json"
run_expect 0 devices --json
cat "$TMP/out"
python3 - "$TMP/out" <<'PY' || fail "devices --json is not the expected JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d["cpu"], dict) and d["cpu"]["cores"] >= 1, d
assert isinstance(d["gpus"], list), d
assert isinstance(d["cuda_built"], bool), d
assert d["training_device"] == ("gpu" if d["gpus"] and d["cuda_built"] else "cpu"), d
PY
cuda_built=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["cuda_built"])' "$TMP/out")

step "devices and fit agree on whether this build has CUDA"
write_synthetic_config "$TMP/synthetic.yaml"
fit_code=0
"$GPUTRAIN" fit "$TMP/synthetic.yaml" --device gpu --set training.epochs=1 --set data.limit=64 \
  --run-dir "$TMP/run" --quiet >"$TMP/fit.out" 2>&1 || fit_code=$?
cat "$TMP/fit.out"
if grep -q "built without CUDA" "$TMP/fit.out"; then
    [ "$fit_code" -eq 2 ] || fail "fit --device gpu without CUDA exited $fit_code, expected 2"
    [ "$cuda_built" = False ] || fail "fit says the build has no CUDA, devices --json says cuda_built $cuda_built"
    run_expect 0 devices
    grep -q '^GPU ' "$TMP/out" && line="Note: " || line="No GPU: "
    expect_in "$TMP/out" "${line}this gputrain was built without CUDA (rebuild with meson -Dcuda=enabled); training will use the CPU"
else
    [ "$cuda_built" = True ] || fail "devices --json says cuda_built $cuda_built, but fit does not say the build lacks CUDA"
fi

# The libcuda.so.1 stand-in of the device unit tests (two H200s), when built:
# GPUs in sight, and only a build with CUDA trains on them.
fake_driver=$(dirname "$GPUTRAIN")/tests/unit/device
if [ -e "$fake_driver/libcuda.so.1" ]; then
    step "devices with GPUs in sight (fake driver): training_device follows the build"
    LD_LIBRARY_PATH=$fake_driver run_expect 0 devices --json
    python3 - "$TMP/out" "$cuda_built" <<'PY' || fail "devices --json with the fake driver"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["gpus"]) == 2, d
assert d["training_device"] == ("gpu" if sys.argv[2] == "True" else "cpu"), d
PY
    LD_LIBRARY_PATH=$fake_driver run_expect 0 devices
    if [ "$cuda_built" = False ]; then
        expect_in "$TMP/out" "Note: this gputrain was built without CUDA (rebuild with meson -Dcuda=enabled); training will use the CPU, not these GPUs."
    fi
fi

step "devices --topology"
run_expect 0 devices --topology
cat "$TMP/out"
grep -q '^No GPU' "$TMP/out" || [ -s "$TMP/out" ] || fail "devices --topology printed nothing"

step "--version"
run_expect 0 --version
grep -Eq '^gputrain [0-9]+\.[0-9]+\.[0-9]+' "$TMP/out" || fail "--version printed '$(cat "$TMP/out")'"

step "--help"
run_expect 0 --help
for cmd in fit evaluate devices; do expect_in "$TMP/out" "$cmd"; done
echo "ok"
