"""Several devices as one system: tensors moved between devices, device
groups, and the report of ops that fell back to another device.

Imported at the end of backplane/__init__.py: DeviceGroup builds on Device.
"""
from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, List

from . import Device, _check, _invalid, _lib

if TYPE_CHECKING:
    from . import Context, Tensor


def tensor_to(t: "Tensor", device: Device) -> "Tensor":
    """A contiguous copy of t on device, moved by bp_buffer_copy (directly where
    one side's memory is host memory or mappable, else staged through host
    memory); t itself when it already lives on device."""
    if not isinstance(device, Device):
        raise _invalid("device", f"expected a backplane Device, got {type(device).__name__}")
    if device is t.device:
        return t
    if not device._h:
        raise _invalid("device", "the device is closed")
    src = t
    if not t.is_contiguous():  # gather the view on its own device first
        src = t.device.empty(t.shape, t.dtype)
        with t.device.stream() as s:
            s.copy(t, src)
            s.synchronize()
    out = device.empty(t.shape, t.dtype)
    nbytes = 1
    for n in t.shape:
        nbytes *= n
    nbytes *= _lib.DTYPE_SIZES[t._desc.dtype]
    if nbytes:
        _check(_lib.lib.bp_buffer_copy(out._buffer, out._desc.offset, src._buffer, src._desc.offset, nbytes))
    return out


class GroupMember:
    """One member of a device group as the group sees it (bp_device_group_info)."""

    def __init__(self, m: _lib.GroupMember) -> None:
        from . import DeviceEntry
        self.entry = DeviceEntry(m.entry)
        self.hardware: int = m.hardware  # members with equal values are the same hardware
        # GFLOP/s measured per split family ("gemm", "attention", "conv2d"); 0.0: not yet
        self.gflops = {f: m.gflops[i] for i, f in enumerate(_lib.GROUP_SPLITS)}
        # the fraction of a split op of each family this member takes (0.0 before measuring)
        self.share = {f: m.share[i] for i, f in enumerate(_lib.GROUP_SPLITS)}
        self.ops_run: int = m.ops_run        # whole ops it ran for the group
        self.slices_run: int = m.slices_run  # slices of split ops it ran

    def __repr__(self):
        return f"<group member {self.entry.backend} {self.entry.name!r} share {self.share}>"


class DeviceGroup(Device):
    """Several devices opened as one (bp_device_group_open): tensors, streams
    and ops work as on any device; large GEMM, strided-batched GEMM,
    attention and conv2d are split across the members in proportion to their
    measured speed. Group memory is host memory, and work on a group is
    synchronous."""

    def __init__(self, ctx: "Context", members: str = "all", allow_shared_hardware: bool = False,
                 split_shared_hardware: bool = False, min_split_flops: int = 0,
                 fallback: bool = True) -> None:
        """members: "cpu,opencl" (bp_device_open selectors, two to eight) or "all".
        allow_shared_hardware accepts members that are the same hardware (refused
        otherwise); split_shared_hardware then gives each of them a share;
        min_split_flops: smaller ops run whole on the best member (0: the
        library's default); fallback=False opens the members without fallback."""
        if not isinstance(members, str):
            raise _invalid("members", f"expected a string such as 'cpu,opencl' or 'all', got {members!r}")
        if not isinstance(min_split_flops, int) or min_split_flops < 0:
            raise _invalid("min_split_flops", f"expected a non-negative integer, got {min_split_flops!r}")
        self._ctx, self._h = ctx, ctypes.c_void_p()
        cfg = _lib.DeviceConfig(ctypes.sizeof(_lib.DeviceConfig), no_fallback=not fallback)
        opts = _lib.GroupOptions(ctypes.sizeof(_lib.GroupOptions), allow_shared_hardware,
                                 split_shared_hardware, min_split_flops,
                                 None if fallback else ctypes.pointer(cfg))
        _check(_lib.lib.bp_device_group_open(ctx._h, members.encode(), ctypes.byref(opts),
                                             ctypes.byref(self._h)))
        self._adopt()

    def members(self) -> List[GroupMember]:
        """Each member in rank order (0 the best), with its measured speeds and shares."""
        n = ctypes.c_uint32()
        _check(_lib.lib.bp_device_group_size(self._h, ctypes.byref(n)))
        out = []
        for i in range(n.value):
            m = _lib.GroupMember()
            m.struct_size = ctypes.sizeof(m)
            _check(_lib.lib.bp_device_group_info(self._h, i, ctypes.byref(m)))
            out.append(GroupMember(m))
        return out

    def calibrate(self, remeasure: bool = False) -> None:
        """Reads each member's speed from the tuning cache, measuring where it has
        none (every one again with remeasure); ops do this on their first split."""
        _check(_lib.lib.bp_device_group_calibrate(self._h, remeasure))

    def __repr__(self):
        return f"<device group {self.entry.name!r}>"


class FallbackStat:
    """One (op, dtype, reason, target) that fell back from a device to another,
    with what it cost (bp_device_fallback_stats)."""

    def __init__(self, s: _lib.FallbackStat) -> None:
        self.op: str = _lib.OPS[s.op] if 0 <= s.op < len(_lib.OPS) else str(s.op)
        self.dtype: str = {v: k for k, v in _lib.DTYPES.items()}.get(s.dtype, str(s.dtype))
        # "dtype" (not claimed for the dtype), "no_entry" (no entry point), "refused" (the plugin said no)
        self.reason: str = (_lib.FALLBACK_REASONS[s.reason] if 0 <= s.reason < len(_lib.FALLBACK_REASONS)
                            else str(s.reason))
        self.reason_text: str = s.reason_text.decode(errors="replace")  # the refusal's words
        self.target: str = s.target.decode(errors="replace")            # the device it ran on
        self.target_backend: str = s.target_backend.decode(errors="replace")
        self.count: int = s.count          # calls that ran there
        self.bytes_in: int = s.bytes_in    # copied to the target
        self.bytes_out: int = s.bytes_out  # copied back
        self.copy_seconds: float = s.copy_ns * 1e-9
        self.total_seconds: float = s.total_ns * 1e-9  # copies and op together

    def __repr__(self):
        return (f"<fallback {self.op} {self.dtype} -> {self.target} ({self.reason}: {self.reason_text}) "
                f"x{self.count}>")


def fallback_stats(device: Device) -> List[FallbackStat]:
    """Every op that fell back from device since it opened, in the order they first did."""
    n = ctypes.c_uint32()
    _check(_lib.lib.bp_device_fallback_stats(device._h, None, 0, ctypes.byref(n)))
    if not n.value:
        return []
    arr = (_lib.FallbackStat * n.value)()
    arr[0].struct_size = ctypes.sizeof(_lib.FallbackStat)
    got = ctypes.c_uint32()
    _check(_lib.lib.bp_device_fallback_stats(device._h, arr, n.value, ctypes.byref(got)))
    return [FallbackStat(arr[i]) for i in range(min(got.value, n.value))]
