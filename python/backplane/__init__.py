"""backplane: one API for numeric compute on every accelerator, from Python.

A thin layer over libbackplane.so through ctypes. Objects own their C
handles and release them when collected (or explicitly with close()).
"""
from __future__ import annotations

import ctypes
import weakref
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _lib
from ._lib import LibraryNotFoundError
from ._dlpack import from_dlpack, to_dlpack_capsule
from ._log import log_to_python, log_to_stderr, set_log_level
from ._checks import (_NP_DTYPES, _UNSUPPORTED, BackplaneError, _check, _choice, _dtype,  # noqa: F401
                      _invalid, _shape)
from ._graph import Event, Graph, StreamGraphMixin
from ._views import ViewMixin
from ._model import StreamModelMixin, TensorModelMixin
from ._quant import StreamQuantMixin

DType = Union[str, type, "np.dtype[Any]"]
"""A dtype: "f32", "float32", np.float32 or np.dtype("float32") (and f16, bf16, f64, i32, i64, u8)."""

__all__ = ["DType", "LibraryNotFoundError", "BackplaneError", "Context", "Device", "Stream", "Tensor", "from_dlpack", "version",
           "log_to_python", "log_to_stderr", "set_log_level", "DeviceGroup", "GroupMember", "FallbackStat",
           "Event", "Graph"]


def version() -> str:
    """The library's version string ("0.1.0")."""
    return _lib.lib.bp_version().decode()


class DeviceEntry:
    """One row of the ranked device list."""

    def __init__(self, e: Any) -> None:
        i = e.info
        self.rank, self.backend, self.index = e.rank, e.backend.decode(), e.backend_index
        self.name, self.vendor = i.name.decode(), i.vendor.decode()
        self.kind = _lib.KINDS[i.kind] if 0 <= i.kind < len(_lib.KINDS) else "other"
        self.memory_bytes, self.compute_units = i.memory_bytes, i.compute_units
        self.driver_version: str = i.driver_version.decode()
        self.peak_gflops: float = i.peak_gflops      # 0: unknown
        self.bandwidth_gbs: float = i.bandwidth_gbs  # 0: unknown
        self.identity, self.description = i.identity.decode(), i.description.decode()
        self.numa_node, self.local_cpus = e.numa_node, e.local_cpus.decode()  # -1, "": unknown
        # (DLPack device type, id) of its memory: host memory is (kDLCPU 1, 0), else the
        # plugin's (kDLCUDA 2, kDLROCM 10, with its index); None where DLPack cannot say
        self.dlpack_device: Optional[Tuple[int, int]] = (
            (1, 0) if i.flags & 2 else (i.dlpack_device_type, e.backend_index) if i.dlpack_device_type > 0
            else None)
        self.op_dtypes = {op: [d for d, bit in _lib.DTYPES.items() if i.op_dtypes[k] >> bit & 1]
                          for k, op in enumerate(_lib.OPS)}

    def __repr__(self):
        return f"<device {self.rank}: {self.backend} {self.name!r} ({self.kind})>"


class Context:
    """A loader instance: discovers plugins and ranks their devices."""

    def __init__(self, plugin_dir: Optional[str] = None, isolate_probe: Optional[bool] = None) -> None:
        """isolate_probe: None (the default) probes plugins in a helper process
        unless BACKPLANE_ISOLATE=0; True insists on it; False loads and probes
        them in this process (docs/runtime.md, "Plugin isolation")."""
        opts = _lib.ContextOptions(ctypes.sizeof(_lib.ContextOptions),
                                   plugin_dir.encode() if plugin_dir else None,
                                   isolate_probe is True, False, 0, isolate_probe is False)
        self._h = ctypes.c_void_p()
        _check(_lib.lib.bp_context_create(ctypes.byref(opts), ctypes.byref(self._h)))
        self._devices = []

    def devices(self) -> "list[DeviceEntry]":
        """The devices found, best first (the ranked list)."""
        n = ctypes.c_uint32()
        _check(_lib.lib.bp_context_device_count(self._h, ctypes.byref(n)))
        out = []
        for r in range(n.value):
            e = _lib.DeviceEntry()
            _check(_lib.lib.bp_context_device_entry(self._h, r, ctypes.byref(e)))
            out.append(DeviceEntry(e))
        return out

    def plugins(self) -> "list[Tuple[str, str, bool, str]]":
        """Every candidate plugin: (path, name, loaded, reason)."""
        n = ctypes.c_uint32()
        _check(_lib.lib.bp_context_plugin_count(self._h, ctypes.byref(n)))
        out = []
        for i in range(n.value):
            r = _lib.PluginReport()
            _check(_lib.lib.bp_context_plugin_report(self._h, i, ctypes.byref(r)))
            out.append((r.path.decode(), r.name.decode(), r.loaded, r.reason.decode()))
        return out

    def open(self, selector: Optional[str] = None, fallback: bool = True) -> "Device":
        """Opens a device: None for the best, "cpu", "vulkan:1", "cpu-ref", "2".
        fallback=False: an op the device cannot run fails instead of running on
        the next ranked device that can (Device.fallback_stats lists those)."""
        d = Device(self, selector, fallback)
        self._devices.append(d)
        return d

    def open_group(self, members: str = "all", **options: Any) -> "DeviceGroup":
        """Opens several devices as one: "cpu,opencl" or "all" (see DeviceGroup)."""
        d = DeviceGroup(self, members, **options)
        self._devices.append(d)
        return d

    def close(self) -> None:
        """Closes its devices, then the context (idempotent)."""
        for d in self._devices:
            d.close()
        if self._h:
            _lib.lib.bp_context_destroy(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class Device:
    """An open device; allocates tensors and streams."""

    def __init__(self, ctx: Context, selector: Optional[str], fallback: bool = True) -> None:
        self._ctx, self._h = ctx, ctypes.c_void_p()
        cfg = _lib.DeviceConfig(ctypes.sizeof(_lib.DeviceConfig), no_fallback=not fallback)
        _check(_lib.lib.bp_device_open(ctx._h, selector.encode() if selector else None,
                                       None if fallback else ctypes.byref(cfg), ctypes.byref(self._h)))
        self._adopt()

    def _adopt(self):
        """Reads the entry of the device just opened into self._h."""
        e = _lib.DeviceEntry()
        _check(_lib.lib.bp_device_entry(self._h, ctypes.byref(e)))
        self.entry = DeviceEntry(e)
        self._finalizers = {}  # id -> weakref.finalize freeing one owned buffer

    def empty(self, shape: Sequence[int], dtype: DType = "f32") -> "Tensor":
        """An uninitialised contiguous tensor."""
        return Tensor._alloc(self, _shape(shape), _dtype(dtype))

    def tensor(self, array: Any, dtype: Optional[DType] = None) -> "Tensor":
        """A tensor holding a copy of a NumPy array (bf16 given as float32)."""
        a = np.asarray(array)
        if dtype is not None:
            dt = _dtype(dtype)
        else:
            dt = {np.dtype(v): k for k, v in _NP_DTYPES.items()}.get(a.dtype)
            if dt is None:
                raise _invalid("array", f"no backplane dtype for {a.dtype}; pass dtype=")
        t = Tensor._alloc(self, _shape(a.shape, "array"), dt)
        t.upload(a)
        return t

    def supports(self, op: str, dtype: DType = "f32") -> bool:
        """Whether op ("gemm", "conv2d", ... see backplane._lib.OPS) runs natively for dtype."""
        out = ctypes.c_bool()
        _check(_lib.lib.bp_device_supports(self._h, _choice(_lib.OPS, op, "op"),
                                           _lib.DTYPES[_dtype(dtype)], ctypes.byref(out)))
        return out.value

    @property
    def driver_version(self) -> str:
        """The driver's version string ("" when the backend has none)."""
        return self.entry.driver_version

    @property
    def peak_gflops(self) -> float:
        """Estimated peak f32 GFLOP/s (0.0: unknown)."""
        return self.entry.peak_gflops

    @property
    def bandwidth_gbs(self) -> float:
        """Estimated memory bandwidth in GB/s (0.0: unknown)."""
        return self.entry.bandwidth_gbs

    def stream(self) -> "Stream":
        """A new in-order stream on this device."""
        return Stream(self)

    def synchronize(self) -> None:
        """Waits until every stream of the device is idle."""
        _check(_lib.lib.bp_device_synchronize(self._h))

    def memory_stats(self) -> "dict[str, float]":
        """The caching pool's figures (bytes, counts, fragmentation) for this device."""
        s = _lib.MemoryStats()
        s.struct_size = ctypes.sizeof(s)
        _check(_lib.lib.bp_device_memory_stats(self._h, ctypes.byref(s)))
        return {f: getattr(s, f) for f, _ in _lib.MemoryStats._fields_[1:]}

    def fallback_stats(self) -> "list[FallbackStat]":
        """Every op that fell back from this device to another since it opened: op,
        dtype, reason, target device, calls, bytes copied each way and time."""
        return _multi.fallback_stats(self)

    def from_dlpack(self, obj: Any) -> "Tensor":
        """A tensor over the memory of obj (a __dlpack__ producer or a capsule), no copy."""
        return from_dlpack(self, obj)

    def close(self) -> None:
        """Closes the device; the buffers of its tensors go with it (idempotent)."""
        if self._h:
            for f in list(self._finalizers.values()):
                f.detach()  # bp_device_close frees what is left: no double free
            self._finalizers.clear()
            _lib.lib.bp_device_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None):
            self.close()


class Tensor(ViewMixin, TensorModelMixin):
    """A dtype, shape and strides over a device buffer; t[...], reshape, transpose,
    permute and view_at make views that share it (_views.py)."""

    def __init__(self, device: Device, buffer: ctypes.c_void_p, desc: Any, owner: bool = True) -> None:
        self.device, self._buffer, self._desc, self._owner = device, buffer, desc, owner
        if owner:  # the buffer is freed when the tensor is collected
            key = id(self)
            self._finalizer = weakref.finalize(self, _free_buffer, device._finalizers, key,
                                               ctypes.c_void_p(buffer.value))
            device._finalizers[key] = self._finalizer

    @classmethod
    def _alloc(cls, device, shape, dtype):
        code = _lib.DTYPES[_dtype(dtype)]
        shape = _shape(shape)
        n = int(np.prod(shape)) if shape else 1
        buf = ctypes.c_void_p()
        nbytes = n // _lib.BLOCK_WEIGHTS.get(code, 1) * _lib.DTYPE_SIZES[code]  # whole blocks
        _check(_lib.lib.bp_buffer_alloc(device._h, max(1, nbytes), ctypes.byref(buf)))
        desc = _lib.Tensor(buf, 0, code, len(shape))
        stride = 1
        for i in range(len(shape) - 1, -1, -1):
            desc.shape[i], desc.strides[i] = shape[i], stride
            stride *= shape[i]
        return cls(device, buf, desc)

    @property
    def shape(self) -> Tuple[int, ...]:
        """The extent of each axis."""
        return tuple(self._desc.shape[i] for i in range(self._desc.rank))

    @property
    def strides(self) -> Tuple[int, ...]:
        """The step of each axis, in elements."""
        return tuple(self._desc.strides[i] for i in range(self._desc.rank))

    @property
    def dtype(self) -> str:
        """The element type's name: f32, f16, bf16, f64, i32, i64 or u8."""
        return {v: k for k, v in _lib.DTYPES.items()}[self._desc.dtype]

    def _view(self, shape, strides):
        d = _lib.Tensor(self._desc.buffer, self._desc.offset, self._desc.dtype, len(shape))
        for i, (s, st) in enumerate(zip(shape, strides)):
            d.shape[i], d.strides[i] = s, st
        v = Tensor(self.device, self._buffer, d, owner=False)
        v._base = self
        return v

    def permute(self, *axes: int) -> "Tensor":
        """A view with axes reordered: axis i of the view is axis axes[i]."""
        if sorted(axes) != list(range(len(self.shape))):
            raise _invalid("axes", f"{axes} is not a permutation of {len(self.shape)} axes")
        return self._view([self.shape[a] for a in axes], [self.strides[a] for a in axes])

    @property
    def T(self) -> "Tensor":
        """A view with the axes reversed (the transpose of a matrix)."""
        return self.permute(*reversed(range(len(self.shape))))

    def upload(self, array: Any) -> None:
        """Copies a NumPy array of the tensor's shape into it (bf16 given as float32)."""
        if not self.is_contiguous():
            raise ValueError("upload needs a contiguous tensor")
        # fp8 tensors take and give their codes as uint8 (convert with cast)
        store = np.uint8 if self.dtype in ("fp8_e4m3", "fp8_e5m2") else _NP_DTYPES.get(self.dtype, np.float32)
        a = np.ascontiguousarray(array, dtype=store)
        if self.dtype == "bf16":  # round to nearest even from float32
            u = a.astype(np.float32).view(np.uint32)
            a = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        if a.shape != self.shape:
            raise ValueError(f"shape {a.shape} != tensor shape {self.shape}")
        _check(_lib.lib.bp_buffer_write(self._buffer, self._desc.offset, a.ctypes.data, a.nbytes))

    def is_contiguous(self) -> bool:
        """Whether the elements lie densely in row-major order."""
        stride = 1
        for s, st in zip(reversed(self.shape), reversed(self.strides)):
            if s != 1 and st != stride:
                return False
            stride *= s
        return True

    def numpy(self) -> np.ndarray:
        """A copy as a NumPy array (waits for the device's work); bf16 comes back as float32."""
        store = np.uint16 if self.dtype == "bf16" else \
            np.uint8 if self.dtype in ("fp8_e4m3", "fp8_e5m2") else _NP_DTYPES[self.dtype]
        out = np.empty(self.shape, dtype=store)
        if self.is_contiguous():
            _check(_lib.lib.bp_buffer_read(self._buffer, self._desc.offset, out.ctypes.data, out.nbytes))
        else:  # gathered into a temporary freed here, not whenever it is collected
            with self.device.stream() as s:
                src = self.device.empty(self.shape, self.dtype)
                try:
                    s.copy(self, src)
                    s.synchronize()
                    _check(_lib.lib.bp_buffer_read(src._buffer, 0, out.ctypes.data, out.nbytes))
                finally:
                    src.close()
        if self.dtype == "bf16":
            out = (out.astype(np.uint32) << 16).view(np.float32)
        return out

    def to(self, device: "Device") -> "Tensor":
        """A contiguous copy on device (any device or group of this process; the
        bytes move directly where the backends share memory, else staged through
        host memory); this tensor itself when it already lives on device."""
        return _multi.tensor_to(self, device)

    def __dlpack__(self, *, stream: Any = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """The Python DLPack protocol (2023.12): a "dltensor_versioned" capsule
        when the consumer's max_version allows DLPack 1.x, else a legacy
        "dltensor" one. copy=True exports a fresh copy, copy=False or None
        lends this tensor's memory; dl_device other than __dlpack_device__()
        raises BufferError. Device memory (CUDA, ROCm) goes only to a consumer
        that passes stream= or dl_device= (NumPy, which reads host memory, gets
        BufferError before any capsule exists); the device's work is finished
        first unless stream is -1. bf16 raises BackplaneError: NumPy has no
        bfloat16 (use numpy(), which widens to float32, or to_dlpack() for PyTorch)."""
        here = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != here:
            raise BufferError(f"cannot export to device {tuple(dl_device)}: the tensor lives on {here}")
        if here[0] != 1:
            if stream is None and dl_device is None:
                raise BufferError(f"the tensor is in device memory {here}, which this consumer did not "
                                  "ask for (no stream= or dl_device=); use numpy() or to() a host device")
            if stream != -1:
                self.device.synchronize()
        if self.dtype == "bf16":
            raise BackplaneError(_UNSUPPORTED, "__dlpack__: NumPy cannot import bf16 (it has no "
                                 "bfloat16 dtype); use Tensor.numpy() (float32) or, for PyTorch, "
                                 "torch.utils.dlpack.from_dlpack(t.to_dlpack())")
        return self.to_dlpack(versioned=bool(max_version and max_version[0] >= 1), copy=bool(copy))

    def to_dlpack(self, versioned: bool = False, copy: bool = False) -> Any:
        """A DLPack capsule of any dtype (bf16 included) lending this tensor's
        memory, or a copy's with copy=True; versioned picks DLPack 1.x."""
        src = self
        if copy:
            src = self.device.empty(self.shape, self.dtype)
            with self.device.stream() as s:
                s.copy(self, src)
                s.synchronize()
        return to_dlpack_capsule(src, versioned=versioned)

    def __dlpack_device__(self) -> Tuple[int, int]:
        """Where the memory is: (kDLCPU 1, 0) for host memory, (kDLCUDA 2, i) on CUDA,
        (kDLROCM 10, i) on ROCm. OpenCL and Vulkan memory, which DLPack cannot
        describe, also says (1, 0); to_dlpack refuses it."""
        return self.device.entry.dlpack_device or (1, 0)

    def close(self) -> None:
        """Frees the buffer now (views of it must not be used afterwards)."""
        if self._owner and self._buffer:
            self._finalizer()
        self._buffer = None

    def __repr__(self):
        return f"<tensor {self.dtype}{list(self.shape)} on {self.device.entry.name}>"


def _free_buffer(registry, key, buffer):
    registry.pop(key, None)
    _lib.lib.bp_buffer_free(buffer)


def _matrix(t, name):
    """(buffer, byte offset, leading dimension) of a row-major rank-2 tensor."""
    if len(t.shape) != 2 or t.strides[1] != 1:
        raise _invalid(name, f"expected a rank-2 tensor with unit inner stride, got shape {t.shape} "
                             f"strides {t.strides}")
    return t._buffer, t._desc.offset, t.strides[0]


def _tr(flag):
    return _lib.TRANS if flag else _lib.NO_TRANS


def _t(x):
    return ctypes.byref(x._desc) if x is not None else None


class Stream(StreamGraphMixin, StreamModelMixin, StreamQuantMixin):
    """An in-order queue of work; every op is a method, and events and graph
    capture (record_event, wait_event, capture) come from _graph.py."""

    def __init__(self, device: Device) -> None:
        self.device, self._h = device, ctypes.c_void_p()
        _check(_lib.lib.bp_stream_create(device._h, ctypes.byref(self._h)))

    def synchronize(self) -> None:
        """Waits until the stream's work is done."""
        _check(_lib.lib.bp_stream_synchronize(self._h))

    def matmul(self, a: Tensor, b: Tensor, c: Tensor, alpha: float = 1.0, beta: float = 0.0,
               bias: Optional[Tensor] = None, activation: Optional[str] = None) -> None:
        """c = act(alpha * a @ b + beta * c + bias) with NumPy matmul shapes (batch dimensions that
        broadcast, rank-1 operands; transposes are views: .T). bias broadcasts to c; activation is
        one of backplane._lib.UNARY ("relu", "gelu", "silu", ...) or None; beta * c is a residual
        add. Devices without a fused epilogue get it composed on this stream."""
        if bias is None and activation is None:
            _check(_lib.lib.bp_matmul(self._h, alpha, _t(a), _t(b), beta, _t(c)))
            return
        ep = _lib.GemmEpilogue(ctypes.sizeof(_lib.GemmEpilogue),
                               ctypes.pointer(bias._desc) if bias is not None else None, activation is not None,
                               _choice(_lib.UNARY, activation, "activation") if activation is not None else 0)
        _check(_lib.lib.bp_matmul_ex(self._h, alpha, _t(a), _t(b), beta, _t(c), ctypes.byref(ep)))

    def conv2d(self, x: Tensor, w: Tensor, y: Tensor, bias: Optional[Tensor] = None, stride: int = 1,
               padding: int = 0, dilation: int = 1, groups: int = 1) -> None:
        """y = conv2d(x, w) + bias in NCHW (w: OIHW)."""
        p = _lib.Conv2dParams(ctypes.sizeof(_lib.Conv2dParams), stride, stride, padding, padding,
                              dilation, dilation, groups)
        _check(_lib.lib.bp_conv2d(self._h, ctypes.byref(p), _t(x), _t(w), _t(bias), _t(y)))

    def pool2d(self, kind: str, x: Tensor, y: Tensor, kernel: int, stride: int = 0, padding: int = 0,
               count_include_pad: bool = False) -> None:
        """Max (kind="max") or average ("avg") pooling in NCHW; stride 0 means kernel."""
        p = _lib.Pool2dParams(ctypes.sizeof(_lib.Pool2dParams), _choice(["max", "avg"], kind, "kind"), kernel,
                              kernel, stride, stride, padding, padding, count_include_pad)
        _check(_lib.lib.bp_pool2d(self._h, ctypes.byref(p), _t(x), _t(y)))

    def batch_norm(self, x: Tensor, mean: Tensor, var: Tensor, scale: Optional[Tensor],
                   bias: Optional[Tensor], y: Tensor, eps: float = 1e-5) -> None:
        """Inference batch normalisation over the channel axis of NCHW x."""
        _check(_lib.lib.bp_batch_norm(self._h, _t(x), _t(mean), _t(var), _t(scale), _t(bias), eps, _t(y)))

    def layer_norm(self, x: Tensor, y: Tensor, gamma: Optional[Tensor] = None,
                   beta: Optional[Tensor] = None, eps: float = 1e-5) -> None:
        """Layer normalisation over the last axis."""
        _check(_lib.lib.bp_layer_norm(self._h, _t(x), _t(gamma), _t(beta), eps, _t(y)))

    def rms_norm(self, x: Tensor, y: Tensor, gamma: Optional[Tensor] = None, eps: float = 1e-6) -> None:
        """RMS normalisation over the last axis."""
        _check(_lib.lib.bp_rms_norm(self._h, _t(x), _t(gamma), eps, _t(y)))

    def softmax(self, x: Tensor, y: Tensor, axis: int = -1, log: bool = False) -> None:
        """Softmax (log-softmax with log=True) along axis."""
        _check(_lib.lib.bp_softmax(self._h, _t(x), axis, log, _t(y)))

    def attention(self, q: Tensor, k: Tensor, v: Tensor, out: Tensor, scale: float = 0.0,
                  causal: bool = False, kv_lens: Optional[Tensor] = None, window: int = 0,
                  bias: Optional[Tensor] = None, alibi: Union[bool, Tensor] = False) -> None:
        """Scaled dot-product attention; scale 0 means 1/sqrt(head dim). Masks (bottom-right
        aligned like causal): kv_lens (i32 [B]: keys past each length masked), window (> 0: a
        causal sliding window of that many keys), bias (added to the scores, broadcasting to
        [B, Hq, Sq, Skv]), alibi (True: the standard slopes; an f32 [Hq] tensor: those slopes)."""
        if kv_lens is None and not window and bias is None and alibi is False:
            _check(_lib.lib.bp_attention(self._h, _t(q), _t(k), _t(v), scale, causal, _t(out)))
            return
        ptr = lambda t: ctypes.pointer(t._desc) if t is not None else None  # noqa: E731
        slopes = alibi if isinstance(alibi, Tensor) else None
        o = _lib.AttentionOptions(ctypes.sizeof(_lib.AttentionOptions), scale, causal, window, ptr(kv_lens),
                                  ptr(bias), alibi is True, ptr(slopes))
        _check(_lib.lib.bp_attention_ex(self._h, _t(q), _t(k), _t(v), ctypes.byref(o), _t(out)))

    def adam(self, params: Sequence[Tensor], grads: Sequence[Tensor], exp_avg: Sequence[Tensor],
             exp_avg_sq: Sequence[Tensor], lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
             eps: float = 1e-8, weight_decay: float = 0.0, step: int = 1, adamw: bool = False) -> None:
        """One Adam (AdamW with adamw=True) step over lists of tensors, in place."""
        n = len(params)
        arrays = [(_lib.Tensor * n)(*[t._desc for t in ts]) for ts in (params, grads, exp_avg, exp_avg_sq)]
        p = _lib.AdamParams(ctypes.sizeof(_lib.AdamParams), lr, betas[0], betas[1], eps, weight_decay,
                            step, adamw)
        _check(_lib.lib.bp_adam(self._h, ctypes.byref(p), n, *arrays))

    def unary(self, op: str, x: Tensor, y: Tensor) -> None:
        """y = op(x) elementwise; op is one of backplane._lib.UNARY ("exp", "relu", ...)."""
        _check(_lib.lib.bp_unary(self._h, _choice(_lib.UNARY, op, "op"), _t(x), _t(y)))

    def binary(self, op: str, a: Tensor, b: Tensor, y: Tensor) -> None:
        """y = op(a, b) elementwise with broadcasting; op is one of backplane._lib.BINARY."""
        _check(_lib.lib.bp_binary(self._h, _choice(_lib.BINARY, op, "op"), _t(a), _t(b), _t(y)))

    def reduce(self, op: str, x: Tensor, axis: int, y: Tensor) -> None:
        """y = op over axis of x; op is one of backplane._lib.REDUCE ("sum", "mean", ...)."""
        _check(_lib.lib.bp_reduce(self._h, _choice(_lib.REDUCE, op, "op"), _t(x), axis, _t(y)))

    def fill(self, y: Tensor, value: float) -> None:
        """Sets every element of y to value."""
        _check(_lib.lib.bp_fill(self._h, _t(y), value))

    def copy(self, x: Tensor, y: Tensor) -> None:
        """y = x (any strides, same dtype and shape)."""
        _check(_lib.lib.bp_copy(self._h, _t(x), _t(y)))

    def cast(self, x: Tensor, y: Tensor, saturate: bool = False) -> None:
        """y = x converted to y's dtype. saturate (fp8 y only: bp_cast_ex with
        BP_CAST_SATURATE): values beyond y's largest finite value, infinities
        included, become that value instead of NaN (e4m3) or inf (e5m2)."""
        if saturate:
            _check(_lib.lib.bp_cast_ex(self._h, _t(x), _t(y), _lib.CAST_SATURATE))
        else:
            _check(_lib.lib.bp_cast(self._h, _t(x), _t(y)))

    def gemm(self, a: "Tensor", b: "Tensor", c: "Tensor", alpha: float = 1.0, beta: float = 0.0,
             trans_a: bool = False, trans_b: bool = False) -> None:
        """c = alpha * op(a) @ op(b) + beta * c (bp_gemm, row-major): a, b, c are rank-2
        tensors with unit inner stride; op transposes when trans_a / trans_b."""
        a_, b_, c_ = (_matrix(t, n) for t, n in ((a, "a"), (b, "b"), (c, "c")))
        m, n = c.shape
        k = a.shape[0] if trans_a else a.shape[1]
        _check(_lib.lib.bp_gemm(self._h, c._desc.dtype, _lib.ROW_MAJOR, _tr(trans_a), _tr(trans_b), m,
                                n, k, alpha, *a_, *b_, beta, *c_))

    def gemm_strided_batched(self, a: "Tensor", b: "Tensor", c: "Tensor", alpha: float = 1.0,
                             beta: float = 0.0, trans_a: bool = False, trans_b: bool = False) -> None:
        """gemm over axis 0 of rank-3 tensors (bp_gemm_strided_batched); a batch stride of 0
        (a broadcast view) reuses one matrix for the whole batch."""
        for t, name in ((a, "a"), (b, "b"), (c, "c")):
            if len(t.shape) != 3 or t.strides[2] != 1:
                raise _invalid(name, f"expected a rank-3 tensor with unit inner stride, got "
                                     f"shape {t.shape} strides {t.strides}")
        batch, m, n = c.shape
        k = a.shape[1] if trans_a else a.shape[2]
        args = [(t._buffer, t._desc.offset, t.strides[1], t.strides[0]) for t in (a, b, c)]
        _check(_lib.lib.bp_gemm_strided_batched(self._h, c._desc.dtype, _lib.ROW_MAJOR, _tr(trans_a),
                                                _tr(trans_b), m, n, k, alpha, *args[0], *args[1],
                                                beta, *args[2], batch))

    def gemv(self, a: "Tensor", x: "Tensor", y: "Tensor", alpha: float = 1.0, beta: float = 0.0,
             trans: bool = False) -> None:
        """y = alpha * op(a) @ x + beta * y (bp_gemv, row-major); x and y are rank-1 tensors
        whose strides give incx and incy."""
        a_ = _matrix(a, "a")
        for t, name in ((x, "x"), (y, "y")):
            if len(t.shape) != 1 or t.strides[0] <= 0:
                raise _invalid(name, f"expected a rank-1 tensor with a positive stride, got {t.shape}")
        m, n = a.shape
        _check(_lib.lib.bp_gemv(self._h, a._desc.dtype, _lib.ROW_MAJOR, _tr(trans), m, n, alpha, *a_,
                                x._buffer, x._desc.offset, x.strides[0], beta, y._buffer,
                                y._desc.offset, y.strides[0]))

    def random(self, y: Tensor, dist: str = "uniform", seed: int = 0, offset: int = 0, a: float = 0.0,
               b: float = 1.0) -> None:
        """Counter-based random numbers: uniform in [a, b) or normal (mean a, std b)."""
        _check(_lib.lib.bp_random(self._h, _choice(["uniform", "normal"], dist, "dist"), seed, offset, a, b, _t(y)))

    def close(self) -> None:
        """Waits for the stream's work and destroys it (idempotent)."""
        if self._h and self.device._h:
            _lib.lib.bp_stream_destroy(self._h)
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None):
            self.close()


from . import _multi  # noqa: E402  (DeviceGroup builds on Device)
from ._multi import DeviceGroup, FallbackStat, GroupMember  # noqa: E402
