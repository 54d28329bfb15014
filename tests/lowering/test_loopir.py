"""The loop IR prints and verifies.

``loopir.pp_graph`` prints a graph (a line per node: type, kind, inputs, parameters and the
element expression at ``i0, i1, ...``; with the scheduler's kernels, the kernel of each node and a
line per kernel); ``lower(...).as_text()`` shows it between the Jaxpr and the kernels.
``loopir.verify`` checks a graph after lowering and ``schedule.verify`` after scheduling; both run
here over every case of the backend suite, and on graphs broken on purpose. An exception raised
by a lowering rule or a renderer names the primitive and the user's line.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import functx
import functx.lax as lax
import functx.nn as fnn
import functx.numpy as fnp
from functx import primitives as P
from functx.errors import UnsupportedError
from functx.lowering import loopir, lower, schedule
from functx.lowering.cpp import program as cpp_program
from functx.lowering.loopir import Acc, Const, Load, LoopIRError, Node, Op, sym
from functx.transforms import passes

X = np.arange(12, dtype=np.float32).reshape(3, 4) / 7.0
V = np.linspace(-1.0, 1.0, 8, dtype=np.float32)


def _graph(f, *args):
    """Lower and schedule ``f`` at ``args``, verifying after each stage."""
    g = lower.lower_jaxpr(passes.simplify(functx.make_jaxpr(f)(*args)))
    loopir.verify(g)
    kernels = schedule.schedule(g)
    schedule.verify(g, kernels)
    return g, kernels


# --- printing ------------------------------------------------------------------------------------
def test_pointwise_prints_one_line_per_node():
    g, kernels = _graph(lambda x: fnp.exp(x) * 2.0, V[:3])
    assert loopir.pp_graph(g) == (
        "t0:f32[3] = input in0\n"
        "t1:f32[3] = pointwise(t0) [i0] -> exp(t0[i0])\n"
        "t2:f32[] = pointwise() [] -> 2.0\n"
        "t3:f32[3] = pointwise(t1, t2) [i0] -> mul(t1[i0], t2[0])\n"
        "outputs: t3"
    )
    text = loopir.pp_graph(g, kernels)
    assert "mul(t1[i0], t2[0])  # kernel 0" in text
    assert text.endswith("kernel 0: pointwise (3,) nodes=[t3]")


def test_softmax_prints_its_reduction_kernel():
    g, kernels = _graph(lambda x: fnn.softmax(x, axis=-1), X)
    text = loopir.pp_graph(g, kernels)
    assert "t1:f32[3] = reduce(t0) op='reduce_max' axes=(1,) operand=t0  # kernel 0" in text
    assert "-> exp(t6[4*i0 + i1])" in text  # index expressions in the node's loop symbols
    assert "kernel 0: reduce (3, 4) axes=(1,) passes=[[t1], [t8]] maps=[t11]" in text
    assert len(kernels) == 1


def test_scan_and_cond_print_their_loops():
    g, kernels = _graph(lambda v: lax.scan(lambda c, a: (c + a, c * a), 0.0, v), V)
    text = loopir.pp_graph(g, kernels)
    assert "t2:f32[] = loop(t1, t0)" in text and "group={type: 'scan', outs: [t2, t3]" in text
    assert "jaxpr: <jaxpr: 2 eqns>" in text and "kernel 1: loop () nodes=[t2, t3]" in text

    g, kernels = _graph(lambda v: lax.cond(v.sum() > 0, lambda a: a * 2.0, lambda a: a - 1.0, v), V)
    text = loopir.pp_graph(g, kernels)
    assert "= loop(t4, t0)" in text and "type: 'cond'" in text
    assert "branches: (<jaxpr: 1 eqns>, <jaxpr: 1 eqns>)" in text


def test_gather_prints_data_dependent_offsets():
    g, _ = _graph(lambda x: x[np.array([0, 2])].sum(0), X)
    text = loopir.pp_graph(g)
    assert "clamp(convert(" in text and "needs_buffer=[t1]" in text


def test_as_text_shows_the_loop_ir_between_the_jaxpr_and_the_kernels():
    text = functx.jit(lambda x: fnn.softmax(x, axis=-1)).lower(X).as_text()
    order = [text.index(h) for h in ("# Jaxpr\n", "# loop IR\n", "# kernels\n", "# C++\n")]
    assert order == sorted(order), order
    section = text[order[1] : order[2]]
    assert "reduce(t0) op='reduce_max'" in section and "kernel 0: reduce (3, 4)" in section


# --- verifying -----------------------------------------------------------------------------------
def test_every_backend_suite_case_verifies_after_lowering_and_scheduling():
    suite = pytest.importorskip("test_backend_suite")  # (it needs JAX)
    bad = []
    for name, c in suite.CASES.items():
        try:
            _graph(functools.partial(c.fn, suite.FX), *suite.args_of(c))
        except LoopIRError as err:
            bad.append(f"{name}: {err}")
    assert not bad, "\n".join(bad)


def test_more_programs_verify():
    def lin(a, b):
        return (a[0] * b[0], a[1] * b[0] + b[1])

    programs = [
        (lambda v: lax.associative_scan(lin, (v, v))[1], V),
        (lambda v: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 1.5), (0, v)), V),
        (lambda v: v.at[np.array([1, 3, 3])].add(2.0), V),
        (lambda v: lax.dynamic_update_slice(v, v[:4] * 2.0, (3,)), V),
        (lambda x: lax.reduce(x, np.float32(0), lambda a, b: a + b, (1,)), X),
        (functx.grad(lambda x: (fnn.softmax(x) * fnp.sin(x)).sum()), X),
        (lambda x: (x - x.mean(-1, keepdims=True)) / fnp.sqrt(x.var(-1, keepdims=True) + 1.0), X),
        (lambda x: fnp.tanh(x @ x.T), X),
        (lambda x: fnp.argmax(x, axis=1), X),
        (lambda x: fnp.pad(x, 1)[1:-1, 1:-1] + fnp.concatenate([x, x], 1)[:, ::2], X),
    ]
    for f, a in programs:
        _graph(f, a)


def _broken():
    g, kernels = _graph(lambda x: fnp.exp(x).sum() * 2.0, V)
    return g, kernels


def test_the_verifier_catches_an_input_defined_after_its_reader():
    g, _ = _broken()
    g.nodes[1].inputs.append(g.nodes[-1])
    with pytest.raises(LoopIRError, match=r"node t1 .*input t\d+ is defined after it"):
        loopir.verify(g)


def test_the_verifier_catches_foreign_symbols_dtypes_and_accumulators():
    g, _ = _broken()
    n = g.nodes[1]
    n.fn = lambda idx, ctx: Load(n.dtype, "n0", sym("k"))
    with pytest.raises(LoopIRError, match="uses k, not a loop symbol of the node"):
        loopir.verify(g)
    n.fn = lambda idx, ctx: Const(np.dtype(np.int32), 1)
    with pytest.raises(LoopIRError, match="its element expression has dtype int32"):
        loopir.verify(g)
    n.fn = lambda idx, ctx: Op(n.dtype, "convert", (Load(np.dtype(np.int32), "n0", idx[0]),))
    with pytest.raises(LoopIRError, match=r"reads t0 \(f32\[8\]\) as int32"):
        loopir.verify(g)
    n.fn = lambda idx, ctx: Acc(n.dtype, 2)
    with pytest.raises(LoopIRError, match="accumulator of a node this kernel does not reduce"):
        loopir.verify(g)


def test_the_verifier_catches_bad_shapes_outputs_and_kernels():
    g, kernels = _broken()
    red = next(n for n in g.nodes if n.kind == "reduce")
    red.shape = (2,)
    with pytest.raises(LoopIRError, match=r"reduces t\d+ \[8\] over \(0,\) to \(\)"):
        loopir.verify(g)
    g, kernels = _broken()
    g.outputs.append(Node((8,), np.dtype(np.float32)))
    with pytest.raises(LoopIRError, match="output .* is not a node of this graph"):
        loopir.verify(g)
    g, kernels = _broken()
    g.nodes[2].kind = "blur"
    with pytest.raises(LoopIRError, match="kind 'blur' is none of"):
        loopir.verify(g)
    g, kernels = _broken()
    with pytest.raises(LoopIRError, match="is a realised node no kernel computes"):
        loopir.verify(g, [k for k in kernels if k.kind != "reduce"])


# --- errors name the primitive and the user's line -----------------------------------------------
def _sin_program():
    def f(x):
        return fnp.sin(x) * 2.0 + 1.0

    return f, f"test_loopir.py:{f.__code__.co_firstlineno + 1}"


def test_a_failing_lowering_rule_names_the_primitive_and_the_line(monkeypatch, tmp_path):
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))

    def rule(g, ins, avals, **params):
        raise ValueError("boom")

    monkeypatch.setitem(lower.lowerings, P.registry["sin"], rule)
    f, line = _sin_program()
    with pytest.raises(ValueError, match="boom") as info:
        functx.jit(f).lower(V)
    msg = str(info.value)
    assert "(while lowering 'sin' at " in msg and line in msg, msg
    assert type(info.value) is ValueError and isinstance(info.value.__cause__, ValueError)


def test_a_failing_renderer_names_the_primitive_and_the_line(monkeypatch, tmp_path):
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    real = cpp_program.KERNEL_KINDS["pointwise"]

    def render(prog, k):
        for n in k.nodes:  # the kernel's expression holds the sin of an earlier node
            n.fn(loopir.loop_vars(len(n.shape)), schedule.KernelCtx(k))
        raise UnsupportedError("jit: no C++ for elementwise op 'sin'")

    monkeypatch.setitem(cpp_program.KERNEL_KINDS, "pointwise", render)
    f, line = _sin_program()
    with pytest.raises(UnsupportedError) as info:
        functx.jit(f).lower(V)
    msg = str(info.value)
    assert msg.startswith("jit: no C++ for elementwise op 'sin' (while rendering C++ kernel 0")
    assert "from 'sin' at " in msg and line in msg, msg
    monkeypatch.setitem(cpp_program.KERNEL_KINDS, "pointwise", real)
    monkeypatch.delitem(cpp_program.KERNEL_KINDS, "pointwise")
    with pytest.raises(UnsupportedError, match="no C\\+\\+ renderer for kernel kind 'pointwise'"):
        functx.jit(lambda x: fnp.cos(x) + 3.0).lower(V)
