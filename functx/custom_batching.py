"""Batching rules for the custom-derivative primitives (``custom_jvp_call``, ``custom_vjp_call``,
``custom_lin``): the traced function is batched like any Jaxpr, and the user's rules are wrapped in
``vmap`` so that they see one example at a time, as they were written."""

from __future__ import annotations

from functx import ops
from functx.core import ClosedJaxpr, Jaxpr
from functx.custom_derivatives import custom_jvp_call_p, custom_lin_p, custom_vjp_call_p
from functx.transforms import vmap as V


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
