#!/usr/bin/env python3
"""Step-time model of data-parallel training on N GPUs (docs/scaling.md).

    scripts/scaling_model.py [--workload w2|w1] [--tflops T] [--busbw-nvlink G]
                             [--busbw-hosts G] [--grad-bytes 4|2] [--markdown]

A step is forward, backward, the gradient all-reduce and the optimizer. The
all-reduce runs in buckets on its own stream: a bucket starts when backward has
produced the gradients of its layers, buckets go one after another, and only
the part that outlasts backward adds to the step. Ring all-reduce time is
2 (N-1)/N * bytes / busBW (NCCL's definition of bus bandwidth) plus a latency
per bucket. Every input is a flag so that figures measured by scripts/gpu-check
replace the datasheet leads used by default.
"""
import argparse
import sys

# Dense layers (inputs, outputs) of the two MLP workloads of issue #6.
WORKLOADS = {
    "w2": {"layers": [(784, 4096), (4096, 4096), (4096, 4096), (4096, 10)], "batch": 4096},
    "w1": {"layers": [(784, 128), (128, 10)], "batch": 32},
}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="w2")
    p.add_argument("--batch", type=int, help="global batch for strong scaling / per-GPU batch for weak (default: the workload's)")
    p.add_argument("--tflops", type=float, default=392.0,
                   help="sustained GEMM rate per GPU in TFLOP/s, the step's other passes folded in (default 392: "
                        "W2's measured H200 step less Adam, docs/scaling.md)")
    p.add_argument("--memory-tbs", type=float, default=3.0,
                   help="memory bandwidth in TB/s that the optimizer reaches (default 3.0, gputrain's Adam on an H200)")
    p.add_argument("--grad-bytes", type=int, choices=(2, 4), default=4, help="bytes per gradient value all-reduced (4 fp32, 2 bf16)")
    p.add_argument("--bucket-mb", type=float, default=25.0, help="gradient bucket size in MiB (0: one all-reduce after backward)")
    p.add_argument("--busbw-nvlink", type=float, default=360.0, help="NCCL all-reduce bus bandwidth in GB/s within one host of 8 GPUs (NVLink)")
    p.add_argument("--busbw-hosts", type=float, default=[350.0, 45.0], nargs="+",
                   help="bus bandwidth in GB/s across hosts: one figure per network to compare (default: 8x400G rails, one 400G NIC)")
    p.add_argument("--latency-us", type=float, default=30.0, help="fixed cost of one all-reduce call in microseconds")
    p.add_argument("--markdown", action="store_true", help="print Markdown tables")
    return p.parse_args(argv)


def layer_costs(layers, rows, tflops):
    """Per layer, last to first (backward order): (backward seconds, gradient values)."""
    out = []
    for k, (fan_in, fan_out) in enumerate(reversed(layers)):
        first_layer = k == len(layers) - 1
        gemms = 1 if first_layer else 2  # dW, and dX except for the first layer (no one needs the input's gradient)
        flops = gemms * 2 * rows * fan_in * fan_out
        out.append((flops / (tflops * 1e12), fan_in * fan_out + fan_out))
    return out


def forward_seconds(layers, rows, tflops):
    return sum(2 * rows * i * o for i, o in layers) / (tflops * 1e12)


def allreduce_seconds(nbytes, n, busbw_gbs, latency_s):
    if n <= 1:
        return 0.0
    return latency_s + 2 * (n - 1) / n * nbytes / (busbw_gbs * 1e9)


def exposed_comm(costs, n, busbw, args):
    """Seconds the all-reduce adds after backward ends, buckets launched as layers finish."""
    if n <= 1:
        return 0.0, 0.0
    bucket_bytes = args.bucket_mb * 2**20
    t = 0.0            # backward clock
    comm_free = 0.0    # when the comm stream is idle again
    pending = 0        # bytes in the open bucket
    total = 0.0
    for i, (seconds, values) in enumerate(costs):
        t += seconds
        pending += values * args.grad_bytes
        last = i == len(costs) - 1
        if (bucket_bytes > 0 and pending >= bucket_bytes) or last:
            d = allreduce_seconds(pending, n, busbw, args.latency_us * 1e-6)
            total += d
            comm_free = max(comm_free, t) + d
            pending = 0
    return max(0.0, comm_free - t), total


def step(layers, rows, n, busbw, args):
    fwd = forward_seconds(layers, rows, args.tflops)
    costs = layer_costs(layers, rows, args.tflops)
    bwd = sum(c for c, _ in costs)
    params = sum(v for _, v in costs)
    # Adam over fp32 master weights: read p, g, m, v; write p, m, v.
    opt = 7 * 4 * params / (args.memory_tbs * 1e12)
    exposed, comm = exposed_comm(costs, n, busbw, args)
    return {"compute": fwd + bwd + opt, "comm": comm, "exposed": exposed, "total": fwd + bwd + opt + exposed,
            "params": params}


def main(argv):
    args = parse_args(argv)
    w = WORKLOADS[args.workload]
    batch = args.batch or w["batch"]
    layers = w["layers"]
    configs = [(1, "1 GPU", args.busbw_nvlink), (2, "2 GPUs, NVLink", args.busbw_nvlink),
               (4, "4 GPUs, NVLink", args.busbw_nvlink), (8, "8 GPUs, NVLink", args.busbw_nvlink)]
    for bw in args.busbw_hosts:
        configs.append((16, "2 hosts x 8, %g GB/s across" % bw, min(bw, args.busbw_nvlink)))
    one = step(layers, batch, 1, args.busbw_nvlink, args)
    grad_mb = one["params"] * args.grad_bytes / 1e6
    print(f"{args.workload}: {one['params']:,} parameters, {grad_mb:.1f} MB of gradients per all-reduce "
          f"({args.grad_bytes} bytes each), buckets of {args.bucket_mb:g} MiB; GEMMs at {args.tflops:g} TFLOP/s")
    header = ["GPUs", "per-GPU batch", "compute ms", "all-reduce ms", "exposed ms", "step ms", "samples/s", "efficiency"]
    for mode in ("weak", "strong"):
        print()
        print(f"{mode} scaling: " + ("per-GPU batch %d (global batch grows with N)" % batch if mode == "weak"
                                    else "global batch %d split across the GPUs" % batch))
        rows = []
        for n, label, bw in configs:
            per_gpu = batch if mode == "weak" else max(1, batch // n)
            s = step(layers, per_gpu, n, bw, args)
            base = step(layers, batch, 1, bw, args)
            samples = per_gpu * n / s["total"]
            efficiency = samples / (batch / base["total"]) / n
            rows.append([label, str(per_gpu), "%.3f" % (s["compute"] * 1e3), "%.3f" % (s["comm"] * 1e3),
                         "%.3f" % (s["exposed"] * 1e3), "%.3f" % (s["total"] * 1e3), "%.0f" % samples,
                         "%.0f%%" % (100 * efficiency)])
        if args.markdown:
            print("| " + " | ".join(header) + " |")
            print("|" + " --- |" * len(header))
            for r in rows:
                print("| " + " | ".join(r) + " |")
        else:
            widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
            print("  ".join(h.ljust(widths[i]) for i, h in enumerate(header)))
            for r in rows:
                print("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
