"""The API a user reaches without the source: BLAS wrappers, what a device
supports and its figures, type hints, docstrings, py.typed, and a clear
error when the shared library is missing."""
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import backplane as bp


@pytest.fixture(scope="module")
def dev():
    c = bp.Context()
    yield c.open("cpu")
    c.close()


def test_gemm_gemv_and_batched(dev):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((7, 5)).astype(np.float32)
    b = rng.standard_normal((7, 3)).astype(np.float32)
    c0 = rng.standard_normal((5, 3)).astype(np.float32)
    s = dev.stream()
    c = dev.tensor(c0)
    s.gemm(dev.tensor(a), dev.tensor(b), c, alpha=2.0, beta=0.5, trans_a=True)
    np.testing.assert_allclose(c.numpy(), 2 * a.T @ b + 0.5 * c0, rtol=1e-5, atol=1e-5)
    x = rng.standard_normal(5).astype(np.float32)
    y = dev.empty((7,))
    s.gemv(dev.tensor(a), dev.tensor(x), y)
    np.testing.assert_allclose(y.numpy(), a @ x, rtol=1e-5, atol=1e-5)
    ab = rng.standard_normal((3, 4, 6)).astype(np.float32)
    bb = rng.standard_normal((3, 6, 2)).astype(np.float32)
    cb = dev.empty((3, 4, 2))
    s.gemm_strided_batched(dev.tensor(ab), dev.tensor(bb), cb)
    np.testing.assert_allclose(cb.numpy(), ab @ bb, rtol=1e-5, atol=1e-5)
    with pytest.raises(bp.BackplaneError, match="a: expected a rank-2"):
        s.gemm(dev.empty((2, 2, 2)), dev.empty((2, 2)), dev.empty((2, 2)))


def test_device_supports_and_figures(dev):
    assert dev.supports("gemm", np.float32) is True
    assert isinstance(dev.supports("gemm", "i32"), bool)
    with pytest.raises(bp.BackplaneError, match="op: unknown"):
        dev.supports("fft")
    assert isinstance(dev.driver_version, str)
    assert dev.peak_gflops >= 0.0 and dev.bandwidth_gbs >= 0.0
    e = dev.entry
    assert (e.driver_version, e.peak_gflops, e.bandwidth_gbs) == \
        (dev.driver_version, dev.peak_gflops, dev.bandwidth_gbs)


def _public():
    for name in bp.__all__:
        obj = getattr(bp, name)
        if inspect.isfunction(obj):
            yield name, obj
        elif inspect.isclass(obj) and obj.__module__.startswith("backplane"):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") or attr in ("__init__", "__dlpack__"):
                    if isinstance(member, property):
                        member = member.fget
                    if inspect.isfunction(member):
                        yield f"{name}.{attr}", member


def test_public_functions_have_docstrings_and_hints():
    missing_doc = [n for n, f in _public() if not f.__doc__ and not n.endswith("__init__")]
    missing_hint = [n for n, f in _public() if "return" not in f.__annotations__]
    assert not missing_doc, f"no docstring: {missing_doc}"
    assert not missing_hint, f"no return annotation: {missing_hint}"
    assert os.path.exists(os.path.join(os.path.dirname(bp.__file__), "py.typed"))


def test_missing_library_names_backplane_library():
    env = dict(os.environ, BACKPLANE_LIBRARY="/nonexistent/libbackplane.so")
    r = subprocess.run([sys.executable, "-c", "import backplane"], env=env, capture_output=True,
                       text=True)
    assert r.returncode != 0
    assert "BACKPLANE_LIBRARY" in r.stderr and "LibraryNotFoundError" in r.stderr


def test_constant_weights(dev):
    """A constant buffer refuses writes; conv2d over constant weights matches
    the same call without the mark, before and after the weights change."""
    rng = np.random.default_rng(9)
    x = dev.tensor(rng.standard_normal((1, 32, 14, 14)).astype(np.float32))
    w0 = rng.standard_normal((32, 32, 3, 3)).astype(np.float32)
    w1 = rng.standard_normal((32, 32, 3, 3)).astype(np.float32)
    s = dev.stream()
    want = []
    for wv in (w0, w1):
        y = dev.empty((1, 32, 14, 14))
        s.conv2d(x, dev.tensor(wv), y, padding=1)
        want.append(y.numpy())
    w = dev.tensor(w0)
    assert not w.constant
    w.constant = True
    assert w.constant
    with pytest.raises(bp.BackplaneError, match="constant"):
        w.upload(w1)
    y = dev.empty((1, 32, 14, 14))
    for _ in range(2):
        s.conv2d(x, w, y, padding=1)
        np.testing.assert_allclose(y.numpy(), want[0], rtol=1e-4, atol=1e-4)
    w.constant = False
    w.upload(w1)
    w.constant = True
    s.conv2d(x, w, y, padding=1)
    np.testing.assert_allclose(y.numpy(), want[1], rtol=1e-4, atol=1e-4)
    y.constant = True
    with pytest.raises(bp.BackplaneError, match="constant"):
        s.conv2d(x, w, y, padding=1)
