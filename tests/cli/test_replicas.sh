#!/usr/bin/env bash
# Global batch semantics: 3 CPU replicas (global batch 32 = 11+11+10, last
# batch 20 = 7+7+6) train the same weights as 1 replica, up to float
# reduction order.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

cfg=$TMP/synthetic.yaml
write_synthetic_config "$cfg"

step "1 replica"
run_expect 0 fit "$cfg" --run-dir "$TMP/one" --replicas 1
expect_in "$TMP/out" "1 replica"

step "3 replicas"
run_expect 0 fit "$cfg" --run-dir "$TMP/three" --replicas 3 --device cpu
expect_in "$TMP/out" "3 replicas"

step "weights agree"
safetensors close "$TMP/three/last.safetensors" "$TMP/one/last.safetensors" 1e-4
echo "ok"
