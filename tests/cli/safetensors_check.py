"""Reads safetensors files with the standard library only (header: 8-byte
little-endian length, then JSON), for the cli tests.

  safetensors_check.py header FILE NAME SHAPE     NAME exists with SHAPE (e.g. 784,128)
  safetensors_check.py identical A B              every tensor byte-identical (metadata ignored)
  safetensors_check.py close A B RTOL             model weights (not optimizer/*) agree:
                                                  max|a-b| <= RTOL * max|b| per tensor
  safetensors_check.py metadata FILE KEY          prints the metadata value KEY (the whole
                                                  file is read and checked for consistency)
  safetensors_check.py same A B NAME[=NAME_IN_B]...
                                                  each named tensor byte-identical in A and B
  safetensors_check.py differ A B NAME...         each named tensor differs between A and B
  safetensors_check.py names FILE                 prints the tensor names, one a line
  safetensors_check.py set-metadata IN OUT KEY TEXTFILE
                                                  writes IN as OUT with metadata KEY set to
                                                  the text of TEXTFILE (tensors unchanged)
Exits 1 with a message when a check fails.
"""
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        sys.exit(f"{path}: {len(blob)} bytes, too short for a safetensors file")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        sys.exit(f"{path}: header length {n} exceeds the file size {len(blob)}")
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = (info["dtype"], info["shape"], data[begin:end])
    return header.get("__metadata__", {}), tensors


def floats(dtype, raw):
    if dtype != "F32":
        sys.exit(f"dtype {dtype}: only F32 is compared")
    return struct.unpack(f"<{len(raw) // 4}f", raw)


def check_header(path, name, shape):
    _, tensors = read(path)
    if name not in tensors:
        sys.exit(f"{path}: no tensor '{name}' (has: {', '.join(sorted(tensors))})")
    want = [int(x) for x in shape.split(",")]
    if tensors[name][1] != want:
        sys.exit(f"{path}: {name} has shape {tensors[name][1]}, expected {want}")
    print(f"{path}: {len(tensors)} tensors, {name} {want}")


def same_names(a, b, ta, tb):
    if sorted(ta) != sorted(tb):
        sys.exit(f"{a} and {b} hold different tensors: {sorted(ta)} vs {sorted(tb)}")


def check_identical(a, b):
    _, ta = read(a)
    _, tb = read(b)
    same_names(a, b, ta, tb)
    differ = [n for n in ta if ta[n] != tb[n]]
    if differ:
        sys.exit(f"tensors differ between {a} and {b}: {', '.join(sorted(differ))}")
    print(f"{len(ta)} tensors byte-identical")


def check_close(a, b, rtol):
    _, ta = read(a)
    _, tb = read(b)
    same_names(a, b, ta, tb)
    worst = 0.0
    weights = [n for n in sorted(ta) if not n.startswith("optimizer/")]
    for name in weights:
        (da, sa, ra), (db, sb, rb) = ta[name], tb[name]
        if sa != sb:
            sys.exit(f"{name}: shape {sa} vs {sb}")
        xa, xb = floats(da, ra), floats(db, rb)
        scale = max(abs(v) for v in xb) or 1.0
        rel = max(abs(p - q) for p, q in zip(xa, xb)) / scale
        print(f"{name}: max|a-b|/max|b| = {rel:.3g}")
        worst = max(worst, rel)
    if worst > rtol:
        sys.exit(f"weights differ by {worst:.3g} relative, more than {rtol}")
    print(f"{len(weights)} weight tensors within {rtol} relative (worst {worst:.3g})")


def print_metadata(path, key):
    meta, tensors = read(path)
    for name, (dtype, shape, raw) in tensors.items():
        count = 1
        for d in shape:
            count *= d
        if len(raw) != 4 * count:
            sys.exit(f"{path}: tensor {name} has {len(raw)} bytes for shape {shape}")
    if key not in meta:
        sys.exit(f"{path}: no metadata '{key}'")
    print(meta[key])


def set_metadata(src, dst, key, text_file):
    with open(src, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    header.setdefault("__metadata__", {})[key] = open(text_file, encoding="utf-8").read()
    text = json.dumps(header).encode()
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + blob[8 + n:])


def check_same(a, b, names, want_same):
    _, ta = read(a)
    _, tb = read(b)
    for item in names:
        name_a, _, name_b = item.partition("=")
        name_b = name_b or name_a
        if name_a not in ta:
            sys.exit(f"{a}: no tensor '{name_a}'")
        if name_b not in tb:
            sys.exit(f"{b}: no tensor '{name_b}'")
        same = ta[name_a] == tb[name_b]
        if same != want_same:
            sys.exit(f"'{name_a}' of {a} and '{name_b}' of {b}: " + ("differ" if want_same else "are identical"))


def main(argv):
    if len(argv) == 4 and argv[0] == "header":
        check_header(*argv[1:])
    elif len(argv) == 3 and argv[0] == "identical":
        check_identical(*argv[1:])
    elif len(argv) == 3 and argv[0] == "metadata":
        print_metadata(*argv[1:])
    elif len(argv) >= 4 and argv[0] in ("same", "differ"):
        check_same(argv[1], argv[2], argv[3:], argv[0] == "same")
    elif len(argv) == 2 and argv[0] == "names":
        for name in read(argv[1])[1]:
            print(name)
    elif len(argv) == 5 and argv[0] == "set-metadata":
        set_metadata(*argv[1:])
    elif len(argv) == 4 and argv[0] == "close":
        check_close(argv[1], argv[2], float(argv[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
