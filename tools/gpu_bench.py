#!/usr/bin/env python3
"""The "cuda" device beside PyTorch (cuBLAS, cuDNN, flash SDPA) in one process.

Run by tools/gpu-check.sh on a machine with an NVIDIA GPU: every case runs
our op through the Python bindings (libbackplane.so, the CUDA plugin) and
the same op in PyTorch on the same GPU, from the same host data, times both
with device events (best of several rounds, each the mean of several calls
after a warm-up) and checks that the two results agree. Writes one JSON
line per case to stdout (and to --json), then a Markdown table.

The cases are the targets of docs/performance.md "GPUs": f32 GEMM against
cuBLAS SGEMM, f16/bf16 GEMM against cuBLAS on tensor cores, fused attention
against F.scaled_dot_product_attention (flash), conv2d against cuDNN,
memory-bound ops against the device-to-device copy, int8 GEMM against
torch._int_mm, the q4_0 GEMV against the copy bandwidth, and graph replay
against CUDA Graphs.

usage: PYTHONPATH=python BACKPLANE_LIBRARY=build/lib/libbackplane.so \
       python3 tools/gpu_bench.py [--quick] [--json FILE] [--only NAME,...]
"""
import argparse
import ctypes
import json
import os
import math
import sys
import time
import traceback

import numpy as np


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json")
    p.add_argument("--only", default="")
    p.add_argument("--device", default="cuda", help="our device (cpu: a dry run of this script)")
    p.add_argument("--torch-device", default="cuda")
    return p.parse_args()


ARGS = parse_args()
ROUNDS, CALLS = (2, 3) if ARGS.quick else (3, 10)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import backplane as bp  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False  # f32 GEMM is cuBLAS SGEMM
torch.backends.cudnn.allow_tf32 = False
TDEV = torch.device(ARGS.torch_device)
ON_GPU = TDEV.type == "cuda"


def sync_torch():
    if ON_GPU:
        torch.cuda.synchronize()


def sdpa(q, k, v, is_causal):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    sc = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if is_causal:
        sc = sc.masked_fill(torch.ones(sc.shape[-2:], dtype=torch.bool, device=q.device).triu(1), -math.inf)
    return torch.matmul(torch.softmax(sc, dim=-1), v)


def int_mm(a, b):
    if hasattr(torch, "_int_mm") and ON_GPU:
        return torch._int_mm(a, b)
    return torch.matmul(a.int(), b.int())
RESULTS = []
RNG = np.random.default_rng(1234)


def emit(rec):
    RESULTS.append(rec)
    print(json.dumps(rec), flush=True)


def time_ours(stream, fn, calls=None):
    calls = calls or CALLS
    fn()
    stream.synchronize()
    best = math.inf
    for _ in range(ROUNDS):
        e0 = stream.record_event()
        for _ in range(calls):
            fn()
        e1 = stream.record_event()
        e1.synchronize()
        best = min(best, e0.elapsed_ms(e1) / calls)
        e0.close()
        e1.close()
    return best


def time_torch(fn, calls=None):
    calls = calls or CALLS
    fn()
    sync_torch()
    best = math.inf
    if not ON_GPU:
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            best = min(best, (time.perf_counter() - t0) * 1e3 / calls)
        return best
    for _ in range(ROUNDS):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(calls):
            fn()
        e1.record()
        e1.synchronize()
        best = min(best, e0.elapsed_time(e1) / calls)
    return best


def host(shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


TORCH_DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def pair(dev, s, arr, dtype):
    """The same host data on our device (in dtype, cast on the device) and in torch."""
    t32 = dev.tensor(arr)
    if dtype == "f32":
        ours = t32
    else:
        ours = dev.empty(arr.shape, dtype)
        s.cast(t32, ours)
    return ours, torch.from_numpy(arr).to(TDEV).to(TORCH_DT[dtype])


def as_f32(dev, s, t):
    if t.dtype == "f32":
        return t.numpy()
    out = dev.empty(t.shape, "f32")
    s.cast(t, out)
    return out.numpy()


def rel_err(ours, ref):
    ref = ref.detach().float().cpu().numpy().astype(np.float64)
    ours = np.asarray(ours, dtype=np.float64)
    return float(np.linalg.norm(ours - ref) / max(np.linalg.norm(ref), 1e-30))


def record(name, shape, dtype, ours_ms, anchor, anchor_ms, flops=0.0, nbytes=0.0, err=None, tol=None,
           note=""):
    rec = {"case": name, "shape": shape, "dtype": dtype, "ours_ms": round(ours_ms, 5),
           "anchor": anchor, "anchor_ms": round(anchor_ms, 5) if anchor_ms else None,
           "ratio": round(anchor_ms / ours_ms, 3) if anchor_ms and ours_ms else None}
    if flops:
        rec["ours_tflops"] = round(flops / ours_ms / 1e9, 2)
        if anchor_ms:
            rec["anchor_tflops"] = round(flops / anchor_ms / 1e9, 2)
    if nbytes:
        rec["ours_gbs"] = round(nbytes / ours_ms / 1e6, 1)
        if anchor_ms:
            rec["anchor_gbs"] = round(nbytes / anchor_ms / 1e6, 1)
    if err is not None:
        rec["rel_err"] = err
        rec["parity"] = "ok" if err <= tol else "MISMATCH"
    if note:
        rec["note"] = note
    emit(rec)


def case_gemm(dev, s, n, dtype, tol):
    a, ta = pair(dev, s, host((n, n)), dtype)
    b, tb = pair(dev, s, host((n, n)), dtype)
    c = dev.empty((n, n), dtype)
    ms = time_ours(s, lambda: s.matmul(a, b, c))
    tms = time_torch(lambda: torch.matmul(ta, tb))
    err = rel_err(as_f32(dev, s, c), torch.matmul(ta.float(), tb.float()))
    record("gemm", f"{n}x{n}x{n}", dtype, ms, "cublas (torch.matmul)", tms, 2.0 * n ** 3, err=err, tol=tol)


def case_attention(dev, s, b, h, sq, d, causal, dtype, tol):
    shape = (b, h, sq, d)
    (q, tq), (k, tk), (v, tv) = (pair(dev, s, host(shape), dtype) for _ in range(3))
    o = dev.empty(shape, dtype)
    ms = time_ours(s, lambda: s.attention(q, k, v, o, causal=causal), calls=max(2, CALLS // 3))
    tms = time_torch(lambda: sdpa(tq, tk, tv, is_causal=causal),
                     calls=max(2, CALLS // 3))
    ref = sdpa(tq.float(), tk.float(), tv.float(), is_causal=causal)
    flops = 4.0 * b * h * sq * sq * d * (0.5 if causal else 1.0)
    record("attention" + (" causal" if causal else ""), f"B{b} H{h} S{sq} D{d}", dtype, ms,
           "torch SDPA", tms, flops, err=rel_err(as_f32(dev, s, o), ref), tol=tol)


def case_conv(dev, s, n, c, hw, k, r, pad, dtype, tol):
    (x, tx), (w, tw) = pair(dev, s, host((n, c, hw, hw)), dtype), pair(dev, s, host((k, c, r, r), -0.1, 0.1), dtype)
    oh = hw + 2 * pad - r + 1
    y = dev.empty((n, k, oh, oh), dtype)
    ms = time_ours(s, lambda: s.conv2d(x, w, y, padding=pad))
    tms = time_torch(lambda: F.conv2d(tx, tw, None, 1, pad))
    ref = F.conv2d(tx.float(), tw.float(), None, 1, pad)
    record("conv2d", f"N{n} C{c} {hw}^2 K{k} {r}x{r}", dtype, ms, "cudnn (F.conv2d)", tms,
           2.0 * n * k * oh * oh * c * r * r, err=rel_err(as_f32(dev, s, y), ref), tol=tol)


def case_memory(dev, s, n):
    (x, tx), (y, ty) = pair(dev, s, host((n,)), "f32"), pair(dev, s, host((n,)), "f32")
    z = dev.empty((n,), "f32")
    tz = torch.empty_like(tx)
    copy_ms = time_ours(s, lambda: s.copy(x, z))
    tcopy_ms = time_torch(lambda: tz.copy_(tx))
    record("copy (d2d)", f"{n}", "f32", copy_ms, "torch copy_", tcopy_ms, nbytes=8.0 * n)
    add_ms = time_ours(s, lambda: s.binary("add", x, y, z))
    tadd_ms = time_torch(lambda: torch.add(tx, ty, out=tz))
    record("add", f"{n}", "f32", add_ms, "torch add", tadd_ms, nbytes=12.0 * n,
           err=rel_err(z.numpy(), tx + ty), tol=1e-6,
           note=f"{100.0 * (12.0 * n / add_ms) / (8.0 * n / tcopy_ms):.0f}% of torch's d2d copy")
    rows, cols = n // 8192, 8192
    xr, txr = x.reshape(rows, cols), tx.view(rows, cols)
    zr = z.reshape(rows, cols)
    sm_ms = time_ours(s, lambda: s.softmax(xr, zr))
    tsm_ms = time_torch(lambda: torch.softmax(txr, dim=-1))
    record("softmax", f"{rows}x{cols}", "f32", sm_ms, "torch softmax", tsm_ms, nbytes=8.0 * n,
           err=rel_err(zr.numpy(), torch.softmax(txr, dim=-1)), tol=1e-5,
           note=f"{100.0 * (8.0 * n / sm_ms) / (8.0 * n / tcopy_ms):.0f}% of torch's d2d copy")
    ln_ms = time_ours(s, lambda: s.layer_norm(xr, zr))
    tln_ms = time_torch(lambda: F.layer_norm(txr, (cols,)))
    record("layer_norm", f"{rows}x{cols}", "f32", ln_ms, "torch layer_norm", tln_ms, nbytes=8.0 * n,
           err=rel_err(zr.numpy(), F.layer_norm(txr, (cols,))), tol=1e-5,
           note=f"{100.0 * (8.0 * n / ln_ms) / (8.0 * n / tcopy_ms):.0f}% of torch's d2d copy")
    return 8.0 * n / tcopy_ms / 1e6


def case_qgemm(dev, s, n):
    ai = RNG.integers(-127, 128, size=(n, n), dtype=np.int8)
    bi = RNG.integers(-127, 128, size=(n, n), dtype=np.int8)
    a, b = dev.empty((n, n), "i8"), dev.empty((n, n), "i8")
    a32, b32 = dev.tensor(ai.astype(np.float32)), dev.tensor(bi.astype(np.float32))
    s.cast(a32, a)
    s.cast(b32, b)
    c = dev.empty((n, n), "i32")
    ms = time_ours(s, lambda: s.qgemm(a, b, c))
    ta, tb = torch.from_numpy(ai).to(TDEV), torch.from_numpy(bi).to(TDEV)
    tms = time_torch(lambda: int_mm(ta, tb))
    exact = bool(np.array_equal(c.numpy(), int_mm(ta, tb).cpu().numpy()))
    record("qgemm int8", f"{n}x{n}x{n}", "i8->i32", ms, "torch._int_mm", tms, 2.0 * n ** 3,
           err=0.0 if exact else 1.0, tol=0.0)


def case_q4_gemv(dev, s, n, k, copy_gbs):
    wf = dev.tensor(host((n, k)))
    w = dev.empty((n, k), "q4_0")
    s.quantize(wf, w)
    a = dev.tensor(host((1, k)))
    y = dev.empty((1, n), "f32")
    ms = time_ours(s, lambda: s.qmatmul(a, w, y))
    wbytes = n * k // 32 * 18
    deq = dev.empty((n, k), "f32")
    s.dequantize(w, deq)
    ref = torch.from_numpy(a.numpy()).to(TDEV) @ torch.from_numpy(deq.numpy()).to(TDEV).T
    gbs = wbytes / ms / 1e6
    record("qmatmul q4_0 gemv", f"1x{n}x{k}", "f32 x q4_0", ms, None, None, nbytes=wbytes,
           err=rel_err(y.numpy(), ref), tol=2e-2,
           note=f"{100.0 * gbs / copy_gbs:.0f}% of torch's d2d copy ({copy_gbs:.0f} GB/s)")


def case_graph(dev, s, nops):
    x = dev.tensor(host((1024,)))
    ys = [dev.empty((1024,), "f32") for _ in range(nops)]
    eager = time_ours(s, lambda: [s.binary("add", x, x, y) for y in ys], calls=3) / nops
    with s.capture() as cap:
        for y in ys:
            s.binary("add", x, x, y)
    g = cap.graph
    replay = time_ours(s, g.launch, calls=10) / nops
    tx = torch.from_numpy(x.numpy()).to(TDEV)
    tys = [torch.empty_like(tx) for _ in range(nops)]
    teager = time_torch(lambda: [torch.add(tx, tx, out=t) for t in tys], calls=3) / nops
    treplay = None
    if ON_GPU:
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            for t in tys:
                torch.add(tx, tx, out=t)
        torch.cuda.synchronize()
        cg = torch.cuda.CUDAGraph()
        with torch.cuda.graph(cg):
            for t in tys:
                torch.add(tx, tx, out=t)
        treplay = time_torch(cg.replay, calls=10) / nops * 1e3
    err = rel_err(ys[-1].numpy(), tx + tx)
    record("graph replay per op", f"{nops} adds of 1024", "f32", replay * 1e3, "CUDA Graphs (torch)",
           treplay, err=err, tol=1e-6,
           note=f"native={g.is_native}; eager per op: ours {eager * 1e3:.1f} us, torch {teager * 1e3:.1f} us; "
                "times here in us")

class KernelArg(ctypes.Structure):
    """bp_kernel_arg_t (core/backplane_kernel.h)."""
    _fields_ = [("kind", ctypes.c_int), ("buffer", ctypes.c_void_p), ("offset", ctypes.c_uint64),
                ("value", ctypes.c_uint64)]


def case_custom_ptx(dev, s):
    """A custom PTX kernel (test/fixtures/cuda_custom.ptx's saxpy) through
    bp_kernel_create / bp_kernel_launch, checked against NumPy."""
    from backplane import _lib
    lib = _lib.lib
    ptx = open(os.path.join(os.path.dirname(__file__), "..", "test", "fixtures", "cuda_custom.ptx"), "rb").read()
    sig = (ctypes.c_int * 4)(0, 0, 5, 1)  # buffer y, buffer x, f32 a, i32 n
    k = ctypes.c_void_p()
    lib.bp_kernel_create.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint64,
                                     ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint32,
                                     ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_void_p)]
    lib.bp_kernel_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32),
                                     ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32, ctypes.c_uint32,
                                     ctypes.POINTER(KernelArg)]
    lib.bp_kernel_destroy.argtypes = [ctypes.c_void_p]
    st = lib.bp_kernel_create(dev._h, 3, ptx, len(ptx), b"bp_test_saxpy", None, 4, sig, ctypes.byref(k))
    if st != 0:
        raise RuntimeError(f"bp_kernel_create: status {st}: {lib.bp_last_error().decode() if lib.bp_last_error() else ''}")
    n = 1 << 24
    xh, yh = host((n,)), host((n,))
    x, y = dev.tensor(xh), dev.tensor(yh)
    args = (KernelArg * 4)()
    args[0].kind, args[0].buffer = 0, y._buffer.value
    args[1].kind, args[1].buffer = 0, x._buffer.value
    args[2].kind, args[2].value = 5, ctypes.c_uint32.from_buffer_copy(ctypes.c_float(2.5)).value
    args[3].kind, args[3].value = 1, n
    grid, block = (ctypes.c_uint32 * 3)((n + 255) // 256, 1, 1), (ctypes.c_uint32 * 3)(256, 1, 1)
    st = lib.bp_kernel_launch(s._h, k, grid, block, 0, 4, args)
    if st != 0:
        raise RuntimeError(f"bp_kernel_launch: status {st}")
    s.synchronize()
    got = y.numpy()
    err = float(np.abs(got - (2.5 * xh + yh)).max())
    ms = time_ours(s, lambda: lib.bp_kernel_launch(s._h, k, grid, block, 0, 4, args))
    lib.bp_kernel_destroy(k)
    record("custom PTX kernel (saxpy)", f"{n}", "f32", ms, None, None, nbytes=12.0 * n, err=err, tol=1e-6,
           note="bp_kernel_create(BP_KERNEL_PTX) + bp_kernel_launch; error is the max abs difference")


def main():
    only = set(x for x in ARGS.only.split(",") if x)
    want = lambda name: not only or name in only  # noqa: E731
    ctx = bp.Context()
    dev = ctx.open(ARGS.device, fallback=False)
    s = dev.stream()
    print(f"# device: {dev.entry.name if hasattr(dev, 'entry') else ARGS.device}, "
          f"torch {torch.__version__} on {torch.cuda.get_device_name() if ON_GPU else 'cpu'}, "
          f"driver {dev.driver_version}", flush=True)
    n_big = 2048 if ARGS.quick else 4096
    cases = []
    if want("gemm"):
        cases += [("gemm f32", lambda: case_gemm(dev, s, n_big, "f32", 1e-5)),
                  ("gemm f16", lambda: case_gemm(dev, s, n_big, "f16", 5e-3)),
                  ("gemm bf16", lambda: case_gemm(dev, s, n_big, "bf16", 2e-2))]
    if want("attention"):
        sq = 1024 if ARGS.quick else 2048
        for dt, tol in (("bf16", 2e-2), ("f16", 5e-3)):
            for causal in (False, True):
                cases.append((f"attention {dt} causal={causal}",
                              lambda dt=dt, causal=causal, tol=tol: case_attention(dev, s, 4, 32, sq, 128, causal,
                                                                                   dt, tol)))
    if want("conv2d"):
        cases += [("conv2d f32 3x3", lambda: case_conv(dev, s, 32, 128, 56, 128, 3, 1, "f32", 1e-4)),
                  ("conv2d f16 3x3", lambda: case_conv(dev, s, 32, 128, 56, 128, 3, 1, "f16", 5e-3)),
                  ("conv2d bf16 3x3", lambda: case_conv(dev, s, 32, 128, 56, 128, 3, 1, "bf16", 2e-2)),
                  ("conv2d f32 1x1", lambda: case_conv(dev, s, 32, 256, 56, 64, 1, 0, "f32", 1e-4)),
                  ("conv2d f16 1x1", lambda: case_conv(dev, s, 32, 256, 56, 64, 1, 0, "f16", 5e-3)),
                  ("conv2d f16 3x3 C256 28^2", lambda: case_conv(dev, s, 32, 256, 28, 256, 3, 1, "f16", 5e-3))]
    copy = [0.0]
    if want("memory") or want("quant"):
        cases.append(("memory", lambda: copy.__setitem__(0, case_memory(dev, s, 1 << 26))))
    if want("quant"):
        cases += [("qgemm", lambda: case_qgemm(dev, s, n_big)),
                  ("q4 gemv 4096", lambda: case_q4_gemv(dev, s, 4096, 4096, copy[0] or 1.0)),
                  ("q4 gemv 11008", lambda: case_q4_gemv(dev, s, 11008, 4096, copy[0] or 1.0))]
    if want("graph"):
        cases.append(("graph", lambda: case_graph(dev, s, 64)))
    if want("custom") and ARGS.device == "cuda":
        cases.append(("custom PTX kernel", lambda: case_custom_ptx(dev, s)))
    failed = 0
    for name, fn in cases:
        t0 = time.time()
        try:
            fn()
        except Exception as e:  # one broken case must not hide the others
            failed += 1
            emit({"case": name, "error": f"{type(e).__name__}: {e}"})
            traceback.print_exc()
        print(f"# {name}: {time.time() - t0:.1f} s", flush=True)
    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump(RESULTS, f, indent=1)
    print("\n| case | shape | dtype | ours ms | anchor | anchor ms | anchor/ours | parity | note |")
    print("|---|---|---|---:|---|---:|---:|---|---|")
    for r in RESULTS:
        if "error" in r:
            print(f"| {r['case']} | | | | | | | ERROR | {r['error']} |")
            continue
        perf = r.get("ours_tflops") and f"{r['ours_tflops']} TFLOP/s" or r.get("ours_gbs") and f"{r['ours_gbs']} GB/s"
        print(f"| {r['case']} | {r['shape']} | {r['dtype']} | {r['ours_ms']} ({perf or '-'}) | {r['anchor']} | "
              f"{r['anchor_ms']} | {r['ratio']} | {r.get('parity', '-')} {r.get('rel_err', '')} | {r.get('note', '')} |")
    bad = failed + sum(1 for r in RESULTS if r.get("parity") == "MISMATCH")
    print(f"\n{len(cases)} cases, {failed} errors, {bad - failed} parity mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
