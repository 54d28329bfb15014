"""BLAS-sized products under C++ ``jit`` run as pieces on the program's OpenMP threads with
OpenBLAS on one thread (``functx/lowering/cpp/dot.py``): every split (rows of C, columns of C),
both operand layouts and batches give NumPy's product, and OpenBLAS's thread count is restored."""

import re

import numpy as np
import pytest

import functx
from functx.lowering.cpp import dot

pytestmark = pytest.mark.skipif(dot.blas_threads() is None, reason="no OpenBLAS thread control")


def _products(a, b, c, d, e, f, g):
    return (
        a @ b,  # rows of C cut: (1024, 256) @ (256, 128)
        c @ d,  # columns of C cut: (64, 512) @ (512, 1024)
        functx.numpy.matmul(e, f),  # batched (3, 256, 256) @ (3, 256, 128)
        a.T @ a[:, :128],  # A read transposed: (256, 1024) @ (1024, 128)
        c @ g.T,  # B read transposed: (64, 512) @ (512, 1024)
        a.astype(np.float64) @ b.astype(np.float64),  # dgemm
    )


def test_blas_pieces_match_numpy():
    rng = np.random.default_rng(0)
    shapes = [(1024, 256), (256, 128), (64, 512), (512, 1024), (3, 256, 256), (3, 256, 128)]
    shapes.append((1024, 512))
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    before = _openblas_threads()
    f = functx.jit(_products)
    src = f.lower(*args).as_text()
    # six BLAS products; consecutive independent ones share one loop of pieces
    joined = src.count(", with kernel")
    jobs = _jobs(src)
    assert len(jobs) == 6 and src.count("fx_gemm_run(fx_") + joined == 6 and joined >= 1
    assert any(j["pieces"] > 1 for j in jobs)  # (cut: the OpenMP threads take the pieces)
    got = f(*args)
    assert _openblas_threads() == before
    want = _products(*(a.astype(np.float64) for a in args))
    for k, (r, w) in enumerate(zip(got, want)):
        dt = np.float64 if k == len(want) - 1 else np.float32
        assert r.dtype == dt and r.shape == w.shape
        tol = 1e-4 if dt == np.float32 else 1e-12
        np.testing.assert_allclose(np.asarray(r), w, rtol=tol, atol=tol * np.abs(w).max())


_JOB = re.compile(
    r"\{(?P<a>\w+), (?P<b>\w+), (?P<c>\w+), (?P<u>\w+), \((?:float|double)\)(?P<alpha>[-\d.e]+), "
    r"(?P<bsz>\d+)LL, (?P<m>\d+)LL, (?P<n>\d+)LL, (?P<k>\d+)LL, (?P<ta>[01]), (?P<tb>[01]), "
    r"(?P<pieces>\d+)LL\},  // \d+ piece\(s\) of C's (?P<side>rows|columns)"
)


def _jobs(src):
    """The products' ``fx_gemm_job`` initializers in a program's C++ (``dot._job``)."""
    text = src if isinstance(src, str) else src.as_text()
    return [
        {k: int(v) if v.isdigit() else v for k, v in m.groupdict().items()}
        for m in _JOB.finditer(text)
    ]


def _openblas_threads():
    import ctypes

    path, _, get = dot.blas_threads()
    fn = getattr(ctypes.CDLL(path), get)
    fn.restype = ctypes.c_int
    return fn()


def test_blas_pieces_span_at_least_256():
    """The MLP step's 128x784 @ 784x1024 is cut into 4 column pieces of 256, not 16 of 64: each
    piece repacks all of A (``dot._BLAS_PIECE_SPAN``)."""
    a = np.ones((128, 784), np.float32)
    b = np.ones((784, 1024), np.float32)
    src = functx.jit(lambda x, y: x @ y).lower(a, b).as_text()
    [job] = _jobs(src)
    assert (job["m"], job["n"], job["pieces"], job["side"]) == (128, 1024, 4, "columns")


def test_matmul_cpu_library_harness(monkeypatch, capsys):
    """``benchmarks/matmul_cpu.py --libs``'s C harness calls NumPy's OpenBLAS through its cblas
    entry point uncut and cut into pieces, both operand layouts, and checks each product against
    float64 (its assertion) before reporting GFLOP/s."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[2] / "benchmarks" / "matmul_cpu.py"
    spec = importlib.util.spec_from_file_location("matmul_cpu_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    shapes = [("nn", 48, 96, 40, False, False), ("tt", 96, 48, 40, True, True)]
    monkeypatch.setattr(bench, "MLP_GEMMS", shapes)
    before = _openblas_threads()
    try:
        bench._one_library("numpy", 1, ["1", "2x2", "2x8"])
    finally:  # (the harness leaves NumPy's OpenBLAS on one thread)
        import ctypes

        path, set_, _ = dot.blas_threads()
        getattr(ctypes.CDLL(path), set_)(before)
    assert _openblas_threads() == before
    out = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("RESULT ")]
    assert len(out) == 6 and all(float(ln.split("|")[3]) > 0 for ln in out)


def _update_cases(w, x, d, a, b, u):
    # (each product of its own operands: a product computed twice would be read twice)
    return (
        w - 0.1 * (x.T @ d),  # an SGD step on a weight gradient (rows of C cut)
        u + (a @ b) * 0.5,  # columns of C cut, the product on the left
        u - (2 * a) @ b,  # alpha = -1
        w + functx.numpy.negative(x.T @ (2 * d)),
        (2 * x).T @ d * 2.0,  # no buffer added: an ordinary product
    )


def test_product_updates_fold_into_the_product():
    """``U + c * (A @ B)`` with the product read by nothing else is one kernel: the product's
    pieces copy their block of U and accumulate into it (``dot.fold_product_updates``); every
    form gives NumPy's float64 result, and the weights are not modified."""
    rng = np.random.default_rng(1)
    shapes = [(256, 192), (128, 256), (128, 192), (64, 256), (256, 512), (64, 512)]
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    kept = [a.copy() for a in args]
    f = functx.jit(_update_cases)
    src = f.lower(*args).as_text()
    # four products start from U (its block copied, then beta = 1) and write outputs
    assert sum(j["u"] != "nullptr" and j["c"].startswith("out") for j in _jobs(src)) == 4
    # no pointwise kernel for the updates: one for the unfolded product's scaling only
    kernels = re.findall(r"// kernel \d+: (\w+ \(\d+, \d+\))", src)
    assert kernels.count("pointwise (256, 192)") == 1 and "pointwise (64, 512)" not in kernels
    got = f(*args)
    want = _update_cases(*(a.astype(np.float64) for a in args))
    for r, w in zip(got, want):
        assert r.dtype == np.float32 and r.shape == w.shape
        np.testing.assert_allclose(np.asarray(r), w, rtol=1e-4, atol=1e-4 * np.abs(w).max())
    for a, k in zip(args, kept):
        np.testing.assert_array_equal(a, k)


def _not_folded(w, x, d, s):
    g = x.T @ d
    return w - 0.1 * g, g.sum()  # the product is read twice


def _update_read_again(w, x, d, s):
    new = w - 0.1 * (x.T @ d)
    # (the update read again by a reduction; a small, generated product: U added after it)
    return new, (new * new).sum(), s - 2.0 * (x[:, :4].T @ d[:, :3])


def test_product_updates_other_readers():
    """A product read by something else keeps its own buffer; an update read again (by a
    reduction) is read from the product's buffer; a generated (small) product adds U after."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((192, 256)).astype(np.float32)
    x = rng.standard_normal((128, 192)).astype(np.float32)
    d = rng.standard_normal((128, 256)).astype(np.float32)
    s = rng.standard_normal((4, 3)).astype(np.float32)
    assert all(j["u"] == "nullptr" for j in _jobs(functx.jit(_not_folded).lower(w, x, d, s)))
    src = functx.jit(_update_read_again).lower(w, x, d, s).as_text()
    assert (
        sum(j["u"] != "nullptr" for j in _jobs(src)) == 1
        and "out2[i] = in3[i] + (float)-2.0 * out2[i]" in src
    )
    for fn in (_not_folded, _update_read_again):
        got = functx.jit(fn)(w, x, d, s)
        want = fn(*(a.astype(np.float64) for a in (w, x, d, s)))
        for r, v in zip(got, want):
            np.testing.assert_allclose(np.asarray(r), v, rtol=1e-4, atol=1e-4 * np.abs(v).max())


def _two_gradients(h, d, w, x):
    # a layer's weight gradient (an SGD update) and its data gradient: independent products
    dh = d @ w.T
    return w - 0.1 * (h.T @ d), dh, dh @ x  # (the last one reads dh: not joined with it)


def test_independent_products_share_one_loop():
    """Two consecutive BLAS products where the second does not read the first run their pieces
    in one OpenMP loop (``dot._independent_next``); a product reading the one before it does not
    join it. Values against NumPy in float64."""
    rng = np.random.default_rng(3)
    h, d = (rng.standard_normal((128, 256)).astype(np.float32) for _ in range(2))
    w = rng.standard_normal((256, 256)).astype(np.float32)
    x = rng.standard_normal((256, 192)).astype(np.float32)
    src = functx.jit(_two_gradients).lower(h, d, w, x).as_text()
    assert src.count(", with kernel") == 1 and src.count("fx_gemm_run(fx_") == 2
    got = functx.jit(_two_gradients)(h, d, w, x)
    want = _two_gradients(*(a.astype(np.float64) for a in (h, d, w, x)))
    for r, v in zip(got, want):
        np.testing.assert_allclose(np.asarray(r), v, rtol=1e-4, atol=1e-4 * np.abs(v).max())


def _update_of_a_repeated_product(a, b, c, d):
    p = a @ b
    # a @ b again (with a unit batch axis: the scheduler's common_values merges it with p), the
    # U of the folded update of c @ d
    return p, functx.numpy.matmul(a[None], b)[0] + c @ d


def test_folded_update_of_a_repeated_product():
    """The ``U`` of a folded update that repeats an earlier product keeps its own buffer (a CNN
    step computing its loss beside its gradient rendered ``None[i]`` for it); NumPy's values."""
    rng = np.random.default_rng(5)
    args = [rng.standard_normal(s).astype(np.float32) for s in [(6, 4), (4, 5), (6, 3), (3, 5)]]
    got = functx.jit(_update_of_a_repeated_product)(*args)
    want = _update_of_a_repeated_product(*(a.astype(np.float64) for a in args))
    for r, v in zip(got, want):
        np.testing.assert_allclose(np.asarray(r), v, rtol=1e-5, atol=1e-5)


def test_folded_update_rounds_once(monkeypatch):
    """The folded update rounds ``U + c * s`` once (OpenBLAS's fused multiply-add): within one
    unit in the last place of the unfolded program's ``U - fl(c * s)`` (see
    ``dot.fold_product_updates``), with the weights a thousand times the update."""
    from functx.lowering import program_cache

    monkeypatch.setattr(program_cache, "key_of", lambda closed: None)  # (keyed on the Jaxpr)
    rng = np.random.default_rng(4)
    w = rng.standard_normal((256, 192)).astype(np.float32)
    x, d = (rng.standard_normal((128, n)).astype(np.float32) for n in (256, 192))
    step = lambda w, x, d: w - 1e-4 * (x.T @ d)  # noqa: E731
    f = functx.jit(lambda *a: step(*a))
    assert [j["u"] for j in _jobs(f.lower(w, x, d))] == ["in0"]
    folded = np.asarray(f(w, x, d))
    monkeypatch.setattr(dot, "FOLD_UPDATES", False)
    src = functx.jit(lambda *a: step(*a)).lower(w, x, d).as_text()
    assert [j["u"] for j in _jobs(src)] == ["nullptr"]
    plain = np.asarray(functx.jit(lambda *a: step(*a))(w, x, d))
    assert np.all(np.abs(folded - plain) <= np.spacing(np.abs(plain)))
    want = step(*(a.astype(np.float64) for a in (w, x, d)))
    assert np.abs(folded - want).max() <= np.abs(plain - want).max() * 1.01


def test_product_update_with_a_non_finite_scale():
    """``U - inf * (A @ B)`` is not folded (C++ has no literal for it) and gives NumPy's values."""
    rng = np.random.default_rng(6)
    w = rng.standard_normal((192, 256)).astype(np.float32)
    x, d = (rng.standard_normal((128, n)).astype(np.float32) for n in (192, 256))
    f = lambda w, x, d: w - np.inf * (x.T @ d)  # noqa: E731
    got = np.asarray(functx.jit(f)(w, x, d))
    with np.errstate(invalid="ignore"):
        want = f(w, x, d)
    np.testing.assert_array_equal(got, want)


def test_fold_search_is_bounded(monkeypatch):
    """Looking for updates builds each candidate's expression with every pointwise node inlined
    once per index, and gives up past a few dozen nodes: a DP-SGD step's lowering took minutes
    when shared subexpressions were expanded again at every use."""
    from functx.lowering import lower

    def f(w, x, d):
        y = w
        for _ in range(30):  # each step reads y twice: 2^30 reads if expanded at every use
            y = y + y * 0.5
        return y - 0.1 * (x.T @ d), w - 0.1 * (x.T @ (d * 2))

    rng = np.random.default_rng(7)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((192, 256), (128, 192), (128, 256))]
    g = lower.lower_jaxpr(functx.make_jaxpr(f)(*args))
    calls = []
    lookup = dot._Inline.lookup

    def counted(self, node, idx):
        calls.append(1)
        assert len(calls) < 5000, "the search expands shared subexpressions again"
        return lookup(self, node, idx)

    monkeypatch.setattr(dot._Inline, "lookup", counted)
    dot.fold_product_updates(g)
    assert [n.kind for n in g.outputs] == ["pointwise", "dot"]  # (the second one folds)


def test_column_pieces_of_whole_panels():
    """Pieces of C's columns for ``cpp/gemm.py``'s kernel are whole 64-column panels where the
    column count allows (the fewest such pieces, at least as many as before), else the count as
    it was; an uncut product stays uncut."""
    assert dot._whole_panels(1152, 4) == 6  # 18 panels: 6 pieces of 192, not 4 of 288
    assert dot._whole_panels(1536, 6) == 6
    assert dot._whole_panels(1024, 5) == 8
    assert dot._whole_panels(192, 4) == 4  # (3 panels: no count of 4 or more cuts them whole)
    assert dot._whole_panels(1000, 4) == 4  # (not a whole number of panels)
    assert dot._whole_panels(1152, 1) == 1
    a = np.ones((64, 384), np.float32)
    b = np.ones((384, 1152), np.float32)
    f = functx.jit(lambda x, y: x @ y)
    [job] = _jobs(f.lower(a, b).as_text())
    own = dot.gemm.host_has_avx512()  # (elsewhere OpenBLAS takes the pieces, cut as before)
    assert (job["n"], job["pieces"], job["side"]) == (1152, 6 if own else 4, "columns")
    np.testing.assert_array_equal(np.asarray(f(a, b)), np.full((64, 1152), 384.0, np.float32))


def test_batch_of_products_uncut():
    """For ``cpp/gemm.py``'s kernel a batch of small matrices is the pieces (at most
    ``_BLAS_PIECES`` in all): the 24 attention scores of a (4, 6) batch run whole, a batch of 3
    is still cut."""
    rng = np.random.default_rng(2)
    q, k = (rng.standard_normal((24, 256, 64)).astype(np.float32) for _ in range(2))
    a, b = (rng.standard_normal((3, 256, 256)).astype(np.float32) for _ in range(2))
    f = functx.jit(lambda q, k, a, b: (functx.numpy.matmul(q, k.transpose(0, 2, 1)), a @ b))
    jobs = _jobs(f.lower(q, k, a, b).as_text())
    own = dot.gemm.host_has_avx512()
    assert [j["pieces"] for j in jobs] == ([1, 2] if own else [2, 2])
    s, c = f(q, k, a, b)
    np.testing.assert_allclose(s, q @ k.transpose(0, 2, 1), rtol=2e-5, atol=2e-4)
    np.testing.assert_allclose(c, a @ b, rtol=2e-5, atol=2e-4)
