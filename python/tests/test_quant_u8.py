"""u8 in the quantized ops from Python (docs/ops.md, "Quantized types and
ops"): qgemm with uint8 NumPy arrays as a and / or b (all four i8 / u8
pairs, c i32 exact, f32 scaled, i8 requantized) and u8 quantize /
dequantize, on the cpu and cpu-ref devices, against NumPy; a dtype other
than i8 / u8 raises with the operand named."""
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


def _operand(rng, shape, dt):
    x = rng.integers(0, 256, shape, dtype=np.uint8) if dt == np.uint8 else \
        rng.integers(-128, 128, shape, dtype=np.int8)
    x.flat[::7] = np.iinfo(dt).max
    x.flat[3::11] = np.iinfo(dt).min
    return x


@pytest.mark.parametrize("adt,bdt", [(np.uint8, np.int8), (np.int8, np.uint8),
                                     (np.uint8, np.uint8), (np.int8, np.int8)])
def test_qgemm_pairs(dev, adt, bdt):
    s = dev.stream()
    rng = np.random.default_rng(5)
    a, b = _operand(rng, (9, 70), adt), _operand(rng, (70, 21), bdt)
    want = a.astype(np.int64) @ b.astype(np.int64)
    c = dev.empty((9, 21), "i32")
    s.qgemm(dev.tensor(a), dev.tensor(b), c)
    sa = np.linspace(0.5, 1.5, 9, dtype=np.float32)
    sb = np.linspace(0.001, 0.002, 21, dtype=np.float32)
    cf, ci = dev.empty((9, 21)), dev.empty((9, 21), "i8")
    s.qgemm(dev.tensor(a), dev.tensor(b), cf, dev.tensor(sa), dev.tensor(sb))
    s.qgemm(dev.tensor(a), dev.tensor(b), ci, dev.tensor(sa), dev.tensor(sb), out_scale=20.0)
    s.synchronize()
    np.testing.assert_array_equal(c.numpy(), want.astype(np.int32))
    f = want.astype(np.float32) * sa[:, None] * sb[None, :]
    np.testing.assert_array_equal(cf.numpy(), f)
    np.testing.assert_array_equal(ci.numpy(), np.clip(np.rint(f / np.float32(20.0)), -128, 127))
    assert dev.supports("qgemm", "u8")


def test_quantize_u8(dev):
    s = dev.stream()
    x = np.array([[0.5, 1.5, 2.5, -3.0, 254.5, 255.5, 1e6, np.nan]], dtype=np.float32)
    scale = np.ones((1, 8), dtype=np.float32)
    q, y = dev.empty((1, 8), "u8"), dev.empty((1, 8))
    s.quantize(dev.tensor(x), q, dev.tensor(scale))
    s.dequantize(q, y, dev.tensor(scale))
    s.synchronize()
    want = np.array([[0, 2, 2, 0, 254, 255, 255, 0]], dtype=np.uint8)
    np.testing.assert_array_equal(q.numpy(), want)
    np.testing.assert_array_equal(y.numpy(), want.astype(np.float32))


def test_qgemm_bad_dtype_names_operand(dev):
    s = dev.stream()
    a = dev.tensor(np.zeros((2, 3), dtype=np.uint8))
    b = dev.tensor(np.zeros((3, 2), dtype=np.int32))
    with pytest.raises(bp.BackplaneError, match="b has dtype i32; expected i8 or u8"):
        s.qgemm(a, b, dev.empty((2, 2), "i32"))
