#!/usr/bin/env python3
"""An independent GPT-2 forward (numpy, float64) from the layouts other tools use, to check Surge's
exports: gpt2_numpy.py hf|llmc WEIGHTS IDS LOGITS [TOL]
     or: gpt2_numpy.py choices WEIGHTS JSONL ACCURACY NATS (safetensors; examples of token ids)

  hf    WEIGHTS is a safetensors file with Hugging Face's GPT-2 names (Conv1D weights [in, out]),
        read by the plain reader below (8-byte little-endian header length, JSON header, raw data);
        the heads from config.json beside it
  llmc  WEIGHTS is llm.c's model file (256 int32 header, then its 16 tensors, Linear layout)
IDS is whitespace-separated token ids, LOGITS Surge's float32 logits (tokens, V) for them. Prints
the worst difference; exit 0 when every logit is within TOL (default 1e-5) of this forward's,
1 when not, 77 without numpy. choices: score each example's endings by the sum of their tokens'
log-probabilities after the context (doc/eval.md); exit 0 when the accuracy is ACCURACY and the
mean label completion log-probability NATS (surge-eval's) to 1e-5 relative. Written from the formats' descriptions, not from Surge's code."""
import json
import os
import struct
import sys

try:
    import numpy as np
except ImportError:
    print("numpy is not installed")
    sys.exit(77)


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        lo, hi = e["data_offsets"]
        raw = data[lo:hi]
        if e["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4")
        elif e["dtype"] == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise SystemExit("unexpected dtype " + e["dtype"])
        out[name.removeprefix("transformer.")] = a.reshape(e["shape"]).astype(np.float64)
    return out


def hf_model(path):
    w = read_safetensors(path)
    with open(os.path.join(os.path.dirname(path) or ".", "config.json")) as f:
        cfg = json.load(f)
    L, heads = cfg["n_layer"], cfg["n_head"]
    blocks = []
    for i in range(L):
        p = lambda s: w["h.%d.%s" % (i, s)]
        blocks.append(dict(ln1=(p("ln_1.weight"), p("ln_1.bias")), ln2=(p("ln_2.weight"), p("ln_2.bias")),
                           qkv=(p("attn.c_attn.weight"), p("attn.c_attn.bias")),  # Conv1D: x @ W
                           proj=(p("attn.c_proj.weight"), p("attn.c_proj.bias")),
                           fc=(p("mlp.c_fc.weight"), p("mlp.c_fc.bias")),
                           fcproj=(p("mlp.c_proj.weight"), p("mlp.c_proj.bias"))))
    return w["wte.weight"], w["wpe.weight"], blocks, (w["ln_f.weight"], w["ln_f.bias"]), heads, cfg["vocab_size"]


def llmc_model(path):
    with open(path, "rb") as f:
        blob = f.read()
    h = struct.unpack("<256i", blob[:1024])
    assert h[0] == 20240326, "magic"
    version, maxT, V, L, NH, C, Vp = h[1:8]
    if version == 3:
        a = np.frombuffer(blob[1024:], dtype="<f4").astype(np.float64)
    else:
        a = (np.frombuffer(blob[1024:], dtype="<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    shapes = [(Vp, C), (maxT, C), (L, C), (L, C), (L, 3 * C, C), (L, 3 * C), (L, C, C), (L, C), (L, C), (L, C),
              (L, 4 * C, C), (L, 4 * C), (L, C, 4 * C), (L, C), (C,), (C,)]
    t, at = [], 0
    for s in shapes:
        n = int(np.prod(s))
        t.append(a[at:at + n].reshape(s))
        at += n
    assert at == a.size, "file size"
    wte, wpe, ln1w, ln1b, qkvw, qkvb, pw, pb, ln2w, ln2b, fcw, fcb, fpw, fpb, lnfw, lnfb = t
    blocks = [dict(ln1=(ln1w[i], ln1b[i]), ln2=(ln2w[i], ln2b[i]), qkv=(qkvw[i].T, qkvb[i]), proj=(pw[i].T, pb[i]),
                   fc=(fcw[i].T, fcb[i]), fcproj=(fpw[i].T, fpb[i])) for i in range(L)]  # Linear: x @ W.T
    return wte[:V], wpe, blocks, (lnfw, lnfb), NH, V


def layernorm(x, wb):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * wb[0] + wb[1]


def gelu(x):  # GPT-2's tanh approximation ("gelu_new")
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def forward(model, ids):
    wte, wpe, blocks, lnf, heads, V = model
    T = len(ids)
    x = wte[ids] + wpe[:T]
    C = x.shape[1]
    hs = C // heads
    mask = np.triu(np.ones((T, T), dtype=bool), 1)
    for b in blocks:
        qkv = layernorm(x, b["ln1"]) @ b["qkv"][0] + b["qkv"][1]
        q, k, v = (qkv[:, i * C:(i + 1) * C].reshape(T, heads, hs).transpose(1, 0, 2) for i in range(3))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hs)
        s[:, mask] = -np.inf
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        y = (p @ v).transpose(1, 0, 2).reshape(T, C)
        x = x + y @ b["proj"][0] + b["proj"][1]
        h = gelu(layernorm(x, b["ln2"]) @ b["fc"][0] + b["fc"][1])
        x = x + h @ b["fcproj"][0] + b["fcproj"][1]
    return layernorm(x, lnf) @ wte[:V].T


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def choices(weights, jsonl, accuracy, nats):
    model = hf_model(weights)
    right, total, label_nats = 0, 0, 0.0
    with open(jsonl) as f:
        for line in f:
            if not line.strip():
                continue
            ex = json.loads(line)
            ctx, scores = ex["context"], []
            for end in ex["endings"]:
                row = ctx + end
                lp = log_softmax(forward(model, row[:-1]))
                scores.append(sum(lp[t - 1, row[t]] for t in range(len(ctx), len(row))))
            right += int(np.argmax(scores)) == ex["label"]
            label_nats -= scores[ex["label"]]
            total += 1
    acc, mean = right / total, label_nats / total
    print("choices: %d examples, accuracy %.4f (surge %.4f), label completion %.6f nats (surge %.6f)"
          % (total, acc, accuracy, mean, nats))
    sys.exit(0 if abs(acc - accuracy) < 1e-4 and abs(mean - nats) <= 1e-5 * max(1.0, abs(mean)) else 1)


def main():
    if sys.argv[1] == "choices":
        choices(sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]))
    kind, weights, ids_path, logits_path = sys.argv[1:5]
    tol = float(sys.argv[5]) if len(sys.argv) > 5 else 1e-5
    model = hf_model(weights) if kind == "hf" else llmc_model(weights)
    with open(ids_path) as f:
        ids = [int(t) for t in f.read().split()]
    ids = ids[:model[1].shape[0]]
    want = forward(model, ids)
    got = np.fromfile(logits_path, dtype="<f4").astype(np.float64).reshape(want.shape)
    worst = float(np.abs(got - want).max())
    print("%s: %d tokens x %d logits, worst |surge - numpy| = %.3g (tolerance %g, largest logit %.3g)"
          % (kind, want.shape[0], want.shape[1], worst, tol, float(np.abs(want).max())))
    sys.exit(0 if worst <= tol else 1)


main()
