"""The special functions on the Triton backend (``_fx_digamma``, ``_fx_igamma``, ``_fx_zeta``,
``_fx_polygamma``, ``_fx_bessel_ie`` of its prelude) against functx's eager ones
(functx/primitives/special.py, which tests/scipy/test_lax_special.py checks against SciPy and JAX).

In CI (no GPU) the kernels run in Triton's CPU interpreter (``TRITON_INTERPRET=1`` for each test,
as in test_triton_interpret.py), which is slow per operation: the inputs are a few points chosen
so that every branch runs (the series and the continued fraction of each incomplete-gamma kind,
the reflection of digamma, the asymptotic Bessel expansion, the domain rules) and the loops
converge in few steps. ``FUNCTX_TEST_TRITON_GPU=1`` runs them on a GPU.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import functx  # noqa: E402
import functx.lax as flax  # noqa: E402
import functx.numpy as fnp  # noqa: E402
from functx.lowering.triton.blocks import Blocks  # noqa: E402
from functx.lowering.triton.program import compile_triton  # noqa: E402
from functx.tracing import get_aval  # noqa: E402
from functx.transforms import passes  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

GPU = os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") not in ("", "0") and torch.cuda.is_available()
NAN, INF = math.nan, math.inf
# (a, x) pairs: the series (x < a or x < 1), the continued fraction (x > 1 and x > a), a = 0,
# x = 0, x = inf, a < 0 and NaN
A = [2.5, 2.5, 0.0, -1.5, NAN, 3.0, 1.0]
X = [0.05, 40.0, 20.0, 2.0, 1.0, INF, 0.0]
# the scaled Bessel functions: the power series (|x| <= 20) and the asymptotic expansion
B = [0.5, -3.0, 25.0, -30.0, 0.0, NAN, INF]


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    if not GPU:
        monkeypatch.setenv("TRITON_INTERPRET", "1")


def _special(a, x):
    out = {n: getattr(flax, n)(a, x) for n in ("igamma", "igammac", "igamma_grad_a")}
    out["random_gamma_grad"] = flax.random_gamma_grad(a, x)
    out["polygamma"] = flax.polygamma(fnp.minimum(fnp.floor(fnp.abs(a)), 3.0), x)
    out["zeta"] = flax.zeta(a + 1.5, x)
    out["digamma"] = flax.digamma(fnp.concatenate([a, x]))  # (poles, reflection: from a)
    b = fnp.asarray(np.array(B, get_aval(a).dtype))
    out["bessel_i0e"] = flax.bessel_i0e(b)
    out["bessel_i1e"] = flax.bessel_i1e(b)
    return out


def _run(fn, *args):
    closed = passes.simplify(functx.make_jaxpr(fn)(*args))
    exe = compile_triton(closed, Blocks(pointwise=64, reduce_inner=16, scan=16, elems=256))
    leaves = [torch.as_tensor(a, device="cuda") if GPU else a for a in args]
    return [t.detach().cpu().numpy() for t in exe(*leaves)]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_special_functions_on_triton_give_eager_values(dt):
    a, x = np.array(A, dt), np.array(X, dt)
    if dt == np.float32:  # (the same float64 device functions: one loop-free, one looping)

        def fn(a, x):
            return {"digamma": flax.digamma(a), "bessel_i1e": flax.bessel_i1e(a * 10.0)}
    else:
        fn = _special
    want = fn(fnp.asarray(a), fnp.asarray(x))
    got = _run(lambda a, x: [v for _, v in sorted(fn(a, x).items())], a, x)
    rtol = 8 * float(np.finfo(dt).eps)
    for (name, w), g in zip(sorted(want.items()), got):
        w = np.asarray(w)
        assert g.dtype == w.dtype, name
        np.testing.assert_allclose(g, w, rtol=rtol, atol=0, equal_nan=True, err_msg=name)
