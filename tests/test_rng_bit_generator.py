"""``lax.rng_bit_generator``, ``lax.RandomAlgorithm`` and ``lax.rng_uniform`` (functx/_rng.py)
against JAX 0.10.2 on the CPU: the bits and new keys of every algorithm, output dtype and key
kind (eager, one C++ program, vmap with JAX's batching rule), both x64 modes, the errors, and
``rng_uniform``'s contract (its values are fresh per call in JAX, so only types and ranges
compare). The Triton backend runs ``rng_bit_gen`` in tests/lowering/test_backend_suite.py.

JAX's values are computed once per test session (two ``jax.jit`` programs, x64 on)."""

from __future__ import annotations

import docutil
import jax
import jax.lax as jlax
import numpy as np
import pytest
from x64util import x64_off

import functx
import functx._rng as rng_module
import functx.lax as flax
from functx.errors import UnsupportedError

UNSIGNED = (np.uint8, np.uint16, np.uint32, np.uint64)
# (), odd sizes only (Threefry halves the longest), an even size after an odd one, a size-1 axis
SHAPES = ((), (3, 5), (3, 4, 1))
K32 = np.array([0x12345678, 0x9ABCDEF0, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32)  # counter carries
K64 = np.array([0xFEDCBA9876543210, 0xFFFFFFFFFFFFFFFD], np.uint64)


def _cases():
    """(algorithm, dtype, shape, key): Threefry (1) and Philox (2) for every shape with a
    uint32[4] key (narrow dtypes once each), 32/64-bit outputs with a uint64[2] key,
    RNG_DEFAULT (0: Philox on the CPU) and an empty shape."""
    out = [(a, dt, s, "k32") for a in (1, 2) for dt in UNSIGNED[2:] for s in SHAPES]
    out += [(a, np.uint8, (3, 5), "k32") for a in (1, 2)]  # (narrow: the 32-bit bits' low bits)
    out += [(a, np.uint16, (3, 4, 1), "k32") for a in (1, 2)]
    out += [(a, dt, s, "k64") for a in (1, 2) for dt in UNSIGNED[2:] for s in SHAPES[:2]]
    return out + [
        (0, np.uint32, (3, 5), "k32"),
        (0, np.uint64, (), "k64"),
        (1, np.uint8, (0, 3), "k32"),
    ]


def _all(lax_mod, keys):
    out = []
    for alg, dt, shape, key in _cases():
        out.append(lax_mod.rng_bit_generator(keys[key], shape, dt, lax_mod.RandomAlgorithm(alg)))
    return out


def _same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype)
    assert np.array_equal(got, want), (what, got.ravel()[:6], want.ravel()[:6])


VMAP_KEYS = np.arange(12, dtype=np.uint32).reshape(3, 4) * np.uint32(0x9E3779B9)
VMAP_CASES = ((0, 2), (1, 1))  # (in_axes, algorithm)


def _vmapped(lax_mod, vmap, ks):
    return [
        vmap(
            lambda k, a=alg: lax_mod.rng_bit_generator(
                k, (2, 3), np.uint32, lax_mod.RandomAlgorithm(a)
            ),
            in_axes=ax,
        )(ks if ax == 0 else ks.T)
        for ax, alg in VMAP_CASES
    ]


def _jax_reference():
    """JAX's keys and bits for every case and the vmapped ones (two jax.jit compiles)."""
    cases = jax.jit(lambda k: _all(jlax, k))({"k32": K32, "k64": K64})
    vm = jax.jit(lambda ks: _vmapped(jlax, jax.vmap, ks))(VMAP_KEYS)
    out = {}
    for i, (k, b) in enumerate(cases):
        out[f"key{i}"], out[f"bits{i}"] = np.asarray(k), np.asarray(b)
    for i, (k, b) in enumerate(vm):
        out[f"vmap_key{i}"], out[f"vmap_bits{i}"] = np.asarray(k), np.asarray(b)
    return out


@pytest.fixture(scope="module")
def jax_reference():
    return _jax_reference()


@pytest.fixture(scope="module")
def jax_bits(jax_reference):
    ref = jax_reference
    return [(ref[f"key{i}"], ref[f"bits{i}"]) for i in range(len(_cases()))]


def test_every_algorithm_dtype_and_key_eager(jax_bits):
    keys = {"k32": K32, "k64": K64}
    got = _all(flax, keys)
    for case, (fk, fb), (jk, jb) in zip(_cases(), got, jax_bits):
        _same(fk, jk, ("key", case))
        _same(fb, jb, ("bits", case))


def test_compiled_equals_jax(jax_bits):
    # one C++ program: both algorithms' 64-bit outputs from a uint64[2] key, narrow Threefry bits
    # (tests/lowering/test_backend_suite.py's rng_bit_gen compiles Philox with a uint32[4] key)
    picks = [
        i
        for i, c in enumerate(_cases())
        if c[1:] == (np.uint64, (3, 5), "k64") or c == (1, np.uint16, (3, 4, 1), "k32")
    ]
    cases = [_cases()[i] for i in picks]

    def f(k32, k64):
        keys = {"k32": k32, "k64": k64}
        return [
            flax.rng_bit_generator(keys[key], shape, dt, flax.RandomAlgorithm(alg))
            for alg, dt, shape, key in cases
        ]

    got = functx.jit(f)(K32, K64)
    assert len(got) == 3
    for i, (fk, fb) in zip(picks, got):
        _same(fk, jax_bits[i][0], ("jit key", _cases()[i]))
        _same(fb, jax_bits[i][1], ("jit bits", _cases()[i]))


def test_vmap_batches_as_jax(jax_reference):
    # JAX's rule: the first key draws every example's bits, and only it advances
    ref = jax_reference
    got = _vmapped(flax, functx.vmap, VMAP_KEYS)
    for i, (k, b) in enumerate(got):
        _same(k, ref[f"vmap_key{i}"], ("vmap key", VMAP_CASES[i]))
        _same(b, ref[f"vmap_bits{i}"], ("vmap bits", VMAP_CASES[i]))


def test_default_mode_truncates_uint64_with_jax_warning():
    with x64_off():
        with pytest.warns(UserWarning, match="uint64 requested in rng_bit_generator"):
            want = jlax.rng_bit_generator(K32, (3,), np.uint64)
        with pytest.warns(UserWarning, match="uint64 requested in rng_bit_generator"):
            got = flax.rng_bit_generator(K32, (3,), np.uint64)
        for g, w in zip(got, want):
            _same(g, w, "x64 off")


def test_errors_as_jax():
    for dt in (np.int32, np.float32, bool):
        for lax_mod in (jlax, flax):
            with pytest.raises(TypeError, match="unsupported dtype"):
                lax_mod.rng_bit_generator(K32, (3,), dt)
    for key in (K32.astype(np.int32), K32[:3], np.stack([K32, K32])):
        for lax_mod in (jlax, flax):
            with pytest.raises(AssertionError):
                lax_mod.rng_bit_generator(key, (3,))
    for lax_mod in (jlax, flax):
        with pytest.raises(TypeError):
            lax_mod.rng_bit_generator([1, 2, 3, 4], (3,))
        with pytest.raises(TypeError):
            lax_mod.rng_bit_generator(K32, (3.0,))
    with pytest.raises(TypeError):  # JAX: an MLIR error at lowering
        flax.rng_bit_generator(K32, (-1,))


def test_jaxpr_jvp_and_enum():
    jaxpr = functx.make_jaxpr(lambda k: flax.rng_bit_generator(k, 3))(K32)
    eqn = jaxpr.eqns[0]
    assert eqn.prim.name == "rng_bit_generator" and eqn.params["shape"] == (3,)
    assert str(eqn.params["algorithm"]) == "RNG_DEFAULT"
    tangent = np.zeros(4, functx.dtypes.float0)
    _, t = functx.jvp(lambda k: flax.rng_bit_generator(k, (2,))[1], (K32,), (tangent,))
    assert np.asarray(t).dtype == functx.dtypes.float0 and np.shape(t) == (2,)
    assert [(m.name, int(m)) for m in flax.RandomAlgorithm] == [
        (m.name, int(m)) for m in jlax.RandomAlgorithm
    ]


def test_rng_uniform_contract():
    for a, b in ((np.float32(-2), np.float32(3)), (np.int32(4), np.int32(9)), (0.0, 1.0)):
        want = jax.eval_shape(lambda: jlax.rng_uniform(a, b, (50,)))
        got = flax.rng_uniform(a, b, (50,))
        assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)
        v = np.asarray(got)
        assert v.min() >= a and v.max() < b
    first, second = flax.rng_uniform(0.0, 1.0, (8,)), flax.rng_uniform(0.0, 1.0, (8,))
    assert not np.array_equal(first, second)  # stateful, as JAX's
    for lax_mod in (jlax, flax):
        with pytest.raises(ValueError, match="must be scalars"):
            lax_mod.rng_uniform(np.zeros(2, np.float32), np.float32(1), (2,))
        with pytest.raises(ValueError, match="identical dtypes"):
            lax_mod.rng_uniform(np.float32(0), np.int32(1), (2,))
    with pytest.raises(UnsupportedError, match="rng_uniform"):
        functx.jit(lambda: flax.rng_uniform(np.float32(0), np.float32(1), (3,)))()


def test_docstrings():
    with x64_off():
        # (the public names' examples run in tests/test_docstrings.py; the module's others here)
        assert docutil.run(rng_module).failed == 0
