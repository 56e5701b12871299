# Writes damaged and intact data sets for the bad-input test: each folder holds
# one way a user's files can be wrong.
import gzip, os, struct, sys
root = sys.argv[1]
N, H, W = 40, 8, 8
def idx(magic_type, dims, payload):
    return struct.pack(">BBBB", 0, 0, magic_type, len(dims)) + b"".join(struct.pack(">I", d) for d in dims) + payload
images = bytes((i * 7) % 256 for i in range(N * H * W))
labels = bytes(i % 4 for i in range(N))
def write_set(name, img, lab, gz=False):
    d = os.path.join(root, name); os.makedirs(d, exist_ok=True)
    for base, data in (("train-images-idx3-ubyte", img), ("train-labels-idx1-ubyte", lab)):
        if gz:
            with gzip.open(os.path.join(d, base + ".gz"), "wb") as f: f.write(data)
        else:
            open(os.path.join(d, base), "wb").write(data)
good_img, good_lab = idx(8, [N, H, W], images), idx(8, [N], labels)
write_set("good", good_img, good_lab)
write_set("truncated", good_img[:-100], good_lab)
write_set("count-mismatch", good_img, idx(8, [N - 1], labels[:-1]))
write_set("labels-out-of-range", good_img, idx(8, [N], bytes(9 if i == 3 else i % 4 for i in range(N))))
write_set("not-idx", b"hello, this is not an IDX file" * 10, good_lab)
write_set("wrong-shape", idx(8, [N, 4, 4], images[: N * 16]), good_lab)
write_set("int-labels", good_img, idx(0x0C, [N], b"".join(struct.pack(">i", i % 4) for i in range(N))))
write_set("gz-good", good_img, good_lab, gz=True)
d = os.path.join(root, "gz-corrupt"); write_set("gz-corrupt", good_img, good_lab, gz=True)
p = os.path.join(d, "train-images-idx3-ubyte.gz"); b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 0xFF; open(p, "wb").write(b)
d = os.path.join(root, "gz-truncated"); write_set("gz-truncated", good_img, good_lab, gz=True)
p = os.path.join(d, "train-images-idx3-ubyte.gz"); b = open(p, "rb").read(); open(p, "wb").write(b[: len(b) // 2])
def csv(name, text):
    d = os.path.join(root, name); os.makedirs(d, exist_ok=True); open(os.path.join(d, "train.csv"), "w").write(text)
row = lambda label: ",".join([str(label)] + ["0.5"] * 64)
csv("csv-good", "\n".join(row(i % 4) for i in range(N)) + "\n")
csv("csv-ragged", "\n".join(row(i % 4) if i != 5 else row(1) + ",0.5" for i in range(N)) + "\n")
csv("csv-bad-label", "\n".join(row(i % 4) if i != 2 else row("cat") for i in range(N)) + "\n")
csv("csv-negative-label", "\n".join(row(i % 4) if i != 2 else row(-1) for i in range(N)) + "\n")
csv("csv-bad-field", "\n".join(row(i % 4) if i != 7 else row(1).replace("0.5", "x", 1) for i in range(N)) + "\n")
csv("csv-empty", "")
