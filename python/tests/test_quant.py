"""The quantized ops of ABI 1.5 as Stream methods (quantize, dequantize, qgemm,
qmatmul) on the cpu and cpu-ref devices, against NumPy: int8 GEMM exact, the
q8_0 round trip within docs/ops.md's bound, qmatmul against NumPy on the
dequantized weights."""
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


def test_qgemm_int32_exact(dev):
    s = dev.stream()
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (9, 70), dtype=np.int8)
    b = rng.integers(-128, 128, (70, 21), dtype=np.int8)
    c = dev.empty((9, 21), "i32")
    s.qgemm(dev.tensor(a), dev.tensor(b), c)
    s.synchronize()
    np.testing.assert_array_equal(c.numpy(), a.astype(np.int32) @ b.astype(np.int32))


def test_q8_0_roundtrip_and_qmatmul(dev):
    s = dev.stream()
    rng = np.random.default_rng(2)
    w = rng.standard_normal((6, 64)).astype(np.float32)
    a = rng.standard_normal((3, 64)).astype(np.float32)
    wq, wd, y = dev.empty((6, 64), "q8_0"), dev.empty((6, 64)), dev.empty((3, 6))
    s.quantize(dev.tensor(w), wq)
    s.dequantize(wq, wd)
    s.qmatmul(dev.tensor(a), wq, y)
    s.synchronize()
    back = wd.numpy()
    d = np.abs(w.reshape(-1, 32)).max(axis=1) / 127
    assert (np.abs(back - w).reshape(-1, 32) <= (0.5 + 127 * 2**-11) * d[:, None] * 1.001).all()
    want = a.astype(np.float64) @ back.astype(np.float64).T
    # docs/ops.md: (1 + 2^-10) sum_b amax_b(a) / 254 * sum_b |w| + 2^-12 sum |a w|
    # (the first term: "cpu" quantizes the activations to int8 blocks)
    amax = np.abs(a).reshape(3, -1, 32).max(axis=2)
    wabs = np.abs(back.astype(np.float64)).reshape(6, -1, 32).sum(axis=2)
    tol = (1 + 2**-10) * (amax / 254) @ wabs.T + 2**-12 * np.abs(a) @ np.abs(back).T.astype(np.float64)
    assert (np.abs(y.numpy() - want) <= tol).all()
    assert dev.supports("qmatmul", "q4_0") and dev.supports("qgemm", "i8")


def test_quantized_a_through_views(dev):
    """C = Aq @ B with the quantized operand on the left (docs/ops.md): qmatmul
    of a = B^T and w = Aq into y = C^T, both transposed views, no copy."""
    s = dev.stream()
    rng = np.random.default_rng(3)
    a = rng.standard_normal((5, 64)).astype(np.float32)
    b = rng.standard_normal((64, 7)).astype(np.float32)
    aq, ad, c = dev.empty((5, 64), "q8_0"), dev.empty((5, 64)), dev.empty((5, 7))
    s.quantize(dev.tensor(a), aq)
    s.dequantize(aq, ad)
    bt = dev.tensor(b)
    s.qmatmul(bt.transpose(), aq, c.transpose())
    s.synchronize()
    want = ad.numpy().astype(np.float64) @ b.astype(np.float64)
    # the bound of docs/ops.md with B's columns as the activation rows
    bcols = b.T.astype(np.float64)
    amax = np.abs(bcols).reshape(7, -1, 32).max(axis=2)
    wabs = np.abs(ad.numpy().astype(np.float64)).reshape(5, -1, 32).sum(axis=2)
    tol = (1 + 2**-10) * wabs @ (amax / 254).T + 2**-12 * np.abs(ad.numpy()) @ np.abs(b).astype(np.float64)
    assert (np.abs(c.numpy() - want) <= tol).all()


def test_bad_block_shape_rejected(dev):
    s = dev.stream()
    with pytest.raises(bp.BackplaneError, match="INVALID_ARGUMENT"):
        s.quantize(dev.tensor(np.zeros((2, 48), np.float32)), dev.empty((2, 48), "q8_0"))
