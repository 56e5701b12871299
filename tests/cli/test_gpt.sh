#!/usr/bin/env bash
# A character-level GPT on a few KB of play-like text made here (names and a
# dozen words, from a fixed generator): fit (the loss falls; ppl and bpc on the
# epoch line; training.steps_per_epoch), data, summary, evaluate (its loss is
# an independent NumPy forward pass's, tests/cli/numpy_gpt_forward.py),
# generate (seeded, the prompt first, --tokens counted, greedy --top-k 1 (and
# --top-p 1e-9; the nucleus itself is tested in unit_nn test_sampling) that
# is the full model's argmax at every token, through the key/value cache and
# its refill), 2 replicas = 1, a head tied to the token table (tie_weights:
# the table once in the checkpoint, 2 replicas = 1, resume byte-identical,
# NumPy, predict, ONNX and greedy generate), and the errors of text data, GPT
# layers, tie_weights and generate as one-line messages (exit 2: config, 1: data).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
PY=$(test_python)
export GPUTRAIN_CACHE=$TMP/cache  # the token caches of the texts made here, not in ~/.cache

# ~6 KB of "NAME:\nWords words.\n\n" from a linear congruential generator (UTF-8).
python3 - "$TMP/play.txt" <<'PY'
import sys
names = ["ROMEO", "JULIET", "NURSE", "FRIAR", "\u00c9LISE"]  # one character of 2 bytes in UTF-8
words = ["the", "love", "night", "sweet", "my", "lord", "is", "and", "to", "thee", "fair", "day"]
state = 12345
def draw(n):
    global state
    state = (state * 1103515245 + 12345) % 2**31
    return (state >> 16) % n
out = []
while sum(map(len, out)) < 6000:
    line = " ".join(words[draw(len(words))] for _ in range(3 + draw(5)))
    out.append(f"{names[draw(len(names))]}:\n{line[0].upper()}{line[1:]}.\n\n")
open(sys.argv[1], "w", encoding="utf-8").write("".join(out))
PY
read -r chars vocab < <(python3 -c '
import sys
t = open(sys.argv[1], encoding="utf-8").read()
print(len(t), len(set(t)))' "$TMP/play.txt")
windows=$(((chars - 1) / 16))
held_out=$((windows - windows * 9 / 10))  # Keras: int(W * 0.9) train

cfg=$TMP/gpt.yaml
cat >"$cfg" <<YAML
blocks:
  transformer:                        # GPT-2's pre-norm block
    params: {width: ~, hidden: ~, heads: ~}
    layers:
      - {type: layer_norm}
      - {type: causal_self_attention, heads: \$heads}
      - {type: add, inputs: [causal_self_attention, input]}
      - {type: layer_norm}
      - {type: dense, units: \$hidden, activation: gelu}
      - {type: dense, units: \$width}
      - {type: add, inputs: [dense_1, add]}
model:
  input_shape: [16]
  layers:
    - {type: embedding, input_dim: $vocab, output_dim: 32}
    - {type: positional_embedding}
    - {block: transformer, name: h, repeat: 2, width: 32, hidden: 64, heads: 2}
    - {type: layer_norm}
    - {type: dense, units: $vocab}
loss: {name: sparse_categorical_crossentropy, from_logits: true}
optimizer: {type: adamw, learning_rate: 3.0e-3, weight_decay: 0.1, no_decay: [bias, norm, embedding]}
data: {path: $TMP/play.txt, format: text, tokenizer: chars, validation_split: 0.1}
training: {epochs: 4, steps_per_epoch: 15, batch_size: 16, clip_norm: 1.0, seed: 3}
checkpoint: {save_best: false}
YAML
ck=$TMP/run/last.safetensors

step "data: the windows and the characters of the text"
run_expect 0 data "$cfg"
expect_in "$TMP/out" "train: data.path ($TMP/play.txt, $chars tokens, chars vocabulary)"
expect_in "$TMP/out" "$((windows - held_out)) windows of 16 tokens, the next token of each position its label; $vocab tokens in the vocabulary"
expect_in "$TMP/out" "$held_out windows of 16 tokens, the next token of each position its label"
expect_in "$TMP/out" "ids stored as uint16, memory-mapped from the token cache $GPUTRAIN_CACHE/play-"
# --augmented: the first training windows as the model reads them, the ids as floats (no augmentation for text).
run_expect 0 data "$cfg" --augmented 2 --out "$TMP/first.npy"
expect_in "$TMP/out" "the first 2 training samples as epoch 0's steps make them (format text: the token ids as floats, as the model reads them)"
"$PY" - "$TMP/play.txt" "$TMP/first.npy" <<'PY' || fail "data --augmented: not the text's first 2 windows of ids"
import sys, numpy as np
text = open(sys.argv[1], encoding="utf-8").read()
ids = {c: i for i, c in enumerate(sorted(set(text)))}
got = np.load(sys.argv[2])
assert got.dtype == np.float32 and got.shape == (2, 16), (got.dtype, got.shape)
assert got.ravel().tolist() == [float(ids[c]) for c in text[:32]], got
PY
# data.sequence_stride 1: a training window at every token whose last label is before the held-out windows.
run_expect 0 data "$cfg" --set data.sequence_stride=1
expect_in "$TMP/out" "$chars tokens, chars vocabulary), windows every 1 token"
expect_in "$TMP/out" "$(((windows - held_out) * 16 - 16 + 1)) windows of 16 tokens, the next token of each position its label"
expect_in "$TMP/out" "$held_out windows of 16 tokens, the next token of each position its label"
expect_in "$TMP/out" 'characters: \n .:ADEFIJLMNORSTUadefghilmnorstvwyÉ'

step "summary: every position scored over the vocabulary"
run_expect 0 summary "$cfg"
expect_in "$TMP/out" "h/block2/causal_self_attention (causal_self_attention) 2 heads"
expect_in "$TMP/out" "(None, 16, $vocab)"

step "fit: 4 epochs of 15 steps; the loss falls; val_ppl and val_bpc on the epoch line and in metrics.csv"
run_expect 0 fit "$cfg" --run-dir "$TMP/run" --device cpu --replicas 1 --set logging.progress=lines
cat "$TMP/out" "$TMP/err" >"$TMP/fit.log"
expect_in "$TMP/fit.log" "Epoch 4/4 - 15 steps"
grep -E "^Epoch 4/4 .* - val_loss: [0-9.]+ - val_accuracy: [0-9.]+ - val_ppl: [0-9.]+ - val_bpc: [0-9.]+$" "$TMP/fit.log" >/dev/null ||
    fail "no val_ppl and val_bpc on the last epoch line: $(grep '^Epoch 4' "$TMP/fit.log")"
[ "$(safetensors metadata "$ck" global_step)" = 60 ] || fail "global_step $(safetensors metadata "$ck" global_step), expected 4 x 15"
[ "$(safetensors metadata "$ck" tokenizer)" = chars ] || fail "no tokenizer: chars in the checkpoint's metadata"
python3 - "$TMP/run/metrics.csv" "$TMP/fit.log" <<'PY' || fail "the loss did not fall, or ppl/bpc are not the loss's"
import csv, math, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
first, last = float(rows[0]["loss"]), float(rows[-1]["loss"])
assert len(rows) == 4 and first > last + 0.5, (first, last)
line = [l for l in open(sys.argv[2]) if l.startswith("Epoch 4/4")][0]
val = float(re.search(r"val_loss: ([0-9.]+)", line).group(1))
assert abs(float(re.search(r"val_ppl: ([0-9.]+)", line).group(1)) - math.exp(val)) < 2e-3, line
assert abs(float(re.search(r"val_bpc: ([0-9.]+)", line).group(1)) - val / math.log(2)) < 2e-3, line
# metrics.csv: ppl, val_ppl, bpc, val_bpc after the usual columns, from the losses.
assert list(rows[0].keys())[-4:] == ["ppl", "val_ppl", "bpc", "val_bpc"], list(rows[0].keys())
for r in rows:
    assert abs(float(r["ppl"]) - math.exp(float(r["loss"]))) < 1e-4 * math.exp(float(r["loss"])), r
    assert abs(float(r["val_bpc"]) - float(r["val_loss"]) / math.log(2)) < 1e-5, r
print(f"loss {first:.4f} -> {last:.4f}")
PY

step "evaluate: the held-out windows' loss, perplexity and bits per character; --json"
run_expect 0 evaluate "$cfg" --checkpoint "$ck" --device cpu
expect_in "$TMP/out" "$ck: loss "
expect_in "$TMP/out" "($held_out test samples)"
grep -E "^  $((held_out * 16)) tokens: perplexity [0-9.]+, [0-9.]+ bits per character$" "$TMP/out" >/dev/null ||
    fail "no perplexity line: $(cat "$TMP/out")"
run_expect 0 evaluate --json "$cfg" --checkpoint "$ck" --device cpu
loss=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["samples"] == int(sys.argv[2]), r
print(r["loss"])' "$TMP/out" "$held_out") || fail "evaluate --json: $(cat "$TMP/out")"

step "the NumPy forward pass of the checkpoint: evaluate's loss within 1e-4"
if "$PY" -c "import numpy, yaml" 2>/dev/null; then
    "$PY" "$HERE/numpy_gpt_forward.py" "$ck" --expect "$loss" --tolerance 1e-4 ||
        fail "gputrain evaluate's loss is not the NumPy forward pass's"
else
    echo "($PY cannot import numpy and yaml: the NumPy check is not run)"
fi

step "predict: next-token probabilities at every position of the held-out windows; their cross-entropy is evaluate's loss"
"$PY" - "$TMP/play.txt" "$TMP/windows.npy" "$TMP/labels.npy" <<'PY'
import sys
import numpy as np
text = open(sys.argv[1], encoding="utf-8").read()
vocabulary = sorted(set(text))
ids = np.array([vocabulary.index(c) for c in text], dtype=np.int64)
t = 16
windows = (len(ids) - 1) // t
begin = int(windows * 0.9)  # Keras' split: the last 10% held out
starts = np.arange(begin, windows) * t
np.save(sys.argv[2], ids[starts[:, None] + np.arange(t)])
np.save(sys.argv[3], ids[starts[:, None] + np.arange(t) + 1])
PY
run_expect 0 predict "$cfg" --checkpoint "$ck" --input "$TMP/windows.npy" --output "$TMP/next.npy" --device cpu
"$PY" - "$TMP/next.npy" "$TMP/labels.npy" "$loss" "$vocab" <<'PY' || fail "predict's probabilities are not evaluate's loss"
import sys
import numpy as np
p, y = np.load(sys.argv[1]), np.load(sys.argv[2])
assert p.shape == y.shape + (int(sys.argv[4]),), (p.shape, y.shape)
assert np.allclose(p.sum(axis=-1), 1, atol=1e-5), "rows do not sum to 1"
loss = -np.log(np.take_along_axis(p.astype(np.float64), y[..., None], axis=-1)).mean()
print(f"cross-entropy of predict's probabilities {loss:.6f}, evaluate's loss {float(sys.argv[3]):.6f}")
assert abs(loss - float(sys.argv[3])) < 1e-5, loss
PY
run_expect 0 predict "$cfg" --checkpoint "$ck" --input "$TMP/windows.npy" --device cpu
[ "$(wc -l <"$TMP/out")" -eq $((held_out * 16 + 1)) ] || fail "the CSV should have a header and a row per position"

step "export --onnx: ONNX's checker takes the GPT; ONNX Runtime's probabilities are the NumPy forward pass's (1e-5)"
if ! "$GPUTRAIN" export "$cfg" --checkpoint "$ck" --onnx "$TMP/gpt.onnx" >"$TMP/out" 2>"$TMP/err" &&
    grep -q "gputrain export: not in a sanitizer build" "$TMP/err"; then
    echo "(a sanitizer build: the ONNX module cannot be loaded; the ONNX check is not run)"
elif "$PY" -c "import numpy, yaml, onnx" 2>/dev/null; then
    run_expect 0 export "$cfg" --checkpoint "$ck" --onnx "$TMP/gpt.onnx"
    expect_in "$TMP/out" "input 'input' (None, 16) int64 (token ids), output 'output' (None, 16, $vocab)"
    "$PY" "$HERE/onnx_check.py" "$TMP/gpt.onnx" || fail "ONNX's checker refuses the GPT"
    # A client that prepares the input as the file's metadata says (token ids as they are: no
    # gputrain.scale) gets predict's probabilities.
    code=0
    "$PY" "$HERE/onnx_check.py" "$TMP/gpt.onnx" --inputs "$TMP/windows.npy" --expect "$TMP/next.npy" || code=$?
    [ "$code" -eq 0 ] || [ "$code" -eq 77 ] || fail "ONNX Runtime, fed as the metadata says, is not predict"
    "$PY" -c "import onnx, sys; m = {p.key for p in onnx.load(sys.argv[1]).metadata_props}; assert 'gputrain.scale' not in m, m" \
        "$TMP/gpt.onnx" || fail "a text model's ONNX file should not tell of data.scale"
    "$PY" -c "import onnx, sys; i = onnx.load(sys.argv[1]).graph.input[0].type.tensor_type; assert i.elem_type == onnx.TensorProto.INT64, i" \
        "$TMP/gpt.onnx" || fail "a GPT's ONNX input should be int64 token ids"
    code=0
    "$PY" "$HERE/numpy_gpt_forward.py" "$ck" --expect "$loss" --tolerance 1e-4 --onnx "$TMP/gpt.onnx" || code=$?
    [ "$code" -eq 0 ] || [ "$code" -eq 77 ] || fail "ONNX Runtime's GPT is not the NumPy forward pass's"
else
    echo "($PY cannot import numpy, yaml and onnx: the ONNX check is not run)"
fi

step "generate: seeded, the prompt first, --tokens characters (not bytes) and a newline"
gen() { run_expect 0 generate "$cfg" --checkpoint "$ck" --device cpu "$@"; }
gen --prompt $'ROMEO:\n' --tokens 50 --seed 1
cp "$TMP/out" "$TMP/seed1a"
[ ! -s "$TMP/err" ] || fail "generate --seed wrote to stderr: $(cat "$TMP/err")"
gen --prompt $'ROMEO:\n' --tokens 50 --seed 1
cmp -s "$TMP/out" "$TMP/seed1a" || fail "the same --seed gave another text"
gen --prompt $'ROMEO:\n' --tokens 50 --seed 2
cmp -s "$TMP/out" "$TMP/seed1a" && fail "--seed 1 and --seed 2 gave the same text"
# A prompt with a character of two bytes: the count is of characters.
gen --prompt "ÉLISE:"$'\n' --tokens 50 --seed 3
cp "$TMP/out" "$TMP/elise"
count_check() {
    python3 - "$@" <<'PY' || fail "generate's text ($1) is not the prompt, --tokens characters and a newline"
import sys
text = open(sys.argv[1], encoding="utf-8", newline="").read()
prompt, n = sys.argv[2], int(sys.argv[3])
assert text.startswith(prompt), repr(text)
assert text.endswith("\n") and len(text) == len(prompt) + n + 1, (len(text), repr(text))
PY
}
count_check "$TMP/seed1a" $'ROMEO:\n' 50
count_check "$TMP/elise" "ÉLISE:"$'\n' 50
gen --prompt $'ROMEO:\n' --tokens 40 --seed 5 --temperature 0.01
cp "$TMP/out" "$TMP/cold"
gen --prompt $'ROMEO:\n' --tokens 40 --seed 5 --temperature 0.01
cmp -s "$TMP/out" "$TMP/cold" || fail "--temperature 0.01 with --seed 5 is not reproducible"
# Without --seed a fresh one is drawn and printed on stderr.
gen --prompt $'ROMEO:\n' --tokens 5
grep -qE "^gputrain: generate: --seed [0-9]+$" "$TMP/err" || fail "no --seed line on stderr: $(cat "$TMP/err")"

step "generate --top-k 1: greedy (any seed), the full model's argmax at each token past the block"
# A prompt longer than the block (16): the cache is filled with its last 16;
# 60 tokens refill it from the last half block several times.
prompt=$'ROMEO:\nMy love is the night.\n\nJULIET:\n'
gen --prompt "$prompt" --tokens 60 --top-k 1 --seed 1
cp "$TMP/out" "$TMP/greedy"
gen --prompt "$prompt" --tokens 60 --top-k 1 --seed 99
cmp -s "$TMP/out" "$TMP/greedy" || fail "--top-k 1 gave different texts for two seeds"
# A nucleus that only the most likely token reaches is greedy too; --top-p 1 changes nothing.
gen --prompt "$prompt" --tokens 60 --top-p 1e-9 --seed 5
cmp -s "$TMP/out" "$TMP/greedy" || fail "--top-p 1e-9 is not greedy (--top-k 1)"
gen --prompt "$prompt" --tokens 60 --seed 5
cp "$TMP/out" "$TMP/seed5"
gen --prompt "$prompt" --tokens 60 --top-p 1 --seed 5
cmp -s "$TMP/out" "$TMP/seed5" || fail "--top-p 1 changed the sample"
gen --prompt "$prompt" --tokens 60 --top-p 0.5 --seed 5
! cmp -s "$TMP/out" "$TMP/seed5" || fail "--top-p 0.5 gave the sample of --top-p 1"
if "$PY" -c "import numpy, yaml" 2>/dev/null; then
    "$PY" "$HERE/numpy_gpt_forward.py" "$ck" --prompt "$prompt" --greedy "$TMP/greedy" ||
        fail "generate's greedy tokens are not the full model's most likely"
fi

step "replicas: 2 replicas train the weights of 1 (within AdamW's amplified rounding)"
# The worst tensor is qkv_bias: its k third has no gradient (softmax ignores a
# score added to every key alike), so it moves by rounding noise alone.
run_expect 0 fit "$cfg" --run-dir "$TMP/two" --device cpu --replicas 2 --quiet
safetensors close "$TMP/two/last.safetensors" "$ck" 1e-3 >"$TMP/close" || fail "2 replicas: $(tail -1 "$TMP/close")"
tail -1 "$TMP/close"

step "tie_weights: the head is the token table transposed; the table stored once; summary, fit, 2 replicas = 1, resume, NumPy, predict, ONNX, generate"
tied=$TMP/tied.yaml
sed "s/- {type: dense, units: $vocab}\$/- {type: dense, units: $vocab, tie_weights: embedding}/" "$cfg" >"$tied"
grep -q "tie_weights: embedding" "$tied" || fail "the tied config was not written"
run_expect 0 summary "$cfg"
untied_total=$(sed -n 's/^Total params: \([0-9]*\) .*/\1/p' "$TMP/out")
run_expect 0 summary "$tied"
expect_in "$TMP/out" "dense (dense) tied to embedding"
tied_total=$(sed -n 's/^Total params: \([0-9]*\) .*/\1/p' "$TMP/out")
[ "$tied_total" -eq $((untied_total - vocab * 32)) ] ||
    fail "the tied model has $tied_total parameters, expected $untied_total - $vocab x 32 (the kernel it no longer has)"
run_expect 0 fit "$tied" --run-dir "$TMP/tied" --device cpu --replicas 1 --quiet
tck=$TMP/tied/last.safetensors
safetensors header "$tck" embedding/embeddings "$vocab,32" >/dev/null || fail "no embedding/embeddings [$vocab, 32]"
safetensors names "$tck" >"$TMP/names"
! grep -qxE "(optimizer/[a-z_]+/)?dense/kernel" "$TMP/names" || fail "the tied checkpoint stores a dense/kernel"
grep -qx "optimizer/adam_m/embedding/embeddings" "$TMP/names" || fail "no optimizer state of the tied table"
grep -qx "dense/bias" "$TMP/names" || fail "the tied head's bias is not in the checkpoint"
python3 - "$TMP/tied/metrics.csv" <<'PY' || fail "the tied GPT's loss did not fall"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
first, last = float(rows[0]["loss"]), float(rows[-1]["loss"])
assert len(rows) == 4 and first > last + 0.5, (first, last)
print(f"tied: loss {first:.4f} -> {last:.4f}")
PY
# The tied table's gradient is the head's and the lookup's: 2 replicas sum both.
run_expect 0 fit "$tied" --run-dir "$TMP/tied2" --device cpu --replicas 2 --quiet
safetensors close "$TMP/tied2/last.safetensors" "$tck" 1e-3 >"$TMP/close" || fail "tied, 2 replicas: $(tail -1 "$TMP/close")"
tail -1 "$TMP/close"
# 2 epochs, and 1 epoch + --resume: the same bytes (weights and optimizer state).
run_expect 0 fit "$tied" --run-dir "$TMP/tied-straight" --device cpu --replicas 1 --quiet --set training.epochs=2
run_expect 0 fit "$tied" --run-dir "$TMP/tied-resumed" --device cpu --replicas 1 --quiet --set training.epochs=1
run_expect 0 fit "$tied" --run-dir "$TMP/tied-resumed" --device cpu --replicas 1 --quiet --set training.epochs=2 --resume
safetensors identical "$TMP/tied-straight/last.safetensors" "$TMP/tied-resumed/last.safetensors" ||
    fail "the tied GPT resumed is not the tied GPT trained straight"
run_expect 0 evaluate --json "$tied" --checkpoint "$tck" --device cpu
tied_loss=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["loss"])' "$TMP/out")
if "$PY" -c "import numpy, yaml" 2>/dev/null; then
    "$PY" "$HERE/numpy_gpt_forward.py" "$tck" --expect "$tied_loss" --tolerance 1e-4 ||
        fail "the tied GPT: gputrain evaluate's loss is not the NumPy forward pass's"
fi
run_expect 0 predict "$tied" --checkpoint "$tck" --input "$TMP/windows.npy" --output "$TMP/tied-next.npy" --device cpu
"$PY" - "$TMP/tied-next.npy" "$TMP/labels.npy" "$tied_loss" <<'PY' || fail "the tied GPT: predict's probabilities are not evaluate's loss"
import sys
import numpy as np
p, y = np.load(sys.argv[1]), np.load(sys.argv[2])
loss = -np.log(np.take_along_axis(p.astype(np.float64), y[..., None], axis=-1)).mean()
assert abs(loss - float(sys.argv[3])) < 1e-5, (loss, sys.argv[3])
PY
if ! "$GPUTRAIN" export "$tied" --checkpoint "$tck" --onnx "$TMP/tied.onnx" >"$TMP/out" 2>"$TMP/err" &&
    grep -q "gputrain export: not in a sanitizer build" "$TMP/err"; then
    echo "(a sanitizer build: the tied GPT's ONNX check is not run)"
elif "$PY" -c "import numpy, yaml, onnx" 2>/dev/null; then
    run_expect 0 export "$tied" --checkpoint "$tck" --onnx "$TMP/tied.onnx"
    "$PY" "$HERE/onnx_check.py" "$TMP/tied.onnx" || fail "ONNX's checker refuses the tied GPT"
    "$PY" - "$TMP/tied.onnx" <<'PY' || fail "the tied GPT's ONNX graph does not multiply by the table transposed"
import sys
import onnx
g = onnx.load(sys.argv[1]).graph
names = [t.name for t in g.initializer]
assert "dense/kernel" not in names and names.count("embedding/embeddings") == 1, names
transpose = [n for n in g.node if n.op_type == "Transpose" and list(n.input) == ["embedding/embeddings"]]
assert len(transpose) == 1, "no Transpose of the table"
assert any(n.op_type == "MatMul" and transpose[0].output[0] in n.input for n in g.node), "no MatMul by it"
PY
    code=0
    "$PY" "$HERE/numpy_gpt_forward.py" "$tck" --expect "$tied_loss" --tolerance 1e-4 --onnx "$TMP/tied.onnx" || code=$?
    [ "$code" -eq 0 ] || [ "$code" -eq 77 ] || fail "ONNX Runtime's tied GPT is not the NumPy forward pass's"
fi
gen_tied() { run_expect 0 generate "$tied" --checkpoint "$tck" --device cpu "$@"; }
gen_tied --prompt "$prompt" --tokens 40 --top-k 1 --seed 1
cp "$TMP/out" "$TMP/tied-greedy"
if "$PY" -c "import numpy, yaml" 2>/dev/null; then
    "$PY" "$HERE/numpy_gpt_forward.py" "$tck" --prompt "$prompt" --greedy "$TMP/tied-greedy" ||
        fail "the tied GPT's greedy tokens are not the full model's most likely"
fi

step "errors of tie_weights: one line each, naming the layer and the key (exit 2)"
expect_one_line_error 2 "--set model.layers[4].tie_weights=embeding: model.layers[4] (dense): tie_weights: unknown layer 'embeding' (did you mean 'embedding'?); name an embedding layer listed above it (embedding)" \
    fit "$tied" --run-dir "$TMP/bad" --set 'model.layers[4].tie_weights=embeding'
expect_one_line_error 2 "model.layers[4] (dense): tie_weights: 'positional_embedding' is a positional_embedding layer; name an embedding layer, whose table becomes this layer's kernel" \
    fit "$tied" --run-dir "$TMP/bad" --set 'model.layers[4].tie_weights=positional_embedding'
expect_one_line_error 2 "--set model.layers[4].units=$((vocab + 1)): model.layers[4] (dense): units: $((vocab + 1)) is not the input_dim $vocab of embedding 'embedding' (tie_weights: the kernel is its table [$vocab, 32] transposed); set units: $vocab" \
    fit "$tied" --run-dir "$TMP/bad" --set "model.layers[4].units=$((vocab + 1))"
expect_one_line_error 2 "model.layers[4] (dense): tie_weights: the input is 48 wide, and the output_dim of embedding 'embedding' is 32 (the kernel is its table [$vocab, 32] transposed); give this layer inputs 32 wide" \
    fit "$tied" --run-dir "$TMP/bad" --set 'model.layers[3]={type: dense, units: 48}'
expect_one_line_error 2 "--set model.layers[0].trainable=false: model.layers[0] (embedding): trainable: this layer is frozen (trainable: false) and dense 'dense', tied to it (tie_weights), is not; the tied table is one weight: set trainable the same on both" \
    fit "$tied" --run-dir "$TMP/bad" --set 'model.layers[0].trainable=false'
expect_one_line_error 2 "--set model.layers[4].trainable=false: model.layers[4] (dense): trainable: this layer is frozen (trainable: false) and embedding 'embedding', whose table is its kernel (tie_weights), is not; the tied table is one weight: set trainable the same on both" \
    fit "$tied" --run-dir "$TMP/bad" --set 'model.layers[4].trainable=false'
expect_one_line_error 2 "model.layers[4] (dense): tie_weights: is empty; name the embedding layer whose table is this layer's kernel, e.g. tie_weights: embedding" \
    fit "$tied" --run-dir "$TMP/bad" --set "model.layers[4].tie_weights=''"
expect_one_line_error 1 "lacks 1 tensor of the model: dense/kernel (the file's embedding/embeddings is dense/kernel transposed: its head was tied to the embedding; tie this model's too, tie_weights on 'dense'); keep their initializers" \
    fit "$cfg" --run-dir "$TMP/bad" --set "model.init_from=$tck"
expect_one_line_error 2 "model.layers[4] (dense): lr_multiplier: this layer has no parameters of its own: its kernel is the table of embedding 'embedding' (tie_weights) and it has no bias; set lr_multiplier on 'embedding'" \
    fit "$tied" --run-dir "$TMP/bad" --set "model.layers[4].use_bias=false" --set "model.layers[4].lr_multiplier=2"

step "sentencepiece: a model trained from the text (data.vocab_size); generate decodes with the checkpoint's model"
run_expect 0 fit "$cfg" --run-dir "$TMP/spm" --device cpu --replicas 1 --set data.tokenizer=sentencepiece \
    --set data.vocab_size=60 --set 'model.layers[0].input_dim=61' --set 'model.layers[4].units=61' \
    --set training.epochs=2 --set logging.progress=none
[ "$(safetensors metadata "$TMP/spm/last.safetensors" tokenizer)" = sentencepiece ] ||
    fail "no tokenizer: sentencepiece in the checkpoint's metadata"
run_expect 0 generate --checkpoint "$TMP/spm/last.safetensors" --prompt $'ROMEO:\n' --tokens 30 --seed 4
head -c 7 "$TMP/out" | grep -q "ROMEO:" || fail "generate did not start with the prompt"
cp "$TMP/out" "$TMP/spm1.txt"
run_expect 0 generate --checkpoint "$TMP/spm/last.safetensors" --prompt $'ROMEO:\n' --tokens 30 --seed 4
cmp -s "$TMP/out" "$TMP/spm1.txt" || fail "the same seed gave other sentencepiece text"
run_expect 0 evaluate "$cfg" --checkpoint "$TMP/spm/last.safetensors" --set data.tokenizer=sentencepiece \
    --set data.vocab_size=60 --set 'model.layers[0].input_dim=61' --set 'model.layers[4].units=61'
expect_in "$TMP/out" "bits per token"
expect_one_line_error 2 "data.tokenizer: sentencepiece takes a model: give data.tokenizer_model (a .model file) or data.vocab_size (a model trained from the training text), one of the two" \
    fit "$cfg" --run-dir "$TMP/bad" --set data.tokenizer=sentencepiece
printf 'not a model' >"$TMP/bad.model"
expect_one_line_error 1 "data.tokenizer_model: not a SentencePiece model (" \
    fit "$cfg" --run-dir "$TMP/bad" --set data.tokenizer=sentencepiece --set data.tokenizer_model="$TMP/bad.model"

step "errors of generate: one line each"
expect_one_line_error 2 "--prompt: the character 'Z' (U+005A) at character 6 is not in the model's vocabulary of $vocab characters; leave it out" \
    generate "$cfg" --checkpoint "$ck" --prompt 'ROMEO:Z' --tokens 5 --seed 1
expect_one_line_error 2 "--tokens: expected 1 to 100000000, got 0" \
    generate "$cfg" --checkpoint "$ck" --prompt 'R' --tokens 0 --seed 1
expect_one_line_error 2 "--temperature: expected a finite number above 0, got 0" \
    generate "$cfg" --checkpoint "$ck" --prompt 'R' --tokens 5 --temperature 0 --seed 1
expect_one_line_error 2 "--top-k: expected 0 (all) or more, got -1" \
    generate "$cfg" --checkpoint "$ck" --prompt 'R' --tokens 5 --top-k -1
expect_one_line_error 2 "--top-p: expected a number above 0 and at most 1 (1: all), got 0" \
    generate "$cfg" --checkpoint "$ck" --prompt 'R' --tokens 5 --top-p 0
expect_one_line_error 2 "--top-p: expected a number above 0 and at most 1 (1: all), got 1.5" \
    generate "$cfg" --checkpoint "$ck" --prompt 'R' --tokens 5 --top-p 1.5
expect_one_line_error 2 "--prompt: is empty; give at least one character" \
    generate "$cfg" --checkpoint "$ck" --prompt '' --tokens 5
syn=$TMP/syn.yaml
write_synthetic_config "$syn"
run_expect 0 fit "$syn" --run-dir "$TMP/mlp" --device cpu --set training.epochs=1 --quiet
expect_one_line_error 2 "$TMP/mlp/last.safetensors (its config): data.format is synthetic; generate samples from models trained on format: text" \
    generate --checkpoint "$TMP/mlp/last.safetensors" --prompt 'R' --tokens 5

step "errors of the text: one line each (exit 1)"
printf 'ROMEO:\nCaf\xe9 au lait, sweet love, caf\xe9.\n' >"$TMP/latin1.txt"
expect_one_line_error 1 "$TMP/latin1.txt: byte offset 10 (0xE9) is not UTF-8; data.tokenizer chars reads UTF-8 text: convert the file (iconv -t UTF-8) or use tokenizer: bytes" \
    fit "$cfg" --run-dir "$TMP/bad" --set data.path="$TMP/latin1.txt"
: >"$TMP/empty.txt"
expect_one_line_error 1 "$TMP/empty.txt: the text is empty" \
    fit "$cfg" --run-dir "$TMP/bad" --set data.path="$TMP/empty.txt"
printf 'ROMEO:\nMy lord.' >"$TMP/short.txt"
expect_one_line_error 1 "$TMP/short.txt: 15 tokens make no sample of 16 positions (and the label of the last); give a longer text or a smaller model.input_shape" \
    fit "$cfg" --run-dir "$TMP/bad" --set data.path="$TMP/short.txt"

# Another text of other characters: its ids would mean other characters.
python3 -c "print('abc ' * 3000)" >"$TMP/other.txt"
cp -r "$TMP/run" "$TMP/run-other"
expect_one_line_error 1 "$TMP/run-other/last.safetensors: trained on a text of other characters ($vocab in its vocabulary, 5 in this one's), so its token ids would mean other characters; resume on the text it was trained on" \
    fit "$cfg" --run-dir "$TMP/run-other" --resume --set training.epochs=5 --set data.path="$TMP/other.txt"
expect_one_line_error 1 "$ck: trained on a text of other characters ($vocab in its vocabulary, 5 in this one's), so the token ids would mean other characters; evaluate it on the text it was trained on" \
    evaluate "$cfg" --checkpoint "$ck" --set data.path="$TMP/other.txt"

step "errors of the model and config: one line each (exit 2)"
expect_one_line_error 2 "loss: mean_squared_error does not train next-token labels (format text); use sparse_categorical_crossentropy" \
    fit "$cfg" --run-dir "$TMP/bad" --set loss.name=mean_squared_error --set loss.from_logits=false
expect_one_line_error 2 "--set model.input_shape=[4, 8]: model.input_shape: format text takes a block of token ids, [positions], not 2 axes; e.g. input_shape: [256]" \
    fit "$cfg" --run-dir "$TMP/bad" --set 'model.input_shape=[4, 8]'
expect_one_line_error 2 "loss.from_logits is false, but the last layer does not end in softmax: its scores would be read as probabilities; set loss.from_logits: true" \
    fit "$cfg" --run-dir "$TMP/bad" --set loss.from_logits=false
expect_one_line_error 2 "model.layers[0] (embedding): input_dim 20 is smaller than the vocabulary of $vocab tokens (data.path ($TMP/play.txt, $chars tokens, chars vocabulary)); set input_dim: $vocab" \
    fit "$cfg" --run-dir "$TMP/bad" --set 'model.layers[0].input_dim=20'
expect_one_line_error 2 "model.layers[0] (embedding): input_dim 20 is smaller than the vocabulary of $vocab tokens (data.path ($TMP/play.txt, $chars tokens, chars vocabulary)); set input_dim: $vocab, and units: $vocab on 'dense', whose kernel is its table (tie_weights)" \
    fit "$tied" --run-dir "$TMP/bad" --set 'model.layers[0].input_dim=20' --set 'model.layers[4].units=20'
expect_one_line_error 2 "layer 'h/block1/causal_self_attention' (causal_self_attention): heads 3 does not divide the width 32; use a divisor of it such as 2 or 4" \
    fit "$cfg" --run-dir "$TMP/bad" --set 'model.layers[2].heads=3'
expect_one_line_error 2 "--input '$TMP/play.txt': a model of format text takes windows of token ids, an NPY array of shape (N, 16) of whole numbers (the ids its tokenizer makes of the text)" \
    predict "$cfg" --checkpoint "$ck" --input "$TMP/play.txt" --output "$TMP/p.npy"
"$PY" -c "
import numpy as np, sys
a = np.zeros((3, 16)); a[1, 5] = 1.5; np.save(sys.argv[1], a)
b = np.zeros((2, 16), dtype=np.int64); b[1, 2] = int(sys.argv[3]); np.save(sys.argv[2], b)" "$TMP/half.npy" "$TMP/big.npy" "$vocab"
expect_one_line_error 1 "$TMP/half.npy: sample 1, position 5: 1.5 is no token id (whole numbers from 0 to $((vocab - 1)), the embedding's input_dim); give the ids of the text as the model's tokenizer makes them" \
    predict "$cfg" --checkpoint "$ck" --input "$TMP/half.npy"
expect_one_line_error 1 "$TMP/big.npy: sample 1, position 2: $vocab is no token id" \
    predict "$cfg" --checkpoint "$ck" --input "$TMP/big.npy"
expect_one_line_error 2 "--confusion: not for a model of format text (a label at every position); leave it out" \
    evaluate "$cfg" --checkpoint "$ck" --confusion
expect_one_line_error 2 "format text: evaluate reads the last data.validation_split of the text's windows, and data.validation_split is 0; set it (e.g. 0.1) as training did" \
    evaluate "$cfg" --checkpoint "$ck" --set data.validation_split=0
expect_one_line_error 2 "optimizer.no_decay[1]: expected bias, norm or embedding, got 'weights'; e.g. no_decay: [bias, norm, embedding] (minGPT's groups)" \
    fit "$cfg" --run-dir "$TMP/bad" --set 'optimizer.no_decay=[bias, weights]'
expect_one_line_error 2 "data.tokenizer: is only used with format: text; remove it or set format: text" \
    fit "$syn" --run-dir "$TMP/bad" --set data.tokenizer=chars
expect_one_line_error 2 "data.sequence_stride: is only used with format: text; remove it or set format: text" \
    fit "$syn" --run-dir "$TMP/bad" --set data.sequence_stride=1
expect_one_line_error 2 "data.sequence_stride: expected a positive integer, got '0'" \
    fit "$cfg" --run-dir "$TMP/bad" --set data.sequence_stride=0
expect_one_line_error 2 "data.scale: is not used with format: text (the model takes token ids as they are); remove it" \
    fit "$cfg" --run-dir "$TMP/bad" --set data.scale=0.5
expect_one_line_error 2 "data.normalize: is not used with format: text (the model takes token ids as they are); remove it" \
    fit "$cfg" --run-dir "$TMP/bad" --set 'data.normalize={mean: [1], std: [2]}'
expect_one_line_error 2 "model.layers[0]: the model's output has 8 positions of 4 scores, and synthetic train (500 samples, 4 classes, seed 7) has one label per sample; add a flatten layer before the last dense layer (one output per position is for format: text)" \
    fit "$syn" --run-dir "$TMP/bad" --set 'model.layers=[{type: dense, units: 4}]'

step "attention dropout: summary, fit (1 epoch + --resume = 2 epochs, byte for byte; 2 replicas = 1), inference without it (NumPy), errors"
adrop=$TMP/attn-dropout.yaml
sed -e 's/params: {width: ~, hidden: ~, heads: ~}/params: {width: ~, hidden: ~, heads: ~, attn_dropout: 0.2}/' \
    -e 's/- {type: causal_self_attention, heads: \$heads}/- {type: causal_self_attention, heads: $heads, dropout: $attn_dropout}/' \
    "$cfg" >"$adrop"
grep -q 'dropout: \$attn_dropout' "$adrop" || fail "the attention dropout config was not written"
run_expect 0 summary "$adrop"
expect_in "$TMP/out" "h/block2/causal_self_attention (causal_self_attention) 2 heads, dropout 0.2"
run_expect 0 fit "$adrop" --run-dir "$TMP/ad-straight" --device cpu --replicas 1 --quiet --set training.epochs=2
run_expect 0 fit "$adrop" --run-dir "$TMP/ad-resumed" --device cpu --replicas 1 --quiet --set training.epochs=1
run_expect 0 fit "$adrop" --run-dir "$TMP/ad-resumed" --device cpu --replicas 1 --quiet --set training.epochs=2 --resume
safetensors identical "$TMP/ad-straight/last.safetensors" "$TMP/ad-resumed/last.safetensors" ||
    fail "the GPT with attention dropout resumed is not the one trained straight (the mask must come from the step)"
# Each replica's mask is that of its samples' places in the global batch.
run_expect 0 fit "$adrop" --run-dir "$TMP/ad-two" --device cpu --replicas 2 --quiet --set training.epochs=2
safetensors close "$TMP/ad-two/last.safetensors" "$TMP/ad-straight/last.safetensors" 1e-3 >"$TMP/close" ||
    fail "attention dropout, 2 replicas: $(tail -1 "$TMP/close")"
tail -1 "$TMP/close"
# The dropout acts: the same run without it trains other weights, and its first epoch's loss is lower.
run_expect 0 fit "$cfg" --run-dir "$TMP/ad-none" --device cpu --replicas 1 --quiet --set training.epochs=2
python3 - "$TMP/ad-straight/metrics.csv" "$TMP/ad-none/metrics.csv" <<'PY' || fail "attention dropout did not change training"
import csv, sys
dropped, plain = (list(csv.DictReader(open(p))) for p in sys.argv[1:3])
a, b = float(dropped[0]["loss"]), float(plain[0]["loss"])
print(f"first epoch's loss: {a:.4f} with attention dropout 0.2, {b:.4f} without")
assert a != b, (a, b)
PY
# Inference has no dropout: evaluate is the NumPy forward pass (which has none).
run_expect 0 evaluate --json "$adrop" --checkpoint "$TMP/ad-straight/last.safetensors" --device cpu
ad_loss=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["loss"])' "$TMP/out")
if "$PY" -c "import numpy, yaml" 2>/dev/null; then
    "$PY" "$HERE/numpy_gpt_forward.py" "$TMP/ad-straight/last.safetensors" --expect "$ad_loss" --tolerance 1e-4 ||
        fail "attention dropout: evaluate's loss is not the NumPy forward pass's (inference drops nothing)"
fi
expect_one_line_error 2 "layer 'h/block1/causal_self_attention' (causal_self_attention, blocks.transformer.layers[1]): dropout: must be in [0.0, 1.0), got 1" \
    fit "$adrop" --run-dir "$TMP/bad" --set 'model.layers[2].attn_dropout=1'
expect_one_line_error 2 "dropout: must be in [0.0, 1.0), got -0.5" \
    fit "$adrop" --run-dir "$TMP/bad" --set 'model.layers[2].attn_dropout=-0.5'
expect_one_line_error 2 "dropout: expected a number, got 'high'" \
    fit "$adrop" --run-dir "$TMP/bad" --set 'model.layers[2].attn_dropout=high'

step "token cache: the second fit maps the ids the first tokenized (GPUTRAIN_CACHE), 2 bytes a token; the same weights"
tcache=$TMP/token-cache
cp "$TMP/play.txt" "$TMP/cached-play.txt"
tc_fit() {
    GPUTRAIN_CACHE=$tcache run_expect 0 fit "$cfg" --run-dir "$1" --device cpu --replicas 1 --set training.epochs=1 \
        --set data.path="$TMP/cached-play.txt" --set logging.progress=none
}
tc_fit "$TMP/tc1"
expect_in "$TMP/out" "$TMP/cached-play.txt: $chars tokens, tokenized in "
expect_in "$TMP/out" "written to the token cache $tcache/cached-play-"
tc_fit "$TMP/tc2"
expect_in "$TMP/out" "$TMP/cached-play.txt: $chars tokens from the token cache $tcache/cached-play-"
grep -q "tokenized in" "$TMP/out" && fail "the second fit tokenized the text again: $(cat "$TMP/out")"
safetensors identical "$TMP/tc1/last.safetensors" "$TMP/tc2/last.safetensors" ||
    fail "a fit from the token cache trained other weights than the fit that tokenized"
[ "$(safetensors metadata "$TMP/tc2/last.safetensors" vocabulary)" = "$(safetensors metadata "$ck" vocabulary)" ] ||
    fail "the cached run's checkpoint has another vocabulary"
ls "$tcache" >"$TMP/tc-files"
[ "$(wc -l <"$TMP/tc-files")" -eq 1 ] || fail "expected one file in the token cache: $(cat "$TMP/tc-files")"
size=$(stat -c %s "$tcache"/cached-play-*.tokens)
# $chars ids of 2 bytes, after a header of 64 bytes, the key (paths, sizes, times) and the characters.
[ "$size" -ge $((2 * chars + 64)) ] && [ "$size" -lt $((2 * chars + 1024)) ] ||
    fail "the token cache holds $size bytes for $chars tokens of a $vocab-character vocabulary (2 bytes a token and a header expected)"
# A text touched since: tokenized again and rewritten; a cache cut short: the same.
touch -d "+1 minute" "$TMP/cached-play.txt"
tc_fit "$TMP/tc3"
expect_in "$TMP/out" "$TMP/cached-play.txt changed since it was written; the text is tokenized again"
safetensors identical "$TMP/tc1/last.safetensors" "$TMP/tc3/last.safetensors" || fail "the text tokenized again trained other weights"
truncate -s -1 "$tcache"/cached-play-*.tokens
tc_fit "$TMP/tc4"
expect_in "$TMP/out" "not whole ($((size - 1)) bytes where its header says $size); the text is tokenized again"
[ "$(stat -c %s "$tcache"/cached-play-*.tokens)" -eq "$size" ] || fail "the cut token cache was not rewritten"
tc_fit "$TMP/tc5"
expect_in "$TMP/out" "$chars tokens from the token cache"

step "17 M windows (data.sequence_stride 1 over 17 MB): the epoch order computed window by window; 2 replicas = 1; resume = straight"
# Above data::EpochOrder::kMaterializedLimit (16.8 M) windows the loader computes
# each epoch's order (a keyed Feistel permutation) instead of holding a list,
# and CPU replicas take their batches from it.
python3 - "$TMP/play.txt" "$TMP/big.txt" <<'PY'
import sys
play = open(sys.argv[1], encoding="utf-8").read()
open(sys.argv[2], "w", encoding="utf-8").write(play * (17_200_000 // len(play) + 1))
PY
big_fit() {
    run_expect 0 fit "$cfg" --run-dir "$1" --device cpu --quiet --set data.path="$TMP/big.txt" \
        --set data.sequence_stride=1 --set data.validation_split=0.00002 --set training.steps_per_epoch=3 "${@:2}"
}
big_fit "$TMP/big1" --replicas 1 --set training.epochs=2
big_fit "$TMP/big2" --replicas 2 --set training.epochs=2
safetensors close "$TMP/big2/last.safetensors" "$TMP/big1/last.safetensors" 1e-3 >"$TMP/close" ||
    fail "17 M windows, 2 replicas: $(tail -1 "$TMP/close")"
big_fit "$TMP/big-resumed" --replicas 1 --set training.epochs=1
big_fit "$TMP/big-resumed" --replicas 1 --set training.epochs=2 --resume
safetensors identical "$TMP/big1/last.safetensors" "$TMP/big-resumed/last.safetensors" ||
    fail "17 M windows: epoch 2 resumed trained other weights than the straight run (its computed order differs)"
run_expect 0 data "$cfg" --set data.path="$TMP/big.txt" --set data.sequence_stride=1 --set data.validation_split=0.00002
big_windows=$(sed -n 's/^  \([0-9]*\) windows of 16 tokens.*/\1/p' "$TMP/out" | head -1)
[ "${big_windows:-0}" -gt 16777216 ] || fail "the big text has ${big_windows:-no} training windows, not more than 16,777,216"
rm -f "$TMP/big.txt"

step "rotary: RoPE on the queries and keys instead of a positional_embedding; summary, fit, evaluate = NumPy, greedy generate (the cache's positions) = the full model, errors"
rope=$TMP/rotary.yaml
sed -e 's/- {type: causal_self_attention, heads: \$heads}/- {type: causal_self_attention, heads: $heads, rotary: true}/' \
    -e '/- {type: positional_embedding}/d' "$cfg" >"$rope"
grep -q 'rotary: true' "$rope" && ! grep -q positional_embedding "$rope" || fail "the rotary config was not written"
run_expect 0 summary "$rope"
expect_in "$TMP/out" "h/block2/causal_self_attention (causal_self_attention) 2 heads, rotary"
run_expect 0 fit "$rope" --run-dir "$TMP/rope" --device cpu --replicas 1 --quiet
rck=$TMP/rope/last.safetensors
python3 - "$TMP/rope/metrics.csv" <<'PY' || fail "the rotary GPT's loss did not fall"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
first, last = float(rows[0]["loss"]), float(rows[-1]["loss"])
assert len(rows) == 4 and first > last + 0.5, (first, last)
print(f"rotary: loss {first:.4f} -> {last:.4f}")
PY
run_expect 0 evaluate --json "$rope" --checkpoint "$rck" --device cpu
rope_loss=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["loss"])' "$TMP/out")
run_expect 0 generate "$rope" --checkpoint "$rck" --device cpu --prompt "$prompt" --tokens 60 --top-k 1 --seed 1
cp "$TMP/out" "$TMP/rope-greedy"
if "$PY" -c "import numpy, yaml" 2>/dev/null; then
    "$PY" "$HERE/numpy_gpt_forward.py" "$rck" --expect "$rope_loss" --tolerance 1e-4 ||
        fail "the rotary GPT: gputrain evaluate's loss is not the NumPy forward pass's"
    "$PY" "$HERE/numpy_gpt_forward.py" "$rck" --prompt "$prompt" --greedy "$TMP/rope-greedy" ||
        fail "the rotary GPT's greedy tokens are not the full model's most likely"
fi
expect_one_line_error 2 "layer 'h/block1/causal_self_attention' (causal_self_attention): rotary turns pairs of a head's columns, and its head size (width 32 / heads 32) is 1, odd; choose heads so that width / heads is even, such as heads: 16" \
    fit "$rope" --run-dir "$TMP/bad" --set 'model.layers[1].heads=32'

echo "PASS"
