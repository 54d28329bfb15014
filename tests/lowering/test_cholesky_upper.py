"""The upper Cholesky factor under C++ ``jit`` (``cho_factor``'s default, ``lower=False``):
the library step reads the operand in place (``control/linalg._UpperCholeskyStep``, ``potrf``
with ``uplo='L'``) instead of a transposed copy; values equal eager's, batched, with NaN for a
matrix that is not positive definite, and only the real dtypes take the path."""

import numpy as np

import functx
import functx.scipy.linalg as fsl

RNG = np.random.default_rng(0)


def _spd(shape):
    a = RNG.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _f(a, b, c, z):
    return (
        fsl.cho_solve(fsl.cho_factor(a), b),
        fsl.cholesky(c),
        fsl.cholesky(a.astype(np.float32), lower=True),
        fsl.cholesky(z),
    )


def test_upper_factor_in_place_matches_eager():
    a, c = _spd((5, 5)), _spd((3, 4, 4)).astype(np.float32)
    c[1, 0, 0] = -1.0  # not positive definite: NaNs
    b = RNG.standard_normal((5, 2))
    z = _spd((3, 3)) + 0.5j * (RNG.standard_normal((3, 3)) - RNG.standard_normal((3, 3)).T)
    z = (z + z.conj().T) / 2
    f = functx.jit(_f)
    src = f.lower(a, b, c, z).as_text()
    assert src.count('potrf("L"') == 2 and src.count('potrf("U"') == 2  # (float32 lower, complex)
    got, want = f(a, b, c, z), _f(a, b, c, z)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    bad = np.asarray(got[1])
    assert np.isnan(np.diagonal(bad[1])).all() and not np.isnan(bad[0]).any()
