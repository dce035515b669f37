"""Argument checking and errors shared by the package: BackplaneError, dtype
and shape validation, and the status check of every library call."""
from __future__ import annotations

import numpy as np

from . import _lib

_NP_DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32,
              "i64": np.int64, "u8": np.uint8, "i8": np.int8}


class BackplaneError(RuntimeError):
    """A failed call: .status is the symbolic status, the message the library's."""

    def __init__(self, status: int, message: str) -> None:
        self.status = _lib.lib.bp_status_name(status).decode()
        super().__init__(f"{self.status}: {message}")


_INVALID = -1  # BP_ERR_INVALID_ARGUMENT
_UNSUPPORTED = -3  # BP_ERR_UNSUPPORTED
_ALIASES = {"float32": "f32", "float16": "f16", "half": "f16", "bfloat16": "bf16", "float64": "f64",
            "double": "f64", "int32": "i32", "int64": "i64", "uint8": "u8",
            "int8": "i8"}


def _invalid(arg, message):
    """A BackplaneError (BP_ERR_INVALID_ARGUMENT) naming the argument at fault."""
    return BackplaneError(_INVALID, f"{arg}: {message}")


def _dtype(value, arg="dtype"):
    """The backplane dtype name ("f32") for "f32", "float32", np.float32 or np.dtype("float32")."""
    if isinstance(value, str):
        name = _ALIASES.get(value, value)
        if name in _lib.DTYPES:
            return name
    if not isinstance(value, str) or value not in _ALIASES:
        try:
            dt = np.dtype(value)
        except (TypeError, ValueError):
            dt = None
        if dt is not None:
            if dt.name == "bfloat16":  # ml_dtypes.bfloat16
                return "bf16"
            for k, v in _NP_DTYPES.items():
                if np.dtype(v) == dt:
                    return k
    raise _invalid(arg, f"unknown dtype {value!r} (one of {', '.join(_lib.DTYPES)}, their NumPy "
                        "names or NumPy dtypes)")


def _shape(shape, arg="shape"):
    """A validated shape tuple: at most 8 non-negative integers."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise _invalid(arg, f"expected a sequence of integers, got {shape!r}") from None
    if len(dims) > _lib.MAX_RANK:
        raise _invalid(arg, f"rank {len(dims)} exceeds the maximum of {_lib.MAX_RANK}")
    out = []
    for d in dims:
        try:
            n = int(d.__index__())
        except (AttributeError, TypeError):
            raise _invalid(arg, f"dimension {d!r} is not an integer") from None
        if n < 0:
            raise _invalid(arg, f"dimension {n} is negative")
        out.append(n)
    return tuple(out)


def _choice(table, value, arg):
    """The index of value in a list of op names, or a BackplaneError naming arg."""
    if isinstance(value, str) and value in table:
        return table.index(value)
    raise _invalid(arg, f"unknown {arg} {value!r} (one of {', '.join(table)})")


def _check(status):
    if status != 0:
        raise BackplaneError(status, _lib.lib.bp_last_error().decode(errors="replace"))
