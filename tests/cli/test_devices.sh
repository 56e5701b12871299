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

step "devices --json"
run_expect 0 devices --json
cat "$TMP/out"
python3 - "$TMP/out" <<'PY' || fail "devices --json is not the expected JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d["cpu"], dict) and d["cpu"]["cores"] >= 1, d
assert isinstance(d["gpus"], list), d
assert d["training_device"] == ("gpu" if d["gpus"] else "cpu"), d
PY

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
