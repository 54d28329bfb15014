"""Reverse mode: vjp, grad, value_and_grad, jacrev (and jacfwd, hessian), built from
linearize + transpose.

``grad(f)(x)`` traces ``f``, linearizes it, transposes the linear Jaxpr, and stitches primal and
backward pass into one gradient Jaxpr (cleaned by CSE and DCE, cached per signature), which it then
evaluates. ``functx.make_jaxpr(functx.grad(f))(x)`` prints that Jaxpr.
"""

from __future__ import annotations

import functools
import weakref

import numpy as np

from functx import dtypes, ops
from functx.array import UncommittedArray, is_python_scalar
from functx.core import ClosedJaxpr, ShapedArray, Var
from functx.errors import (
    ConcretizationError,
    FunctxArgumentError,
    FunctxTypeError,
    FunctxValueError,
)
from functx.interpreter import eval_jaxpr
from functx.source_info import where
from functx.tracing import eval_shape, get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms import passes
from functx.transforms.jvp import (
    ArgnumsError,
    Zero,
    as_arrays,
    bad_argument,
    check_argnums,
    check_callable,
    clear_caches as clear_trace_caches,
    fun_name,
    instantiate,
    is_differentiable,
    jvp,
    tangent_aval,
    trace_user_fun,
    zeros_like_aval,
)
from functx.transforms.linearize import linearize_jaxpr
from functx.transforms.transpose import UndefinedPrimal, backward_pass
from functx.transforms.vmap import vmap
from functx.tree_util import register_pytree_node, tree_leaves

_fun_name = fun_name


def _as_argnums(argnums, nargs, fname, what="grad"):
    check_argnums(f"{what} of {fname}", argnums)
    single = isinstance(argnums, (int, np.integer))
    nums = (int(argnums),) if single else tuple(int(a) for a in argnums)
    for a in nums:
        if not -nargs <= a < nargs:
            raise ArgnumsError(
                f"{what} of {fname}: argnums {argnums} is out of range for a call with {nargs} "
                f"positional arguments: differentiating with respect to argnums={a} requires at "
                f"least {a + 1 if a >= 0 else -a} positional arguments to be passed by the "
                f"caller, but got only {nargs} positional arguments.{where()}"
            )
    nums = tuple(a % nargs for a in nums)
    if len(set(nums)) != len(nums):
        raise ArgnumsError(f"{what} of {fname}: argnums {argnums} names an argument twice{where()}")
    return single, nums


def _leaf_ranges(args):
    """For each positional argument, the range of its leaves among the flattened (args, {})."""
    out, start = [], 0
    for a in args:
        n = len(tree_flatten(a)[0])
        out.append(range(start, start + n))
        start += n
    return out


# --- vjp -----------------------------------------------------------------------------------------
def _vjp_parts(fun, primals, has_aux, nonzero_mask=None):
    traced, leaves = trace_user_fun(fun, tuple(primals), has_aux)
    nonzeros = tuple(
        is_differentiable(get_aval(x)) and (nonzero_mask is None or nonzero_mask[i])
        for i, x in enumerate(leaves)
    )
    lin = linearize_jaxpr(traced.closed, nonzeros, traced.n_out)
    return traced, leaves, nonzeros, lin


def _weak_as(ct, aval):
    """The cotangent of a primal with ``aval``, weakly typed exactly when the primal is (as in
    JAX, where ``grad(lambda x: 2 * x)(1.0)`` is weak and the gradient at a float32 array not)."""
    ca = get_aval(ct)
    if ca.dtype != aval.dtype or ca.weak_type == aval.weak_type:
        return ct
    return ops.convert_element_type(ct, ca.dtype, aval.weak_type)


def vjp(fun, *primals, has_aux=False):
    """Evaluate ``fun`` and return its vector-Jacobian product function (``jax.vjp``).

    Arguments:
      fun: a function of pytrees of arrays returning a pytree of arrays (``(out, aux)`` with
        ``has_aux``).
      *primals: the point to evaluate at, one value per positional argument of ``fun``.
      has_aux: ``fun`` returns ``(out, aux)``; ``aux`` is returned as is, not differentiated.
    Returns:
      ``(fun(*primals), vjp_fun)`` (``(out, vjp_fun, aux)`` with ``has_aux``); ``vjp_fun(ct)`` takes
      a
      cotangent of the output's structure and returns a tuple of one cotangent per primal.
      ``vjp_fun`` is a pytree of its residuals, JAX's ``VJP``: ``vjp_fun.args_res`` holds the
      primal arguments the backward pass reads (``NotNeeded()`` for the others) and may be set,
      ``vjp_fun.opaque_residuals`` the values computed in the forward pass.

    Differences from JAX: outside ``jit`` and ``vmap``, a function that reads a concrete value (``if
    x > 0``, ``int(x)``) is traced abstractly, then again on tracers carrying the values: its Python
    body runs twice on the first call (mind side effects such as printing). With a strongly typed
    cotangent the input cotangents are strong, where some of JAX's transpose rules give weak ones.

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> y, f_vjp = functx.vjp(lambda x: x * 3.0, jnp.float32(2.0))
      >>> y, f_vjp(jnp.float32(1.0))
      (Array(6., dtype=float32), (Array(3., dtype=float32),))
    """
    check_callable("vjp", fun)
    traced, leaves, nonzeros, lin = _vjp_parts(fun, primals, has_aux)
    res = as_arrays(eval_jaxpr(lin.primal.jaxpr, lin.primal.consts, *leaves))
    n_all = len(traced.closed.out_avals)
    outs, residuals = res[:n_all], res[n_all:]
    in_avals = [get_aval(x) for x in leaves]
    # the pullback: a pytree whose leaves are the residuals, so it may be returned from and passed
    # to transformed functions, as JAX's; residuals that are the primal inputs themselves are
    # kept apart (``args_res``), as in JAX's input-saving VJP
    pullback = functools.partial(
        _pullback,
        traced,
        tuple(in_avals),
        tuple(nonzeros),
        lin,
        _fun_name(fun),
        getattr(fun, "__name__", type(fun).__name__),
    )
    vjp_fun = _input_saving_vjp(pullback, lin, primals, leaves, residuals, n_all)
    primal_out = tree_unflatten(traced.out_tree, outs[: traced.n_out])
    if has_aux:
        return primal_out, vjp_fun, tree_unflatten(traced.aux_tree, outs[traced.n_out :])
    return primal_out, vjp_fun


class NotNeeded:
    """An entry of ``VJP.args_res`` for a primal input the backward pass does not read."""

    __slots__ = ()

    def __repr__(self):
        return "NotNeeded()"

    def __eq__(self, other):
        return type(other) is NotNeeded

    __hash__ = object.__hash__


register_pytree_node(NotNeeded, lambda x: ((), None), lambda aux, xs: NotNeeded())


class VJP:
    """The function ``vjp`` returns (JAX's ``VJP``): call it with a cotangent of the output.

    Its residuals are in two lists, its pytree leaves: ``args_res``, one entry per primal
    argument (in the argument's structure, containers as tuples), holding that argument's values
    where the backward pass reads them and ``NotNeeded()`` where it does not, and
    ``opaque_residuals``, the values computed in the forward pass. Setting ``args_res`` (say to
    ``None`` while the VJP is stored, and back to the inputs before it is called) is allowed,
    as in JAX."""

    __slots__ = ("fun", "spec", "args_res", "opaque_residuals", "__weakref__")

    def __init__(self, fun, spec, args_res, opaque_residuals):
        self.fun = fun  # functools.partial(_pullback, ...) taking (residuals, ct)
        self.spec = spec  # per residual: (index, True) into args_res' leaves or (index, False)
        self.args_res = args_res
        self.opaque_residuals = opaque_residuals

    jaxpr = property(lambda self: self.fun.args[3].linear, doc="the backward pass's linear Jaxpr")

    def __call__(self, *cts):
        args = tree_leaves(self.args_res, is_leaf=lambda x: isinstance(x, NotNeeded))
        res = [args[i] if primal else self.opaque_residuals[i] for i, primal in self.spec]
        for r in res:
            if isinstance(r, NotNeeded) or r is None:
                raise FunctxValueError(
                    f"a VJP function of {self.fun.args[4]} was called with a residual missing "
                    f"from args_res ({r!r}): put the primal inputs back first{where()}"
                )
        return self.fun(as_arrays(res), *cts)

    def __repr__(self):
        return f"VJP({self.fun.args[5]})"


register_pytree_node(
    VJP,
    lambda v: ((v.args_res, v.opaque_residuals), (v.fun, v.spec)),
    lambda aux, xs: VJP(aux[0], aux[1], xs[0], xs[1]),
)


def _tuptree(spec, it):
    """The values of ``it`` in ``spec``'s structure, each container as a tuple (JAX's tuptree)."""
    if spec.is_leaf():
        return next(it)
    return tuple(_tuptree(c, it) for c in spec.children())


def _input_saving_vjp(pullback, lin, primals, leaves, residuals, n_all):
    jaxpr = lin.primal.jaxpr
    position = {v: i for i, v in enumerate(jaxpr.invars)}
    used, spec, opaque = set(), [], []
    for v, r in zip(jaxpr.outvars[n_all:], residuals):
        i = position.get(v) if isinstance(v, Var) else None
        if i is None:
            spec.append((len(opaque), False))
            opaque.append(r)
        else:
            used.add(i)
            spec.append((i, True))
    flat = iter([x if i in used else NotNeeded() for i, x in enumerate(leaves)])
    args_res = [_tuptree(s, flat) for s in tree_flatten(tuple(primals))[1].children()]
    return VJP(pullback, tuple(spec), args_res, opaque)


_VJP_ARGS = """
The function returned by `functx.vjp` applied to {name} was called with {n} arguments, but
functions returned by `functx.vjp` must be called with a single argument corresponding to the
single value returned by the function being differentiated (even if that returned value is a
tuple or other container): for `f = lambda x: (x, x)` and `_, f_vjp = functx.vjp(f, 1.0)`, call
`x_bar, = f_vjp((2.0, 2.0))`, not `f_vjp(2.0, 2.0)`."""


def _pullback(traced, in_avals, nonzeros, lin, fname, name, residuals, *cts):
    """``vjp``'s pullback at the cotangent ``cts[0]``, from the forward pass's residuals."""
    if len(cts) != 1:
        raise FunctxTypeError(_VJP_ARGS.format(name=name, n=len(cts)))
    (ct,) = cts
    n = traced.n_out
    out_avals = traced.closed.out_avals
    ct_leaves, ct_tree = tree_flatten(ct)
    if ct_tree != traced.out_tree:
        raise FunctxArgumentError(  # (a ValueError, as JAX's)
            f"vjp of {fname}: unexpected tree structure: the cotangent must have the "
            f"structure of the primal output, {traced.out_tree}; got {ct_tree}{where()}"
        )
    for i, (c, a) in enumerate(zip(ct_leaves, out_avals)):
        ca = get_aval(c)
        if ca.shape != a.shape:
            raise FunctxArgumentError(
                f"unexpected JAX type (shape) for the argument of the VJP function of {fname}: "
                f"cotangent leaf {i} has shape {ca.str_short()}, the primal output has "
                f"{a.str_short()}{where()}"
            )
        if a.dtype != ca.dtype and ca.dtype in dtypes.FLOATS and not is_python_scalar(c):
            raise FunctxArgumentError(  # (a ValueError, as JAX's)
                f"unexpected JAX type (dtype) for the argument of the VJP function of {fname}: "
                f"cotangent leaf {i} is {ca.str_short()}, the primal output is "
                f"{a.str_short()}{where()}"
            )
        if a.dtype in dtypes.FLOATS and ca.dtype not in dtypes.FLOATS and not is_python_scalar(c):
            raise FunctxValueError(
                f"vjp of {fname}: cotangent leaf {i} has dtype {ca.str_short()}, but the "
                f"primal output {a.str_short()} needs a float cotangent of its dtype"
                f"{where()}"
            )
    cts_out = [
        ct_leaves[i] if i < n else Zero(tangent_aval(a))
        for i, (nz, a) in enumerate(zip(lin.out_nz, out_avals))
        if nz
    ]
    cts_out = [
        c
        if isinstance(c, Zero) or get_aval(c).dtype == a.dtype
        else ops.convert_element_type(c, a.dtype)
        for c, a in zip(cts_out, [a for nz, a in zip(lin.out_nz, out_avals) if nz])
    ]
    args = list(residuals) + [
        UndefinedPrimal(tangent_aval(a)) for a, nz in zip(in_avals, nonzeros) if nz
    ]
    cts = iter(
        as_arrays(instantiate(c) for c in backward_pass(lin.linear, [], args, cts_out)[lin.n_res :])
    )
    out = [
        _weak_as(next(cts), a) if nz else zeros_like_aval(tangent_aval(a))
        for a, nz in zip(in_avals, nonzeros)
    ]
    return tree_unflatten(traced.in_tree, out)[0]


# --- grad / value_and_grad -----------------------------------------------------------------------
_grad_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def clear_caches():
    """Forget every cached trace, jvp and gradient Jaxpr (see ``jvp.clear_caches``)."""
    clear_trace_caches()
    _grad_cache.clear()


def _grad_jaxpr(closed: ClosedJaxpr, nonzeros: tuple, n_out: int, with_value: bool) -> ClosedJaxpr:
    """One Jaxpr: leaves -> (the value if ``with_value``, the aux outputs, the gradients of output 0
    w.r.t. the nonzero leaves). DCE drops whatever of the primal the gradient does not need."""
    per = _grad_cache.setdefault(closed, {})
    key = (nonzeros, with_value)
    if key in per:
        return per[key]
    lin = linearize_jaxpr(closed, nonzeros, n_out)
    out_avals = closed.out_avals
    n_all = len(out_avals)
    in_avals = closed.in_avals

    def flat(*leaves):
        res = eval_jaxpr(lin.primal.jaxpr, lin.primal.consts, *leaves)
        outs, residuals = res[:n_all], res[n_all:]
        seed = ops.full((), 1, out_avals[0].dtype)
        cts_out = [
            seed if i == 0 else Zero(tangent_aval(a))
            for i, (nz, a) in enumerate(zip(lin.out_nz, out_avals))
            if nz
        ]
        args = list(residuals) + [
            UndefinedPrimal(tangent_aval(a)) for a, nz in zip(in_avals, nonzeros) if nz
        ]
        grads = [instantiate(g) for g in backward_pass(lin.linear, [], args, cts_out)[lin.n_res :]]
        grads = [
            _weak_as(g, a) for g, a in zip(grads, [a for a, nz in zip(in_avals, nonzeros) if nz])
        ]
        return (list(outs) if with_value else list(outs[1:])) + grads, None

    g, _ = trace_flat(flat, in_avals)
    g = passes.simplify(g)
    per[key] = g
    return g


def _holomorphic_msg(what, kind, dt):
    return f"{what} with holomorphic=True requires {kind} with complex dtype, but got {dt.name}."


def _check_rev_output(what, a, holomorphic, fname):
    """JAX's output check of reverse-mode derivatives (grad, jacrev)."""
    if holomorphic:
        if a.dtype not in dtypes.COMPLEX:
            raise FunctxTypeError(
                _holomorphic_msg(what, "outputs", a.dtype) + f" ({what} of {fname}{where()})"
            )
    elif not is_differentiable(a) or a.dtype in dtypes.COMPLEX:
        hint = (
            " For holomorphic differentiation, pass holomorphic=True. For differentiating "
            "non-holomorphic functions involving complex outputs, use functx.vjp directly."
            if a.dtype in dtypes.COMPLEX
            else ""
        )
        raise FunctxTypeError(
            f"{what} requires real-valued outputs (output dtype that is a "
            f"sub-dtype of np.floating), but got {a.dtype.name}.{hint} ({what} of "
            f"{fname}{where()})"
        )


def _check_holomorphic_input(what, av, holomorphic, where_text):
    if holomorphic and av.dtype not in dtypes.COMPLEX:
        raise FunctxTypeError(_holomorphic_msg(what, "inputs", av.dtype) + f" ({where_text})")


def _check_grad_output(traced, fname, holomorphic=False):
    if traced.n_out != 1 or traced.out_tree != tree_flatten(0.0)[1]:
        raise FunctxTypeError(
            f"Gradient only defined for scalar-output functions. Output was a "
            f"{traced.out_tree} ({fname}){where()}"
        )
    a = traced.closed.out_avals[0]
    if a.shape != ():
        raise FunctxTypeError(
            f"Gradient only defined for scalar-output functions. Output had "
            f"shape: {a.shape}. (grad of {fname}{where()}; use jacrev or vjp "
            "for non-scalar outputs)"
        )
    _check_rev_output("grad", a, holomorphic, fname)


def value_and_grad(
    fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, _with_value=True
):
    """A function returning ``fun``'s value and gradient (``jax.value_and_grad``).

    Arguments:
      fun: scalar-valued function of pytrees of float arrays.
      argnums: an int or a tuple of ints: which positional arguments to differentiate.
      has_aux: ``fun`` returns ``(value, aux)``; aux is returned, not differentiated.
      holomorphic: ``fun`` is holomorphic (complex inputs and a complex output): the gradient
        is its complex derivative. Without it, complex inputs are allowed (JAX's convention:
        the gradient of a real ``f(x + iy)`` is ``df/dx - i df/dy``) but the output must be real.
      allow_int: allow integer and bool inputs (their gradients are float0 zeros).
    Returns:
      A function of ``fun``'s arguments returning ``(value, grad)`` (``((value, aux), grad)`` with
      ``has_aux``); ``grad`` has the structure of the differentiated argument(s) (a tuple for a
      tuple ``argnums``).

    Differences from JAX: outside ``jit`` and ``vmap``, a function that reads a concrete value (``if
    x > 0``, ``int(x)``) is traced abstractly, then again on tracers carrying the values: its Python
    body runs twice on the first call (mind side effects such as printing).

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> functx.value_and_grad(lambda x: (x ** 2).sum())(jnp.arange(3.0))
      (Array(5., dtype=float32), Array([0., 2., 4.], dtype=float32))
    """
    check_callable("value_and_grad" if _with_value else "grad", fun)
    check_argnums("value_and_grad" if _with_value else "grad", argnums)
    fname = _fun_name(fun)
    partials: dict = {}

    @functools.wraps(fun)
    def vg(*args, **kwargs):
        all_args = args
        single, nums = _as_argnums(argnums, len(args), fname)
        # Like JAX, arguments that are not differentiated reach ``fun`` as they are: Python
        # values (a loop bound, a flag) stay static instead of becoming traced scalars.
        static = tuple((i, a) for i, a in enumerate(args) if i not in nums and _is_static(a))
        if static:
            try:
                f_eff = partials.get(static)
            except TypeError:
                f_eff = None
            if f_eff is None:
                f_eff = _bind_static(fun, static, len(args))
                try:
                    partials[static] = f_eff
                except TypeError:
                    pass
            pos = [i for i in range(len(args)) if i not in dict(static)]
            args = tuple(args[i] for i in pos)
            nums = tuple(pos.index(a) for a in nums)
        else:
            f_eff = fun
            pos = list(range(len(args)))
        if kwargs and _has_non_array(tree_flatten(kwargs)[0]):  # JAX passes them as they are
            f_eff, kwargs = functools.partial(f_eff, **kwargs), {}
        try:
            traced, leaves = trace_user_fun(f_eff, args, has_aux, kwargs)
        except FunctxTypeError as e:
            if not getattr(e, "bad_argument", False):
                raise
            what = "value_and_grad" if _with_value else "grad"
            raise bad_argument(f"{what} of {fname}", all_args, kwargs) or e from None
        ranges = _leaf_ranges(args)
        mask = [False] * len(leaves)
        for a in nums:
            for i in ranges[a]:
                av = get_aval(leaves[i])
                _check_holomorphic_input(
                    "grad", av, holomorphic, f"argument {pos[a]} of {fname}{where()}"
                )
                if not is_differentiable(av) and not allow_int:
                    raise FunctxTypeError(
                        f"grad requires real- or complex-valued inputs (input dtype that is a "
                        f"sub-dtype of np.inexact), but got {av.dtype.name}. If you want to use "
                        f"Boolean- or integer-valued inputs, use vjp or set allow_int to True. "
                        f"(argument {pos[a]} of {fname}{where()})"
                    )
                mask[i] = is_differentiable(av)
        _check_grad_output(traced, fname, holomorphic)  # (after the inputs, as JAX checks them)
        g = _grad_jaxpr(traced.closed, tuple(mask), traced.n_out, _with_value)
        res = as_arrays(eval_jaxpr(g.jaxpr, g.consts, *leaves))
        n_all = len(traced.closed.out_avals) - (0 if _with_value else 1)
        outs, grads = res[:n_all], iter(res[n_all:])
        if not _with_value:
            outs = [None] + list(outs)
        per_leaf = [
            next(grads)
            if m
            else (zeros_like_aval(tangent_aval(get_aval(x))) if i in _flat(ranges, nums) else None)
            for i, (x, m) in enumerate(zip(leaves, mask))
        ]
        arg_grads = [
            tree_unflatten(tree_flatten(args[a])[1], [per_leaf[i] for i in ranges[a]]) for a in nums
        ]
        grad_out = arg_grads[0] if single else tuple(arg_grads)
        value = outs[0]
        if has_aux:
            return (value, tree_unflatten(traced.aux_tree, outs[1:])), grad_out
        return value, grad_out

    return vg


def _flat(ranges, nums):
    return {i for a in nums for i in ranges[a]}


def _is_static(a) -> bool:
    """Python values (and containers of them) that need not be traced, and, as JAX passes the
    arguments it does not differentiate as they are, anything that is not an array (a function,
    an object of an unregistered class, a string)."""
    leaves = tree_flatten(a)[0]
    if all(type(x) in (bool, int, float, str) for x in leaves) and (bool(leaves) or a is None):
        return True
    return _has_non_array(leaves)


def _has_non_array(leaves) -> bool:
    for x in leaves:
        try:
            get_aval(x)
        except (TypeError, ValueError, AttributeError):
            return True
    return False


def _bind_static(fun, static, n):
    fixed = dict(static)

    def f(*dyn, **kwargs):
        it = iter(dyn)
        return fun(*[fixed[i] if i in fixed else next(it) for i in range(n)], **kwargs)

    f.__name__ = getattr(fun, "__name__", "f")
    return f


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """The gradient of a scalar-valued function, as a function (``jax.grad``).

    Arguments:
      fun: scalar-valued function of pytrees of float (or complex) arrays.
      argnums: an int or a tuple of ints: which positional arguments to differentiate.
      has_aux: ``fun`` returns ``(value, aux)``; the result returns ``(grad, aux)``.
      holomorphic: ``fun`` is holomorphic: the gradient is its complex derivative.
      allow_int: allow integer and bool inputs (their gradients are float0 zeros).
    Returns:
      A function of ``fun``'s arguments returning the gradient, of the structure of the
      differentiated argument(s) (a tuple for a tuple ``argnums``).

    Differences from JAX: outside ``jit`` and ``vmap``, a function that reads a concrete value (``if
    x > 0``, ``int(x)``) is traced abstractly, then again on tracers carrying the values: its Python
    body runs twice on the first call (mind side effects such as printing).

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> functx.grad(lambda x: jnp.sin(x).sum())(jnp.zeros(3))
      Array([1., 1., 1.], dtype=float32)
      >>> functx.grad(lambda x, y: x * y, argnums=(0, 1))(2.0, 5.0)
      (Array(5., dtype=float32, weak_type=True), Array(2., dtype=float32, weak_type=True))
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, _with_value=False)

    @functools.wraps(fun)
    def g(*args, **kwargs):
        (value_aux, gr) = vg(*args, **kwargs)
        if has_aux:
            return gr, value_aux[1]
        return gr

    return g


# --- Jacobians -----------------------------------------------------------------------------------
def _partial_args(fun, args, nums):
    def f(*dyn):
        full = list(args)
        for a, d in zip(nums, dyn):
            full[a] = d
        return fun(*full)

    return f


def _basis(avals, total):
    """Rows of the identity split per leaf: leaf i gets shape (total, *shape_i)."""
    out, off = [], 0
    for a in avals:
        n = int(np.prod(a.shape, dtype=np.int64))
        block = np.zeros((total, n), dtype=a.dtype)
        block[off : off + n] = np.eye(n, dtype=a.dtype)
        out.append(UncommittedArray.from_value(block.reshape((total,) + a.shape)))
        off += n
    return out


def _check_float_inputs(leaves, what, fname, args=(), holomorphic=False):
    """JAX's input checks: holomorphic derivatives need complex inputs; jacfwd otherwise real
    ones; jacrev real or complex ones."""
    try:
        avals = [get_aval(x) for x in leaves]
    except (TypeError, ValueError, AttributeError) as e:
        raise bad_argument(f"{what} of {fname}", args) or e from None
    for av in avals:
        _check_holomorphic_input(what, av, holomorphic, f"{what} of {fname}{where()}")
        cplx = av.dtype in dtypes.COMPLEX
        if not is_differentiable(av) or (cplx and what == "jacfwd" and not holomorphic):
            hint = (
                ". For holomorphic differentiation, pass holomorphic=True. For differentiating "
                "non-holomorphic functions involving complex inputs, use functx.vjp directly"
                if cplx
                else ""
            )
            raise FunctxTypeError(
                f"{what} requires real-valued inputs (input dtype that is a "
                f"sub-dtype of np.floating), but got {av.dtype.name}{hint} ({what} of "
                f"{fname}{where()})"
            )


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Jacobian of ``fun`` by forward mode (``jax.jacfwd``): ``vmap`` of ``jvp`` over the
    standard basis of the inputs.

    Arguments:
      fun: a function of pytrees of float arrays.
      argnums: an int or a tuple of ints: which positional arguments to differentiate.
      has_aux: ``fun`` returns ``(out, aux)``; the result returns ``(jacobian, aux)``.
      holomorphic: complex inputs and outputs; the Jacobian of the complex derivative.
    Returns:
      A function of ``fun``'s arguments returning the Jacobian: for output leaf ``y`` and input
      leaf ``x`` a block of shape ``y.shape + x.shape``.

    Differences from JAX: outside ``jit`` and ``vmap``, a function that reads a concrete value (``if
    x > 0``, ``int(x)``) is traced abstractly, then again on tracers carrying the values: its Python
    body runs twice on the first call (mind side effects such as printing).

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> functx.jacfwd(lambda x: x ** 2)(jnp.float32([1.0, 2.0]))
      Array([[2., 0.],
             [0., 4.]], dtype=float32)
    """

    check_callable("jacfwd", fun)
    check_argnums("jacfwd", argnums)
    fname = _fun_name(fun)

    @functools.wraps(fun)
    def jac(*args):
        single, nums = _as_argnums(argnums, len(args), fname, "jacfwd")
        dyn = tuple(args[a] for a in nums)
        x_leaves, x_tree = tree_flatten(dyn)
        _check_float_inputs(x_leaves, "jacfwd", fname, args, holomorphic)
        x_avals = [get_aval(x) for x in x_leaves]
        total = sum(a.size for a in x_avals)
        f = _partial_args(fun, args, nums)

        def push(*t_leaves):
            ts = tree_unflatten(x_tree, list(t_leaves))
            if has_aux:
                y, ty, aux = jvp(f, dyn, ts, has_aux=True)
                return y, ty, aux
            y, ty = jvp(f, dyn, ts)
            return y, ty

        outs = vmap(push, out_axes=(None, 0, None) if has_aux else (None, 0))(
            *_basis(x_avals, total)
        )
        y, ty = outs[0], outs[1]
        y_leaves, y_tree = tree_flatten(y)
        for yl in y_leaves if holomorphic else ():
            dt = get_aval(yl).dtype
            if dt not in dtypes.COMPLEX:
                raise FunctxTypeError(
                    _holomorphic_msg("jacfwd", "outputs", dt) + f" (jacfwd of {fname}{where()})"
                )
        ty_leaves = tree_flatten(ty)[0]
        # The outputs' weak types (lost through vmap's unmapped outputs) from an abstract trace;
        # a function that needs its inputs' values (Python control flow, eager only: under a
        # trace the jvp above has raised already) is evaluated once more on them instead.
        try:
            shapes = eval_shape(f, *dyn)
        except ConcretizationError:
            shapes = f(*dyn)
        y_weak = [get_aval(s).weak_type for s in tree_flatten(shapes[0] if has_aux else shapes)[0]]
        blocks = []
        for yl, tl, yw in zip(y_leaves, ty_leaves, y_weak):
            ya = get_aval(yl)
            per_x, off = [], 0
            for xa in x_avals:
                piece = ops.slice_in_dim(tl, off, off + xa.size, 1, 0)  # (n_x, *y.shape)
                piece = ops.transpose(piece, tuple(range(1, ya.ndim + 1)) + (0,))
                piece = ops.reshape(piece, ya.shape + xa.shape)
                # Like JAX: a block is weakly typed when both its output and input are.
                per_x.append(_weak_as(piece, ShapedArray((), ya.dtype, yw and xa.weak_type)))
                off += xa.size
            tree = tree_unflatten(x_tree, per_x)
            blocks.append(tree[0] if single else tree)
        out = tree_unflatten(y_tree, blocks)
        return (out, outs[2]) if has_aux else out

    return jac


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """The Jacobian of ``fun`` by reverse mode (``jax.jacrev``, also ``jax.jacobian``): ``vmap``
    of ``vjp`` over the standard basis of the outputs.

    Arguments:
      fun: a function of pytrees of float arrays.
      argnums: an int or a tuple of ints: which positional arguments to differentiate.
      has_aux: ``fun`` returns ``(out, aux)``; the result returns ``(jacobian, aux)``.
      holomorphic: complex inputs and outputs; the Jacobian of the complex derivative.
      allow_int: allow integer and bool inputs (their blocks are float0 zeros).
    Returns:
      A function of ``fun``'s arguments returning the Jacobian: for output leaf ``y`` and input
      leaf ``x`` a block of shape ``y.shape + x.shape``.

    Differences from JAX: outside ``jit`` and ``vmap``, a function that reads a concrete value (``if
    x > 0``, ``int(x)``) is traced abstractly, then again on tracers carrying the values: its Python
    body runs twice on the first call (mind side effects such as printing).

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> functx.jacrev(lambda x: x[0] * x)(jnp.float32([2.0, 3.0]))
      Array([[4., 0.],
             [3., 2.]], dtype=float32)
    """

    check_callable("jacrev", fun)
    check_argnums("jacrev", argnums)
    fname = _fun_name(fun)

    @functools.wraps(fun)
    def jac(*args):
        single, nums = _as_argnums(argnums, len(args), fname, "jacrev")
        dyn = tuple(args[a] for a in nums)
        x_leaves, x_tree = tree_flatten(dyn)
        _check_float_inputs(x_leaves, "jacrev", fname, args, holomorphic)
        f = _partial_args(fun, args, nums)
        if has_aux:
            y, f_vjp, aux = vjp(f, *dyn, has_aux=True)
        else:
            y, f_vjp = vjp(f, *dyn)
        y_leaves, y_tree = tree_flatten(y)
        y_avals = [get_aval(v) for v in y_leaves]
        for ya in y_avals:
            _check_rev_output("jacrev", ya, holomorphic, fname)
        total = sum(a.size for a in y_avals)

        def pull(*ct_leaves):
            return f_vjp(tree_unflatten(y_tree, list(ct_leaves)))

        cts = vmap(pull)(*_basis(y_avals, total))  # tuple over dyn args, leaves (total, *x.shape)
        ct_leaves = tree_flatten(cts)[0]
        x_avals = [get_aval(x) for x in x_leaves]
        blocks = []
        off = 0
        for ya in y_avals:
            per_x = []
            for cl, xa in zip(ct_leaves, x_avals):
                piece = ops.slice_in_dim(cl, off, off + ya.size, 1, 0)  # (n_y, *x.shape)
                per_x.append(ops.reshape(piece, ya.shape + xa.shape))
            off += ya.size
            tree = tree_unflatten(x_tree, per_x)
            blocks.append(tree[0] if single else tree)
        out = tree_unflatten(y_tree, blocks)
        return (out, aux) if has_aux else out

    return jac


jacobian = jacrev


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Hessian of a scalar-valued function (``jax.hessian``): ``jacfwd(jacrev(fun))``.

    Arguments:
      fun: a scalar-valued function of pytrees of float arrays.
      argnums: an int or a tuple of ints: which positional arguments to differentiate.
      has_aux: ``fun`` returns ``(value, aux)``; the result returns ``(hessian, aux)``.
      holomorphic: complex inputs and output; the complex second derivative.
    Returns:
      A function of ``fun``'s arguments returning the Hessian: for input leaves ``x`` and ``z`` a
      block of shape ``x.shape + z.shape``.

    Differences from JAX: outside ``jit`` and ``vmap``, a function that reads a concrete value (``if
    x > 0``, ``int(x)``) is traced abstractly, then again on tracers carrying the values: its Python
    body runs twice on the first call (mind side effects such as printing).

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> functx.hessian(lambda x: (x ** 3).sum())(jnp.float32([1.0, 2.0]))
      Array([[ 6.,  0.],
             [ 0., 12.]], dtype=float32)
    """
    return jacfwd(
        jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic),
        argnums,
        has_aux=has_aux,
        holomorphic=holomorphic,
    )


__all__ = ["vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "jacobian", "hessian"]
