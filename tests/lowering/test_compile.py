"""``functx/lowering/compile.py``: the cyclic garbage collector is held off while a program
compiles, re-enabled as it was afterwards, and what the compile allocated is moved to the oldest
generation unscanned, its garbage freed by a later full collection."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import functx
from functx.lowering import compile as fx_compile


class _Node:
    def __init__(self):
        self.me = self  # (a reference cycle: only the cyclic collector frees it)


@pytest.fixture
def fake_compile(monkeypatch):
    """``compile_jaxpr`` with a C++ compile that records the collector's state, leaves a cycle
    of garbage and keeps one live object (``seen``)."""
    seen = {}

    class Exe:
        pass

    def fake(closed):
        seen["enabled"] = gc.isenabled()
        seen["garbage"] = weakref.ref(_Node())
        seen["live"] = exe = Exe()
        if closed == "fail":
            raise RuntimeError("compile failed")
        return exe

    monkeypatch.setattr(fx_compile, "_compile_cpp", fake)
    monkeypatch.setitem(fx_compile._GC, "unscanned", 0)
    return seen


def test_the_collector_is_off_during_a_compile_and_its_objects_move_unscanned(fake_compile):
    assert gc.isenabled()
    gc.collect()
    exe = fx_compile.compile_jaxpr("program")
    assert fake_compile["enabled"] is False and gc.isenabled()
    assert gc.get_count()[0] < 50  # (no scan pending of what the compile allocated)
    assert any(o is exe for o in gc.get_objects(generation=2))
    assert fake_compile["garbage"]() is not None  # (kept until a full collection)
    gc.collect()
    assert fake_compile["garbage"]() is None


def test_a_failed_compile_re_enables_the_collector(fake_compile):
    with pytest.raises(RuntimeError, match="compile failed"):
        fx_compile.compile_jaxpr("fail")
    assert fake_compile["enabled"] is False and gc.isenabled()


def test_a_disabled_collector_and_frozen_objects_are_left_as_they_were(fake_compile):
    gc.disable()
    try:
        fx_compile.compile_jaxpr("program")
        assert not gc.isenabled() and fake_compile["garbage"]() is not None
    finally:
        gc.enable()
    gc.collect()
    frozen = [_Node() for _ in range(3)]
    gc.freeze()
    try:
        count = gc.get_freeze_count()
        exe = fx_compile.compile_jaxpr("program")
        # (not unfrozen: the count is what it was, less what the compile freed)
        assert count - 100 < gc.get_freeze_count() <= count and gc.isenabled()
        assert not any(o is exe for o in gc.get_objects(generation=2))
    finally:
        gc.unfreeze()
    del frozen


def test_past_the_bound_a_compile_runs_a_full_collection(fake_compile, monkeypatch):
    monkeypatch.setattr(fx_compile, "_UNSCANNED_MAX", 0)
    fx_compile.compile_jaxpr("program")
    assert fake_compile["garbage"]() is None and fx_compile._GC["unscanned"] == 0


def test_nested_compiles_re_enable_the_collector_once():
    with fx_compile._gc_paused():
        with fx_compile._gc_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_jitted_program_compiles_and_runs_with_the_collector_back_on():
    x = np.arange(6.0, dtype=np.float32)
    got = functx.jit(lambda a: functx.numpy.sin(a) * 2 + a)(x)
    np.testing.assert_allclose(np.asarray(got), np.sin(x) * 2 + x, rtol=1e-6)
    assert gc.isenabled()


class _CompilesWhenFreed:
    """Cyclic garbage whose finalizer compiles (as a ``__del__`` calling a jitted function can)."""

    def __init__(self, done):
        self.me, self.done = self, done

    def __del__(self):
        with fx_compile._gc_paused():
            self.done.append(True)


def test_a_finalizer_that_compiles_during_the_bounds_full_collection_does_not_deadlock(
    monkeypatch,
):
    monkeypatch.setattr(fx_compile, "_UNSCANNED_MAX", 0)
    # (a state of its own: a deadlocked thread must not hold the lock of later tests' compiles)
    monkeypatch.setattr(fx_compile, "_GC", {**fx_compile._GC, "lock": threading.Lock()})
    done: list = []

    def compile_leaving_garbage():
        with fx_compile._gc_paused():
            _CompilesWhenFreed(done)

    t = threading.Thread(target=compile_leaving_garbage, daemon=True)
    t.start()
    t.join(timeout=10)
    assert not t.is_alive() and done == [True]
    assert gc.isenabled() and fx_compile._GC["depth"] == 0
