"""functx.random against jax.random: the same bits for the same key, shape and dtype.

Bit equality with live jax.random (one jax.jit compile per group of samplers: JAX's eager
dispatch would compile each call) for the keys, bits, uniform, randint, bernoulli, permutation,
choice, categorical, poisson, and the samplers that apply log/log1p/erf_inv/exp to uniform bits
(normal, exponential, gumbel, laplace, logistic, gamma, lognormal and maxwell in float64,
multivariate_normal, wald: functx._xlamath evaluates those functions as XLA does), eagerly and
under jit. The float32 samplers whose JAX compile costs most (rejection loops) or that add
little (lognormal, pareto, beta, dirichlet, chisquare, f, loggamma, truncated_normal, maxwell,
double_sided_maxwell) are pinned by their docstring examples: JAX's float32 results, which
NumPy prints to the bit. The threefry2x32 primitive against JAX's, its batching rule, jvp, and
lowering (jit keeps the hash in compiled code); vmap over keys, scan carries, typed keys through
jit/vmap; errors with JAX's exception classes.

JAX runs with jax_enable_x64 on in this suite (tests/conftest.py): tests pass explicit dtypes, and
the default-dtype tests run both libraries in their default mode (``_default_mode``).
"""

from __future__ import annotations

import contextlib
import doctest
import functools
import inspect
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functx
import functx.random as fr
from functx.control import threefry as threefry_module
from functx.control.threefry import threefry2x32, threefry2x32_p

jax = pytest.importorskip("jax")
import jax.random as jr  # noqa: E402
from jax._src.random.threefry2x32 import threefry2x32_p as jax_threefry2x32_p  # noqa: E402

F16, BF16, F32, F64 = np.float16, ml_dtypes.bfloat16, np.float32, np.float64
FLOATS = (F16, BF16, F32, F64)
KEYS = [np.asarray(jr.PRNGKey(s)) for s in (0, 1234567)]


@contextlib.contextmanager
def _default_mode():
    """Both libraries with jax_enable_x64 off (their default): float32/int32 defaults."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(jax.enable_x64(False))
        fx_flag = getattr(functx, "enable_x64", None)  # (functx's flag, where it exists)
        if fx_flag is not None:
            stack.enter_context(fx_flag(False))
        yield


def same(got, want):
    """Equal bits, dtype and shape."""
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def close(got, want, ulps=4):
    """Equal dtype and shape, values within a few ulp (relative to the values' magnitude)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    eps = float(ml_dtypes.finfo(got.dtype).eps)
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_allclose(g, w, rtol=ulps * eps, atol=ulps * eps)


# --- one reference program per x64 mode: JAX compiles each once -------------------------------
# (a JAX compile costs about a second; every eager functx call is compared with an entry here)
def _samplers_32(r, k):
    """The samplers in 32 bits or less (the default mode's dtypes), keyed by a readable name."""
    k1, k2, k3 = r.split(k, 3)
    x = np.arange(24.0, dtype=F32).reshape(4, 6)
    p = np.array([0.25, 0.5, 0.125, 0.125], F32)  # (exact cumulative sums)
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.3, 0.3, 0.4]], F32))
    return {
        "split": r.split(k),
        "fold_in_7": r.fold_in(k, 7),
        "bits_uint32": r.bits(k1, (3, 4), np.uint32),
        "uniform_bfloat16": r.uniform(k1, (40,), BF16),
        "uniform_float32": r.uniform(k1, (40,), F32),
        "uniform_range_float32": r.uniform(k2, (2, 20), F32, -2.0, 3.0),
        "normal_float32": r.normal(k1, (64,), F32),
        "normal_complex64": r.normal(k2, (6,), np.complex64),
        "exponential_float32": r.exponential(k2, (16,), F32),
        "gumbel_float32": r.gumbel(k2, (16,), F32),
        "gumbel_highest_float32": r.gumbel(k1, (16,), F32, mode="highest"),
        "laplace_float32": r.laplace(k3, (16,), F32),
        "logistic_float32": r.logistic(k1, (16,), F32),
        "bernoulli_float32": r.bernoulli(k1, np.asarray(0.3, F32), (50,)),
        "randint_int8": r.randint(k1, (30,), -3, 100, np.int8),
        "randint_int32": r.randint(k1, (30,), -3, 100, np.int32),
        "randint_arrays_int32": r.randint(
            k3, (2, 3), np.array([[0], [10]], np.int32), np.array([3, 50, 120], np.int32), np.int32
        ),
        "permutation_int": r.permutation(k1, np.int32(10)),
        "choice_p": r.choice(k1, x, (5,), p=p),
        "categorical": r.categorical(k1, logits),
    }


def _samplers_64(r, k):
    """The 64-bit dtypes (jax_enable_x64 on)."""
    k1, k2 = r.split(k)
    return {
        "uniform_range_float64": r.uniform(k2, (2, 20), F64, -2.0, 3.0),
        "randint_int64": r.randint(k1, (30,), -3, 100, np.int64),
        "normal_float64": r.normal(k1, (64,), F64),
        "gumbel_float64": r.gumbel(k2, (16,), F64),
        "lognormal_float64": r.lognormal(k1, np.asarray(0.7, F64), (16,), F64),
        "maxwell_float64": r.maxwell(k2, (8,), F64),
        "orthogonal_float64": r.orthogonal(k1, 3, (), F64),
    }


_COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]], F32)


# gamma's shapes (an argument of JAX's program): JAX's tests' 0.5, 2/3, 2.5; shapes whose
# Marsaglia-Tsang constant XLA's rsqrt rounds otherwise; small ones with samples flushed to zero
_GAMMA_A = np.array([0.5, 2 / 3, 2.5, 0.25, 1.93, 13.9, 14.2, 14.8, 0.01, 1e-3, 1.0, 1e4], F32)


# poisson's rates: Knuth's method below 10, the transformed rejection above (where XLA's lgamma,
# log and fused products decide acceptances; the loop runs until its slowest element accepts, and
# a later acceptance overwrites an earlier one, so one flipped acceptance changes every count)
_POISSON_LAM = np.array([0.5, 3.0, 9.9, 10.0, 11.4, 15.0, 33.3, 99.0, 400.0, 1.3e3, 2e5, 0.0], F32)


def _samplers_loops(r, k, p=np.array([3.0, 2.0, -1.5], F32), a=_GAMMA_A, lam=_POISSON_LAM):  # noqa: B008
    """Rejection samplers (while loops), a few elements each, and truncated_normal. (``p``,
    ``a`` and ``lam`` are arguments of JAX's program, as the parameters of an eager
    ``jax.random`` call are: its compiler folds constants, with other roundings.)"""
    k1, k2 = r.split(k)
    return {
        "gamma": r.gamma(k1, a, None, F32),
        "wald_one_float32": r.wald(k1, p[0], (), F32),
        "multivariate_normal_float32": r.multivariate_normal(
            k1, np.array([0.5, -1.0, 2.0], F32), _COV, (4,), F32
        ),
        "poisson_int32": r.poisson(k2, lam, (8, lam.size), np.int32),
    }


def _compare(got: dict, want: dict):
    assert sorted(got) == sorted(want)
    for name in want:
        try:
            same(got[name], want[name])
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None


@functools.lru_cache(maxsize=1)
def _jax_programs_32():
    """JAX's 32-bit programs, compiled once (x64 off): ``p`` and gamma's shapes are arguments."""
    return jax.jit(lambda k, d, a, lam: (_samplers_32(jr, k), _samplers_loops(jr, k, d, a, lam)))


@pytest.fixture(scope="module")
def reference():
    """JAX's results of the three programs for KEYS[1]: one jax.jit compile each (the programs
    are small: JAX takes seconds to compile each of them)."""
    with _default_mode():
        x32, loops = _jax_programs_32()(
            KEYS[1], np.array([3.0, 2.0, -1.5], F32), _GAMMA_A, _POISSON_LAM
        )
    x64 = jax.jit(lambda k: _samplers_64(jr, k))(KEYS[1])
    as_np = functools.partial(jax.tree.map, np.asarray)
    return {"x32": as_np(x32), "x64": as_np(x64), "loops": as_np(loops)}


def test_samplers_give_jaxs_bits(reference):
    with _default_mode():
        _compare(_samplers_32(fr, KEYS[1]), reference["x32"])


def test_samplers_64bit_give_jaxs_bits(reference):
    _compare(_samplers_64(fr, KEYS[1]), reference["x64"])


def test_rejection_and_linear_algebra_samplers(reference):
    with _default_mode():
        _compare(_samplers_loops(fr, KEYS[1]), reference["loops"])


# --- keys ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "seed", [0, 42, -1, 2**31, 2**32 + 5, 2**40 + 3, -(2**63), 2**63 - 1, np.int32(-7)]
)
def test_prng_key_seeds(seed):
    same(fr.PRNGKey(seed), jr.PRNGKey(seed))


def test_seed_of_other_integer_types():
    for s in (np.uint32(2**32 - 1), np.int8(-1), np.uint64(2**64 - 1), np.int64(-5)):
        same(fr.PRNGKey(s), jr.PRNGKey(s))
    if hasattr(functx, "enable_x64"):  # (seeds canonicalize to int32 in the default mode)
        with _default_mode():
            same(fr.PRNGKey(2**40 - 3), jr.PRNGKey(2**40 - 3))


def test_typed_keys(reference):
    fk = fr.key(1234567)
    assert fk.shape == () and fk.ndim == 0 and str(fk.dtype) == str(jr.key(0).dtype)
    same(fr.key_data(fk), KEYS[1])
    fs = fr.split(fk)
    assert isinstance(fs, fr.KeyArray) and fs.shape == (2,) and len(fs) == 2
    same(fr.key_data(fs), reference["x32"]["split"])
    same(fr.key_data(fs[1]), reference["x32"]["split"][1])
    same(fr.key_data(fr.fold_in(fk, 7)), reference["x32"]["fold_in_7"])
    w = fr.wrap_key_data(reference["x32"]["split"])
    same(np.asarray(w == fs), np.ones(2, bool))
    assert fr.key_impl(fk) == "threefry2x32" and "key<fry>" in repr(fk)
    with _default_mode():
        same(fr.uniform(fr.split(fk, 3)[0], (40,), F32), reference["x32"]["uniform_float32"])
    # a pytree with one leaf: through vmap and tree_util (and jit: test_jit_...)
    got = functx.vmap(lambda k: fr.bits(k, (2,), np.uint32))(fs)
    same(got, np.stack([fr.bits(fr.key_data(fs)[i], (2,), np.uint32) for i in range(2)]))
    assert len(functx.tree_util.tree_leaves(fs)) == 1


@settings(max_examples=10, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=3), seed=st.integers(0, 2**32 - 1))
def test_bits_are_indexed_by_flat_position(shape, seed):
    # jax_threefry_partitionable: element i of any shape hashes counter i, so reshaping commutes
    # with sampling (JAX's documented property; the fixed cases above tie it to JAX's bits)
    k, shape = fr.PRNGKey(seed), tuple(shape)
    n = int(np.prod(shape))
    same(fr.bits(k, shape, np.uint32), np.asarray(fr.bits(k, (n,), np.uint32)).reshape(shape))
    same(fr.uniform(k, shape, F32), np.asarray(fr.uniform(k, (n,), F32)).reshape(shape))


# --- the threefry2x32 primitive ----------------------------------------------------------------
def test_threefry_primitive():
    rng = np.random.default_rng(0)
    words = [rng.integers(0, 2**32, (6,), dtype=np.uint32) for _ in range(4)]
    want = [np.asarray(w) for w in jax_threefry2x32_p.bind(*words)]
    for got_w, want_w in zip(threefry2x32(*words), want):
        same(got_w, want_w)
    # scalars broadcast; vmap over any operands, against a loop of examples
    s = [w[0] for w in words]
    for in_axes in [(None, None, 0, 0), (0, None, None, 0), (0, 0, 0, 0), (None, 0, None, None)]:
        args = [w if a == 0 else x for w, x, a in zip(words, s, in_axes)]
        got = functx.vmap(threefry2x32, in_axes=in_axes)(*args)
        for j in range(6):
            one = threefry2x32(*[a[j] if ax == 0 else a for a, ax in zip(args, in_axes)])
            for g, w in zip(got, one):
                same(np.asarray(g)[j], w)
    k2 = [np.broadcast_to(x, (6, 3)) for x in s[:2]]
    got = functx.vmap(threefry2x32, in_axes=(1, 1, None, None))(*k2, *words[2:])
    for g, w in zip(got, threefry2x32(*s[:2], *words[2:])):
        same(np.asarray(g)[0], w)
    with pytest.raises(TypeError, match="uint32"):
        threefry2x32_p.bind(np.int32(0), *s[1:])
    with pytest.raises(TypeError, match="equal shapes"):
        threefry2x32(words[0], words[1][:3], *s[2:])
    # jvp: the hash has integer outputs; a float function of its bits differentiates
    u = fr.uniform(KEYS[0], (), F32)
    _, t = functx.jvp(lambda x: x * fr.uniform(KEYS[0], (), F32), (F32(1.5),), (F32(1.0),))
    same(t, np.asarray(u))
    assert "threefry2x32" in str(functx.make_jaxpr(lambda k: fr.split(k))(KEYS[0]))


# --- traced: jit, vmap, scan, fori_loop ---------------------------------------------------------
def _program(k, typed):
    """Entries of ``_samplers_32`` in one jitted program, with keys split in a scan, folded in a
    fori_loop and hashed under vmap."""
    k1, k2, k3 = fr.split(k, 3)

    def step(c, _):
        kk, s = c
        kk, sub = fr.split(kk)
        return (kk, s + fr.uniform(sub, (), F32)), fr.randint(sub, (2,), 0, 9, np.int32)

    (kc, s), ys = functx.lax.scan(step, (k1, F32(0)), None, length=3)
    return {
        "split": fr.split(k),
        "fold_in_7": fr.fold_in(k, 7),
        "uniform_range_float32": fr.uniform(k2, (2, 20), F32, -2.0, 3.0),
        "randint_int32": fr.randint(k1, (30,), -3, 100, np.int32),
        "normal_float32": fr.normal(k1, (64,), F32),  # (XLA's log1p, log and erf_inv, compiled)
        "scan": (kc, s, ys),
        "fori": functx.lax.fori_loop(0, 3, lambda i, kk: fr.fold_in(kk, i), k2),
        "vmap": functx.vmap(lambda kk: fr.bits(kk, (2,), np.uint32))(fr.split(k, 3)),
        "typed": fr.split(typed),  # typed keys in and out of jit
    }


def test_jit_vmap_scan_give_jaxs_bits_in_compiled_code(reference):
    f = functx.jit(_program)
    with _default_mode():
        typed = fr.wrap_key_data(KEYS[1])
        got, eager = f(KEYS[1], typed), _program(KEYS[1], typed)
    want = reference["x32"]
    _compare({n: got[n] for n in got if n in want}, {n: want[n] for n in got if n in want})
    # the loops against the same steps run eagerly, one by one
    kk, s, ys = KEYS[1], F32(0), []
    kk = fr.split(kk, 3)[0]
    for _ in range(3):
        kk, sub = fr.split(kk)
        s, ys = s + fr.uniform(sub, (), F32), [*ys, fr.randint(sub, (2,), 0, 9, np.int32)]
    for g, w in zip(got["scan"], (kk, s, np.stack(ys))):
        same(g, w)
    kf = fr.split(KEYS[1], 3)[1]
    for i in range(3):
        kf = fr.fold_in(kf, i)
    same(got["fori"], kf)
    same(got["vmap"], np.stack([fr.bits(kk, (2,), np.uint32) for kk in fr.split(KEYS[1], 3)]))
    for n in got:
        for g, e in zip(
            functx.tree_util.tree_leaves(got[n]), functx.tree_util.tree_leaves(eager[n])
        ):
            same(g, e)
    assert isinstance(got["typed"], fr.KeyArray)
    same(fr.key_data(got["typed"]), want["split"])
    # the hash runs in the compiled kernels (its key-schedule constant is in the C++ source)
    src = functx.jit(fr.split).lower(KEYS[1]).as_text()
    assert "threefry2x32" in src and str(threefry_module.PARITY) in src


# --- errors: JAX's exception classes -------------------------------------------------------------
ERRORS = [
    ("batched key", lambda r: r.uniform(np.zeros((2, 2), np.uint32))),
    ("split batched", lambda r: r.split(np.zeros((2, 2), np.uint32))),
    ("key dtype", lambda r: r.uniform(np.zeros(2, np.int32))),
    ("key shape", lambda r: r.uniform(np.zeros(3, np.uint32))),
    ("uniform int dtype", lambda r: r.uniform(KEYS[0], (2,), np.int32)),
    ("normal int dtype", lambda r: r.normal(KEYS[0], (2,), np.int32)),
    ("randint float dtype", lambda r: r.randint(KEYS[0], (2,), 0, 3, np.float32)),
    ("bits signed", lambda r: r.bits(KEYS[0], (2,), np.int32)),
    ("fold_in array", lambda r: r.fold_in(KEYS[0], np.arange(2))),
    ("seed array", lambda r: r.PRNGKey(np.arange(2))),
    ("seed float", lambda r: r.PRNGKey(1.5)),
    ("seed too large", lambda r: r.PRNGKey(2**64)),
    ("bernoulli int p", lambda r: r.bernoulli(KEYS[0], np.int32(1))),
    ("bernoulli mode", lambda r: r.bernoulli(KEYS[0], 0.5, mode="x")),
    ("choice too many", lambda r: r.choice(KEYS[0], 3, (5,), replace=False)),
    ("choice p shape", lambda r: r.choice(KEYS[0], 3, (2,), p=np.ones(4))),
    ("choice shape int", lambda r: r.choice(KEYS[0], 3, 2)),
    ("permutation float", lambda r: r.permutation(KEYS[0], 3.0)),
    (
        "categorical too many",
        lambda r: r.categorical(KEYS[0], np.zeros(3), shape=(4,), replace=False),
    ),
    ("gumbel mode", lambda r: r.gumbel(KEYS[0], mode="bad")),
    ("truncated int dtype", lambda r: r.truncated_normal(KEYS[0], -1, 1, dtype=np.int32)),
    ("wrap bad data", lambda r: r.wrap_key_data(np.zeros(3, np.uint32))),
    ("typed seed", lambda r: r.key(r.key(0))),
]


@pytest.mark.parametrize("name,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_have_jaxs_classes(name, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as want:
            fn(jr)
        with pytest.raises(Exception) as got:
            fn(fr)
    for cls in (TypeError, ValueError, OverflowError):
        assert isinstance(got.value, cls) == isinstance(want.value, cls), (got.value, want.value)


# --- docstrings ---------------------------------------------------------------------------------
def test_docstring_examples_run():
    """The private modules' and names' examples (tests/test_docstrings.py runs every public
    name's, functx.random's included)."""
    result = doctest.testmod(threefry_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
    finder, runner = (
        doctest.DocTestFinder(),
        doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE),
    )
    for test in finder.find(fr._RandomGammaPrimitive, "_RandomGammaPrimitive", globs={}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


def test_sampler_docstrings_name_each_argument_once():
    """``_documented`` writes each argument of the signature, in its order, from the meanings it is
    given or the shared ones, and refuses a meaning missing or for no argument."""
    for name in ("uniform", "randint", "categorical", "multinomial"):
        fn = getattr(fr, name)
        args = fn.__doc__.split("Arguments:")[1].split("Returns:")[0]
        named = [line.split(":")[0].strip() for line in args.splitlines() if ": " in line]
        assert named == list(inspect.signature(fn).parameters), name
    doc = fr._documented("Samples.", call="(2,)", prints="[0 1]", lam="a rate.")
    assert "lam: a rate." in doc(lambda key, lam, shape=None: None).__doc__
    with pytest.raises(TypeError, match=r"no meaning for \['lam'\]"):
        fr._documented("Samples.", call="(2,)", prints="[0 1]")(lambda key, lam: None)
    with pytest.raises(TypeError, match=r"meanings of \['mu'\]"):
        fr._documented("Samples.", call="(2,)", prints="[0 1]", mu="a mean.")(lambda key: None)


@pytest.mark.usefixtures("no_x64")
def test_grad_through_exact_samplers_in_the_default_mode():
    """The exact samplers compute in float64 inside an x64 block; a transform that re-traces their
    Jaxpr with x64 off (grad's constant folding) must keep those values 64-bit."""

    def f(scale, key):
        return functx.numpy.sum(functx.numpy.exp(scale) * functx.random.normal(key, (4, 2)))

    key = functx.random.PRNGKey(0)
    value, g = functx.value_and_grad(f)(functx.numpy.zeros(2), key)
    z = np.asarray(functx.random.normal(key, (4, 2)))
    assert g.dtype == np.float32
    np.testing.assert_allclose(np.asarray(g), z.sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose(float(value), z.sum(), rtol=1e-6)


def test_random_gamma_p_binds_jaxs_sampler(reference):
    """``random_gamma_p.bind(key, a, log_space=)``: JAX's gamma bits (the reference program's
    ``gamma``), loggamma's with ``log_space=True``."""
    a = _GAMMA_A
    with _default_mode():
        k1 = fr.split(KEYS[1])[0]
        same(fr.random_gamma_p.bind(k1, a, log_space=False), reference["loops"]["gamma"])
        same(fr.random_gamma_p.bind(fr.wrap_key_data(k1), a), reference["loops"]["gamma"])
        same(fr.random_gamma_p.bind(k1, a, log_space=True), fr.loggamma(k1, a, None, F32))
    assert fr.random_gamma_p.name == jr.random_gamma_p.name


@settings(max_examples=5, deadline=None)
@given(log_a=st.lists(st.floats(-9.0, 14.0), min_size=_GAMMA_A.size, max_size=_GAMMA_A.size))
def test_float32_gamma_bits_for_any_shape(log_a):
    """float32 ``gamma`` gives JAX's bits for shapes from 1e-4 to 1e6: below 1 boosted, tiny
    samples flushed to zero as XLA's CPU code does, the Marsaglia-Tsang constant through XLA's
    float32 ``rsqrt`` (functx.lowering.cpp.hostmath). JAX's compiled reference program runs
    again with the drawn shapes as its argument (no new compile)."""
    a = np.exp(np.asarray(log_a)).astype(F32)
    with _default_mode():
        _, want = _jax_programs_32()(KEYS[1], np.array([3.0, 2.0, -1.5], F32), a, _POISSON_LAM)
        same(fr.gamma(fr.split(KEYS[1])[0], a, None, F32), want["gamma"])


def test_float32_ball_bits_mvn_within_its_bound_and_orthogonal_bits():
    """float32 ``ball`` with p=2 gives JAX's bits (d=1 and 3: ``p`` is an argument of JAX's
    compiled sampler, as in an eager ``jax.random.ball`` call and JAX's own tests, so XLA calls
    libm's ``powf`` for ``|g| ** p`` and ``** (1 / p)``, which functx's ``pow`` calls too), and so
    does float32 ``orthogonal`` (LAPACK's sgeqrf/sorgqr, as JAX). ``multivariate_normal`` in 4+
    dimensions with a batch (XLA's dot order) is within 2 eps of |mean| + |L| |z|, the bound
    docs/differences.md states.

    JAX's values are computed here (one ``jax.jit`` of the samplers, x64 off)."""
    cov = (np.eye(5) + 0.3).astype(F32)
    mean = np.linspace(-1, 1, 5).astype(F32)
    balls = ((1, (300,)), (3, (10, 30)))

    def samplers(r, key, p2):
        k1, k2, k3 = r.split(key, 3)
        out = {
            "orthogonal": r.orthogonal(k2, 6, (3,), F32),
            "multivariate_normal": r.multivariate_normal(k3, mean, cov, (20,), F32),
        }
        for d, shape in balls:
            out[f"ball_{d}"] = r.ball(k1, d, p2, shape, F32)
        return out

    with _default_mode():
        want = jax.jit(lambda k, p2: samplers(jr, k, p2))(KEYS[0], 2)
        want = {k: np.asarray(v) for k, v in want.items()}
        got = {k: np.asarray(v) for k, v in samplers(fr, KEYS[0], 2).items()}
        z = np.asarray(fr.normal(fr.split(KEYS[0], 3)[2], (20, 5), F32))  # (JAX's bits)
    mvn = got.pop("multivariate_normal")
    _compare(got, {k: v for k, v in want.items() if k != "multivariate_normal"})
    eps = float(np.finfo(F32).eps)
    scale = np.abs(mean) + np.abs(z) @ np.abs(np.linalg.cholesky(cov.astype(F64))).T
    assert (np.abs(mvn - want["multivariate_normal"]) / scale).max() <= 2 * eps
