"""``functx.ad_checkpoint``: rematerialisation (JAX's ``jax.ad_checkpoint``).

``checkpoint`` (``remat``) and ``checkpoint_name`` are ``functx/control/remat.py``'s; this module
adds the policies (``checkpoint_policies``) and ``print_saved_residuals``, which lists what the
backward pass of a function keeps, as JAX's does.
"""

from __future__ import annotations

import builtins
import inspect
import types

from functx.control.remat import (
    Offloadable,
    Recompute,
    Saveable,
    checkpoint,
    checkpoint_name,
    checkpoint_p,
    name_p,
    remat,
)
from functx.core import ClosedJaxpr, Literal
from functx.errors import missing_name_hook as _missing_name_hook
from functx.tracing import get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms.jvp import is_differentiable
from functx.transforms.linearize import linearize_jaxpr


# --- policies: policy(prim, *input_avals, **params) -> whether the output may be saved ----------
def everything_saveable(*_, **__) -> bool:
    """Save every intermediate (no recomputation)."""
    return True


def nothing_saveable(*_, **__) -> bool:
    """Save nothing but the checkpoint's inputs (recompute everything)."""
    return False


def dots_saveable(prim, *_, **__) -> bool:
    """Save the results of matrix products (``dot_general``); recompute the rest."""
    return prim.name == "dot_general"


def dots_with_no_batch_dims_saveable(prim, *_, **params) -> bool:
    """Save the results of matrix products without batch dimensions."""
    if prim.name != "dot_general":
        return False
    (_, _), (lb, rb) = params["dimension_numbers"]
    return not lb and not rb


def save_only_these_names(*names):
    """A policy saving only the values named (``checkpoint_name``) with one of ``names``."""
    names = frozenset(names)

    def policy(prim, *_, **params):
        return prim is name_p and params["name"] in names

    return policy


def save_any_names_but_these(*names):
    """A policy saving every named value except those named with one of ``names``."""
    names = frozenset(names)

    def policy(prim, *_, **params):
        return prim is name_p and params["name"] not in names

    return policy


def save_from_both_policies(policy_1, policy_2):
    """A policy saving what either policy saves."""

    def policy(prim, *args, **params):
        return bool(policy_1(prim, *args, **params)) or bool(policy_2(prim, *args, **params))

    return policy


def save_and_offload_only_these_names(
    *, names_which_can_be_saved, names_which_can_be_offloaded, offload_src, offload_dst
):
    """A policy saving the values named in either list (functx has one memory: the offloaded
    ones are saved where they are)."""
    names = frozenset(names_which_can_be_saved) | frozenset(names_which_can_be_offloaded)

    def policy(prim, *_, **params):
        return prim is name_p and params["name"] in names

    return policy


def offload_dot_with_no_batch_dims(offload_src, offload_dst):
    """A policy saving the matrix products without batch dimensions (functx has one memory:
    they are saved where they are)."""
    return dots_with_no_batch_dims_saveable


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_only_these_names=save_only_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_anything_except_these_names=save_any_names_but_these,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
)


# --- saved residuals -----------------------------------------------------------------------------
def _arg_names(f, args, kwargs, n_leaves):
    try:
        params = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) else f"args[{i}]"
        leaves = tree_flatten(a)[0]
        names += [base] if len(leaves) == 1 else [f"{base}[{j}]" for j in range(len(leaves))]
    for k in sorted(kwargs):
        leaves = tree_flatten(kwargs[k])[0]
        names += [k] if len(leaves) == 1 else [f"{k}[{j}]" for j in range(len(leaves))]
    return names if len(names) == n_leaves else [None] * n_leaves


def _describe(eqn, k: int) -> str:
    """What made output ``k`` of ``eqn``: inside a checkpoint, the equation in its Jaxpr."""
    while eqn.prim is checkpoint_p:
        inner = eqn.params["jaxpr"].jaxpr
        v = inner.outvars[k]
        found = None
        for e in inner.eqns:
            for j, o in enumerate(e.outvars):
                if o is v:
                    found = (e, j)
        if found is None:
            return "from an input of a checkpoint"
        eqn, k = found
    src = f" from {eqn.source_info}" if eqn.source_info is not None else ""
    if eqn.prim is name_p:
        return f"named '{eqn.params['name']}'{src}"
    return f"output of {eqn.prim.name}{src}"


def saved_residuals(f, *args, **kwargs) -> list:
    """The values the backward pass of ``f`` at ``args`` keeps: a list of ``(aval,
    description)`` pairs, one per residual (JAX's ``saved_residuals``).

    Arguments:
      f: a function of pytrees of arrays.
      *args, **kwargs: its arguments.
    Returns:
      a list of (ShapedArray, str).
    Example:
      >>> import numpy as np
      >>> import functx
      >>> import functx.ad_checkpoint
      >>> f = functx.checkpoint(functx.numpy.sin)
      >>> len(functx.ad_checkpoint.saved_residuals(f, np.ones(3, np.float32)))
      1
    """
    leaves, in_tree = tree_flatten((args, kwargs))

    def flat(*xs):
        a, kw = tree_unflatten(in_tree, list(xs))
        return tree_flatten(f(*a, **kw))[0], None

    closed, _ = trace_flat(flat, [get_aval(x) for x in leaves])
    nonzeros = tuple(is_differentiable(a) for a in closed.in_avals)
    lin = linearize_jaxpr(closed, nonzeros, len(closed.out_avals))
    j = lin.primal.jaxpr
    res = j.outvars[len(closed.out_avals) :]
    names = _arg_names(f, args, kwargs, len(leaves))
    ids = {v.id for v in res if type(v) is not Literal}
    out = [(v.aval, "from a literal") for v in res if type(v) is Literal]
    out += [(v.aval, "from a constant") for v in j.constvars if v.id in ids]
    for i, v in enumerate(j.invars):
        if v.id in ids:
            name = names[i] if i < len(names) else None
            where = (
                f"from the argument {name}" if name else f"from the argument at flattened index {i}"
            )
            out.append((v.aval, where))
    for e in j.eqns:
        for k, v in enumerate(e.outvars):
            if v.id in ids:
                out.append((v.aval, _describe(e, k)))
    assert isinstance(lin.primal, ClosedJaxpr)
    return out


def print_saved_residuals(f, *args, **kwargs) -> None:
    """Print what the backward pass of ``f`` at ``args`` keeps, one line per residual (its
    type, then where it comes from), as JAX's ``jax.ad_checkpoint.print_saved_residuals``.

    Arguments:
      f: a function of pytrees of arrays.
      *args, **kwargs: its arguments.
    Returns:
      None.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> import functx.ad_checkpoint
      >>> functx.ad_checkpoint.print_saved_residuals(
      ...     functx.checkpoint(functx.numpy.sin), np.ones(3, np.float32))
      f32[3] from the argument x
    """
    for aval, src in saved_residuals(f, *args, **kwargs):
        builtins.print(f"{aval.str_short()} {src}")


__all__ = [
    "Offloadable",
    "Recompute",
    "Saveable",
    "checkpoint",
    "checkpoint_name",
    "checkpoint_policies",
    "print_saved_residuals",
    "remat",
    "saved_residuals",
]

# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)
