"""functx.memory.Space against jax.memory.Space."""

from __future__ import annotations

import jax

from functx import memory


def test_space_as_jax():
    assert [(s.name, s.value) for s in memory.Space] == [
        (s.name, s.value) for s in jax.memory.Space
    ]
    for s in memory.Space:
        theirs = jax.memory.Space[s.name]
        assert repr(s) == repr(theirs) and str(s) == str(theirs)
        assert memory.Space(s.value) is s
