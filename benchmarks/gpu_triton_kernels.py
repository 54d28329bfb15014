"""Generated Triton kernels (functx.lowering.triton) vs torch eager and torch.compile on a CUDA GPU.

Run on the device machine from the repository root: python benchmarks/gpu_triton_kernels.py
"""
import os, sys
sys.path.insert(0, os.getcwd())
import numpy as np, torch, triton
import functx, functx.numpy as fnp, functx.nn as fnn, functx.lax as flax
from functx.transforms import passes
from functx.lowering.triton import compile_triton

dev = "cuda"
def bench(name, f, tf, *shapes, dtype=np.float32, nbytes=None, check=True):
  try:
    _bench(name, f, tf, *shapes, dtype=dtype, nbytes=nbytes, check=check)
  except Exception as e:
    print(f"{name}: FAILED {type(e).__name__}: {str(e)[:800]}", flush=True)

def _bench(name, f, tf, *shapes, dtype=np.float32, nbytes=None, check=True):
    args_np = [np.random.default_rng(0).standard_normal(s).astype(dtype) for s in shapes]
    exe = compile_triton(passes.simplify(functx.make_jaxpr(f)(*args_np)))
    xs = [torch.from_numpy(a).to(dev) for a in args_np]
    out = exe(*xs)
    ref = tf(*xs)
    ref = ref if isinstance(ref, (list, tuple)) else [ref]
    err = max(float((o.double() - r.double()).abs().max() / (r.double().abs().max() + 1e-30)) for o, r in zip(out, ref)) if check else float("nan")
    consts = next(iter(exe._device_consts.values()), [])
    t_fx = triton.testing.do_bench(lambda: exe(*xs), warmup=25, rep=100)
    t_fx_k = triton.testing.do_bench(lambda: exe.module.run([x.reshape(-1) for x in xs], consts, [o.reshape(-1) for o in out]), warmup=25, rep=100)
    t_t = triton.testing.do_bench(lambda: tf(*xs), warmup=25, rep=100)
    tc = torch.compile(tf)
    tc(*xs)
    t_c = triton.testing.do_bench(lambda: tc(*xs), warmup=25, rep=100)
    nb = nbytes or sum(a.nbytes for a in args_np) + sum(o.numel() * o.element_size() for o in out)
    print(f"{name:28s} kernels={exe.kernel_count():2d} relerr={err:.1e}  functx(call)={t_fx*1e3:8.1f}us "
          f"functx(run)={t_fx_k*1e3:8.1f}us ({nb/t_fx_k/1e6:6.0f} GB/s)  torch={t_t*1e3:8.1f}us  torch.compile={t_c*1e3:8.1f}us", flush=True)

N, D = 8192, 1024
bench("softmax 8192x1024", lambda x: fnn.softmax(x, axis=-1), lambda x: torch.softmax(x, -1), (N, D))
def ln(x, g, b):
    m = fnp.mean(x, -1, keepdims=True); v = fnp.mean((x - m) ** 2, -1, keepdims=True)
    return (x - m) / fnp.sqrt(v + 1e-5) * g + b
bench("layer_norm 8192x1024", ln, lambda x, g, b: torch.nn.functional.layer_norm(x, (D,), g, b, 1e-5), (N, D), (D,), (D,))
bench("logsumexp 8192x1024", lambda x: fnn.logsumexp(x, axis=-1), lambda x: torch.logsumexp(x, -1), (N, D))
bench("gelu(tanh) 16M", lambda x: fnn.gelu(x), lambda x: torch.nn.functional.gelu(x, approximate="tanh"), (1 << 24,))
bench("chain 16M", lambda x: fnp.exp(fnp.sin(x) * 2.0 + 1.0) / (1.0 + x * x) - fnp.tanh(x),
      lambda x: torch.exp(torch.sin(x) * 2 + 1) / (1 + x * x) - torch.tanh(x), (1 << 24,))
bench("sum axis0 4096x4096", lambda x: fnp.sum(x, axis=0), lambda x: x.sum(0), (4096, 4096))
bench("cumsum axis1 1024x4096", lambda x: fnp.cumsum(x, axis=1), lambda x: torch.cumsum(x, 1), (1024, 4096))
def linrec(a, b):
    return flax.associative_scan(lambda p, q: (p[0] * q[0], q[0] * p[1] + q[1]), (a * 0.5, b), axis=0)[1]
def linrec_t(a, b):
    a = a * 0.5; h = torch.empty_like(b); prev = torch.zeros_like(b[0])
    for i in range(a.shape[0]):
        prev = a[i] * prev + b[i]; h[i] = prev
    return h
bench("linrec scan 512x4096 (axis0)", linrec, linrec_t, (512, 4096), (512, 4096))
bench("matmul+bias+relu 4096^2", lambda a, w, b: fnp.maximum(a @ w + b, 0.0), lambda a, w, b: torch.relu(a @ w + b), (4096, 4096), (4096, 4096), (4096,), check=True)
bench("sum all 16M (split)", lambda x: fnp.sum(x), lambda x: x.sum(), (1 << 24,))
bench("sum axis0 65536x256 (split)", lambda x: fnp.sum(x, axis=0), lambda x: x.sum(0), (65536, 256))
bench("argmax axis1 4096x4096", lambda x: fnp.argmax(x, axis=1), lambda x: x.argmax(1).int(), (4096, 4096))
bench("scatter-add grad 8192 rows into 1000x256", lambda w, i: functx.grad(lambda w: fnp.sum(w[(fnp.abs(i[:, 0]) * 100).astype(np.int32) % 1000] ** 2))(w),
      lambda w, i: torch.zeros_like(w).index_add_(0, ((i[:, 0].abs() * 100).int() % 1000), 2 * w[((i[:, 0].abs() * 100).int() % 1000)]), (1000, 256), (8192, 1))
