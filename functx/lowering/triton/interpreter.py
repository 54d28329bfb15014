"""NumPy stand-ins for libdevice under ``TRITON_INTERPRET=1`` (Triton's interpreter cannot run
libdevice): the generated module binds ``libdevice`` to ``interpreter_libdevice``."""

from __future__ import annotations

import functools

import numpy as np

from functx.primitives.elementwise import ROWS


# --- NumPy stand-ins for libdevice under TRITON_INTERPRET=1 ------------------------------------
def _round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _libdevice_rows():
    """The stand-in of each libdevice function an elementwise row calls (``triton`` spelled
    ``libdevice.<fn>``): the row's ``interpret`` function, else its NumPy implementation."""
    out = {}
    for row in ROWS:
        if isinstance(row.triton, str) and row.triton.startswith("libdevice."):
            if "{" not in row.triton:
                out[row.triton[len("libdevice.") :]] = row.interpret or row.numpy
    return out


_NP_LIBDEVICE = {
    # the libdevice functions the renderers' special cases call (round, rem, pow, nextafter, ...)
    "sqrt": np.sqrt,
    "pow": np.power,
    "fmod": np.fmod,
    "nextafter": np.nextafter,
    "nearbyint": np.rint,
    "rint": np.rint,
    "round": _round_half_away,
    "trunc": np.trunc,
    "exp": np.exp,
    **_libdevice_rows(),
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
