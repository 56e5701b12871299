#!/usr/bin/env bash
# scripts/plot: two short runs (one with a validation split) drawn into one PNG:
# the file has the PNG signature, the size the script asks for and real content.
# Skipped when /usr/bin/python3 has no matplotlib.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
/usr/bin/python3 -c "import matplotlib" 2>/dev/null || skip "no matplotlib (apt-get install python3-matplotlib)"

write_synthetic_config "$TMP/synthetic.yaml"
step "two runs of 3 epochs"
run_expect 0 fit "$TMP/synthetic.yaml" --run-dir "$TMP/a" --set training.epochs=3 --quiet
run_expect 0 fit "$TMP/synthetic.yaml" --run-dir "$TMP/b" --set training.epochs=3 --set data.validation_split=0.2 --quiet

step "scripts/plot -o curves.png a b"
scripts/plot -o "$TMP/curves.png" "$TMP/a" "$TMP/b" || fail "scripts/plot failed"
/usr/bin/python3 - "$TMP/curves.png" <<'PY' || fail "the PNG is not as expected"
import os, struct, sys
blob = open(sys.argv[1], "rb").read()
assert blob[:8] == b"\x89PNG\r\n\x1a\n", blob[:8]
assert blob[12:16] == b"IHDR", blob[12:16]
width, height = struct.unpack(">II", blob[16:24])
assert (width, height) == (1100, 420), (width, height)   # figsize 11 x 4.2 at 100 dpi
# Two panels of curves, axes, legends: far more than an empty canvas (about 5 KB).
assert len(blob) > 20000, len(blob)
print(f"{width}x{height}, {len(blob)} bytes")
PY

step "a folder without metrics.csv is an error"
if scripts/plot -o "$TMP/x.png" "$TMP/none" 2>"$TMP/err"; then fail "plot accepted a missing run"; fi
expect_in "$TMP/err" "plot: $TMP/none/metrics.csv not found"

step "a metrics file given itself; an output without an extension gets .png"
cp "$TMP/a/metrics.csv" "$TMP/elsewhere.csv"
scripts/plot -o "$TMP/by-file" "$TMP/elsewhere.csv" "$TMP/b" >"$TMP/out" || fail "plot of a metrics file failed"
expect_in "$TMP/out" "plot: wrote $TMP/by-file.png"
[ -s "$TMP/by-file.png" ] || fail "no $TMP/by-file.png"

step "bad output names and files that are not metrics: one line each, no traceback"
printf 'garbage\nmore\n' >"$TMP/junk.csv"
for args in "-o $TMP/nodir/x.png $TMP/a" "-o $TMP/x.xyz $TMP/a" "-o $TMP/x.png $TMP/junk.csv"; do
    # shellcheck disable=SC2086
    if scripts/plot $args 2>"$TMP/err" >/dev/null; then fail "plot $args succeeded"; fi
    cat "$TMP/err"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "plot $args: more than one line: $(cat "$TMP/err")"
    if grep -q Traceback "$TMP/err"; then fail "plot $args: a traceback"; fi
done
expect_in "$TMP/err" "plot: $TMP/junk.csv: not a metrics file of 'gputrain fit'"
echo "ok"
