"""Complex values as pairs of real lanes: a Jaxpr -> Jaxpr rewrite for backends without complex
types (Triton).

``split_complex(closed)`` gives a program that computes the same values with float32/float64
only. A complex input of shape ``S`` becomes a real input of shape ``S + (2,)`` (the layout of
``torch.view_as_real``: real and imaginary parts side by side, as NumPy stores complex arrays),
and so does each complex output; inside, every complex value is a pair ``(re, im)`` of real
values of one shape, and each equation that touches one is rewritten into real operations:

- arithmetic, ``exp``/``log``/``sqrt``/trigonometric and hyperbolic functions and their
  inverses, ``pow``/``integer_pow``, ``abs``/``sign``, ``real``/``imag``/``conj``/``complex``,
  ``eq``/``ne``, ``max``/``min`` (JAX's lexicographic order), conversions;
- shape and indexing operations, ``select_n``, ``reduce_sum`` (applied to both parts);
- ``reduce_prod``, ``reduce_max``/``reduce_min`` (a reduction over the pair: ``lax.reduce``),
  ``dot_general`` (four real products);
- ``associative_scan``, ``reduce``, ``scan``, ``while``, ``cond`` (their functions rewritten
  the same way, complex carries and elements as pairs) and calls (``custom_jvp_call``,
  ``custom_vjp_call``, ``checkpoint``: their body, inlined);
- host callbacks (``pure_callback``, ``io_callback``, ``debug_callback``): complex operands
  and results cross as real arrays with a trailing axis of 2, the user's function still sees
  complex NumPy arrays;
- ``sort``: each complex operand as its two parts and a complex key as two real keys (the real
  part, then the imaginary part, each ordered as a float key: JAX's order, NaNs included), so
  the sort kernels and ``torch.sort`` see real operands and move each part's own bits;
- linear algebra (``cholesky``, ``triangular_solve``, ``lu``, ``eigh``, ``qr``, ``svd`` and the
  rest of ``control/linalg.py`` but ``eig``, which JAX computes on the CPU only): the library
  step the real program would have, on the lanes (``LanesStep``: ``LibraryStep.torch`` reads
  the interleaved lanes as complex tensors, so ``torch.linalg`` computes in complex).

Anything else with a complex operand or result raises ``UnsupportedError`` naming the
primitive and the user's line. A program without complex values is never rewritten
(``uses_complex`` is checked first), so real programs pay nothing.

The formulas are the textbook ones (Smith's division, a scaled modulus, principal branches);
they agree with NumPy's and XLA's to float tolerance away from overflow and branch cuts, not
bit for bit.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from functx import dtypes, lax, ops, tracing
from functx.array import Array
from functx.control import callbacks, fft as fft_mod, linalg
from functx.core import ClosedJaxpr, Jaxpr, Literal, ShapedArray
from functx.errors import UnsupportedError
from functx.source_info import source_info, where
from functx.transforms import passes


class Pair:
    """A complex value as its real and imaginary parts (real arrays or tracers, one shape)."""

    __slots__ = ("re", "im")

    def __init__(self, re, im):
        self.re, self.im = re, im


# --- finding complex values -----------------------------------------------------------------------
def _is_c(aval) -> bool:
    return getattr(aval, "dtype", None) in dtypes.COMPLEX


def _subjaxprs(params):
    for p in params.values():
        for sub in p if isinstance(p, (tuple, list)) else (p,):
            if isinstance(sub, ClosedJaxpr):
                yield sub.jaxpr
            elif isinstance(sub, Jaxpr):
                yield sub


def uses_complex(jaxpr: Jaxpr) -> bool:
    """Whether any input, output or intermediate of ``jaxpr`` (or of a sub-Jaxpr) is complex."""
    if any(_is_c(v.aval) for v in list(jaxpr.invars) + list(jaxpr.constvars)):
        return True
    for e in jaxpr.eqns:
        if any(_is_c(v.aval) for v in list(e.invars) + list(e.outvars)):
            return True
        if any(uses_complex(j) for j in _subjaxprs(e.params)):
            return True
    return False


def _eqn_uses_complex(e) -> bool:
    return any(_is_c(v.aval) for v in list(e.invars) + list(e.outvars)) or any(
        uses_complex(j) for j in _subjaxprs(e.params)
    )


# --- real helpers ---------------------------------------------------------------------------------
def _dt(x):
    return tracing.get_aval(x).dtype


def _k(v, like):
    """The constant ``v`` as a rank-0 array of ``like``'s dtype (it broadcasts in every op)."""
    return np.asarray(v, _dt(like))


def _sel(pred, on_true, on_false):
    return ops.select_n(pred, on_false, on_true)


def _zeros(x):
    return ops.full_like(x, 0)


def _bcast(x, shape):
    s = tracing.get_aval(x).shape
    return x if s == tuple(shape) else ops.broadcast_in_dim(x, tuple(shape), ())


# --- complex arithmetic on pairs -----------------------------------------------------------------
def _add(a, b):
    return Pair(ops.add(a.re, b.re), ops.add(a.im, b.im))


def _sub(a, b):
    return Pair(ops.sub(a.re, b.re), ops.sub(a.im, b.im))


def _neg(a):
    return Pair(ops.neg(a.re), ops.neg(a.im))


def _mul(a, b):
    return Pair(
        ops.sub(ops.mul(a.re, b.re), ops.mul(a.im, b.im)),
        ops.add(ops.mul(a.re, b.im), ops.mul(a.im, b.re)),
    )


def _scale(a, s):
    return Pair(ops.mul(a.re, s), ops.mul(a.im, s))


def _div(a, b):
    """Smith's algorithm: no overflow of ``|b|**2`` for large denominators."""
    c, d = b.re, b.im
    big_c = ops.ge(ops.abs(c), ops.abs(d))
    # |c| >= |d|: r = d / c, den = c + d r; else r = c / d, den = c r + d
    r = ops.div(_sel(big_c, d, c), _sel(big_c, c, d))
    den = ops.add(_sel(big_c, c, d), ops.mul(_sel(big_c, d, c), r))
    re1 = ops.div(ops.add(a.re, ops.mul(a.im, r)), den)
    im1 = ops.div(ops.sub(a.im, ops.mul(a.re, r)), den)
    re2 = ops.div(ops.add(ops.mul(a.re, r), a.im), den)
    im2 = ops.div(ops.sub(ops.mul(a.im, r), a.re), den)
    return Pair(_sel(big_c, re1, re2), _sel(big_c, im1, im2))


def _abs(a):
    """|a| scaled by the larger part (no overflow of the squares)."""
    x, y = ops.abs(a.re), ops.abs(a.im)
    hi, lo = ops.max(x, y), ops.min(x, y)
    safe = _sel(ops.eq(hi, _k(0, hi)), ops.full_like(hi, 1), hi)
    t = ops.div(lo, safe)
    m = ops.mul(hi, ops.sqrt(ops.add(_k(1, t), ops.mul(t, t))))
    # infinite parts: inf (even beside a NaN), as C99's cabs
    inf = ops.eq(hi, _k(math.inf, hi))
    return _sel(inf, hi, m)


def _exp(a):
    e = ops.exp(a.re)
    # a real argument stays real (exp(inf + 0j) is inf + 0j, not inf * sin(0) = NaN)
    im = _sel(ops.eq(a.im, _k(0, a.im)), a.im, ops.mul(e, ops.sin(a.im)))
    return Pair(ops.mul(e, ops.cos(a.im)), im)


def _log(a):
    return Pair(ops.log(_abs(a)), ops.atan2(a.im, a.re))


def _sqrt(a):
    """The principal square root: ``t = sqrt((|a| + |re|) / 2)``, then the part of the sign."""
    m = _abs(a)
    t = ops.sqrt(ops.mul(ops.add(m, ops.abs(a.re)), _k(0.5, m)))
    zero = ops.eq(t, _k(0, t))
    safe = _sel(zero, ops.full_like(t, 1), t)
    half = ops.div(a.im, ops.mul(safe, _k(2, safe)))  # b / 2t
    pos = ops.ge(a.re, _k(0, a.re))
    neg_im = ops.lt(a.im, _k(0, a.im))
    re = _sel(pos, t, ops.abs(half))
    im = _sel(pos, half, _sel(neg_im, ops.neg(t), t))
    return Pair(_sel(zero, _zeros(t), re), _sel(zero, a.im, im))


def _sin(a):
    return Pair(ops.mul(ops.sin(a.re), ops.cosh(a.im)), ops.mul(ops.cos(a.re), ops.sinh(a.im)))


def _cos(a):
    return Pair(
        ops.mul(ops.cos(a.re), ops.cosh(a.im)),
        ops.neg(ops.mul(ops.sin(a.re), ops.sinh(a.im))),
    )


def _sinh(a):
    return Pair(ops.mul(ops.sinh(a.re), ops.cos(a.im)), ops.mul(ops.cosh(a.re), ops.sin(a.im)))


def _cosh(a):
    return Pair(ops.mul(ops.cosh(a.re), ops.cos(a.im)), ops.mul(ops.sinh(a.re), ops.sin(a.im)))


def _tanh(a):
    """``(sinh 2x + i sin 2y) / (cosh 2x + cos 2y)``; ``±1 + 0i`` beyond |x| > 20 (float64:
    the same to the last bit there, with no inf / inf)."""
    x2, y2 = ops.mul(a.re, _k(2, a.re)), ops.mul(a.im, _k(2, a.im))
    den = ops.add(ops.cosh(x2), ops.cos(y2))
    big = ops.gt(ops.abs(a.re), _k(20, a.re))
    re = _sel(big, ops.sign(a.re), ops.div(ops.sinh(x2), den))
    im = _sel(big, _zeros(a.im), ops.div(ops.sin(y2), den))
    return Pair(re, im)


def _tan(a):
    # tan(z) = -i tanh(i z)
    t = _tanh(Pair(ops.neg(a.im), a.re))
    return Pair(t.im, ops.neg(t.re))


def _one(a):
    return Pair(ops.full_like(a.re, 1), _zeros(a.im))


def _times_i(a):
    return Pair(ops.neg(a.im), a.re)


def _times_minus_i(a):
    return Pair(a.im, ops.neg(a.re))


def _asinh(a):  # log(z + sqrt(z^2 + 1))
    return _log(_add(a, _sqrt(_add(_mul(a, a), _one(a)))))


def _acosh(a):  # log(z + sqrt(z + 1) sqrt(z - 1))
    one = _one(a)
    return _log(_add(a, _mul(_sqrt(_add(a, one)), _sqrt(_sub(a, one)))))


def _atanh(a):  # (log(1 + z) - log(1 - z)) / 2
    one = _one(a)
    return _scale(_sub(_log(_add(one, a)), _log(_sub(one, a))), _k(0.5, a.re))


def _asin(a):  # -i asinh(i z)
    return _times_minus_i(_asinh(_times_i(a)))


def _acos(a):  # pi/2 - asin(z)
    s = _asin(a)
    return Pair(ops.sub(_k(math.pi / 2, s.re), s.re), ops.neg(s.im))


def _atan(a):  # -i atanh(i z)
    return _times_minus_i(_atanh(_times_i(a)))


def _pow(a, b):
    """``exp(b log a)``, with ``0 ** b`` = 0 for b of positive real part, 1 for b = 0."""
    p = _exp(_mul(b, _log(a)))
    a0 = ops.bitwise_and(ops.eq(a.re, _k(0, a.re)), ops.eq(a.im, _k(0, a.im)))
    b0 = ops.bitwise_and(ops.eq(b.re, _k(0, b.re)), ops.eq(b.im, _k(0, b.im)))
    bpos = ops.gt(b.re, _k(0, b.re))
    shape = tracing.get_aval(p.re).shape
    a0, b0, bpos = _bcast(a0, shape), _bcast(b0, shape), _bcast(bpos, shape)
    zero_base = ops.bitwise_and(a0, ops.bitwise_or(bpos, b0))
    re = _sel(zero_base, _sel(b0, ops.full_like(p.re, 1), _zeros(p.re)), p.re)
    return Pair(re, _sel(zero_base, _zeros(p.im), p.im))


def _integer_pow(a, y):
    if y == 0:
        return _one(a)
    acc, base, n = None, a, abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else _mul(acc, base)
        n >>= 1
        if n:
            base = _mul(base, base)
    return _div(_one(acc), acc) if y < 0 else acc


def _order(a, b, greater: bool):
    """JAX's lexicographic max (``greater``) or min: ``a`` where it orders after (before) ``b``
    by real parts, or by imaginary parts where the real parts are equal; ``b`` otherwise."""
    cmp = ops.gt if greater else ops.lt
    pick = _sel(ops.eq(a.re, b.re), cmp(a.im, b.im), cmp(a.re, b.re))
    return Pair(_sel(pick, a.re, b.re), _sel(pick, a.im, b.im))


def _sign(a):
    m = _abs(a)
    zero = ops.eq(m, _k(0, m))
    safe = _sel(zero, ops.full_like(m, 1), m)
    return Pair(_sel(zero, a.re, ops.div(a.re, safe)), _sel(zero, a.im, ops.div(a.im, safe)))


def _logistic(a):
    one = _one(a)
    return _div(one, _add(one, _exp(_neg(a))))


_LN2 = math.log(2.0)

#: complex -> complex elementwise ops (one or two pairs in, a pair out)
ELEMENTWISE = {
    "neg": _neg,
    "add": _add,
    "sub": _sub,
    "mul": _mul,
    "div": _div,
    "exp": _exp,
    "exp2": lambda a: _exp(_scale(a, _k(_LN2, a.re))),
    "expm1": lambda a: _sub(_exp(a), _one(a)),
    "log": _log,
    "log1p": lambda a: _log(_add(_one(a), a)),
    "sqrt": _sqrt,
    "rsqrt": lambda a: _div(_one(a), _sqrt(a)),
    "sin": _sin,
    "cos": _cos,
    "tan": _tan,
    "sinh": _sinh,
    "cosh": _cosh,
    "tanh": _tanh,
    "asin": _asin,
    "acos": _acos,
    "atan": _atan,
    "asinh": _asinh,
    "acosh": _acosh,
    "atanh": _atanh,
    "logistic": _logistic,
    "sign": _sign,
    "conj": lambda a: Pair(a.re, ops.neg(a.im)),
    "pow": _pow,
    "max": lambda a, b: _order(a, b, True),
    "min": lambda a, b: _order(a, b, False),
}

#: ops applied to the real and the imaginary part alike (shape, indexing, linear): operands
#: that are real (indices, predicates) are passed to both
PARTWISE = frozenset(
    "broadcast_in_dim reshape transpose slice squeeze expand_dims rev concatenate pad "
    "dynamic_slice dynamic_update_slice gather scatter scatter_add select_n reduce_sum copy "
    "name stop_gradient".split()
)


# --- the interpreter ---------------------------------------------------------------------------
def _unsupported(e, what=None):
    raise UnsupportedError(
        f"jit (Triton): {what or e.prim.name} of complex values is not supported by the Triton "
        f"backend yet (complex numbers run there as pairs of real lanes; jit on the CPU (C++) "
        f"computes them){where(e.source_info)}"
    )


def _literal(a: Literal):
    v = np.asarray(a.val, a.aval.dtype)
    if _is_c(a.aval):
        rd = dtypes.REAL_OF[a.aval.dtype]
        return Pair(np.asarray(v.real, rd), np.asarray(v.imag, rd))
    return Array._new(v, a.aval)


def _as_pair(x, dt):
    """A complex operand: a Pair already, or a real value promoted (imaginary part 0)."""
    if isinstance(x, Pair):
        return x
    rd = dtypes.REAL_OF[dt]
    re = ops.convert_element_type(x, rd) if _dt(x) != rd else x
    return Pair(re, _zeros(re))


def _flatten(vals):
    out = []
    for v in vals:
        out += [v.re, v.im] if isinstance(v, Pair) else [v]
    return out


def _unflatten(flat, like_avals):
    out, i = [], 0
    for a in like_avals:
        if _is_c(a):
            out.append(Pair(flat[i], flat[i + 1]))
            i += 2
        else:
            out.append(flat[i])
            i += 1
    return out


def _split_avals(avals):
    out = []
    for a in avals:
        if _is_c(a):
            r = ShapedArray(a.shape, dtypes.REAL_OF[a.dtype])
            out += [r, r]
        else:
            out.append(a)
    return out


def eval_split(jaxpr: Jaxpr, consts, args):
    """Evaluate ``jaxpr`` in the active trace with complex values as ``Pair``s."""
    env: dict = {}
    for v, c in zip(jaxpr.constvars, consts):
        env[v.id] = c
    for v, x in zip(jaxpr.invars, args):
        env[v.id] = x

    def read(a):
        return _literal(a) if type(a) is Literal else env[a.id]

    for e in jaxpr.eqns:
        vals = [read(a) for a in e.invars]
        ctx = source_info(e.source_info) if e.source_info is not None else contextlib.nullcontext()
        with ctx:
            if not _eqn_uses_complex(e):
                outs = e.prim.bind(*vals, **e.params)
            else:
                outs = _rule(e, vals)
        if e.prim.multiple_results:
            for v, o in zip(e.outvars, outs):
                env[v.id] = o
        else:
            env[e.outvars[0].id] = outs
    return [read(a) for a in jaxpr.outvars]


def _closed_fun(closed: ClosedJaxpr, nconsts_vals=()):
    """A Python function of flat split values that evaluates ``closed`` on them (the consts of
    ``closed`` and ``nconsts_vals``, already split values, come first)."""
    jaxpr = closed.jaxpr
    cvals = [_from_const(c) for c in closed.consts]
    n = len(nconsts_vals)

    def fn(*flat):
        args = _unflatten(list(flat), [v.aval for v in jaxpr.invars[n:]])
        outs = eval_split(jaxpr, cvals, list(nconsts_vals) + args)
        return outs

    return fn


def _from_const(c):
    a = np.asarray(c)
    if a.dtype.kind == "c":
        rd = dtypes.REAL_OF[np.dtype(a.dtype)]
        return Pair(np.ascontiguousarray(a.real, rd), np.ascontiguousarray(a.imag, rd))
    return c


def _rule(e, vals):  # noqa: C901 (one dispatch over the primitives, read top to bottom)
    name = e.prim.name
    p = e.params
    in_c = [_is_c(v.aval) for v in e.invars]
    out_aval = e.outvars[0].aval if e.outvars else None
    if name in ELEMENTWISE:
        dt = next(v.aval.dtype for v in e.invars if _is_c(v.aval))
        shape = out_aval.shape  # (a rank-0 operand, a literal say, is broadcast: select_n)
        pairs = [_as_pair(x, dt) for x in vals]
        return ELEMENTWISE[name](*[Pair(_bcast(q.re, shape), _bcast(q.im, shape)) for q in pairs])
    if name == "integer_pow":
        return _integer_pow(vals[0], p["y"])
    if name == "abs":
        return _abs(vals[0])
    if name == "real":
        return vals[0].re
    if name == "imag":
        return vals[0].im
    if name == "complex":
        x, y = vals
        shape = out_aval.shape
        return Pair(_bcast(x, shape), _bcast(y, shape))
    if name in ("eq", "ne"):
        dt = next(v.aval.dtype for v in e.invars if _is_c(v.aval))
        a, b = (_as_pair(x, dt) for x in vals)
        if name == "eq":
            return ops.bitwise_and(ops.eq(a.re, b.re), ops.eq(a.im, b.im))
        return ops.bitwise_or(ops.ne(a.re, b.re), ops.ne(a.im, b.im))
    if name == "convert_element_type":
        new = np.dtype(p["new_dtype"])
        x = vals[0]
        if new in dtypes.COMPLEX:
            rd = dtypes.REAL_OF[new]
            if isinstance(x, Pair):
                return Pair(ops.convert_element_type(x.re, rd), ops.convert_element_type(x.im, rd))
            if x is not None and _dt(x) == dtypes.bool_:
                x = ops.convert_element_type(x, rd)
            re = ops.convert_element_type(x, rd)
            return Pair(re, _zeros(re))
        if new == dtypes.bool_:
            return ops.bitwise_or(ops.ne(x.re, _k(0, x.re)), ops.ne(x.im, _k(0, x.im)))
        return ops.convert_element_type(x.re, new)  # the real part, as XLA
    if name in PARTWISE:
        if not any(in_c) and _is_c(out_aval):  # (pad/concat of literals only)
            _unsupported(e)
        dt = next(v.aval.dtype for v, c in zip(e.invars, in_c) if c) if any(in_c) else None
        res = []
        for part in ("re", "im"):
            args = [getattr(_as_pair(x, dt), part) if c else x for x, c in zip(vals, in_c)]
            res.append(e.prim.bind(*args, **p))
        if e.prim.multiple_results:
            return [Pair(r, i) if _is_c(v.aval) else r for r, i, v in zip(*res, e.outvars)]
        return Pair(*res) if _is_c(out_aval) else res[0]
    if name == "dot_general":
        dt = out_aval.dtype if _is_c(out_aval) else None
        if dt is None:
            _unsupported(e)
        pet = p.get("preferred_element_type")
        q = dict(p)
        if pet is not None and np.dtype(pet) in dtypes.COMPLEX:
            q["preferred_element_type"] = dtypes.REAL_OF[np.dtype(pet)]
        a, b = (_as_pair(x, dt) for x in vals)

        def dot(x, y):
            return e.prim.bind(x, y, **q)

        if not in_c[1]:
            return Pair(dot(a.re, vals[1]), dot(a.im, vals[1]))
        if not in_c[0]:
            return Pair(dot(vals[0], b.re), dot(vals[0], b.im))
        return Pair(
            ops.sub(dot(a.re, b.re), dot(a.im, b.im)),
            ops.add(dot(a.re, b.im), dot(a.im, b.re)),
        )
    if name in ("reduce_prod", "reduce_max", "reduce_min"):
        a = vals[0]
        rd = _dt(a.re)
        if name == "reduce_prod":
            init = (np.asarray(1, rd), np.asarray(0, rd))

            def comb(x, y):
                r = _mul(Pair(*x), Pair(*y))
                return (r.re, r.im)
        else:
            big = name == "reduce_max"
            init = (np.asarray(-math.inf if big else math.inf, rd), np.asarray(0, rd))

            def comb(x, y, big=big):
                r = _order(Pair(*x), Pair(*y), big)
                return (r.re, r.im)

        re, im = lax.reduce((a.re, a.im), init, comb, p["axes"])
        return Pair(re, im)
    if name == "associative_scan":
        nc = p["num_consts"]
        consts = vals[:nc]
        xs = vals[nc:]
        elem_avals = [v.aval for v in e.invars[nc:]]
        k = len(xs)
        fn = _closed_fun(p["combine"], consts)

        def combine(x, y):
            outs = fn(*_flatten(_unflatten(list(x), elem_avals)), *list(y))
            return tuple(_flatten(outs))

        flat = tuple(_flatten(xs))
        del k
        outs = lax.associative_scan(combine, flat, reverse=p["reverse"], axis=p["axis"])
        return _unflatten(list(outs), [v.aval for v in e.outvars])
    if name == "scan":
        nc, ncar = p["num_consts"], p["num_carry"]
        body = _closed_fun(p["jaxpr"], vals[:nc])
        in_avals = [v.aval for v in e.invars[nc:]]
        carry_avals, x_avals = in_avals[:ncar], in_avals[ncar:]
        out_avals = [v.aval for v in e.outvars]

        def f(carry, x):
            outs = body(*carry, *x)
            return tuple(_flatten(outs[:ncar])), tuple(_flatten(outs[ncar:]))

        init = tuple(_flatten(vals[nc : nc + ncar]))
        xs = tuple(_flatten(vals[nc + ncar :]))
        del carry_avals, x_avals
        carry, ys = lax.scan(
            f, init, xs, length=p["length"], reverse=p["reverse"], unroll=p.get("unroll", 1)
        )
        return _unflatten(list(carry) + list(ys), out_avals)
    if name == "while":
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cond = _closed_fun(p["cond_jaxpr"], vals[:cn])
        body = _closed_fun(p["body_jaxpr"], vals[cn : cn + bn])
        init = vals[cn + bn :]

        def cond_fun(c):
            return cond(*c)[0]

        def body_fun(c):
            return tuple(_flatten(body(*c)))

        out = lax.while_loop(cond_fun, body_fun, tuple(_flatten(init)))
        return _unflatten(list(out), [v.aval for v in e.outvars])
    if name == "cond":
        index, ops_ = vals[0], vals[1:]
        flat = _flatten(ops_)
        branches = [_closed_fun(b) for b in p["branches"]]
        fns = [(lambda *a, b=b: tuple(_flatten(b(*a)))) for b in branches]
        out = lax.switch(index, fns, *flat)
        return _unflatten(list(out), [v.aval for v in e.outvars])
    if name == "reduce":  # lax.reduce with a complex operand: its computation on pairs
        n = len(e.outvars)
        fn = _closed_fun(p["computation"])

        def computation(x, y):
            return tuple(_flatten(fn(*x, *y)))

        outs = lax.reduce(
            tuple(_flatten(vals[:n])), tuple(_flatten(vals[n:])), computation, p["dimensions"]
        )
        return _unflatten(list(outs), [v.aval for v in e.outvars])
    if name in ("pure_callback", "io_callback", "debug_callback"):
        return _callback(e, vals, in_c)
    if name == "sort":
        return _sort(e, vals, in_c)
    if e.prim.group == "linalg" and name not in NOT_ON_LANES:
        return _library_step(e, vals, in_c)
    # fft: its own real-lanes form (functx/control/fft.py's on_lanes, where the fft branch has it;
    # until then, refused by name below)
    on_lanes = getattr(fft_mod, "on_lanes", None) if name == "fft" else None
    if on_lanes is not None:
        return on_lanes(vals[0], p["fft_type"], p["fft_lengths"], Pair)
    if name in ("custom_jvp_call", "custom_vjp_call", "checkpoint"):
        sub = p.get("call_jaxpr", p.get("jaxpr"))
        if isinstance(sub, ClosedJaxpr):
            return _closed_fun(sub)(*_flatten(vals))
        if isinstance(sub, Jaxpr):
            return eval_split(sub, [], vals)
    return _unsupported(e)


def _stack(pair, shape):
    """A pair as one real array of ``shape + (2,)`` (NumPy's layout of complex values)."""
    n = len(shape)
    cols = [
        ops.broadcast_in_dim(_bcast(v, shape), tuple(shape) + (1,), tuple(range(n)))
        for v in (pair.re, pair.im)
    ]
    return ops.concatenate(cols, n)


def _unstack(x, shape):
    n = len(shape)
    parts = [
        ops.squeeze(ops.slice(x, (0,) * n + (j,), tuple(shape) + (j + 1,)), (n,)) for j in (0, 1)
    ]
    return Pair(*parts)


def _callback(e, vals, in_c):
    """A host callback with complex operands or results: they cross as real arrays with a
    trailing axis of 2, and the callback sees (and returns) complex NumPy arrays as before."""
    in_dt = [v.aval.dtype if c else None for v, c in zip(e.invars, in_c)]
    p = dict(e.params)
    fn = p["callback"]
    res = p.get("result_avals")
    out_dt = [a.dtype if _is_c(a) else None for a in res] if res is not None else []

    def host(*args):
        args = [
            np.ascontiguousarray(a).view(dt)[..., 0] if dt is not None else a
            for a, dt in zip(args, in_dt)
        ]
        out = fn(*args)
        if res is None:
            return out
        return [
            np.stack([np.real(o), np.imag(o)], -1).astype(dtypes.REAL_OF[dt])
            if dt is not None
            else o
            for o, dt in zip(out, out_dt)
        ]

    p["callback"] = host
    if res is not None:
        p["result_avals"] = tuple(
            ShapedArray(tuple(a.shape) + (2,), dtypes.REAL_OF[a.dtype]) if _is_c(a) else a
            for a in res
        )
    args = [_stack(x, v.aval.shape) if c else x for x, v, c in zip(vals, e.invars, in_c)]
    outs = e.prim.bind(*args, **p)
    if res is None:
        return outs
    return [_unstack(o, a.shape) if _is_c(a) else o for o, a in zip(outs, res)]


def _sort(e, vals, in_c):
    """``sort`` with complex operands: each complex operand as its two parts, a complex key as
    two real keys (the real part, then the imaginary part: JAX's order of complex keys, each
    part compared as a float key), so the sort kernels see real operands only and move each
    part's own bits."""
    p = e.params
    flat, num_keys = [], 0
    for i, (x, v, c) in enumerate(zip(vals, e.invars, in_c)):
        parts = [x.re, x.im] if c else [x]
        if c and not isinstance(x, Pair):
            q = _as_pair(x, v.aval.dtype)
            parts = [q.re, q.im]
        flat += parts
        num_keys += len(parts) if i < p["num_keys"] else 0
    outs = e.prim.bind(*flat, dimension=p["dimension"], is_stable=p["is_stable"], num_keys=num_keys)
    return _unflatten(list(outs), [v.aval for v in e.outvars])


#: linear-algebra primitives kept off the lanes: JAX computes ``eig`` on the CPU only
NOT_ON_LANES = frozenset({"eig"})


def _lanes_aval(a):
    return ShapedArray(tuple(a.shape) + (2,), dtypes.REAL_OF[a.dtype]) if _is_c(a) else a


class LanesStep:
    """A linear-algebra library step (``control/linalg.py``'s ``LibraryStep``) whose complex
    operands and results cross as real lanes (a trailing axis of 2). ``torch`` is the step's own
    (``LibraryStep.torch`` reads interleaved lanes as complex tensors, and writes complex results
    back as lanes: ``torch.linalg`` on the device); ``__call__`` runs the step on NumPy lanes (the
    host path). Prints with its address, as every host step does."""

    __slots__ = ("step", "__weakref__")

    def __init__(self, step):
        self.step = step

    def __repr__(self):
        return f"<lanes {self.step!r}>"

    def __call__(self, *vals):
        args = [
            np.ascontiguousarray(x).view(a.dtype)[..., 0] if _is_c(a) else x
            for x, a in zip(vals, self.step.in_avals)
        ]
        return [
            np.stack([np.real(o), np.imag(o)], -1).astype(dtypes.REAL_OF[a.dtype])
            if _is_c(a)
            else o
            for o, a in zip(self.step(*args), self.step.out_avals)
        ]

    def torch(self, ins, outs):
        self.step.torch(ins, outs)


def _library_step(e, vals, in_c):
    """A linear-algebra equation with complex values (cholesky, triangular_solve, lu, eigh, qr,
    svd, ...): its library step on the lanes (a ``pure_callback`` equation whose callback is a
    ``LanesStep``: the host step the real program would have, with complex tensors)."""
    in_avals = [ShapedArray(v.aval.shape, v.aval.dtype) for v in e.invars]
    out_avals = [ShapedArray(v.aval.shape, v.aval.dtype) for v in e.outvars]
    step = LanesStep(linalg.LibraryStep(e.prim, e.params, in_avals, out_avals))
    args = [
        _stack(_as_pair(x, a.dtype), a.shape) if c else x for x, a, c in zip(vals, in_avals, in_c)
    ]
    outs = callbacks.pure_callback_p.bind(
        *args,
        callback=step,
        result_avals=tuple(_lanes_aval(a) for a in out_avals),
        vmap_method="sequential",
    )
    outs = [_unstack(o, a.shape) if _is_c(a) else o for o, a in zip(outs, out_avals)]
    return outs if e.prim.multiple_results else outs[0]


def split_complex(closed: ClosedJaxpr):
    """``closed`` with every complex value as two real lanes (see the module docstring).

    Arguments:
      closed: a program that uses complex values (``uses_complex(closed.jaxpr)``).
    Returns:
      ``(real_closed, in_complex, out_complex)``: the rewritten program (its complex inputs and
      outputs as real arrays with a trailing axis of 2) and, for each input and each output,
      whether it was complex.
    Example:
      >>> closed = functx.make_jaxpr(lambda z: z * z)(np.ones(3, np.complex64))
      >>> real, cin, cout = split_complex(closed)
      >>> real.in_avals, cin, cout
      ([ShapedArray(float32[3,2])], [True], [True])
    """
    in_avals = closed.in_avals
    in_c = [_is_c(a) for a in in_avals]
    out_c = [_is_c(a) for a in closed.out_avals]
    avals = [
        ShapedArray(tuple(a.shape) + (2,), dtypes.REAL_OF[a.dtype]) if c else a
        for a, c in zip(in_avals, in_c)
    ]
    consts = [_from_const(c) for c in closed.consts]

    def flat(*args):
        vals = []
        for x, a, c in zip(args, in_avals, in_c):
            vals.append(_unstack(x, tuple(a.shape)) if c else x)
        outs = eval_split(closed.jaxpr, consts, vals)
        res = []
        for o, a in zip(outs, closed.out_avals):
            res.append(_stack(o, tuple(a.shape)) if isinstance(o, Pair) else o)
        return res, None

    real, _ = tracing.trace_flat(flat, avals)
    return passes.simplify(real), in_c, out_c


__all__ = ["Pair", "split_complex", "uses_complex", "eval_split", "ELEMENTWISE", "PARTWISE"]
