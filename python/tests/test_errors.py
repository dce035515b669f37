"""Bad input raises BackplaneError naming the argument; NumPy dtypes and
NumPy dtype names are accepted wherever a dtype is."""
import numpy as np
import pytest

import backplane as bp


@pytest.fixture(scope="module")
def dev():
    c = bp.Context()
    yield c.open("cpu")
    c.close()


@pytest.mark.parametrize("dtype", ["f32", "float32", np.float32, np.dtype("float32")])
def test_numpy_dtypes_accepted(dev, dtype):
    assert dev.empty((2, 3), dtype).dtype == "f32"
    assert dev.tensor([1, 2], dtype=dtype).dtype == "f32"


def test_bfloat16_name_accepted(dev):
    assert dev.empty((2,), "bfloat16").dtype == "bf16"


@pytest.mark.parametrize("dtype", ["float8", "complex64", np.complex64, 3])
def test_bad_dtype(dev, dtype):
    with pytest.raises(bp.BackplaneError, match="dtype"):
        dev.empty((2,), dtype)


@pytest.mark.parametrize("shape,what", [((-1, 3), "negative"), ((1,) * 9, "rank 9"),
                                        ((2.5,), "not an integer"), ("ab", "not an integer")])
def test_bad_shape(dev, shape, what):
    with pytest.raises(bp.BackplaneError, match=f"shape: .*{what}"):
        dev.empty(shape)


def test_bad_op_names(dev):
    s = dev.stream()
    x, y = dev.empty((4,)), dev.empty((4,))
    for call, arg in [(lambda: s.unary("nope", x, y), "op"), (lambda: s.binary("nope", x, x, y), "op"),
                      (lambda: s.reduce("nope", x, 0, y), "op"),
                      (lambda: s.random(y, "poisson"), "dist"),
                      (lambda: s.pool2d("median", x, y, 2), "kind")]:
        with pytest.raises(bp.BackplaneError, match=f"{arg}: unknown"):
            call()


def test_bad_array_dtype(dev):
    with pytest.raises(bp.BackplaneError, match="array"):
        dev.tensor(np.zeros(2, np.complex64))
