"""Errors as JAX raises them (issue 18, item 7): a table of common mistakes, each run with JAX and
with functx. Where JAX raises, functx raises a ``FunctxError`` that is also an instance of the
builtin class JAX's exception is (TypeError, ValueError, IndexError, ...); where JAX accepts the
call (size-1 broadcasting in ``lax`` binary ops, clamped static indices, a non-array argument
outside ``argnums``), functx gives the same values. Also: a JAX name functx lacks raises an
AttributeError that says so and points to docs/differences.md."""

from __future__ import annotations

import importlib
import importlib.util
import pathlib
import textwrap
import warnings

import jax
import numpy as np
import pytest

import functx
from functx._jax_names import JAX_NAMES
from functx.errors import FunctxAttributeError, FunctxError

F = np.float32
A23 = np.ones((2, 3), F)
A34 = np.ones((3, 4), F)
A3 = np.ones(3, F)
A2 = np.ones(2, F)
I3 = np.arange(3, dtype=np.int32)
ROOT = pathlib.Path(__file__).resolve().parents[1]


class _Obj:
    """Not an array and not a pytree: JAX passes it to the function when not differentiated."""

    k = 3.0


def _leak(m):
    leaked = []
    m.make_jaxpr(lambda x: leaked.append(x) or x)(A3)  # (traced, not compiled)
    return leaked[0]


def _cases(m):
    jnp, lax = m.numpy, m.lax

    def grad_nonscalar():
        return m.grad(lambda x: x * 2)(A3)

    return {
        "lax.add shape": lambda: lax.add(A23, A34),
        "lax.add dtype": lambda: lax.add(A3, I3),
        "lax.add rank": lambda: lax.add(A3, A23),
        "lax.add size1": lambda: lax.add(np.ones((1, 3), F), A23),
        "lax.mul size1 both": lambda: lax.mul(np.ones((2, 1), F), np.ones((1, 3), F)),
        "lax.sub scalar-array": lambda: lax.sub(A3, F(1)),
        "lax.dot_general contract": lambda: lax.dot_general(A23, A23, (((1,), (0,)), ((), ()))),
        "lax.dot_general dtypes": lambda: lax.dot_general(A23, I3, (((1,), (0,)), ((), ()))),
        "lax.dot_general f16 i16": lambda: lax.dot_general(
            A3.astype(np.float16), I3.astype(np.int16), (((0,), (0,)), ((), ()))
        ),
        "lax.reshape size": lambda: lax.reshape(A23, (4,)),
        "lax.concatenate shape": lambda: lax.concatenate([A23, A34], 0),
        "lax.concatenate dim": lambda: lax.concatenate([A23, A23], 2),
        "lax.concatenate dtype": lambda: lax.concatenate([A3, I3], 0),
        "lax.broadcast_in_dim": lambda: lax.broadcast_in_dim(A3, (2, 4), (1,)),
        "lax.transpose perm": lambda: lax.transpose(A23, (0, 0)),
        "lax.slice oob": lambda: lax.slice(A3, (0,), (5,)),
        "lax.select pred dtype": lambda: lax.select(A3, A3, A3),
        "lax.convert bad dtype": lambda: lax.convert_element_type(A3, "foo"),
        "jnp.sum bad axis": lambda: jnp.sum(A23, axis=2),
        "jnp.sum float axis": lambda: jnp.sum(A23, axis=1.0),
        "jnp.reshape bad size": lambda: jnp.reshape(A23, (4, 2)),
        "jnp.reshape two -1": lambda: jnp.reshape(A23, (-1, -1)),
        "jnp.concatenate shape": lambda: jnp.concatenate([A23, A34]),
        "jnp.concatenate axis": lambda: jnp.concatenate([A23, A23], axis=3),
        "jnp.add broadcast": lambda: jnp.add(A23, np.ones((4,), F)),
        "jnp.matmul shape": lambda: jnp.matmul(A23, A23),
        "jnp.dot shape": lambda: jnp.dot(A23, A23),
        "jnp.transpose axes": lambda: jnp.transpose(A23, (0, 2)),
        "jnp.squeeze non1": lambda: jnp.squeeze(A23, 0),
        "jnp.expand_dims axis": lambda: jnp.expand_dims(A23, 5),
        "jnp.stack shapes": lambda: jnp.stack([A2, A3]),
        "jnp.zeros negative": lambda: jnp.zeros((-1,)),
        "jnp.arange zero step": lambda: jnp.arange(0, 3, 0),
        "jnp.where one arg x": lambda: jnp.where(A3 > 0, A3),
        "jnp.take bad mode": lambda: jnp.take(A3, I3, mode="bogus"),
        "jnp.einsum bad": lambda: jnp.einsum("ij,jk->ik", A23, A23),
        "jnp.array ragged": lambda: jnp.array([[1, 2], [3]]),
        "jnp.array str": lambda: jnp.array("abc"),
        "index oob static": lambda: jnp.arange(10)[11],
        "index oob neg static": lambda: jnp.arange(10)[-11],
        "index too many": lambda: jnp.ones((2, 3))[0, 0, 0],
        "index float": lambda: jnp.ones(3)[1.0],
        "index oob 2d": lambda: jnp.ones((2, 3))[5, 1],
        "index slice step0": lambda: jnp.ones(3)[::0],
        "at set oob": lambda: jnp.ones(3).at[5].set(2.0),
        "jit bool": lambda: m.jit(lambda x: 1 if x > 0 else 2)(F(1)),
        "jit int": lambda: m.jit(lambda x: int(x))(F(1)),
        "jit bool mask": lambda: m.jit(lambda x: x[x > 0])(A3),
        "escaped tracer": lambda: _leak(m) + 1.0,
        "jit static unhashable": lambda: m.jit(lambda x, y: x, static_argnums=1)(A3, [1]),
        "jit not callable": lambda: m.jit(3),
        "grad nonscalar": grad_nonscalar,
        "grad int input": lambda: m.grad(lambda x: x * 2)(3),
        "grad int array": lambda: m.grad(lambda x: (x * 2).sum())(I3),
        "grad non-array arg outside argnums": lambda: m.grad(lambda x, s: x * len(s))(F(1), "abc"),
        "grad non-array arg in argnums": lambda: m.grad(lambda x, s: x)(F(1), "abc") and None,
        "grad function arg": lambda: m.grad(lambda x, f: f(x))(F(2), jnp.sin),
        "grad object arg": lambda: m.grad(lambda x, o: x * o.k)(F(2), _Obj()),
        "grad str kwarg": lambda: m.grad(lambda x, s="a": x * len(s))(F(2), s="abc"),
        "value_and_grad object arg": lambda: m.value_and_grad(lambda x, o: x * o.k)(F(2), _Obj()),
        "grad object in argnums": lambda: m.grad(lambda x, o: x * o.k, argnums=1)(F(2), _Obj()),
        "vjp object arg": lambda: m.vjp(lambda x, o: x * o.k, F(2), _Obj()),
        "grad argnums oob": lambda: m.grad(lambda x: x, argnums=2)(F(1)),
        "grad has_aux not pair": lambda: m.grad(lambda x: x, has_aux=True)(F(1)),
        "vjp ct shape": lambda: m.vjp(lambda x: x * 2, A3)[1](A2),
        "jvp shape mismatch": lambda: m.jvp(lambda x: x, (A3,), (A2,)),
        "jvp dtype mismatch": lambda: m.jvp(lambda x: x, (A3,), (A3.astype(np.float16),)),
        "vmap size mismatch": lambda: m.vmap(lambda x, y: x + y)(A2, A3),
        "vmap axis oob": lambda: m.vmap(lambda x: x, in_axes=2)(A23),
        "vmap scalar": lambda: m.vmap(lambda x: x)(F(1)),
        "scan length mismatch": lambda: lax.scan(lambda c, x: (c, x), F(0), A3, length=4),
        "scan carry mismatch": lambda: lax.scan(lambda c, x: (A2, x), F(0), A3),
        "scan xs leading mismatch": lambda: lax.scan(lambda c, x: (c, x), F(0), (A3, A2)),
        "cond branch mismatch": lambda: lax.cond(True, lambda x: x, lambda x: A2, A3),
        "cond branch dtype": lambda: lax.cond(True, lambda x: x, lambda x: x.astype(np.int32), A3),
        "cond pred shape": lambda: lax.cond(A3 > 0, lambda x: x, lambda x: x, A3),
        "while carry mismatch": lambda: lax.while_loop(lambda c: c < 3, lambda c: A2, F(0)),
        "while cond nonbool": lambda: lax.while_loop(lambda c: c, lambda c: c, F(0)),
        "fori_loop body mismatch": lambda: lax.fori_loop(0, 3, lambda i, c: A2, F(0)),
        "switch index float": lambda: lax.switch(F(0), [lambda x: x], A3),
        "dynamic_slice size": lambda: lax.dynamic_slice(A3, (0,), (5,)),
        "jnp.split unequal": lambda: jnp.split(A3, 2),
        "astype bad": lambda: A3.astype("foo") if False else jnp.asarray(A3).astype("foo"),
        "len 0d": lambda: len(jnp.asarray(F(1))),
        "iter 0d": lambda: list(jnp.asarray(F(1))),
        "setitem": lambda: jnp.ones(3).__setitem__(0, 1.0),
        "float of array": lambda: float(jnp.ones(3)),
        "int of float array index": lambda: [1, 2][jnp.asarray(F(1))],
        "make_jaxpr not callable": lambda: m.make_jaxpr(3),
        "eval_shape bad": lambda: m.eval_shape(lambda x: x, "abc"),
    }


NAMES = list(_cases(functx))
_BUILTIN = (TypeError, ValueError, IndexError, ZeroDivisionError, AttributeError, OverflowError)


def _builtin_classes(e):
    return [c for c in type(e).__mro__ if c.__module__ == "builtins" and issubclass(c, _BUILTIN)]


@pytest.mark.parametrize("name", NAMES)
def test_error_class_matches_jax(name):
    want_exc = ours_exc = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = _cases(jax)[name]()
        except Exception as e:  # noqa: BLE001 - the class is what we compare
            want_exc = e
        try:
            got = _cases(functx)[name]()
        except Exception as e:  # noqa: BLE001
            ours_exc = e
    if want_exc is None:
        assert ours_exc is None, f"JAX accepts {name}; functx raised {ours_exc!r}"
        np.testing.assert_allclose(
            np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-6
        )
        return
    assert ours_exc is not None, f"JAX raises {type(want_exc).__name__} for {name}; functx did not"
    for cls in _builtin_classes(want_exc):
        assert isinstance(ours_exc, cls), (
            f"{name}: JAX raises {type(want_exc).__name__} (a {cls.__name__}); functx raised "
            f"{type(ours_exc).__name__}: {ours_exc}"
        )
    assert isinstance(ours_exc, (FunctxError, TypeError)), repr(ours_exc)


JAX_ERROR_CLASSES = [
    ("TracerBoolConversionError", lambda m: m.jit(lambda x: 1 if x > 0 else 2)(F(1))),
    ("TracerIntegerConversionError", lambda m: m.jit(lambda i: [1, 2][i])(np.int32(0))),
    ("TracerArrayConversionError", lambda m: m.jit(lambda x: np.asarray(x))(A3)),
    ("ConcretizationTypeError", lambda m: m.jit(lambda x: int(x))(F(1))),
    ("NonConcreteBooleanIndexError", lambda m: m.jit(lambda x: x[x > 0])(A3)),
    ("UnexpectedTracerError", lambda m: _leak(m) + 1.0),
]


@pytest.mark.parametrize("name,fn", JAX_ERROR_CLASSES, ids=[c[0] for c in JAX_ERROR_CLASSES])
def test_jax_errors_names(name, fn):
    with pytest.raises(getattr(jax.errors, name)):
        fn(jax)
    with pytest.raises(getattr(functx.errors, name)):
        fn(functx)


# --- names JAX has and functx lacks ---------------------------------------------------------------
def test_missing_jax_name_says_not_implemented():
    with pytest.raises(FunctxAttributeError, match="not implemented") as info:
        _ = functx.lax.ragged_all_to_all
    assert isinstance(info.value, AttributeError)
    assert "jax.lax.ragged_all_to_all" in str(info.value) and "docs/differences.md" in str(
        info.value
    )
    assert not hasattr(functx, "cloud_tpu_init")
    with pytest.raises(AttributeError) as info:
        _ = functx.numpy.no_such_function
    assert type(info.value) is AttributeError
    assert str(info.value) == "module 'functx.numpy' has no attribute 'no_such_function'"


def test_name_table_covers_the_installed_jax():
    for jmod, names in JAX_NAMES.values():
        public = {n for n in dir(importlib.import_module(jmod)) if not n.startswith("_")}
        extra = public - set(names.split())
        assert not extra, f"{jmod} has names functx/_jax_names.py lacks: {sorted(extra)}"


_INTRO = """\
The JAX names functx lacks, by namespace, from JAX 0.10.2's public names (`functx/_jax_names.py`).
This section is generated: `python tests/test_errors_vs_jax.py` rewrites it from the installed
functx, and `tests/test_errors_vs_jax.py` fails when it is out of date."""


def _submodule(mod: str, name: str) -> bool:
    """Whether ``mod.name`` is a module of functx (imported or not: the list must not depend on
    what the process imported before)."""
    try:
        return importlib.util.find_spec(f"{mod}.{name}") is not None
    except (ImportError, ValueError):
        return False


def missing_names_section() -> str:
    """docs/differences.md's "Not implemented yet" section for the functx installed here."""
    parts = ["## Not implemented yet", "", _INTRO, ""]
    for mod, (jmod, names) in JAX_NAMES.items():
        try:
            have, note = vars(importlib.import_module(mod)), ""
        except ImportError:
            have, note = {}, " (the module does not exist yet)"
        names = names.split()
        missing = [n for n in names if n not in have and not _submodule(mod, n)]
        parts += [f"### `{mod}` (JAX's `{jmod}`){note}", ""]
        if missing:
            listed = textwrap.fill(", ".join(f"`{n}`" for n in missing), 100)
            parts += [f"{len(missing)} of {len(names)} names missing:", "", listed, ""]
        else:
            parts += [f"None missing (all {len(names)} names are there).", ""]
    return "\n".join(parts)


def _differences_parts():
    text = (ROOT / "docs" / "differences.md").read_text()
    head, sep, section = text.partition("## Not implemented yet")
    assert sep, "docs/differences.md lost its 'Not implemented yet' section"
    return head, sep + section


def test_differences_md_lists_exactly_the_missing_names():
    _, section = _differences_parts()
    assert section == missing_names_section(), (
        "docs/differences.md's missing-name list is out of date: run "
        "`python tests/test_errors_vs_jax.py` to rewrite it"
    )


if __name__ == "__main__":
    head, _ = _differences_parts()
    (ROOT / "docs" / "differences.md").write_text(head + missing_names_section())
