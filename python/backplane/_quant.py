"""The quantized ops of ABI 1.5 (core/backplane_quant.h) as Stream methods:
quantize / dequantize (q8_0, q4_0 blocks; i8 or u8 with scales), the int8 /
uint8 and fp8 GEMM and
GEMM / GEMV with block-quantized weights. Layouts and rounding in docs/ops.md
("Quantized types and ops")."""
from __future__ import annotations

import ctypes

from . import _lib
from ._checks import _check

_P, _T = ctypes.c_void_p, ctypes.POINTER(_lib.Tensor)
for _name, _args in {
    "bp_quantize": [_P, _T, _T, _T],
    "bp_dequantize": [_P, _T, _T, _T],
    "bp_qgemm": [_P, _T, _T, _T, _T, ctypes.c_float, _T],
    "bp_qmatmul": [_P, _T, _T, _T],
}.items():
    _fn = getattr(_lib.lib, _name)
    _fn.argtypes, _fn.restype = _args, ctypes.c_int


def _t(x):
    return ctypes.byref(x._desc) if x is not None else None


class StreamQuantMixin:
    """Stream methods for the quantized ops (mixed into Stream)."""

    def quantize(self, x, y, scale=None) -> None:
        """x (f32/f16/bf16) into y: q8_0 / q4_0 blocks (ggml's rounding; scale None),
        or i8 / u8 = saturate(rne(x / scale)) to [-128, 127] / [0, 255] with an
        f32 scale broadcast to y."""
        _check(_lib.lib.bp_quantize(self._h, _t(x), _t(scale), _t(y)))

    def dequantize(self, x, y, scale=None) -> None:
        """x (q8_0 / q4_0, or i8 / u8 with scale) into y (f32/f16/bf16) = q * scale."""
        _check(_lib.lib.bp_dequantize(self._h, _t(x), _t(scale), _t(y)))

    def qgemm(self, a, b, c, scale_a=None, scale_b=None, out_scale: float = 1.0) -> None:
        """int8 GEMM: c = a @ b summed in int32, a and b each i8 or u8 (tensors of
        int8 / uint8 NumPy arrays; a u8 operand needs a device that claims u8 for
        qgemm: dev.supports("qgemm", "u8")); c i32 (exact), f32 (times the
        per-row / per-column scales) or i8 (requantized by out_scale).
        fp8 GEMM: a and b both fp8_e4m3 / fp8_e5m2 tensors (dev.tensor(codes,
        "fp8_e4m3") with the codes as uint8, or a bp cast), summed in f32, c
        f32 / f16 / bf16 = sum * scale_a[i] * scale_b[j]; out_scale ignored
        (dev.supports("qgemm", "fp8_e4m3"))."""
        _check(_lib.lib.bp_qgemm(self._h, _t(a), _t(b), _t(scale_a), _t(scale_b), out_scale, _t(c)))

    def qmatmul(self, a, w, y) -> None:
        """y = a @ w.T with w [n, k] q8_0 / q4_0 weights dequantized on the fly."""
        _check(_lib.lib.bp_qmatmul(self._h, _t(a), _t(w), _t(y)))
