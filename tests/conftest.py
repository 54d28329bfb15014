"""Shared test setup: JAX (the reference) runs with float64 enabled so float64 inputs stay float64;
hypothesis runs a small, deterministic number of examples so the suite stays inside its budget."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("JAX_PLATFORMS", "cpu")

try:
    import jax

    jax.config.update("jax_enable_x64", True)
except ImportError:  # pragma: no cover - jax is a test dependency
    jax = None

settings.register_profile(
    "functx", max_examples=15, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("FUNCTX_HYPOTHESIS_PROFILE", "functx"))


@pytest.fixture
def rng():
    return np.random.default_rng(0)
