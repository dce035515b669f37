"""The GEMM epilogue, N-d matmul and the attention masks of ABI 1.5 from
Python, against NumPy (float64 references)."""
import math

import numpy as np
import pytest

import backplane as bp


@pytest.fixture(scope="module")
def ctx():
    c = bp.Context()
    yield c
    c.close()


@pytest.fixture(scope="module", params=["cpu", "cpu-ref"])
def dev(ctx, request):
    return ctx.open(request.param)


def _gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def test_matmul_bias_gelu_residual(dev):
    rng = np.random.default_rng(11)
    a, w = rng.standard_normal((2, 7, 5)), rng.standard_normal((5, 9))
    bias, resid = rng.standard_normal(9), rng.standard_normal((2, 7, 9))
    c = dev.tensor(resid.astype(np.float32))
    dev.stream().matmul(dev.tensor(a.astype(np.float32)), dev.tensor(w.astype(np.float32)), c, beta=1.0,
                        bias=dev.tensor(bias.astype(np.float32)), activation="gelu")
    a32, w32 = a.astype(np.float32).astype(np.float64), w.astype(np.float32).astype(np.float64)
    want = _gelu(a32 @ w32 + resid.astype(np.float32) + bias.astype(np.float32))
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-5, atol=1e-5)


def test_matmul_broadcasts_batches_like_numpy(dev):
    rng = np.random.default_rng(12)
    q = rng.standard_normal((2, 2, 3, 4, 5)).astype(np.float32)  # [B, Hkv, G, S, D]
    kt = rng.standard_normal((2, 2, 1, 5, 6)).astype(np.float32)  # k^T shared by the G heads
    c = dev.empty((2, 2, 3, 4, 6))
    dev.stream().matmul(dev.tensor(q), dev.tensor(kt), c)
    np.testing.assert_allclose(c.numpy(), q @ kt, rtol=1e-5, atol=1e-5)


def test_matmul_bad_broadcast_names_it(dev):
    a, b = dev.empty((2, 3, 4)), dev.empty((3, 4, 5))
    with pytest.raises(bp.BackplaneError, match="broadcast"):
        dev.stream().matmul(a, b, dev.empty((2, 3, 5)))


def _attention(q, k, v, mask_add):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]) + mask_add
    m = s.max(-1, keepdims=True)
    p = np.where(np.isfinite(m), np.exp(s - np.where(np.isfinite(m), m, 0)), 0)
    tot = p.sum(-1, keepdims=True)
    return np.where(tot > 0, (p / np.where(tot > 0, tot, 1)) @ v, 0)


def test_attention_masks(dev):
    rng = np.random.default_rng(13)
    B, H, S, D = 2, 2, 6, 4
    q, k, v = (rng.standard_normal((B, H, S, D)).astype(np.float32) for _ in range(3))
    bias = rng.standard_normal((S, S)).astype(np.float32)
    lens = np.array([6, 3], np.int32)
    out = dev.empty((B, H, S, D))
    dev.stream().attention(dev.tensor(q), dev.tensor(k), dev.tensor(v), out, kv_lens=dev.tensor(lens), window=2,
                           bias=dev.tensor(bias), alibi=True)
    i, j = np.arange(S)[:, None], np.arange(S)[None, :]
    slopes = np.array([2.0 ** -4, 2.0 ** -8])  # the standard slopes of 2 heads
    add = np.broadcast_to(bias, (B, H, S, S)) - slopes[None, :, None, None] * np.abs(i - j)
    vis = (j <= i) & (j > i - 2) & (j[None] < lens[:, None, None])[:, None]
    want = _attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), np.where(vis, add, -np.inf))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
