"""Higher-order primitives: each file holds one primitive (or a family) with ALL its rules (shape
inference, eager implementation, jvp, partial evaluation, transpose, batching, and its lowering to
the loop IR), registered into the tables of ``functx.primitives``, ``functx.transforms`` and
``functx.lowering.rules``.

* ``common.py``: what cond, scan and while share (tracing a function into a consts-free Jaxpr, jvp,
  transpose and batching of such a Jaxpr, their lowering to a loop over compiled sub-programs).
* ``cond.py``: ``cond`` and ``switch`` (the ``cond`` primitive).
* ``scan.py``: ``scan`` and ``map`` (the ``scan`` primitive).
* ``while_loop.py``: ``while_loop`` and ``fori_loop`` (the ``while`` primitive; ``fori_loop`` with
  static bounds is a ``scan``).
* ``associative_scan.py``: ``associative_scan`` and the cumulative reductions built on it
  (``cumsum``, ``cumprod``, ``cummax``, ``cummin``, ``cumlogsumexp``); ``reduce_prod``'s jvp, which
  uses ``cumprod``.
* ``generic_reduce.py``: ``lax.reduce`` with a user-supplied combine (the ``reduce`` primitive).
* ``threefry.py``: the ``threefry2x32`` hash under ``functx.random`` (not higher-order, but a
  primitive with all its rules, its lowering included, in one file).
* ``sort.py``: ``sort`` and ``top_k`` (``lax.sort``, ``sort_key_val``, ``top_k``), not
  higher-order, with all their rules and their lowering to ``sort`` kernels.
* ``custom_derivatives.py``: ``custom_jvp`` and ``custom_vjp`` (``custom_jvp_call``,
  ``custom_vjp_call``, ``custom_lin``) and their batching.
* ``fft.py``: the ``fft`` primitive (``lax.fft``: FFT, IFFT, RFFT, IRFFT), pocketfft eagerly and
  a library step under ``jit``.

* ``collectives.py``: the named-axis collectives (``psum``, ``all_gather``, ``ppermute``,
  ``axis_index``, ...) over axes bound by ``vmap(axis_name=)`` or ``shard_map``, the axis
  environment they read, and their host steps under ``jit``.

* ``callbacks.py``: host callbacks (``debug_callback``, ``pure_callback``), run eagerly, under
  every transform, and as host steps of compiled programs.

* ``check.py``: the ``check`` primitive of ``functx.experimental.checkify`` (a runtime check
  that raises eagerly; ``checkify`` turns it into an error value) and its error kinds.

* ``betainc.py``: ``lax.betainc`` (a composite of a ``while_loop`` with JAX's custom
  derivative).

* ``linalg.py``: the dense linear algebra primitives (``functx.lax.linalg``): cholesky,
  triangular_solve, lu, eigh, qr, svd, run by LAPACK eagerly and as library steps under ``jit``.

* ``remat.py``: ``checkpoint``/``remat`` (the ``checkpoint`` primitive: policies decide what the
  backward pass keeps; the rest is recomputed) and ``checkpoint_name`` (the ``name`` primitive).

Importing the package imports every file, so every rule is registered. The public names are
re-exported by ``functx.lax`` and ``functx`` (``custom_jvp``, ``custom_vjp``).
"""

from functx.control import (
    associative_scan as associative_scan,
    betainc as betainc,
    callbacks as callbacks,
    check as check,
    collectives as collectives,
    cond as cond,
    custom_derivatives as custom_derivatives,
    fft as fft,
    generic_reduce as generic_reduce,
    linalg as linalg,
    remat as remat,
    scan as scan,
    sort as sort,
    threefry as threefry,
    while_loop as while_loop,
)
