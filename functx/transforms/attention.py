"""Jaxpr -> Jaxpr: scaled dot-product attention written in plain ``jnp`` becomes flash attention.

What it rewrites. Attention as users write it (benchmarks/workloads.py's GPT block), with the
heads as a leading batch axis::

    s = (q @ k.transpose(0, 1, 3, 2)) * scale               # (B, H, T, S)
    s = jnp.where(jnp.tril(jnp.ones((T, S), bool)), s, -jnp.inf)   # optional
    o = jax.nn.softmax(s, axis=-1) @ v

and its gradient (``p = softmax(s)``, ``dp = do @ v^T``, ``ds = scale * p * (dp - sum(dp * p))``,
``dv = p^T @ do``, ``dq = ds @ k``, ``dk = ds^T @ q``) form ``(B, H, T, S)`` score arrays in the
forward and in the backward. ``fuse_attention`` replaces the chain by two equations of this
module's primitives: ``flash_attention`` (``q, k, v -> o, lse``: the output and each row's
log-sum-exp of the scaled scores) and ``flash_attention_bwd`` (``q, k, v, o, lse, do -> dq, dk,
dv``), which the Triton backend runs as flash-attention kernels
(``functx/lowering/triton/attention.py``: online softmax, no score array in memory, causal
blocks above the diagonal skipped), and the C++ backend as its own flash steps
(``functx/lowering/cpp/attention.py``, float32 only). ``jit`` runs it on the final Jaxpr (after
``grad``) of a GPU program; a CPU program's is fused by ``lowering/compile.py`` on a program-cache
miss (so the cache's key is the Jaxpr before).

How it recognises the chain. The algebra of the softmax's forward and backward takes many
equation forms (``w / z`` or ``w * (1 / z)``; the derivative of either; ``bfloat16``
rounding steps), so the pass does not match equations one by one. From each ``dot_general`` of
two ``(b, h, *, d)`` operands giving ``(B, H, T, S)`` scores, it follows every reader and gives
each value a symbolic element expression (``attention_algebra``: exact normal forms, so equal
expressions are equal objects) in the raw score ``x`` (``xm`` once the causal mask has replaced
masked scores by ``-inf``), the backward's ``dp`` element, the row maximum ``m`` and row sums
``sig(term)`` (row-constant factors taken out of the sum). Only elementwise
arithmetic, ``exp``, row reductions over the last axis, the row <-> score broadcasts and reshapes,
``stop_gradient`` and float conversions (taken as exact: the fused kernels keep float32 where
the plain program rounded to ``bfloat16``/``float16``) are followed. The chain is rewritten
only when:

* the mask (if any) is a constant ``(T, S)`` bool array equal to the causal ``tril`` (evaluated
  from its constant equations), broadcast over ``(B, H)``, filling ``-inf`` (or a finite value
  at most ``-1e30``) in the forward and ``0`` in the backward;
* the scale is a constant (a literal factor of ``x``);
* every reader of every value on the chain is on the chain or is one of the products it
  feeds: ``p @ v`` (forward), ``p^T @ do`` (``dv``), ``ds @ k`` (``dq``), ``ds^T @ q`` (``dk``),
  and none is an output of the program (a returned or otherwise used ``p`` or ``s`` leaves the
  Jaxpr unchanged);
* those products' score operands are, as expressions, ``softmax(scale * x)`` and ``scale *
  p * (dp - sum(p * dp))``, and ``dp`` is ``do @ v^T`` with the same ``v``;
* all of them are real floats of one dtype (float32, bfloat16 or float16; float64 stays).

Operands are read where they are stored: each primitive takes the values its operands were
reached from through ``transpose``, row-major ``reshape``, unit-stride ``slice`` and widening
conversions, with a *view* for each (``views``: an offset and the strides along ``(b, h, t|s,
d)`` in elements of that value's buffer) and the sizes ``shape = (B, H, T, S, D)``. So the GPT
block's split of its fused ``q k v`` product, the head reshapes and the head transposes cost no
copy.
"""

from __future__ import annotations

import math

import numpy as np

from functx import dtypes, primitives as P
from functx.core import ClosedJaxpr, Eqn, Jaxpr, Literal, Primitive, ShapedArray, Var
from functx.transforms import attention_algebra as alg, passes

#: whether ``jit`` rewrites attention (benchmarks/gpu_attention.py turns it off to time the
#: plain program)
ENABLED = True

_FLOATS = frozenset(np.dtype(d) for d in (np.float16, np.float32)) | {np.dtype(dtypes.bfloat16)}
_MASK_FILL = -1e30  # a forward fill at most this: masked logits (nn.dot_product_attention)
_MAX_CHAIN, _MAX_SIZE = 200, 60  # the longest chain and largest expression followed


# --- 1. The primitives ---------------------------------------------------------------------------
# (internal: not in ``primitives.registry``, whose every primitive has jvp, transpose and vmap
# rules; these appear only in jit's final Jaxpr, after autodiff and batching)
flash_attention_p = Primitive("flash_attention", multiple_results=True, group="attention")
flash_attention_bwd_p = Primitive("flash_attention_bwd", multiple_results=True, group="attention")


def _canonical(x, view, shape):
    """The ``shape`` (``(B, H, N, D)``) array ``view`` (``(offset, strides)``, in elements of
    ``x``'s row-major buffer) reads from ``x``."""
    off, strides = view
    flat = np.ascontiguousarray(x).reshape(-1)
    return np.lib.stride_tricks.as_strided(
        flat[off:], shape=shape, strides=[st * flat.itemsize for st in strides], writeable=False
    )


def _fwd_abstract(q, k, v, *, scale, causal, shape, views):
    B, H, T, S, D = shape
    return [
        ShapedArray((B, H, T, D), q.dtype),
        ShapedArray((B, H, T), np.dtype(np.float32)),
    ]


def _bwd_abstract(q, k, v, o, lse, do, *, scale, causal, shape, views):
    B, H, T, S, D = shape
    return [
        ShapedArray((B, H, T, D), q.dtype),
        ShapedArray((B, H, S, D), k.dtype),
        ShapedArray((B, H, S, D), v.dtype),
    ]


def _operands(args, shape, views):
    """The operands in the canonical layouts ``(B, H, T|S, D)``, float32 at least."""
    B, H, T, S, D = shape
    wide = np.promote_types(args[0].dtype, np.float32)
    sizes = [(B, H, T, D), (B, H, S, D), (B, H, S, D), (B, H, T, D)]
    return [_canonical(a, vw, n).astype(wide) for a, vw, n in zip(args, views, sizes)]


def _scores(qc, kc, scale, causal):
    """The scaled (masked) scores."""
    s = np.einsum("bhtd,bhsd->bhts", qc, kc) * qc.dtype.type(scale)
    if causal:
        t, n = s.shape[-2:]
        s = np.where(np.tril(np.ones((t, n), bool)), s, -np.inf)
    return s


def _fwd_impl(q, k, v, *, scale, causal, shape, views):
    """The reference (eager) forward: ``o = softmax(s) @ v`` and ``lse = logsumexp(s)``."""
    qc, kc, vc = _operands((q, k, v), shape, views)
    s = _scores(qc, kc, scale, causal)
    m = s.max(-1, keepdims=True)
    w = np.exp(s - m)
    z = w.sum(-1, keepdims=True)
    o = np.einsum("bhts,bhsd->bhtd", w / z, vc)
    lse = (m + np.log(z))[..., 0]
    return [o.astype(q.dtype), lse.astype(np.float32)]


def _bwd_impl(q, k, v, o, lse, do, *, scale, causal, shape, views):
    """The reference (eager) backward, recomputing ``p`` from ``lse``."""
    qc, kc, vc, doc = _operands((q, k, v, do), shape, views)
    s = _scores(qc, kc, scale, causal)
    p = np.exp(s - lse[..., None].astype(s.dtype))
    dv = np.einsum("bhts,bhtd->bhsd", p, doc)
    dp = np.einsum("bhtd,bhsd->bhts", doc, vc)
    delta = (doc * o.astype(s.dtype)).sum(-1, keepdims=True)
    ds = p * (dp - delta) * s.dtype.type(scale)
    dq = np.einsum("bhts,bhsd->bhtd", ds, kc)
    dk = np.einsum("bhts,bhtd->bhsd", ds, qc)
    return [dq.astype(q.dtype), dk.astype(k.dtype), dv.astype(v.dtype)]


flash_attention_p.abstract_eval = _fwd_abstract
flash_attention_p.impl = _fwd_impl
flash_attention_bwd_p.abstract_eval = _bwd_abstract
flash_attention_bwd_p.impl = _bwd_impl


# --- 2. Operands: through transposes to the stored value -----------------------------------------
def _contiguous(shape):
    st = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        st[i] = st[i + 1] * shape[i + 1]
    return st


def _move(view, sizes, xshape, yshape, axis, starts=None):
    """``view`` (``(offset, {letter: stride})`` in elements of a row-major ``xshape`` buffer)
    as a view of a row-major ``yshape`` buffer whose axis ``axis[k]`` holds ``x``'s axis ``k``
    (shifted by ``starts``: a slice); None when a letter's steps do not stay on one axis."""
    sx, sy = _contiguous(xshape), _contiguous(yshape)
    off, strides = view
    idx = [int(i) for i in np.unravel_index(off, xshape)] if xshape else []
    reach = [0] * len(xshape)
    new = {}
    for letter, s in strides.items():
        if sizes[letter] == 1:
            new[letter] = 0
            continue
        ks = [k for k in range(len(xshape)) if xshape[k] > 1 and s % sx[k] == 0 and s >= sx[k]]
        ks = [k for k in ks if s // sx[k] < xshape[k]]
        if not ks:
            return None
        k = max(ks, key=lambda a: sx[a])
        c = s // sx[k]
        reach[k] += c * (sizes[letter] - 1)
        new[letter] = c * sy[axis[k]]
    if any(i + r >= n for i, r, n in zip(idx, reach, xshape)):
        return None
    yidx = [0] * len(yshape)
    for k, i in enumerate(idx):
        yidx[axis[k]] = i + (starts[axis[k]] if starts else 0)
    return (int(np.ravel_multi_index(yidx, yshape)) if yshape else 0, new)


def _stored(x, labels: str, defs):
    """``(value, view)``: the value ``x`` (whose axes ``labels`` names) reads, through
    transposes, row-major reshapes, unit-stride slices and widening conversions (bfloat16 or
    float16 to float32: exact), and the view: ``(offset, strides)``, the strides along the
    letters of ``"bh" + labels' t or s + "d"`` in elements of the value's row-major buffer; None
    when ``labels`` does not name the four axes."""
    order = "bh" + ("t" if "t" in labels else "s") + "d"
    if sorted(labels) != sorted(order):
        return None
    shape = tuple(x.aval.shape)
    sizes = dict(zip(labels, shape))
    st = _contiguous(shape)
    view = (0, {letter: st[i] for i, letter in enumerate(labels)})
    while type(x) is Var and (d := defs.get(x.id)) is not None:
        y = d.invars[0]
        if type(y) is not Var:
            break
        ys = tuple(y.aval.shape)
        if d.prim is P.transpose_p:
            perm = d.params["permutation"]
            new = _move(view, sizes, shape, ys, list(perm))
        elif d.prim is P.reshape_p and math.prod(ys) == math.prod(shape):
            new = view  # (row-major: the same flat positions)
        elif d.prim is P.slice_p and not any(
            s not in (None, 1) for s in d.params.get("strides") or ()
        ):
            new = _move(view, sizes, shape, ys, list(range(len(ys))), d.params["start_indices"])
        elif d.prim is P.convert_element_type_p and _widens(y, x):
            new = view
        else:
            break
        if new is None:
            break
        x, view, shape = y, new, ys
    off, strides = view
    return x, (off, tuple(strides[letter] for letter in order))


def _widens(src, dst) -> bool:
    """Whether ``src -> dst`` converts bfloat16/float16 to float32 (every value exactly)."""
    return (
        type(src) is Var
        and np.dtype(dst.aval.dtype) == np.float32
        and np.dtype(src.aval.dtype) in _FLOATS - {np.dtype(np.float32)}
    )


def _dot_labels(e: Eqn, lhs: str | None, rhs: str | None):
    """The axis names of a ``dot_general``'s operands and output, given for each operand the
    names of (batch b h, contracting, free) as a 3-letter string like ``"?dt"``; None when the
    product is not a two-batch-axis, one-contraction product."""
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    if len(lb) != 2 or len(lc) != 1:
        return None
    out = ["b", "h"]
    names = []
    for x, (c, b), spec in ((e.invars[0], (lc, lb), lhs), (e.invars[1], (rc, rb), rhs)):
        nd = x.aval.ndim
        if nd != 4:
            return None
        free = [a for a in range(nd) if a not in (*c, *b)]
        lab = ["?"] * nd
        lab[b[0]], lab[b[1]], lab[c[0]], lab[free[0]] = "b", "h", spec[1], spec[2]
        names.append("".join(lab))
        out.append(spec[2])
    return names[0], names[1], "".join(out)


# --- 3. Following the scores: symbolic element expressions ---------------------------------------
class _Chain:
    """One attention candidate: the symbolic values of the chain from a ``q k^T`` product."""

    def __init__(self, qk: Eqn, q, k, full):
        self.x, self.xm, self.dp, self.m = (alg.sym(n) for n in ("x", "xm", "dp", "m"))
        self.qk, self.q, self.k = qk, q, k  # q, k: (value, view)
        self.full = tuple(full)  # (B, H, T, S)
        self.vals: dict = {qk.outvars[0].id: ("full", self.x)}
        self.scale = None
        self.causal = False
        self.targets: dict = {}  # role -> (eqn, labels of its output)
        self.d = 0  # the head dimension
        self.v = self.do = None

    def is_row(self, aval) -> bool:
        return tuple(aval.shape) in (self.full[:3], (*self.full[:3], 1))


def _const(a, defs):
    """A scalar constant ``a`` (a literal, or a broadcast of one), as a float; else None."""
    while type(a) is Var and (d := defs.get(a.id)) is not None and d.prim is P.broadcast_in_dim_p:
        a = d.invars[0]
    if type(a) is Literal and np.ndim(a.val) == 0:
        return float(a.val)
    return None


def _mask_ok(pred, c: _Chain, defs, consts, cache) -> bool:
    """Whether ``pred`` is the causal ``tril`` of ``(T, S)``, broadcast over ``(B, H)``."""
    if type(pred) is not Var or pred.id in cache:
        return cache.get(getattr(pred, "id", None), False)
    ok = False
    d = defs.get(pred.id)
    if (
        d is not None
        and d.prim is P.broadcast_in_dim_p
        and d.params["broadcast_dimensions"]
        in (
            (2, 3),
            [2, 3],
        )
    ):
        val = _constant_value(d.invars[0], defs, consts)
        t, n = c.full[2:]
        ok = (
            val is not None
            and val.shape == (t, n)
            and bool((val == np.tril(np.ones((t, n), bool))).all())
        )
    cache[pred.id] = ok
    return ok


def _constant_value(a, defs, consts, depth=0):
    """The value of ``a`` when it depends on constants only (iota, literals), else None."""
    if type(a) is Literal:
        return np.asarray(a.val, a.aval.dtype)
    if a.id in consts:
        return np.asarray(consts[a.id])
    d = defs.get(a.id)
    if d is None or depth > 30 or d.params.get("jaxpr") is not None:
        return None
    args = [_constant_value(x, defs, consts, depth + 1) for x in d.invars]
    if any(x is None for x in args):
        return None
    out = d.prim.impl(*args, **d.params)
    return np.asarray(out[d.outvars.index(a)] if d.prim.multiple_results else out)


#: the element symbols that vary along a row (``m`` and the row sums do not)
_ALONG_ROW = frozenset(("x", "xm", "dp"))


def _follow(c: _Chain, e: Eqn, defs, consts, masks):
    """The symbolic value ``(kind, expr)`` of ``e``'s output (``kind`` "full" for a
    ``(B, H, T, S)`` value, "row" for a row value), or None when ``e`` is not a step of the
    chain."""
    try:
        return _step(c, e, defs, consts, masks)
    except alg.NotLaurent:  # (a division by a sum: not the softmax's algebra)
        return None


def _step(c: _Chain, e: Eqn, defs, consts, masks):
    out = e.outvars[0].aval
    if len(e.outvars) != 1 or not (out.dtype in _FLOATS or out.dtype == np.float64):
        return None
    kind = "full" if tuple(out.shape) == c.full else "row" if c.is_row(out) else None
    if kind is None:
        return None

    def arg(a):
        if type(a) is Var and a.id in c.vals:
            return c.vals[a.id]
        v = _const(a, defs)
        if v is None or not np.isfinite(v):
            return None
        return ("const", alg.const(v))

    name = e.prim.name
    if name in ("stop_gradient", "convert_element_type", "reshape", "copy"):
        a = arg(e.invars[0])
        if a is None or a[0] == "const" or (a[0] == "full") != (kind == "full"):
            return None
        return (kind, a[1])
    if name == "broadcast_in_dim":
        a = arg(e.invars[0])
        if a is None or kind != "full":
            return None
        if a[0] == "row" and tuple(e.params["broadcast_dimensions"]) not in (
            (0, 1, 2),
            (0, 1, 2, 3),
        ):
            return None
        return ("full", a[1]) if a[0] != "full" else None
    if name == "select_n":
        if len(e.invars) != 3 or not _mask_ok(e.invars[0], c, defs, consts, masks):
            return None
        fill, kept = _const(e.invars[1], defs), arg(e.invars[2])
        if kept is None or kept[0] != "full" or fill is None:
            return None
        expr = kept[1]
        if (
            fill == 0.0 and c.causal
        ):  # (the backward: the kept value is 0 where the mask is off, checked below)
            return ("full", expr)
        if fill > _MASK_FILL or c.scale is not None or "xm" in expr.symbols():
            return None
        coeff = (expr / c.x).number()
        if not coeff:
            return None
        c.scale, c.causal = coeff, True
        return ("full", coeff * c.xm)
    if name == "max":
        a, b = e.invars
        for one, other in ((a, b), (b, a)):
            if _const(one, defs) == -np.inf and type(other) is Var and other.id in c.vals:
                val = c.vals[other.id]
                return (kind, val[1]) if val[0] == "row" and val[1] == c.m else None
        return None
    if name in ("reduce_max", "reduce_sum"):
        if tuple(e.params["axes"]) != (3,):
            return None
        a = arg(e.invars[0])
        if a is None or a[0] != "full":
            return None
        if name == "reduce_sum":
            s = alg.row_sum(a[1], _ALONG_ROW)
            return None if s is None else ("row", s)
        # the row maximum of the scaled scores (the softmax's shift: it cancels)
        base = c.xm if c.causal else c.x
        coeff = (a[1] / base).number()
        if coeff is None or (c.scale is not None and coeff != c.scale):
            return None
        c.scale = coeff
        return ("row", c.m)
    ops = {
        "neg": lambda x: -x,
        "exp": alg.exp,
        "add": lambda x, y: x + y,
        "add_any": lambda x, y: x + y,
        "sub": lambda x, y: x - y,
        "mul": lambda x, y: x * y,
        "div": lambda x, y: x / y,
    }
    if name == "integer_pow":
        a = arg(e.invars[0])
        return None if a is None else (kind, a[1] ** int(e.params["y"]))
    fn = ops.get(name)
    if fn is None:
        return None
    args = [arg(a) for a in e.invars]
    if any(a is None for a in args):
        return None
    if kind == "row" and any(a[0] == "full" for a in args):
        return None
    return (kind, fn(*[a[1] for a in args]))


def _target(c: _Chain, e: Eqn, defs) -> bool:
    """Record ``e`` (a ``dot_general`` reading a chain value) as one of the products the chain
    feeds; False when it is not one."""
    if e.prim is not P.dot_general_p or any(type(a) is not Var for a in e.invars):
        return False
    ins = [c.vals.get(a.id) for a in e.invars]
    if sum(x is not None for x in ins) != 1 or any(x is not None and x[0] != "full" for x in ins):
        return False
    side = 0 if ins[0] is not None else 1
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    fc, fb = (lc, lb) if side == 0 else (rc, rb)
    if tuple(fb) != (0, 1) or len(fc) != 1 or fc[0] not in (2, 3):
        return False
    # the scores' axes are (b, h, t, s): contracting s multiplies by v or k, t by do or q
    if fc[0] == 3:
        spec_f, spec_o = "?st", "?sd"
    else:
        spec_f, spec_o = "?ts", "?td"
    specs = (spec_f, spec_o) if side == 0 else (spec_o, spec_f)
    names = _dot_labels(e, *specs)
    if names is None:
        return False
    other = e.invars[1 - side]
    stored = _stored(other, names[1 - side], defs)
    if stored is None or _size(other, names[1 - side], "d") != c.d:
        return False
    expr = ins[side][1]
    role = ("pv" if fc[0] == 3 else "dv") if _is_p(c, expr) else None
    if role is None and _is_ds(c, expr):
        role = "dq" if fc[0] == 3 else "dk"
    if role is None or role in c.targets:
        return False
    want = {"pv": "v", "dq": "k", "dv": "do", "dk": "q"}[role]
    if want in ("q", "k"):
        ref = c.q if want == "q" else c.k
        if stored[0] is not ref[0] or stored[1] != ref[1]:
            return False
    elif want == "v":
        if c.v is not None and (stored[0] is not c.v[0] or stored[1] != c.v[1]):
            return False
        c.v = stored
    else:
        if c.do is not None and (stored[0] is not c.do[0] or stored[1] != c.do[1]):
            return False
        c.do = stored
    c.targets[role] = (e, names[2])
    return True


def _p_ref(c: _Chain):
    w = alg.exp(c.scale * (c.xm if c.causal else c.x))
    return w, alg.sig(w)


def _is_p(c: _Chain, expr) -> bool:
    if c.scale is None:
        return False
    w, z = _p_ref(c)
    return expr == w / z


def _is_ds(c: _Chain, expr) -> bool:
    if c.scale is None:
        return False
    w, z = _p_ref(c)
    p = w / z
    return expr == c.scale * p * (c.dp - alg.sig(w * c.dp) / z)


def _dp_dot(c: _Chain, e: Eqn, defs) -> bool:
    """Whether ``e`` is ``dp = do @ v^T`` (``(B, H, T, S)`` in that order) for this chain's
    ``v`` (its ``v`` is taken from here when no ``p @ v`` was seen yet)."""
    if e.prim is not P.dot_general_p or tuple(e.outvars[0].aval.shape) != c.full:
        return False
    if any(type(a) is not Var for a in e.invars):
        return False
    names = _dot_labels(e, "?dt", "?ds")
    if names is None or names[2] != "bhts":
        return False
    do = _stored(e.invars[0], names[0], defs)
    v = _stored(e.invars[1], names[1], defs)
    if do is None or v is None or _size(e.invars[0], names[0], "d") != c.d:
        return False
    if c.v is not None and (v[0] is not c.v[0] or v[1] != c.v[1]):
        return False
    if v[0] is c.k[0] and v[1] == c.k[1] and do[0] is c.q[0]:
        return False  # (the q k^T product itself)
    if c.do is not None and (do[0] is not c.do[0] or do[1] != c.do[1]):
        return False
    c.v, c.do = v, do
    return True


def _size(x, labels: str, letter: str) -> int:
    return x.aval.shape[labels.index(letter)]


def _match(jaxpr: Jaxpr, start: int, defs, uses, outputs, consts, floats=_FLOATS):
    """The chain from the ``q k^T`` product ``jaxpr.eqns[start]``, or None."""
    qk = jaxpr.eqns[start]
    if qk.prim is not P.dot_general_p or any(type(a) is not Var for a in qk.invars):
        return None
    out = qk.outvars[0].aval
    if out.ndim != 4 or out.dtype not in floats:
        return None
    names = _dot_labels(qk, "?dt", "?ds")
    if names is None or names[2] != "bhts":
        return None
    q = _stored(qk.invars[0], names[0], defs)
    k = _stored(qk.invars[1], names[1], defs)
    if q is None or k is None:
        return None
    c = _Chain(qk, q, k, out.shape)
    c.d = _size(qk.invars[0], names[0], "d")
    masks: dict = {}
    dp_seen = False
    for e in jaxpr.eqns[start + 1 :]:
        reads = [a for a in e.invars if type(a) is Var and a.id in c.vals]
        if not reads:
            if not dp_seen and e.prim is P.dot_general_p and _dp_dot(c, e, defs):
                dp_seen = True
                c.vals[e.outvars[0].id] = ("full", c.dp)
                c.targets["dp"] = (e, "bhts")
            continue
        val = _follow(c, e, defs, consts, masks)
        if val is not None:
            # (attention's chain is a few dozen small expressions: anything longer is not it,
            # and products of sums must not be left growing)
            if len(c.vals) > _MAX_CHAIN or val[1].size() > _MAX_SIZE:
                return None
            c.vals[e.outvars[0].id] = val
            continue
        if not _target(c, e, defs):
            return None
    if any(v in outputs for v in c.vals):
        return None
    if "pv" not in c.targets and "dv" not in c.targets and "dq" not in c.targets:
        return None
    if ("dq" in c.targets or "dk" in c.targets) and "dp" not in c.targets:
        return None
    # one dtype for the operands; the products' results of that dtype or float32 (from operands
    # widened to float32: nn.dot_product_attention's logits)
    dts = {np.dtype(x[0].aval.dtype) for x in (c.q, c.k, c.v) if x is not None}
    if c.do is not None:
        dts.add(np.dtype(c.do[0].aval.dtype))
    outs = {np.dtype(e.outvars[0].aval.dtype) for e, _ in c.targets.values()}
    if len(dts) != 1 or not dts <= floats or c.v is None:
        return None
    if not outs <= dts | {np.dtype(np.float32)}:
        return None
    return c


# --- 4. The rewrite ------------------------------------------------------------------------------
def _perm(src: str, dst: str):
    return tuple(src.index(ch) for ch in dst)


def _rewrite(c: _Chain, jaxpr: Jaxpr, index: dict):
    """``{eqn position: [eqns inserted before it]}`` and ``{eqn id: replacement eqns}``."""
    src = c.qk.source_info
    B, H, T, S = c.full
    params = {"scale": float(c.scale), "causal": bool(c.causal), "shape": (B, H, T, S, c.d)}
    views = (c.q[1], c.k[1], c.v[1])
    q, k, v = c.q[0], c.k[0], c.v[0]

    def after(*vals):
        return max((index.get(x.id, -1) for x in vals), default=-1) + 1

    insert: dict = {}
    replace: dict = {}
    fwd_params = dict(params, views=views)
    o_aval, lse_aval = _fwd_abstract(q.aval, k.aval, v.aval, **fwd_params)
    o, lse = Var(o_aval), Var(lse_aval)
    pos = after(q, k, v)
    insert.setdefault(pos, []).append(Eqn(flash_attention_p, [q, k, v], [o, lse], fwd_params, src))
    outs = {"pv": (o, "bhtd")}
    if any(r in c.targets for r in ("dv", "dq", "dk")):
        bwd_params = dict(params, views=(*views, c.do[1]))
        avals = _bwd_abstract(q.aval, k.aval, v.aval, o_aval, lse_aval, c.do[0].aval, **bwd_params)
        grads = [Var(a) for a in avals]
        bpos = max(pos, after(c.do[0]))
        eq = Eqn(flash_attention_bwd_p, [q, k, v, o, lse, c.do[0]], grads, bwd_params, src)
        insert.setdefault(bpos, []).append(eq)
        outs.update(dq=(grads[0], "bhtd"), dk=(grads[1], "bhsd"), dv=(grads[2], "bhsd"))
    rename: dict = {}
    for role, (e, labels) in c.targets.items():
        if role == "dp":
            continue
        val, lay = outs[role]
        perm = _perm(lay, labels)
        out = e.outvars[0]
        eqs = []
        if out.aval.dtype != val.aval.dtype:  # (a float32 product of widened operands)
            params = {"new_dtype": out.aval.dtype, "weak_type": False}
            wide = Var(ShapedArray(val.aval.shape, out.aval.dtype))
            eqs.append(Eqn(P.convert_element_type_p, [val], [wide], params, e.source_info))
            val = wide
        if perm == tuple(range(4)):
            rename[out.id] = val
        else:
            params = {"permutation": perm}
            eqs.append(Eqn(P.transpose_p, [val], e.outvars, params, e.source_info))
        replace[id(e)] = eqs
    return insert, replace, rename


def fuse_attention(closed: ClosedJaxpr, dtypes=None) -> ClosedJaxpr:
    """``closed`` with every recognised attention chain (module docstring) replaced by the
    ``flash_attention`` and ``flash_attention_bwd`` primitives; ``closed`` itself when there is
    none. Top level only.

    Arguments:
      closed: a program (``jit``'s final Jaxpr, after ``grad``).
      dtypes: the operand dtypes to fuse (the backend's kernels'); None: float32, bfloat16 and
        float16 (the Triton kernels').
    Returns:
      The rewritten program, or ``closed``.
    """
    jaxpr = closed.jaxpr
    if not ENABLED:
        return closed
    dots = [i for i, e in enumerate(jaxpr.eqns) if e.prim is P.dot_general_p]
    floats = _FLOATS if dtypes is None else _FLOATS & frozenset(np.dtype(d) for d in dtypes)
    if len(dots) < 2 or not floats or not any(e.prim is P.exp_p for e in jaxpr.eqns):
        return closed
    defs = {v.id: e for e in jaxpr.eqns for v in e.outvars}
    uses: dict = {}
    for e in jaxpr.eqns:
        for a in e.invars:
            if type(a) is Var:
                uses.setdefault(a.id, []).append(e)
    outputs = {v.id for v in jaxpr.outvars if type(v) is Var}
    consts = {v.id: x for v, x in zip(jaxpr.constvars, closed.consts)}
    index = {v.id: i for i, e in enumerate(jaxpr.eqns) for v in e.outvars}
    insert: dict = {}
    replace: dict = {}
    rename: dict = {}
    for i in dots:
        if id(jaxpr.eqns[i]) in replace:
            continue
        c = _match(jaxpr, i, defs, uses, outputs, consts, floats)
        if c is None or any(id(e) in replace for e, _ in c.targets.values()):
            continue
        ins, rep, ren = _rewrite(c, jaxpr, index)
        rename.update(ren)
        for k, v in ins.items():
            insert.setdefault(k, []).extend(v)
        replace.update(rep)
        for e, _ in c.targets.values():
            replace.setdefault(id(e), [])  # (dp: dropped with the chain)
    if not replace:
        return closed

    def sub(a):
        return rename.get(a.id, a) if type(a) is Var else a

    eqns = []
    for i, e in enumerate(jaxpr.eqns):
        for x in (*insert.get(i, ()), *replace.get(id(e), (e,))):
            eqns.append(x.replace(invars=[sub(a) for a in x.invars]))
    eqns.extend(insert.get(len(jaxpr.eqns), ()))
    outvars = [sub(a) for a in jaxpr.outvars]
    new = Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, outvars)
    return passes.dce_closed(ClosedJaxpr(new, closed.consts))


__all__ = ["ENABLED", "flash_attention_p", "flash_attention_bwd_p", "fuse_attention"]
