"""``raises_as_jax(call, jax_module, functx_module, cls)``: a bad call raises ``cls`` in JAX and,
in functx, a ``FunctxError`` that is also a ``cls`` (the builtin class JAX raises). Tests import it
as ``from errutil import raises_as_jax`` (tests/ is on the path for its conftest)."""

from __future__ import annotations

import pytest

from functx.errors import FunctxError


def raises_as_jax(call, jax_module, functx_module, cls):
    """``call(module)`` raises ``cls`` with JAX's module and a functx error of that class with
    functx's."""
    with pytest.raises(cls):
        call(jax_module)
    with pytest.raises(FunctxError) as info:
        call(functx_module)
    assert isinstance(info.value, cls), type(info.value)
