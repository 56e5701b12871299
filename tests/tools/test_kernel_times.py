#!/usr/bin/env python3
"""Checks scripts/kernel_times.py (gpu-check's per-kernel profile) on CSV in ncu's two layouts."""
import importlib.util
import sys
from pathlib import Path

root = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("kernel_times", root / "scripts" / "kernel_times.py")
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)


def check(cond, what):
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)
    print("ok: " + what)


check(m.short_name("void gputrain::cuda_kernels::(anonymous namespace)::cast4_kernel<__nv_bfloat16>"
                   "(const float4 *, uint2 *, unsigned long, const float *, __nv_bfloat16 *, unsigned long)")
      == "cast4_kernel", "namespaces, template arguments and parameters dropped")
check(m.short_name("void gputrain::cuda_kernels::(anonymous namespace)::column_sums_kernel<gputrain::cuda_kernels::"
                   "(anonymous namespace)::ActivationGrad<(gputrain::Activation)1, float>, float>"
                   "(T1, int, int, int, T2 *)") == "column_sums_kernel", "nested templates with parentheses inside")
check(m.short_name("nvjet_tst_192x192_64x4_1x2_h_bz_coopA_TNT") == "nvjet_tst_192x192_64x4_1x2_h_bz_coopA_TNT",
      "a library kernel's plain name kept")

# The details page: one row per kernel and metric; ncu's own lines and the program's output mixed in.
details = '''==PROF== Connected to process 123
gputrain bench configs/bench/wide_mlp.yaml
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","123","gputrain","h","void ns::adam4_kernel(float *)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","350.50"
"1","123","gputrain","h","nvjet_gemm","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,200"
"2","123","gputrain","h","nvjet_gemm","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","msecond","0.0018"
"3","123","gputrain","h","void ns::adam4_kernel(float *)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","349.50"
==PROF== Disconnected from process 123
'''.splitlines()
d = m.read_durations(details)
check(len(d) == 4, "four kernels read from the details page")
check(abs(d[1][1] - 1.2) < 1e-9 and abs(d[2][1] - 1.8) < 1e-9, "units nsecond and msecond to microseconds, thousands separator")
one = m.table(d[:1], "adam")
check("1 step(s) from the start" in one and "kernel time per step 350.5 us" in one,
      "a single optimizer call: one step, counted from the first kernel")

# Set-up kernels, then three steps each ending with the optimizer; a fourth cut short.
setup = [("void ns::fill_kernel(float *)", 500.0), ("void ns::adam4_kernel(float *)", 340.0)]
step = [("nvjet_gemm", 1.0), ("nvjet_gemm", 1.0), ("void ns::adam4_kernel(float *)", 352.5)]
t = m.table(setup + d[1:] + step + [("void ns::cast_kernel<float>(const float *)", 99.0)], "adam")
check("2 step(s) after the first" in t, "steps counted from the optimizer's calls after the first")
check("fill_kernel" not in t and "kernel time per step 353.5 us" in t,
      "set-up and the warm-up step left out: (1.2 + 1.8 + 349.5 + 1 + 1 + 352.5) / 2")
check("cast_kernel" not in t, "a step cut short after the last optimizer call is left out")
check("| adam4_kernel | 1.00 | 351.0 | 99.3% |" in t, "the optimizer's row: once a step, 351 us, 99.3%")
check("| nvjet_gemm | 2.00 | 2.5 | 0.7% |" in t, "the GEMM's row: twice a step")
check(t.index("adam4_kernel") < t.index("nvjet_gemm"), "longest first")

# The raw page: one column per metric, then a row of units.
raw = '''"ID","Kernel Name","gpu__time_duration.sum"
"","","usecond"
"0","void ns::cast_kernel<__half>(const float *, __half *, unsigned long)","10.5"
"1","void ns::cast_kernel<__half>(const float *, __half *, unsigned long)","9.5"
'''.splitlines()
r = m.read_durations(raw)
check([x for _, x in r] == [10.5, 9.5], "raw page: durations under the units row")
check("1 step(s)" in m.table(r, "adam") and "| cast_kernel | 2.00 | 20.0 | 100.0% |" in m.table(r, "adam"),
      "no optimizer kernel: one step")
check(m.read_durations(["no csv here"]) == [], "nothing profiled: no rows")
