"""NumPy stand-ins for libdevice under ``TRITON_INTERPRET=1`` (Triton's interpreter cannot run
libdevice): the generated module binds ``libdevice`` to ``interpreter_libdevice``."""

from __future__ import annotations

import functools
import math

import numpy as np


# --- NumPy stand-ins for libdevice under TRITON_INTERPRET=1 ------------------------------------
def _round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _lgamma(x):
    def one(v):
        try:
            return math.lgamma(v)
        except ValueError:
            return math.inf

    return np.vectorize(one, otypes=[np.float64])(x)


_NP_LIBDEVICE = {
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "cbrt": np.cbrt,
    "sqrt": np.sqrt,
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
    "lgamma": _lgamma,
    "pow": np.power,
    "fmod": np.fmod,
    "atan2": np.arctan2,
    "nextafter": np.nextafter,
    "nearbyint": np.rint,
    "rint": np.rint,
    "round": _round_half_away,
    "trunc": np.trunc,
}


class _InterpreterLibdevice:
    """``libdevice.<fn>`` for Triton's interpreter (which cannot call CUDA's library): NumPy on
    the interpreter's tensors, with the result in the first argument's dtype."""

    def __getattr__(self, name):
        fn = _NP_LIBDEVICE.get(name)
        if fn is None:
            raise AttributeError(f"libdevice.{name} has no interpreter stand-in")
        return functools.partial(self._call, fn)

    @staticmethod
    def _call(fn, *args):
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        ref = next(a for a in args if isinstance(a, tl.tensor))
        data = [a.handle.data if isinstance(a, tl.tensor) else a for a in args]
        shapes = [
            list(a.type.shape) for a in args if isinstance(a, tl.tensor) and a.type.is_block()
        ]
        np_dt = ref.handle.data.dtype
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*data)).astype(np_dt)
        if shapes:
            shape = list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
            out = np.broadcast_to(out, shape).copy()
            return tl.tensor(
                TensorHandle(out, ref.dtype.scalar), tl.block_type(ref.dtype.scalar, shape)
            )
        return tl.tensor(
            TensorHandle(out.reshape(-1)[:1].copy(), ref.dtype.scalar), ref.dtype.scalar
        )


interpreter_libdevice = _InterpreterLibdevice()
