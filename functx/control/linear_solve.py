"""``custom_linear_solve`` and ``custom_root``: solves differentiated implicitly, as JAX does.

``custom_linear_solve(matvec, b, solve, transpose_solve)`` records one ``custom_linear_solve``
equation carrying four consts-free Jaxprs (``matvec``, its transpose ``vecmat``, ``solve`` and
``transpose_solve``; the last two may be absent) and their consts as leading operands, then ``b``.
Its rules:

* evaluation (eagerly, and inlined under ``jit`` on both backends) runs ``solve`` on ``b``;
* jvp: from ``A x = b``, ``dx = A^-1 (db - dA x)``: the tangent is another ``custom_linear_solve``
  of the same Jaxprs on ``db - (jvp of matvec in its consts at x)``, so it stays linear in ``db``;
* transpose (in ``b``): the equation with the roles swapped (``vecmat`` for ``matvec``,
  ``transpose_solve`` for ``solve``) applied to the cotangent; without ``transpose_solve`` this is
  JAX's ``TypeError``;
* batching: ``b`` and every Jaxpr are batched at axis 0 (an unbatched ``b`` is broadcast).

``custom_root(f, initial_guess, solve, tangent_solve)`` is a ``custom_jvp`` function: its value
is ``solve(f, initial_guess)`` and its tangent, by the implicit function theorem, is
``-tangent_solve(linearize(f, x*), jvp of f in its closed-over values)``.
"""

from __future__ import annotations

from functx import ops, primitives as P
from functx.control.common import batch_closed, hoist, trace_pytree
from functx.control.custom_derivatives import custom_jvp
from functx.core import Primitive
from functx.errors import FunctxTypeError, FunctxValueError
from functx.interpreter import eval_jaxpr
from functx.lowering.rules import lowerings
from functx.source_info import where
from functx.tracing import get_aval, tree_flatten, tree_unflatten
from functx.transforms import jvp as J, transpose as T, vmap as V
from functx.transforms.linearize import linearize
from functx.transforms.transpose import linear_transpose

custom_linear_solve_p = Primitive("custom_linear_solve", multiple_results=True, group="control")
P.registry["custom_linear_solve"] = custom_linear_solve_p

_MATVEC, _VECMAT, _SOLVE, _TSOLVE = range(4)


def _split(args, const_lengths):
    out, i = [], 0
    for n in const_lengths:
        out.append(list(args[i : i + n]))
        i += n
    return out, list(args[i:])


def _swap(seq):
    """The transposed problem: vecmat for matvec, transpose_solve for solve."""
    return (seq[_VECMAT], seq[_MATVEC], seq[_TSOLVE], seq[_SOLVE])


def _abstract(*args, const_lengths, jaxprs):
    _, b = _split(args, const_lengths)
    n_aux = len(jaxprs[_SOLVE].out_avals) - len(jaxprs[_MATVEC].out_avals)
    aux = list(jaxprs[_SOLVE].out_avals[len(b) :]) if n_aux > 0 else []
    return [a for a in b] + aux


def _run_solve(args, const_lengths, jaxprs):
    consts, b = _split(args, const_lengths)
    return eval_jaxpr(jaxprs[_SOLVE].jaxpr, [], *consts[_SOLVE], *b)


def _impl(*args, const_lengths, jaxprs):
    return list(_run_solve(args, const_lengths, jaxprs))


custom_linear_solve_p.abstract_eval = _abstract
custom_linear_solve_p.impl = _impl


def _jvp(primals, tangents, *, const_lengths, jaxprs):
    params = dict(const_lengths=const_lengths, jaxprs=jaxprs)
    x = custom_linear_solve_p.bind(*primals, **params)
    consts, b = _split(primals, const_lengths)
    dconsts, db = _split(tangents, const_lengths)
    nb = len(b)
    xs = list(x[:nb])
    rhs = [J.instantiate(t, get_aval(v)) for t, v in zip(db, b)]
    if not all(isinstance(t, J.Zero) for t in dconsts[_MATVEC]):
        # dA x: the tangent of matvec in its consts, at the solution
        mv = jaxprs[_MATVEC]
        zeros = [J.Zero(J.tangent_aval(get_aval(v))) for v in xs]
        _, dax = J.jvp_eval(mv.jaxpr, [], consts[_MATVEC] + xs, dconsts[_MATVEC] + zeros)
        rhs = [r if isinstance(d, J.Zero) else ops.sub(r, d) for r, d in zip(rhs, dax)]
    flat = [c for cs in consts for c in cs]
    dx = custom_linear_solve_p.bind(*flat, *rhs, **params)
    aux_t = [J.Zero(J.tangent_aval(get_aval(a))) for a in x[nb:]]
    return list(x), list(dx[:nb]) + aux_t


J.jvp_rules[custom_linear_solve_p] = _jvp


def _transpose(cts, *args, const_lengths, jaxprs):
    if jaxprs[_TSOLVE] is None:
        raise FunctxTypeError(
            "custom_linear_solve: transpose_solve required for reverse-mode differentiation "
            "(grad, vjp): pass the solve with the transposed matvec, or symmetric=True when the "
            f"matvec is symmetric{where()}"
        )
    consts, b = _split(args, const_lengths)
    if any(T.is_undefined(c) for cs in consts for c in cs):
        raise FunctxTypeError(
            f"custom_linear_solve is linear in b only, not in the values its functions close "
            f"over{where()}"
        )
    nb = len(b)
    ct_x = [J.instantiate(c, a.aval) for c, a in zip(cts[:nb], b)]
    swapped = _swap(consts)
    out = custom_linear_solve_p.bind(
        *[c for cs in swapped for c in cs],
        *ct_x,
        const_lengths=_swap(const_lengths),
        jaxprs=_swap(jaxprs),
    )
    return [None] * sum(const_lengths) + list(out[:nb])


T.transpose_rules[custom_linear_solve_p] = _transpose


def _batch(args, dims, *, const_lengths, jaxprs):
    """Every Jaxpr batched at axis 0 on a batched ``b`` (broadcast where it was not)."""
    size = V.axis_size_of(args, dims)
    consts, b = _split(args, const_lengths)
    cdims, bdims = _split(dims, const_lengths)
    b = [V.bdim_at_front(x, d, size) for x, d in zip(b, bdims)]
    new_jaxprs, new_consts = [], []
    for j, cs, ds in zip(jaxprs, consts, cdims):
        if j is None:
            new_jaxprs.append(None)
            new_consts.append([])
            continue
        nj, extra, _ = batch_closed(j, list(ds) + [0] * len(b), size, [0] * len(j.out_avals))
        new_jaxprs.append(nj)
        new_consts.append(list(extra) + list(cs))
    outs = custom_linear_solve_p.bind(
        *[c for cs in new_consts for c in cs],
        *b,
        const_lengths=tuple(len(cs) for cs in new_consts),
        jaxprs=tuple(new_jaxprs),
    )
    return list(outs), [0] * len(outs)


V.batching_rules[custom_linear_solve_p] = _batch


def _lowering(g, ins, avals, *, const_lengths, jaxprs):
    """jit: ``solve``'s Jaxpr inlined (as JAX lowers the primitive)."""
    # imported here, when jit lowers: the loop IR (0.1 s of import), which `import functx` must not
    from functx.lowering import lower

    consts, b = _split(ins, const_lengths)
    j = jaxprs[_SOLVE].jaxpr
    env = {v.id: n for v, n in zip(j.invars, consts[_SOLVE] + b)}
    lower.lower_eqns(g, j, env)
    return [lower.read(g, env, a) for a in j.outvars]


lowerings[custom_linear_solve_p] = _lowering


# --- the public functions ------------------------------------------------------------------
def _shapes(leaves):
    return [tuple(get_aval(x).shape) for x in leaves]


def _check_tree(func_name, expected_name, actual_tree, expected_tree, has_aux):
    if has_aux:
        kids = actual_tree.children() if hasattr(actual_tree, "children") else None
        if kids is None or len(kids) != 2:
            raise FunctxValueError(
                f"{func_name}() produced a pytree with structure {actual_tree}, but a pytree "
                "tuple with auxiliary output was expected because has_aux was set to True."
            )
        actual_tree = kids[0]
    if actual_tree != expected_tree:
        raise FunctxTypeError(
            f"{func_name}() output pytree structure must match {expected_name}, got "
            f"{actual_tree} and {expected_tree}."
        )


def _checked(fun, name, b_leaves, has_aux):
    """``fun`` with JAX's check that its (first) output has the shapes of ``b``."""
    want = _shapes(b_leaves)

    def f(x):
        y = fun(x)
        ys = y[0] if has_aux else y
        got = _shapes(tree_flatten(ys)[0])
        if got != want:
            raise FunctxValueError(f"{name}() output shapes must match b, got {got} and {want}")
        return y

    return f


def _trace(fun, avals, in_tree):
    """Trace a one-argument function on pytree avals: (consts-free Jaxpr, consts, out_tree)."""
    closed, out_tree = trace_pytree(fun, avals, in_tree)
    hoisted, consts = hoist(closed)
    return hoisted, consts, out_tree


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
    """A matrix-free linear solve whose derivatives come from implicit differentiation at the
    solution (JAX's ``jax.lax.custom_linear_solve``), not from differentiating ``solve``.

    Arguments:
      matvec: the linear map ``x -> A x`` (differentiable in the values it closes over).
      b: the right-hand side, any pytree of arrays.
      solve: ``solve(matvec, b) -> x`` with ``matvec(x) == b`` (need not be differentiable).
      transpose_solve: ``transpose_solve(vecmat, b)`` solving the transposed system (``vecmat`` is
        ``matvec``'s transpose, computed automatically); needed for reverse mode unless
        ``symmetric``.
      symmetric: whether ``matvec`` is its own transpose (then ``solve`` serves as
        ``transpose_solve``).
      has_aux: whether ``solve`` and ``transpose_solve`` return ``(x, aux)``; ``aux`` gets no
        derivative.

    Returns:
      ``solve(matvec, b)`` (with its ``aux`` if ``has_aux``), differentiable in ``b`` and in what
      ``matvec`` closes over.

    Differences from JAX: one primitive with JAX's rules; under ``jit`` its solve is inlined, as JAX
    lowers it.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> a = jnp.array([[2.0, 1.0], [1.0, 3.0]])
      >>> mv = lambda x: a @ x
      >>> solve = lambda mv, b: jnp.linalg.solve(a, b)
      >>> x = functx.lax.custom_linear_solve(mv, jnp.array([1.0, 2.0]), solve, symmetric=True)
      >>> print(jnp.round(x, 4))
      [0.2 0.6]
    """
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_leaves, tree = tree_flatten(b)
    b_avals = [get_aval(x) for x in b_leaves]
    in_tree = tree_flatten((b,))[1]

    mv_j, mv_c, out_tree = _trace(_checked(matvec, "matvec", b_leaves, False), b_avals, in_tree)
    _check_tree("matvec", "b", out_tree, tree, False)

    def solve_fn(x):
        return solve(matvec, x)

    sv_j, sv_c, out_tree = _trace(_checked(solve_fn, "solve", b_leaves, has_aux), b_avals, in_tree)
    _check_tree("solve", "b", out_tree, tree, has_aux)
    res_tree = out_tree

    if transpose_solve is None:
        vm_j, vm_c, ts_j, ts_c = None, [], None, []
    else:
        if symmetric:
            vecmat = matvec
            vm_j, vm_c = mv_j, mv_c
        else:
            tr = linear_transpose(matvec, b)

            def vecmat(x):
                return tr(x)[0]

            vm_j, vm_c, _ = _trace(vecmat, b_avals, in_tree)

        def tsolve_fn(x):
            return transpose_solve(vecmat, x)

        ts_j, ts_c, out_tree = _trace(
            _checked(tsolve_fn, "transpose_solve", b_leaves, has_aux), b_avals, in_tree
        )
        _check_tree("transpose_solve", "b", out_tree, tree, has_aux)

    all_consts = [mv_c, vm_c, sv_c, ts_c]
    outs = custom_linear_solve_p.bind(
        *[c for cs in all_consts for c in cs],
        *b_leaves,
        const_lengths=tuple(len(cs) for cs in all_consts),
        jaxprs=(mv_j, vm_j, sv_j, ts_j),
    )
    return tree_unflatten(res_tree, list(outs))


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """A root of ``f`` found by ``solve``, differentiated by the implicit function theorem (JAX's
    ``jax.lax.custom_root``): derivatives flow to the values ``f`` closes over, not through
    ``solve``.

    Arguments:
      f: the function whose root is sought; takes and returns pytrees shaped like
        ``initial_guess``.
      initial_guess: the starting point of ``solve``.
      solve: ``solve(f, initial_guess) -> x`` with ``f(x) == 0`` (need not be differentiable).
      tangent_solve: ``tangent_solve(g, y) -> x`` with ``g(x) == y`` for the linear map ``g`` (``f``
        linearized at its root); for a scalar, ``lambda g, y: y / g(1.0)``.
      has_aux: whether ``solve`` returns ``(x, aux)``; ``aux`` gets no derivative.

    Returns:
      ``solve(f, initial_guess)`` (with its ``aux`` if ``has_aux``).

    Example:
      >>> import functx, functx.numpy as jnp
      >>> def sqrt(a):
      ...     def newton(f, x):
      ...         for _ in range(20):
      ...             x = x - f(x) / (2 * x)
      ...         return x
      ...     return functx.lax.custom_root(lambda x: x**2 - a, 1.0, newton,
      ...                                   lambda g, y: y / g(1.0))
      >>> print(jnp.round(sqrt(2.0), 4), jnp.round(functx.grad(sqrt)(2.0), 4))
      1.4142 0.3536
    """
    g_leaves, tree = tree_flatten(initial_guess)
    g_avals = [get_aval(x) for x in g_leaves]
    in_tree = tree_flatten((initial_guess,))[1]

    f_j, f_c, out_tree = _trace(f, g_avals, in_tree)
    _check_tree("f", "initial_guess", out_tree, tree, False)

    def solve_fn(x):
        return solve(f, x)

    s_j, s_c, res_tree = _trace(solve_fn, g_avals, in_tree)
    _check_tree("solve", "initial_guess", res_tree, tree, has_aux)

    def linearize_and_solve(x, rhs):
        _, f_lin = linearize(f, x)
        return tangent_solve(f_lin, rhs)

    pair_tree = tree_flatten((initial_guess, initial_guess))[1]
    ls_j, ls_c, out_tree = _trace(
        lambda x, rhs: linearize_and_solve(x, rhs), g_avals + g_avals, pair_tree
    )
    _check_tree("tangent_solve", "x", out_tree, tree, False)

    nf, ns, nl, n = len(f_c), len(s_c), len(ls_c), len(g_leaves)

    def run(*args):
        sc = args[nf : nf + ns]
        guess = args[nf + ns + nl :]
        return eval_jaxpr(s_j.jaxpr, [], *sc, *guess)

    root = custom_jvp(run)

    @root.defjvp
    def _root_jvp(primals, tangents):
        fc, lc = list(primals[:nf]), list(primals[nf + ns : nf + ns + nl])
        sol = list(run(*primals))
        x = sol[:n]
        zeros = [J.Zero(J.tangent_aval(get_aval(v))) for v in x]
        _, rhs = J.jvp_eval(f_j.jaxpr, [], fc + x, list(tangents[:nf]) + zeros)
        rhs = [J.instantiate(r, get_aval(v)) for r, v in zip(rhs, x)]
        dx = eval_jaxpr(ls_j.jaxpr, [], *lc, *x, *rhs)
        aux_t = [J.zeros_like_aval(J.tangent_aval(get_aval(a))) for a in sol[n:]]
        return sol, [ops.neg(d) for d in dx] + aux_t

    outs = root(*f_c, *s_c, *ls_c, *g_leaves)
    return tree_unflatten(res_tree, list(outs))


__all__ = ["custom_linear_solve", "custom_root", "custom_linear_solve_p"]
