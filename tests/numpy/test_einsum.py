"""``functx.numpy.einsum`` against ``jax.numpy.einsum``: a table of subscripts (matrix products,
traces, diagonals, repeated indices, ellipses, outer and batch products, implicit outputs, size-1
broadcasting, empty operands) over several dtypes, random subscripts drawn by hypothesis, dtype
promotion and ``preferred_element_type``, and errors."""

from __future__ import annotations

import string

import jax
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from test_numpy_vs_jax import (
    BOOL,
    F16,
    F32,
    F64,
    I8,
    I32,
    REF,
    _compile,
    arrays,
    assert_matches,
    check_traced,
)

import functx
import functx.numpy as fnp
from functx.errors import FunctxTypeError, FunctxValueError

SPECS = {
    "matmul": ("ij,jk->ik", (3, 4), (4, 5)),
    "matmul_implicit": ("ij,jk", (3, 4), (4, 5)),
    "trace": ("ii->", (3, 3)),
    "trace_implicit": ("ii", (3, 3)),
    "diagonal": ("ii->i", (3, 3)),
    "transpose": ("ij->ji", (2, 3)),
    "outer": ("i,j->ij", (2,), (3,)),
    "batch_matmul": ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    "ellipsis_batch": ("...ij,...jk->...ik", (2, 3, 4), (2, 4, 5)),
    "ellipsis_implicit": ("...ij,jk", (2, 3, 4), (4, 5)),
    "ellipsis_trailing": ("ij...,jk...->ik...", (3, 4, 2), (4, 5, 2)),
    "ellipsis_broadcast": ("...,...->...", (2, 3), (3,)),
    "ellipsis_sum": ("i...->...", (3, 2, 4)),
    "ellipsis_dot": ("...i,...i->...", (2, 3, 4), (3, 4)),
    "dot": ("i,i->", (4,), (4,)),
    "dot_implicit": ("i,i", (4,), (4,)),
    "sum_all": ("ijk->", (2, 3, 4)),
    "sum_axis": ("ij->j", (2, 3)),
    "diag_of_3d": ("iij->ij", (3, 3, 2)),
    "diag_outer_axes": ("iji->j", (3, 2, 3)),
    "triple_diag": ("iii->i", (2, 2, 2)),
    "batch_diag": ("bii->bi", (2, 3, 3)),
    "diag_then_matmul": ("aab,bc->ac", (3, 3, 2), (2, 4)),
    "hadamard": ("ij,ij->ij", (2, 3), (2, 3)),
    "outer_4d": ("ij,kl->ijkl", (2, 3), (2, 2)),
    "chain": ("ab,bc,cd->ad", (2, 3), (3, 4), (4, 5)),
    "chain_unordered": ("ab,cd,bc->ad", (2, 3), (4, 5), (3, 4)),
    "three_way": ("i,i,i->i", (3,), (3,), (3,)),
    "outer_3": ("a,b,c->abc", (2,), (3,), (4,)),
    "matvec": ("ij,j->i", (3, 4), (4,)),
    "rowdot": ("bi,bi->b", (3, 4), (3, 4)),
    "size1_broadcast": ("ij,jk->ik", (3, 1), (4, 5)),
    "size1_sum": ("ab,ab->", (2, 3), (1, 3)),
    "contract_first": ("ij,ik->jk", (3, 2), (3, 4)),
    "full_contract": ("ijk,kji->", (2, 3, 4), (4, 3, 2)),
    "empty_sum": ("i->", (0,)),
    "empty_matmul": ("ij,jk->ik", (0, 3), (3, 2)),
    "empty_contract": ("ij,jk->ik", (2, 0), (0, 3)),
    "spaces": (" ij , jk -> ki ", (3, 4), (4, 5)),
    "scalar": (",ij->ij", (), (2, 3)),
    "keep_repeated_out": ("ij,jk->kji", (2, 3), (3, 4)),
}
DTYPES = (F32, F64, I32, BOOL)


def _slots():
    """Every operand of every spec gets its own input of the shared reference group."""
    slots, where = [], {}
    for k, (_, *shapes) in SPECS.items():
        where[k] = list(range(len(slots), len(slots) + len(shapes)))
        slots.extend(shapes)
    return slots, where


SLOTS, WHERE = _slots()
for _dt in DTYPES:
    for _k, (_sub, *_shapes) in SPECS.items():
        REF.case(
            ("einsum", _dt),
            [(s, _dt) for s in SLOTS],
            _k,
            lambda *ops, k=_k, sub=_sub: jax.numpy.einsum(sub, *[ops[i] for i in WHERE[k]]),
        )


@pytest.mark.parametrize("key", list(SPECS))
@settings(max_examples=4)
@given(data=st.data())
def test_einsum_table(key, data):
    sub, *shapes = SPECS[key]
    dt = data.draw(st.sampled_from(DTYPES), label="dtype")
    ops = [
        data.draw(arrays(dt, s, lo=-4, hi=4, specials=False), label=f"op{i}")
        for i, s in enumerate(shapes)
    ]
    inputs = [np.zeros(s, dt) for s in SLOTS]
    for i, o in zip(WHERE[key], ops):
        inputs[i] = o
    out = fnp.einsum(sub, *ops)
    assert_matches(out, REF(("einsum", dt), key, *inputs), [dt])
    check_traced(lambda *xs: fnp.einsum(sub, *xs), *ops)


@st.composite
def einsum_problems(draw):
    """Random subscripts: 1-3 operands over up to 5 index letters (sizes 1-3), repeated letters
    within an operand (diagonals), an implicit or explicit (permuted, partly summed) output."""
    letters = string.ascii_lowercase[: draw(st.integers(1, 5))]
    sizes = {c: draw(st.integers(1, 3)) for c in letters}
    terms = [
        draw(st.lists(st.sampled_from(letters), min_size=0, max_size=3))
        for _ in range(draw(st.integers(1, 3)))
    ]
    used = sorted(set("".join("".join(t) for t in terms)))
    if draw(st.booleans()):
        out = draw(st.permutations(used))[: draw(st.integers(0, len(used)))]
        sub = ",".join("".join(t) for t in terms) + "->" + "".join(out)
    else:
        sub = ",".join("".join(t) for t in terms)
    return sub, [tuple(sizes[c] for c in t) for t in terms]


@settings(max_examples=20)
@given(problem=einsum_problems(), data=st.data())
def test_einsum_random_subscripts(problem, data):
    sub, shapes = problem
    ops = [
        data.draw(arrays(F64, s, lo=-3, hi=3, specials=False), label=f"op{i}")
        for i, s in enumerate(shapes)
    ]
    out = fnp.einsum(sub, *ops)
    np.testing.assert_allclose(np.asarray(out), np.einsum(sub, *ops), rtol=1e-12, atol=1e-12)
    sds = [jax.ShapeDtypeStruct(s, F64) for s in shapes]
    ref = _compile(jax.jit(lambda *xs: jax.numpy.einsum(sub, *xs)).lower(*sds))(*ops)
    assert_matches(out, ref, [F64])
    check_traced(lambda *xs: fnp.einsum(sub, *xs), *ops)


PROMOTION = [(F32, I32), (I8, I8), (BOOL, I32), (F16, F32), (BOOL, BOOL), (I32, F64)]
for _a, _b in PROMOTION:
    REF.case(
        ("einsum_mixed", _a, _b),
        [((3, 4), _a), ((4, 2), _b)],
        "mixed",
        lambda x, y: jax.numpy.einsum("ij,jk->ik", x, y),
    )
    REF.case(
        ("einsum_mixed", _a, _b),
        [((3, 4), _a), ((4, 2), _b)],
        "preferred",
        lambda x, y: jax.numpy.einsum("ij,jk->ik", x, y, preferred_element_type=F64),
    )


@pytest.mark.parametrize("dtypes", PROMOTION, ids=str)
@pytest.mark.parametrize("kind", ["mixed", "preferred"])
def test_einsum_promotion(dtypes, kind):
    a, b = dtypes
    rng = np.random.default_rng(0)
    x = (rng.integers(-3, 4, (3, 4))).astype(a)
    y = (rng.integers(-3, 4, (4, 2))).astype(b)
    kw = {"preferred_element_type": F64} if kind == "preferred" else {}
    out = fnp.einsum("ij,jk->ik", x, y, **kw)
    assert_matches(out, REF(("einsum_mixed", a, b), kind, x, y), [a, b, *kw.values()])
    check_traced(lambda p, q: fnp.einsum("ij,jk->ik", p, q, **kw), x, y)


BAD = [
    ("ij,jk->ik", [(3, 4)]),
    ("ijk,jk", [(2, 3), (3, 4)]),
    ("ij->ij", [(3,)]),
    ("ij,jk->ik", [(3, 4), (5, 2)]),
    ("ij->k", [(2, 2)]),
]


@pytest.mark.parametrize("sub,shapes", BAD, ids=[b[0] + str(b[1]) for b in BAD])
def test_einsum_errors(sub, shapes):
    """Bad subscripts raise what JAX raises (a ValueError), as a functx error naming the line."""
    ops = [np.ones(s, F32) for s in shapes]
    with pytest.raises(ValueError):
        jax.numpy.einsum(sub, *ops)
    with pytest.raises(FunctxValueError, match="einsum") as ei:
        fnp.einsum(sub, *ops)
    assert __file__ in str(ei.value)
    with pytest.raises(FunctxValueError, match="einsum"):
        functx.make_jaxpr(lambda *xs: fnp.einsum(sub, *xs))(*ops)


@pytest.mark.parametrize(
    "shapes, subs, out",
    [
        ([(2, 3, 4), (3, 5)], [[0, 1, 2], [1, 3]], [0, 3, 2]),  # explicit output
        ([(2, 3, 4), (3, 5)], [[0, 1, 2], [1, 3]], None),  # implicit: labels in sorted order
        ([(2, 3, 4), (4, 5)], [[..., 1], [1, 3]], [..., 3]),
        ([(2, 3, 4), (3, 5)], [["b", "a", "c"], ["a", "d"]], None),  # any comparable labels
        ([(2, 3, 4)], [[2, 1, 0]], None),  # one operand: a transpose
    ],
)
def test_interleaved_form_matches_jax(shapes, subs, out):
    rng = np.random.default_rng(0)
    args = []
    for shape, sub in zip(shapes, subs):
        args += [rng.standard_normal(shape).astype(np.float32), sub]
    if out is not None:
        args.append(out)
    got = fnp.einsum(*args)
    want = jax.numpy.einsum(*args)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_interleaved_form_errors_name_the_labels():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(FunctxTypeError, match="list of axis labels"):
        fnp.einsum(x, "ab")
    with pytest.raises(FunctxTypeError, match="comparable"):
        fnp.einsum(x, [0, "a"])
