"""DLPack from Python on the devices whose memory is not host memory: CUDA
and ROCm through the CPU shims of the build tree (test/shims). A tensor
says where its memory is (__dlpack_device__), imports back on its own
device without a copy, and NumPy, which reads host memory only, refuses it
instead of reading a device pointer. Skipped where the library is not a
build tree's (no shims beside it)."""
import os

import numpy as np
import pytest

import backplane as bp

_LIBDIR = os.path.dirname(os.path.abspath(os.environ.get("BACKPLANE_LIBRARY", "")))
_SHIMS = os.path.join(_LIBDIR, "..", "test", "shims")
_FILES = {"BACKPLANE_CUDA_DRIVER": "cuda/libcuda.so.1", "BACKPLANE_HIP_RUNTIME": "hip/libamdhip64.so",
          "BACKPLANE_HIPRTC": "hip/libhiprtc.so"}


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    paths = {k: os.path.join(_SHIMS, v) for k, v in _FILES.items()}
    missing = [p for p in paths.values() if not os.path.exists(p)]
    if missing:
        pytest.skip(f"no CPU shims beside the library ({missing[0]})")
    # Only this module's context sees the shims: the others keep the real machine.
    with pytest.MonkeyPatch.context() as mp:
        for k, v in paths.items():
            mp.setenv(k, v)
        mp.setenv("BACKPLANE_CUDA_BLAS", "0")
        mp.setenv("BACKPLANE_ROCM_BLAS", "0")
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        c = bp.Context()
        yield c
        c.close()


@pytest.mark.parametrize("backend,dl_type", [("cuda", 2), ("rocm", 10)])
def test_device_memory_round_trip(ctx, backend, dl_type):
    dev = ctx.open(backend)
    assert dev.entry.dlpack_device == (dl_type, dev.entry.index)
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = dev.tensor(a)
    assert t.__dlpack_device__() == (dl_type, dev.entry.index)
    u = dev.from_dlpack(t)  # a second tensor over the same device memory
    np.testing.assert_array_equal(u.numpy(), a)
    with dev.stream() as s:
        s.fill(u, 2.0)
        s.synchronize()
    np.testing.assert_array_equal(t.numpy(), np.full((4, 6), 2.0, np.float32))
    # NumPy reads host memory only: refused before a capsule exists, never a device pointer read
    with pytest.raises(BufferError, match="device memory"):
        np.from_dlpack(t)
    with pytest.raises(BufferError, match=f"the tensor lives on \\({dl_type}, "):
        t.__dlpack__(max_version=(1, 0), dl_device=(1, 0))
    # the host device refuses the device memory, with the library's reason
    cpu = ctx.open("cpu")
    with pytest.raises(bp.BackplaneError, match="BP_ERR_UNSUPPORTED: .*lives on DLPack device"):
        cpu.from_dlpack(t)
    assert cpu.tensor(a).__dlpack_device__() == (1, 0)
    dev.close()
    cpu.close()
