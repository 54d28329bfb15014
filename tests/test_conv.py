"""Convolutions (functx/_conv.py, functx/numpy/_conv.py, functx/scipy/signal.py) against JAX:
``lax.conv_general_dilated`` for drawn layouts, strides, paddings, dilations and groups, the
wrappers, ``jnp.convolve``/``correlate`` and ``jax.scipy.signal``; values, dtypes and error
classes in both x64 modes, derivatives against finite differences (float64, order 2), vmap
against a loop. jit on C++ and Triton against eager and JAX: the ``conv`` case of
tests/lowering/test_backend_suite.py (Mamba's causal conv1d and its gradient among them)."""

from __future__ import annotations

import contextlib
import functools

import jax
import jax.numpy as jjnp
import jax.scipy.signal as jsig
import numpy as np
import pytest
import scipy.signal
from hypothesis import given, settings, strategies as st
from x64util import x64_off

import functx
import functx.numpy as fnp
import functx.scipy.signal as fsig
from functx import lax as flax
from functx.test_util import check_grads

jlax = jax.lax


def _close(got, want, rtol=1e-10, atol=1e-10):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _jax_all(calls):
    """JAX's results of ``calls`` (pairs of a function and its argument tuple) from ONE
    ``jax.jit`` (JAX's eager dispatch compiles each convolution shape apart: ~0.5 s each)."""
    fns = [f for f, _ in calls]
    out = jax.jit(lambda argss: [f(*a) for f, a in zip(fns, argss)])([a for _, a in calls])
    return jax.tree.map(np.asarray, out)


class _Pairs:
    """functx's ``lax.<name>(*arrays, *rest, **kw)`` now, JAX's later in one ``jax.jit``."""

    def __init__(self):
        self.got, self.calls = [], []

    def add(self, name, arrays, *rest, **kw):
        self.got.append(getattr(flax, name)(*arrays, *rest, **kw))
        f = getattr(jlax, name)
        self.calls.append((lambda *a: f(*a, *rest, **kw), tuple(arrays)))

    def check(self, rtol=1e-10, atol=1e-10):
        for g, w in zip(self.got, _jax_all(self.calls)):
            _close(g, w, rtol, atol)


# --- conv_general_dilated: drawn configurations --------------------------------------------------
_LAYOUTS = {
    1: [("NCH", "OIH", "NCH"), ("NHC", "HIO", "NHC"), ("HNC", "IHO", "CNH")],
    2: [("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("NHWC", "OHWI", "NCWH")],
}


@st.composite
def _configs(draw):
    nsp = draw(st.sampled_from([1, 2]))
    layout = draw(st.sampled_from(_LAYOUTS[nsp] + [None]))
    groups = draw(st.sampled_from(["none", "feature", "batch", "depthwise"]))
    g = draw(st.integers(2, 3)) if groups != "none" else 1
    cg = 1 if groups == "depthwise" else draw(st.integers(1, 3))
    c = g * cg if groups in ("feature", "depthwise") else cg
    og = draw(st.integers(1, 2))
    o = g * og if groups != "none" else og
    n = g * draw(st.integers(1, 2)) if groups == "batch" else draw(st.integers(1, 2))
    ksp = [draw(st.integers(1, 3)) for _ in range(nsp)]
    sp = [draw(st.integers(1, 6)) for _ in range(nsp)]
    strides = [draw(st.integers(1, 2)) for _ in range(nsp)]
    rdil = [draw(st.integers(1, 2)) for _ in range(nsp)]
    ldil = [1] * nsp
    kind = draw(st.sampled_from(["SAME", "VALID", "SAME_LOWER", "pairs"]))
    if kind == "pairs":
        ldil = [draw(st.integers(1, 2)) for _ in range(nsp)]
        padding = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(nsp)]
    else:
        padding = kind
    return dict(
        nsp=nsp,
        layout=layout,
        n=n,
        c=c,
        o=o,
        cg=c // (g if groups in ("feature", "depthwise") else 1),
        ksp=ksp,
        sp=sp,
        kw=dict(
            window_strides=strides,
            padding=padding,
            lhs_dilation=ldil,
            rhs_dilation=rdil,
            feature_group_count=g if groups in ("feature", "depthwise") else 1,
            batch_group_count=g if groups == "batch" else 1,
        ),
    )


def _operands(cfg, rng, dtype=np.float64):
    nsp = cfg["nsp"]
    lhs_c = (cfg["n"], cfg["c"], *cfg["sp"])
    rhs_c = (cfg["o"], cfg["cg"], *cfg["ksp"])
    layout = cfg["layout"]
    if layout is None:
        perms = [tuple(range(nsp + 2))] * 2
    else:
        dn = flax.conv_dimension_numbers(lhs_c, rhs_c, layout)
        perms = [np.argsort(dn.lhs_spec), np.argsort(dn.rhs_spec)]
    lhs = np.transpose(rng.standard_normal(lhs_c), perms[0]).astype(dtype)
    rhs = np.transpose(rng.standard_normal(rhs_c), perms[1]).astype(dtype)
    return lhs, rhs


def _valid(cfg):
    """Whether JAX accepts the configuration (negative padding can exceed the input)."""
    pads = cfg["kw"]["padding"]
    if isinstance(pads, str):
        return True
    for s, d, (lo, hi) in zip(cfg["sp"], cfg["kw"]["lhs_dilation"], pads):
        if (s - 1) * d + 1 + lo + hi < 0:
            return False
    return True


@settings(max_examples=1)
@given(cfgs=st.lists(_configs(), min_size=24, max_size=24), seed=st.integers(0, 2**16))
def test_conv_general_dilated_matches_jax(cfgs, seed):
    rng = np.random.default_rng(seed)
    calls, got = [], []
    for cfg in filter(_valid, cfgs):
        lhs, rhs = _operands(cfg, rng)
        kw = dict(cfg["kw"], dimension_numbers=cfg["layout"])
        calls.append((functools.partial(jlax.conv_general_dilated, **kw), (lhs, rhs)))
        got.append(flax.conv_general_dilated(lhs, rhs, **kw))
    for g, w in zip(got, _jax_all(calls)):
        _close(g, w)


@settings(max_examples=6)
@given(cfg=_configs(), seed=st.integers(0, 2**16))
def test_conv_grads_order_2(cfg, seed):
    if not _valid(cfg):
        return
    lhs, rhs = _operands(cfg, np.random.default_rng(seed))
    kw = dict(cfg["kw"], dimension_numbers=cfg["layout"])
    check_grads(lambda a, b: flax.conv_general_dilated(a, b, **kw), (lhs, rhs), order=2)


def test_conv_grads_match_jax():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 4, 5, 6)), rng.standard_normal((6, 2, 3, 2))
    kw = dict(
        window_strides=(2, 1),
        padding=[(1, 0), (1, 1)],
        lhs_dilation=(1, 2),
        rhs_dilation=(2, 1),
        feature_group_count=2,
    )
    g = rng.standard_normal(flax.conv_general_dilated(x, w, **kw).shape)
    xb, wb = rng.standard_normal((4, 2, 5, 3)), rng.standard_normal((6, 2, 2, 2))
    kwb = dict(window_strides=(1, 2), padding="SAME", batch_group_count=2)
    gb = rng.standard_normal(flax.conv_general_dilated(xb, wb, **kwb).shape)

    def loss(lax, kw, g):
        return lambda x, w: (lax.conv_general_dilated(x, w, **kw) * g).sum()

    want = _jax_all(
        [
            (jax.grad(loss(jlax, kw, g), (0, 1)), (x, w)),
            (jax.grad(loss(jlax, kwb, gb), (0, 1)), (xb, wb)),
        ]
    )
    got = [
        functx.grad(loss(flax, kw, g), (0, 1))(x, w),
        functx.grad(loss(flax, kwb, gb), (0, 1))(xb, wb),
    ]
    for gg, ww in zip(got, want):
        for a, b in zip(gg, ww):
            _close(a, b)


def test_vmap_against_loop():
    rng = np.random.default_rng(2)
    xs, ws = rng.standard_normal((3, 2, 4, 5)), rng.standard_normal((3, 4, 2, 2))

    def f(x, w):
        return flax.conv_general_dilated(x, w, (1,), "SAME", feature_group_count=2)

    for axes, args in (((0, None), (xs, ws[0])), ((None, 0), (xs[0], ws)), ((0, 0), (xs, ws))):
        got = functx.vmap(f, in_axes=axes)(*args)
        loop = [
            np.asarray(f(*(a[i] if ax == 0 else a for a, ax in zip(args, axes)))) for i in range(3)
        ]
        _close(got, np.stack(loop))


def test_long_kernel_gathers():
    # more than _SLICE_TAPS taps: one gather, not one slice per tap; the Jaxpr stays small
    rng = np.random.default_rng(3)
    a, v = rng.standard_normal(300), rng.standard_normal(120)
    jaxpr = functx.make_jaxpr(lambda a, v: fnp.convolve(a, v))(a, v)
    assert len(jaxpr.jaxpr.eqns) < 20
    want, gj = _jax_all(
        [
            (jjnp.convolve, (a, v)),
            (jax.grad(lambda a, v: (jjnp.convolve(a, v, "same") ** 2).sum(), (0, 1)), (a, v)),
        ]
    )
    _close(fnp.convolve(a, v), want, rtol=1e-9)
    g = functx.grad(lambda a, v: (fnp.convolve(a, v, "same") ** 2).sum(), (0, 1))(a, v)
    for x, y in zip(g, gj):
        _close(x, y, rtol=1e-9, atol=1e-8)


def test_one_channel_is_one_gather_and_one_product():
    # one input channel to 8+ outputs (a CNN's first layer): one gather of the windows and one
    # dot_general, values and gradients as JAX's (jit on both backends: the ``conv`` case of
    # tests/lowering/test_backend_suite.py)
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 6, 5, 1)), rng.standard_normal((3, 2, 1, 8))
    g = rng.standard_normal((2, 3, 5, 8))
    kw = dict(window_strides=(2, 1), padding="SAME", rhs_dilation=(1, 2))
    kw["dimension_numbers"] = ("NHWC", "HWIO", "NHWC")

    def both(lax):
        def f(x, w):
            return lax.conv_general_dilated(x, w, **kw)

        return lambda x, w: (
            f(x, w),
            *(jax if lax is jlax else functx).grad(lambda x, w: (f(x, w) * g).sum(), (0, 1))(x, w),
        )

    jaxpr = functx.make_jaxpr(lambda x, w: flax.conv_general_dilated(x, w, **kw))(x, w)
    prims = [e.primitive.name for e in jaxpr.jaxpr.eqns]
    assert prims.count("dot_general") == 1 and prims.count("gather") == 1, prims
    for a, b in zip(both(flax)(x, w), jax.jit(both(jlax))(x, w)):
        _close(a, b)
    check_grads(lambda a, b: flax.conv_general_dilated(a, b, **kw), (x[:1], w), order=2)
    xi, wi = (x * 4).astype(np.int32), (w * 4).astype(np.int32)
    with x64_off():
        _close(flax.conv_general_dilated(xi, wi, **kw), jlax.conv_general_dilated(xi, wi, **kw))


# --- dtypes and precision ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["x64", "default"])
@pytest.mark.filterwarnings("ignore:Explicitly requested dtype float64")  # (default mode, as JAX)
def test_dtypes_and_preferred_element_type(mode):
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((1, 2, 5)), rng.standard_normal((3, 2, 2))
    cases = [
        (x.astype(np.float32), w.astype(np.float32), {}),
        (x.astype(np.float32), w.astype(np.float32), {"preferred_element_type": np.float64}),
        ((x * 4).astype(np.int32), (w * 4).astype(np.int32), {}),
        ((x * 4).astype(np.int8), (w * 4).astype(np.int8), {"preferred_element_type": np.int32}),
        ((x * 4).astype(np.int32), (w * 4).astype(np.int32), {"preferred_element_type": "float32"}),
        ((x + 1j * x).astype(np.complex64), (w - 2j * w).astype(np.complex64), {}),
        (x > 0, w > 0, {}),
        (x[:, :1] > 0, w[:, :1] > 0, {}),
        (x.astype(np.float32), w.astype(np.float32), {"precision": "highest"}),
        (x.astype(np.float32), w.astype(np.float32), {"precision": jlax.Precision.HIGH}),
    ]
    with x64_off() if mode == "default" else contextlib.nullcontext():
        got, calls = [], []
        for a, b, kw in cases:
            fkw = dict(kw)
            if isinstance(kw.get("precision"), jlax.Precision):
                fkw["precision"] = flax.Precision[kw["precision"].name]
            got.append(flax.conv_general_dilated(a, b, (1,), "SAME", **fkw))
            f = functools.partial(jlax.conv_general_dilated, **kw)
            calls.append((lambda a, b, f=f: f(a, b, (1,), "SAME"), (a, b)))
        for g, w in zip(got, _jax_all(calls)):
            _close(g, w, rtol=1e-5, atol=1e-5)


# --- errors --------------------------------------------------------------------------------------
def _err(fn_name, args, kw, fx_args=None):
    """The exception classes of functx's and JAX's ``lax.<fn_name>``."""
    out = []
    for lax, a in ((flax, fx_args or args), (jlax, args)):
        try:
            getattr(lax, fn_name)(*a, **kw)
        except Exception as e:  # noqa: BLE001
            out.append(e)
        else:
            out.append(None)
    return out


_X, _W = np.ones((2, 4, 5)), np.ones((6, 2, 3))


@pytest.mark.parametrize(
    "args, kw",
    [
        ((_X, _W, (1,), "SAME"), {"feature_group_count": 3}),
        ((_X, _W, (1,), "SAME"), {"feature_group_count": 4}),
        ((_X, _W, (1,), "SAME"), {}),  # 4 // 1 != 2
        ((_X, _W[:5], (1,), "SAME"), {"feature_group_count": 2}),
        ((_X, np.ones((6, 4, 3)), (1,), "SAME"), {"batch_group_count": 4}),
        ((_X, np.ones((6, 4, 3)), (1,), "SAME"), {"batch_group_count": 0}),
        (
            (_X, np.ones((6, 2, 3)), (1,), "SAME"),
            {"batch_group_count": 2, "feature_group_count": 2},
        ),
        ((_X, _W, (1, 1), "SAME"), {"feature_group_count": 2}),
        ((_X, _W, (1,), "FULL"), {"feature_group_count": 2}),
        ((_X, _W, (1,), [(1, 2, 3)]), {"feature_group_count": 2}),
        ((_X, _W, (1,), [(-7, 0)]), {"feature_group_count": 2}),
        ((_X, _W, (1,), "SAME"), {"feature_group_count": 2, "lhs_dilation": (2,)}),
        ((_X, _W, (1,), "SAME"), {"feature_group_count": 2, "dimension_numbers": ("NCH", "OIH")}),
        (
            (_X, _W, (1,), "SAME"),
            {"feature_group_count": 2, "dimension_numbers": ("NCH", "OIH", "NCW")},
        ),
        (
            (_X, _W, (1,), "SAME"),
            {"feature_group_count": 2, "dimension_numbers": ("NCC", "OIH", "NCH")},
        ),
        (
            (_X, _W, (1,), "SAME"),
            {"feature_group_count": 2, "dimension_numbers": ("NCHW", "OIHW", "NCHW")},
        ),
        ((_X, _W[0], (1,), "SAME"), {}),
        ((_X, _W.astype(np.float32), (1,), "SAME"), {"feature_group_count": 2}),
        ((_X, _W, (1,), "SAME"), {"feature_group_count": 2, "preferred_element_type": np.int32}),
    ],
)
def test_error_classes_match_jax(args, kw):
    got, want = _err("conv_general_dilated", args, kw)
    assert want is not None, "JAX accepted it"
    assert got is not None, f"functx accepted what JAX rejects: {want!r}"
    assert isinstance(got, type(want)) or type(want) in type(got).__mro__, (got, want)


# --- the wrappers --------------------------------------------------------------------------------
def test_wrappers_match_jax():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((4, 3, 3, 2))
    p = _Pairs()
    p.add("conv", (x, w), (1, 2), "SAME")
    p.add("conv", (x, w), (2, 1), [(1, 0), (0, 2)])
    p.add("conv_with_general_padding", (x, w), (1, 1), [(1, 1), (0, -1)], (2, 1), (1, 2))
    xn, wn = np.transpose(x, (0, 2, 3, 1)), np.transpose(w, (2, 3, 1, 0))
    for pad, tk, cons in [
        ("SAME", False, False),
        ("VALID", True, False),
        ("SAME", True, True),
        ([(1, 2), (0, 1)], False, False),
        ([(1, 2), (0, 1)], True, True),
    ]:
        ww = wn[..., :3, :3] if tk else wn
        kw = dict(rhs_dilation=(1, 2), transpose_kernel=tk, use_consistent_padding=cons)
        p.add("conv_transpose", (xn, ww), (2, 1), pad, **kw)
    dn = ("NCH", "OIH", "NCH")
    p.add("conv_transpose", (x[..., 0], w[..., 0]), (2,), "SAME", dimension_numbers=dn)
    for kw in (
        dict(window_strides=(1, 2), padding="SAME", rhs_dilation=(2, 1)),
        dict(window_strides=(1, 1), padding="VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        dict(window_strides=(2, 1), padding=[(1, 0), (0, 1)], lhs_dilation=(1, 2)),
    ):
        a = xn if kw.get("dimension_numbers") else x
        p.add("conv_general_dilated_patches", (a,), (3, 2), **kw)
        # the locally connected convolution: one kernel per output position
        shape = flax.conv_general_dilated_patches(a, (3, 2), **kw).shape
        dn = flax.conv_dimension_numbers(a.shape, (1, 1, 3, 2), kw.get("dimension_numbers"))
        rc = (2, shape[dn.out_spec[1]], *(shape[i] for i in dn.out_spec[2:]))
        r = np.transpose(rng.standard_normal(rc), np.argsort(dn.rhs_spec))
        p.add(
            "conv_general_dilated_local",
            (a, r),
            kw["window_strides"],
            kw["padding"],
            (3, 2),
            kw.get("lhs_dilation"),
            kw.get("rhs_dilation"),
            kw.get("dimension_numbers"),
        )
    p.check()
    assert flax.conv_dimension_numbers(x.shape, w.shape, ("NHWC", "OIHW", "NCHW")) == tuple(
        jlax.conv_dimension_numbers(x.shape, w.shape, ("NHWC", "OIHW", "NCHW"))
    )
    assert flax.conv_general_permutations(("NWHC", "HWOI", "CNHW")) == tuple(
        tuple(p) for p in jlax.conv_general_permutations(("NWHC", "HWOI", "CNHW"))
    )
    dn = ("NHWC", "HWOI", "NCHW")
    for pads in ("SAME", "VALID", [(1, 2), (0, 3)]):
        for name in ("conv_general_shape_tuple", "conv_transpose_shape_tuple"):
            args = (xn.shape, np.transpose(w, (2, 3, 0, 1)).shape, (2, 1), pads, dn)
            want = tuple(int(d) for d in getattr(jlax, name)(*args))
            assert getattr(flax, name)(*args) == want, (name, pads)
    for pads in ("SAME", "VALID", [(1, 2), (0, 0)]):
        assert flax.conv_shape_tuple(x.shape, w.shape, (2, 1), pads) == tuple(
            int(d) for d in jlax.conv_shape_tuple(x.shape, w.shape, (2, 1), pads)
        )


# --- jnp.convolve / correlate --------------------------------------------------------------------
@settings(max_examples=2)
@given(
    draws=st.lists(
        st.tuples(
            st.integers(1, 9),
            st.integers(1, 9),
            st.sampled_from(["full", "same", "valid"]),
            st.sampled_from(["convolve", "correlate"]),
            st.sampled_from([np.float32, np.float64, np.complex64, np.int32]),
        ),
        min_size=12,
        max_size=12,
    ),
    seed=st.integers(0, 2**16),
)
def test_numpy_convolve_correlate_match_jax(draws, seed):
    rng = np.random.default_rng(seed)
    got, calls = [], []
    for n, k, mode, fn, dt in draws:
        a, v = (rng.standard_normal(m) * 4 for m in (n, k))
        if np.dtype(dt).kind == "c":
            a, v = a + 1j * a[::-1], v - 0.5j * v
        a, v = a.astype(dt), v.astype(dt)
        got.append(getattr(fnp, fn)(a, v, mode))
        calls.append((functools.partial(getattr(jjnp, fn), mode=mode), (a, v)))
    for g, w in zip(got, _jax_all(calls)):
        _close(g, w, rtol=1e-5, atol=1e-5)


def test_numpy_convolve_dtypes_and_errors(no_x64):
    i = np.arange(4, dtype=np.int32)
    b = np.array([True, False, True])
    kw = {"preferred_element_type": np.int32}
    cases = [
        (fnp.convolve, jjnp.convolve, (i, i[:2]), {}),
        (fnp.convolve, jjnp.convolve, (i, i[:2]), kw),
        (fnp.correlate, jjnp.correlate, (i, i), {"mode": "full"}),
        (fnp.convolve, jjnp.convolve, (b, b), {}),
        (fnp.convolve, jjnp.convolve, (np.ones(3), np.ones(2)), {}),
    ]
    want = _jax_all([(functools.partial(j, **k), a) for _, j, a, k in cases])
    for (f, _, a, k), w in zip(cases, want):
        _close(f(*a, **k), w)
    for args in ((np.ones(0), np.ones(3)), (np.ones((2, 2)), np.ones(3)), (i, i, "wide")):
        with pytest.raises(ValueError):
            jjnp.convolve(*args)
        with pytest.raises(ValueError):
            fnp.convolve(*args)


def test_numpy_convolve_grad():
    rng = np.random.default_rng(6)
    a, v = rng.standard_normal(7), rng.standard_normal(3)
    check_grads(lambda a, v: fnp.convolve(a, v, "same"), (a, v), order=2)
    check_grads(lambda a, v: fnp.correlate(a, v, "full"), (a, v), order=1)


# --- jax.scipy.signal ----------------------------------------------------------------------------
def test_scipy_signal_matches_jax():
    # values against SciPy in float64 (JAX's functions give SciPy's values: checked while writing
    # these), dtypes and shapes against JAX by jax.eval_shape (no compile), and a few values
    # against JAX in one jit
    rng = np.random.default_rng(7)
    big, small, sq, row, col = (5, 6), (2, 3), (3, 3), (3,), (7,)
    pairs = [
        ("full", big, small),
        ("same", small, (4, 5)),
        ("valid", sq, sq),
        ("full", small, (4, 5)),
        ("valid", big, small),
        ("same", big, small),
        ("same", row, col),
        ("valid", row, col),
    ]
    calls, got = [], []
    for i, (mode, s1, s2) in enumerate(pairs):
        a = rng.standard_normal(s1)
        b = rng.standard_normal(s2) + 0.5j * rng.standard_normal(s2)
        x, y = (a, b) if i % 2 else (a.astype(np.float32), b.real.astype(np.int32))
        names = ["convolve", "correlate"] + (["convolve2d", "correlate2d"] * (len(s1) == 2))
        kws = [{}] * len(names) + [{"method": "fft"}] * (len(s1) == 1 or i % 3 == 0)
        for fn, kw in zip(names + ["convolve"], kws):
            out = getattr(fsig, fn)(x, y, mode, **kw)
            want = getattr(scipy.signal, fn)(x.astype(np.float64), y.astype(np.complex128), mode)
            shape = jax.eval_shape(functools.partial(getattr(jsig, fn), mode=mode, **kw), x, y)
            assert (out.shape, out.dtype) == (shape.shape, shape.dtype), (fn, mode, s1, s2)
            tol = 1e-12 if out.dtype == np.complex128 else 1e-5
            np.testing.assert_allclose(np.asarray(out), want, rtol=tol, atol=tol)
            if i in (0, 5) and kw == {}:
                calls.append((functools.partial(getattr(jsig, fn), mode=mode), (x, y)))
                got.append(out)
    a, b = rng.standard_normal((3, 8)), rng.standard_normal((3, 4))
    got.append(fsig.fftconvolve(a, b, axes=1))
    calls.append((functools.partial(jsig.fftconvolve, axes=1), (a, b)))
    for g, w in zip(got, _jax_all(calls)):
        _close(g, w, 1e-5, 1e-5)


def test_scipy_signal_errors():
    x = np.ones((3, 3))
    cases = [
        ("convolve", (x, np.ones((2, 4))), {}),
        ("convolve", (x, np.ones(2)), {}),
        ("convolve", (x, x), {"method": "magic"}),
        ("convolve", (x, x), {"mode": "wide"}),
        ("convolve2d", (np.ones(3), np.ones(3)), {}),
        ("convolve2d", (x, x), {"boundary": "wrap"}),
        ("correlate2d", (x, x), {"fillvalue": 1}),
        ("fftconvolve", (x, np.ones(2)), {}),
    ]
    for name, args, kw in cases:
        with pytest.raises(Exception) as want:
            getattr(jsig, name)(*args, **kw)
        with pytest.raises(want.type):
            getattr(fsig, name)(*args, **kw)


def test_docstrings_have_arguments_returns_and_running_examples():
    import doctest

    import functx._conv as lconv
    import functx.numpy._conv as nconv

    fns = [getattr(m, n) for m in (lconv, nconv, fsig) for n in m.__all__]
    for fn in fns:
        doc = fn.__doc__ or ""
        assert "Arguments:" in doc and "Returns:" in doc and ">>>" in doc, fn.__name__
        (test,) = doctest.DocTestFinder().find(fn, fn.__name__, globs={})
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        runner.run(test)
        assert runner.failures == 0, fn.__name__
