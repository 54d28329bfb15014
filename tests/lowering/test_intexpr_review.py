"""A review of ``functx/lowering/intexpr.py``'s rules against plain Python arithmetic.

``test_intexpr.py`` compares the expressions with SymPy's; here each operation is checked
against what it claims, by evaluating the raw trees (``intexpr.evaluate``: no simplification)
before and after it on random integer points:

* sums, products and constant folding are ring identities: any integer point, negative ones too;
* floor division and remainder fold as Python's ``//`` and ``%`` (their bounds hold for either
  sign), and where ``index_bounds`` proves the dividend non-negative the printed C++ (truncating
  ``/`` and ``%``) computes the same value;
* max/min drop an argument only where it is never the extremum: loop symbols are non-negative,
  so the points are non-negative there;
* ``xreplace``/``subs`` substitute simultaneously (a swap of two symbols is a swap) and the
  rebuilt, re-simplified tree evaluates as the original at the substituted point;
* equal expressions built in different orders are equal, hash alike, keep the same ``args`` (the
  printers write them in order) and text; a symbol never equals the number of its name.
"""

from __future__ import annotations

import operator
import pickle
import re

from hypothesis import example, given, settings, strategies as st

from functx.lowering import intexpr as ie
from functx.lowering.cpp.emit import _ic
from functx.lowering.intexpr import FloorDiv, Guard, IMax, IMin, Int, ModI, Sym

NAMES = ("i0", "i1", "i2", "j0")
SYMS = [Sym(n) for n in NAMES]


# operations by a positive constant, and of two expressions (a guard clamp of the first to [0, 7])
UNARY = {"div": FloorDiv, "mod": ModI, "cmul": operator.mul}
BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "max": IMax,
    "min": IMin,
    "guard": lambda a, b: Guard(a, IMax(IMin(a, 7), 0)),
}


@st.composite
def exprs(draw, depth=3, big=False):
    """An index expression of the four symbols and integers (large ones with ``big``): sums,
    differences, products, floor division and remainder by positive constants, max, min and
    guard clamps."""
    hi = 2**40 if big else 9
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from([*SYMS, Int(draw(st.integers(-hi, hi)))]))
    op = draw(st.sampled_from([*UNARY, *BINARY]))
    a = draw(exprs(depth - 1, big))
    if op in UNARY:
        return UNARY[op](a, draw(st.integers(1, 8)))
    return BINARY[op](a, draw(exprs(depth - 1, big)))


@st.composite
def near(draw):
    """Arguments of a max/min that differ by little: a shared expression plus a small remainder,
    quotient or constant each (where a rule off by one shows)."""
    base = draw(exprs(depth=2)) + draw(st.integers(-1, 1))
    out = [base]
    for _ in range(draw(st.integers(1, 3))):
        s, c, d = draw(st.sampled_from(SYMS)), draw(st.integers(2, 5)), draw(st.integers(-1, 1))
        part = draw(st.sampled_from([ModI(s, c), -ModI(s, c), FloorDiv(ModI(s, 8), c)]))
        out.append(base + part + d)
    return out


def point(lo):
    return st.lists(st.integers(lo, 60), min_size=4, max_size=4).map(lambda v: dict(zip(NAMES, v)))


def val(e, env):
    return ie.evaluate(ie.ix(e), env)


@settings(max_examples=40, deadline=None)
@given(exprs(), exprs(), st.integers(-5, 5), point(-60))
def test_sums_products_and_folding_are_ring_identities(a, b, k, p):
    # any integer point: the nodes inside ``a`` and ``b`` evaluate alike on both sides
    va, vb = val(a, p), val(b, p)
    assert val(a + b, p) == va + vb
    assert val(a - b, p) == va - vb
    assert val(b - a + k, p) == vb - va + k
    assert val(a * b, p) == va * vb
    assert val(k * a - b * k, p) == k * (va - vb)
    assert val(-a, p) == -va and val(a - a, p) == 0


@settings(max_examples=40, deadline=None)
@given(exprs(), st.integers(1, 9), point(-60))
def test_floor_division_and_remainder_fold_as_python(a, c, p):
    va = val(a, p)
    assert val(FloorDiv(a, c), p) == va // c
    assert val(ModI(a, c), p) == va % c
    if min(p.values()) >= 0:  # (symbols are non-negative: their bounds say so)
        for e in (FloorDiv(a, c), ModI(a, c)):
            lo, hi = ie.index_bounds(e)
            assert lo <= val(e, p) <= hi, (e, p)


@settings(max_examples=60, deadline=None)
@given(near() | st.lists(exprs(), min_size=1, max_size=4), point(0), st.booleans())
@example([SYMS[0], SYMS[0] + ModI(SYMS[1], 4) - 1], dict.fromkeys(NAMES, 5), True)
@example([SYMS[0], SYMS[0] - ModI(SYMS[1], 4) + 1], dict.fromkeys(NAMES, 5), False)
def test_max_min_drop_only_arguments_never_the_extremum(args, p, is_max):
    # loop symbols are non-negative: so are the points
    e = (IMax if is_max else IMin)(*args)
    pick = max if is_max else min
    lo, hi = ie.index_bounds(e)
    for q in (p, {n: v % 4 for n, v in p.items()}, dict.fromkeys(NAMES, 0)):
        assert val(e, q) == pick(val(a, q) for a in args), (e, args, q)
        assert lo <= val(e, q) <= hi


class _C(int):
    """An int64 of C: ``/`` and ``%`` truncate toward zero."""

    def _w(self, v):
        assert -(2**63) <= v < 2**63, "int64 overflow"
        return _C(v)

    def __add__(self, o):
        return self._w(int(self) + int(o))

    __radd__ = __add__

    def __mul__(self, o):
        return self._w(int(self) * int(o))

    __rmul__ = __mul__

    def __neg__(self):
        return self._w(-int(self))

    def __truediv__(self, o):
        q = abs(int(self)) // abs(int(o))
        return self._w(q if (int(self) < 0) == (int(o) < 0) else -q)

    def __rtruediv__(self, o):
        return _C(o) / self

    def __mod__(self, o):
        return self._w(int(self) - int(o) * int(self / o))

    def __rmod__(self, o):
        return _C(o) % self


def _c_value(text, p):
    """The value of the C++ text of an index expression at ``p`` (C's integer semantics)."""
    src = re.sub(r"(\d+)LL", r"_C(\1)", text)
    env = {"_C": _C, "fx_imax": max, "fx_imin": min, **{n: _C(v) for n, v in p.items()}}
    return int(eval(src, env))


@settings(max_examples=50, deadline=None)
@given(exprs(big=True), point(0))
def test_printed_cpp_computes_the_expression(e, p):
    # where the bounds prove each dividend non-negative (what the lowering builds), C's
    # truncating division is floor division; constants beyond 2**31 print as 64-bit literals.
    # (A power, ``i0*i0``, has no printing, as with SymPy: the lowering multiplies an index by
    # constants only.)
    if e.has(ie.Pow):
        return
    text = _ic(e)
    divs = [x.args[0] for x in ie.preorder(e) if isinstance(x, (FloorDiv, ModI))]
    if all(ie.index_bounds(x)[0] >= 0 for x in divs) and abs(val(e, p)) < 2**62:
        try:
            got = _c_value(text, p)
        except AssertionError:  # (an intermediate past int64: not an index the lowering makes)
            return
        assert got == val(e, p), (text, p)


@settings(max_examples=40, deadline=None)
@given(exprs(), point(0), st.integers(0, 30))
def test_substitution_is_simultaneous_and_keeps_the_value(e, p, v):
    i, j = SYMS[:2]
    swapped = {**p, "i0": p["i1"], "i1": p["i0"]}
    assert val(e.xreplace({i: j, j: i}), p) == val(e, swapped)
    assert val(e.subs({i: j, j: i}), p) == val(e, swapped)
    # a number for a symbol: rebuilt (folded, max/min pruned again) to the same value
    assert val(e.subs(i, v), p) == val(e, {**p, "i0": v})
    assert val(e.subs({i: 2 * j + 1}), p) == val(e, {**p, "i0": 2 * p["i1"] + 1})


@settings(max_examples=40, deadline=None)
@given(st.lists(exprs(depth=2), min_size=2, max_size=5), st.randoms(use_true_random=False))
def test_equal_expressions_built_in_any_order_are_one(terms, rnd):
    shuffled = list(terms)
    rnd.shuffle(shuffled)
    for build in (ie.add, ie.mul):
        a, b = build(*terms), build(*shuffled)
        assert a == b and hash(a) == hash(b) and a.args == b.args and str(a) == str(b)
        if not a.has(ie.Pow):
            assert _ic(a) == _ic(b)
        c = pickle.loads(pickle.dumps(a))
        assert c == a and hash(c) == hash(a)
    # max/min: arguments in one order, whatever order they came in. (Of two arguments the bounds
    # prove equal but built apart, ``i0`` and ``i0 + FloorDiv(ModI(i1, 8), 8)``, the first given
    # is kept, as on main: equal values, another tree.)
    flat = [*terms, *(a for t in terms if isinstance(t, (IMax, IMin)) for a in t.args)]
    tied = any(x != y and ie.index_bounds(x - y) == (0, 0) for x in flat for y in flat)
    for cls in (IMax, IMin):
        a, b = cls(*terms), cls(*shuffled)
        env = dict.fromkeys(NAMES, 3)
        assert val(a, env) == val(b, env)
        if not tied:
            assert a == b and hash(a) == hash(b) and a.args == b.args and str(a) == str(b)
    # associativity of the pieces: ((t0 + t1) + t2) ... against one flat sum
    acc = Int(0)
    for t in shuffled:
        acc = acc + t
    assert acc == ie.add(*terms) and hash(acc) == hash(ie.add(*terms))


def test_symbols_and_numbers_never_confused():
    # a cache keyed by index expressions (``index_bounds``, the Triton printer's ``known``)
    for n in ("3", "0", "i0"):
        s = Sym(n)
        assert s != Int(3) and s != 3 and Int(3) != s
    d = {Sym("3"): "sym", Int(3): "int"}
    assert d[Sym("3")] == "sym" and d[3] == "int" and d[Int(3)] == "int"
    assert ie.index_bounds(Sym("3")) == (0, float("inf")) and ie.index_bounds(Int(3)) == (3, 3)
    assert ie.index_bounds(Int(-3)) == (-3, -3) and ie.index_bounds(-3) == (-3, -3)
    i = SYMS[0]
    assert FloorDiv(i, 3) != ModI(i, 3) and hash(Guard(i, 0)) != hash(Guard(0, i))


def test_interior_pad_whose_dividend_goes_negative():
    # the one division the lowering builds of a possibly negative dividend: an interior pad's
    # ``(i - lo + (it + 1) * d) // (it + 1)`` with a low padding past ``(it + 1) * d``. The C++
    # truncates where the bounds assume floor; the element is used only where the remainder is 0,
    # where the two agree. (Cropped on the high side, read backwards: the clamps and cuts too.)
    import jax
    import numpy as np

    import functx
    import functx.lax as flax

    x = np.random.default_rng(0).standard_normal((6, 5))
    cfg = [(15, -2, 1), (20, 1, 2)]

    def f(lax):
        return lambda x: (lax.pad(x, -1.0, cfg)[::-1, 1::2] * 2, lax.pad(x, 0.5, [cfg[1]] * 2))

    for got, want in zip(functx.jit(f(flax))(x), jax.jit(f(jax.lax))(x)):
        assert got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
