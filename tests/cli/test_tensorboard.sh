#!/usr/bin/env bash
# logging.tensorboard: a short run writes RUN_DIR/tensorboard/events.out.tfevents.*,
# TensorBoard's own EventAccumulator reads it, and every scalar equals the
# metrics.csv value of its epoch. TensorBoard comes from the .venv-tests of
# scripts/install-deps, else is pip-installed into a venv here; the test is
# skipped when neither works (no package index).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"

python=$(test_python)
if ! "$python" -c "import tensorboard" 2>/dev/null; then
    step "pip install tensorboard into a venv"
    /usr/bin/python3 -m venv --system-site-packages "$TMP/venv" || skip "cannot create a venv"
    timeout 300 "$TMP/venv/bin/pip" install --quiet tensorboard || skip "pip cannot install tensorboard (no package index?)"
    python=$TMP/venv/bin/python
fi

step "fit 3 epochs with logging.tensorboard: true and a validation split"
write_synthetic_config "$TMP/synthetic.yaml"
run_expect 0 fit "$TMP/synthetic.yaml" --run-dir "$TMP/run" --set training.epochs=3 \
    --set data.validation_split=0.2 --set logging.tensorboard=true --quiet
ls "$TMP"/run/tensorboard/events.out.tfevents.* >/dev/null || fail "no event file in $TMP/run/tensorboard"
cat "$TMP/run/metrics.csv"

step "resume for a 4th epoch: a second event file, read as the same run"
run_expect 0 fit "$TMP/synthetic.yaml" --run-dir "$TMP/run" --set training.epochs=4 \
    --set data.validation_split=0.2 --set logging.tensorboard=true --quiet --resume

step "EventAccumulator's scalars equal metrics.csv"
"$python" - "$TMP/run" <<'PY' || fail "TensorBoard's scalars differ from metrics.csv"
import csv, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
run = sys.argv[1]
rows = list(csv.DictReader(open(run + "/metrics.csv")))
acc = EventAccumulator(run + "/tensorboard")
acc.Reload()
tags = sorted(acc.Tags()["scalars"])
expected = sorted(["loss", "accuracy", "val_loss", "val_accuracy", "learning_rate", "samples_per_second"])
assert tags == expected, tags
# metrics.csv rounds: %.6f for loss/accuracy, %.8g for the learning rate, %.1f for samples/s;
# the events hold float32.
tolerance = {"learning_rate": lambda v: 1e-7 * abs(v), "samples_per_second": lambda v: 0.05 + 1e-6 * v}
for tag in tags:
    events = acc.Scalars(tag)
    assert [e.step for e in events] == [int(r["epoch"]) for r in rows] == [1, 2, 3, 4], (tag, events)
    for e, r in zip(events, rows):
        want = float(r[tag])
        tol = tolerance.get(tag, lambda v: 1e-6)(want)
        assert abs(e.value - want) <= tol, (tag, e.step, e.value, want)
print(f"{len(tags)} tags x {len(rows)} epochs match metrics.csv")
PY

step "off by default: no tensorboard folder"
run_expect 0 fit "$TMP/synthetic.yaml" --run-dir "$TMP/plain" --set training.epochs=1 --quiet
[ ! -e "$TMP/plain/tensorboard" ] || fail "tensorboard/ written although logging.tensorboard is false"

step "a value that is not a bool is a config error"
run_expect 2 fit "$TMP/synthetic.yaml" --run-dir "$TMP/bad" --set logging.tensorboard=maybe
expect_in "$TMP/err" "logging.tensorboard"
echo "ok"
