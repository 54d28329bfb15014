"""functx.numpy's save/savez/load (functx/numpy/_extra.py) against JAX's."""

import io

import jax.numpy as jnp
import numpy as np
import pytest

import functx.numpy as fnp


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_, fnp.bfloat16, np.complex64])
def test_save_load_round_trip_as_jax(dtype):
    x = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    mine, theirs = io.BytesIO(), io.BytesIO()
    fnp.save(mine, fnp.asarray(x))
    jnp.save(theirs, jnp.asarray(x))
    assert mine.getvalue() == theirs.getvalue()  # the same file
    theirs.seek(0)
    got = fnp.load(theirs)
    assert isinstance(got, fnp.ndarray) and got.dtype == jnp.asarray(x).dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(jnp.asarray(x)))


def test_savez_and_load_of_an_archive():
    buf = io.BytesIO()
    fnp.savez(buf, fnp.ones(2), w=fnp.zeros((2, 2), np.int32))
    buf.seek(0)
    z = fnp.load(buf)
    assert sorted(z.files) == ["arr_0", "w"]
    np.testing.assert_array_equal(z["w"], np.zeros((2, 2), np.int32))


def test_files_cross_between_functx_and_jax():
    mine, theirs = io.BytesIO(), io.BytesIO()
    fnp.savez(mine, a=fnp.arange(3))
    jnp.savez(theirs, a=jnp.arange(3))
    assert mine.getvalue() != b"" and theirs.getvalue() != b""
    mine.seek(0)
    theirs.seek(0)
    np.testing.assert_array_equal(fnp.load(theirs)["a"], jnp.load(mine)["a"])
    one = io.BytesIO()
    fnp.save(one, fnp.asarray(np.float32([1.5, -2.0])))
    one.seek(0)
    got = jnp.load(one)
    assert got.dtype == np.float32 and got.tolist() == [1.5, -2.0]
