"""Checks an ONNX file written by `gputrain export` with ONNX's own tools and
a real runtime:

  onnx_check.py MODEL.onnx [--inputs X.npy --expect PREDICTIONS] [--tolerance TOL]

1. onnx.checker.check_model (full check) and onnx.shape_inference accept the
   file; its input is named "input" and its output "output", both with a
   free batch axis.
2. ONNX Runtime (CPU) runs it on X prepared as the file's metadata says (the
   graph takes the model's inputs: X * gputrain.scale, where "auto" is 1/255
   for uint8 X and 1 otherwise, then (x - gputrain.normalize_mean) /
   gputrain.normalize_std per channel; an int64 input, a GPT's, takes the
   token ids as they are), in one batch and one sample at a time, and its outputs match PREDICTIONS (gputrain predict's CSV, or an
   .npy, of the raw X) within TOL (default 1e-5, absolute).

Exits 77 (skipped) when onnxruntime cannot be imported (no package index
here), after the checker has run; 1 on any mismatch.
"""
import argparse
import sys

import numpy as np
import onnx


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--inputs")
    parser.add_argument("--expect")
    parser.add_argument("--tolerance", type=float, default=1e-5)
    args = parser.parse_args()

    model = onnx.load(args.model)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    ins = [i for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    outs = list(model.graph.output)
    if [i.name for i in ins] != ["input"] or [o.name for o in outs] != ["output"]:
        sys.exit(f"inputs {[i.name for i in ins]}, outputs {[o.name for o in outs]}: expected ['input'], ['output']")
    for v in ins + outs:
        first = v.type.tensor_type.shape.dim[0]
        if first.HasField("dim_value"):
            sys.exit(f"{v.name}: a fixed batch axis of {first.dim_value}")
    print(f"onnx {onnx.__version__}: checker and strict shape inference pass; opset "
          f"{model.opset_import[0].version}, {len(model.graph.node)} nodes")
    if not args.inputs:
        return

    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime cannot be imported (pip install onnxruntime): not run")
        sys.exit(77)
    session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    meta = {p.key: p.value for p in model.metadata_props}
    raw = np.load(args.inputs)
    scale = meta.get("gputrain.scale", "1")
    scale = (1 / 255 if raw.dtype == np.uint8 else 1.0) if scale == "auto" else float(scale)
    dims = [d.dim_value for d in ins[0].type.tensor_type.shape.dim[1:]]
    if ins[0].type.tensor_type.elem_type == onnx.TensorProto.INT64:  # token ids, as a tokenizer gives them
        if scale != 1.0 or "gputrain.normalize_mean" in meta:
            sys.exit("an int64 (token id) input with a scale or normalization in the metadata")
        x = raw.reshape([len(raw)] + dims)
        if not np.array_equal(x, np.round(x)):
            sys.exit(f"{args.inputs}: token ids must be whole numbers")
        x = x.astype(np.int64)
    else:
        x = raw.astype(np.float64).reshape([len(raw)] + dims) * scale
        if "gputrain.normalize_mean" in meta:
            mean = np.array([float(v) for v in meta["gputrain.normalize_mean"].split(",")])
            std = np.array([float(v) for v in meta["gputrain.normalize_std"].split(",")])
            x = (x - mean) / std
        x = x.astype(np.float32)
    whole = session.run(["output"], {"input": x})[0]
    one_by_one = np.concatenate([session.run(["output"], {"input": x[i:i + 1]})[0] for i in range(len(x))])
    if args.expect.endswith(".npy"):
        expect = np.load(args.expect)
    else:
        expect = np.loadtxt(args.expect, delimiter=",", skiprows=1, ndmin=2)
    expect = expect.reshape(whole.shape)
    for what, got in (("one batch", whole), ("one sample at a time", one_by_one)):
        diff = float(np.max(np.abs(got.astype(np.float64) - expect)))
        print(f"onnxruntime {ort.__version__} ({what}): {got.shape}, max |onnx - gputrain| = {diff:.3g}")
        if not diff <= args.tolerance:
            worst = np.unravel_index(np.argmax(np.abs(got - expect)), got.shape)
            sys.exit(f"ONNX Runtime's output differs from gputrain's by {diff:.3g} > {args.tolerance:g} "
                     f"at {tuple(int(i) for i in worst)}: {got[worst]} vs {expect[worst]}")


main()
