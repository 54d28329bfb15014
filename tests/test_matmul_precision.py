"""The default precision of float32 matrix products (``functx.default_matmul_precision``,
``functx.config.update("jax_default_matmul_precision", ...)``), as JAX has it: on a GPU, TF32
unless "highest"/"float32"; on the CPU, float32 whatever the setting.

Without CUDA the GPU here is ``InterpretedGpuDevice`` (``TRITON_INTERPRET=1``), whose products
run on the CPU in float32: these tests then check what the setting reaches (the compiled
program, the caches, torch's switch around a product); the numbers are checked on a real GPU
(``TRITON_INTERPRET=0 pytest tests/test_matmul_precision.py``).
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import threading  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import functx  # noqa: E402
import functx.numpy as fnp  # noqa: E402
from functx import config as C  # noqa: E402
from functx.devices import eager as P  # noqa: E402

GPU = functx.devices("gpu")[0] if functx.default_backend() == "gpu" else None
needs_gpu = pytest.mark.skipif(GPU is None, reason="no GPU (nor TRITON_INTERPRET=1 with triton)")
needs_cuda = pytest.mark.skipif(
    GPU is None or GPU.torch_device.type != "cuda", reason="needs a CUDA GPU"
)


@pytest.fixture(autouse=True)
def _restore_config():
    saved = C._global_precision
    yield
    C._global_precision = saved


def test_names_and_nesting():
    assert C.matmul_precision() == "tensorfloat32"  # JAX's default on a GPU
    with functx.default_matmul_precision("highest"):
        assert C.matmul_precision() == "float32"
        with functx.default_matmul_precision("tensorfloat32"):
            assert C.matmul_precision() == "tensorfloat32"
        with functx.default_matmul_precision("float32"):
            assert C.matmul_precision() == "float32"
        assert C.matmul_precision() == "float32"
    assert C.matmul_precision() == "tensorfloat32"
    for name in ("default", "high", "bfloat16", "DEFAULT", None):
        with functx.default_matmul_precision(name):
            assert C.matmul_precision() == "tensorfloat32"
    with pytest.raises(ValueError, match=r"unknown matmul precision 'fp64'.*'highest'"):
        functx.default_matmul_precision("fp64")


def test_config_update_and_the_block_wins():
    functx.config.update("jax_default_matmul_precision", "highest")
    assert functx.config.jax_default_matmul_precision == "float32"
    assert C.matmul_precision() == "float32"
    with functx.default_matmul_precision("default"):
        assert C.matmul_precision() == "tensorfloat32"
    functx.config.update("jax_default_matmul_precision", None)
    assert C.matmul_precision() == "tensorfloat32"
    with pytest.raises(ValueError, match="jax_default_matmul_precision"):
        functx.config.update("jax_default_matmul_precision", "double")
    with pytest.raises(
        ValueError, match="has no option 'jax_matmul'.*jax_default_matmul_precision"
    ):
        functx.config.update("jax_matmul", "highest")


def test_a_block_holds_for_its_thread_only():
    seen = []
    with functx.default_matmul_precision("highest"):
        t = threading.Thread(target=lambda: seen.append(C.matmul_precision()))
        t.start()
        t.join()
        assert C.matmul_precision() == "float32"
    assert seen == ["tensorfloat32"]


def test_the_environment_sets_the_default(tmp_path):
    import subprocess
    import sys

    code = "from functx import config as C; print(C.matmul_precision())"
    env = dict(os.environ, FUNCTX_DEFAULT_MATMUL_PRECISION="highest")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "float32"
    env["FUNCTX_DEFAULT_MATMUL_PRECISION"] = "nonsense"
    bad = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and "FUNCTX_DEFAULT_MATMUL_PRECISION" in bad.stderr


def _dot_lines(text):
    return [
        ln.split("#")[0].strip() for ln in text.splitlines() if ln.strip().startswith("_fx_dot(")
    ]


@needs_gpu
def test_jit_on_a_gpu_compiles_products_for_the_precision_in_force(capfd, monkeypatch):
    monkeypatch.setenv("FUNCTX_LOG_COMPILES", "1")
    a = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    b = np.arange(8, dtype=np.float32).reshape(4, 2) / 5
    ga, gb = functx.device_put((a, b), GPU)
    f = functx.jit(lambda a, b: fnp.tanh(a @ b))
    (line,) = _dot_lines(f.lower(ga, gb).as_text())
    assert line.startswith("_fx_dot(in0, in1, ")
    assert line.endswith(", 1, 3, 4, 2, False, False, True)")
    with functx.default_matmul_precision("highest"):
        (line,) = _dot_lines(f.lower(ga, gb).as_text())
        assert line.endswith(", 1, 3, 4, 2, False, False, False)")
    capfd.readouterr()
    y1 = f(ga, gb)
    with functx.default_matmul_precision("highest"):
        y2 = f(ga, gb)
        y2 = f(ga, gb)  # the fast path's key has the precision too
    y3 = f(ga, gb)
    err = capfd.readouterr().err
    assert (
        err.count("compiling") == 2
        and "default matmul precision changed: tensorfloat32 -> float32" in err
    ), err
    assert len(f.cache) == 2
    want = np.tanh(a.astype(np.float64) @ b)
    np.testing.assert_allclose(np.asarray(y2), want, rtol=2e-6, atol=1e-7)
    tol = 2e-6 if GPU.torch_device.type != "cuda" else 2e-3  # TF32 on a real GPU
    for y in (y1, y3):
        np.testing.assert_allclose(np.asarray(y), want, rtol=tol, atol=tol)


@needs_gpu
def test_eager_products_on_a_gpu_follow_the_precision():
    a = functx.device_put(np.eye(3, dtype=np.float32) * 1.5, GPU)
    (a @ a).block_until_ready()
    with functx.default_matmul_precision("float32"):
        (a @ a).block_until_ready()
    modes = {k[-1] for k in P._OP_CACHE if k[0].name == "dot_general" and k[3] is GPU}
    assert modes == {"tensorfloat32", "float32"}
    lines = {
        k[-1]: _dot_lines(v.source)[0]
        for k, v in P._OP_CACHE.items()
        if k[0].name == "dot_general"
        and k[3] is GPU
        and [a.shape for a in k[2]] == [(3, 3), (3, 3)]  # (not another test's (3, 3) @ (3,))
    }
    assert lines["tensorfloat32"].endswith("True)") and lines["float32"].endswith("False)")


def test_the_cpu_ignores_the_setting():
    a = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    f = functx.jit(lambda a: a @ a)
    y1 = np.asarray(f(a))
    with functx.default_matmul_precision("highest"):
        y2 = np.asarray(f(a))
    assert len(f.cache) == 1  # no recompilation for the CPU
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(np.asarray(a @ a), np.asarray(functx.numpy.asarray(a) @ a))


def test_products_set_torchs_switch_for_the_call_and_restore_it(monkeypatch):
    """``triton.runtime.matmul`` on a CUDA float32 output: torch's TF32 switch holds the wanted
    mode during the product and its previous value after, whatever that was."""
    import torch

    from functx.lowering.triton import runtime as rt

    state = {"mode": "none"}
    seen = []
    monkeypatch.setattr(
        rt, "_fp32_mode", (lambda: state["mode"], lambda v: state.update(mode=v), "tf32", "ieee")
    )
    monkeypatch.setattr(torch, "matmul", lambda a, b, out: seen.append(state["mode"]))
    out = SimpleNamespace(dtype=torch.float32, device=SimpleNamespace(type="cuda"))
    rt.matmul(None, None, out, True)
    rt.matmul(None, None, out, False)
    assert seen == ["tf32", "ieee"] and state["mode"] == "none"
    state["mode"] = "tf32"  # already as wanted: left alone
    rt.matmul(None, None, out, True)
    assert seen[-1] == "tf32" and state["mode"] == "tf32"
    host = SimpleNamespace(dtype=torch.float32, device=SimpleNamespace(type="cpu"))
    rt.matmul(None, None, host, False)  # the CPU: torch's own float32 product
    assert seen[-1] == "tf32" and state["mode"] == "tf32"


@needs_cuda
def test_tf32_and_float32_products_on_a_real_gpu():
    import torch

    rng = np.random.default_rng(1)
    a = rng.standard_normal((256, 512)).astype(np.float32)
    b = rng.standard_normal((512, 128)).astype(np.float32)
    want = a.astype(np.float64) @ b
    ga, gb = functx.device_put((a, b), GPU)
    before = (
        torch.backends.cuda.matmul.fp32_precision
        if hasattr(torch.backends.cuda.matmul, "fp32_precision")
        else torch.backends.cuda.matmul.allow_tf32
    )
    f = functx.jit(lambda a, b: a @ b)

    def err(y):
        return np.linalg.norm(np.asarray(y) - want) / np.linalg.norm(want)

    tf32 = err(f(ga, gb))
    with functx.default_matmul_precision("highest"):
        full = err(f(ga, gb))
        eager = err(ga @ gb)
    assert full < 1e-6 and eager < 1e-6, (full, eager)
    assert 1e-5 < tf32 < 3e-3, tf32  # TF32: 10-bit mantissas
    after = (
        torch.backends.cuda.matmul.fp32_precision
        if hasattr(torch.backends.cuda.matmul, "fp32_precision")
        else torch.backends.cuda.matmul.allow_tf32
    )
    assert after == before


# --- precision= of one product (lax.dot_general, lax.dot, numpy's matmul, dot, einsum, ...) ------
def test_precision_argument_names_and_pairs():
    from functx import lax

    canon = lax.canonicalize_precision
    assert canon(None) is None
    assert canon(lax.Precision.HIGHEST) == canon("highest") == canon("float32") == "float32"
    assert (
        canon(lax.Precision.DEFAULT) == canon("high") == canon("tensorfloat32") == "tensorfloat32"
    )
    assert canon(("default", lax.Precision.HIGHEST)) == "float32"  # the higher of a pair
    assert canon((None, "high")) == "tensorfloat32" and canon((None, None)) is None
    with pytest.raises(ValueError, match="precision: unknown matmul precision 'fp16'"):
        fnp.matmul(np.eye(2, dtype=np.float32), np.eye(2, dtype=np.float32), precision="fp16")
    with pytest.raises(ValueError, match="one value or a pair"):
        lax.canonicalize_precision(("highest",) * 3)


def test_precision_argument_is_in_the_jaxpr_and_survives_grad_and_vmap():
    from functx import lax

    a = np.ones((3, 4), np.float32)
    b = np.ones((4, 2), np.float32)
    mm = functx.make_jaxpr(lambda a, b: fnp.matmul(a, b, precision=lax.Precision.HIGHEST))(a, b)
    assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in str(mm)
    plain = functx.make_jaxpr(lambda a, b: a @ b)(a, b)
    assert "precision" not in str(plain)  # None stays out, as in JAX
    g = functx.make_jaxpr(
        functx.grad(
            lambda a, b: fnp.einsum("ij,jk->ik", a, b, precision="highest").sum(), argnums=(0, 1)
        )
    )
    text = str(g(a, b))
    assert (
        text.count("dot_general") == 2 and text.count("Precision.HIGHEST, Precision.HIGHEST") == 2
    ), text
    v = functx.make_jaxpr(functx.vmap(lambda x, y: fnp.dot(x, y, precision="highest")))(a, a)
    assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in str(v)
    for f in (
        lambda a, b: fnp.dot(a, b, precision="high"),
        lambda a, b: fnp.tensordot(a, b, 1, precision="high"),
        lambda a, b: fnp.inner(a, b.T, precision="high"),
        lambda a, b: lax.dot(a, b, precision="high"),
    ):
        assert "precision=tensorfloat32" in str(functx.make_jaxpr(f)(a, b))
    np.testing.assert_array_equal(  # values: the CPU computes float32 whatever the precision
        np.asarray(functx.jit(lambda a, b: fnp.matmul(a, b, precision="high"))(a, b)), a @ b
    )


@needs_gpu
def test_a_products_own_precision_wins_over_the_default():
    from functx import lax

    ga, gb = functx.device_put((np.ones((3, 4), np.float32), np.ones((4, 2), np.float32)), GPU)
    hi = functx.jit(lambda a, b: fnp.matmul(a, b, precision=lax.Precision.HIGHEST))
    (line,) = _dot_lines(hi.lower(ga, gb).as_text())
    assert line.endswith("False)")  # float32, although the default is TF32
    lo = functx.jit(lambda a, b: fnp.matmul(a, b, precision="tensorfloat32"))
    with functx.default_matmul_precision("highest"):
        (line,) = _dot_lines(lo.lower(ga, gb).as_text())
    assert line.endswith("True)")


def test_default_matmul_precision_as_a_decorator():
    """Like JAX's (a contextlib context manager), it also decorates a function."""
    from functx import config

    seen = []

    @functx.default_matmul_precision("highest")
    def f():
        seen.append(config.matmul_precision())

    before = config.matmul_precision()
    f()
    f()
    assert seen == ["float32", "float32"]  # "highest" is full float32 inside each call
    assert config.matmul_precision() == before  # and the setting is back after it
