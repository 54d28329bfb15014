"""functx.export (``jax.export``'s names): an exported function's ``call`` gives the function's
results, ``serialize()`` bytes round-trip through ``deserialize``, bad bytes and non-data
parameters are refused."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import export, lax

X = np.random.RandomState(0).randn(4, 3).astype(np.float32)
Y = np.ones((3, 2), np.float32)


def program(x, y):
    z = fnp.sin(x) @ y
    w = lax.fori_loop(0, 3, lambda i, c: c * 1.5 + i, z)
    c = lax.cond(z.sum() > 0, lambda v: v + 1, lambda v: v - 1, z)
    return {"w": w, "s": fnp.cumsum(x, axis=0), "c": c, "i": lax.argmax(x, 1, np.int32)}


def test_round_trip_with_control_flow():
    exp = export.export(functx.jit(program))(X, functx.ShapeDtypeStruct((3, 2), np.float32))
    again = export.deserialize(exp.serialize())
    assert again.in_avals == exp.in_avals and again.out_avals == exp.out_avals
    assert str(again.jaxpr) == str(exp.jaxpr) and again.fun_name == "program"
    want = program(X, Y)
    with functx.disable_jit():  # (the values of the Jaxprs; compiling them is jit's business)
        for out in (exp.call(X, Y), again.call(X, Y)):
            assert out.keys() == want.keys()
            for k in want:
                assert out[k].dtype == want[k].dtype
                np.testing.assert_allclose(np.asarray(out[k]), np.asarray(want[k]), rtol=1e-6)
        g = functx.grad(lambda a: again.call(a, Y)["w"].sum())(X)
        gw = functx.grad(lambda a: program(a, Y)["w"].sum())(X)
    np.testing.assert_allclose(np.asarray(g), np.asarray(gw), rtol=1e-6)
    assert "sin" in again.mlir_module()


def test_compiled_call_like_jax():
    f = lambda x, y: fnp.tanh(x) @ y  # noqa: E731
    again = export.deserialize(export.export(functx.jit(f))(X, Y).serialize())
    theirs = jax.export.export(jax.jit(lambda x, y: jax.numpy.tanh(x) @ y))(X, Y).call(X, Y)
    ours = again.call(X, Y)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


def test_call_checks_arguments():
    exp = export.export(functx.jit(program))(X, Y)
    with pytest.raises(ValueError):
        exp.call(X[:2], Y)
    with pytest.raises(ValueError):
        exp.call(X.astype(np.int32), Y)
    with pytest.raises(ValueError):
        exp.call((X, Y))
    with pytest.raises(TypeError):
        export.export(program)


def test_serialize_refuses_code_and_deserialize_refuses_bad_bytes():
    cb = functx.jit(
        lambda v: functx.pure_callback(np.sin, jax.ShapeDtypeStruct((4, 3), np.float32), v)
    )
    exp = export.export(cb)(X)
    with pytest.raises(ValueError, match="not plain data"):
        exp.serialize()
    good = json.loads(bytes(export.export(functx.jit(lambda v: -v))(X).serialize()))
    for bad in (b"\x80\x04pickle", b"{}", json.dumps({**good, "version": 99}).encode()):
        with pytest.raises(ValueError):
            export.deserialize(bad)
    good["jaxpr"]["jaxpr"]["eqns"][0]["prim"] = "os.system"
    with pytest.raises(ValueError, match="no primitive"):
        export.deserialize(json.dumps(good).encode())
    with pytest.raises(ValueError):
        export._enum("os:Path.X")


def test_symbolic_shape():
    assert export.symbolic_shape("(3, 4)") == tuple(jax.export.symbolic_shape("(3, 4)"))
    assert export.symbolic_shape("_, 2", like=(5, 2)) == (5, 2)
    with pytest.raises(NotImplementedError):
        export.symbolic_shape("b, 4")
