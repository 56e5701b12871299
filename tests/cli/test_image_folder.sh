#!/usr/bin/env bash
# format: image_folder against images Pillow wrote (PNG, JPEG, grayscale PNG
# in an RGB model, other sizes resized): the pixels Pillow decodes, the
# classes in sorted order, the cache file and its rebuild when the folder
# changes, a short fit and evaluate, and bad files' one-line errors.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
PY=$(test_python)
"$PY" -c "import numpy, PIL" 2>/dev/null || skip "NumPy or Pillow is not installed (apt-get install python3-numpy python3-pil)"

imgs=$TMP/images
"$PY" "$HERE/make_images.py" "$imgs" 12 16
export GPUTRAIN_CACHE=$TMP/cache
cfg=$TMP/folder.yaml
cat >"$cfg" <<YAML
model:
  input_shape: [12, 16, 3]
  layers:
    - {type: conv2d, filters: 4, kernel_size: 3, activation: relu}
    - {type: global_avg_pool2d}
    - {type: dense, units: 3, activation: softmax}
loss: sparse_categorical_crossentropy
optimizer: {type: adam, learning_rate: 0.03}
data: {path: $imgs, format: image_folder}
training: {epochs: 15, batch_size: 8, seed: 1}
checkpoint: {monitor: loss}
logging: {progress: none}
YAML

step "the training images are Pillow's pixels (resized by TensorFlow's bilinear rule where another size)"
run_expect 0 data "$cfg" --set data.scale=1 --augmented 24 --out "$TMP/x.npy"
expect_in "$TMP/out" "24 samples of [12, 16, 3], stored as bytes (uint8), 3 classes (labels 0..2): 0 cat, 1 dog, 2 fish"
expect_in "$TMP/out" "9 samples of [12, 16, 3]"
ls "$TMP/cache"/train-*.gtc >/dev/null || fail "no cache file in $TMP/cache"
"$PY" - "$TMP/x.npy" "$imgs/expected_train.npy" <<'PY' || fail "decoded images differ from Pillow's"
import sys
import numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2]).astype(np.float32)
assert got.shape == want.shape, (got.shape, want.shape)
diff = np.abs(got - want)
# Files 3 and 7 of each class are resized (rows 9-11 and 21-23: the classes in
# turn): the rounding of a half may differ by one.
resized = [i for i in range(24) if (i // 3) % 4 == 3]
exact = [i for i in range(24) if i not in resized]
assert diff[exact].max() == 0, ("decoded pixels differ", np.argwhere(diff[exact] > 0)[:3])
assert diff[resized].max() <= 1, ("resized pixels differ by more than 1", diff[resized].max())
print("24 images: 16 decoded exactly as Pillow, 8 resized within 1")
PY

step "grayscale: Pillow's convert('L') (ITU-R 601 weights), exactly for PNG; the classes in turn, so a limit keeps them all"
GPUTRAIN_CACHE=$TMP/gray-cache run_expect 0 data "$cfg" --set data.scale=1 --set 'model.input_shape=[12, 16, 1]' \
    --augmented 24 --out "$TMP/g.npy"
"$PY" - "$TMP/g.npy" "$imgs/expected_gray.npy" <<'PY' || fail "grayscale images differ from Pillow's"
import sys
import numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2]).astype(np.float32)
assert got.shape == want.shape, (got.shape, want.shape)
png = [i for i in range(24) if (i // 3) % 4 in (0, 2)]  # files 00 and 02 (.png, .gray.png) of each class
assert np.abs(got[png] - want[png]).max() == 0, "PNG gray differs"
assert np.abs(got - want).max() <= 1, np.abs(got - want).max()  # resized files: a half may round either way
PY
run_expect 0 data "$cfg" --set data.limit=6 --set data.validation_split=0.5
expect_in "$TMP/out" "3 samples of [12, 16, 3], stored as bytes (uint8), 3 classes (labels 0..2)"

step "the cache is read while the folder is unchanged and rebuilt when it changes"
cp "$TMP/cache"/train-*.gtc "$TMP/first.gtc"
run_expect 0 data "$cfg" --set data.scale=1 --augmented 24 --out "$TMP/x2.npy"
cmp "$TMP/x.npy" "$TMP/x2.npy" || fail "the cached read differs"
[ "$(ls "$TMP/cache"/train-*.gtc | wc -l)" -eq 1 ] || fail "a second cache was written for the same folder"
touch -d "2001-01-01" "$imgs/train/dog/00.png"
run_expect 0 data "$cfg" --set data.scale=1
[ "$(ls "$TMP/cache"/train-*.gtc | wc -l)" -eq 2 ] || fail "the cache was not rebuilt after a file changed"

step "fit and evaluate"
run_expect 0 fit "$cfg" --run-dir "$TMP/run" --device cpu --replicas 2
run_expect 0 evaluate --json --run-dir "$TMP/run" "$cfg"
"$PY" - "$TMP/out" <<'PY' || fail "evaluate --json is not as expected"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["samples"] == 9 and r["accuracy"] >= 0.6, r
PY

step "bad files: one line each"
bad() { expect_one_line_error "$1" "$2" data "$cfg" "${@:3}"; }  # bad CODE EXPECTED ARGS...
cp -r "$imgs" "$TMP/corrupt"
head -c 300 "$imgs/train/fish/00.png" >"$TMP/corrupt/train/fish/00.png"
bad 1 "$TMP/corrupt/train/fish/00.png: corrupt or truncated PNG (libpng: " --set data.path="$TMP/corrupt"
expect_in "$TMP/err" "; or set data.skip_bad_files: true"
head -c 400 "$imgs/train/fish/01.jpg" >"$TMP/corrupt/train/fish/01.jpg"
run_expect 0 data "$cfg" --set data.path="$TMP/corrupt" --set data.skip_bad_files=true
expect_in "$TMP/err" "skipped 2 of 24 files that are not readable images (data.skip_bad_files)"
# The second read comes from the cache, and says the same.
run_expect 0 data "$cfg" --set data.path="$TMP/corrupt" --set data.skip_bad_files=true
expect_in "$TMP/err" "skipped 2 of 24 files that are not readable images (data.skip_bad_files; counted when"
expect_in "$TMP/out" "22 samples of [12, 16, 3]"
cp -r "$imgs" "$TMP/text"
echo "hello" >"$TMP/text/train/cat/05.png"
bad 1 "$TMP/text/train/cat/05.png: not a PNG or JPEG image (its first bytes say otherwise)" --set data.path="$TMP/text"
cp -r "$imgs" "$TMP/empty"
mkdir "$TMP/empty/train/zebra"
bad 1 "$TMP/empty/train/zebra: an empty class folder (no .png, .jpg or .jpeg files); remove it or add its images" \
    --set data.path="$TMP/empty"
cp -r "$imgs" "$TMP/extra"
mkdir "$TMP/extra/test/zebra" && cp "$imgs/test/cat/00.png" "$TMP/extra/test/zebra/"
# fit reads no test set; data says why it could not read it, evaluate stops on it.
run_expect 0 data "$cfg" --set data.path="$TMP/extra"
expect_in "$TMP/out" "test: not read: $TMP/extra/test/zebra: a class the training folder does not have (its classes: cat, dog, fish)"
mkdir -p "$TMP/flat"
bad 1 "data.path: $TMP/flat: no class folders found" --set data.path="$TMP/flat"
bad 2 "format image_folder: model.input_shape [192] is not an image size" --set 'model.input_shape=[192]' \
    --set 'model.layers=[{type: dense, units: 3, activation: softmax}]'
bad 2 "data.skip_bad_files: only used by format image_folder, not idx data" --set data.format=idx \
    --set data.skip_bad_files=true
echo "PASS"
