"""Views (slicing, reshape, transpose, offset views) share the buffer and go
straight into ops; events order streams; graphs capture, launch, rebind;
device.supports; a non-contiguous view reaches NumPy without leaving a
temporary buffer behind (issue 28, item 7)."""
import gc

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
    return ctx.open("cpu-ref")


def _host(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_slicing_matches_numpy(dev):
    a = _host((6, 7, 5))
    t = dev.tensor(a)
    for key in [(1,), (slice(1, 5), 2), (Ellipsis, 3), (slice(None, None, 2), slice(6, 0, -2)),
                (-1, slice(None), slice(1, 4)), (slice(2, 2),)]:
        v = t[key]
        assert v.is_view() and v.shape == a[key].shape
        np.testing.assert_array_equal(v.numpy(), a[key])
    with pytest.raises(IndexError):
        t[6]
    with pytest.raises(IndexError):
        t[[0, 1]]


def test_views_share_the_buffer_and_ops_take_them(dev):
    a = _host((4, 6))
    t = dev.tensor(a)
    s = dev.stream()
    s.fill(t[1:3, ::2], 5.0)  # an op writes through a strided view
    s.synchronize()
    want = a.copy()
    want[1:3, ::2] = 5.0
    np.testing.assert_array_equal(t.numpy(), want)
    # packed QKV rows: the K part is an offset view, fed to an op with no copy
    seq, d = 5, 4
    qkv = _host((seq, 3 * d), 1)
    tq = dev.tensor(qkv)
    k = tq.view_at(d, (seq, d), (3 * d, 1))
    out = dev.empty((seq, d))
    s.unary("neg", k, out)
    s.synchronize()
    np.testing.assert_array_equal(out.numpy(), -qkv[:, d:2 * d])
    np.testing.assert_array_equal(tq[:, d:2 * d].numpy(), qkv[:, d:2 * d])
    with pytest.raises(bp.BackplaneError, match="offset"):
        tq.view_at(3 * d * seq - 1, (2,))


def test_reshape_and_transpose(dev):
    a = _host((2, 3, 4))
    t = dev.tensor(a)
    np.testing.assert_array_equal(t.reshape(6, 4).numpy(), a.reshape(6, 4))
    np.testing.assert_array_equal(t.reshape((4, -1)).numpy(), a.reshape(4, -1))
    np.testing.assert_array_equal(t.transpose().numpy(), a.swapaxes(-2, -1))
    np.testing.assert_array_equal(t.transpose(0, 2).numpy(), a.swapaxes(0, 2))
    # a strided view reshapes where NumPy would without a copy, and refuses otherwise
    v = t[:, 1:, :]
    np.testing.assert_array_equal(v.reshape(2, 8).numpy(), a[:, 1:, :].reshape(2, 8))
    with pytest.raises(ValueError, match="without a copy"):
        t.transpose(1, 2).reshape(24)
    with pytest.raises(ValueError):
        t.reshape(5, 5)
    # matmul on transposed views
    b = _host((4, 3), 2)
    c = dev.empty((4, 4))
    s = dev.stream()
    s.matmul(t[1].T, dev.tensor(b).T, c)
    s.synchronize()
    np.testing.assert_allclose(c.numpy(), a[1].T @ b.T, rtol=1e-5, atol=1e-5)


def test_numpy_of_a_view_frees_its_temporary(dev, monkeypatch):
    t = dev.tensor(_host((64, 64)))
    v = t[::2, 1::3]
    v.numpy()  # warm the pool
    gc.collect()
    before = dev.memory_stats()["in_use_bytes"]
    for _ in range(5):
        v.numpy()
    assert dev.memory_stats()["in_use_bytes"] == before  # no temporary outlives the call
    assert len(dev._finalizers) == 1  # only t's own buffer is registered
    # A failed read: the exception (and its traceback's frames) may be kept by
    # the caller, and the temporary must still be gone.
    monkeypatch.setattr(bp._lib.lib, "bp_buffer_read", lambda *a: -1)
    with pytest.raises(bp.BackplaneError) as info:
        v.numpy()
    monkeypatch.undo()
    assert info.value is not None  # the traceback stays alive here
    assert dev.memory_stats()["in_use_bytes"] == before
    assert len(dev._finalizers) == 1


def test_events_order_two_streams(dev):
    s1, s2 = dev.stream(), dev.stream()
    x = dev.empty((1000,))
    y = dev.empty((1000,))
    s1.fill(x, 3.0)
    ev = s1.record_event()
    s2.wait_event(ev)
    s2.copy(x, y)
    end = s2.record_event()
    end.synchronize()
    np.testing.assert_array_equal(y.numpy(), np.full(1000, 3.0, np.float32))
    assert ev.elapsed_ms(end) >= 0.0
    ev.close()
    ev.close()  # idempotent


@pytest.mark.parametrize("which", ["cpu-ref", "opencl", "vulkan"])
def test_graph_capture_launch_rebind(ctx, which):
    if not any(e.backend == which or e.name == which for e in ctx.devices()):
        pytest.skip(f"no {which} device")
    d = ctx.open(which)
    s = d.stream()
    a, b, a2 = _host((33, 17), 3), _host((33, 17), 4), _host((33, 17), 5)
    ta, tb, y1, y2 = d.tensor(a), d.tensor(b), d.empty((33, 17)), d.empty((33, 17))
    with s.capture() as cap:
        s.binary("add", ta, tb, y1)  # two ops sharing one kernel
        s.binary("mul", y1, tb, y2)
    g = cap.graph
    assert len(g) == 2
    for _ in range(3):
        s.fill(y1, -7.0)
        g.launch()
        s.synchronize()
        np.testing.assert_allclose(y1.numpy(), a + b, rtol=1e-6)
        np.testing.assert_allclose(y2.numpy(), (a + b) * b, rtol=1e-6)
    if which != "cpu-ref":
        assert g.is_native
    ta2 = d.tensor(a2)
    g.rebind(ta, ta2)
    g.launch(d.stream())
    d.synchronize()
    np.testing.assert_allclose(y2.numpy(), (a2 + b) * b, rtol=1e-6)
    g.close()
    # a failing block ends the capture and leaves the stream usable
    with pytest.raises(bp.BackplaneError):
        with s.capture():
            s.binary("add", ta, d.empty((2, 2)), y1)
    s.fill(y1, 1.0)
    s.synchronize()
    assert float(y1.numpy()[0, 0]) == 1.0
    d.close()


def test_device_supports(dev):
    assert dev.supports("gemm", "f32")
    assert dev.supports("binary", np.float64)
    with pytest.raises(bp.BackplaneError):
        dev.supports("no_such_op")
