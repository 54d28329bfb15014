"""Kernel counts prove fusion: ``jit(f).lower(*args).executable.kernels_text`` has one line per
kernel (each starting with ``kernel``). Every test also checks the compiled values against the
eager interpreter, so a fusion that drops or reorders work fails here too."""

from __future__ import annotations

import numpy as np
import pytest

import functx
import functx.lax as lax
import functx.nn as nn
import functx.numpy as fnp

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402


def kernels(lowered) -> list[str]:
    lines = lowered.executable.kernels_text.splitlines()
    assert all(ln.startswith("kernel ") for ln in lines), lowered.executable.kernels_text
    assert lowered.kernel_count() == len(lines)
    return lines


def lower_and_check(f, *args, rtol=2e-6, atol=1e-6):
    """Lower ``f``, run the compiled program and compare it with the eager interpreter."""
    jf = functx.jit(f)
    lowered = jf.lower(*args)
    out = jf(*args)
    got = functx.tree_util.tree_leaves(out)
    want = functx.tree_util.tree_leaves(f(*[fnp.asarray(a) for a in args]))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)
    lower_and_check.last_output = out
    return kernels(lowered)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 33)).astype(np.float32)


def _layer_norm(x, g, b, eps=1e-5):
    mean = fnp.mean(x, axis=-1, keepdims=True)
    var = fnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / fnp.sqrt(var + eps) * g + b


def test_elementwise_chain_is_one_kernel():
    def f(x, y):
        return (
            fnp.exp(fnp.sin(x) * 2.0 + 1.0) / (1.0 + y * y) - fnp.tanh(x * y) + fnp.maximum(x, 0.0)
        )

    ks = lower_and_check(f, X, X[::-1].copy())
    assert len(ks) == 1, ks
    assert "pointwise" in ks[0]


def test_views_fuse_into_the_consumer():
    """Transposes, broadcasts, slices and reshapes are index expressions, not copies."""

    def f(x):
        t = lax.transpose(x, (1, 0))[::2]  # (17, 8)
        return fnp.reshape(t * 2.0, (8, 17)) + x[:, :17] + x[0][None, :17]

    ks = lower_and_check(f, X)
    assert len(ks) == 1, ks


def test_softmax_is_at_most_two_kernels():
    ks = lower_and_check(lambda x: nn.softmax(x, axis=-1), X)
    assert len(ks) <= 2, ks
    assert len(ks) == 1, f"softmax used to be one row-fused kernel: {ks}"


def test_log_softmax_and_logsumexp_fuse():
    ks = lower_and_check(lambda x: (nn.log_softmax(x), nn.logsumexp(x, axis=1)), X)
    assert len(ks) <= 2, ks


def test_layer_norm_is_at_most_two_kernels():
    g = RNG.standard_normal(33).astype(np.float32)
    b = RNG.standard_normal(33).astype(np.float32)
    ks = lower_and_check(_layer_norm, X, g, b, rtol=1e-5, atol=1e-5)
    assert len(ks) <= 2, ks
    assert len(ks) == 1, f"layer norm used to be one row-fused kernel: {ks}"


def test_reductions_of_the_same_rows_share_a_kernel():
    ks = lower_and_check(lambda x: (fnp.sum(x, 1), fnp.max(x, 1), fnp.min(x * 2.0, 1)), X)
    assert len(ks) == 1, ks


def test_matmul_bias_activation():
    w = RNG.standard_normal((33, 5)).astype(np.float32)
    ks = lower_and_check(lambda x, w: nn.relu(x @ w + 1.0), X, w, rtol=1e-5, atol=1e-5)
    assert len(ks) == 2, ks  # the gemm, then one pointwise kernel for bias + relu
    assert "dot" in ks[0]


def test_matrix_product_operands_are_read_in_place():
    """A product's operand that only reshapes a buffer (a unit axis added, as vmap makes) is
    read in place, and a pointwise operand is stored once for the product and its other
    readers: no copy kernels."""
    w = RNG.standard_normal((33, 5)).astype(np.float32)
    v = RNG.standard_normal((5, 7)).astype(np.float32)

    def f(x, w, v):
        h = fnp.tanh(lax.dot_general(x[None], w, (((2,), (0,)), ((), ()))))
        return h, lax.dot_general(h, v, (((2,), (0,)), ((), ())))

    ks = lower_and_check(f, X, w, v, rtol=1e-5, atol=1e-5)
    assert [k.split(":")[1].split()[0] for k in ks] == ["dot", "pointwise", "dot"], ks


def test_matrix_products_read_transposed_operands_in_place():
    """``x @ w.T`` (PyTorch's linear layer), ``w @ x.T`` and a batched ``b @ c.transpose(0, 2,
    1)`` read the transposed operand in its own buffer (a transposed-operand product), with no
    copy kernel; a transpose that moves the batch axis still needs a copy."""
    x = RNG.standard_normal((12, 40)).astype(np.float32)
    w = RNG.standard_normal((17, 40)).astype(np.float32)
    b = RNG.standard_normal((3, 12, 40)).astype(np.float32)
    c = RNG.standard_normal((3, 17, 40)).astype(np.float32)
    cases = [
        (lambda x, w: x @ w.T, (x, w), ["dot"]),
        (lambda x, w: w @ x.T, (x, w), ["dot"]),
        (lambda x, w: fnp.tanh(x.T.T @ w.T), (x, w), ["dot", "pointwise"]),
        (lambda b, c: b @ fnp.transpose(c, (0, 2, 1)), (b, c), ["dot"]),
    ]
    for f, args, kinds in cases:
        ks = lower_and_check(f, *args, rtol=1e-5, atol=1e-5)
        assert [k.split(":")[1].split()[0] for k in ks] == kinds, ks
    d = RNG.standard_normal((40, 3, 12)).astype(np.float32)  # batch axis in the middle
    ks = lower_and_check(
        lambda d, c: fnp.transpose(d, (1, 2, 0)) @ fnp.transpose(c, (0, 2, 1)),
        d,
        c,
        rtol=1e-5,
        atol=1e-5,
    )
    assert [k.split(":")[1].split()[0] for k in ks] == ["pointwise", "dot"], ks


def test_batched_products_through_transposes_and_unit_axes():
    """The Hessian products of ``vmap(jacfwd(grad))`` (the Newton step): a batched product's
    operand that is a transposed computed value seen through unit axes is stored once in its own
    order and read transposed (no copy kernel), and a batched product read only through
    transposes and unit axes is computed transposed (its reader reads it in order)."""
    a = RNG.standard_normal((3, 24, 8)).astype(np.float32)
    x = RNG.standard_normal((3, 24, 8)).astype(np.float32)

    def f(a, x):
        lhs = fnp.transpose(fnp.tanh(a), (0, 2, 1))[:, :, None, :]  # (3, 8, 1, 24)
        h = lax.dot_general(lhs, x, (((3,), (1,)), ((0,), (0,))))  # (3, 8, 1, 8)
        c = lax.dot_general(h[:, :, 0, :], x, (((2,), (2,)), ((0,), (0,))))  # (3, 8, 24)
        return fnp.sin(fnp.transpose(c[:, None], (0, 3, 1, 2)))  # (3, 24, 1, 8)

    ks = lower_and_check(f, a, x, rtol=1e-5, atol=1e-5)
    assert [k.split(":")[1].split()[0] for k in ks] == ["pointwise", "dot", "dot", "pointwise"]
    text = functx.jit(f).lower(a, x).as_text()
    dots = [ln for ln in text.splitlines() if "= dot(" in ln]
    assert "lhs_trans=True" in dots[0] and "m=8 k=24 n=8" in dots[0], dots
    assert dots[1].split("=")[0].endswith("f32[3,24,1,8] "), dots  # C^T = X H^T, in order
    assert "m=24 k=8 n=8" in dots[1], dots
    # a product that an output only reshapes is that output (no copy kernel)
    w = RNG.standard_normal((8, 8)).astype(np.float32)
    ks = lower_and_check(lambda a, w: (a @ w).reshape(3, 24, 2, 4), a, w, rtol=1e-5, atol=1e-5)
    assert [k.split(":")[1].split()[0] for k in ks] == ["dot"], ks


def test_products_with_a_constant_identity_are_their_operand():
    """``jacfwd`` pushes the identity's columns through ``x @ w`` as ``x @ I`` (a constant): read
    as ``x`` itself, no product; a constant that is not the identity keeps its product."""
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    w = RNG.standard_normal(8).astype(np.float32)
    ks = lower_and_check(functx.jacfwd(lambda w, x: fnp.tanh(x @ w)), w, x, rtol=1e-5, atol=1e-6)
    assert sum(" dot " in k for k in ks) == 1, ks  # (x @ w only)
    p = np.eye(8, dtype=np.float32)[::-1].copy()
    ks = lower_and_check(lambda x: fnp.tanh(x @ p), x, rtol=1e-5, atol=1e-6)
    assert sum(" dot " in k for k in ks) == 1, ks


def test_costly_values_read_through_a_broadcast_are_stored_once(monkeypatch, tmp_path):
    """An outer product of tanh(a) with b reads each tanh once per column of b: above
    schedule.REUSE_MIN_CPP evaluations (C++; REUSE_MIN for Triton) and REUSE reads per element,
    the tanh gets a kernel of its own and the product loads it; below, it stays inlined. Cheap
    values stay inlined at any size."""
    from functx.lowering import schedule

    a = RNG.standard_normal((4, 32)).astype(np.float32)
    b = RNG.standard_normal((4, 16)).astype(np.float32)

    def outer(a, b):
        return fnp.tanh(a)[:, :, None] * b[:, None, :]

    assert len(lower_and_check(outer, a, b)) == 1  # 2048 evaluations: recomputed
    # (the thresholds are not part of the compiled-program cache's key: a cache per setting)
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path / "low"))
    monkeypatch.setattr(schedule, "REUSE_MIN_CPP", 1024)
    ks = lower_and_check(outer, a, b)
    assert len(ks) == 2 and "(4, 32, 1)" in ks[0] and "(4, 32, 16)" in ks[1], ks
    src = functx.jit(outer).lower(a, b).as_text()
    second = src[src.index("// kernel 1") :]
    assert "tanh" in src[src.index("// kernel 0") : src.index("// kernel 1")]
    assert "tanh" not in second, second
    assert len(lower_and_check(lambda a, b: (a * 2.0)[:, :, None] * b[:, None, :], a, b)) == 1
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path / "high"))
    monkeypatch.setattr(schedule, "REUSE", 32)  # 16 reads per element: too few
    assert len(lower_and_check(outer, a, b)) == 1


def _scattered(v, x, rows, cols):
    """A sparse product's scatter: stored entry e of value v[e] at (rows[e], cols[e]) adds
    sin(v[e]) * x[cols[e], :] to row rows[e] of the output."""
    return fnp.zeros(x.shape, x.dtype).at[rows].add(fnp.sin(v)[:, None] * x[cols])


@pytest.mark.parametrize("nse,stored", [(512, True), (32, False)])
def test_a_scatters_costly_updates_are_computed_once_per_entry(nse, stored):
    """A scatter evaluates its updates once per update element: sin(v) read through the
    broadcast over x's 16 columns, 16 times per stored entry. At 512 entries (8,192 evaluations,
    above schedule.REUSE_MIN_CPP) the sin gets a kernel of its own (the scatter was counted as
    evaluating it once per output element, 4,096 times, and recomputed it 16 times per entry);
    below, it stays inlined, and the scatter computes what depends on the entry alone, its
    indices and the sin, outside its loop over the columns (a SIMD loop: one entry's columns
    are distinct elements). Values against NumPy in float64 and JAX."""
    n = 256
    flat = np.sort(RNG.choice(n * n, nse, replace=False))
    rows, cols = (flat // n).astype(np.int32), (flat % n).astype(np.int32)
    v = RNG.standard_normal(nse).astype(np.float32)
    x = RNG.standard_normal((n, 16)).astype(np.float32)
    ks = lower_and_check(_scattered, v, x, rows, cols, rtol=1e-5, atol=1e-5)
    want = np.zeros((n, 16))
    np.add.at(want, rows, np.sin(v.astype(np.float64))[:, None] * x[cols])
    got = np.asarray(lower_and_check.last_output)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    ref = jax.jit(lambda v, x, r, c: jnp.zeros((n, 16)).at[r].add(jnp.sin(v)[:, None] * x[c]))
    np.testing.assert_allclose(got, np.asarray(ref(v, x, rows, cols)), rtol=1e-5, atol=1e-5)
    assert sum("scatter" in k for k in ks) == 1, ks
    src = functx.jit(_scattered).lower(v, x, rows, cols).as_text()
    run = src[src.index('extern "C" int fx_run') :]  # (the program, after the prelude)
    before, scatter = run.split("scatter_add into")
    inner = scatter[scatter.index("for (int64_t qflat") :]
    assert ("fx::sin(" in before) == stored
    assert ("fx::sin(" in scatter) != stored and "fx::sin(" not in inner
    assert "#pragma omp simd\n    for (int64_t qflat" in scatter  # (distinct elements per entry)


def _combine(c1, c2):
    a1, b1 = c1
    a2, b2 = c2
    return a1 * a2, a2 * b1 + b2


def test_linear_recurrence_gradient_has_two_ascan_kernels():
    """The forward recurrence and its transpose (the reverse scan) are one lane-wise ascan
    kernel each, and the gradients' pointwise tail is the reverse scan's epilogue: two kernels,
    and the reverse scan's state (read only there) is never stored."""
    a = RNG.uniform(0.5, 1.0, (16, 3)).astype(np.float32)
    b = RNG.standard_normal((16, 3)).astype(np.float32)

    def loss(a, b):
        return fnp.sum(lax.associative_scan(_combine, (a, b))[1] ** 2)

    g = functx.grad(loss, argnums=(0, 1))
    ks = lower_and_check(g, a, b, rtol=1e-4, atol=1e-5)
    assert len(ks) == 2 and all("ascan" in k for k in ks), ks
    assert "epilogue" in ks[1] and ks[1].count("(not stored)") == 2, ks
    ref = jax.jit(
        jax.grad(
            lambda a, b: jnp.sum(jax.lax.associative_scan(_combine, (a, b))[1] ** 2), argnums=(0, 1)
        )
    )(a, b)
    for got, want in zip(lower_and_check.last_output, ref):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)


def test_scan_epilogue_reads_only_the_current_position():
    """A pointwise node reading the scan's output at the position being computed joins the scan
    kernel; one that also reads the previous position (``h[t] * h[t - 1]``, through a pad) does
    not (the scan keeps only the current value), and the output is stored for it."""
    a = RNG.uniform(0.5, 1.0, (12, 3)).astype(np.float32)
    b = RNG.standard_normal((12, 3)).astype(np.float32)

    def here(a, b):
        h = lax.associative_scan(_combine, (a, b))[1]
        return h * 2.0 + a

    def shifted(a, b):
        h = lax.associative_scan(_combine, (a, b))[1]
        return h * fnp.pad(h, ((1, 0), (0, 0)))[:-1]

    ks = lower_and_check(here, a, b, rtol=1e-5, atol=1e-6)
    assert len(ks) == 1 and "epilogue" in ks[0] and ks[0].count("(not stored)") == 2, ks
    ks = lower_and_check(shifted, a, b, rtol=1e-5, atol=1e-6)
    assert len(ks) == 2 and "epilogue" not in ks[0] and "pointwise" in ks[1], ks


def test_as_text_shows_jaxpr_kernels_and_source():
    lowered = functx.jit(lambda x: nn.softmax(x)).lower(X)
    text = lowered.as_text()
    assert "# Jaxpr" in text and "reduce_max" in text and "{ lambda" in text
    assert "# kernels" in text and lowered.executable.kernels_text in text
    assert "# C++" in text and 'extern "C" int fx_run' in text


def test_max_pool_gradient_of_a_conv_compiles_to_eager_values():
    # (a max-pool's gradient reads its operand through 4 strided slices, each several times;
    # the scheduler now stores an operand that reads several buffers (a sum of conv-tap
    # products) when its readers would evaluate it 8+ times per element, instead of inlining it
    # into each: the CNN step's gradient went from 186 to 32 ms on this machine)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 8, 8, 3)).astype(np.float32)
    k = rng.normal(size=(3, 3, 3, 4)).astype(np.float32)
    dn = ("NHWC", "HWIO", "NHWC")

    def f(x, k):
        h = fnp.maximum(lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=dn), 0.0)
        return lax.reduce_window(h, -fnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID").sum()

    g = functx.grad(f, argnums=(0, 1))
    for got, want in zip(functx.jit(g)(x, k), g(x, k)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
