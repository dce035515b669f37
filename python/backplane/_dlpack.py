"""DLPack interop: capsules for NumPy / PyTorch, and importing theirs.

Exported capsules follow the Python DLPack protocol: named "dltensor"
(or "dltensor_versioned"), renamed "used_..." by the consumer, whose
deleter then owns the managed tensor. The tensor's buffer is kept alive
until that deleter runs, so a NumPy view never outlives its memory.
"""
from __future__ import annotations

import ctypes
from typing import Any

from . import _lib

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
# The destructor may run while the consumer's exception is set: these two
# wrappers neither check nor raise Python errors (neither function sets one
# for a valid capsule), so a failed import stays the consumer's error.
_get_pointer_raw = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_is_valid_raw = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))

_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

_USED, _USED_VERSIONED = b"used_dltensor", b"used_dltensor_versioned"

# managed tensor address -> (tensor kept alive, original C deleter)
_alive = {}


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("byte_offset", ctypes.c_uint64)]


class _Legacy(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _Versioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


@_DELETER
def _release(managed):
    """Runs the library's deleter, then lets the bp tensor go."""
    tensor, original = _alive.pop(managed, (None, None))
    if original:
        _DELETER(original)(managed)
    del tensor


@_DESTRUCTOR
def _capsule_destructor(capsule):
    # An unconsumed capsule still owns its tensor.
    for name, struct in ((b"dltensor", _Legacy), (b"dltensor_versioned", _Versioned)):
        if _is_valid_raw(capsule, name):
            managed = _get_pointer_raw(capsule, name)
            deleter = struct.from_address(managed).deleter
            if deleter:
                _DELETER(deleter)(managed)


def to_dlpack_capsule(tensor: Any, versioned: bool = False) -> Any:
    """A DLPack capsule lending tensor's memory (no copy)."""
    from . import _check
    out = ctypes.c_void_p()
    _check(_lib.lib.bp_tensor_to_dlpack(ctypes.byref(tensor._desc), versioned, ctypes.byref(out)))
    struct = (_Versioned if versioned else _Legacy).from_address(out.value)
    _alive[out.value] = (tensor, struct.deleter)
    struct.deleter = ctypes.cast(_release, ctypes.c_void_p).value
    name = b"dltensor_versioned" if versioned else b"dltensor"
    return _api.PyCapsule_New(out.value, name, ctypes.cast(_capsule_destructor, ctypes.c_void_p).value)


def from_dlpack(device: Any, obj: Any) -> Any:
    """A bp Tensor over the memory of obj (anything with __dlpack__), no copy."""
    from . import Tensor, _check
    if hasattr(obj, "__dlpack__"):
        where = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
        # device memory needs a stream (1: the legacy default); host memory takes none
        kw = {} if where[0] == 1 else {"stream": 1}
        try:  # a DLPack 1.x producer gives a versioned capsule
            capsule = obj.__dlpack__(max_version=(1, 0), **kw)
        except TypeError:  # an older producer
            capsule = obj.__dlpack__(**kw)
    else:
        capsule = obj
    versioned = _api.PyCapsule_IsValid(ctypes.c_void_p(id(capsule)), b"dltensor_versioned") == 1
    name = b"dltensor_versioned" if versioned else b"dltensor"
    ptr = _api.PyCapsule_GetPointer(capsule, name)
    desc, buf = _lib.Tensor(), ctypes.c_void_p()
    _check(_lib.lib.bp_tensor_from_dlpack(device._h, ptr, versioned, ctypes.byref(desc),
                                          ctypes.byref(buf)))
    # The capsule keeps the name's pointer: pass the interned constants only.
    _api.PyCapsule_SetName(capsule, _USED_VERSIONED if versioned else _USED)  # we own it now
    t = Tensor(device, buf, desc)
    t._source = obj  # the producer's object stays alive with the tensor
    return t
