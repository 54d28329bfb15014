"""``custom_jvp`` and ``custom_vjp``: user-supplied derivative rules, as Jaxpr equations.

A call of a ``custom_jvp`` function records one ``custom_jvp_call`` equation holding the traced
function (``call_jaxpr``) and the user's rule. Evaluating it runs ``call_jaxpr``; the jvp transform
calls the rule instead. ``custom_vjp`` records ``custom_vjp_call``; its jvp runs the user's ``fwd``
and emits a ``custom_lin`` equation, a linear primitive whose transpose is the user's ``bwd``.
Values closed over by the function are passed as leading operands (``num_consts``); they must not
carry a derivative of their own (pass such values as arguments). Under ``vmap`` the traced function
is batched like any Jaxpr and the user's rules are wrapped in ``vmap``, so they see one example at a
time, as they were written.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from functx import dtypes, ops, primitives as P
from functx.array import is_python_scalar
from functx.core import ClosedJaxpr, Jaxpr, Primitive
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError
from functx.interpreter import eval_jaxpr
from functx.lowering.rules import lowerings
from functx.source_info import where
from functx.tracing import get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms import jvp as J, transpose as T, vjp, vmap as V
from functx.tree_util import keystr, tree_flatten_with_path, tree_map


def _fun_name(f):
    while isinstance(f, functools.partial):
        f = f.func
    return getattr(f, "__name__", type(f).__name__)


def _resolve_kwargs(fun, args, kwargs, kind):
    """Positional arguments with keyword ones and defaults filled in (as JAX does), so that the
    rules always see every argument. A ``functools.partial`` has an opaque signature (as in
    JAX): it takes positional arguments only."""
    name = _fun_name(fun)
    if isinstance(fun, functools.partial):
        sig = inspect.signature(lambda *args, **kwargs: None)
    else:
        try:
            sig = inspect.signature(fun)
        except (TypeError, ValueError):  # builtins and some callables have no signature
            if kwargs:
                raise
            return tuple(args)
    try:
        ba = sig.bind(*args, **kwargs)
        ba.apply_defaults()
        passed = [k for k in ba.kwargs if k in kwargs]
        if passed:
            raise TypeError(
                f"The following keyword arguments could not be resolved to positions: "
                f"{', '.join(passed)}"
            )
    except TypeError as e:
        raise FunctxTypeError(
            f"The input arguments to the {kind}-decorated function {name} could not be "
            f"resolved to positional-only arguments. Binding failed with the error:\n{e}"
            f"{where()}"
        ) from e
    return ba.args


def _nondiff_positions(fun, nondiff_argnums, nondiff_argnames) -> tuple:
    """``nondiff_argnums`` with the positions of ``nondiff_argnames`` added, sorted (as JAX
    does; a name the function does not take positionally is dropped, as in JAX)."""
    nums = set(nondiff_argnums)
    if nondiff_argnames:
        names = (nondiff_argnames,) if isinstance(nondiff_argnames, str) else nondiff_argnames
        params = list(inspect.signature(fun).parameters.values())
        for i, p in enumerate(params):
            if p.name in names and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                nums.add(i)
    return tuple(sorted(nums))


def _closure_to_args(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list]:
    """Make the consts of a traced function leading inputs, so the equation carries them."""
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.eqns, j.outvars), []), closed.consts


def _trace_dyn(fun, args, nondiff_argnums):
    """Trace ``fun`` over its differentiable (non-``nondiff``) positional arguments."""
    dyn_idx = [i for i in range(len(args)) if i not in nondiff_argnums]
    dyn = tuple(args[i] for i in dyn_idx)
    leaves, in_tree = tree_flatten(dyn)
    info = {}

    def flat(*xs):
        full = list(args)
        for i, d in zip(dyn_idx, tree_unflatten(in_tree, list(xs))):
            full[i] = d
        out = fun(*full)
        out_leaves, out_tree = tree_flatten(out)
        info["out_tree"] = out_tree
        return out_leaves, None

    closed, _ = trace_flat(flat, [get_aval(x) for x in leaves])
    call, consts = _closure_to_args(closed)
    return call, consts, leaves, in_tree, info["out_tree"], dyn_idx


def _eval_call(*args, call_jaxpr, num_consts, **_):
    return [np.asarray(o) for o in eval_jaxpr(call_jaxpr.jaxpr, [], *args)]


def _rules_changed():
    """A custom rule was (re)defined: Jaxprs traced before it hold the old one."""
    vjp.clear_caches()


def _check_const_tangents(tangents, num_consts, name):
    if any(not isinstance(t, J.Zero) for t in tangents[:num_consts]):
        raise UnsupportedError(
            f"{name} closes over a value that is being differentiated{where()}; pass that value "
            "to the function as an argument instead"
        )


# --- custom_jvp ----------------------------------------------------------------------------------
custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True, group="custom")
P.registry["custom_jvp_call"] = custom_jvp_call_p
custom_jvp_call_p.abstract_eval = lambda *avals, call_jaxpr, **_: list(call_jaxpr.out_avals)
custom_jvp_call_p.impl = _eval_call


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, name, symbolic_zeros):
    _check_const_tangents(tangents, num_consts, f"custom_jvp function {name}")
    xs, ts = primals[num_consts:], tangents[num_consts:]
    if not symbolic_zeros:
        ts = [J.instantiate(t) for t in ts]
    outs, touts = jvp(list(xs), list(ts))
    return outs, touts


J.jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp


def _custom_jvp_call_transpose(cts, *args, call_jaxpr, jvp, num_consts, name, symbolic_zeros):
    """A custom_jvp call applied to linear inputs (a jvp rule that calls the function on the
    tangents, ``f(x_dot)``): transposed through its traced function, whose rule is not needed
    for it (as JAX transposes it)."""
    del jvp, num_consts, name, symbolic_zeros
    return T.backward_pass(call_jaxpr.jaxpr, call_jaxpr.consts, list(args), list(cts))


T.transpose_rules[custom_jvp_call_p] = _custom_jvp_call_transpose


class custom_jvp:
    """A function with a custom forward-mode rule (and, through transposition, reverse mode).

    ``custom_jvp(fun)`` wraps ``fun``; ``f.defjvp(rule)`` sets the rule, called as
    ``rule(primals, tangents) -> (primal_out, tangent_out)``.

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> @functx.custom_jvp
      ... def f(x):
      ...     return jnp.log1p(jnp.exp(x))
      >>> @f.defjvp
      ... def f_jvp(primals, tangents):
      ...     (x,), (t,) = primals, tangents
      ...     return f(x), t * functx.nn.sigmoid(x)
      >>> functx.grad(f)(0.0)
      Array(0.5, dtype=float32, weak_type=True)
    """

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_positions(fun, nondiff_argnums, nondiff_argnames)
        self.jvp = None
        self.symbolic_zeros = False

    def defjvp(self, jvp, symbolic_zeros=False):
        """``jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)``."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        _rules_changed()
        return jvp

    def defjvps(self, *jvps):
        """One rule per argument: ``jvp_i(tangent_i, primal_out, *primals) -> contribution``."""

        def jvp(primals, tangents):
            out = self(*primals)
            acc = None
            for rule, t in zip(jvps, tangents):
                if rule is None:
                    continue
                c = rule(t, out, *primals)
                acc = c if acc is None else tree_map(lambda a, b: a + b, acc, c)
            if acc is None:
                acc = tree_map(lambda o: o * 0, out)
            return out, acc

        self.defjvp(jvp)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = _fun_name(self.fun)
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = _resolve_kwargs(self.fun, args, kwargs, "custom_jvp")
        nd = tuple(i % len(args) for i in self.nondiff_argnums)
        call, consts, leaves, in_tree, out_tree, dyn_idx = _trace_dyn(self.fun, args, nd)
        out_avals = call.out_avals
        user_jvp, fun = self.jvp, self.fun
        jvp_name = _fun_name(user_jvp)

        symbolic = self.symbolic_zeros

        def jvp_flat(xs, ts):
            primals = tree_unflatten(in_tree, xs)
            # with symbolic_zeros the rule sees SymbolicZero (functx's Zero) for tangents known
            # to be zero, and may return one
            tangents = tree_unflatten(
                in_tree,
                [
                    J.zeros_like_aval(J.tangent_aval(get_aval(x)))
                    if isinstance(t, J.Zero) and not symbolic
                    else t
                    for x, t in zip(xs, ts)
                ],
            )
            nondiff = [args[i] for i in nd]
            res = user_jvp(*nondiff, tuple(primals), tuple(tangents))
            if not isinstance(res, (tuple, list)) or len(res) != 2:
                raise FunctxTypeError(
                    f"Custom JVP rule {jvp_name} for function {name} must produce a pair (list "
                    f"or tuple of length two) representing primal and tangent outputs, but got "
                    f"{res}.{where()}"
                )
            out, tout = res
            o_leaves, o_tree = tree_flatten(out)
            t_leaves, t_tree = tree_flatten(tout)
            if o_tree != t_tree:
                raise FunctxTypeError(
                    f"Custom JVP rule {jvp_name} for function {name} must produce primal and "
                    f"tangent outputs with equal container (pytree) structures, but got "
                    f"{o_tree} and {t_tree} respectively.{where()}"
                )
            if o_tree != out_tree:
                raise FunctxTypeError(
                    f"Custom JVP rule {jvp_name} for function {name} must produce a pair (list "
                    f"or tuple of length two) where the first element represents the primal "
                    f"output (equal in value to the output of the custom_jvp-decorated function "
                    f"{name}, and in particular of the same container/pytree structure), but "
                    f"instead the JVP rule output's first element had container/pytree "
                    f"structure:\n    {o_tree}\nwhile the custom_jvp-decorated function {name} "
                    f"had output container/pytree structure:\n    {out_tree}.{where()}"
                )
            fixed = []
            for a, o, t in zip(out_avals, o_leaves, t_leaves):
                ta = t.aval if isinstance(t, J.Zero) else get_aval(t)
                want = J.tangent_aval(a)
                if get_aval(o).shape != a.shape:
                    raise FunctxTypeError(
                        f"Custom JVP rule {jvp_name} for function {name} must produce a pair "
                        f"(list or tuple of length two) where the first element represents the "
                        f"primal output (equal in value to the output of the custom_jvp-decorated "
                        f"function {name}, and in particular with leaves of the same "
                        f"shape/dtype), but instead the JVP rule output's first element had "
                        f"shapes/dtypes of:\n    {get_aval(o).str_short()}\nwhile the "
                        f"custom_jvp-decorated function {name} had output shapes/dtypes of:\n"
                        f"    {a.str_short()}{where()}"
                    )
                if ta.shape != a.shape:
                    raise FunctxTypeError(
                        f"Custom JVP rule must produce primal and tangent outputs with "
                        f"corresponding shapes and dtypes. Expected {want.str_short()} (tangent "
                        f"type of {a.str_short()}) but got {ta.str_short()}.{where()}"
                    )
                if want.dtype == dtypes.float0:  # an integer output carries no tangent
                    t = J.Zero(want)
                elif ta.dtype != want.dtype and not isinstance(t, J.Zero):
                    if not (ta.weak_type or is_python_scalar(t)):
                        raise FunctxTypeError(
                            f"Custom JVP rule must produce primal and tangent outputs with "
                            f"corresponding shapes and dtypes. Expected {want.str_short()} "
                            f"(tangent type of {a.str_short()}) but got {ta.str_short()}."
                            f"{where()}"
                        )
                    t = ops.convert_element_type(t, want.dtype)  # a weakly typed scalar
                fixed.append(t)
            return o_leaves, fixed

        del fun
        outs = custom_jvp_call_p.bind(
            *consts,
            *leaves,
            call_jaxpr=call,
            jvp=jvp_flat,
            num_consts=len(consts),
            name=name,
            symbolic_zeros=self.symbolic_zeros,
        )
        return tree_unflatten(out_tree, outs)


# --- custom_vjp ----------------------------------------------------------------------------------
custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True, group="custom")
P.registry["custom_vjp_call"] = custom_vjp_call_p
custom_vjp_call_p.abstract_eval = lambda *avals, call_jaxpr, **_: list(call_jaxpr.out_avals)
custom_vjp_call_p.impl = _eval_call

custom_lin_p = Primitive("custom_lin", multiple_results=True, group="custom")
P.registry["custom_lin"] = custom_lin_p
custom_lin_p.abstract_eval = lambda *avals, out_avals, **_: list(out_avals)


def _custom_lin_impl(*args, name, **_):
    raise UnsupportedError(
        f"can't apply forward-mode autodiff (jvp) to a custom_vjp function "
        f"({name}); use grad/vjp, or define a custom_jvp{where()}"
    )


custom_lin_p.impl = _custom_lin_impl


def _custom_lin_jvp(primals, tangents, *, name, **_):
    # Reached by forward mode over a forward-mode trace of a custom_vjp function (jvp of jvp).
    _custom_lin_impl(name=name)


J.jvp_rules[custom_lin_p] = _custom_lin_jvp


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts, name):
    _check_const_tangents(tangents, num_consts, f"custom_vjp function {name}")
    xs, ts = primals[num_consts:], tangents[num_consts:]
    outs, res = fwd(list(xs))
    ts = [J.instantiate(t) for t in ts]
    out_avals = tuple(J.tangent_aval(a) for a in call_jaxpr.out_avals)
    touts = custom_lin_p.bind(*res, *ts, num_res=len(res), bwd=bwd, out_avals=out_avals, name=name)
    return outs, touts


J.jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, name):
    res = args[:num_res]
    cts = [J.zeros_like_aval(a) if isinstance(c, J.Zero) else c for c, a in zip(cts, out_avals)]
    return [None] * num_res + list(bwd(list(res), cts))


T.transpose_rules[custom_lin_p] = _custom_lin_transpose


class custom_vjp:
    """A function with a custom reverse-mode rule.

    ``custom_vjp(fun)`` wraps ``fun``; ``f.defvjp(fwd, bwd)`` sets the rule: ``fwd(*args) ->
    (out, residuals)`` and ``bwd(residuals, cotangent) -> a tuple of cotangents of the args``.

    Differences from JAX: ``defvjp(optimize_remat=True)`` is accepted; ``fwd`` runs as written.

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> @functx.custom_vjp
      ... def clip_gradient(x):
      ...     return x
      >>> def fwd(x):
      ...     return x, None
      >>> def bwd(res, g):
      ...     return (jnp.clip(g, -1.0, 1.0),)
      >>> clip_gradient.defvjp(fwd, bwd)
      >>> functx.grad(lambda x: 3.0 * clip_gradient(x))(2.0)
      Array(1., dtype=float32, weak_type=True)
    """

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_positions(fun, nondiff_argnums, nondiff_argnames)
        self.fwd = None
        self.bwd = None

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        """``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, ct) -> tuple`` with
        one cotangent (or None) per differentiable positional argument. ``optimize_remat`` is
        accepted for JAX's signature (an optimization of rematerialized fwd rules; functx runs
        fwd as written)."""
        self.fwd, self.bwd = fwd, bwd
        _rules_changed()

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = _fun_name(self.fun)
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = _resolve_kwargs(self.fun, args, kwargs, "custom_vjp")
        nd = tuple(i % len(args) for i in self.nondiff_argnums)
        call, consts, leaves, in_tree, out_tree, dyn_idx = _trace_dyn(self.fun, args, nd)
        user_fwd, user_bwd = self.fwd, self.bwd
        fwd_name = _fun_name(user_fwd)
        x_avals = [get_aval(x) for x in leaves]
        dyn_trees = [tree_flatten(args[i])[1] for i in dyn_idx]
        res_tree_box = []

        def fwd_flat(xs):
            full = list(args)
            for i, d in zip(dyn_idx, tree_unflatten(in_tree, xs)):
                full[i] = d
            res = user_fwd(*full)
            pair = (
                f"Custom VJP fwd rule {fwd_name} for function {name} must produce a pair (list "
                f"or tuple of length two) where the first element represents the primal output "
                f"(equal to the output of the custom_vjp-decorated function {name}) and the "
                f"second element represents residuals (i.e. values stored from the forward pass "
                f"for use on the backward pass), but "
            )
            if not isinstance(res, (tuple, list)) or len(res) != 2:
                raise FunctxTypeError(
                    f"{pair}instead of a pair the fwd rule {fwd_name} produced {res}.{where()}"
                )
            out, r = res
            o_leaves, o_tree = tree_flatten(out)
            if o_tree != out_tree:
                raise FunctxTypeError(
                    f"{pair}instead the fwd rule output's first element had container/pytree "
                    f"structure:\n    {o_tree}\nwhile the custom_vjp-decorated function {name} "
                    f"had output container/pytree structure:\n    {out_tree}.{where()}"
                )
            r_leaves, r_tree = tree_flatten(r)
            res_tree_box[:] = [r_tree]
            return o_leaves, r_leaves

        def bwd_flat(res, cts):
            r = tree_unflatten(res_tree_box[0], list(res))
            ct = tree_unflatten(out_tree, list(cts))
            nondiff = [args[i] for i in nd]
            out = user_bwd(*nondiff, r, ct)
            if isinstance(out, list) and len(out) == len(dyn_idx):
                out = tuple(out)
            if not isinstance(out, tuple) or len(out) != len(dyn_idx):
                raise FunctxTypeError(
                    f"Custom VJP bwd rule must produce an output with the same container (pytree) "
                    f"structure as the args tuple of the primal function, and in particular must "
                    f"produce a tuple of length equal to the number of arguments to the primal "
                    f"function, but got bwd output structure {tree_flatten(out)[1]} for primal "
                    f"input structure {in_tree}.{where()}"
                )
            flat, where_of = [], []
            for k, (o, tree) in enumerate(zip(out, dyn_trees)):
                off = len(flat)
                avals = x_avals[off : off + tree.num_leaves]
                dummy = tree_unflatten(tree, list(range(tree.num_leaves)))
                got = [None] * tree.num_leaves
                if o is not None:
                    # (None anywhere in the cotangent stands for zeros of that whole subtree)
                    def put(c, d):
                        for i in tree_flatten(d)[0]:
                            got[i] = c

                    try:
                        tree_map(put, o, dummy, is_leaf=lambda x: x is None)
                    except (ValueError, TypeError):
                        raise FunctxTypeError(
                            f"Custom VJP bwd rule must produce an output with the same container "
                            f"(pytree) structure as the args tuple of the primal function, and "
                            f"in particular must produce a tuple of length equal to the number "
                            f"of arguments to the primal function, but got bwd output structure "
                            f"{tree_flatten(out)[1]} for primal input structure {in_tree} "
                            f"(output {k}: {tree_flatten(o)[1]}, argument {dyn_idx[k]}: {tree})."
                            f"{where()}"
                        ) from None
                paths = [keystr(p) for p, _ in tree_flatten_with_path(dummy)[0]]
                for c, a, p in zip(got, avals, paths):
                    flat.append(J.zeros_like_aval(J.tangent_aval(a)) if c is None else c)
                    where_of.append(f"[{k}]{p}")
            for a, c, p in zip(x_avals, flat, where_of):
                if get_aval(c).shape != a.shape:
                    raise FunctxValueError(
                        f"Custom VJP bwd rule must produce an output with the same type as the "
                        f"args tuple of the primal function, but at output{p} the bwd rule "
                        f"produced an output of type {get_aval(c).str_short()} corresponding to "
                        f"an input of type {a.str_short()}{where()}"
                    )
            return flat

        outs = custom_vjp_call_p.bind(
            *consts,
            *leaves,
            call_jaxpr=call,
            fwd=fwd_flat,
            bwd=bwd_flat,
            num_consts=len(consts),
            name=name,
        )
        return tree_unflatten(out_tree, outs)


# --- batching: the traced function is batched like any Jaxpr, and the user's rules are wrapped in
# ``vmap`` so that they see one example at a time, as they were written.


def _batched_call(call_jaxpr, dims, size):
    n_out = len(call_jaxpr.out_avals)
    batched, _ = V.batch_jaxpr(call_jaxpr, list(dims), size, force_out_dims=[0] * n_out)
    j = batched.jaxpr
    return ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.eqns, j.outvars), []), batched.consts


def _custom_jvp_batch(args, dims, *, call_jaxpr, jvp, num_consts, name, symbolic_zeros):
    size = V.axis_size_of(args, dims)
    call, hconsts = _batched_call(call_jaxpr, dims, size)
    xdims = list(dims[num_consts:])

    def jvp_batched(xs, ts):
        def one(xs1, ts1):
            o, t = jvp(list(xs1), list(ts1))
            return list(o), list(t)

        o, t = V.vmap(one, in_axes=(xdims, xdims), out_axes=0)(list(xs), list(ts))
        return list(o), list(t)

    outs = custom_jvp_call_p.bind(
        *hconsts,
        *args,
        call_jaxpr=call,
        jvp=jvp_batched,
        num_consts=len(hconsts) + num_consts,
        name=name,
        symbolic_zeros=False,
    )
    return outs, [0] * len(outs)


def _custom_vjp_batch(args, dims, *, call_jaxpr, fwd, bwd, num_consts, name):
    size = V.axis_size_of(args, dims)
    call, hconsts = _batched_call(call_jaxpr, dims, size)
    xdims = list(dims[num_consts:])

    def fwd_batched(xs):
        def one(xs1):
            o, r = fwd(list(xs1))
            return list(o), list(r)

        o, r = V.vmap(one, in_axes=(xdims,), out_axes=0)(list(xs))
        return list(o), list(r)

    def bwd_batched(res, cts):
        cts_x = V.vmap(lambda r, c: list(bwd(list(r), list(c))), in_axes=(0, 0), out_axes=0)(
            list(res), list(cts)
        )
        return [
            V.moveaxis(c, 0, d) if d is not None else ops.reduce_sum(c, (0,))
            for c, d in zip(cts_x, xdims)
        ]

    outs = custom_vjp_call_p.bind(
        *hconsts,
        *args,
        call_jaxpr=call,
        fwd=fwd_batched,
        bwd=bwd_batched,
        num_consts=len(hconsts) + num_consts,
        name=name,
    )
    return outs, [0] * len(outs)


def _custom_lin_batch(args, dims, *, num_res, bwd, out_avals, name):
    size = V.axis_size_of(args, dims)
    args = [V.bdim_at_front(a, d, size) for a, d in zip(args, dims)]
    new_avals = tuple(V.batched_aval(a, 0, size) for a in out_avals)

    def bwd_batched(res, cts):
        return list(
            V.vmap(lambda r, c: list(bwd(list(r), list(c))), in_axes=(0, 0), out_axes=0)(
                list(res), list(cts)
            )
        )

    outs = custom_lin_p.bind(
        *args, num_res=num_res, bwd=bwd_batched, out_avals=new_avals, name=name
    )
    return outs, [0] * len(outs)


V.batching_rules[custom_jvp_call_p] = _custom_jvp_batch
V.batching_rules[custom_vjp_call_p] = _custom_vjp_batch
V.batching_rules[custom_lin_p] = _custom_lin_batch


# --- jit: the traced function is inlined ---------------------------------------------------------
def _inline_call(g, ins, avals, *, call_jaxpr, **params):
    """custom_jvp_call / custom_vjp_call: a call of their traced function."""
    # imported here, when jit lowers: the loop IR (0.1 s of import), which `import functx`
    # must not (tests/lowering/test_program_cache.py)
    from functx.lowering import lower

    env = {}
    for v, n in zip(call_jaxpr.jaxpr.invars, ins):
        env[v.id] = n
    lower.lower_eqns(g, call_jaxpr.jaxpr, env)
    return [lower.read(g, env, a) for a in call_jaxpr.jaxpr.outvars]


lowerings[custom_jvp_call_p] = _inline_call
lowerings[custom_vjp_call_p] = _inline_call

SymbolicZero = J.Zero  # what a ``symbolic_zeros=True`` rule receives for a zero tangent

__all__ = [
    "custom_jvp",
    "custom_vjp",
    "SymbolicZero",
    "custom_jvp_call_p",
    "custom_vjp_call_p",
    "custom_lin_p",
]
