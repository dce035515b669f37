"""Stream.cast(..., saturate=True): bp_cast_ex with BP_CAST_SATURATE on cpu and
cpu-ref, beside the default non-saturating fp8 cast (docs/ops.md, "Quantized
types and ops")."""
import math

import numpy as np
import pytest

import backplane as bp


@pytest.fixture(scope="module")
def ctx():
    c = bp.Context()
    yield c
    c.close()


@pytest.mark.parametrize("name", ["cpu", "cpu-ref"])
@pytest.mark.parametrize("dtype,top", [("fp8_e4m3", 448.0), ("fp8_e5m2", 57344.0)])
def test_saturate_against_default(ctx, name, dtype, top):
    dev = ctx.open(name)
    s = dev.stream()
    x = np.array([1.5, top, 1e6, -1e6, np.inf, -np.inf, np.nan], dtype=np.float32)
    back = {}
    for sat in (False, True):
        q, y = dev.empty((7,), dtype), dev.empty((7,))
        s.cast(dev.tensor(x), q, saturate=sat)
        s.cast(q, y)
        s.synchronize()
        back[sat] = y.numpy()
    assert list(back[True][:6]) == [1.5, top, top, -top, top, -top]
    assert math.isnan(back[True][6])
    # the OCP non-saturating mode: NaN (e4m3) or inf (e5m2) past the range
    assert not np.isfinite(back[False][2:6]).any()


def test_saturate_needs_fp8(ctx):
    dev = ctx.open("cpu")
    s = dev.stream()
    with pytest.raises(bp.BackplaneError, match="fp8"):
        s.cast(dev.tensor(np.ones(4, np.float32)), dev.empty((4,), "f16"), saturate=True)
