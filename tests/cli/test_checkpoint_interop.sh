#!/usr/bin/env bash
# Interoperable checkpoints: after a short run of the reference MLP, Python's
# safetensors reads the checkpoint, NumPy runs the forward pass, and the
# probabilities match 'gputrain predict' within 1e-5 (tests/cli/numpy_forward.py).
# Skipped when NumPy or safetensors cannot be imported (scripts/install-deps
# installs them) or the data set is missing.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

python=$(test_python)
"$python" -c "import numpy, safetensors.numpy" 2>/dev/null ||
    skip "$python cannot import numpy and safetensors (run scripts/install-deps)"
found=
for dir in ${GPUTRAIN_DATA:+"$GPUTRAIN_DATA/fashion-mnist"} datasets/fashion-mnist /usr/share/datasets/fashion-mnist; do
    if compgen -G "$dir/t10k-images-idx3-ubyte*" >/dev/null; then found=$dir; break; fi
done
[ -n "$found" ] || skip "Fashion-MNIST not found (apt-get install dataset-fashion-mnist)"
config=configs/fashion_mnist_mlp.yaml

step "fit the reference MLP: 1 epoch on 2000 samples"
run_expect 0 fit "$config" --set training.epochs=1 --set data.limit=2000 --run-dir "$TMP/run" --quiet

step "1000 test images as uint8 NPY (numpy.save)"
"$python" - "$(compgen -G "$found/t10k-images-idx3-ubyte*" | head -n 1)" "$TMP/images.npy" <<'PY'
import gzip, sys
import numpy as np
path, out = sys.argv[1:3]
raw = (gzip.open if path.endswith(".gz") else open)(path, "rb").read()
np.save(out, np.frombuffer(raw, dtype=np.uint8, offset=16)[: 1000 * 784].reshape(1000, 28, 28))
PY

step "gputrain predict"
run_expect 0 predict "$config" --checkpoint "$TMP/run/last.safetensors" --input "$TMP/images.npy" \
    --output "$TMP/predictions.npy" --device cpu

step "safetensors + NumPy forward pass"
scale=$(sed -n 's/^ *scale: *\([0-9.e-]*\).*/\1/p' "$config")
[ -n "$scale" ] || fail "no data.scale in $config"
"$python" "$HERE/numpy_forward.py" "$TMP/run/last.safetensors" "$TMP/images.npy" "$scale" "$TMP/predictions.npy" ||
    fail "the NumPy forward pass does not match gputrain predict"
echo "ok"
