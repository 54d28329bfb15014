"""``functx.live_arrays``, ``functx.print_environment_info`` and ``host_count``/``host_id``/
``host_ids`` (functx/_runtime.py) against JAX's."""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

import functx

jax = pytest.importorskip("jax")


def test_live_arrays_as_jax():
    for m in (functx, jax):
        x = m.numpy.arange(11.0)
        y = m.jit(lambda v: v * 2)(x)
        ids = {id(a) for a in m.live_arrays()}
        assert id(x) in ids and id(y) in ids, m
        assert {id(a) for a in m.live_arrays("cpu")} == ids
        x.delete()
        assert id(x) not in {id(a) for a in m.live_arrays()}
        del y
        gc.collect()
    for m in (functx, jax):  # (an unknown platform: RuntimeError, as an unknown backend)
        with pytest.raises(RuntimeError, match="Unknown backend tpu0"):
            m.live_arrays("tpu0")
    with pytest.raises(functx.errors.FunctxRuntimeError):
        functx.live_arrays("tpu0")


def test_no_tracer_is_live():
    found = []

    def f(v):
        found.extend(a for a in functx.live_arrays() if a is v)
        return v

    functx.jit(f)(np.ones(3, np.float32))
    assert found == []


def test_print_environment_info(capsys, monkeypatch):
    monkeypatch.setenv("FUNCTX_TEST_SETTING", "7")
    text = functx.print_environment_info(return_string=True)
    assert f"functx:   {functx.__version__}" in text and f"numpy:    {np.__version__}" in text
    assert "FUNCTX_TEST_SETTING=7" in text and "process_count: 1" in text
    assert functx.print_environment_info() is None
    assert capsys.readouterr().out.strip() == text
    jtext = jax.print_environment_info(return_string=True)
    assert "numpy:" in jtext and "python:" in jtext  # (the same kinds of lines)


@pytest.mark.parametrize("name,new", [("host_count", "process_count"), ("host_id", "process_index"),
                                      ("host_ids", "process_indices")])  # fmt: skip
def test_host_names_warn_and_give_the_process_values_as_jax(name, new):
    for m in (functx, jax):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = getattr(m, name)()
        assert got == getattr(m, new)()
        assert [w.category for w in caught] == [UserWarning], m
