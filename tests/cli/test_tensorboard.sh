#!/usr/bin/env bash
# logging.tensorboard: a short run writes RUN_DIR/tensorboard/events.out.tfevents.*,
# TensorBoard's own EventAccumulator reads it, and every scalar equals the
# metrics.csv value of its epoch; with logging.every_steps the batch/* scalars in
# RUN_DIR/tensorboard/steps come at the expected global steps, and a resume from
# an older checkpoint replaces (not doubles) what came after it. TensorBoard comes from the .venv-tests of
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

step "logging.every_steps=10: batch/* scalars in tensorboard/steps at each report's global step"
# 400 training samples in batches of 32: 13 steps an epoch, reported at steps 10 and 13.
every=(--set training.epochs=3 --set data.validation_split=0.2 --set logging.tensorboard=true
    --set logging.every_steps=10 --set optimizer.schedule.type=exponential_decay
    --set optimizer.schedule.decay_rate=0.5 --set optimizer.schedule.decay_steps=5 --quiet)
run_expect 0 fit "$TMP/synthetic.yaml" --run-dir "$TMP/steps" "${every[@]}"
cp "$TMP/steps/metrics.csv" "$TMP/first-metrics.csv"

step "resume from epoch 2's checkpoint: TensorBoard replaces the first run's epoch 3, it does not double it"
run_expect 0 fit "$TMP/synthetic.yaml" --run-dir "$TMP/steps" "${every[@]}" --resume "$TMP/steps/epoch-002.safetensors"
[ "$(ls "$TMP"/steps/tensorboard/steps/events.out.tfevents.* | wc -l)" -eq 2 ] || fail "expected 2 step event files"

"$python" - "$TMP/steps" "$TMP/first-metrics.csv" <<'PY' || fail "the batch/* scalars are not the expected ones"
import csv, math, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
run, first = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(run + "/metrics.csv")))
first_rows = list(csv.DictReader(open(first)))
assert [int(r["epoch"]) for r in rows] == [1, 2, 3], rows
# Resume is bit-identical, so the resumed epoch 3 equals the first run's.
assert [r["loss"] for r in rows] == [r["loss"] for r in first_rows], (rows, first_rows)

steps = EventAccumulator(run + "/tensorboard/steps")
steps.Reload()
tags = sorted(steps.Tags()["scalars"])
assert tags == ["batch/accuracy", "batch/learning_rate", "batch/loss", "batch/samples_per_second"], tags
expected_steps = [10, 13, 23, 26, 36, 39]
for tag in tags:
    got = [e.step for e in steps.Scalars(tag)]
    assert got == expected_steps, (tag, got)
loss = {e.step: e.value for e in steps.Scalars("batch/loss")}
accuracy = {e.step: e.value for e in steps.Scalars("batch/accuracy")}
# An epoch's last report is its running average over the whole epoch: metrics.csv's value (%.6f there, float32 here).
for epoch, r in enumerate(rows, start=1):
    assert abs(loss[13 * epoch] - float(r["loss"])) <= 1e-6, (epoch, loss[13 * epoch], r["loss"])
    assert abs(accuracy[13 * epoch] - float(r["accuracy"])) <= 1e-6, (epoch, accuracy[13 * epoch], r["accuracy"])
# Mid-epoch values are averages over fewer batches: finite, and not the epoch's value.
for s in (10, 23, 36):
    assert math.isfinite(loss[s]) and 0 <= accuracy[s] <= 1 and loss[s] != loss[s + 3], (s, loss)
# The learning rate of the report's last step (global step s-1): 0.01 * 0.5^((s-1)/5).
for e in steps.Scalars("batch/learning_rate"):
    want = 0.01 * 0.5 ** ((e.step - 1) / 5)
    assert abs(e.value - want) <= 1e-6 * want, (e.step, e.value, want)
for e in steps.Scalars("batch/samples_per_second"):
    assert math.isfinite(e.value) and e.value > 0, (e.step, e.value)

epochs = EventAccumulator(run + "/tensorboard")
epochs.Reload()
assert "batch/loss" not in epochs.Tags()["scalars"], epochs.Tags()
for tag in epochs.Tags()["scalars"]:
    assert [e.step for e in epochs.Scalars(tag)] == [1, 2, 3], (tag, epochs.Scalars(tag))
assert abs(epochs.Scalars("loss")[2].value - float(rows[2]["loss"])) <= 1e-6
print(f"{len(tags)} batch tags x {len(expected_steps)} reports; epoch tags at 1, 2, 3 after the resume")
PY

step "logging.every_steps must be an integer >= 0"
run_expect 2 fit "$TMP/synthetic.yaml" --run-dir "$TMP/bad" --set logging.every_steps=-1
expect_in "$TMP/err" "logging.every_steps: expected an integer >= 0, got '-1'"

step "off by default: no tensorboard folder"
run_expect 0 fit "$TMP/synthetic.yaml" --run-dir "$TMP/plain" --set training.epochs=1 --quiet
[ ! -e "$TMP/plain/tensorboard" ] || fail "tensorboard/ written although logging.tensorboard is false"

step "a value that is not a bool is a config error"
run_expect 2 fit "$TMP/synthetic.yaml" --run-dir "$TMP/bad" --set logging.tensorboard=maybe
expect_in "$TMP/err" "logging.tensorboard"
echo "ok"
