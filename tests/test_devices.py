"""Devices and placement (``functx/devices/``): device objects, ``device_put``, GPU arrays,
eager operations and ``jit`` on a GPU, the mixing errors, the default device.

Without CUDA these run on ``InterpretedGpuDevice``: ``TRITON_INTERPRET=1`` is set before Triton is
imported, and functx's stand-in GPU keeps its buffers in CPU torch tensors and runs every kernel in
Triton's interpreter (slowly: shapes are tiny). On a CUDA machine,
``TRITON_INTERPRET=0 pytest tests/test_devices.py`` runs the same tests on the real GPU, plus the
ones marked ``cuda``. GPU results are compared with the same computation on the CPU.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import inspect  # noqa: E402
import pickle  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import (
    given,  # noqa: E402
    strategies as st,  # noqa: E402
)
from hypothesis.extra import numpy as hnp  # noqa: E402

import functx  # noqa: E402
import functx.numpy as fnp  # noqa: E402
from functx import lax, nn  # noqa: E402
from functx.devices import device as D  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CPU = functx.devices("cpu")[0]
# the interpreter evaluates masked-off lanes with NumPy, which warns about them
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


GPU = functx.devices("gpu")[0] if functx.default_backend() == "gpu" else None
needs_gpu = pytest.mark.skipif(GPU is None, reason="no GPU (nor TRITON_INTERPRET=1 with triton)")
needs_cuda = pytest.mark.skipif(
    GPU is None or GPU.torch_device.type != "cuda", reason="needs a CUDA GPU"
)


@pytest.fixture(autouse=True, scope="module")
def _float32_products():
    """GPU results are compared with the CPU's float32 ones, so matrix products run in full
    float32 here (a GPU's default is TF32, as JAX's: tests/test_matmul_precision.py)."""
    with functx.default_matmul_precision("highest"):
        yield


def on_gpu(*xs):
    out = functx.device_put(xs, GPU)
    return out if len(xs) > 1 else out[0]


def on_cpu(*xs):
    out = functx.device_put(xs, CPU)
    return out if len(xs) > 1 else out[0]


def assert_on(x, device):
    assert isinstance(x, functx.Array), type(x)
    assert x.device is device, f"{x.aval.str_short()} is on {x.device}, not {device}"


def assert_close(got, want, rtol=2e-6, atol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(
            got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol
        )
    else:
        np.testing.assert_array_equal(got, want)


def _env(**extra):
    """The environment for a child Python that imports this checkout's functx."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return dict(os.environ, PYTHONPATH=path, **extra)


def line_of(offset=0) -> str:
    """``test_devices.py:N`` for the caller's line plus ``offset``."""
    return f"test_devices.py:{inspect.currentframe().f_back.f_lineno + offset}"


# --- installing: the CPU needs neither torch nor triton ----------------------------------------
def test_cpu_use_never_imports_torch_or_triton(tmp_path):
    code = (
        "import sys, numpy as np, functx, functx.numpy as jnp\n"
        "x = jnp.asarray(np.arange(3.0, dtype=np.float32))\n"
        "y = functx.jit(lambda a: jnp.tanh(a) * 2.0)(x) + jnp.zeros(3)\n"
        "g = functx.grad(lambda a: (a * a).sum())(x)\n"
        "assert x.device == functx.devices('cpu')[0] and y.device is x.device\n"
        "functx.device_put(x, functx.devices('cpu')[0]); functx.device_get(y)\n"
        "print(sorted(m for m in ('torch', 'triton') if m in sys.modules))\n"
    )
    env = _env(FUNCTX_CACHE_DIR=str(tmp_path))
    env.pop("FUNCTX_DEFAULT_DEVICE", None)
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "[]", proc.stdout


def test_gpu_extra_and_cpu_dependencies():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = lambda reqs: {r.split("=")[0].split(">")[0].split("<")[0].strip() for r in reqs}  # noqa: E731
    assert {"torch", "triton"} <= names(project["optional-dependencies"]["gpu"])
    assert not {"torch", "triton"} & names(project["dependencies"])


# --- devices -------------------------------------------------------------------------------------
def test_cpu_device():
    assert functx.devices("cpu") == [CPU]
    assert repr(CPU) == "CpuDevice(id=0)" and CPU.platform == "cpu" and CPU.id == 0
    x = fnp.asarray([1.0, 2.0])
    assert x.device is CPU and x.devices() == {CPU}
    assert functx.device_count("cpu") == 1 and functx.local_devices(backend="cpu") == [CPU]
    with pytest.raises(ValueError, match="unknown platform 'tpu'"):
        functx.devices("tpu")


@needs_gpu
def test_gpu_device():
    gpus = functx.devices("gpu")
    assert gpus[0] is GPU and GPU.platform == "gpu" and GPU.id == 0
    assert functx.devices() == gpus and functx.default_backend() == "gpu"
    want = "CudaDevice(id=0)" if GPU.torch_device.type == "cuda" else "InterpretedGpuDevice(id=0)"
    assert repr(GPU) == want


def test_no_gpu_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(D, "_gpu_list", [])
    with pytest.raises(functx.FunctxError, match=r"no GPU is available.*TRITON_INTERPRET=1"):
        functx.devices("gpu")
    with pytest.raises(RuntimeError):
        functx.device_put(np.ones(2), "gpu")
    assert functx.devices() == [CPU] and functx.default_backend() == "cpu"


# --- placement and transfers ---------------------------------------------------------------------
DTYPES = [
    np.float32,
    np.float64,
    np.float16,
    ml_dtypes.bfloat16,
    np.int32,
    np.int64,
    np.int8,
    np.uint8,
    np.bool_,
]


@needs_gpu
@given(data=st.data())
def test_device_put_round_trip(data):
    dtype = np.dtype(data.draw(st.sampled_from(DTYPES)))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))
    value = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-100, 100)))
    x = value.astype(dtype)
    g = functx.device_put(x, GPU)
    assert_on(g, GPU)
    assert g.shape == x.shape and g.dtype == x.dtype and g.committed
    back = np.asarray(g)  # an explicit copy to the host
    assert back.dtype == x.dtype
    np.testing.assert_array_equal(back.astype(np.float64), x.astype(np.float64))
    h = functx.device_put(g, CPU)
    assert type(h) is functx.Array and h.device is CPU
    np.testing.assert_array_equal(np.asarray(h).astype(np.float64), x.astype(np.float64))


@needs_gpu
def test_device_put_pytrees_and_defaults():
    tree = {"w": np.ones((2, 3), np.float32), "b": [np.zeros(3, np.int32), 2.0]}
    g = functx.device_put(tree, GPU)
    assert all(leaf.device is GPU for leaf in functx.tree_util.tree_leaves(g))
    assert functx.device_put(g)["w"] is g["w"]  # device=None: arrays stay where they are
    assert functx.device_put(np.ones(2)).device is CPU  # other data: the default device
    assert functx.device_put(g["w"], GPU) is g["w"]
    host = functx.device_get(g)
    assert isinstance(host["w"], np.ndarray) and host["b"][0].dtype == np.int32
    assert functx.device_put(np.ones(2), "gpu").device is GPU  # a platform name works too
    with pytest.raises(functx.DeviceError, match="expected a functx device"):
        functx.device_put(np.ones(2), 0)


@needs_gpu
def test_host_conversions_are_explicit_copies():
    x = np.array([[1.5, -2.0], [3.0, 4.25]], np.float32)
    g = on_gpu(x)
    assert repr(g) == repr(fnp.asarray(x)) and str(g) == str(fnp.asarray(x))
    assert float(g[0, 0]) == 1.5 and g[1, 1].item() == 4.25 and g.tolist() == x.tolist()
    assert bool(g[0, 0] > 1) and int(on_gpu(np.int32(7))) == 7 and f"{g[0, 1]:.1f}" == "-2.0"
    with pytest.raises(ValueError, match="copy=False"):
        g.__array__(copy=False)
    back = pickle.loads(pickle.dumps(g))
    assert_on(back, GPU)
    np.testing.assert_array_equal(np.asarray(back), x)
    assert functx.block_until_ready({"a": g})["a"] is g
    with pytest.raises(TypeError, match="GPU"):
        functx.Array(g)


@needs_gpu
def test_dlpack_export():
    import torch

    g = on_gpu(np.arange(6, dtype=np.float32).reshape(2, 3))
    t = torch.from_dlpack(g)
    assert t.device == GPU.torch_device and tuple(t.shape) == (2, 3)
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(6).reshape(2, 3))


@needs_cuda
def test_dlpack_import_from_torch_cuda():
    import torch

    t = torch.arange(6, dtype=torch.float32, device="cuda").reshape(2, 3)
    g = fnp.asarray(t)
    assert_on(g, GPU)
    t.zero_()  # functx holds its own copy
    np.testing.assert_array_equal(np.asarray(g), np.arange(6).reshape(2, 3))
    # jit takes torch CUDA tensors as arguments directly and returns functx GPU arrays
    out = functx.jit(lambda a: a * 2.0)(torch.ones(3, device="cuda"))
    assert_on(out, GPU)
    np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0, 2.0])


# --- eager operations on a GPU -------------------------------------------------------------------
ELEMENTWISE = {
    "add_bcast": lambda x, y: x + y[0],
    "mul_scalar": lambda x, y: x * 2.5 - 1,
    "div_pow": lambda x, y: (x / (1.0 + y * y)) ** 2,
    "sin_exp": lambda x, y: fnp.sin(x) + fnp.exp(-fnp.abs(y)),
    "tanh_where": lambda x, y: fnp.where(x > y, fnp.tanh(x), y),
    "maximum": lambda x, y: fnp.maximum(x, y).astype(np.int32),
}
REDUCTIONS = {
    "sum0": lambda x: x.sum(axis=0),
    "max1": lambda x: x.max(axis=1),
    "mean": lambda x: fnp.mean(x),
    "argmax": lambda x: fnp.argmax(x, axis=1),
    "cumsum": lambda x: fnp.cumsum(x, axis=1),
    "softmax": lambda x: nn.softmax(x, axis=-1),
    "matmul": lambda x: x @ x.T,
    "index": lambda x: x[1, ::2] + x[[0, 2, 1], 1],
    "at_set": lambda x: x.at[:, 1].set(0.0),
    "tril": lambda x: fnp.tril(x),
}
finite = st.floats(-10, 10, width=32)


@needs_gpu
@pytest.mark.parametrize("name", list(ELEMENTWISE))
@given(
    x=hnp.arrays(np.float32, (3, 4), elements=finite),
    y=hnp.arrays(np.float32, (3, 4), elements=finite),
)
def test_eager_elementwise_on_gpu_matches_cpu(name, x, y):
    f = ELEMENTWISE[name]
    got = f(*on_gpu(x, y))
    assert_on(got, GPU)
    assert got.committed
    assert_close(got, f(*on_cpu(x, y)), rtol=1e-5, atol=1e-6)


@needs_gpu
@pytest.mark.parametrize("name", list(REDUCTIONS))
@given(x=hnp.arrays(np.float32, (3, 5), elements=finite))
def test_eager_reductions_and_indexing_on_gpu_match_cpu(name, x):
    f = REDUCTIONS[name]
    got = f(on_gpu(x))
    assert_on(got, GPU)
    assert_close(got, f(on_cpu(x)), rtol=1e-5, atol=1e-5)


@needs_gpu
def test_eager_transforms_and_control_flow_on_gpu():
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)

    def loss(w):
        return (nn.relu(w) * fnp.tanh(w)).sum()

    def body(c, r):
        return c * 0.5 + r, c.sum()

    for f in [
        functx.grad(loss),
        functx.vmap(lambda r: r @ r),
        lambda w: lax.scan(body, fnp.zeros(4), w),
        lambda w: lax.cond(True, lambda a: a * 2, lambda a: a, w),
    ]:
        got, want = f(on_gpu(x)), f(on_cpu(x))
        for g, w in zip(functx.tree_util.tree_leaves(got), functx.tree_util.tree_leaves(want)):
            assert_on(g, GPU)
            assert_close(g, w, rtol=1e-5, atol=1e-6)


@needs_gpu
def test_weak_typed_scalars_keep_the_array_dtype():
    h = on_gpu(np.ones(3, np.float16))
    assert (h + 1.0).dtype == np.float16 and not (h + 1.0).weak_type
    i = on_gpu(np.array([250, 3], np.uint8))
    assert_close(i + 10, np.array([4, 13], np.uint8))  # wraps like uint8
    # host scalars of any kind go with the GPU operand: NumPy scalars, 0-d host arrays
    x = on_gpu(np.arange(3.0, dtype=np.float32))
    s = fnp.asarray(np.arange(3.0, dtype=np.float32)).sum()
    for out in [x * np.float32(2), x * s, x + fnp.asarray(1, np.float32)]:
        assert_on(out, GPU)
    assert_close(x * s, np.arange(3.0, dtype=np.float32) * 3)
    # Python scalars reach the device once per value: 0.0 and -0.0 are different values
    assert not np.signbit(np.asarray(x * 0.0)).any() and np.signbit(np.asarray(x * -0.0)).all()


@pytest.mark.usefixtures("no_x64")
@needs_gpu
def test_uncommitted_arrays_go_with_the_committed_device():
    z = fnp.zeros(3)
    assert z.device is CPU and not z.committed
    x = on_gpu(np.arange(3.0, dtype=np.float32))
    for out in [x + z, x * fnp.ones(3) + fnp.arange(3.0), fnp.eye(3) @ x, x + fnp.zeros_like(x)]:
        assert_on(out, GPU)
        assert out.committed
    assert_on(fnp.zeros_like(x), GPU)
    assert_close(fnp.eye(3) @ x, np.arange(3.0, dtype=np.float32))
    # committed host arrays: built from data, or placed with device_put
    assert fnp.asarray([1.0, 2.0]).committed and functx.device_put(z, CPU).committed
    assert (z + fnp.asarray([1.0, 2.0, 3.0])).committed


# --- mixing devices is an error ------------------------------------------------------------------
@needs_gpu
def test_mixing_host_and_gpu_arrays_raises():
    x = on_gpu(np.ones(3, np.float32))
    y = fnp.asarray(np.ones(3, np.float32))
    with pytest.raises(functx.DeviceError) as e:
        x + y  # noqa: B018
    where = line_of(-1)
    msg = str(e.value)
    for part in [
        "add:",
        f"operand 0 f32[3] is on {GPU!r}",
        "operand 1 f32[3] is on CpuDevice(id=0)",
        where,
        "functx.device_put",
    ]:
        assert part in msg, (part, msg)
    assert isinstance(e.value, ValueError)  # as JAX's incompatible-devices error
    with pytest.raises(functx.DeviceError, match=r"dot_general: .*f32\[2,3\].*CpuDevice"):
        on_gpu(np.ones((3, 2), np.float32)).T @ np.ones((3, 4), np.float32)
    with pytest.raises(functx.DeviceError, match="functx.device_put"):
        fnp.where(x > 0, y, x)
    # an explicit copy makes it work
    assert_on(x + functx.device_put(y, x.device), GPU)


# --- jit -----------------------------------------------------------------------------------------
@needs_gpu
def test_jit_compiles_for_the_device_of_its_arguments():
    @functx.jit
    def f(a, b):
        return {"y": nn.softmax(a * b, axis=-1), "s": (a - b).sum()}

    a = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
    b = np.float32(1.5)
    want = f(a, b)
    assert want["y"].device is CPU
    got = f(on_gpu(a), b)
    assert_on(got["y"], GPU)
    assert_on(got["s"], GPU)
    assert_close(got["y"], want["y"], rtol=1e-5)
    assert_close(got["s"], want["s"], rtol=1e-5, atol=1e-5)
    n = len(f.cache)
    f(on_gpu(a), b)
    f(a, b)
    assert len(f.cache) == n  # one entry per device, each reused
    assert "@triton.jit" in f.lower(on_gpu(a), b).as_text()
    assert "@triton.jit" not in f.lower(a, b).as_text()


@needs_gpu
def test_jit_device_errors():
    def f(a, b):
        return a + b

    x = on_gpu(np.ones(3, np.float32))
    with pytest.raises(functx.DeviceError) as e:
        functx.jit(f)(x, np.ones(3, np.float32))
    where = line_of(-1)
    for part in [
        "jit(f): argument leafs on different devices",
        "argument leaf 1 f32[3] is on CpuDevice(id=0)",
        where,
    ]:
        assert part in str(e.value), (part, str(e.value))
    with pytest.raises(functx.DeviceError, match="backend='cpu'"):
        functx.jit(f, backend="cpu")(x, 1.0)
    with pytest.raises(functx.DeviceError, match="backend='triton'"):
        functx.jit(f, backend="triton")(np.ones(3, np.float32), 1.0)
    with pytest.raises(functx.DeviceError, match=r"committed to .* that it closes over"):
        functx.jit(lambda a: a + x)(np.ones(3, np.float32))
    # Python scalars and host constants are fine: constants of the compiled program
    w = np.arange(3, dtype=np.float32)
    assert_close(functx.jit(lambda a: a * w + 1)(x), np.arange(3, dtype=np.float32) + 1)


# --- the default device --------------------------------------------------------------------------
@needs_gpu
def test_default_device_context_and_config():
    with functx.default_device(GPU):
        z, a = fnp.zeros(3), fnp.asarray(np.ones(3, np.float32))
        s = fnp.asarray(2.0)  # a host scalar stays a scalar
        j = functx.jit(lambda: fnp.arange(4) * 2)()
    assert_on(z, GPU)
    assert_on(a, GPU)
    assert_on(j, GPU)
    assert not z.committed and a.committed and s.device is CPU
    assert fnp.zeros(3).device is CPU
    assert_on(fnp.zeros(3, device=GPU), GPU)
    assert fnp.zeros(3, device=GPU).committed
    assert_on(fnp.asarray([1, 2], device=GPU), GPU)
    assert_on(fnp.arange(5.0, device=GPU), GPU)
    try:
        functx.config.update("jax_default_device", GPU)
        assert functx.config.functx_default_device is GPU
        assert_on(fnp.ones((2, 2)), GPU)
        with functx.default_device(CPU):
            assert fnp.ones(2).device is CPU
    finally:
        functx.config.update("functx_default_device", None)
    assert fnp.ones(2).device is CPU
    with pytest.raises(ValueError, match="no option 'jax_no_such_option'"):
        functx.config.update("jax_no_such_option", True)


@needs_gpu
def test_jitted_calls_with_host_scalars_alone_follow_the_default_device():
    """0-d host Arrays have no device: a call with nothing else runs on the default device, also
    when the same jitted function ran them on the CPU before (its dispatch short path for host
    Arrays must not keep them there), and backend='cpu' then refuses as on a first call."""
    x = functx.numpy.asarray(np.float32(3.0))
    f = functx.jit(lambda x: x * 2 + 1)
    cpu_only = functx.jit(lambda x: x + 1, backend="cpu")
    for _ in range(2):
        assert type(f(x)) is functx.Array and type(cpu_only(x)) is functx.Array
    with functx.default_device(GPU):
        for _ in range(2):
            y = f(x)
            assert_on(y, GPU)
            assert_close(y, np.float32(7.0))
            with pytest.raises(functx.DeviceError, match="backend='cpu'"):
                cpu_only(x)
    assert type(f(x)) is functx.Array


@needs_gpu
def test_default_device_from_the_environment(tmp_path):
    code = (
        "import functx, functx.numpy as jnp, numpy as np\n"
        "print(jnp.ones(2).device.platform, jnp.asarray(np.ones(2)).device.platform,"
        " functx.devices('cpu')[0])\n"
    )
    env = _env(FUNCTX_CACHE_DIR=str(tmp_path), FUNCTX_DEFAULT_DEVICE="gpu")
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["gpu", "gpu", "cpu:0"]
