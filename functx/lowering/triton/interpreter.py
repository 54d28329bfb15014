"""NumPy stand-ins for libdevice under ``TRITON_INTERPRET=1`` (Triton's interpreter cannot run
libdevice): the generated module binds ``libdevice`` to ``interpreter_libdevice``; and
``index_scalars``, which lets older interpreters loop over a scalar tensor under NumPy 2.4."""

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


# --- scalar tensors as Python ints (Triton 3.6's interpreter under NumPy 2.4) -------------------
def _scalar_index(self) -> int:
    # (a scalar is a one-element array of any rank in the interpreter: reshape(()) takes
    # exactly those, and refuses a block, which is no index)
    return int(self.handle.data.reshape(()))


def index_scalars() -> None:
    """Let Triton's interpreter turn a scalar tensor into a Python int, as a loop bound needs
    (``range(0, n)`` over a kernel argument in ``linalg.py``, ``tl.range(k0, k1)`` over values
    of ``tl.program_id`` in ``gemm.py``). The interpreter keeps a scalar in a one-element 1-D
    NumPy array and, through Triton 3.6, converts it with ``int(array)``, which NumPy 2.4 refuses
    (``TypeError: only 0-dimensional arrays can be converted to Python scalars``;
    triton-lang/triton#9171; newer interpreters take the element out first, as this does).
    Triton sets a tensor's methods for each interpreted launch (``_patch_lang_tensor``) and
    restores them after it: the conversion is set there, after Triton's own. Called before
    interpreted kernels are made; once per process. The compiled kernels do not change. (An
    interpreter without that function, a later release's, is left as it is.)"""
    from triton.runtime import interpreter as ti

    patch = getattr(ti, "_patch_lang_tensor", None)
    if patch is None or getattr(patch, "functx_index_scalars", False):
        return

    def patched(tensor, scope):
        patch(tensor, scope)
        scope.set_attr(tensor, "__index__", _scalar_index)

    patched.functx_index_scalars = True
    ti._patch_lang_tensor = patched
