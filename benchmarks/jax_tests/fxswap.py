"""What JAX's test files see in place of JAX's public modules (imported by the rewritten files).

The harness (``run.py``) rewrites every import statement of a public JAX module in a test file
(``import jax``, ``import jax.numpy as jnp``, ``from jax import lax``, ``from jax.errors import
...``) into a call of this module, which answers with the functx module or name of the same
path (``jax`` -> ``functx``, ``jax.numpy`` -> ``functx.numpy``, ...). A module or name that
functx lacks becomes a ``Missing`` stand-in, so the file still imports and only the cases that
use it fail, with an AttributeError naming it (the report counts them as missing names).

Imports from ``jax._src`` (``test_util``, ``config``, ``dtypes``, ``core``, ...) are left as
they are: the tests' utilities, random-input makers, tolerances and dtype tables stay JAX's.
``install()`` then points the few utilities that run JAX transformations on the function
under test at functx instead (``check_grads`` and
``JaxTestCase._CompileAndCheck``); see docs/jax_tests.md.
"""

import functools
import importlib
import inspect
import types

import numpy as np

# While pytest collects (the test classes' bodies build their parameter lists with JAX's names),
# a missing name must not stop the whole file: a stand-in takes its place and fails the cases
# that use it. Once collection ends (conftest sets this False) a missing name raises at once.
collecting = True


class Missing:
    """Stands for a JAX module or name that functx lacks; using it raises AttributeError
    (during collection, calls and attributes give more stand-ins, iteration nothing)."""

    def __init__(self, path):
        self._path = path
        self.__name__ = path.rpartition(".")[2]  # (test specs name their cases after ops)

    def _fail(self):
        raise AttributeError(f"functx lacks {self._path}")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if collecting:
            return Missing(f"{self._path}.{name}")
        self._fail()

    def __call__(self, *args, **kwargs):
        if collecting:
            if len(args) == 1 and not kwargs and inspect.isfunction(args[0]):
                # a missing decorator: the case keeps its name and fails when it runs
                fn, path = args[0], self._path

                @functools.wraps(fn)
                def fails(*a, **k):
                    raise AttributeError(f"functx lacks {path}")

                return fails
            return Missing(self._path)
        self._fail()

    def __iter__(self):
        if collecting:
            return iter(())
        self._fail()

    def __array__(self, *args, **kwargs):
        self._fail()

    def __repr__(self):
        return f"<missing {self._path}>"


class Swapped:
    """A functx module seen under its JAX path; its submodules are wrapped alike."""

    def __init__(self, mod, path):
        object.__setattr__(self, "_mod", mod)
        object.__setattr__(self, "_path", path)

    def __getattr__(self, name):
        try:
            value = getattr(self._mod, name)
        except AttributeError as missing:
            try:
                value = importlib.import_module(f"{self._mod.__name__}.{name}")
            except ImportError:
                if collecting:
                    return _jax_dtype(self._path, name) or Missing(f"{self._path}.{name}")
                raise missing from None
        if isinstance(value, types.ModuleType) and value.__name__.startswith("functx"):
            return Swapped(value, f"{self._path}.{name}")
        return value

    def __setattr__(self, name, value):
        setattr(self._mod, name, value)

    def __dir__(self):
        return dir(self._mod)

    def __repr__(self):
        return f"<functx module {self._mod.__name__} as {self._path}>"


def _jax_dtype(path, name):
    """A dtype name functx lacks (``jnp.int4``, ``jnp.float8_e4m3fn``, ...) is JAX's own scalar
    type while the test classes build their dtype lists; the cases drawing it then hand functx
    data of that dtype and fail there."""
    try:
        real = getattr(importlib.import_module(path), name)
    except (ImportError, AttributeError):
        return None
    if isinstance(real, np.dtype) or (
        isinstance(real, type) and isinstance(getattr(real, "dtype", None), np.dtype)
    ):
        return real
    return None


def _functx_path(path):
    assert path == "jax" or path.startswith("jax."), path
    return "functx" + path[3:]


def module(path):
    """The functx module for the JAX module ``path`` (``"jax.numpy"``), or a ``Missing``."""
    try:
        return Swapped(importlib.import_module(_functx_path(path)), path)
    except ImportError:
        pass
    # Not a module of functx: maybe a name in its parent (``jax.custom_derivatives``).
    parent, _, leaf = path.rpartition(".")
    if parent:
        obj = module(parent)
        if not isinstance(obj, Missing):
            try:
                return getattr(obj, leaf)
            except AttributeError:
                pass
    return Missing(path)


def attr(path, name):
    """``from <path> import <name>`` answered by functx."""
    mod = module(path)
    if isinstance(mod, Missing):
        return Missing(f"{path}.{name}")
    try:
        return getattr(mod, name)
    except AttributeError:
        return Missing(f"{path}.{name}")


def parse_jax_flags():
    """``jax.config.parse_flags_with_absl()`` of the test files, done by JAX's own config."""
    import jax

    jax.config.parse_flags_with_absl()


def _compile_and_check(
    self, fun, args_maker, *, check_dtypes=True, tol=None, rtol=None, atol=None, **_
):
    """JAX's ``_CompileAndCheck`` contract with functx.jit: eager and jitted results agree,
    and the second call of the jitted function does not run the Python function again."""
    import functx

    args = args_maker()
    running = [True]

    def wrapped(*a):
        self.assertTrue(running[0], "the jitted function ran Python on a cached call")
        return fun(*a)

    expected = fun(*args)
    self.assertEqual(
        functx.tree_util.tree_map(np.shape, expected),
        functx.tree_util.tree_map(lambda x: np.shape(np.asarray(x)), expected),
    )
    cfun = functx.jit(wrapped)
    first = cfun(*args)
    running[0] = False
    second = cfun(*args)
    kw = dict(check_dtypes=check_dtypes, atol=atol or tol, rtol=rtol or tol)
    self.assertAllClose(first, expected, **kw)
    self.assertAllClose(second, expected, **kw)
    args = args_maker()
    running[0] = True
    expected = fun(*args)
    running[0] = False
    self.assertAllClose(cfun(*args), expected, **kw)


def install():
    """Point JAX's test utilities that transform the function under test at functx."""
    from jax._src import public_test_util, test_util

    import functx
    import functx.test_util as ftu

    # (check_jvp/check_vjp take other arguments in JAX and functx: only check_grads is swapped)
    test_util.check_grads = public_test_util.check_grads = ftu.check_grads
    test_util.JaxTestCase._CompileAndCheck = _compile_and_check
    # JAX's promote_like_jnp wraps the NumPy reference of a test: it promotes the arguments with
    # JAX's own lax, which cannot read functx Arrays (the test files of 0.11 hand jnp arrays to
    # the reference too): the reference gets NumPy copies of them first.
    promote = test_util.promote_like_jnp

    def promote_like_jnp(fun, inexact=False):
        inner = promote(fun, inexact)

        def wrapper(*args, **kw):
            args = functx.tree_util.tree_map(
                lambda a: np.asarray(a) if isinstance(a, functx.Array) else a, args
            )
            return inner(*args, **kw)

        return wrapper

    test_util.promote_like_jnp = promote_like_jnp
    # Both libraries start with JAX's x64 setting (JAX_ENABLE_X64 in the environment).
    from jax._src import config as jax_config

    functx.config.update("jax_enable_x64", bool(jax_config.enable_x64.value))
