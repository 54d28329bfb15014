"""``sparsify`` and the sparse-aware derivatives of ``jax.experimental.sparse``.

``sparsify(f)`` traces ``f`` with a dense stand-in (same shape and dtype) for every BCOO argument,
then runs the traced program again with one rule per primitive: an equation whose inputs are all
dense binds its primitive as usual; one with a BCOO input calls the primitive's sparse rule (the
``bcoo_*`` operation of the same meaning), so a BCOO flows through and the dense array is never
built. A primitive without a rule raises ``UnsupportedError`` naming it (densify explicitly with
``todense`` where that is meant).

``grad``, ``value_and_grad``, ``jacfwd``, ``jacrev`` and ``jacobian`` differentiate with respect
to a BCOO argument's ``data`` only, its indices held fixed, and give the derivative as a BCOO with
the same indices (a derivative in the subspace of the sparsity pattern, as JAX's).
"""

from __future__ import annotations

import functools
import operator
import textwrap

import numpy as np

from functx import config, lax, numpy as jnp
from functx.core import Literal
from functx.errors import FunctxTypeError, UnsupportedError
from functx.experimental.sparse.bcoo import (
    _SPARSIFY,
    BCOO,
    _gather,
    _multiply_sparse,
    bcoo_broadcast_in_dim,
    bcoo_concatenate,
    bcoo_dot_general,
    bcoo_dynamic_slice,
    bcoo_multiply_dense,
    bcoo_reduce_sum,
    bcoo_reshape,
    bcoo_rev,
    bcoo_slice,
    bcoo_squeeze,
    bcoo_sum_duplicates,
    bcoo_transpose,
)
from functx.source_info import source_info, where
from functx.tracing import ShapeDtypeStruct, TraceCache, flatten_fun, get_aval, trace_flat
from functx.transforms.vjp import (
    grad as functx_grad,
    jacfwd as functx_jacfwd,
    jacrev as functx_jacrev,
    value_and_grad as functx_value_and_grad,
)
from functx.transforms.vmap import vmap
from functx.tree_util import tree_flatten, tree_unflatten


def _is_sparse(x):
    return isinstance(x, BCOO)


# -- the sparse rules: (*inputs, **params) -> output, for an equation with a BCOO input -----------


def _unique(mat):
    """``mat`` with its duplicate indices summed (same nse), for an operation that is not linear."""
    return mat if mat.unique_indices else bcoo_sum_duplicates(mat, nse=mat.nse)


def _on_data(fn, linear):
    """The rule of a unary operation that maps zero to zero: applied to the stored values."""

    def rule(x, **params):
        x = x if linear else _unique(x)
        return x._with_data(fn(x.data, **params))

    return rule


def _integer_pow(x, *, y):
    if y <= 0:
        raise UnsupportedError(
            f"sparse rule for integer_pow with non-positive exponent {y} is not implemented "
            "because it would result in dense output; use sparse.todense() to densify first"
            + where()
        )
    return _unique(x)._with_data(lax.integer_pow(_unique(x).data, y))


def _add(x, y):
    if _is_sparse(x) and _is_sparse(y):
        if x.shape != y.shape:
            raise UnsupportedError(
                "Addition between sparse matrices of different shapes." + where()
            )
        if x.indices is y.indices:
            return x._with_data(x.data + y.data)
        if x.indices.ndim != y.indices.ndim or x.data.ndim != y.data.ndim:
            raise UnsupportedError(
                "Addition between sparse matrices with different batch/dense dimensions." + where()
            )
        nb = x.n_batch
        data = jnp.concatenate([x.data, y.data.astype(x.dtype)], nb)
        return BCOO((data, jnp.concatenate([x.indices, y.indices], nb)), shape=x.shape)
    sp, dense = (x, y) if _is_sparse(x) else (y, x)
    if np.shape(dense) != np.broadcast_shapes(sp.shape, np.shape(dense)):
        raise UnsupportedError(
            "Addition between a sparse array X and a dense array Y is not implemented when the "
            "output shape is larger than Y.shape (it would densify the sparse array); convert "
            "it with todense() if that is meant." + where()
        )
    return sp.todense() + dense


def _sub(x, y):
    if not (_is_sparse(x) and _is_sparse(y)):
        raise UnsupportedError("Subtraction between sparse and dense array." + where())
    return _add(x, -y)


def _mul(x, y):
    if _is_sparse(x) and _is_sparse(y):
        return _multiply_sparse(x, y)
    sp, dense = (x, y) if _is_sparse(x) else (y, x)
    return sp._with_data(bcoo_multiply_dense(sp, dense))


def _div(x, y):
    if _is_sparse(y):
        raise UnsupportedError(
            "Division by a sparse array is not implemented because it would result in dense "
            "output; use sparse.todense() to densify first" + where()
        )
    return x._with_data(bcoo_multiply_dense(x, 1 / jnp.asarray(y)))


def _reduce_sum(x, *, axes):
    out = bcoo_reduce_sum(x, axes=axes)
    return out.data.sum() if out.shape == () else out


def _convert(x, *, new_dtype, weak_type=False):
    return _unique(x)._with_data(_unique(x).data.astype(new_dtype))


def _expand_dims(x, *, dimensions):
    shape = list(x.shape)
    for d in sorted(dimensions):
        shape.insert(d, 1)
    kept = [d for d in range(len(shape)) if d not in dimensions]
    return bcoo_broadcast_in_dim(x, shape=tuple(shape), broadcast_dimensions=tuple(kept))


def _gather_points(x, ind, *, axes, mode, fill_value):
    """functx's point gather (the primitive of ``x[index_array]``): the points of ``ind``'s last
    axis along ``axes``, whole slices of the other dims, clamped into the array."""
    if _is_sparse(ind):
        raise UnsupportedError("sparse indices of a gather are not in functx" + where())
    rest = x.ndim - len(axes)
    dn = lax.GatherDimensionNumbers(
        offset_dims=tuple(range(ind.ndim - 1, ind.ndim - 1 + rest)),
        collapsed_slice_dims=tuple(axes),
        start_index_map=tuple(axes),
    )
    sizes = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    return _gather(x, ind, dn, sizes)


def _dot_general(x, y, *, dimension_numbers, preferred_element_type=None, **_):
    return bcoo_dot_general(
        x, y, dimension_numbers=dimension_numbers, preferred_element_type=preferred_element_type
    )


def _cond(index, *operands, branches):
    """``cond``/``switch`` with sparse operands: each branch run sparsely, under ``lax.switch``
    (the branches must give BCOO results of one structure: shape, nse, layout, flags)."""
    if _is_sparse(index):
        raise UnsupportedError("cond: a sparse predicate is not supported" + where())
    fns = [lambda *ops, b=b: _run(b, *ops) for b in branches]
    return lax.switch(index, fns, *operands)


def _run(closed, *vals):
    return _eval_sparse(closed.jaxpr, closed.consts, vals)


def _while(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """``while_loop`` with sparse operands: the condition and body run sparsely under
    ``lax.while_loop`` (the body must keep each BCOO's structure: shape, nse, layout, flags)."""
    cc, bc = args[:cond_nconsts], args[cond_nconsts : cond_nconsts + body_nconsts]
    carry = tuple(args[cond_nconsts + body_nconsts :])
    return list(
        lax.while_loop(
            lambda c: _run(cond_jaxpr, *cc, *c)[0],
            lambda c: tuple(_run(body_jaxpr, *bc, *c)),
            carry,
        )
    )


def _scan(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    """``scan`` with sparse consts or carries (dense ``xs``, as JAX's rule): the body runs
    sparsely under ``lax.scan``; sparse outputs stack along a new batch dim."""
    consts, carry = args[:num_consts], tuple(args[num_consts : num_consts + num_carry])
    xs = tuple(args[num_consts + num_carry :])
    if any(map(_is_sparse, xs)):
        raise UnsupportedError("sparse rule for scan with sparse xs" + where())

    def body(c, x):
        outs = _run(jaxpr, *consts, *c, *x)
        return tuple(outs[:num_carry]), tuple(outs[num_carry:])

    c, ys = lax.scan(body, carry, xs, length=length, reverse=reverse, unroll=unroll)
    return [*c, *ys]


_UNARY = {
    # name: (function of the data, linear?)
    "abs": (jnp.abs, False),
    "asin": (jnp.arcsin, False),
    "asinh": (jnp.arcsinh, False),
    "atan": (jnp.arctan, False),
    "atanh": (jnp.arctanh, False),
    "bessel_i1e": (lax.bessel_i1e, False),
    "expm1": (jnp.expm1, False),
    "log1p": (jnp.log1p, False),
    "sign": (jnp.sign, False),
    "sin": (jnp.sin, False),
    "sinh": (jnp.sinh, False),
    "sqrt": (jnp.sqrt, False),
    "square": (jnp.square, False),
    "tan": (jnp.tan, False),
    "tanh": (jnp.tanh, False),
    "copy": (jnp.array, True),
    "imag": (jnp.imag, True),
    "neg": (jnp.negative, True),
    "real": (jnp.real, True),
    "conj": (jnp.conj, True),
}

_RULES = {name: _on_data(fn, linear) for name, (fn, linear) in _UNARY.items()}
_RULES |= {
    "add": _add,
    "sub": _sub,
    "mul": _mul,
    "div": _div,
    "integer_pow": _integer_pow,
    "convert_element_type": _convert,
    "reduce_sum": _reduce_sum,
    "dot_general": _dot_general,
    "transpose": lambda x, *, permutation: bcoo_transpose(x, permutation=permutation),
    "reshape": lambda x, *, new_sizes, dimensions=None, **_: bcoo_reshape(
        x, new_sizes=new_sizes, dimensions=dimensions
    ),
    "squeeze": lambda x, *, dimensions: bcoo_squeeze(x, dimensions=dimensions),
    "expand_dims": _expand_dims,
    "broadcast_in_dim": lambda x, *, shape, broadcast_dimensions, **_: bcoo_broadcast_in_dim(
        x, shape=shape, broadcast_dimensions=broadcast_dimensions
    ),
    "rev": lambda x, *, dimensions: bcoo_rev(x, dimensions),
    "slice": lambda x, *, start_indices, limit_indices, strides=None: bcoo_slice(
        x, start_indices=start_indices, limit_indices=limit_indices, strides=strides
    ),
    "dynamic_slice": lambda x, *starts, slice_sizes: bcoo_dynamic_slice(x, starts, slice_sizes),
    "concatenate": lambda *xs, dimension: bcoo_concatenate(xs, dimension=dimension),
    "gather": _gather_points,
    "cond": _cond,
    "while": _while,
    "scan": _scan,
}


_BINARY = frozenset({"add", "sub", "mul", "div"})


class _Stretched:
    """A BCOO value broadcast as NumPy broadcasts a binary operation's operand (leading axes
    added, size-1 axes stretched), which is how ``functx.numpy`` broadcasts; JAX's binary
    primitives stretch size-1 axes themselves, so their sparse rules see the operand with only
    its rank promoted. A binary operation gets ``base`` (that operand); any other consumer gets
    the broadcast itself (which raises where ``bcoo_broadcast_in_dim`` cannot make it)."""

    def __init__(self, x, eqn):
        self.eqn, self.x = eqn, x
        n = len(eqn.params["shape"]) - x.ndim
        self.base = bcoo_broadcast_in_dim(
            x, shape=(1,) * n + x.shape, broadcast_dimensions=tuple(range(n, n + x.ndim))
        )

    def made(self):
        with _at(self.eqn):
            return _RULES["broadcast_in_dim"](self.x, **self.eqn.params)


def _numpy_broadcast(eqn, x):
    """Whether the ``broadcast_in_dim`` ``eqn`` broadcasts the BCOO ``x`` as NumPy does
    (trailing axes aligned)."""
    shape, dims = eqn.params["shape"], tuple(eqn.params["broadcast_dimensions"])
    return _is_sparse(x) and dims == tuple(range(len(shape) - x.ndim, len(shape)))


def _eval_sparse(jaxpr, consts, args):
    """Run ``jaxpr`` on ``args`` (BCOO arrays or dense values): the sparse rule for an equation
    with a BCOO input, the primitive itself for the others."""
    env = {v.id: x for v, x in zip((*jaxpr.constvars, *jaxpr.invars), (*consts, *args))}

    def read(a, binary=False):
        x = a.val if type(a) is Literal else env[a.id]
        if type(x) is _Stretched:
            return x.base if binary else x.made()
        return x

    for eqn in jaxpr.eqns:
        if eqn.prim.name == "broadcast_in_dim" and _numpy_broadcast(eqn, x := read(eqn.invars[0])):
            env[eqn.outvars[0].id] = _Stretched(x, eqn)
            continue
        invals = [read(a, eqn.prim.name in _BINARY) for a in eqn.invars]
        with _at(eqn):
            if not any(map(_is_sparse, invals)):
                outs = eqn.prim.bind(*invals, **eqn.params)
            else:
                rule = _RULES.get(eqn.prim.name)
                if rule is None:
                    raise UnsupportedError(
                        f"sparse rule for {eqn.prim.name} is not implemented: sparsify has no "
                        "rule for this primitive with a sparse input (todense() densifies)"
                        + where()
                    )
                outs = rule(*invals, **eqn.params)
        for v, o in zip(eqn.outvars, outs if eqn.prim.multiple_results else [outs]):
            env[v.id] = o
    return [read(a) for a in jaxpr.outvars]


def _at(eqn):
    """The equation's source context (errors name the user's line), where it has one."""
    return source_info(eqn.source_info) if eqn.source_info is not None else _nothing()


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def sparsify(f, use_tracer: bool = False):
    """A function of dense ``functx.numpy`` code that also takes BCOO arguments
    (``jax.experimental.sparse.sparsify``): each operation on a sparse value runs its sparse
    version, so the dense array is never built.

    The rules cover the element-wise operations that keep zeros (``abs``, ``sin``, ``sqrt``,
    ``tanh``, negation, a cast, positive integer powers, ...), ``+`` and ``-`` of two sparse
    arrays (and ``+`` of a dense array of the full shape, which gives a dense result), ``*`` by a
    dense or sparse array, ``/`` by a dense array (a sparse operand of these broadcast by its
    size-1 axes, as JAX's rules do), ``dot_general`` / ``@`` with sparse operands, ``sum``,
    ``transpose``, ``reshape``, ``squeeze``, ``expand_dims``, ``broadcast_in_dim``, ``rev``,
    ``slice``, ``dynamic_slice``, indexing by integer arrays, ``concatenate``, and ``cond``,
    ``while_loop`` and ``scan`` (their bodies run sparsely; a scan's ``xs`` dense); another
    primitive with a sparse input raises ``UnsupportedError``.

    Arguments:
      f: a function of arrays (pytrees of them).
      use_tracer: accepted for JAX's signature; functx always traces ``f`` once and runs the
        traced program with the sparse rules (JAX's default path).
    Returns:
      a function with ``f``'s signature that accepts BCOO arrays wherever ``f`` takes arrays and
      returns BCOO arrays where the result stays sparse.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental import sparse
      >>> m = sparse.BCOO.fromdense(jnp.array([[0.0, 2.0], [3.0, 0.0]]))
      >>> out = sparse.sparsify(lambda x, v: jnp.sin(x) @ v + 1.0)(m, jnp.ones(2))
      >>> out.round(3)
      Array([1.909, 1.141], dtype=float32)
    """
    del use_tracer
    if not callable(f):
        raise FunctxTypeError(f"sparsify: expected a callable, got {type(f).__name__}" + where())

    cache = TraceCache()  # (a sparsified function called again on like arguments: no retrace)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        leaves, in_tree = tree_flatten((args, kwargs), is_leaf=_is_sparse)
        avals = tuple(
            get_aval(ShapeDtypeStruct(x.shape, x.dtype)) if _is_sparse(x) else get_aval(x)
            for x in leaves
        )
        key = (in_tree, avals, config.x64_on())
        hit = cache.get(key)
        if hit is None:
            hit = trace_flat(flatten_fun(f, in_tree), avals)
            cache.put(key, hit, hit[0])
        closed, out_tree = hit
        outs = _eval_sparse(closed.jaxpr, closed.consts, leaves)
        return tree_unflatten(out_tree, outs)

    return wrapped


_SPARSIFY["sparsify"] = sparsify  # (BCOO's reshape, indexing and arithmetic run through it)


# -- sparse-aware derivatives -------------------------------------------------------------------


def _on_data_of(transform, doc_name, what, returns, example):
    """The sparse-aware version of the functx transform ``transform`` (``jax.experimental.sparse``'s
    ``doc_name``): BCOO arguments among ``argnums`` are differentiated in their ``data``, and
    their derivatives come back as BCOO arrays with the same indices (extra leading dims of a
    Jacobian become batch dims). Its docstring says ``what`` it is (a sentence), what it
    ``returns`` and an ``example`` (doctest lines after the imports)."""

    def make(fun, argnums=0, has_aux=False, **kwargs):
        many = not isinstance(argnums, int)
        nums = tuple(operator.index(a) for a in argnums) if many else (operator.index(argnums),)

        def transformed(*args):
            if any(not -len(args) <= a < len(args) for a in nums):
                raise FunctxTypeError(
                    f"{doc_name}: argnums {argnums} out of range for {len(args)} arguments"
                    + where()
                )
            nums_ = tuple(a % len(args) for a in nums)
            # the differentiated BCOO arguments enter as their data; the rest as they are
            plain = [a.data if i in nums_ and _is_sparse(a) else a for i, a in enumerate(args)]

            def on_data(*xs):
                full = [
                    args[i]._with_data(x) if i in nums_ and _is_sparse(args[i]) else x
                    for i, x in enumerate(xs)
                ]
                return fun(*full)

            out = transform(on_data, argnums=argnums, has_aux=has_aux, **kwargs)(*plain)
            if doc_name == "value_and_grad":
                (value, derivs) = out
            else:
                (derivs, aux) = out if has_aux else (out, None)
            derivs = derivs if many else (derivs,)
            derivs = tuple(_as_sparse(args[a], d) for a, d in zip(nums_, derivs))
            derivs = derivs if many else derivs[0]
            if doc_name == "value_and_grad":
                return value, derivs
            return (derivs, aux) if has_aux else derivs

        return functools.wraps(fun)(transformed)

    output = "a dense output" if doc_name.startswith("jac") else "a scalar output"
    make.__name__ = make.__qualname__ = doc_name
    make.__doc__ = f"""{textwrap.fill(what, 96, subsequent_indent="    ")}

    Arguments:
      fun: a function with {output} (and an auxiliary output with ``has_aux``).
      argnums: the argument (int) or arguments (tuple) to differentiate.
      has_aux: whether ``fun`` returns ``(output, aux)``.
      **kwargs: passed to ``functx.{doc_name}``.
    Returns:
      {textwrap.fill(returns, 92, subsequent_indent="      ")}
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental import sparse{example}
    """
    return make


def _as_sparse(arg, deriv):
    """The derivative with respect to ``arg``: a BCOO of ``arg``'s indices for a BCOO ``arg``
    (``deriv``'s extra leading dims, a Jacobian's output dims, become batch dims)."""
    if not _is_sparse(arg):
        return deriv
    build = arg._with_data
    for _ in range(deriv.ndim - arg.data.ndim):
        build = vmap(build)
    return build(deriv)


grad = _on_data_of(
    functx_grad,
    "grad",
    "The sparse-aware ``grad`` (``jax.experimental.sparse.grad``): the gradient with respect to a "
    "BCOO argument is taken in its stored values, and is a BCOO with the same indices.",
    "a function giving the gradient (a BCOO for a BCOO argument), with ``aux`` when ``has_aux``.",
    """
      >>> X = sparse.BCOO.fromdense(jnp.array([0.0, 1.0, 2.0]))
      >>> g = sparse.grad(lambda X, y: (X @ y) ** 2)(X, jnp.ones(3))
      >>> g, g.data
      (BCOO(float32[3], nse=2), Array([6., 6.], dtype=float32))""",
)
value_and_grad = _on_data_of(
    functx_value_and_grad,
    "value_and_grad",
    "The sparse-aware ``value_and_grad`` (``jax.experimental.sparse.value_and_grad``).",
    "a function giving ``(value, gradient)`` (``((value, aux), gradient)`` with ``has_aux``); "
    "the gradient with respect to a BCOO argument is a BCOO with its indices.",
    """
      >>> X = sparse.BCOO.fromdense(jnp.arange(4.0))
      >>> sparse.value_and_grad(lambda X, y: X @ y)(X, jnp.ones(4))
      (Array(6., dtype=float32), BCOO(float32[4], nse=3))""",
)
jacfwd = _on_data_of(
    functx_jacfwd,
    "jacfwd",
    "The sparse-aware ``jacfwd`` (``jax.experimental.sparse.jacfwd``): the Jacobian with respect "
    "to a BCOO argument's stored values, as a BCOO whose leading batch dims are the output's "
    "dims (a dense output, as in JAX).",
    "a function giving the Jacobian (with ``aux`` when ``has_aux``).",
    """
      >>> X = sparse.BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]))
      >>> J = sparse.jacfwd(lambda X, y: X @ y)(X, jnp.array([3.0, 4.0]))
      >>> J.shape, J.data
      ((2, 2, 2), Array([[4., 0.],
             [0., 3.]], dtype=float32))""",
)
jacrev = _on_data_of(
    functx_jacrev,
    "jacrev",
    "The sparse-aware ``jacrev`` (``jax.experimental.sparse.jacrev``; ``jacobian`` is the same "
    "function): as :func:`jacfwd`, computed in reverse mode.",
    "a function giving the Jacobian (with ``aux`` when ``has_aux``).",
    """
      >>> X = sparse.BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]))
      >>> sparse.jacrev(lambda X, y: X @ y)(X, jnp.array([3.0, 4.0])).data
      Array([[4., 0.],
             [0., 3.]], dtype=float32)""",
)
jacobian = jacrev
