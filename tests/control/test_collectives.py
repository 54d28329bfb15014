"""Named-axis collectives (functx/control/collectives.py) and vmap(axis_name=) against JAX.

Under ``vmap(f, axis_name="i")`` every collective over "i" must compute what JAX's does: values,
dtypes, errors, derivatives. The spmd side (``shard_map``'s frames) is checked through the
interface alone: a handler that records its calls, eagerly and from a compiled program.
"""

from __future__ import annotations

import os

import jax
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functx
from functx import lax
from functx.control import collectives as C
from functx.interpreter import eval_jaxpr
from functx.test_util import check_grads


def _close(got, want, rtol=1e-6, atol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _body(ns, x, n):
    """Every collective over "i" (the batch has n examples; x is one example of rank >= 1 with
    x.shape[0] == n, for the exchanges)."""
    L = ns.lax
    perm = [(k, (k + 1) % n) for k in range(n)]
    out = {
        "psum": L.psum(x, "i"),
        "psum_tree": L.psum({"a": x, "b": (x * 2,)}, "i"),
        "psum_bool": L.psum(x > 0, "i"),
        "psum_const": L.psum(1, "i") + x,
        "pmean": L.pmean(x, "i"),
        "pmax": L.pmax(x, "i"),
        "pmin": L.pmin(x, "i"),
        "index": L.axis_index("i") + 0 * x.astype("int32"),
        "size": L.axis_size("i") * x,
        "gather": L.all_gather(x, "i"),
        "gather_ax1": L.all_gather(x, "i", axis=1),
        "gather_tiled": L.all_gather(x, "i", tiled=True),
        "scatter": L.psum_scatter(x, "i"),
        "a2a": L.all_to_all(x, "i", 0, 0),
        "pswap": L.pswapaxes(x, "i", 0),
        "ppermute": L.ppermute(x, "i", perm),
        "pshuffle": L.pshuffle(x, "i", list(range(n))[::-1]),
    }
    if x.ndim >= 2:
        out["a2a_01"] = L.all_to_all(x, "i", 0, 1)
        out["a2a_10"] = L.all_to_all(x.swapaxes(0, 1), "i", 1, 0)
        out["a2a_tiled"] = L.all_to_all(x, "i", 0, 1, tiled=True)
        out["scatter_tiled"] = L.psum_scatter(x, "i", scatter_dimension=0, tiled=True)
    return out


def _oracle(X):
    """What ``vmap(_body, axis_name="i")`` gives for the batch X (n, n, *rest), by NumPy."""
    n = X.shape[0]
    rep = lambda v: np.broadcast_to(v, (n,) + np.shape(v))  # noqa: E731
    out = {
        "psum": rep(X.sum(0)),
        "psum_tree": {"a": rep(X.sum(0)), "b": (rep(2 * X.sum(0)),)},
        "psum_bool": rep((X > 0).sum(0).astype(np.int32)),
        "psum_const": X + n,
        "pmean": rep(X.mean(0)),
        "pmax": rep(X.max(0)),
        "pmin": rep(X.min(0)),
        "index": np.broadcast_to(
            np.arange(n, dtype=np.int32).reshape((n,) + (1,) * (X.ndim - 1)), X.shape
        ),
        "size": n * X,
        "gather": rep(X),
        "gather_ax1": rep(np.moveaxis(X, 0, 1)),
        "gather_tiled": rep(X.reshape((n * n,) + X.shape[2:])),
        "scatter": X.sum(0),
        "a2a": X.swapaxes(0, 1),
        "pswap": X.swapaxes(0, 1),
        "ppermute": np.roll(X, 1, 0),
        "pshuffle": X[::-1],
    }
    if X.ndim >= 3:
        out["a2a_01"] = np.moveaxis(X.swapaxes(0, 1), 1, 2)  # [j, a, k] = X[k, j, a]
        out["a2a_10"] = X.swapaxes(0, 1)  # [j, k, a] = X[k, j, a]
        # [j, 0, k * r + a] = X[k, j, a]
        out["a2a_tiled"] = np.moveaxis(X, 0, 1).reshape((n, 1, -1) + X.shape[3:])
        out["scatter_tiled"] = X.sum(0)[:, None]
    return out


def _check_tree(got, want, **tol):
    for k in want:
        gl, wl = jax.tree.leaves(got[k]), jax.tree.leaves(want[k])
        assert len(gl) == len(wl), k
        for g, w in zip(gl, wl):
            _close(g, np.asarray(w), **tol)


def test_collectives_under_vmap_match_jax():
    x = np.random.default_rng(3).normal(size=(3, 3, 2)).astype(np.float32)
    got = functx.vmap(lambda v: _body(functx, v, 3), axis_name="i")(x)
    want = jax.jit(jax.vmap(lambda v: _body(jax, v, 3), axis_name="i"))(x)
    _check_tree(got, want, rtol=1e-6, atol=1e-6)


@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(1, 4),
    rest=st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple),
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(0, 2**16),
)
def test_collectives_under_vmap_hypothesis(n, rest, dtype, seed):
    x = np.random.default_rng(seed).normal(size=(n, n) + rest).astype(dtype)
    got = functx.vmap(lambda v: _body(functx, v, n), axis_name="i")(x)
    want = _oracle(x)
    for k in ("pmean",):
        want[k] = want[k].astype(dtype)
    _check_tree(got, want, rtol=1e-5, atol=1e-5)


def test_partial_permutations_and_pbroadcast():
    # a destination no pair names gets zeros (JAX's vmap asserts a full permutation instead)
    x = np.arange(8.0).reshape(4, 2)
    got = functx.vmap(lambda v: lax.ppermute(v, "i", [(0, 2), (3, 1)]), axis_name="i")(x)
    _close(got, np.stack([0 * x[0], x[3], x[0], 0 * x[0]]))
    # (JAX 0.10.2's pbroadcast fails under vmap: its batcher indexes with a list)
    got = functx.vmap(lambda v: lax.pbroadcast(v, "i", 2), axis_name="i")(x)
    _close(got, np.broadcast_to(x[2], x.shape))
    got = functx.vmap(lambda v: lax.pbroadcast(v > 3, "i", 1), axis_name="i")(x)
    _close(got, np.broadcast_to(x[1] > 3, x.shape))


def test_in_axes_out_axes_and_unbatched_operands():
    x = np.arange(12.0).reshape(3, 4)

    def f(v, w):
        perm = [(0, 1), (1, 0), (2, 3), (3, 2)]
        return lax.psum(v, "i"), lax.all_gather(w, "i"), lax.ppermute(w, "i", perm)

    s, g, p = functx.vmap(f, in_axes=(1, None), out_axes=(None, 0, 1), axis_name="i")(x, x[0])
    _close(s, x.sum(1))  # (psum's result is the same for every example: out_axes None works)
    _close(g, np.broadcast_to(x[0], (4, 4, 4)))
    _close(p, np.broadcast_to(x[0][:, None], (4, 4)))  # (unbatched, permuted: itself)


def test_nested_names():
    x = np.random.default_rng(0).normal(size=(2, 3, 4))

    def body(ns, v):
        L = ns.lax
        return {
            "both": L.psum(v, ("i", "j")),
            "outer": L.psum(v, "i"),
            "inner": L.pmax(v, "j"),
            "index": L.axis_index(("i", "j")),
            "size": L.axis_size(("i", "j")) + 0 * v,
            "gather": L.all_gather(v, "i"),
            "perm": L.ppermute(v, "j", [(0, 2), (2, 1), (1, 0)]),
        }

    def run(ns):
        return ns.vmap(ns.vmap(lambda v: body(ns, v), axis_name="j"), axis_name="i")

    got, want = run(functx)(x), jax.jit(run(jax))(x)
    for k in want:
        _close(got[k], want[k])


@pytest.mark.parametrize("split_axis,concat_axis,vmap_axis", [(0, 1, 0), (1, 0, 2), (1, 1, 1)])
def test_all_to_all_over_two_nested_names(split_axis, concat_axis, vmap_axis):
    # (JAX's batching_test testAllToAllSplitAxis: the two names act as one axis of size 4)
    x = np.arange(64).reshape(4, 4, 4)
    shape = list(x.shape)
    shape[vmap_axis : vmap_axis + 1] = (2, 2)
    f = functx.vmap(
        functx.vmap(
            lambda v: lax.all_to_all(v, ("i", "j"), split_axis, concat_axis),
            in_axes=vmap_axis,
            axis_name="j",
        ),
        in_axes=vmap_axis,
        axis_name="i",
    )
    got = np.asarray(f(x.reshape(shape))).reshape(x.shape)
    want = np.moveaxis(x, (vmap_axis, split_axis + (vmap_axis <= split_axis)), (concat_axis + 1, 0))
    np.testing.assert_array_equal(got, want)


def test_ppermute_of_a_value_the_same_for_every_example():
    # (JAX's testPpermuteBatcherTrivial: the cotangent 1.0 is a constant, permuted eagerly)
    f = functx.vmap(functx.grad(lambda v: lax.ppermute(v, "i", [[0, 1], [1, 0]])), axis_name="i")
    _close(f(np.array([1.0, 2.0])), np.ones(2))


def test_collectives_inside_control_flow_under_vmap():
    # the rules of scan and cond batch their bodies with the vmap's axis name
    x = np.arange(6.0).reshape(3, 2)

    def f(v):
        def step(c, _):
            return c + lax.psum(c, "i") * 0.1, lax.axis_index("i")

        c, ys = lax.scan(step, v, None, length=2)
        y = lax.cond(v[0] > 1, lambda u: lax.pmax(u, "i"), lambda u: u, v)
        return c, ys, y

    c, ys, y = functx.vmap(f, axis_name="i")(x)
    want = x
    for _ in range(2):
        want = want + want.sum(0) * 0.1
    _close(c, want)
    _close(ys, np.repeat(np.arange(3, dtype=np.int32)[:, None], 2, 1))
    _close(y, np.where(x[:, :1] > 1, x.max(0), x))


def test_derivatives_match_jax():
    x = np.random.default_rng(1).normal(size=(3, 3))

    def loss(ns, v, untiled=False):
        L = ns.lax
        g = L.all_gather(v, "i")
        s = L.psum_scatter(g[:, 0] * v, "i")
        p = L.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)])
        a = L.all_to_all(ns.numpy.outer(v, v), "i", 0, 1, tiled=True)
        out = (L.psum(v**2, "i") * p).sum() + s * 2 + (a**2).sum() + L.pmean(v, "i").sum()
        if untiled:  # (JAX 0.10.2's transpose of this one fails on its own shapes)
            out = out + (L.all_to_all(ns.numpy.outer(v, v), "i", 0, 1) * v).sum()
        return out

    def derivatives(ns, x):
        per_example = ns.vmap(ns.grad(lambda v: loss(ns, v)), axis_name="i")(x)
        total = ns.grad(lambda y: ns.vmap(lambda v: loss(ns, v), axis_name="i")(y).sum())(x)
        return per_example, total  # (forward mode: check_grads below)

    got = derivatives(functx, x)
    want = jax.jit(lambda y: derivatives(jax, y))(x)
    for g, w in zip(got, want):
        _close(g, w, rtol=1e-10, atol=1e-10)
    check_grads(
        functx.vmap(lambda v: loss(functx, v, True), axis_name="i"),
        (x,),
        order=2,
        modes=("fwd", "rev"),
    )


def test_pmax_has_no_derivative_as_in_jax():
    with pytest.raises(NotImplementedError, match="pmax"):
        functx.vmap(functx.grad(lambda v: lax.pmax(v, "i")), axis_name="i")(np.ones(2))


def test_unbound_names_raise_name_error():
    x = np.ones(3, np.float32)
    for ns in (functx, jax):
        with pytest.raises(NameError, match="unbound axis name: j"):
            ns.vmap(lambda v: ns.lax.psum(v, "j"), axis_name="i")(x)
        with pytest.raises(NameError, match="unbound axis name: j"):
            ns.vmap(lambda v: ns.lax.axis_index("j"), axis_name="i")(x)
        with pytest.raises(NameError, match="unbound axis name: j"):
            ns.lax.axis_size("j")
        with pytest.raises(NameError, match="unbound axis name: i"):
            ns.vmap(lambda v: ns.lax.psum(v, "i"))(x)
    with pytest.raises(ValueError, match="must match shard count"):
        functx.vmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(np.ones((3, 2)))
    with pytest.raises(ValueError, match="permutation"):
        functx.vmap(lambda v: lax.pshuffle(v, "i", [0, 0, 1]), axis_name="i")(x)


def test_default_mode_dtypes(no_x64):
    x = np.arange(4, dtype=np.int64)

    def f(ns, v):
        L = ns.lax
        return L.psum(v, "i"), L.pmean(v, "i"), L.axis_index("i"), L.psum(v > 1, "i")

    got = functx.vmap(lambda v: f(functx, v), axis_name="i")(x)
    want = jax.jit(jax.vmap(lambda v: f(jax, v), axis_name="i"))(x)
    for g, w in zip(got, want):
        _close(g, w)


def test_jit_of_a_vmapped_body_matches_eager():
    x = np.random.default_rng(2).normal(size=(4, 4)).astype(np.float32)

    def body(v):
        return (
            lax.psum(v, "i") * lax.axis_index("i"),
            lax.all_gather(v, "i", tiled=True),
            lax.ppermute(v, "i", [(0, 1), (1, 0)]) + lax.pswapaxes(v, "i", 0),
        )

    f = functx.vmap(body, axis_name="i")
    for g, w in zip(functx.jit(f)(x), f(x)):
        _close(g, w)


# --- the spmd interface: a handler that records what it is asked --------------------------------
class Recorder:
    """A fake device 1 of an axis of 3: each method records its call and answers as if every
    position held the same operand."""

    def __init__(self, size=3, index=1):
        self.size, self.index, self.calls = size, index, []

    def psum(self, x):
        self.calls.append(("psum", x.shape))
        return x * self.size

    def pmax(self, x):
        self.calls.append(("pmax", x.shape))
        return x

    def pmin(self, x):
        self.calls.append(("pmin", x.shape))
        return x

    def all_gather(self, x, axis, tiled):
        self.calls.append(("all_gather", axis, tiled))
        y = np.stack([x] * self.size, axis)
        return y.reshape(x.shape[:axis] + (-1,) + x.shape[axis + 1 :]) if tiled else y

    def psum_scatter(self, x, scatter_dimension, tiled):
        self.calls.append(("psum_scatter", scatter_dimension, tiled))
        m = x.shape[scatter_dimension] // self.size if tiled else 1
        y = np.take(x * self.size, range(self.index * m, (self.index + 1) * m), scatter_dimension)
        return y if tiled else np.squeeze(y, scatter_dimension)

    def all_to_all(self, x, split_axis, concat_axis, tiled):
        self.calls.append(("all_to_all", split_axis, concat_axis, tiled))
        chunk = np.split(x, self.size, split_axis)[self.index]
        return np.concatenate([chunk] * self.size, concat_axis)

    def ppermute(self, x, perm):
        self.calls.append(("ppermute", perm))
        return x if any(d == self.index for _, d in perm) else np.zeros_like(x)

    def axis_index(self):
        self.calls.append(("axis_index",))
        return self.index


def _spmd_body(x):
    return {
        "psum": lax.psum(x, "d"),
        "pmean": lax.pmean(x, "d"),
        "pmax": lax.pmax(x, "d"),
        "index": lax.axis_index("d"),
        "gather": lax.all_gather(x, "d", axis=1, tiled=True),
        "scatter": lax.psum_scatter(x, "d", tiled=True),
        "a2a": lax.all_to_all(x, "d", 0, 1, tiled=True),
        "perm": lax.ppermute(x, "d", [(0, 1)]),
        "grad": functx.grad(lambda y: (lax.psum(y, "d") ** 2).sum())(x),
    }


def test_spmd_frames_dispatch_to_the_handler_eagerly_and_under_jit(tmp_path, monkeypatch):
    x = np.arange(6.0).reshape(3, 2)
    results = {}
    for mode in ("eager", "jit"):
        rec = Recorder()
        with C.axis_frame("d", 3, "spmd", rec):
            assert C.lookup("d").handler is rec and lax.axis_size("d") == 3
            f = _spmd_body if mode == "eager" else functx.jit(_spmd_body)
            results[mode] = f(x)
        kinds = [c[0] for c in rec.calls]
        for op in ("psum", "pmax", "axis_index", "all_gather", "psum_scatter", "all_to_all"):
            assert op in kinds, (mode, op, kinds)
        assert ("ppermute", ((0, 1),)) in rec.calls
        assert ("all_to_all", 0, 1, True) in rec.calls
    e, j = results["eager"], results["jit"]
    for k in e:
        _close(j[k], e[k])
    _close(e["psum"], 3 * x)
    _close(e["index"], np.int32(1))
    _close(e["scatter"], 3 * x[1:2])
    _close(e["grad"], 2 * 3 * 3 * x)  # psum's transpose is a psum
    # a program traced with no frame bound: NameError
    with pytest.raises(NameError, match="unbound axis name: d"):
        functx.jit(lambda v: lax.psum(v, "d"))(x)


def test_axis_frame_api():
    with pytest.raises(NameError, match="unbound axis name: q"):
        C.lookup("q")
    with C.axis_frame(C.AxisFrame("q", 2, "vmap")):
        with C.axis_frame("q", 5, "spmd", Recorder()):
            assert C.lookup("q").size == 5 and C.env_key()[-1][:3] == ("q", 5, "spmd")
        assert C.lookup("q").size == 2
    assert not C.is_bound("q") and C.frames() == ()
    with pytest.raises(ValueError):
        with C.axis_frame("q", 2, "pmap"):
            pass


def test_docstring_examples():
    import doctest

    import functx.numpy as jnp

    names = (
        "psum pmean pmax pmin axis_index axis_size all_gather psum_scatter all_to_all ppermute "
        "pshuffle pswapaxes pbroadcast"
    ).split()
    objs = [(f"functx.lax.{n}", getattr(lax, n)) for n in names]
    objs += [("functx.vmap", functx.vmap), ("axis_frame", C.axis_frame)]
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for qual, obj in objs:
        doc = obj.__doc__ or ""
        for s in ("Arguments:", "Returns:", "Example:"):
            assert s in doc, (qual, s)
        globs = {"functx": functx, "jnp": jnp, "np": np}
        tests = doctest.DocTestFinder(recurse=False).find(obj, qual, globs=globs)
        before = runner.failures
        for t in tests:
            runner.run(t)
        assert sum(len(t.examples) for t in tests) > 0, qual
        assert runner.failures == before, qual


def test_frames_recorded_at_trace_time_serve_after_the_frame_closes():
    """grad's backward pass and a compiled program run outside shard_map's frames (the
    multi-process mode): each equation carries the spmd frame it was traced under."""
    x = np.arange(6.0).reshape(3, 2)
    rec = Recorder()

    def body(v):  # (as shard_map's wrapper does: the frame is bound while the body traces)
        with C.axis_frame("d", 3, "spmd", rec):
            return lax.psum(v, "d") * lax.axis_index("d")

    f = functx.jit(body)
    f(x)  # (traced and compiled)
    with C.axis_frame("d", 3, "spmd", rec):
        closed = functx.make_jaxpr(lambda v: lax.psum(v, "d"))(x)
        _, pullback = functx.vjp(lambda v: (lax.all_gather(v, "d") ** 2).sum(), x)
    assert "spmd:d" in str(closed)
    n = len(rec.calls)
    _close(f(x), 3 * x)  # the compiled program, run outside any frame
    (ct,) = pullback(np.float64(1.0))  # the transpose (psum_scatter), outside the frame
    _close(ct, 6 * x)  # the recorder's psum_scatter of the cotangent 2 * stack(x, x, x)
    assert [c[0] for c in rec.calls[n:]] == ["psum", "axis_index", "psum_scatter"]
    _close(eval_jaxpr(closed.jaxpr, closed.consts, x)[0], 3 * x)


class TorchRecorder(Recorder):
    """A Recorder with a ``torch`` object whose methods take and return torch tensors (as an
    NCCL handler's do), so a Triton program's host step hands it the device tensors."""

    def __init__(self):
        super().__init__()
        self.torch = _TorchSide(self)
        self.seen = []


class _TorchSide:
    def __init__(self, rec):
        self.rec = rec

    def psum(self, x):
        self.rec.seen.append(type(x).__module__.split(".")[0])
        self.rec.calls.append(("psum", tuple(x.shape)))
        return x * self.rec.size

    def all_gather(self, x, axis, tiled):
        import torch

        self.rec.calls.append(("all_gather", axis, tiled))
        return (torch.cat if tiled else torch.stack)([x] * self.rec.size, axis)

    def axis_index(self):
        self.rec.calls.append(("axis_index",))
        return self.rec.index


def test_triton_host_steps_in_the_interpreter(monkeypatch):
    """Under TRITON_INTERPRET=1; on a GPU with FUNCTX_TEST_TRITON_GPU=1 (the handler with a
    ``torch`` object then gets CUDA tensors)."""
    pytest.importorskip("triton")
    torch = pytest.importorskip("torch")
    gpu = os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") not in ("", "0")
    if gpu and not torch.cuda.is_available():
        pytest.skip("FUNCTX_TEST_TRITON_GPU=1 without a CUDA device")
    if not gpu:
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    dev = "cuda" if gpu else "cpu"
    from functx.lowering.triton.program import compile_triton
    from functx.transforms import passes

    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)

    def f(v):
        return lax.psum(v, "d") + 1, lax.all_gather(v, "d", tiled=True), lax.axis_index("d")

    # a vmapped body (its collectives become array operations) against eager
    sq = np.arange(9.0, dtype=np.float32).reshape(3, 3)
    body = functx.vmap(
        lambda v: lax.pswapaxes(v, "i", 0) * lax.axis_index("i") + lax.psum(v, "i"),
        axis_name="i",
    )
    exe = compile_triton(passes.simplify(functx.make_jaxpr(body)(sq)))
    _close(exe(torch.as_tensor(sq, device=dev))[0].cpu().numpy(), body(sq))
    for rec, seen in ((Recorder(), None), (TorchRecorder(), "torch")):
        with C.axis_frame("d", 3, "spmd", rec):
            want = f(x)
            exe = compile_triton(passes.simplify(functx.make_jaxpr(f)(x)))
            n = len(rec.calls)
            outs = [o.cpu().numpy() for o in exe(torch.as_tensor(x, device=dev))]
        for g, w in zip(outs, want):
            _close(g, w)
        assert sorted(c[0] for c in rec.calls[n:]) == ["all_gather", "axis_index", "psum"]
        if seen:
            assert rec.seen[-1] == "torch" and rec.calls[n:]


def test_traces_that_read_an_axis_size_are_not_reused_under_another():
    # a scan body and a jitted function read the bound axis's size (pmean, axis_size): their
    # cached traces are keyed on the axis environment
    def f(v):
        return lax.scan(lambda c, x: (c + lax.pmean(x, "i"), None), 0.0, v)[0]

    _close(functx.vmap(f, axis_name="i")(np.ones((3, 2))), np.full(3, 2.0))
    _close(functx.vmap(f, axis_name="i")(np.arange(8.0).reshape(4, 2)), np.full(4, 7.0))
    g = functx.jit(lambda v: lax.axis_size("d") * v)
    for n in (2, 5):
        with C.axis_frame("d", n, "spmd", Recorder()):
            _close(g(np.ones(1)), np.full(1, float(n)))
