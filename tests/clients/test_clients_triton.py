"""The client programs' compiled steps on the Triton backend: for each program below, one of its
functions (a training step, a gradient, a vmapped loss) is jitted on a GPU array, which in CI is
Triton's CPU interpreter (the ``interpreted_gpu`` fixture), and compared with ``jax.jit`` of the
same function in the JAX version of the program: the same tree, dtypes, shapes and values to
the program's tolerances. Inputs are each program's own, at its small shapes; the whole
programs, eager parts included, run on the CPU in ``test_clients.py``.

The interpreter takes seconds per step (and JAX's compile of each reference more), so the suite
runs the two cheapest steps (``QUICK``); ``FUNCTX_TEST_CLIENT_STEPS=all`` runs every one (103 s
in one process at load 10 on the 2-core machine of session 33)."""

from __future__ import annotations

import os

import jax
import numpy as np
import pytest
from test_clients import PROGRAMS, _FreshConfig, compare, load_program

import functx

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (the interpreter's lanes)


def _key(m, seed):
    return m.random.PRNGKey(seed)


# program -> (its module -> (function, arguments)); the same code builds both libraries' calls
STEPS = {
    "fft_long_conv": lambda m: (
        m.grad(m.layer_loss, argnums=(0, 1)),
        (*m.random.normal(_key(m, 9), (3, 3, m.L)),),
    ),
    "gnn_segment_sum": lambda m: (
        m.grad(m.loss),
        (
            m.init(_key(m, 8)),
            m.random.normal(_key(m, 1), (m.N_NODES, m.F)),
            m.jnp.arange(m.N_NODES) % m.C,
        ),
    ),
    "sort_topk_losses": lambda m: (
        m.vmap(m.grad(m.total)),
        (*m.random.normal(_key(m, 4), (2, 3, 12)), m.jnp.ones((3, 12)).at[:, ::3].set(0.0)),
    ),
    "small_cnn": lambda m: (
        m.sgd_step,
        (m.init(_key(m, 11)), m.random.normal(_key(m, 2), (2, 8, 8, 2)), m.jnp.array([0, 2])),
    ),
    "newton_logreg_solve_x64": lambda m: (
        m.newton_step,
        (m.jnp.zeros(m.D), *m.data(_key(m, 0)), m.jnp.log(0.1)),
    ),
    "gp_marginal_likelihood": lambda m: (
        m.value_and_grad(m.neg_log_marginal),
        (
            {"log_ell": 0.0, "log_sf": 0.0, "log_sn": -1.0},
            m.jnp.linspace(-3.0, 3.0, 12),
            m.jnp.sin(m.jnp.linspace(-3.0, 3.0, 12)),
        ),
    ),
}


QUICK = ("fft_long_conv", "newton_logreg_solve_x64")
RUN = sorted(STEPS) if os.environ.get("FUNCTX_TEST_CLIENT_STEPS") == "all" else QUICK


@pytest.mark.parametrize("name", RUN)
def test_program_step_on_triton_gives_jax_results(name, interpreted_gpu):
    path = PROGRAMS / f"{name}.py"
    with _FreshConfig():
        m = load_program(path, with_functx=False)
        fn, args = STEPS[name](m)
        theirs = jax.tree_util.tree_map(np.asarray, jax.jit(fn)(*args))
    with _FreshConfig():
        m = load_program(path, with_functx=True)
        fn, args = STEPS[name](m)
        ours = functx.jit(fn)(*functx.device_put(args, interpreted_gpu))
        assert {leaf.device for leaf in functx.tree_util.tree_leaves(ours)} == {interpreted_gpu}
    compare(ours, theirs, getattr(m, "RTOL", 1e-5), getattr(m, "ATOL", 1e-6))
