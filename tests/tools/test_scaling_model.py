#!/usr/bin/env python3
"""Checks scripts/scaling_model.py (docs/scaling.md) against hand computations."""
import importlib.util
import io
import contextlib
import sys
from pathlib import Path

root = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("scaling_model", root / "scripts" / "scaling_model.py")
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)


def close(a, b, rel=1e-12):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def check(cond, what):
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)
    print("ok: " + what)


# Ring all-reduce: 2 (N-1)/N * bytes / busBW + latency; nothing on one rank.
check(close(m.allreduce_seconds(1e9, 2, 100.0, 0.0), 0.01), "2 ranks, 1 GB at 100 GB/s busBW: 10 ms")
check(close(m.allreduce_seconds(1e9, 8, 100.0, 1e-5), 2 * 7 / 8 * 0.01 + 1e-5), "8 ranks: 2*7/8 of that plus the latency")
check(m.allreduce_seconds(1e9, 1, 100.0, 1e-5) == 0.0, "one rank: no all-reduce")

# W2's parameters counted by hand.
w2 = 784 * 4096 + 4096 + 2 * (4096 * 4096 + 4096) + 4096 * 10 + 10
args = m.parse_args([])
check(m.step(m.WORKLOADS["w2"]["layers"], 4096, 1, 360.0, args)["params"] == w2, "W2 has %d parameters" % w2)

# Compute: forward 2*rows*in*out per layer; backward dW everywhere and dX except the first layer.
layers = [(10, 20), (20, 5)]
tflops = 1e-12  # 1 FLOP/s: seconds == FLOP
fwd = m.forward_seconds(layers, 3, tflops)
check(close(fwd, 2 * 3 * (10 * 20 + 20 * 5)), "forward FLOP of a 10-20-5 MLP at 3 rows")
bwd = sum(s for s, _ in m.layer_costs(layers, 3, tflops))
check(close(bwd, 2 * 3 * 10 * 20 + 2 * 2 * 3 * 20 * 5), "backward FLOP: the first layer has no dX")

# Overlap: without buckets the whole all-reduce is exposed; with buckets never more.
no_buckets = m.parse_args(["--bucket-mb", "0"])
s0 = m.step(m.WORKLOADS["w2"]["layers"], 4096, 8, 360.0, no_buckets)
check(close(s0["exposed"], s0["comm"]), "bucket_mb 0: exposed == all-reduce time")
s25 = m.step(m.WORKLOADS["w2"]["layers"], 4096, 8, 360.0, args)
check(s25["exposed"] < s0["exposed"], "25 MiB buckets hide part of the all-reduce")
check(s25["exposed"] >= 0, "exposed time is never negative")

# The printed table: one GPU is 100% efficient.
out = io.StringIO()
with contextlib.redirect_stdout(out):
    m.main(["--markdown"])
check("| 1 GPU | 4096 |" in out.getvalue() and "| 100% |" in out.getvalue(), "the table starts at 100% for one GPU")
