"""The model ops of ABI 1.5 (core/backplane_model.h) as Stream methods, and the
Tensor helpers built on them: gather (embedding lookup), arange, binary ops with
a scalar, gated linear units, rotary position embedding, concat, KV-cache append
and narrow / split views. Semantics in docs/ops.md ("Model ops")."""
from __future__ import annotations

import ctypes
from typing import Optional, Sequence

from . import _lib
from ._checks import _check, _choice, _invalid

GLU = ["swiglu", "geglu", "geglu_tanh", "reglu"]
ROPE = ["half", "interleaved"]

_P, _T, _D = ctypes.c_void_p, ctypes.POINTER(_lib.Tensor), ctypes.c_double
_I32, _I64, _U32 = ctypes.c_int32, ctypes.c_int64, ctypes.c_uint32
for _name, _args in {
    "bp_gather": [_P, _T, _T, _I32, _T],
    "bp_arange": [_P, _D, _D, _T],
    "bp_binary_scalar": [_P, ctypes.c_int, _T, _D, _T],
    "bp_binary_scalar_first": [_P, ctypes.c_int, _D, _T, _T],
    "bp_glu": [_P, ctypes.c_int, _T, _T, _T],
    "bp_rope": [_P, ctypes.c_int, _I32, _D, _I64, _T, _T, _T],
    "bp_concat": [_P, _U32, _T, _I32, _T],
    "bp_kv_append": [_P, _T, _T, _I32, _I64],
    "bp_tensor_narrow": [_T, _I32, _I64, _I64, _T],
}.items():
    _fn = getattr(_lib.lib, _name)
    _fn.argtypes, _fn.restype = _args, ctypes.c_int


def _t(x):
    return ctypes.byref(x._desc) if x is not None else None


class StreamModelMixin:
    """Stream methods for the model ops (mixed into Stream)."""

    def gather(self, table, indices, y, axis: int = 0) -> None:
        """y = table indexed along axis by indices (i32 / i64, any rank): an embedding
        lookup. An index outside the table gives zeros."""
        _check(_lib.lib.bp_gather(self._h, _t(table), _t(indices), axis, _t(y)))

    def arange(self, y, start: float = 0.0, step: float = 1.0) -> None:
        """y[i] = start + i * step over y's elements in row-major order, any dtype."""
        _check(_lib.lib.bp_arange(self._h, start, step, _t(y)))

    def binary_scalar(self, op: str, a, scalar: float, y, scalar_first: bool = False) -> None:
        """y = a op scalar (or scalar op a with scalar_first); the scalar is rounded to a's
        dtype first. op is one of backplane._lib.BINARY."""
        k = _choice(_lib.BINARY, op, "op")
        if scalar_first:
            _check(_lib.lib.bp_binary_scalar_first(self._h, k, scalar, _t(a), _t(y)))
        else:
            _check(_lib.lib.bp_binary_scalar(self._h, k, _t(a), scalar, _t(y)))

    def glu(self, kind: str, gate, up, y) -> None:
        """y = act(gate) * up; kind is "swiglu", "geglu", "geglu_tanh" or "reglu"."""
        _check(_lib.lib.bp_glu(self._h, _choice(GLU, kind, "kind"), _t(gate), _t(up), _t(y)))

    def rope(self, x, y, rotary_dim: Optional[int] = None, mode: str = "half", theta_base: float = 10000.0,
             pos_offset: int = 0, positions=None) -> None:
        """Rotary position embedding of x [batch, seq, heads, head_dim] into y (y may be x).
        rotary_dim defaults to head_dim; positions (i32 / i64, [batch, seq] or [seq]) or
        pos_offset + s give each token's position; mode "half" (NeoX) or "interleaved" (GPT-J)."""
        rd = x.shape[-1] if rotary_dim is None else rotary_dim
        _check(_lib.lib.bp_rope(self._h, _choice(ROPE, mode, "mode"), rd, theta_base, pos_offset,
                                _t(positions), _t(x), _t(y)))

    def concat(self, inputs: Sequence, y, axis: int = 0) -> None:
        """y = the inputs joined along axis (one copy each into its slot of y)."""
        arr = (_lib.Tensor * len(inputs))(*[t._desc for t in inputs])
        _check(_lib.lib.bp_concat(self._h, len(inputs), arr, axis, _t(y)))

    def kv_append(self, cache, fresh, position: int, seq_axis: int = -2) -> None:
        """Copies fresh into cache[..., position:position + n, ...] along seq_axis."""
        _check(_lib.lib.bp_kv_append(self._h, _t(cache), _t(fresh), seq_axis, position))


class TensorModelMixin:
    """Tensor helpers for the model ops (mixed into Tensor)."""

    def narrow(self, axis: int, start: int, length: int):
        """A view of elements [start, start + length) along axis (bp_tensor_narrow)."""
        out = _lib.Tensor()
        _check(_lib.lib.bp_tensor_narrow(ctypes.byref(self._desc), axis, start, length, ctypes.byref(out)))
        v = self._view(list(out.shape[:out.rank]), list(out.strides[:out.rank]))
        v._desc.offset = out.offset
        return v

    def split(self, sizes: Sequence[int], axis: int = -1) -> list:
        """Views of consecutive parts of the given sizes along axis (e.g. packed QKV)."""
        n = self.shape[axis]
        if sum(sizes) != n:
            raise _invalid("sizes", f"add up to {sum(sizes)}, but axis {axis} has {n}")
        out, at = [], 0
        for s in sizes:
            out.append(self.narrow(axis, at, s))
            at += s
        return out

    def kv_append(self, fresh, position: int, stream, seq_axis: int = -2) -> None:
        """Appends fresh to this cache at position along seq_axis, on stream."""
        stream.kv_append(self, fresh, position, seq_axis)

    def concat_into(self, inputs: Sequence, stream, axis: int = 0) -> None:
        """Fills this tensor with the inputs joined along axis, on stream."""
        stream.concat(inputs, self, axis)
