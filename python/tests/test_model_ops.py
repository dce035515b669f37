"""The model ops of ABI 1.5 as Stream methods (gather, arange, binary_scalar, glu,
rope, concat, kv_append) and the Tensor helpers (narrow, split, kv_append) on the
cpu and cpu-ref devices, against NumPy in float64."""
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


def _host(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_gather_embedding_with_out_of_range(dev):
    s = dev.stream()
    table = _host((11, 6))
    ids = np.array([[3, 0, 10], [-1, 11, 4]], dtype=np.int64)
    y = dev.empty((2, 3, 6))
    s.gather(dev.tensor(table), dev.tensor(ids), y)
    s.synchronize()
    want = np.where(((ids >= 0) & (ids < 11))[..., None], table[np.clip(ids, 0, 10)], 0)
    np.testing.assert_array_equal(y.numpy(), want)


def test_arange_and_binary_scalar(dev):
    s = dev.stream()
    y = dev.empty((3, 5), "i32")
    s.arange(y, 4, 3)
    x = dev.empty((3, 5))
    s.arange(x, -1, 0.25)
    z = dev.empty((3, 5))
    s.binary_scalar("sub", x, 2.0, z, scalar_first=True)
    s.binary_scalar("mul", z, 0.5, z)
    s.synchronize()
    np.testing.assert_array_equal(y.numpy(), (4 + 3 * np.arange(15)).reshape(3, 5))
    xv = -1 + 0.25 * np.arange(15, dtype=np.float64).reshape(3, 5)
    np.testing.assert_allclose(z.numpy(), (2 - xv) * 0.5, rtol=1e-6)


def test_glu_on_packed_projection(dev):
    s = dev.stream()
    h = _host((4, 18), 1)
    t = dev.tensor(h)
    gate, up = t.split([9, 9], axis=-1)
    y = dev.empty((4, 9))
    g, u = h[:, :9].astype(np.float64), h[:, 9:].astype(np.float64)
    forms = {"swiglu": g / (1 + np.exp(-g)), "reglu": np.maximum(g, 0),
             "geglu": 0.5 * g * (1 + np.vectorize(math.erf)(g / math.sqrt(2))),
             "geglu_tanh": 0.5 * g * (1 + np.tanh(math.sqrt(2 / math.pi) * (g + 0.044715 * g ** 3)))}
    for kind, act in forms.items():
        s.glu(kind, gate, up, y)
        s.synchronize()
        np.testing.assert_allclose(y.numpy(), act * u, rtol=1e-5, atol=1e-6, err_msg=kind)
    with pytest.raises(bp.BackplaneError):
        s.glu("bogus", gate, up, y)


def _rope_ref(x, rd, pos, interleaved):
    y = x.astype(np.float64).copy()
    for i in range(rd // 2):
        f0, f1 = (2 * i, 2 * i + 1) if interleaved else (i, i + rd // 2)
        ang = pos[:, :, None] / 10000.0 ** (2 * i / rd)
        c, sn = np.cos(ang), np.sin(ang)
        y[..., f0] = x[..., f0] * c - x[..., f1] * sn
        y[..., f1] = x[..., f1] * c + x[..., f0] * sn
    return y


def test_rope_modes_in_place_and_positions(dev):
    s = dev.stream()
    x = _host((2, 5, 3, 8), 2)
    for mode in ("half", "interleaved"):
        t = dev.tensor(x)
        s.rope(t, t, rotary_dim=6, mode=mode, pos_offset=4)
        s.synchronize()
        pos = np.broadcast_to(4 + np.arange(5), (2, 5)).astype(np.float64)
        np.testing.assert_allclose(t.numpy(), _rope_ref(x, 6, pos, mode == "interleaved"), rtol=1e-5, atol=1e-5)
    p = np.array([[0, 7, 9, 2, 1], [5, 5, 5, 5, 5]], dtype=np.int32)
    y = dev.empty(x.shape)
    s.rope(dev.tensor(x), y, positions=dev.tensor(p))
    s.synchronize()
    np.testing.assert_allclose(y.numpy(), _rope_ref(x, 8, p.astype(np.float64), False), rtol=1e-5, atol=1e-5)
    with pytest.raises(bp.BackplaneError, match="rotary_dim"):
        s.rope(dev.tensor(x), y, rotary_dim=7)


def test_concat_kv_append_narrow(dev):
    s = dev.stream()
    a, b = _host((2, 3, 4), 3), _host((2, 1, 4), 4)
    y = dev.empty((2, 4, 4))
    y.concat_into([dev.tensor(a), dev.tensor(b)], s, axis=1)
    s.synchronize()
    np.testing.assert_array_equal(y.numpy(), np.concatenate([a, b], axis=1))
    np.testing.assert_array_equal(y.narrow(1, 3, 1).numpy(), b)
    cache = dev.tensor(np.zeros((2, 6, 4), np.float32))
    cache.kv_append(dev.tensor(a), 0, s, seq_axis=1)
    s.kv_append(cache, dev.tensor(b), 3, seq_axis=1)
    s.synchronize()
    want = np.zeros((2, 6, 4), np.float32)
    want[:, :3], want[:, 3:4] = a, b
    np.testing.assert_array_equal(cache.numpy(), want)
    with pytest.raises(bp.BackplaneError, match="cache length 6"):
        s.kv_append(cache, dev.tensor(a), 4, seq_axis=1)
