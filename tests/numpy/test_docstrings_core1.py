"""The docstring examples of functx.numpy's elementwise functions and array conversion
(functx/numpy/_core.py, its first part: asarray to logaddexp2) run and print what they show."""

import doctest

import functx.numpy as fjnp

NAMES = """
result_type asarray broadcast_to broadcast_arrays
sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh
exp exp2 expm1 log log1p sqrt cbrt negative positive abs sign floor ceil trunc rint round
square reciprocal log2 log10 deg2rad rad2deg isfinite isnan isinf isposinf isneginf signbit
arctan2 nextafter equal not_equal add multiply subtract true_divide floor_divide remainder fmod
divmod power float_power maximum minimum greater greater_equal less less_equal fmax fmin hypot
copysign logaddexp logaddexp2
""".split()

ALIASES = {
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
    "acosh": "arccosh", "atanh": "arctanh", "absolute": "abs", "fix": "trunc",
    "around": "round", "radians": "deg2rad", "degrees": "rad2deg", "atan2": "arctan2",
    "divide": "true_divide", "mod": "remainder", "pow": "power",
}  # fmt: skip


def test_examples_run():
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    finder = doctest.DocTestFinder()
    for name in NAMES:
        fn = getattr(fjnp, name)
        doc = fn.__doc__ or ""
        assert all(k in doc for k in ("Arguments:", "Returns:", "Example:")), name
        assert f"jax.numpy.{name}" in doc, name
        (case,) = finder.find(fn, name, globs={})
        assert case.examples, name
        runner.run(case)
    assert runner.failures == 0
    assert runner.tries >= len(NAMES)


def test_aliases_share_the_docstring():
    for alias, name in ALIASES.items():
        assert getattr(fjnp, alias) is getattr(fjnp, name), alias
