"""The docstring examples of functx.numpy's logical, bitwise, reduction, shape, joining and
product functions (functx/numpy/_core.py, its second part: sinc to kron) run and print what
they show, and each names the JAX function it mirrors."""

import doctest

import pytest

import functx.numpy as fjnp

NAMES = """
sinc heaviside nan_to_num logical_and logical_or logical_xor logical_not
bitwise_and bitwise_or bitwise_xor invert
sum prod max min any all mean var std average argmax argmin count_nonzero ptp
cumsum cumprod cumulative_sum cumulative_prod
shape ndim size ravel transpose matrix_transpose moveaxis swapaxes squeeze expand_dims
atleast_1d atleast_2d atleast_3d concatenate concat stack vstack hstack dstack column_stack
split array_split vsplit hsplit tile repeat flip fliplr flipud roll pad take take_along_axis
diagonal diag trace meshgrid matmul dot vdot vecdot inner outer tensordot kron
""".split()

# Other public names bound to the same function objects (their docstring is the one above).
ALIASES = {
    "bitwise_not": "invert", "bitwise_invert": "invert", "amax": "max", "amin": "min",
    "permute_dims": "transpose", "row_stack": "vstack",
}  # fmt: skip

SAME_IN_LINALG = ["matrix_transpose", "matmul", "vecdot", "outer", "tensordot"]


def test_examples_run_and_print_what_they_show():
    runner = doctest.DocTestRunner()
    finder = doctest.DocTestFinder()
    for name in NAMES:
        fn = getattr(fjnp, name)
        doc = fn.__doc__ or ""
        for section in ("Arguments:", "Returns:", "Example:"):
            assert section in doc, (name, section)
        assert f"``jax.numpy.{name}``" in doc, name
        (case,) = finder.find(fn, name, globs={})
        assert case.examples, name
        runner.run(case)
    assert runner.failures == 0
    assert runner.tries >= len(NAMES)


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_aliases_are_the_documented_function(alias):
    assert getattr(fjnp, alias) is getattr(fjnp, ALIASES[alias])


def test_linalg_names_are_the_documented_functions():
    for name in SAME_IN_LINALG:
        assert getattr(fjnp.linalg, name) is getattr(fjnp, name), name
