"""pytest suite for the Python package: devices, round trips, ops against
NumPy, errors as exceptions, and DLPack with NumPy and PyTorch."""
import numpy as np
import pytest

import backplane as bp


@pytest.fixture(scope="module")
def ctx():
    c = bp.Context()
    yield c
    c.close()


@pytest.fixture(scope="module")
def dev(ctx):
    return ctx.open("cpu")


def test_devices_list_cpu_and_reference(ctx):
    names = [d.name for d in ctx.devices()]
    assert "cpu" in names and "cpu-ref" in names
    cpu = next(d for d in ctx.devices() if d.name == "cpu")
    assert cpu.kind == "cpu" and "f32" in cpu.op_dtypes["gemm"]


@pytest.mark.parametrize("dtype,np_dtype", [("f32", np.float32), ("f64", np.float64),
                                             ("f16", np.float16), ("i32", np.int32), ("u8", np.uint8)])
def test_round_trip(dev, dtype, np_dtype):
    a = (np.arange(24).reshape(2, 3, 4) % 7).astype(np_dtype)
    t = dev.tensor(a)
    assert t.shape == (2, 3, 4) and t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), a)


def test_bf16_round_trip_rounds_to_nearest_even(dev):
    a = np.array([1.0, 1.00390625, 1.01171875, -2.5], dtype=np.float32)
    t = dev.tensor(a, dtype="bf16")
    np.testing.assert_array_equal(t.numpy(), np.array([1.0, 1.0, 1.015625, -2.5], dtype=np.float32))


def test_matmul_and_transposed_view(dev):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((17, 9)).astype(np.float32)
    b = rng.standard_normal((17, 5)).astype(np.float32)
    s = dev.stream()
    c = dev.empty((9, 5))
    s.matmul(dev.tensor(a).T, dev.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), a.T @ b, rtol=1e-5, atol=1e-5)


def test_elementwise_softmax_reduce(dev):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    s = dev.stream()
    tx, y = dev.tensor(x), dev.empty((4, 6))
    s.unary("exp", tx, y)
    np.testing.assert_allclose(y.numpy(), np.exp(x), rtol=1e-6)
    s.binary("add", tx, dev.tensor(x[0]), y)  # broadcasts a row
    np.testing.assert_allclose(y.numpy(), x + x[0], rtol=1e-6)
    s.softmax(tx, y, axis=1)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y.numpy(), e / e.sum(1, keepdims=True), rtol=1e-5)
    r = dev.empty((6,))
    s.reduce("sum", tx, 0, r)
    np.testing.assert_allclose(r.numpy(), x.sum(0), rtol=1e-5, atol=1e-6)


def test_attention_matches_numpy(dev):
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 2, 5, 8)).astype(np.float32) for _ in range(3))
    out = dev.empty((1, 2, 5, 8))
    dev.stream().attention(dev.tensor(q), dev.tensor(k), dev.tensor(v), out, causal=True)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(8)
    scores = np.where(np.tril(np.ones((5, 5), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), (p / p.sum(-1, keepdims=True)) @ v, rtol=1e-4, atol=1e-5)


def test_random_is_reproducible(dev):
    s = dev.stream()
    a, b = dev.empty((100,)), dev.empty((100,))
    s.random(a, "normal", seed=7, offset=3)
    s.random(b, "normal", seed=7, offset=3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert abs(a.numpy().mean()) < 0.5


def test_errors_raise_with_message(dev):
    with pytest.raises(bp.BackplaneError) as e:
        dev.stream().matmul(dev.empty((3, 4)), dev.empty((5, 6)), dev.empty((3, 6)))
    assert "BP_ERR_INVALID_ARGUMENT" in str(e.value) and "bp_matmul" in str(e.value)


def test_numpy_from_dlpack_shares_memory(dev):
    t = dev.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    view = np.from_dlpack(t)
    np.testing.assert_array_equal(view, np.arange(6).reshape(2, 3))
    dev.stream().fill(t, 5.0)
    assert (view == 5.0).all()  # the same memory, no copy


def test_backplane_from_numpy_shares_memory(dev):
    a = np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2]  # a strided view
    t = dev.from_dlpack(a)
    assert t.shape == (3, 2)
    dev.stream().fill(t, -1.0)
    assert (a == -1.0).all()


def test_torch_dlpack_both_ways(dev):
    torch = pytest.importorskip("torch")
    t = dev.tensor(np.ones((2, 2), dtype=np.float32))
    tt = torch.utils.dlpack.from_dlpack(t.__dlpack__())
    tt.mul_(3)
    np.testing.assert_array_equal(t.numpy(), np.full((2, 2), 3.0, np.float32))
    src = torch.arange(4, dtype=torch.float32)
    back = dev.from_dlpack(torch.utils.dlpack.to_dlpack(src))
    dev.stream().fill(back, 2.0)
    assert bool((src == 2).all())
