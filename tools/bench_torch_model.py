#!/usr/bin/env python3
"""PyTorch anchor for `bp bench --op model`: the model of tools/model/model.h.

Reads cases from stdin, one per line:
    ID KIND DTYPE LAYERS D_MODEL HEADS KV_HEADS D_FF VOCAB BATCH SEQ POS
KIND gpt2 or llama, DTYPE f32 or bf16; SEQ tokens per sequence at positions
POS.. (prefill: POS 0; decode: SEQ 1 over a KV cache of POS tokens, filled
first). The model is the same as backplane's: GPT-2 (LayerNorm, packed QKV
with bias, causal attention, exact GELU MLP) or Llama (RMSNorm, packed QKV
with KV_HEADS heads, half-split RoPE, SwiGLU), residual adds, a final norm
and a vocabulary projection; attention is matmul + softmax + matmul (this
torch's scaled_dot_product_attention when it has one).
Writes JSON lines: a header {"available": true, "version": ..., "threads": N}
then {"id": ID, "ms": BEST_MS} per case. Weights are torch's random normals
(only the time is compared). When torch cannot be imported the header says
{"available": false, "reason": ...}.

With --device cuda the model runs on the GPU (bp bench's device is a CUDA
or ROCm one), each timed call ending in torch.cuda.synchronize().

usage: tools/bench_torch_model.py [--quick] [--threads N] [--device cpu|cuda] < cases
"""
import json
import math
import os
import sys
import time


SYNC = [lambda: None]


def best_ms(fn, quick):
    fn()
    fn()
    best, total, reps = None, 0.0, 0
    min_reps, min_s, max_reps = (3, 0.1, 10) if quick else (5, 0.5, 40)
    while reps < max_reps and (reps < min_reps or total < min_s):
        SYNC[0]()
        t0 = time.perf_counter()
        fn()
        SYNC[0]()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
        total, reps = total + dt, reps + 1
    return best * 1e3


class Model:
    def __init__(self, torch, F, kind, dtype, layers, d, h, hkv, f, vocab, batch, max_seq):
        self.t, self.F, self.kind = torch, F, kind
        self.d, self.h, self.hkv, self.f, self.dh = d, h, hkv, f, d // h
        kv = hkv * self.dh
        self.width = d + 2 * kv
        up = f if kind == "gpt2" else 2 * f

        def w(*shape):
            return (torch.randn(*shape) / math.sqrt(shape[0])).to(dtype)

        def b(n):
            return (torch.rand(n) * 0.2 - 0.1).to(dtype)

        self.layers = []
        for _ in range(layers):
            lay = {"wqkv": w(d, self.width), "wo": w(d, d), "wup": w(d, up), "wdown": w(f, d),
                   "g1": torch.ones(d, dtype=dtype), "g2": torch.ones(d, dtype=dtype),
                   "k": torch.zeros(batch, hkv, max_seq, self.dh, dtype=dtype),
                   "v": torch.zeros(batch, hkv, max_seq, self.dh, dtype=dtype)}
            if kind == "gpt2":
                lay.update({"b1": b(d), "b2": b(d), "bqkv": b(self.width), "bo": b(d),
                            "bup": b(f), "bdown": b(d)})
            self.layers.append(lay)
        self.gf = torch.ones(d, dtype=dtype)
        self.bf = b(d)
        self.wlm = w(d, vocab)
        half = self.dh // 2
        pos = torch.arange(max_seq, dtype=torch.float64)[:, None]
        inv = torch.pow(10000.0, -2.0 * torch.arange(half, dtype=torch.float64) / self.dh)
        self.cos = torch.cos(pos * inv).to(dtype)
        self.sin = torch.sin(pos * inv).to(dtype)
        self.sdpa = getattr(F, "scaled_dot_product_attention", None)

    def norm(self, x, g, b):
        if self.kind == "gpt2":
            return self.F.layer_norm(x, (self.d,), g, b, 1e-5)
        ms = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch_rsqrt(self.t, ms + 1e-6)).to(x.dtype) * g

    def rope(self, x, pos):  # x [B, S, n, Dh]
        s, half = x.shape[1], self.dh // 2
        c = self.cos[pos:pos + s][None, :, None, :]
        sn = self.sin[pos:pos + s][None, :, None, :]
        x1, x2 = x[..., :half], x[..., half:]
        return self.t.cat((x1 * c - x2 * sn, x2 * c + x1 * sn), dim=-1)

    def attend(self, q, k, v, causal):  # q [B,H,S,Dh], k/v [B,Hkv,T,Dh]
        rep = self.h // self.hkv
        if rep > 1:
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        if self.sdpa is not None:
            return self.sdpa(q, k, v, is_causal=causal)
        sc = self.t.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.dh))
        if causal:
            s = q.shape[2]
            mask = self.t.ones(s, s, dtype=self.t.bool).triu(1)
            sc = sc.masked_fill(mask, float("-inf"))
        return self.t.matmul(self.t.softmax(sc, dim=-1), v)

    def block(self, x, lay, pos):
        t, F = self.t, self.F
        bsz, s, d = x.shape
        kv = self.hkv * self.dh
        hn = self.norm(x, lay["g1"], lay.get("b1"))
        qkv = hn @ lay["wqkv"]
        if "bqkv" in lay:
            qkv = qkv + lay["bqkv"]
        q = qkv[..., :d].view(bsz, s, self.h, self.dh)
        k = qkv[..., d:d + kv].view(bsz, s, self.hkv, self.dh)
        v = qkv[..., d + kv:].view(bsz, s, self.hkv, self.dh)
        if self.kind == "llama":
            q, k = self.rope(q, pos), self.rope(k, pos)
        lay["k"][:, :, pos:pos + s] = k.transpose(1, 2)
        lay["v"][:, :, pos:pos + s] = v.transpose(1, 2)
        keys, vals = lay["k"][:, :, :pos + s], lay["v"][:, :, :pos + s]
        a = self.attend(q.transpose(1, 2), keys, vals, causal=s > 1)
        a = a.transpose(1, 2).reshape(bsz, s, d) @ lay["wo"]
        if "bo" in lay:
            a = a + lay["bo"]
        x = x + a
        hn = self.norm(x, lay["g2"], lay.get("b2"))
        if self.kind == "gpt2":
            m = F.gelu(hn @ lay["wup"] + lay["bup"]) @ lay["wdown"] + lay["bdown"]
        else:
            gu = hn @ lay["wup"]
            m = (F.silu(gu[..., :self.f]) * gu[..., self.f:]) @ lay["wdown"]
        return x + m

    def forward(self, x, pos):
        for lay in self.layers:
            x = self.block(x, lay, pos)
        return self.norm(x, self.gf, self.bf if self.kind == "gpt2" else None) @ self.wlm


def torch_rsqrt(torch, x):
    return torch.rsqrt(x)


def run_case(torch, F, parts, quick):
    kind, dt = parts[0], parts[1]
    layers, d, h, hkv, f, vocab, batch, seq, pos = (int(p) for p in parts[2:11])
    dtype = torch.float32 if dt == "f32" else torch.bfloat16
    m = Model(torch, F, kind, dtype, layers, d, h, hkv, f, vocab, batch, pos + seq)
    if pos > 0:
        m.forward(torch.randn(batch, pos, d).to(dtype), 0)
    x = torch.randn(batch, seq, d).to(dtype)
    return best_ms(lambda: m.forward(x, pos), quick)


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main(argv):
    quick = "--quick" in argv
    threads = 2
    if "--threads" in argv:
        threads = int(argv[argv.index("--threads") + 1])
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # ImportError, or a broken install
        emit({"available": False, "reason": "cannot import torch: %s" % e,
              "install": "apt-get install python3-torch"})
        return 0
    device = argv[argv.index("--device") + 1] if "--device" in argv else "cpu"
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    if device != "cpu":
        try:
            torch.set_default_device(device)
            SYNC[0] = torch.cuda.synchronize
        except Exception as e:  # no GPU build of torch, or no GPU
            emit({"available": False, "reason": "torch cannot use %s: %s" % (device, e)})
            return 0
    emit({"available": True, "version": torch.__version__ + ("" if device == "cpu" else " on " + device),
          "threads": torch.get_num_threads()})
    with torch.inference_mode():
        for line in sys.stdin:
            parts = line.split()
            if len(parts) < 12:
                continue
            rec = {"id": int(parts[0])}
            try:
                rec["ms"] = run_case(torch, F, parts[1:], quick)
            except Exception as e:  # report and go on with the next case
                rec.update({"ms": None, "error": str(e)})
            emit(rec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
