"""``functx.scipy.spatial.transform``'s ``Rotation`` and ``Slerp``: every method JAX
has, dtypes and shapes against JAX in both x64 modes, values against SciPy (whose algorithms
JAX's follow), Euler angles for all sequence kinds and at gimbal lock, the small-angle series,
derivatives (check_grads in float64), the classes as pytrees through jit and vmap, and JAX's
errors."""

from __future__ import annotations

import warnings

import jax
import jax.scipy.spatial.transform as jst
import numpy as np
import pytest
import scipy.spatial.transform as sst
from errutil import raises_as_jax
from x64util import x64_off

import functx
import functx.scipy.spatial.transform as fst
from functx.errors import FunctxError
from functx.test_util import check_grads

RNG = np.random.default_rng(0)
Q = RNG.standard_normal((6, 4))
Q[0], Q[1], Q[2, 3] = [0, 0, 0, 1], [1, 0, 0, 0], -0.1  # identity, a half turn, w < 0
V = RNG.standard_normal((6, 3))
SEQS = ["xyz", "XYZ", "zxz", "ZXZ", "yzx", "XZY", "zyz", "YXY"]
TIMES = np.array([0.0, 1.0, 3.0, 4.0])


def _slerp(m, times, rotations):
    return m.Slerp.init(times, rotations) if hasattr(m.Slerp, "init") else m.Slerp(times, rotations)


def _results(m, q, v):
    """Every method's output for the rotations ``q`` and vectors ``v`` under module ``m``
    (functx's, JAX's or SciPy's ``spatial.transform``)."""
    r = m.Rotation.from_quat(q)
    slerp = _slerp(m, TIMES, r[:4])
    out = {
        "quat": r.as_quat(),
        "matrix": r.as_matrix(),
        "rotvec": r.as_rotvec(),
        "rotvec deg": r.as_rotvec(degrees=True),
        "mrp": r.as_mrp(),
        "canonical scalar_first": r.as_quat(canonical=True, scalar_first=True),
        "magnitude": r.magnitude(),
        "inv": r.inv().as_quat(),
        "mul": (r * r[::-1]).as_quat(),
        "apply": r.apply(v),
        "apply inverse one": r.apply(v[0], inverse=True),
        "from_matrix": m.Rotation.from_matrix(r.as_matrix()).as_quat(),
        "from_rotvec": m.Rotation.from_rotvec(v).as_quat(),
        "from_rotvec small": m.Rotation.from_rotvec(v * 1e-4).as_quat(),
        "from_rotvec deg": m.Rotation.from_rotvec(v * 50, degrees=True).as_quat(),
        "from_mrp": m.Rotation.from_mrp(v).as_quat(),
        "from_euler 1": m.Rotation.from_euler("z", 90).as_quat(),
        "from_euler 2": m.Rotation.from_euler("xy", v[:, :2], degrees=True).as_quat(),
        "mean matrix": m.Rotation.from_quat(q[:4]).mean(np.arange(1.0, 5.0)).as_matrix(),
        "concatenate": m.Rotation.concatenate([r, r[:2]]).as_quat(),
        "identity": m.Rotation.identity().as_quat(),
        "slerp": slerp(np.array([0.0, 0.3, 1.0, 2.2, 4.0])).as_quat(),
        "slerp one": slerp(2.5).as_quat(),
    }
    for seq in SEQS:
        out[f"as_euler {seq}"] = r.as_euler(seq)
        out[f"from_euler {seq}"] = m.Rotation.from_euler(seq, 2 * v, degrees=False).as_quat()
    locked = m.Rotation.from_euler("xyz", np.array([[0.3, np.pi / 2, 0.2], [0.1, 0.0, 0.5]]))
    for seq in ["xyz", "XYZ", "zxz"]:
        out[f"gimbal {seq}"] = locked.as_euler(seq, degrees=True)
    return out


@pytest.mark.parametrize("x64", [True, False])
def test_dtypes_and_shapes_against_jax(x64):
    # (jax.eval_shape: compiling JAX's versions of all these costs ~13 s here, running them
    # eagerly ~35 s; their values agree with functx's to 1e-10 in float64, checked by hand)
    q, v = (Q, V) if x64 else (Q.astype(np.float32), V.astype(np.float32))
    with x64_off() if not x64 else np.errstate():
        got = _results(fst, q, v)
        want = jax.eval_shape(lambda q, v: _results(jst, q, v), q, v)
    for name in want:
        assert (got[name].dtype, got[name].shape) == (want[name].dtype, want[name].shape), name


def test_values_against_scipy():
    got = _results(fst, Q, V)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # SciPy's gimbal-lock warning
        want = _results(sst, Q, V)
    for name, w in want.items():
        g = np.asarray(got[name])
        if "euler" in name or "gimbal" in name:  # angles of +-pi are one angle
            period = 360.0 if "gimbal" in name else 2 * np.pi
            g = w + (g - w + period / 2) % period - period / 2
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, err_msg=name)


def test_grads_jit_vmap_and_pytree():
    check_grads(lambda q: fst.Rotation.from_quat(q).as_rotvec(), (Q[3:],), order=2)
    check_grads(lambda v, w: fst.Rotation.from_rotvec(v).apply(w), (V, V[::-1]), order=1)
    r = fst.Rotation.from_quat(Q)
    want = r.as_euler("zxz")
    np.testing.assert_allclose(functx.jit(lambda r: r.as_euler("zxz"))(r), want, rtol=1e-12)
    batched = functx.vmap(lambda r: r.as_euler("zxz"))(r)
    np.testing.assert_allclose(batched, want, rtol=1e-12)
    slerp = fst.Slerp.init(TIMES, r[:4])
    np.testing.assert_allclose(
        functx.jit(lambda s, t: s(t).quat)(slerp, 2.5), slerp(2.5).quat, rtol=1e-12
    )
    assert r.single is False and fst.Rotation.identity().single and len(r) == 6
    assert fst.Rotation.identity(3).quat.shape == (3, 4)
    with pytest.raises(FunctxError, match="at most 1-dimensional") as info:
        slerp(np.zeros((2, 2)))  # JAX's error (its check costs ~5 s to run here)
    assert isinstance(info.value, ValueError)


BAD = {
    "euler long": (lambda m: m.Rotation.from_euler("xyzx", np.zeros(4)), ValueError),
    "euler mixed": (lambda m: m.Rotation.from_euler("xY", np.zeros(2)), ValueError),
    "euler repeat": (lambda m: m.Rotation.from_euler("xx", np.zeros(2)), ValueError),
    "as_euler two": (lambda m: m.Rotation.identity().as_euler("xy"), ValueError),
    "single index": (lambda m: m.Rotation.identity()[0], TypeError),
    "single len": (lambda m: len(m.Rotation.identity()), TypeError),
    "random": (lambda m: m.Rotation.random(None), NotImplementedError),
    "mean weights": (lambda m: m.Rotation.from_quat(Q).mean(np.ones(2)), ValueError),
    "slerp type": (lambda m: m.Slerp.init(TIMES, Q), TypeError),
    "slerp one": (lambda m: m.Slerp.init(TIMES[:1], m.Rotation.from_quat(Q[:1])), ValueError),
    "slerp times": (lambda m: m.Slerp.init(TIMES, m.Rotation.from_quat(Q)), ValueError),
}


@pytest.mark.parametrize("case", BAD)
def test_errors_as_jax(case):
    call, cls = BAD[case]
    raises_as_jax(call, jst, fst, cls)
