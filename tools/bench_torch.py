#!/usr/bin/env python3
"""PyTorch anchor for `bp bench`.

Reads cases from stdin, one per line:
    ID attention B H S D CAUSAL
    ID conv2d N C HW K R STRIDE PAD GROUPS
    ID softmax ROWS COLS
    ID layer_norm ROWS COLS
    ID gelu ROWS COLS
and writes JSON lines on stdout: first a header
    {"available": true, "version": "...", "threads": N, "sdpa": false}
then one record per case, as soon as it is measured:
    {"id": ID, "ms": BEST_MS, "sdpa_ms": BEST_MS_OR_NULL}
Times are the best of several calls after a warm-up, f32, all cores.
Attention is matmul + softmax + matmul with a causal mask (the way models
wrote it before fused kernels), and F.scaled_dot_product_attention too when
this PyTorch has it. When torch cannot be imported the header says
{"available": false, "reason": "...", "install": "apt-get install python3-torch"}.

usage: tools/bench_torch.py [--quick] [--threads N] < cases
"""
import json
import math
import os
import sys
import time


def best_ms(fn, quick):
    fn()  # warm-up
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    best, total, reps = first, first, 1
    min_reps, min_s, max_reps = (2, 0.05, 10) if quick else (3, 0.3, 50)
    if first > 2.0:
        return best * 1e3
    while reps < max_reps and (reps < min_reps or total < min_s):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best, total, reps = min(best, dt), total + dt, reps + 1
    return best * 1e3


def uniform(torch, *shape):
    return torch.rand(*shape) * 2 - 1


def attention(torch, F, args, quick):
    b, h, s, d, causal = (int(x) for x in args)
    q, k, v = (uniform(torch, b, h, s, d) for _ in range(3))
    scale = 1.0 / math.sqrt(d)
    mask = torch.ones(s, s, dtype=torch.bool).triu(1) if causal else None

    def naive():
        sc = torch.matmul(q, k.transpose(-1, -2)) * scale
        if mask is not None:
            sc.masked_fill_(mask, float("-inf"))
        return torch.matmul(torch.softmax(sc, dim=-1), v)

    rec = {"ms": best_ms(naive, quick), "sdpa_ms": None}
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    if sdpa is not None:
        rec["sdpa_ms"] = best_ms(lambda: sdpa(q, k, v, is_causal=bool(causal)), quick)
    return rec


def conv2d(torch, F, args, quick):
    n, c, hw, k, r, stride, pad, groups = (int(x) for x in args)
    x = uniform(torch, n, c, hw, hw)
    w = uniform(torch, k, c // groups, r, r)
    return {"ms": best_ms(lambda: F.conv2d(x, w, None, stride, pad, 1, groups), quick)}


def softmax(torch, F, args, quick):
    rows, cols = (int(x) for x in args)
    x = uniform(torch, rows, cols)
    return {"ms": best_ms(lambda: torch.softmax(x, dim=-1), quick)}


def layer_norm(torch, F, args, quick):
    rows, cols = (int(x) for x in args)
    x = uniform(torch, rows, cols)
    return {"ms": best_ms(lambda: F.layer_norm(x, (cols,), None, None, 1e-5), quick)}


def gelu(torch, F, args, quick):
    rows, cols = (int(x) for x in args)
    x = uniform(torch, rows, cols)
    return {"ms": best_ms(lambda: F.gelu(x), quick)}


OPS = {"attention": attention, "conv2d": conv2d, "softmax": softmax,
       "layer_norm": layer_norm, "gelu": gelu}


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main(argv):
    quick = "--quick" in argv
    threads = os.cpu_count() or 1
    if "--threads" in argv:
        threads = int(argv[argv.index("--threads") + 1])
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # ImportError, or a broken install
        emit({"available": False, "reason": "cannot import torch: %s" % e,
              "install": "apt-get install python3-torch"})
        return 0
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    emit({"available": True, "version": torch.__version__,
          "threads": torch.get_num_threads(),
          "sdpa": hasattr(F, "scaled_dot_product_attention")})
    with torch.no_grad():
        for line in sys.stdin:
            parts = line.split()
            if len(parts) < 2:
                continue
            rec = {"id": int(parts[0])}
            try:
                rec.update(OPS[parts[1]](torch, F, parts[2:], quick))
            except Exception as e:  # report and go on with the next case
                rec.update({"ms": None, "error": str(e)})
            emit(rec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
