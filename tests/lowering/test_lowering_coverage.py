"""Every primitive of ``functx.primitives.registry`` either lowers to C++ or makes ``jit`` raise
``UnsupportedError`` naming the primitive and the user's line; every elementwise row renders in
both backends for every dtype it accepts (or says why not), before any program runs.

``PROVOKERS`` maps each primitive without a lowering to a program that stages it under ``jit``;
a new primitive with neither a lowering nor a provoker fails ``test_every_primitive`` (add one of
the two). That the lowered primitives compute the right values is checked by the backend suite
(``test_backend_suite.py``, whose ``test_suite_covers_every_lowering`` checks it runs them all).
"""

from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

import functx
import functx.lax as lax
import functx.numpy as fnp
from functx import primitives as P
from functx.errors import UnsupportedError
from functx.lowering import lower
from functx.lowering.cpp import emit as cpp_emit, prelude as cpp_prelude
from functx.lowering.triton import emit as tl_emit, interpreter as tl_interpreter
from functx.primitives import elementwise as E, reduce as R

X = np.linspace(-1, 1, 4).astype(np.float32)
THIS_FILE = os.path.abspath(__file__)


@functx.custom_vjp
def _vjp_only(x):
    return fnp.sin(x)


_vjp_only.defvjp(lambda x: (fnp.sin(x), x), lambda r, g: (g * fnp.cos(r),))


def _custom_lin(x):
    # forward mode through a custom_vjp function stages custom_lin (JAX rejects it too)
    return functx.jvp(_vjp_only, (x,), (x,))  # PROVOKER LINE


def _rng_uniform(x):
    # stateful in JAX (a fresh seed per execution): functx draws it eagerly only
    return lax.rng_uniform(x[0], x[1], (2,))  # PROVOKER LINE


PROVOKERS = {"custom_lin": _custom_lin}
PROVOKERS["rng_uniform"] = _rng_uniform


def _line_of(fn, marker):
    src, start = inspect.getsourcelines(fn)
    for k, line in enumerate(src):
        if marker in line:
            return start + k
    raise AssertionError(marker)


def _assert_names_prim_and_line(err: Exception, prim: str, line: int):
    msg = str(err)
    assert f"'{prim}'" in msg or f" {prim} " in msg, msg
    assert f"{THIS_FILE}:{line}" in msg, msg


@pytest.mark.parametrize("name", sorted(P.registry))
def test_every_primitive(name):
    prim = P.registry[name]
    if prim in lower.lowerings:
        return
    assert name in PROVOKERS, (
        f"primitive {name!r} has no lowering in functx.lowering.lower and "
        f"no provoker here: add one of the two"
    )
    fn = PROVOKERS[name]
    with pytest.raises(UnsupportedError) as info:
        functx.jit(fn)(X)
    _assert_names_prim_and_line(info.value, name, _line_of(fn, "PROVOKER LINE"))


def test_provokers_are_current():
    """A provoker for a primitive that now lowers should become a backend-suite case."""
    stale = [n for n in PROVOKERS if P.registry[n] in lower.lowerings]
    assert not stale, f"these primitives lower now: test their values in the backend suite: {stale}"


def test_missing_lowering_names_primitive_and_user_line(monkeypatch):
    """The mechanism, on a primitive that does lower: without its rule, jit names it and the
    line of the user's function that used it, also inside a control-flow body."""
    monkeypatch.delitem(lower.lowerings, P.registry["sin"])

    def top(x):
        y = x * 2.0
        return fnp.sin(y)  # USE OF SIN

    with pytest.raises(UnsupportedError) as info:
        functx.jit(top)(X)
    _assert_names_prim_and_line(info.value, "sin", _line_of(top, "USE OF SIN"))

    def in_scan(x):
        def body(c, v):
            return c + fnp.sin(v), c  # SIN IN BODY

        return lax.scan(body, np.float32(0), x)

    with pytest.raises(UnsupportedError) as info:
        functx.jit(in_scan)(X)
    _assert_names_prim_and_line(info.value, "sin", _line_of(in_scan, "SIN IN BODY"))


def test_unsupported_error_is_a_not_implemented_error():
    with pytest.raises(NotImplementedError):
        functx.jit(_custom_lin)(X)


# --- the elementwise rows in both renderers, without running anything ----------------------------
_DTYPES = {
    "float": [np.float32, np.float64, np.float16, functx.dtypes.bfloat16],
    "number": [np.float32, np.int32, np.uint8, np.int64],
    "intbool": [np.int32, np.uint8, np.bool_],
    "any": [np.float32, np.float64, np.int32, np.uint8, np.bool_],
}
# The complex parts take complex (or float) operands; every row that accepts complex operands is
# rendered for complex64 too (C++ only: the Triton backend rejects complex programs up front).
_ROW_DTYPES = {
    "real": [np.complex64, np.complex128],
    "imag": [np.complex64, np.complex128],
    "conj": [np.float32, np.complex64, np.complex128],
    "complex": [np.float32, np.float64],
}


class _FakeEmitter:
    def _ipow(self, x, y, *rest):
        return f"ipow({x}, {y})"

    def temp(self, code):
        return "tmp"


def _views(row, dt):
    """The C++ and Triton views of ``row`` applied to operands of dtype ``dt``."""
    dt = np.dtype(dt)
    out_dt = np.dtype(np.bool_) if row.group == "compare" or row.name == "is_finite" else dt
    if row.abstract_eval is not None and row.name != "integer_pow":
        out_dt = np.dtype(row.abstract_eval(*[functx.core.ShapedArray((), dt)] * row.arity).dtype)
    fl = dt in functx.dtypes.FLOATS or dt in functx.dtypes.COMPLEX
    params = {"round": {"rounding_method": 1}, "integer_pow": {"y": 3}}.get(row.name, {})
    names = ["x", "y"][: row.arity]
    cv = cpp_emit.OpView(
        _FakeEmitter(), names, cpp_emit.compute_type(out_dt), dt, out_dt, fl, params
    )
    if dt in functx.dtypes.COMPLEX or out_dt in functx.dtypes.COMPLEX:
        return cv, None  # (the Triton backend rejects complex programs before rendering)
    tv = tl_emit.OpView(
        _FakeEmitter(), names, names, tl_emit.tl_compute(out_dt), dt, out_dt, fl, params
    )
    return cv, tv


@pytest.mark.parametrize("name", [r.name for r in E.ROWS])
def test_every_elementwise_row_renders_in_both_backends(name):
    """C++ and Triton source for each row and each dtype it accepts; a gap is an
    UnsupportedError naming the op (kept only where the row or its spelling says so)."""
    row = E.ROW[name]
    dts = _ROW_DTYPES.get(name, _DTYPES[row.kinds] + ([np.complex64] if row.complex else []))
    for dt in dts:
        cv, tv = _views(row, dt)
        cplx = np.dtype(dt) in functx.dtypes.COMPLEX or name in _ROW_DTYPES
        for backend, render, view in (
            ("C++", cpp_emit.render_row, cv),
            ("Triton", tl_emit.render_row, tv),
        ):
            if backend == "Triton" and cplx:
                continue
            try:
                code = render(name, view)
            except UnsupportedError as e:
                assert name in str(e), f"{backend} error for {name} does not name it: {e}"
                known = name in ("nextafter", "reduce_precision") and np.dtype(dt) in (
                    np.float16,
                    functx.dtypes.bfloat16,
                )
                # a row whose spelling is an explicit Unsupported (special functions on Triton)
                known = known or isinstance(
                    getattr(row, "cpp" if backend == "C++" else "triton"), E.Unsupported
                )
                assert known, f"{name} of {np.dtype(dt)} has no {backend} spelling: {e}"
                continue
            assert isinstance(code, str) and code, f"{backend} spelling of {name} is empty"


def test_every_libm_and_libdevice_function_of_a_row_exists():
    """A row spelled ``fx::<fn>`` has its wrapper in the C++ prelude; a row spelled
    ``libdevice.<fn>`` has a NumPy stand-in for Triton's interpreter."""
    missing = []
    for row in E.ROWS:
        if isinstance(row.cpp, str) and row.cpp.startswith("fx::") and "(" not in row.cpp:
            fn, k = row.cpp[4:], row.arity
            wrapped = (f"FX_MATH{k}({fn})", f"FX_LIBM{k}({fn})", f"double {fn}(double x)")
            if not any(w in cpp_prelude.PRELUDE for w in wrapped):
                missing.append(f"{row.name}: C++ prelude has no FX_MATH{k}/FX_LIBM{k}({fn})")
        if isinstance(row.triton, str) and row.triton.startswith("libdevice."):
            fn = row.triton[len("libdevice.") :]
            if "{" not in fn and fn not in tl_interpreter._NP_LIBDEVICE:
                missing.append(f"{row.name}: no interpreter stand-in for libdevice.{fn}")
    assert not missing, "\n".join(missing)


def test_reduction_identities_print_in_both_backends():
    """Each reduction of the semantics table has a C++ and a Triton identity for every dtype."""
    from functx.lowering.cpp import reduce as cpp_reduce

    for op in list(R.SEMANTICS) + list(R.ARG):
        kinds = R.SEMANTICS[R.ARG[op].like if op in R.ARG else op].kinds
        for dt in _DTYPES["any" if kinds == "any" else kinds]:
            assert cpp_reduce.identity_literal(op, dt), (op, dt)
            assert tl_emit.identity_literal(op, dt), (op, dt)
