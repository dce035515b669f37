"""Views of a Tensor: slicing, reshape, transpose and offset views.

A view shares its base tensor's buffer: it is the same (buffer, byte offset,
dtype, shape, strides) descriptor the C ops take, so every op accepts it with
no copy. Strides are in elements, as in the C API; the offset is in bytes
(bp_tensor_t.offset) and only ever moves by whole elements. A view keeps its
base alive, so the buffer outlives every view of it.
"""
from __future__ import annotations

import ctypes
import operator
from typing import Any, Optional, Sequence, Tuple

from . import _lib
from ._checks import _check, _invalid


def _itemsize(t) -> int:
    return _lib.DTYPE_SIZES[t._desc.dtype]


def _norm_index(i: int, n: int, axis: int) -> int:
    j = i + n if i < 0 else i
    if not 0 <= j < n:
        raise IndexError(f"index {i} is out of range for axis {axis} of size {n}")
    return j


def _expand_key(key: Any, rank: int) -> list:
    """The key as one entry per axis (Ellipsis expanded, missing axes ':')."""
    key = list(key) if isinstance(key, tuple) else [key]
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have one ellipsis (...)")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        fill = rank - (len(key) - 1)
        key = key[:at] + [slice(None)] * fill + key[at + 1:]
    if len(key) > rank:
        raise IndexError(f"too many indices: {len(key)} for a rank-{rank} tensor")
    return key + [slice(None)] * (rank - len(key))


class ViewMixin:
    """Tensor methods that make views (mixed into Tensor), and the constant
    mark of the buffer they share."""

    @property
    def constant(self) -> bool:
        """Whether the tensor's buffer is marked constant (bp_buffer_set_constant):
        writes into it are refused, and backends may keep a prepared form of it,
        such as conv2d weights transformed once. The mark is the buffer's, so
        every view of it shares it."""
        out = ctypes.c_bool(False)
        _check(_lib.lib.bp_buffer_is_constant(self._buffer, ctypes.byref(out)))
        return bool(out.value)

    @constant.setter
    def constant(self, value: bool) -> None:
        _check(_lib.lib.bp_buffer_set_constant(self._buffer, bool(value)))

    def _element_offset_view(self, elems: int, shape: Sequence[int], strides: Sequence[int]):
        v = self._view(list(shape), list(strides))
        v._desc.offset = self._desc.offset + elems * _itemsize(self)
        return v

    def __getitem__(self, key: Any):
        """A view selected by integers (which drop the axis), slices with any
        non-zero step (negative steps included) and one Ellipsis, as in NumPy
        basic indexing. The view shares the buffer; nothing is copied."""
        shape, strides = [], []
        elems = 0
        for axis, k in enumerate(_expand_key(key, len(self.shape))):
            n, st = self.shape[axis], self.strides[axis]
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                if step == 0:
                    raise ValueError("slice step cannot be zero")
                count = len(range(start, stop, step))
                if count:
                    elems += start * st
                shape.append(count)
                strides.append(st * step)
            elif k is None:
                raise IndexError("new axes (None) are not supported; use reshape")
            else:
                try:
                    i = operator.index(k)
                except TypeError:
                    raise IndexError(f"only integers, slices and ... are valid indices, not "
                                     f"{type(k).__name__} (advanced indexing copies; it is not a view)")
                elems += _norm_index(i, n, axis) * st
        return self._element_offset_view(elems, shape, strides)

    def transpose(self, a: int = -2, b: int = -1):
        """A view with axes a and b exchanged (by default the last two)."""
        rank = len(self.shape)
        if rank < 2:
            raise _invalid("axes", f"transpose needs rank >= 2, the tensor has rank {rank}")
        axes = list(range(rank))
        try:
            a, b = axes[a], axes[b]
        except IndexError:
            raise _invalid("axes", f"({a}, {b}) out of range for rank {rank}")
        axes[a], axes[b] = axes[b], axes[a]
        return self.permute(*axes)

    def reshape(self, *shape: Any):
        """A view with a new shape (one entry may be -1). Allowed whenever the
        elements can be reached with strides, as in NumPy (always for a
        contiguous tensor; for a strided view, when the reshaped axes only
        split or merge axes that are laid out contiguously among themselves);
        otherwise ValueError: copy first (Stream.copy into a new tensor)."""
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        new = _resolve_shape([int(s) for s in shape], self.numel())
        strides = _reshape_strides(self.shape, self.strides, new)
        if strides is None:
            raise ValueError(f"cannot reshape a view of shape {self.shape} and strides {self.strides} to "
                             f"{tuple(new)} without a copy")
        return self._element_offset_view(0, new, strides)

    def view_at(self, offset: int, shape: Sequence[int], strides: Optional[Sequence[int]] = None):
        """A view starting `offset` elements into this tensor's memory (from its
        own start), with any shape and strides (elements; row-major when
        omitted), checked to stay inside the buffer's elements this tensor can
        reach from its base allocation. For packed rows such as QKV:
        qkv.view_at(d, (seq, d), (3 * d, 1)) is the K part."""
        shape = [int(s) for s in shape]
        if any(s < 0 for s in shape):
            raise _invalid("shape", f"{tuple(shape)} has a negative extent")
        if strides is None:
            strides, step = [0] * len(shape), 1
            for i in range(len(shape) - 1, -1, -1):
                strides[i], step = step, step * shape[i]
        strides = [int(s) for s in strides]
        if len(strides) != len(shape):
            raise _invalid("strides", f"{len(strides)} strides for {len(shape)} axes")
        lo, hi = _extent(shape, strides)
        base = self._root()
        start = (self._desc.offset - base._desc.offset) // _itemsize(self) + int(offset)
        if start < 0 or start + lo < 0 or (base.numel() and start + hi >= base.numel()):
            raise _invalid("offset", f"a view at element {offset} with shape {tuple(shape)} and strides "
                           f"{tuple(strides)} reaches outside the tensor's buffer of {base.numel()} elements")
        return self._element_offset_view(int(offset), shape, strides)

    def numel(self) -> int:
        """The number of elements."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    def _root(self):
        t = self
        while getattr(t, "_base", None) is not None:
            t = t._base
        return t

    def is_view(self) -> bool:
        """Whether this tensor is a view of another (shares its buffer)."""
        return getattr(self, "_base", None) is not None


def _extent(shape: Sequence[int], strides: Sequence[int]) -> Tuple[int, int]:
    """The lowest and highest element offsets a shape and strides reach."""
    lo = hi = 0
    for n, st in zip(shape, strides):
        if n == 0:
            return 0, 0
        step = (n - 1) * st
        if step < 0:
            lo += step
        else:
            hi += step
    return lo, hi


def _resolve_shape(shape: list, numel: int) -> list:
    if shape.count(-1) > 1:
        raise ValueError("only one dimension can be -1")
    if any(s < -1 for s in shape):
        raise ValueError(f"negative dimension in {tuple(shape)}")
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known == 0 or numel % known:
            raise ValueError(f"cannot reshape {numel} elements into {tuple(shape)}")
        shape[shape.index(-1)] = numel // known
    total = 1
    for s in shape:
        total *= s
    if total != numel:
        raise ValueError(f"cannot reshape {numel} elements into {tuple(shape)}")
    return shape


def _reshape_strides(old_shape, old_strides, new_shape) -> Optional[list]:
    """Strides for new_shape over the same elements, or None when the old
    layout cannot be walked that way (NumPy's attempt_nocopy_reshape)."""
    old = [(n, s) for n, s in zip(old_shape, old_strides) if n != 1]
    if any(n == 0 for n in new_shape) or not old:
        strides, step = [0] * len(new_shape), 1
        for i in range(len(new_shape) - 1, -1, -1):
            strides[i], step = step, step * max(new_shape[i], 1)
        return strides
    new_strides = [0] * len(new_shape)
    oi = ni = 0
    while oi < len(old) and ni < len(new_shape):
        if new_shape[ni] == 1:
            new_strides[ni] = 1
            ni += 1
            continue
        oj, nj = oi + 1, ni + 1
        op, np_ = old[oi][0], new_shape[ni]
        while op != np_:
            if np_ < op:
                np_ *= new_shape[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):  # the old axes of this group must be contiguous
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        step = old[oj - 1][1]
        for k in range(nj - 1, ni - 1, -1):
            new_strides[k] = step
            step *= new_shape[k]
        oi, ni = oj, nj
    for k in range(ni, len(new_shape)):  # trailing unit axes
        new_strides[k] = 1
    return new_strides
