"""``functx.typing`` and ``functx.version`` against JAX's ``jax.typing`` and ``jax.version``: the
same names, the same values accepted by ``isinstance`` (traced values included), usable in
annotations."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import typing as ftyping

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

# (a value, the same value for JAX): what each library's isinstance must agree on
ARRAYLIKE = [
    (lambda m: m.numpy.ones(3)),
    (lambda m: np.ones(3)),
    (lambda m: np.float32(1)),
    (lambda m: np.bool_(True)),
    (lambda m: 1),
    (lambda m: 1.5),
    (lambda m: 2j),
    (lambda m: True),
    (lambda m: [1.0, 2.0]),
    (lambda m: (1,)),
    (lambda m: "abc"),
    (lambda m: None),
    (lambda m: m.numpy.float32),
]
DTYPELIKE = [
    "float32",
    np.float32,
    float,
    np.dtype("int8"),
    (lambda m: m.numpy.float32),
    (lambda m: m.numpy.ones(2)),
    3,
    None,
    [np.float32],
]


def test_the_names_are_jaxs():
    assert ftyping.__all__ == sorted(n for n in dir(jax.typing) if not n.startswith("_"))
    for name in ftyping.__all__:
        assert typing.get_origin(getattr(ftyping, name)) is typing.Union


def _isinstance(value, annotation):
    """``isinstance(value, annotation)``, or "TypeError" where Python refuses the check (a Union
    holding ``type[Any]``, as DTypeLike does, cannot check classes)."""
    try:
        return isinstance(value, annotation)
    except TypeError:
        return "TypeError"


@pytest.mark.parametrize("make", ARRAYLIKE)
def test_arraylike_isinstance_as_jax(make):
    assert _isinstance(make(functx), ftyping.ArrayLike) == _isinstance(
        make(jax), jax.typing.ArrayLike
    )


@pytest.mark.parametrize("value", DTYPELIKE)
def test_dtypelike_isinstance_as_jax(value):
    pair = (value(functx), value(jax)) if type(value).__name__ == "function" else (value, value)
    assert _isinstance(pair[0], ftyping.DTypeLike) == _isinstance(pair[1], jax.typing.DTypeLike)


def test_traced_values_are_arraylike_under_each_transform():
    seen = []

    def f(x):
        seen.append(isinstance(x, ftyping.ArrayLike))
        return x * 2.0

    functx.jit(f)(np.float32(1))
    functx.grad(f)(1.0)
    functx.vmap(f)(np.ones(2, np.float32))
    assert seen == [True, True, True]


def test_annotations_resolve():
    def half(x: ftyping.ArrayLike, dtype: ftyping.DTypeLike = "float32") -> functx.Array:
        return fnp.asarray(x, dtype) / 2

    hints = typing.get_type_hints(half)
    assert hints["x"] is ftyping.ArrayLike and hints["dtype"] is ftyping.DTypeLike
    np.testing.assert_array_equal(half([2.0, 4.0]), jnp.asarray([2.0, 4.0], "float32") / 2)


def test_version_as_jax_gives_its_own():
    import functx.version as fversion

    assert functx.__version__ == fversion.__version__
    assert functx.__version_info__ == fversion.__version_info__
    # the same kinds of values as JAX's: a dotted string and its numbers as a tuple of ints
    assert isinstance(jax.__version_info__, tuple) and isinstance(functx.__version_info__, tuple)
    assert all(type(v) is int for v in functx.__version_info__)
    assert ".".join(map(str, functx.__version_info__)) == functx.__version__
    assert jax.version.__version__ == jax.__version__
