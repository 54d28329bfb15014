"""``functx.experimental.sparse``: JAX's ``jax.experimental.sparse`` for the BCOO format
(batched-coordinate sparse arrays), built from functx's gather, scatter-add, sort and
``dot_general``, so that ``jit``, ``grad`` (in ``data`` and in the dense operands) and ``vmap``
(a BCOO is a pytree of ``data`` and ``indices``) compose with it and both backends run it.

BCSR (``bcsr.py``, a view of BCOO through its row pointers), the older COO, CSR and CSC
matrices (``coo.py``, ``csr.py``), their common base class ``JAXSparse`` and the sparse solvers
of ``linalg`` are here too. A JAX name that functx lacks raises an AttributeError saying so.
"""

from __future__ import annotations

from functx.errors import missing_name_hook as _missing_name_hook

# -- BCSR, COO, CSR, CSC, the base class, the warnings, linalg (sparse36b) --
from functx.experimental.sparse import (  # the submodules, as in JAX
    api as api,
    bcoo as bcoo,
    bcsr as bcsr,
    coo as coo,
    csr as csr,
    linalg as linalg,
    random as random,
    transform as transform,
    util as util,
)
from functx.experimental.sparse._base import JAXSparse as JAXSparse
from functx.experimental.sparse.api import empty as empty, eye as eye, todense as todense
from functx.experimental.sparse.bcoo import (
    BCOO as BCOO,
    bcoo_broadcast_in_dim as bcoo_broadcast_in_dim,
    bcoo_concatenate as bcoo_concatenate,
    bcoo_dot_general as bcoo_dot_general,
    bcoo_dot_general_sampled as bcoo_dot_general_sampled,
    bcoo_dynamic_slice as bcoo_dynamic_slice,
    bcoo_extract as bcoo_extract,
    bcoo_fromdense as bcoo_fromdense,
    bcoo_gather as bcoo_gather,
    bcoo_multiply_dense as bcoo_multiply_dense,
    bcoo_multiply_sparse as bcoo_multiply_sparse,
    bcoo_reduce_sum as bcoo_reduce_sum,
    bcoo_reshape as bcoo_reshape,
    bcoo_rev as bcoo_rev,
    bcoo_slice as bcoo_slice,
    bcoo_sort_indices as bcoo_sort_indices,
    bcoo_squeeze as bcoo_squeeze,
    bcoo_sum_duplicates as bcoo_sum_duplicates,
    bcoo_todense as bcoo_todense,
    bcoo_transpose as bcoo_transpose,
    bcoo_update_layout as bcoo_update_layout,
)
from functx.experimental.sparse.bcsr import (
    BCSR as BCSR,
    bcsr_broadcast_in_dim as bcsr_broadcast_in_dim,
    bcsr_concatenate as bcsr_concatenate,
    bcsr_dot_general as bcsr_dot_general,
    bcsr_extract as bcsr_extract,
    bcsr_fromdense as bcsr_fromdense,
    bcsr_sum_duplicates as bcsr_sum_duplicates,
    bcsr_todense as bcsr_todense,
)
from functx.experimental.sparse.coo import (
    COO as COO,
    coo_fromdense as coo_fromdense,
    coo_matmat as coo_matmat,
    coo_matvec as coo_matvec,
    coo_todense as coo_todense,
)
from functx.experimental.sparse.csr import (
    CSC as CSC,
    CSR as CSR,
    csr_fromdense as csr_fromdense,
    csr_matmat as csr_matmat,
    csr_matvec as csr_matvec,
    csr_todense as csr_todense,
)
from functx.experimental.sparse.random import random_bcoo as random_bcoo
from functx.experimental.sparse.transform import (
    grad as grad,
    jacfwd as jacfwd,
    jacobian as jacobian,
    jacrev as jacrev,
    sparsify as sparsify,
    value_and_grad as value_and_grad,
)
from functx.experimental.sparse.util import (
    CuSparseEfficiencyWarning as CuSparseEfficiencyWarning,
    SparseEfficiencyError as SparseEfficiencyError,
    SparseEfficiencyWarning as SparseEfficiencyWarning,
)

# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "BCOO",
    "bcoo_dot_general",
    "bcoo_extract",
    "bcoo_fromdense",
    "bcoo_multiply_dense",
    "bcoo_reduce_sum",
    "bcoo_sort_indices",
    "bcoo_sum_duplicates",
    "bcoo_todense",
    "bcoo_transpose",
    "empty",
    "eye",
    "todense",
    # sparse36b
    "BCSR",
    "COO",
    "CSC",
    "CSR",
    "CuSparseEfficiencyWarning",
    "JAXSparse",
    "SparseEfficiencyError",
    "SparseEfficiencyWarning",
    "api",
    "bcoo",
    "bcsr",
    "bcsr_broadcast_in_dim",
    "bcsr_concatenate",
    "bcsr_dot_general",
    "bcsr_extract",
    "bcsr_fromdense",
    "bcsr_sum_duplicates",
    "bcsr_todense",
    "coo",
    "coo_fromdense",
    "coo_matmat",
    "coo_matvec",
    "coo_todense",
    "csr",
    "csr_fromdense",
    "csr_matmat",
    "csr_matvec",
    "csr_todense",
    "linalg",
    "util",
    # (sparse36a)
    "bcoo_broadcast_in_dim",
    "bcoo_concatenate",
    "bcoo_dot_general_sampled",
    "bcoo_dynamic_slice",
    "bcoo_gather",
    "bcoo_multiply_sparse",
    "bcoo_reshape",
    "bcoo_rev",
    "bcoo_slice",
    "bcoo_squeeze",
    "bcoo_update_layout",
    "grad",
    "jacfwd",
    "jacobian",
    "jacrev",
    "random_bcoo",
    "sparsify",
    "value_and_grad",
    "random",
    "transform",
]
