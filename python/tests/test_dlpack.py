"""The Python DLPack protocol as NumPy 2 drives it: max_version, dl_device
and copy; versioned capsules; bf16 refused with a clear error."""
import ctypes

import numpy as np
import pytest

import backplane as bp

_name = ctypes.pythonapi.PyCapsule_GetName
_name.restype, _name.argtypes = ctypes.c_char_p, [ctypes.py_object]


@pytest.fixture(scope="module")
def dev():
    c = bp.Context()
    yield c.open("cpu")
    c.close()


# NumPy 2 asks for DLPack 1.x; NumPy 1.x only reads legacy capsules.
_MAX = (1, 0) if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else None


class _Numpy2Style:
    """Calls __dlpack__ the way NumPy 2's from_dlpack does."""

    def __init__(self, t, **kw):
        self.t, self.kw = t, kw

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__(stream=stream, max_version=_MAX, dl_device=(1, 0), **self.kw)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_versioned_capsule_when_asked(dev):
    t = dev.tensor(np.arange(4, dtype=np.float32))
    assert _name(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False)) == b"dltensor_versioned"
    assert _name(t.__dlpack__()) == b"dltensor"
    assert _name(t.__dlpack__(max_version=(0, 8))) == b"dltensor"


def test_copy_true_exports_a_copy(dev):
    t = dev.tensor(np.arange(4, dtype=np.float32))
    shared = np.from_dlpack(_Numpy2Style(t, copy=None))
    copied = np.from_dlpack(_Numpy2Style(t, copy=True))
    dev.stream().fill(t, 9.0)
    assert (shared == 9.0).all()
    np.testing.assert_array_equal(copied, np.arange(4, dtype=np.float32))


def test_other_device_refused(dev):
    with pytest.raises(BufferError):
        dev.empty((2,)).__dlpack__(dl_device=(2, 0))


def test_bf16_to_numpy_is_a_backplane_error(dev):
    t = dev.tensor(np.ones(3, np.float32), dtype="bf16")
    with pytest.raises(bp.BackplaneError, match="bf16"):
        np.from_dlpack(t)
    assert _name(t.to_dlpack()) == b"dltensor"  # for consumers that take bf16


def test_versioned_round_trip_into_backplane(dev):
    t = dev.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    back = dev.from_dlpack(t)  # asks for max_version=(1, 0): a versioned capsule
    assert back.shape == (2, 3)
    dev.stream().fill(back, 4.0)
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), 4.0, np.float32))
