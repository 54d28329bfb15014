"""``functx.numpy.fft`` and ``functx.lax.fft`` (the ``fft`` primitive) against JAX and NumPy.

Values come from NumPy in float64/complex128 (whose semantics jax.numpy.fft follows), shapes and
dtypes from ``jax.eval_shape`` (both x64 modes, without compiling); derivatives from finite
differences (``check_grads``) and JAX's ``vjp`` (RFFT's and IRFFT's masked transposes); ``vmap``
against a loop; the Triton library step (``FftStep.torch``) on torch tensors. ``jit`` (the C++
library step, an FFT convolution and its gradient) against the eager path and JAX: the case
``fft_conv`` of tests/lowering/test_backend_suite.py.
"""

from __future__ import annotations

import itertools

import docutil
import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functx
import functx.control.fft as cfft
import functx.numpy as fjnp
import functx.numpy.fft as ffft
from functx.test_util import check_grads

NAMES = (
    "fft ifft rfft irfft hfft ihfft fft2 ifft2 rfft2 irfft2 fftn ifftn rfftn irfftn "
    "fftfreq rfftfreq fftshift ifftshift"
).split()

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 5))
C = X + 1j * RNG.standard_normal((3, 4, 5))
X6 = RNG.standard_normal((2, 2, 3, 2, 2, 3))

# (name, args, kwargs): values against NumPy, shapes and dtypes against JAX
CASES = [
    ("fft", (C,), {}),
    ("fft", (X,), dict(n=7, axis=0)),
    ("fft", (X,), dict(norm="ortho")),
    ("ifft", (C,), dict(n=3, norm="forward")),
    ("rfft", (X,), dict(axis=1)),
    ("rfft", (X,), dict(n=8, norm="ortho")),
    ("irfft", (C,), {}),
    ("irfft", (C,), dict(n=9, axis=1, norm="forward")),
    ("hfft", (C,), dict(n=5)),
    ("hfft", (C,), dict(norm="ortho")),
    ("hfft", (C,), dict(n=6, norm="forward")),
    ("ihfft", (X,), dict(norm="ortho")),
    ("ihfft", (X,), dict(n=3, norm="forward")),
    ("ihfft", (X,), dict(axis=0)),
    ("fft2", (C,), {}),
    ("fft2", (X,), dict(s=(3, 6), axes=(0, 2))),
    ("fftn", (X,), dict(s=(2, 7))),
    ("ifft2", (C,), dict(norm="ortho")),
    ("rfft2", (X,), {}),
    ("irfft2", (C,), dict(s=(5, 7), axes=(2, 0))),
    ("fftn", (C,), {}),
    ("fftn", (X6,), {}),
    ("ifftn", (X6,), dict(norm="ortho")),
    ("rfftn", (X6,), {}),
    ("irfftn", (X6 + 0j,), {}),
    ("rfftn", (X,), dict(s=(2, 6), axes=(1, 0))),
    ("irfftn", (C,), dict(s=(4, 4), axes=(1, 2))),
    ("fftn", (X.astype(np.int32),), dict(axes=(1,))),
    ("fftfreq", (5,), {}),
    ("fftfreq", (6,), dict(d=0.3)),
    ("rfftfreq", (7,), dict(d=2)),
    ("fftshift", (X,), {}),
    ("fftshift", (X,), dict(axes=1)),
    ("ifftshift", (X,), dict(axes=(0, 2))),
    ("irfft", (np.ones(1) + 0j,), {}),
]


def _jax_type(name, args, kw):
    """Shape and dtype of ``jax.numpy.fft.<name>(*args, **kw)`` (arrays traced, not run)."""
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

    def f(*xs):
        full = list(args)
        for i, x in zip(arrays, xs):
            full[i] = x
        return getattr(jjnp.fft, name)(*full, **kw)

    return jax.eval_shape(f, *[args[i] for i in arrays])


def _numpy(name, args, kw):
    """NumPy's result (an empty one where NumPy refuses a transform of length 0, as JAX
    returns)."""
    try:
        return getattr(np.fft, name)(*args, **kw)
    except ValueError:
        ref = _jax_type(name, args, kw)
        assert 0 in ref.shape
        return np.zeros(ref.shape)


def _same(got, want, rtol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=rtol * scale)


def test_names_signatures_and_docstrings():
    assert sorted(ffft.__all__) == sorted(NAMES)
    assert fjnp.fft is ffft
    for name in NAMES:
        f, j = getattr(ffft, name), getattr(jjnp.fft, name)
        import inspect

        ps = list(inspect.signature(f).parameters)
        assert ps == list(inspect.signature(j).parameters), name
        doc = f.__doc__
        assert "Arguments:" in doc and "Returns:" in doc and "Example:" in doc, name
    assert functx.lax.fft is cfft.fft and functx.lax.FftType is cfft.FftType
    globs = {"functx": functx, "np": np, "jnp": fjnp}
    for mod in (ffft, cfft):
        # (the public names' examples run in tests/test_docstrings.py; the module's others here)
        assert docutil.run(mod, globs={**mod.__dict__, **globs}, optionflags=0).failed == 0, mod


@pytest.mark.filterwarnings("ignore:`axes` should not be `None`")
@pytest.mark.parametrize("name,args,kw", CASES, ids=[c[0] for c in CASES])
def test_values_against_numpy_and_types_against_jax(name, args, kw):
    got = getattr(ffft, name)(*args, **kw)
    _same(got, _numpy(name, args, kw), 1e-12)
    ref = _jax_type(name, args, kw)
    assert (got.shape, got.dtype) == (ref.shape, ref.dtype)


@pytest.mark.filterwarnings("ignore:`axes` should not be `None`")
def test_default_mode_dtypes(no_x64):
    for name, args, kw in CASES[::2]:
        if name in ("fftfreq", "rfftfreq") and "d" not in kw:
            continue
        got = getattr(ffft, name)(*args, **kw)
        ref = _jax_type(name, args, kw)
        assert (got.shape, got.dtype) == (ref.shape, ref.dtype), name
        _same(got, _numpy(name, args, kw), 2e-5)
    assert ffft.fftfreq(4).dtype == np.float32
    assert ffft.fft(np.ones(4, np.float32)).dtype == np.complex64


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
def test_lax_fft_dtypes_in_both_modes():
    from x64util import x64_off

    kinds = [("fft", (4,)), ("ifft", (4,)), ("rfft", (4,)), ("irfft", (6,))]
    for mode in (False, True):
        with x64_off() if not mode else _nothing():
            for dt in ("int32", "int64", "float16", "bfloat16", "float32", "float64", "bool"):
                for t, n in kinds:
                    x = fjnp.ones(4, dt)
                    try:
                        ref = jax.eval_shape(lambda v, t=t, n=n: jax.lax.fft(v, t, n), x)
                    except ValueError as e:
                        with pytest.raises(ValueError, match=str(e)[:30]):
                            functx.lax.fft(x, t, n)
                        continue
                    got = functx.lax.fft(x, t, n)
                    assert (got.shape, got.dtype) == (ref.shape, ref.dtype), (dt, t, mode)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_errors_like_jax():
    bad = [
        ("fft", ([1, 2],), {}, TypeError),
        ("fft", (np.ones(4),), dict(axis=(0,)), ValueError),
        ("fftn", (np.ones((2, 4)),), dict(axes=(0, 0)), ValueError),
        ("fftn", (np.ones((2, 4)),), dict(s=(2,), axes=(0, 1)), ValueError),
        ("fft", (np.ones(4),), dict(n=0), ValueError),
        ("fft", (np.ones(4),), dict(norm="bad"), ValueError),
        ("fft2", (np.ones((2, 4)),), dict(axes=(0,)), ValueError),
        ("fft", (np.ones(4),), dict(axis=3), ValueError),
        ("fftfreq", ([3],), {}, ValueError),
        ("fftfreq", (3,), dict(d=[1]), ValueError),
        ("fftn", (np.ones((3, 4)),), dict(s=(2, 3, 4)), ValueError),
        ("rfft", (np.ones(4) + 1j,), {}, ValueError),
        ("rfft", (np.ones(4, np.float16),), {}, ValueError),
        ("fft", (np.ones(4),), dict(n=2.0), TypeError),
        ("fft", (3.0,), {}, ValueError),
    ]
    for name, args, kw, cls in bad:
        with pytest.raises(cls) as ours:
            getattr(ffft, name)(*args, **kw)
        with pytest.raises(cls) as theirs:
            jax.eval_shape(lambda *a, name=name: getattr(jjnp.fft, name)(*a, **kw), *args)
        if "bounds" not in str(theirs.value):
            assert str(theirs.value)[:40] in str(ours.value), name
    for t, err in (("FFTX", ValueError), (7, TypeError)):
        with pytest.raises(err):
            functx.lax.fft(np.ones(4), t, (4,))
    with pytest.raises(ValueError, match="minor dimensions"):
        cfft.fft_p.bind(
            fjnp.ones((3, 4), np.complex128), fft_type=cfft.FftType.FFT, fft_lengths=(5,)
        )


@settings(max_examples=4)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    data=st.data(),
)
def test_nd_transforms_on_drawn_shapes(shape, data):
    nd = len(shape)
    k = data.draw(st.integers(1, nd))
    axes = data.draw(st.permutations(range(nd)))[:k]
    s = data.draw(st.lists(st.integers(1, 6), min_size=k, max_size=k))
    x = np.random.default_rng(nd).standard_normal(shape)
    for name in ("fftn", "ifftn", "rfftn", "irfftn"):
        arg = x if name == "rfftn" else x + 0.5j * x
        got = getattr(ffft, name)(arg, s=s, axes=axes)
        _same(got, getattr(np.fft, name)(arg, s=s, axes=axes), 1e-12)


def test_gradients():
    x = RNG.standard_normal((2, 6))
    z = x + 1j * RNG.standard_normal((2, 6))
    half = np.fft.rfft(x)
    check_grads(lambda v: functx.lax.fft(v, "fft", (6,)), (z,), order=1)
    check_grads(lambda v: functx.lax.fft(v, "rfft", (2, 6)), (x,), order=1)
    check_grads(lambda v: functx.lax.fft(v, "irfft", (6,)), (half,), order=1)
    check_grads(
        lambda v: functx.lax.fft(v, "irfft", (7,)), (np.fft.rfft(RNG.standard_normal(7)),), order=1
    )
    # the transposes of RFFT and IRFFT against JAX's (the masked conventions)
    for t, n, arg in (("rfft", (2, 6), x), ("irfft", (6,), half), ("irfft", (7,), half[:, :4])):
        out = np.asarray(functx.lax.fft(arg, t, n))
        ct = RNG.standard_normal(out.shape) * (1 + 1j if t == "rfft" else 1)
        got = functx.vjp(lambda v, t=t, n=n: functx.lax.fft(v, t, n), arg)[1](ct)[0]
        want = jax.vjp(lambda v, t=t, n=n: jax.lax.fft(v, t, n), arg)[1](ct)[0]
        assert got.dtype == want.dtype
        _same(got, want, 1e-12)


def test_eager_gradient_on_a_gpu_array(interpreted_gpu):
    """The RFFT/IRFFT transposes' weights go with the cotangent's device: eager ``grad`` of an
    rfft convolution on a GPU array (Triton's interpreter here) stays there (it raised a
    DeviceError against a host constant) and gives the CPU's values."""
    gpu = interpreted_gpu
    x = RNG.standard_normal(6).astype(np.float32)

    def f(v):
        return fjnp.sum(fjnp.fft.irfft(fjnp.fft.rfft(v, n=12) * (1.0 + 0.5j), n=12) ** 2)

    got = functx.grad(f)(functx.device_put(x, gpu))
    assert got.device == gpu
    _same(np.asarray(got), np.asarray(functx.grad(f)(x)), 1e-5)


def test_vmap_against_a_loop():
    z = C.astype(np.complex64)
    for f in (
        lambda v: ffft.fft(v, n=6),
        lambda v: ffft.irfft(v, axis=0),
        lambda v: ffft.rfft2(v.real),
        lambda v: functx.lax.fft(v, "ifft", v.shape[-1:]),
    ):
        for axis in (0, 2):
            got = functx.vmap(f, in_axes=axis)(z)
            want = np.stack([np.asarray(f(np.take(z, i, axis))) for i in range(z.shape[axis])])
            _same(got, want, 1e-6)


def _step_cases():
    """A real batch ``x``, its rfftn ``z`` and (type, lengths, operand, NumPy's result) for each
    transform type over the last axes."""
    x = RNG.standard_normal((2, 3, 8))
    z = np.fft.rfftn(x, axes=(1, 2))
    return (
        x,
        z,
        [
            (cfft.FftType.FFT, (3, 8), x + 1j * x, np.fft.fftn(x + 1j * x, axes=(1, 2))),
            (cfft.FftType.IFFT, (8,), x + 0j, np.fft.ifft(x)),
            (cfft.FftType.RFFT, (3, 8), x, z),
            (cfft.FftType.IRFFT, (3, 8), z, np.fft.irfftn(z, s=(3, 8), axes=(1, 2))),
        ],
    )


def test_triton_library_step_on_torch_tensors():
    torch = pytest.importorskip("torch")
    from functx.core import ShapedArray

    x, z, cases = _step_cases()
    for t, n, arg, want in cases:
        step = cfft.FftStep(
            t, n, ShapedArray(arg.shape, arg.dtype), ShapedArray(want.shape, want.dtype)
        )
        for interleaved in (False, True):
            src = torch.from_numpy(np.ascontiguousarray(arg)).reshape(-1)
            out = torch.zeros(want.size, dtype=torch.from_numpy(want[:0]).dtype)
            if interleaved and np.iscomplexobj(arg):
                src = torch.view_as_real(src).reshape(-1)
            if interleaved and np.iscomplexobj(want):
                out = torch.zeros(2 * want.size, dtype=torch.float64)
            step.torch([src], [out])
            res = (
                out
                if not (interleaved and np.iscomplexobj(want))
                else torch.view_as_complex(out.view(-1, 2))
            )
            _same(res.numpy().reshape(want.shape), want, 1e-12)


@pytest.mark.parametrize("library", ["ducc0.fft", "scipy.fft._pocketfft.pypocketfft"])
def test_cpp_library_step_writes_into_the_program_buffers(monkeypatch, library):
    """``FftStep.into`` (what the C++ program's host step calls, on views of its buffers): every
    transform type written by pocketfft straight into the result buffer (on its threads for a
    batch: the threshold lowered), in single and double precision, on real lanes too; an IRFFT
    operand of another length than ``n // 2 + 1`` through the eager path. With each library that
    ``_entry_points`` may pick (ducc0 first, where installed). Against NumPy (the jitted FFT
    convolution of tests/test_workloads.py runs it in a program, against JAX)."""
    from functx.core import ShapedArray

    mod = pytest.importorskip(library)
    if library == "ducc0.fft":
        assert cfft._entry_points() is mod
    monkeypatch.setattr(cfft, "_direct", [mod])
    monkeypatch.setattr(cfft, "THREADS_MIN_POINTS", 1)
    x, z, cases = _step_cases()
    cases += [
        (cfft.FftType.IRFFT, (8,), z[..., :3], np.fft.irfft(z[..., :3], 8)),  # (eager path)
    ]
    for (t, n, arg, want), dt in itertools.product(cases, (np.float32, np.float64)):
        cdt = np.result_type(dt, np.complex64)
        a = np.ascontiguousarray(arg.astype(cdt if np.iscomplexobj(arg) else dt))
        w = want.astype(cdt if np.iscomplexobj(want) else dt)
        step = cfft.FftStep(t, n, ShapedArray(a.shape, a.dtype), ShapedArray(w.shape, w.dtype))
        direct = a.shape[-1] == n[-1] // 2 + 1 or t != cfft.FftType.IRFFT
        with monkeypatch.context() as m:
            if direct:  # (no eager fallback)
                m.setattr(cfft, "_fft_impl", None)
            out = np.full(w.shape, np.nan, w.dtype)
            step.into([a], [out])
            _same(out, w, 1e-5 if dt == np.float32 else 1e-12)
            if np.iscomplexobj(a) or np.iscomplexobj(w):  # the same on real lanes
                lanes = cfft.LanesStep(t, n, step.in_aval, step.out_aval)
                src = np.stack([a.real, a.imag], -1) if np.iscomplexobj(a) else a
                out = np.full(w.shape + (2,) if np.iscomplexobj(w) else w.shape, np.nan, dt)
                lanes.into([src], [out])
                got = out[..., 0] + 1j * out[..., 1] if np.iscomplexobj(w) else out
                _same(got, w, 1e-5 if dt == np.float32 else 1e-12)


@pytest.mark.parametrize("library", ["ducc0.fft", "scipy.fft._pocketfft.pypocketfft"])
def test_batches_cut_by_rows_for_the_threads_keep_the_bits_of_one_call(monkeypatch, library):
    """A batch large enough (threshold lowered) is cut by rows at multiples of ``ROW_GROUP``,
    the parts transformed at once on the calling thread and the pool's: every transform type,
    single and double precision, row counts that are not a multiple of the cut, give the bits
    of one library call on the whole batch. A transform over two axes is not cut (its lines
    are grouped otherwise: a cut batch of 13 (3, 16) float32 FFTs differed in 105 elements)."""
    import threading
    import types

    mod = pytest.importorskip(library)
    seen = set()

    def recorded(name):
        def call(*args, **kw):
            seen.add(threading.current_thread() is threading.main_thread())
            return getattr(mod, name)(*args, **kw)

        return call

    monkeypatch.setattr(
        cfft, "_direct", [types.SimpleNamespace(**{f: recorded(f) for f in ("r2c", "c2r", "c2c")})]
    )
    monkeypatch.setattr(cfft, "THREADS_MIN_POINTS", 1)
    assert [cfft._row_cuts(r, 1) for r in (4, 5, 6, 8, 13)] == [
        [0, 4],
        [0, 4, 5],
        [0, 4, 6],
        [0, 4, 8],
        [0, 8, 13],
    ]
    assert cfft._row_cuts(8, cfft.THREADS_MIN_POINTS - 1) == [0, 8]
    for lead, n, dt in itertools.product(
        ((13,), (2, 3)), ((12,), (3, 16)), (np.float32, np.float64)
    ):
        x = RNG.standard_normal(lead + n).astype(dt)
        z = (x + 1j * x[..., ::-1]).astype(np.result_type(dt, np.complex64))
        axes = tuple(range(len(lead), len(lead) + len(n)))
        half = z[..., : n[-1] // 2 + 1].copy()
        whole = {
            cfft.FftType.RFFT: (x, mod.r2c(x, axes=axes, forward=True, inorm=0, nthreads=1)),
            cfft.FftType.IRFFT: (
                half,
                mod.c2r(half, axes=axes, lastsize=n[-1], forward=False, inorm=2, nthreads=1),
            ),
            cfft.FftType.FFT: (z, mod.c2c(z, axes=axes, forward=True, inorm=0, nthreads=1)),
            cfft.FftType.IFFT: (z, mod.c2c(z, axes=axes, forward=False, inorm=2, nthreads=1)),
        }
        for t, (arg, want) in whole.items():
            out = np.full(want.shape, np.nan, want.dtype)
            assert cfft._transform_into(arg, out, t, n)
            np.testing.assert_array_equal(out, want, err_msg=f"{t.name} {lead} {n} {dt}")
    assert seen == {True, False}  # (both threads ran parts)
    seen.clear()
    x = RNG.standard_normal((13, 3, 16)) + 0j
    out = np.empty_like(x)
    assert cfft._transform_into(x, out, cfft.FftType.FFT, (3, 16))
    assert seen == {True}
    np.testing.assert_array_equal(out, mod.c2c(x, axes=(1, 2), forward=True, inorm=0))


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("library", ["ducc0.fft", "scipy.fft._pocketfft.pypocketfft", None])
def test_transforms_of_zero_points_eager_and_jitted(monkeypatch, library):
    """Transforms over an axis of length 0: the jitted program's host step gives the eager
    result (an RFFT of 0 points: zeros of length 1; pocketfft raised its own RuntimeError in the
    step) and ``norm="forward"`` no division by zero, with each transform library."""
    if library is not None:
        monkeypatch.setattr(cfft, "_direct", [pytest.importorskip(library)])
    else:
        monkeypatch.setattr(cfft, "_direct", [None])
    x = np.zeros((4, 0), np.float32)
    cases = [
        ("rfft", x, {}),
        ("rfft", x, dict(norm="ortho")),
        ("fft", x + 0j, dict(norm="forward")),
        ("ifftn", x.T + 0j, dict(norm="forward")),
        ("irfft", x + 0j, dict(norm="forward")),
    ]
    for name, a, kw in cases:
        eager = getattr(ffft, name)(a, **kw)
        jitted = functx.jit(lambda a: getattr(ffft, name)(a, **kw))(a)
        ref = _jax_type(name, (a,), kw)
        for got in (eager, jitted):
            assert (got.shape, got.dtype) == (ref.shape, ref.dtype), name
            np.testing.assert_array_equal(np.asarray(got), np.zeros(ref.shape, ref.dtype))


def test_real_lanes_form_for_backends_without_complex():
    # what functx/lowering/complex_lanes.py rewrites an fft equation into: the operand's real and
    # imaginary parts in, the result's out (one fft equation with lanes=True), eagerly, under the
    # C++ jit (its host step on real buffers) and on torch tensors (the Triton step)
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    pair = lambda re, im: SimpleNamespace(re=re, im=im)  # noqa: E731
    x = RNG.standard_normal((2, 3, 8))
    z = np.fft.rfftn(x, axes=(1, 2))
    cases = [
        ("fft", (3, 8), pair(x, 2 * x), np.fft.fftn(x + 2j * x, axes=(1, 2))),
        ("rfft", (8,), x, np.fft.rfft(x)),
        ("irfft", (3, 8), pair(z.real, z.imag), np.fft.irfftn(z, s=(3, 8), axes=(1, 2))),
    ]
    for t, n, arg, want in cases:
        typ = cfft.fft_type_of(t)

        def f(a, t=typ, n=n):
            y = cfft.on_lanes(a, t, n, pair)
            return y if t == cfft.FftType.IRFFT else (y.re, y.im)

        def join(y):
            return np.asarray(y) if not isinstance(y, tuple) else y[0] + 1j * np.asarray(y[1])

        _same(join(f(arg)), want, 1e-12)
        flat = (arg.re, arg.im) if hasattr(arg, "re") else (arg,)
        if t == "fft":  # (one compile: the host step on real buffers)
            jitted = functx.jit(lambda *v, f=f: f(pair(*v)))
            _same(join(jitted(*flat)), want, 1e-12)
        # the Triton step: real device buffers read as complex ones
        eqn = functx.make_jaxpr(lambda *v, f=f: f(pair(*v) if len(v) == 2 else v[0]))(*flat)
        e = next(e for e in eqn.jaxpr.eqns if e.prim is cfft.fft_p)
        a_in, a_out = cfft._lanes_avals(e.invars[0].aval, typ, n)
        step = cfft.LanesStep(typ, n, a_in, a_out)
        src = np.stack([arg.re, arg.im], -1) if hasattr(arg, "re") else arg
        out = torch.zeros(e.outvars[0].aval.size, dtype=torch.float64)
        step.torch([torch.from_numpy(np.ascontiguousarray(src)).reshape(-1)], [out])
        got = out.numpy().reshape(e.outvars[0].aval.shape)
        got = got if typ == cfft.FftType.IRFFT else got[..., 0] + 1j * got[..., 1]
        _same(got, want, 1e-12)
