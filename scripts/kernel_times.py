#!/usr/bin/env python3
"""Where a training step's GPU time goes, kernel by kernel, from Nsight Compute.

    ncu --clock-control none --metrics gpu__time_duration.sum --csv --log-file K.csv \\
        --launch-count N gputrain bench CONFIG --device gpu ...
    scripts/kernel_times.py K.csv [--steps-from adam]

Reads ncu's CSV (the default "details" page, one row per kernel and metric, or
--page raw, one column per metric after a row of units), adds up each
kernel's gpu__time_duration by its short name (no namespaces, template
arguments or parameters), and prints a Markdown table per step: calls, time,
and share of all kernel time. The number of steps is the number of calls of
the kernel whose short name contains --steps-from (the optimizer runs one
kernel a step, last; default "adam"), or 1 when none matches. Kernels up to
its first call (set-up and the warm-up step) are left out when it ran twice
or more, and kernels after its last call (a step cut short by ncu's
--launch-count) always. ncu runs kernels one
at a time, so the sum is the step's kernel time without overlap or launch gaps.
Used by scripts/gpu-check on a GPU machine; the product itself needs no Python.
"""
import argparse
import csv
import re
import sys

SCALE_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}


def short_name(name):
    """'void a::(anonymous namespace)::k<float, 4>(const float *, int)' -> 'k'."""
    name = name.strip()
    if name.startswith("void "):
        name = name[5:]
    # Drop the parameter list, then template arguments (nested), then namespaces.
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and not name.startswith("(anonymous", i):
            cut = i
            break
    name = name[:cut]
    while "<" in name:
        name = re.sub(r"<[^<>]*>", "", name)
    name = name.replace("(anonymous namespace)::", "")
    return name.split("::")[-1] or name


def number(text):
    return float(text.replace(",", "").strip())


def read_durations(lines):
    """[(kernel name, microseconds)] from ncu's CSV lines (other lines ignored)."""
    rows = [line for line in lines if line.startswith('"')]
    if not rows:
        return []
    reader = csv.reader(rows)
    header = next(reader)
    out = []
    if "Metric Name" in header:  # details page
        k, mn, mu, mv = (header.index(c) for c in ("Kernel Name", "Metric Name", "Metric Unit", "Metric Value"))
        for row in reader:
            if len(row) > mv and row[mn] == "gpu__time_duration.sum":
                out.append((row[k], number(row[mv]) * SCALE_US[row[mu]]))
        return out
    k, col = header.index("Kernel Name"), header.index("gpu__time_duration.sum")
    units = next(reader)  # raw page: the second row gives each column's unit
    scale = SCALE_US[units[col]]
    for row in reader:
        if len(row) > col and row[col].strip():
            out.append((row[k], number(row[col]) * scale))
    return out


def table(durations, steps_from):
    # Whole steps only: a step ends with its optimizer call. What ran up to the
    # first call (set-up and the first, warm-up step) is left out when there
    # are two calls or more, and what ran after the last one (a step ncu
    # stopped profiling in the middle of) always.
    ends = [i for i, (name, _) in enumerate(durations) if steps_from in short_name(name).lower()]
    first = ends[0] + 1 if len(ends) >= 2 else 0
    if ends:
        durations = durations[first : ends[-1] + 1]
    totals, calls = {}, {}
    for name, us in durations:
        s = short_name(name)
        totals[s] = totals.get(s, 0.0) + us
        calls[s] = calls.get(s, 0) + 1
    steps = sum(c for s, c in calls.items() if steps_from in s.lower()) or 1
    all_us = sum(totals.values())
    skipped = "after the first (set-up and warm-up left out)" if first else "from the start (set-up included)"
    lines = [
        f"{len(durations)} kernels, {steps} step(s) {skipped}, each ending with *{steps_from}*; "
        f"kernel time per step {all_us / steps:.1f} us",
        "",
        "| kernel | calls per step | us per step | share |",
        "| --- | --- | --- | --- |",
    ]
    for s in sorted(totals, key=totals.get, reverse=True):
        lines.append(f"| {s} | {calls[s] / steps:.2f} | {totals[s] / steps:.1f} | {100 * totals[s] / all_us:.1f}% |")
    return "\n".join(lines)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv", nargs="+", help="files holding ncu's CSV output (--csv, with --log-file or captured stdout); lines that are not CSV are skipped")
    p.add_argument("--steps-from", default="adam", help="the kernel run once a step (default: adam)")
    args = p.parse_args(argv)
    durations = []
    for path in args.csv:
        with open(path, encoding="utf-8", errors="replace") as f:
            durations += read_durations(f.read().splitlines())
    if not durations:
        print(f"kernel_times: {' '.join(args.csv)}: no gpu__time_duration rows (did ncu profile anything?)",
              file=sys.stderr)
        return 1
    print(table(durations, args.steps_from.lower()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
