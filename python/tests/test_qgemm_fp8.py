"""fp8 in bp_qgemm from Python (docs/ops.md, "Quantized types and ops"): a
and b fp8_e4m3 / fp8_e5m2 tensors made from uint8 codes, every format pair,
c f32 / f16 / bf16 with per-row / per-column scales, on cpu and cpu-ref,
against NumPy's double sums within the documented bound; fp8 with i8 raises
naming both operands."""
import numpy as np
import pytest

import backplane as bp


@pytest.fixture(scope="module")
def ctx():
    c = bp.Context()
    yield c
    c.close()


@pytest.fixture(scope="module", params=["cpu", "cpu-ref"])
def dev(ctx, request):
    return ctx.open(request.param)


def _decode(codes, fmt):
    """The value of each fp8 code (NumPy's own, not the library's)."""
    mb, bias = (3, 7) if fmt == "fp8_e4m3" else (2, 15)
    c = codes.astype(np.int64)
    e, m = (c & 0x7F) >> mb, c & ((1 << mb) - 1)
    sign = np.where(c & 0x80, -1.0, 1.0)
    frac = m / float(1 << mb)
    v = np.where(e > 0, np.ldexp(1.0 + frac, e - bias), np.ldexp(frac, 1 - bias))
    return sign * v


def _finite_codes(rng, shape, fmt):
    c = rng.integers(0, 256, shape, dtype=np.uint8)
    bad = (c & 0x7F) == 0x7F if fmt == "fp8_e4m3" else (c & 0x7C) == 0x7C
    c[bad] = 0x38  # 1.0 in e4m3, 0.5 in e5m2
    return c


@pytest.mark.parametrize("afmt", ["fp8_e4m3", "fp8_e5m2"])
@pytest.mark.parametrize("bfmt", ["fp8_e4m3", "fp8_e5m2"])
@pytest.mark.parametrize("cdt", ["f32", "f16", "bf16"])
def test_qgemm_fp8(dev, afmt, bfmt, cdt):
    assert dev.supports("qgemm", afmt) and dev.supports("qgemm", bfmt)
    s = dev.stream()
    rng = np.random.default_rng(3)
    m, n, k = 9, 21, 70
    a, b = _finite_codes(rng, (m, k), afmt), _finite_codes(rng, (k, n), bfmt)
    da, db = _decode(a, afmt), _decode(b, bfmt)
    # e5m2 reaches 57344: small scales keep an f16 c finite
    small = {0: 0.125, 1: 2.0 ** -14, 2: 2.0 ** -16}[(afmt, bfmt).count("fp8_e5m2")]
    sa = np.linspace(0.5, 1.5, m).astype(np.float32) * np.float32(small)
    sb = np.linspace(0.25, 0.5, n).astype(np.float32)
    c = dev.empty((m, n), cdt)
    s.qgemm(dev.tensor(a, afmt), dev.tensor(b, bfmt), c, dev.tensor(sa), dev.tensor(sb))
    s.synchronize()
    scale = sa.astype(np.float64)[:, None] * sb.astype(np.float64)[None, :]
    want = (da @ db) * scale
    mag = (np.abs(da) @ np.abs(db)) * scale
    ulp = {"f32": 0.0, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}[cdt]
    bound = (k + 2) * 2.0 ** -24 * mag + ulp * np.abs(want) + 2.0 ** -24
    got = c.numpy().astype(np.float64)
    assert np.all(np.abs(got - want) <= bound)


def test_qgemm_fp8_mixed_with_i8_names_operands(dev):
    s = dev.stream()
    a = dev.tensor(np.zeros((2, 3), dtype=np.uint8), "fp8_e4m3")
    b = dev.tensor(np.zeros((3, 2), dtype=np.int8))
    with pytest.raises(bp.BackplaneError, match=r"a \(fp8_e4m3\) and b \(i8\)"):
        s.qgemm(a, b, dev.empty((2, 2)))
