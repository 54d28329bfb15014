"""A differential fuzzer of random programs. A recipe (a short list of ``functx.numpy`` and
``functx.lax`` calls on shapes it tracks) is drawn from a seed that hypothesis draws, and written
out as the source of a Python function ``f(x, k)`` (``x`` a float64, float32 or int32 array, ``k``
four int32 values that traced starts and index arrays read). That one source runs on every path
that must agree:

* JAX, ``jax.jit(f)``, the reference (float64 with ``jax_enable_x64`` as the suite runs; float32
  with tolerances; int32 exactly); where it differs, JAX again op by op (``agree_with_jax``),
* functx's eager interpreter (``f`` on functx Arrays),
* ``functx.jit(f)``, the C++ backend, called three times (NumPy inputs, functx Arrays, a strided
  view), or ``jit(backend="triton")`` in Triton's CPU interpreter (``test_fuzz_triton``),
* ``jit(grad)`` of a weighted sum of the outputs (weights that differ per element, so that a
  transposed or permuted cotangent shows), and ``jit(vmap)`` over a new leading axis of ``x``
  (``k`` batched or not).

The recipes lean on what the lowering turns into index arithmetic: transposes, reshapes that split
and merge axes, broadcasts, slices with negative steps, flips, pads of every mode, concatenation,
rolls, dynamic slices and updates at traced starts, gathers and scatters (literal, traced and
run-time index arrays), tiles, repeats, convolutions and windowed reductions, between elementwise
ops, reductions, cumulative ops, products and ``fori_loop``/``scan`` bodies built from the same
ops; a program returns its last value and sometimes earlier ones. JAX's ``eval_shape`` of each
drawn call gives its shape (a call JAX rejects is drawn again), so the recipes stay valid without
a second copy of JAX's shape rules here. A failure prints the function's source and the seed of
its inputs (``Program.inputs``): run the source under ``import jax.numpy as jnp; from jax import
lax`` or functx's names to reproduce.

The default suite runs a few programs per property (about 15 s of CPU in all, with g++);
``FUNCTX_FUZZ_EXAMPLES=N`` runs the ``slow`` variants with N random (not derandomized) programs
each::

    FUNCTX_FUZZ_EXAMPLES=500 python -m pytest -m slow tests/lowering/test_fuzz_programs.py -n 2

JAX 0.10.2's XLA aborts the whole process on some programs (3 of about 450 in my last runs, each
an ``x.at[a::b].set/min/max(scalar)`` followed by a flip; e.g. ``x.at[-1:].set(-0.25)``, then
``lax.rev``, a concatenation with its flip and a padded ``reduce_window``: "Invalid binary
instruction opcode map" in ``hlo_instruction.cc``); under xdist that shows as a crashed worker,
not as a functx failure: run the printed program with functx alone.
"""

from __future__ import annotations

import functools
import math
import os
import random
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import functx
import functx.lax as flax
import functx.numpy as fnp

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)

FX = {"jnp": fnp, "lax": flax}
JX = {"jnp": jnp, "lax": jax.lax}

# interpreted programs see NaN from out-of-range `take` and overflow in cumulative products
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# --------------------------------------------------------------------------------------------
# The program: source text, built into a function for either library
# --------------------------------------------------------------------------------------------
class Program:
    """A drawn recipe: the body lines of ``f(x, k)``, the input shape and dtype, the seed of the
    input values, and the output's name."""

    def __init__(self, lines, shape, dtype, seed, outs):
        self.lines, self.shape, self.dtype, self.seed, self.outs = lines, shape, dtype, seed, outs

    def source(self) -> str:
        body = "".join(f"    {ln}\n" for ln in self.lines)
        return f"def f(x, k):\n{body}    return {', '.join(self.outs)}\n"

    def build(self, lib):
        scope = dict(lib)
        exec(self.source(), scope)  # noqa: S102 - the program under test is generated source
        return scope["f"]

    def inputs(self, rng=None):
        rng = np.random.default_rng(self.seed) if rng is None else rng
        return _values(rng, self.shape, self.dtype), rng.integers(-3, 9, 4).astype(np.int32)

    def __repr__(self) -> str:
        return (
            f"\n{self.source()}"
            f"x, k = Program.inputs(): _values(np.random.default_rng({self.seed}), {self.shape}, "
            f"{self.dtype!r}), then rng.integers(-3, 9, 4) as int32\n"
        )


def _values(rng, shape, dtype):
    """Input values: floats in [-1.5, 1.5], integers in [-20, 20]."""
    if np.dtype(dtype).kind == "i":
        return rng.integers(-20, 21, shape).astype(dtype)
    return rng.uniform(-1.5, 1.5, shape).astype(dtype)


def _struct(shape, dtype):
    return jax.ShapeDtypeStruct(tuple(shape), np.dtype(dtype))


KS = _struct((4,), np.int32)  # k


class Gen:
    """Draws one function body step by step. ``vals`` are the names in scope with their abstract
    values (the current value is the last); ``ints`` the traced integer expressions a start or
    index may use; ``ops`` the table the steps are drawn from."""

    def __init__(self, rnd, params, ints, ops, max_elems, prefix="x", depth=0, oob=True, kind=None):
        self.rnd, self.ints, self.ops, self.max_elems = rnd, ints, ops, max_elems
        # gathers may read out of range (clamped); not in gradient programs, where functx's
        # gradient is the clamped gather's and JAX's drops it (docs/differences.md)
        self.oob = oob
        self.params = list(params)  # [(name, struct)] the function's parameters
        self.kind = kind or params[0][1].dtype.kind  # the values: floats or integers
        # the values in scope, the first parameter last (the current value)
        self.vals = [p for p in params[::-1] if p[1].dtype.kind == self.kind]
        self.lines: list[str] = []
        self.prefix, self.depth, self.n = prefix, depth, 0

    # drawing helpers
    def int(self, lo, hi):
        return self.rnd.randint(lo, hi)

    def pick(self, seq):
        return self.rnd.choice(list(seq))

    def coin(self):
        return self.rnd.random() < 0.5

    def one_of(self, *forms):
        """One of ``forms`` (functions of no argument that draw and return a call), called."""
        return self.rnd.choice(forms)()

    def ints_list(self, lo, hi, m):
        return [self.rnd.randint(lo, hi) for _ in range(m)]

    def maybe_int(self, lo, hi):
        return None if self.rnd.random() < 0.3 else self.rnd.randint(lo, hi)

    def axes(self, r):
        """A sorted, non-empty set of axes of a rank-``r`` value."""
        return sorted(self.rnd.sample(range(r), self.rnd.randint(1, r)))

    @property
    def cur(self):
        return self.vals[-1]

    def body(self, params, ints):
        """The drawer of a loop body: shape-preserving ops on the carry (the first of
        ``params``), reading the other parameters, ``k`` and ``ints``."""
        return Gen(
            self.rnd,
            [*params, ("k", KS)],
            ints,
            PRESERVING,
            self.max_elems,
            prefix="c",
            depth=1,
            oob=self.oob,
            kind=self.kind,
        )

    def squash(self, body):
        """A loop body's carry out: float ones through ``tanh``, so that sums of sums over the
        iterations do not grow until rounding differences dominate."""
        c = body.cur[0]
        return f"jnp.tanh({c})" if self.kind == "f" else c

    def start(self, n):
        """A start or index for an axis of size ``n``: traced (``k[j]``, ``i``) or a literal,
        sometimes out of range (JAX clamps dynamic starts)."""
        if self.coin():
            return self.pick(self.ints)
        return str(self.int(-2, n + 1))

    def const(self, shape, dtype_of):
        """A deterministic, non-uniform constant of ``shape`` in the dtype of ``dtype_of``."""
        size = math.prod(shape)
        s = self.int(0, 9)
        if self.kind == "i":
            vals = f"(jnp.arange({size}) * {s + 2} % 11 - 5)"
        else:
            vals = f"jnp.cos(jnp.arange({size}) * 0.7 + {s})"
        return f"{vals}.reshape({tuple(shape)}).astype({dtype_of}.dtype)"

    def same_shape(self, shape, exclude=None):
        """Names in scope whose shape is ``shape``."""
        return [
            n
            for n, v in self.vals
            if tuple(v.shape) == tuple(shape) and n != exclude and v.dtype.kind == self.kind
        ]

    # one step
    def try_step(self, pre_lines, expr):
        """Shape ``expr`` (after ``pre_lines``) with JAX; keep it as the next value if JAX accepts
        it and it is not too large."""
        self.n += 1
        name = f"{self.prefix}{self.n}"
        lines = [*pre_lines, f"{name} = {expr}"]
        names = [n for n, _ in self.params]
        src = (
            f"def _g({', '.join(names)}):\n"
            + textwrap.indent("\n".join(self.lines + lines), "    ")
            + f"\n    return {name}\n"
        )
        scope = dict(JX)
        try:
            exec(src, scope)  # noqa: S102
            out = jax.eval_shape(scope["_g"], *[v for _, v in self.params])
        except Exception:  # noqa: BLE001 - JAX rejects the drawn call: draw another
            self.n -= 1
            return False
        if not isinstance(out, jax.ShapeDtypeStruct) or math.prod(out.shape) > self.max_elems:
            self.n -= 1
            return False
        if out.dtype.kind != self.kind or len(out.shape) > 4 or 0 in out.shape:
            self.n -= 1
            return False
        self.lines += lines
        self.vals.append((name, out))
        return True

    def step(self):
        for _ in range(8):
            name, v = self.cur
            op = self.pick(sorted(self.ops))
            drawn = self.ops[op](self, name, tuple(v.shape))
            if drawn is not None and self.try_step(*drawn):
                return True
        return False


# --------------------------------------------------------------------------------------------
# The ops: each draws one call on the current value ``x`` (of shape ``s``) and returns
# (lines before it, the expression), or None where it does not apply
# --------------------------------------------------------------------------------------------
UNARY_INT = [
    "{x} // 3",
    "{x} % 3",
    "jnp.floor_divide({x}, -2)",
    "jnp.remainder({x}, -3)",
    "lax.div({x}, 3)",
    "lax.rem({x}, -3)",
    "{x} >> 1",
    "jnp.abs({x})",
    "-{x}",
    "{x} * 3 - 7",
    "jnp.clip({x}, -5, 9)",
    "jnp.sign({x})",
]
BINARY_INT = [
    "{x} + {y}",
    "{x} * {y}",
    "jnp.maximum({x}, {y})",
    "{x} // (jnp.abs({y}) + 1)",
    "{x} % (jnp.abs({y}) + 1)",
    "jnp.where({y} > 0, {x}, {y})",
]
UNARY = [
    "jnp.sin({x})",
    "jnp.tanh({x})",
    "{x} * 0.5 + 0.25",
    "jnp.abs({x})",
    "jnp.maximum({x}, 0.1)",
    "jnp.exp(-{x} * {x})",
    "{x} * {x}",
    "jnp.where({x} > 0.2, {x}, -0.5 * {x})",
    "jnp.sqrt(jnp.abs({x}) + 0.5)",
    "-{x}",
]
BINARY = [
    "{x} + {y}",
    "{x} - {y}",
    "{x} * {y}",
    "jnp.maximum({x}, {y})",
    "jnp.where({y} > 0.0, {x}, {y})",
]


def min_rank(n):
    """An op that applies to values of rank ``n`` or more."""

    def wrap(op):
        return functools.wraps(op)(lambda g, x, s: op(g, x, s) if len(s) >= n else None)

    return wrap


def op_unary(g, x, s):
    return [], g.pick(UNARY if g.kind == "f" else UNARY_INT).format(x=x)


def op_binary(g, x, s):
    """``x`` with an earlier value that broadcasts against it (two index maps in one kernel)."""
    others = [n for n, v in g.vals[:-1] if _broadcasts(v.shape, s)]
    if not others:
        return None
    y = g.pick(others)
    a, b = (x, y) if g.coin() else (y, x)
    return [], g.pick(BINARY if g.kind == "f" else BINARY_INT).format(x=a, y=b)


def _broadcasts(a, b):
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b))) == tuple(b)
    except ValueError:
        return False


def variants(*forms):
    """An op that draws one of ``forms``: functions ``(g, x, rank) -> call``."""
    return lambda g, x, s: ([], g.pick(forms)(g, x, len(s)))


# ops that are one call with drawn arguments: name -> (minimum rank, forms)
FORMS = {
    "transpose": (
        2,
        (
            lambda g, x, r: f"{x}.T",
            lambda g, x, r: f"jnp.swapaxes({x}, {g.int(-r, r - 1)}, {g.int(-r, r - 1)})",
            lambda g, x, r: f"jnp.moveaxis({x}, {g.int(-r, r - 1)}, {g.int(-r, r - 1)})",
            lambda g, x, r: f"jnp.transpose({x}, {tuple(g.rnd.sample(range(r), r))})",
        ),
    ),
    "flip": (
        1,
        (
            lambda g, x, r: f"jnp.flip({x}, axis={g.int(-r, r - 1)})",
            lambda g, x, r: f"jnp.flip({x})",
            lambda g, x, r: f"jnp.flip({x}, axis={tuple(g.axes(r))})",
            lambda g, x, r: f"lax.rev({x}, {tuple(g.axes(r))})",
        ),
    ),
    "roll": (
        1,
        (
            lambda g, x, r: f"jnp.roll({x}, {g.int(-9, 9)}, axis={g.int(-r, r - 1)})",
            lambda g, x, r: f"jnp.roll({x}, {g.int(-9, 9)})",
            lambda g, x, r: (
                f"jnp.roll({x}, {(g.int(-5, 5), g.int(-5, 5))}, "
                f"axis={(g.int(0, r - 1), g.int(0, r - 1))})"
            ),
        ),
    ),
}
FORM_OPS = {name: min_rank(n)(variants(*forms)) for name, (n, forms) in FORMS.items()}


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def op_reshape(g, x, s):
    n = math.prod(s)
    kind = g.pick(["merge", "split", "flat", "any"])
    if kind == "merge" and len(s) >= 2:
        i = g.int(0, len(s) - 2)
        new = s[:i] + (s[i] * s[i + 1],) + s[i + 2 :]
    elif kind == "split" and s:
        i = g.int(0, len(s) - 1)
        a = g.pick(_divisors(s[i]))
        new = s[:i] + (a, s[i] // a) + s[i + 1 :]
    elif kind == "flat":
        new = (n,)
    else:
        new, rest = [], n
        for _ in range(g.int(0, 3)):
            d = g.pick(_divisors(rest))
            new.append(d)
            rest //= d
        new = (*new, rest)
    new = list(new)
    if new and g.coin():
        new[g.int(0, len(new) - 1)] = -1
    return [], g.pick(["jnp.reshape({x}, {t})", "{x}.reshape({t})"]).format(x=x, t=tuple(new))


def op_broadcast(g, x, s):
    r = len(s)
    p = g.int(0, r)
    return [], g.one_of(
        lambda: f"jnp.broadcast_to(jnp.expand_dims({x}, {p}), {s[:p] + (g.int(1, 3),) + s[p:]})",
        lambda: f"jnp.broadcast_to({x}, {tuple(g.int(1, 4) if d == 1 else d for d in s)})",
        lambda: f"jnp.broadcast_to({x}, {(g.int(1, 3),) + s})",
        lambda: f"jnp.expand_dims({x}, {g.int(-r - 1, r)})",
        lambda: f"{x}[{'...,' if g.coin() else ':, ' * p}None]",
    )


def op_squeeze(g, x, s):
    ones = [i for i, d in enumerate(s) if d == 1]
    if not ones:
        return None
    a = g.pick(ones)
    return [], g.pick(["jnp.squeeze({x}, axis={a})", "lax.squeeze({x}, ({a},))"]).format(x=x, a=a)


@min_rank(1)
def op_slice(g, x, s):
    parts = []
    for n in s:
        kind = g.pick(["all", "all", "range", "range", "range", "int"])
        if kind == "all":
            parts.append(":")
        elif kind == "int":
            parts.append(str(g.int(-n, n - 1)))
        else:
            step = g.pick([1, 1, 2, 3, -1, -1, -2, -3])
            start, stop = g.maybe_int(-n - 1, n + 1), g.maybe_int(-n - 1, n + 1)
            if not range(n)[slice(start, stop, step)]:
                start, stop = None, None
            txt = f"{'' if start is None else start}:{'' if stop is None else stop}"
            parts.append(txt + ("" if step == 1 else f":{step}"))
    return [], f"{x}[{', '.join(parts)}]"


@min_rank(1)
def op_lax_slice(g, x, s):
    starts, limits, strides = [], [], []
    for n in s:
        a = g.int(0, n - 1)
        starts.append(a)
        limits.append(g.int(a + 1, n))
        strides.append(g.int(1, 3))
    return [], f"lax.slice({x}, {tuple(starts)}, {tuple(limits)}, {tuple(strides)})"


@min_rank(1)
def op_pad(g, x, s):
    mode = g.pick(["constant", "edge", "reflect", "symmetric", "wrap"])
    widths = []
    for n in s:
        hi = {"reflect": n - 1, "symmetric": n, "wrap": n}.get(mode, 3)
        hi = min(hi, 3)
        widths.append((g.int(0, hi), g.int(0, hi)))
    extra = ", constant_values=-0.75" if mode == "constant" and g.coin() else ""
    return [], f"jnp.pad({x}, {tuple(widths)}, mode={mode!r}{extra})"


def op_lax_pad(g, x, s):
    cfg = tuple((g.int(-2, 3), g.int(-2, 3), g.int(0, 2)) for _ in s)
    return [], f"lax.pad({x}, {g.pick(['0.0', '0.5', '-1.25'])}, {cfg})"


@min_rank(1)
def op_concat(g, x, s):
    r = len(s)
    a = g.int(0, r - 1)
    cands = [
        n
        for n, v in g.vals
        if len(v.shape) == r and all(v.shape[i] == s[i] for i in range(r) if i != a)
    ]
    other = g.pick(cands + [f"jnp.flip({x}, {a})", f"jnp.sin({x})"])
    parts = [x, other] if g.coin() else [other, x, other]
    ax = a - r if g.coin() else a
    return [], f"jnp.concatenate([{', '.join(parts)}], axis={ax})"


def op_stack(g, x, s):
    if len(s) >= 4:
        return None
    other = g.pick(g.same_shape(s) + [f"jnp.cos({x})"])
    return [], f"jnp.stack([{x}, {other}], axis={g.int(-len(s) - 1, len(s))})"


@min_rank(1)
def op_dynamic_slice(g, x, s):
    starts = ", ".join(g.start(n) for n in s)
    sizes = tuple(g.int(1, n) for n in s)
    return [], f"lax.dynamic_slice({x}, ({starts},), {sizes})"


@min_rank(1)
def op_dynamic_update_slice(g, x, s):
    sizes = [g.int(1, n) for n in s]
    upd = f"jnp.sin({x}[{', '.join(f':{m}' for m in sizes)}]) * 2.0"
    if g.coin():
        upd = g.const(sizes, x)
    starts = ", ".join(g.start(n) for n in s)
    return [], f"lax.dynamic_update_slice({x}, {upd}, ({starts},))"


def _index_array(g, n, oob=True, unique=False, size=None):
    """A literal int index array for an axis of size ``n`` (negative indices too, sometimes out
    of range when ``oob``)."""
    lo, hi = (-n - 2, n + 1) if oob and g.int(0, 4) == 0 else (-n, n - 1)
    m = size or g.int(1, 5)
    if unique:
        m = min(m, n)
        vals = g.rnd.sample(range(n), m)
        vals = [v - n if g.coin() else v for v in vals]
    else:
        vals = g.ints_list(lo, hi, m)
    if size is None and m % 2 == 0 and g.coin():
        return f"jnp.array({np.array(vals).reshape(2, m // 2).tolist()})"
    return f"jnp.array({vals})"


@min_rank(1)
def op_gather(g, x, s):
    r = len(s)
    kind = g.pick(["lead", "axis", "traced", "traced_k", "take", "take_along", "sort"])
    a = g.int(0, r - 1)
    n = s[a]
    if kind == "traced_k":  # an index array computed at run time
        if g.coin():
            return [], f"{x}[{':, ' * a}{'k' if g.oob else f'k % {n}'}]"
        mode = g.pick(["clip", "wrap", "fill"] if g.oob else ["clip", "wrap"])
        return [], f"jnp.take({x}, k, axis={a}, mode={mode!r})"
    if kind == "sort":
        return [], f"jnp.take_along_axis({x}, jnp.argsort({x}, axis={a}), axis={a})"
    if kind == "lead":
        return [], f"{x}[{_index_array(g, s[0], oob=g.oob)}]"
    if kind == "axis":
        return [], f"{x}[{':, ' * a}{_index_array(g, n, oob=g.oob)}]"
    if kind == "traced":
        i = g.pick(g.ints)
        return [], f"{x}[{':, ' * a}{i if g.oob else f'{i} % {n}'}]"
    if kind == "take":
        mode = g.pick([None, "clip", "wrap", "fill"])
        extra = "" if mode is None else f", mode={mode!r}"
        return [], f"jnp.take({x}, {_index_array(g, n, oob=g.oob)}, axis={a}{extra})"
    m = g.int(1, 4)
    shape = s[:a] + (m,) + s[a + 1 :]
    idx = np.array(g.ints_list(-n, n - 1, math.prod(shape))).reshape(shape).tolist()
    return [], f"jnp.take_along_axis({x}, jnp.array({idx}), axis={a})"


@min_rank(1)
def op_scatter(g, x, s):
    op = g.pick(["set", "add", "multiply", "min", "max"])
    kind = g.pick(["lead", "axis", "traced", "traced_k", "slice"])
    r = len(s)
    a = g.int(0, r - 1) if kind in ("axis", "traced_k") else 0
    if kind == "traced":
        where, ishape = g.pick(g.ints), ()
    elif kind == "traced_k":  # indices computed at run time, repeated ones too
        if op == "set":
            op = "add"
        where, ishape = ":, " * a + g.pick(["k", f"k % {s[a]}", f"-k % {s[a]}"]), (4,)
    elif kind == "slice":
        lo, step = g.int(-s[0], s[0] - 1), g.pick([1, 2, -1])
        where, ishape = f"{lo}::{step}", (len(range(s[0])[lo::step]),)
    else:
        m = g.int(1, 4)
        where = ":, " * a + _index_array(g, s[a], oob=op != "set", unique=op == "set", size=m)
        ishape = (min(m, s[a]),) if op == "set" else (m,)
    ushape = s[:a] + ishape + s[a + 1 :]
    if g.coin() or not ushape:
        upd = g.pick(["1.5", "-0.25"] if g.kind == "f" else ["2", "-3"])
    else:
        upd = g.const(ushape, x)
    return [], f"{x}.at[{where}].{op}({upd})"


def op_tile(g, x, s):
    reps = tuple(g.int(1, 3) for _ in range(g.int(1, max(1, len(s)))))
    return [], f"jnp.tile({x}, {reps})"


@min_rank(1)
def op_repeat(g, x, s):
    a = g.int(0, len(s) - 1)
    if g.coin():
        return [], f"jnp.repeat({x}, {g.int(1, 3)}, axis={a})"
    if g.coin():
        return [], f"jnp.repeat({x}, {g.int(1, 2)})"
    reps = g.ints_list(0, 3, s[a])
    if not sum(reps):
        reps[0] = 1
    return [], f"jnp.repeat({x}, jnp.array({reps}), axis={a}, total_repeat_length={sum(reps)})"


def op_conv(g, x, s):
    if len(s) not in (3, 4):
        return None
    nsp = len(s) - 2
    groups = g.pick([d for d in _divisors(s[1]) if d <= 2])
    out_ch = groups * g.int(1, 2)
    kernel = tuple(g.int(1, 3) for _ in range(nsp))
    w = g.const((out_ch, s[1] // groups, *kernel), x)
    strides = tuple(g.int(1, 2) for _ in range(nsp))
    if g.coin():
        padding = repr(g.pick(["VALID", "SAME"]))
    else:
        padding = str(tuple((g.int(-1, 2), g.int(0, 2)) for _ in range(nsp)))
    lhs_dil = tuple(g.int(1, 2) for _ in range(nsp))
    rhs_dil = tuple(g.int(1, 2) for _ in range(nsp))
    return [], (
        f"lax.conv_general_dilated({x}, {w}, {strides}, {padding}, lhs_dilation={lhs_dil}, "
        f"rhs_dilation={rhs_dil}, feature_group_count={groups})"
    )


@min_rank(1)
def op_reduce_window(g, x, s):
    # (a window wholly in padding or dilation holes gives +-inf for max/min: clipped, so that
    # no infinity reaches a gradient, where inf * 0 patterns would differ by formula)
    comp, init, wrap = g.pick(
        [
            ("lax.add", "0.0", "{}"),
            ("lax.max", "-jnp.inf", "jnp.maximum({}, -4.0)"),
            ("lax.min", "jnp.inf", "jnp.minimum({}, 4.0)"),
        ]
    )
    win = tuple(g.int(1, min(n, 3)) for n in s)
    strides = tuple(g.int(1, 2) for _ in s)
    pad = tuple((g.int(0, 1), g.int(0, 1)) for _ in s)
    call = f"lax.reduce_window({x}, {init}, {comp}, {win}, {strides}, {pad}"
    if g.coin():
        base = tuple(g.int(1, 2) for _ in s)
        wdil = tuple(g.int(1, 2) for _ in s)
        call += f", base_dilation={base}, window_dilation={wdil}"
    return [], wrap.format(call + ")")


def op_reduce(g, x, s):
    fn = g.pick(["sum", "max", "min", "mean", "prod"])
    if fn == "prod":  # of values in [-1, 1]: no overflow
        x = f"jnp.cos({x})"
    r = len(s)
    if r and g.int(0, 3):
        axes = g.axes(r)
        axis = axes[0] if len(axes) == 1 else tuple(axes)
    else:
        axis = None
    keep = ", keepdims=True" if g.coin() else ""
    return [], f"jnp.{fn}({x}, axis={axis}{keep})"


@min_rank(1)
def op_argmax(g, x, s):
    fn = g.pick(["argmax", "argmin"])
    keep = ", keepdims=True" if g.coin() else ""
    return [], f"jnp.{fn}({x}, axis={g.int(-len(s), len(s) - 1)}{keep}).astype({x}.dtype) * 0.25"


@min_rank(1)
def op_cumulative(g, x, s):
    a = g.int(0, len(s) - 1)
    kind = g.pick(["cumsum", "cumprod", "cummax", "cumsum_rev"])
    if kind == "cummax":
        return [], f"lax.cummax({x}, axis={a}, reverse={g.coin()})"
    if kind == "cumsum_rev":
        return [], f"lax.cumsum({x}, axis={a}, reverse=True)"
    if kind == "cumprod":  # of values in [-1, 1]: no overflow
        x = f"jnp.cos({x})"
    return [], f"jnp.{kind}({x}, axis={a - len(s) if g.coin() else a})"


@min_rank(1)
def op_matmul(g, x, s):
    kind = g.pick(["const", "gram", "einsum", "vec"])
    if kind == "const" or len(s) < 2:
        m = g.int(1, 5)
        return [], f"{x} @ {g.const((s[-1], m), x)}"
    if kind == "gram":
        return [], f"jnp.matmul(jnp.swapaxes({x}, -1, -2), {x})"
    if kind == "vec":
        return [], f"jnp.dot({x}, {g.const((s[-1],), x)})"
    return [], f"jnp.einsum('...ij,...kj->...ik', {x}, {x})"


# shape-preserving ops: the bodies of loops
PRESERVING = {
    "unary": op_unary,
    "binary": op_binary,
    "flip": FORM_OPS["flip"],
    "roll": FORM_OPS["roll"],
    "cumulative": op_cumulative,
    "dynamic_update_slice": op_dynamic_update_slice,
    "scatter": op_scatter,
}


def op_fori(g, x, s):
    if g.depth:
        return None
    body = g.body([("c", _struct(s, g.cur[1].dtype)), ("i", _struct((), np.int32))], [*g.ints, "i"])
    for _ in range(g.int(1, 3)):
        body.step()
    if tuple(body.cur[1].shape) != s or not body.lines:
        return None
    fn = f"body{g.n + 1}"
    lines = [
        f"def {fn}(i, c):",
        *[f"    {ln}" for ln in body.lines],
        f"    return {g.squash(body)}",
    ]
    return lines, f"lax.fori_loop(0, {g.int(1, 4)}, {fn}, {x})"


def op_scan(g, x, s):
    if g.depth or not s:
        return None
    row = _struct(s[1:], g.cur[1].dtype)
    body = g.body([("c", row), ("r", row)], g.ints)
    body.try_step([], "c * 0.5 + r" if g.kind == "f" else "c // 2 + r")
    for _ in range(g.int(0, 2)):
        body.step()
    if tuple(body.cur[1].shape) != s[1:]:
        return None
    fn = f"body{g.n + 1}"
    c = body.cur[0]
    lines = [
        f"def {fn}(c, r):",
        *[f"    {ln}" for ln in body.lines],
        f"    return {g.squash(body)}, {'jnp.sin' if g.kind == 'f' else '3 * '}({c})",
    ]
    rev = ", reverse=True" if g.coin() else ""
    return lines, f"lax.scan({fn}, {x}[0] * 0, {x}{rev})[1]"


INDEX_OPS = {
    **FORM_OPS,
    "reshape": op_reshape,
    "broadcast": op_broadcast,
    "squeeze": op_squeeze,
    "slice": op_slice,
    "lax_slice": op_lax_slice,
    "pad": op_pad,
    "lax_pad": op_lax_pad,
    "concat": op_concat,
    "stack": op_stack,
    "dynamic_slice": op_dynamic_slice,
    "dynamic_update_slice": op_dynamic_update_slice,
    "gather": op_gather,
    "scatter": op_scatter,
    "tile": op_tile,
    "repeat": op_repeat,
    "conv": op_conv,
    "reduce_window": op_reduce_window,
    "unary": op_unary,
    "binary": op_binary,
}
MIXED_OPS = {
    **INDEX_OPS,
    "reduce": op_reduce,
    "argmax": op_argmax,
    "cumulative": op_cumulative,
    "matmul": op_matmul,
    "fori": op_fori,
    "scan": op_scan,
}
# what a program's steps are drawn from, by area
AREAS = {"index": INDEX_OPS, "mixed": MIXED_OPS}


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------
def small_shape(rnd):
    """Rank 1-4, sizes 1-7 (size-1 axes often)."""
    return tuple(1 if rnd.random() < 0.2 else rnd.randint(2, 7) for _ in range(rnd.randint(1, 4)))


def tiny_shape(rnd):
    return tuple(rnd.randint(1, 5) for _ in range(rnd.randint(1, 3)))


def large_shape(rnd):
    """A few hundred to a few thousand elements: vector loop tails, parallel splits."""
    lead = [rnd.randint(1, 9) for _ in range(rnd.randint(0, 2))]
    return (*lead, max(1, rnd.randint(300, 4000) // math.prod(lead)))


def make_program(
    seed, area="mixed", shape=small_shape, max_elems=600, steps=(1, 6), dtype="float64", oob=True
):
    """The program of ``seed``: its recipe and its inputs are drawn from ``random.Random(seed)``
    (``oob``: gathers may read out of range)."""
    rnd = random.Random(seed)
    x_shape = shape(rnd)
    g = Gen(
        rnd,
        [("x", _struct(x_shape, dtype)), ("k", KS)],
        [f"k[{j}]" for j in range(4)],
        AREAS[area],
        max(max_elems, math.prod(x_shape)),
        oob=oob,
    )
    for _ in range(rnd.randint(*steps)):
        g.step()
    outs = [g.cur[0] if g.lines else "x * 1"]
    if len(g.vals) > 2 and rnd.random() < 0.4:  # more outputs: values that kernels also consume
        outs += rnd.sample([n for n, _ in g.vals[:-1]], rnd.randint(1, 2))
    return Program(g.lines, x_shape, dtype, seed, outs)


def programs(**kw):
    """Random programs: hypothesis draws the seed, the seed the recipe (the printed source is the
    reproducer; hypothesis's own draws gave mostly one-step programs on size-1 shapes in the few
    examples the suite can afford)."""
    return st.integers(0, 2**32 - 1).map(lambda seed: make_program(seed, **kw))


# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------
TOL = {"float64": (1e-9, 1e-9), "float32": (2e-4, 2e-4), "int32": (0, 0), "exact": (0, 0)}


def _np(v):
    if type(v).__name__ == "GpuArray":
        v = functx.device_get(v)
    return np.asarray(v)


def assert_close(got, want, prog, what, dtype):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, tuple) and len(got) == len(want), f"{what}: {got!r}{prog!r}"
        for i, (a, b) in enumerate(zip(got, want)):
            assert_close(a, b, prog, f"{what}, output {i}", dtype)
        return
    got, want = _np(got), _np(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}{prog!r}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}{prog!r}"
    rtol, atol = TOL[dtype]
    finite = want[np.isfinite(want)]
    scale = 1.0 + (float(np.max(np.abs(finite))) if finite.size else 0.0)
    np.testing.assert_allclose(
        got, want, rtol=rtol, atol=atol * scale, equal_nan=True, err_msg=f"{what}{prog!r}"
    )


def _weighted_sum(lib, f):
    """``x, k -> sum(f(x, k) * w)`` with weights that differ per element."""
    np_ = lib["jnp"]

    def loss(x, k):
        ys = f(x, k)
        total = 0.0
        for i, y in enumerate(ys if isinstance(ys, tuple) else (ys,)):
            w = np_.cos(np_.arange(y.size) * 1.3 + i).reshape(y.shape).astype(y.dtype)
            total = total + np_.sum(y * w)
        return total

    return loss


def agree_with_jax(results, ref, args, prog, dtype):
    """Each of ``results`` (what -> value) against JAX's ``jax.jit(ref)(*args)``. Where one
    differs, JAX is asked again op by op (``jax.disable_jit``): XLA's compiled program is
    sometimes the one that is wrong (a dynamic update of a fully padded, base-dilated min window
    took three wrong values under JAX 0.10.2's jit, correct op by op), so functx must agree with
    one of JAX's two answers."""
    want = jax.jit(ref)(*args)
    try:
        for what, got in results.items():
            assert_close(got, want, prog, f"{what} vs JAX", dtype)
    except AssertionError:
        with jax.disable_jit():
            want = ref(*args)
        for what, got in results.items():
            assert_close(got, want, prog, f"{what} vs JAX (jit and op by op)", dtype)


def check_forward(prog, backend="cpp"):
    """JAX, functx's eager interpreter and functx's jit agree on ``prog``."""
    x, k = prog.inputs()
    f = prog.build(FX)
    if backend == "cpp":
        eager = f(fnp.asarray(x), fnp.asarray(k))
        jf = functx.jit(f)
        got = jf(x, k)
        assert_close(got, eager, prog, "jit vs eager", prog.dtype)
        # again: functx Arrays (the dispatch fast path), then a strided NumPy view of x
        again = jf(fnp.asarray(x), fnp.asarray(k))
        assert_close(again, got, prog, "jit, second call on Arrays", "exact")
        strided = np.stack([x, x], axis=-1)[..., 1]
        assert_close(jf(strided, k), got, prog, "jit on a strided view", "exact")
        results = {"eager": eager, "jit": got}
    else:
        results = {f"jit({backend})": _on_triton(f, x, k)}
    agree_with_jax(results, prog.build(JX), (x, k), prog, prog.dtype)


def _fd_check(loss, grad, x, k, prog):
    """``grad`` against a central difference of ``loss`` along a random direction."""
    v = np.random.default_rng(prog.seed).standard_normal(x.shape)
    eps = 1e-6
    fd = (float(loss(x + eps * v, k)) - float(loss(x - eps * v, k))) / (2 * eps)
    got = float(np.sum(np.asarray(grad) * v))
    assert abs(got - fd) <= 1e-5 * (1 + abs(fd)), f"jit(grad) . v = {got}, differences {fd}{prog!r}"


def check_grad(prog):
    x, k = prog.inputs()
    loss = _weighted_sum(FX, prog.build(FX))
    got = functx.jit(functx.grad(loss))(x, k)
    ref = jax.grad(_weighted_sum(JX, prog.build(JX)))
    try:
        agree_with_jax({"jit(grad)": got}, ref, (x, k), prog, prog.dtype)
    except NotImplementedError:
        # JAX does not differentiate it (a max window with window dilation; functx does,
        # docs/differences.md): finite differences are the reference
        _fd_check(functx.jit(loss), got, x, k, prog)


def check_vmap(prog, batch, k_batched):
    x, k = prog.inputs()
    rng = np.random.default_rng(prog.seed + 1)
    more = [prog.inputs(rng) for _ in range(batch - 1)]
    xb, kb = np.stack([x] + [m[0] for m in more]), np.stack([k] + [m[1] for m in more])
    ka, karg = (0, kb) if k_batched else (None, k)
    got = functx.jit(functx.vmap(prog.build(FX), in_axes=(0, ka)))(xb, karg)
    what = f"jit(vmap(f, in_axes=(0, {ka}))), batch {batch}"
    agree_with_jax(
        {what: got}, jax.vmap(prog.build(JX), in_axes=(0, ka)), (xb, karg), prog, prog.dtype
    )


# --------------------------------------------------------------------------------------------
# Triton (its CPU interpreter here; a CUDA GPU with FUNCTX_TEST_TRITON_GPU=1)
# --------------------------------------------------------------------------------------------
def _on_triton(f, x, k):
    gpu = functx.devices("gpu")[0]
    with functx.default_matmul_precision("highest"), np.errstate(all="ignore"):
        return functx.jit(f, backend="triton")(functx.device_put(x, gpu), functx.device_put(k, gpu))


# --------------------------------------------------------------------------------------------
# The properties: a few examples each in the suite, N each with FUNCTX_FUZZ_EXAMPLES=N
# --------------------------------------------------------------------------------------------
_N = int(os.environ.get("FUNCTX_FUZZ_EXAMPLES", "0"))
_long = pytest.mark.skipif(not _N, reason="set FUNCTX_FUZZ_EXAMPLES=N to run N random programs")


# no shrinking: a smaller seed is another program, not a smaller one
_PHASES = (Phase.explicit, Phase.reuse, Phase.generate)


def _suite(n):
    return settings(max_examples=n, deadline=None, phases=_PHASES)


def _many():
    return settings(
        max_examples=max(_N, 1),
        deadline=None,
        derandomize=False,
        database=None,
        phases=_PHASES,
        suppress_health_check=list(HealthCheck),
    )


PROPS = {
    "index": (programs(area="index"), check_forward),
    "mixed": (programs(area="mixed"), check_forward),
    "float32": (programs(area="mixed", dtype="float32"), check_forward),
    "large": (
        programs(area="mixed", shape=large_shape, max_elems=8000, steps=(1, 3)),
        check_forward,
    ),
    "int32": (programs(area="mixed", dtype="int32"), check_forward),
    # long chains of views and index ops on larger values
    "deep": (programs(area="index", max_elems=2000, steps=(6, 12)), check_forward),
    "grad": (programs(area="mixed", steps=(1, 4), oob=False), check_grad),
    "vmap": (
        st.tuples(programs(area="mixed", steps=(1, 4)), st.integers(1, 3), st.booleans()),
        lambda t: check_vmap(*t),
    ),
    # tiny shapes: Triton's interpreter is slow (the tests below take the ``triton_gpu`` device)
    "triton": (
        programs(area="mixed", shape=tiny_shape, max_elems=200, steps=(1, 4)),
        lambda prog: check_forward(prog, backend="triton"),
    ),
}
CPP = sorted(set(PROPS) - {"triton"})
SUITE_EXAMPLES = {
    "deep": 3,
    "index": 8,
    "mixed": 8,
    "float32": 4,
    "int32": 4,
    "large": 3,
    "grad": 6,
    "vmap": 6,
}


def _property(name, conf):
    strategy, check = PROPS[name]

    @conf
    @given(strategy)
    def run(drawn):
        check(drawn)

    return run


@pytest.mark.parametrize("name", CPP)
def test_fuzz(name):
    _property(name, _suite(SUITE_EXAMPLES[name]))()


@pytest.mark.slow
@_long
@pytest.mark.parametrize("name", CPP)
def test_fuzz_long(name):
    _property(name, _many())()


def test_fuzz_triton(triton_gpu):
    _property("triton", _suite(3))()


@pytest.mark.slow
@_long
def test_fuzz_triton_long(triton_gpu):
    _property("triton", _many())()
