"""The GPT decoder block of gpt.c in a few lines of numpy + simdattn, checked
against the C program: reads the file `gpt --dump FILE` wrote (geometry,
weights, tokens, logits), runs the whole fed sequence through the model in
one causal pass (no KV cache) and compares the logits with C's
prefill-then-decode ones.

    gpt --dump gpt.bin && python3 gpt.py gpt.bin       # exit 1 on mismatch
"""
import sys

import numpy as np
import simdattn

F32 = np.dtype("<f4")
FIELDS = ("vocab d_model heads d_head d_mlp layers max_pos prompt generate "
          "rows tokens seed").split()
PER_LAYER = ("ln1_g ln1_b w_q b_q w_k b_k w_v b_v w_o b_o "
             "ln2_g ln2_b w_fc b_fc w_proj b_proj").split()


def read(path):
    """The dump as (geometry dict, tokens, weights, logits); the layout is
    written down above dump() in gpt.c."""
    buf = open(path, "rb").read()
    if buf[:8] != b"SAGPT001" or len(buf) < 8 + 12 * 8:
        sys.exit("%s: not a gpt --dump file (or another byte order)" % path)
    g = dict(zip(FIELDS, np.frombuffer(buf, "<i8", 12, 8).tolist()))
    at = 8 + 12 * 8
    if len(buf) < at + 4 * g["tokens"]:
        sys.exit("%s: truncated (%d bytes)" % (path, len(buf)))
    tokens = np.frombuffer(buf, "<i4", g["tokens"], at)
    at += 4 * g["tokens"]

    def take(*shape):
        nonlocal at
        if at + 4 * int(np.prod(shape)) > len(buf):
            sys.exit("%s: truncated (%d bytes)" % (path, len(buf)))
        a = np.frombuffer(buf, F32, int(np.prod(shape)), at).reshape(shape)
        at += a.nbytes
        return a

    d, hd, m = g["d_model"], g["heads"] * g["d_head"], g["d_mlp"]
    shapes = dict(ln1_g=(d,), ln1_b=(d,), w_q=(d, hd), b_q=(hd,),
                  w_k=(d, hd), b_k=(hd,), w_v=(d, hd), b_v=(hd,),
                  w_o=(hd, d), b_o=(d,), ln2_g=(d,), ln2_b=(d,),
                  w_fc=(d, m), b_fc=(m,), w_proj=(m, d), b_proj=(d,))
    w = dict(tok_emb=take(g["vocab"], d), pos_emb=take(g["max_pos"], d))
    w["layers"] = [{k: take(*shapes[k]) for k in PER_LAYER}
                   for _ in range(g["layers"])]
    w["lnf_g"], w["lnf_b"] = take(d), take(d)
    logits = take(g["rows"], g["vocab"])
    if at != len(buf):
        sys.exit("%s: %d bytes left over: not the layout gpt.py knows"
                 % (path, len(buf) - at))
    return g, tokens, w, logits


def layernorm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True)
                              + np.float32(1e-5)) * g + b


def gelu(x):  # GPT-2's tanh approximation, as gpt.c
    return 0.5 * x * (1 + np.tanh(np.float32(0.7978845608)
                                  * (x + np.float32(0.044715) * x ** 3)))


def block(x, w, heads, d_head):
    """One pre-LN decoder block on rows x [L, d_model] (float32)."""
    L = len(x)
    h = layernorm(x, w["ln1_g"], w["ln1_b"])
    q, k, v = ((h @ w[a] + w[b]).reshape(L, heads, d_head)
               for a, b in (("w_q", "b_q"), ("w_k", "b_k"), ("w_v", "b_v")))
    a = simdattn.attention(q, k, v, causal=True, layout="blhd")  # [L, H, D]
    x = x + a.reshape(L, heads * d_head) @ w["w_o"] + w["b_o"]
    h = layernorm(x, w["ln2_g"], w["ln2_b"])
    return x + gelu(h @ w["w_fc"] + w["b_fc"]) @ w["w_proj"] + w["b_proj"]


def main(path):
    g, tokens, w, c_logits = read(path)
    T = g["rows"]  # every position C fed: prompt + generate - 1
    x = w["tok_emb"][tokens[:T]] + w["pos_emb"][:T]
    for layer in w["layers"]:
        x = block(x, layer, g["heads"], g["d_head"])
    logits = layernorm(x, w["lnf_g"], w["lnf_b"]) @ w["tok_emb"].T
    assert logits.dtype == np.float32

    # gpt.c's tolerance: 8 sqrt(d_mlp) (layers + 1) ulps of the largest
    # logit. numpy's matmuls (BLAS) and LayerNorm (pairwise sums) order
    # their sums differently from C's loops; that is the only difference.
    ulps = 8 * np.sqrt(g["d_mlp"]) * (g["layers"] + 1)
    tol = ulps * np.finfo(np.float32).eps * max(1.0, np.abs(logits).max())
    diff = float(np.abs(logits - c_logits).max())
    P = g["prompt"]
    greedy = logits[P - 1:].argmax(-1)
    same = int((greedy == tokens[P:]).sum())
    ok = diff <= tol
    print("gpt.py: %d layer(s), %d heads x %d, %d positions, simdattn %s "
          "(%s): logits max |diff| vs gpt.c %.3g (tol %.3g), greedy tokens "
          "%d/%d the same: %s"
          % (g["layers"], g["heads"], g["d_head"], T, simdattn.__version__,
             simdattn.default_kernel_set().name, diff, tol, same,
             g["generate"], "ok" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 gpt.py FILE   (FILE from gpt --dump FILE)")
    sys.exit(main(sys.argv[1]))
