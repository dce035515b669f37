"""Several devices from Python: Tensor.to between every pair of the devices
present (cpu, cpu-ref, opencl, vulkan, a group), device groups, and the
fallback report. A device that test/run.sh requires (BP_REQUIRE_DEVICES)
and that is absent fails; one that is merely absent is skipped."""
import os

import numpy as np
import pytest

import backplane as bp

SELECTORS = ["cpu", "cpu-ref", "opencl", "vulkan"]


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    c = bp.Context()
    # A group stores its members' measured speeds in the tuning cache: not the user's.
    cache = str(tmp_path_factory.mktemp("tuning") / "tuning.json").encode()
    assert bp._lib.lib.bp_context_set_tuning_cache(c._h, cache) == 0
    yield c
    c.close()


def _present(ctx, selector):
    return any(d.backend == selector or d.name == selector for d in ctx.devices())


def _open(ctx, selector, **kw):
    """Opens selector, or skips (fails, when test/run.sh requires it) if absent."""
    if not _present(ctx, selector):
        required = os.environ.get("BP_REQUIRE_DEVICES", "").split(",")
        if selector in required:
            pytest.fail(f"no {selector} device, and BP_REQUIRE_DEVICES requires one")
        pytest.skip(f"no {selector} device here")
    return ctx.open(selector, **kw)


@pytest.fixture(scope="module")
def devices(ctx):
    return {}


def _device(ctx, devices, selector):
    if selector not in devices:
        devices[selector] = _open(ctx, selector)
    return devices[selector]


@pytest.mark.parametrize("dst", SELECTORS)
@pytest.mark.parametrize("src", SELECTORS)
def test_to_every_pair(ctx, devices, src, dst):
    s, d = _device(ctx, devices, src), _device(ctx, devices, dst)
    a = (np.arange(37 * 3, dtype=np.float32).reshape(37, 3) - 50) / 7  # odd sizes
    t = s.tensor(a)
    u = t.to(d)
    assert u.device is d and u.shape == t.shape and u.dtype == "f32"
    np.testing.assert_array_equal(u.numpy(), a)
    if src != dst:  # a copy, not a view: the original keeps its values
        u.upload(np.zeros_like(a))
        np.testing.assert_array_equal(t.numpy(), a)
    odd = np.arange(13, dtype=np.uint8)  # 13 bytes: no whole word anywhere
    np.testing.assert_array_equal(s.tensor(odd).to(d).numpy(), odd)


def test_to_same_device_is_the_tensor(ctx, devices):
    cpu = _device(ctx, devices, "cpu")
    t = cpu.tensor(np.ones(4, np.float32))
    assert t.to(cpu) is t


def test_to_gathers_a_view(ctx, devices):
    cpu, ref = _device(ctx, devices, "cpu"), _device(ctx, devices, "cpu-ref")
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    u = cpu.tensor(a).T.to(ref)
    assert u.shape == (5, 4) and u.is_contiguous()
    np.testing.assert_array_equal(u.numpy(), a.T)


def test_to_sees_queued_work(ctx, devices):
    cpu, ref = _device(ctx, devices, "cpu"), _device(ctx, devices, "cpu-ref")
    t = cpu.empty((1000,), "f32")
    s = cpu.stream()
    s.fill(t, 3.5)  # not synchronised: the copy waits for it
    np.testing.assert_array_equal(t.to(ref).numpy(), np.full(1000, 3.5, np.float32))
    s.close()


def test_to_rejects_what_is_not_a_device(ctx, devices):
    t = _device(ctx, devices, "cpu").tensor(np.ones(3, np.float32))
    with pytest.raises(bp.BackplaneError, match="^BP_ERR_INVALID_ARGUMENT: device: "):
        t.to("cpu-ref")
    closed = ctx.open("cpu-ref")
    closed.close()
    with pytest.raises(bp.BackplaneError, match="device: the device is closed"):
        t.to(closed)


def test_group_refuses_shared_hardware(ctx):
    with pytest.raises(bp.BackplaneError, match="same hardware"):
        ctx.open_group("cpu,cpu-ref")
    with pytest.raises(bp.BackplaneError, match="^BP_ERR_INVALID_ARGUMENT: members: "):
        ctx.open_group(["cpu", "cpu-ref"])


def test_group_gemm_splits_and_matches(ctx, devices):
    g = ctx.open_group("cpu,cpu-ref", allow_shared_hardware=True, split_shared_hardware=True,
                       min_split_flops=1)
    assert isinstance(g, bp.DeviceGroup) and isinstance(g, bp.Device)
    members = g.members()
    assert [m.entry.name for m in members] == ["cpu", "cpu-ref"]
    rng = np.random.default_rng(3)
    # rows enough for the slow reference member's share to be a row or more
    x = rng.standard_normal((512, 48)).astype(np.float32)
    y = rng.standard_normal((48, 40)).astype(np.float32)
    tx, ty, tz = g.tensor(x), g.tensor(y), g.empty((512, 40))
    with g.stream() as s:
        s.gemm(tx, ty, tz)
        s.synchronize()
    np.testing.assert_allclose(tz.numpy(), x @ y, rtol=1e-4, atol=1e-4)
    members = g.members()
    assert sum(m.share["gemm"] for m in members) == pytest.approx(1.0)
    assert all(m.gflops["gemm"] > 0 for m in members)
    assert all(m.slices_run >= 1 for m in members)  # each computed its part
    # tensors move in and out of a group like any device
    cpu = _device(ctx, devices, "cpu")
    np.testing.assert_array_equal(tz.to(cpu).numpy(), tz.numpy())
    np.testing.assert_array_equal(cpu.tensor(x).to(g).numpy(), x)
    g.close()


def _f64_gemm(dev):
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    b = np.ones((4, 5))
    ta, tb, tc = dev.tensor(a), dev.tensor(b), dev.empty((3, 5), "f64")
    with dev.stream() as s:
        s.matmul(ta, tb, tc)
        s.synchronize()
    return tc.numpy(), a @ b


def test_fallback_report(ctx):
    # lavapipe runs no f64 GEMM: the op runs on the next ranked device that can
    v = _open(ctx, "vulkan")
    assert not v.supports("gemm", "f64")
    assert v.fallback_stats() == []
    got, want = _f64_gemm(v)
    np.testing.assert_array_equal(got, want)
    (stat,) = v.fallback_stats()
    assert isinstance(stat, bp.FallbackStat)
    assert (stat.op, stat.dtype, stat.reason, stat.count) == ("gemm", "f64", "dtype", 1)
    assert stat.target and stat.target_backend and "f64" in stat.reason_text
    assert stat.bytes_in >= (12 + 20) * 8 and stat.bytes_out >= 15 * 8  # inputs in, result back
    assert stat.total_seconds >= stat.copy_seconds >= 0
    _f64_gemm(v)
    assert v.fallback_stats()[0].count == 2
    v.close()


def test_fallback_off(ctx):
    v = _open(ctx, "vulkan", fallback=False)
    with pytest.raises(bp.BackplaneError, match="^BP_ERR_UNSUPPORTED: .*does not support gemm for f64"):
        _f64_gemm(v)
    assert v.fallback_stats() == []
    v.close()
