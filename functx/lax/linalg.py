"""``functx.lax.linalg``: JAX's ``jax.lax.linalg`` names (a re-export surface).

The primitives and all their rules live in ``functx/control/linalg.py``; this module names what is
public, each name once, so that the namespace holds JAX's names only.
"""

from functx._qdwh import qdwh as qdwh
from functx.control.linalg import (
    EighImplementation as EighImplementation,
    EigImplementation as EigImplementation,
    SvdAlgorithm as SvdAlgorithm,
    cholesky as cholesky,
    cholesky_p as cholesky_p,
    cholesky_update as cholesky_update,
    eig as eig,
    eig_p as eig_p,
    eigh as eigh,
    eigh_p as eigh_p,
    hessenberg as hessenberg,
    hessenberg_p as hessenberg_p,
    householder_product as householder_product,
    householder_product_p as householder_product_p,
    lu as lu,
    lu_p as lu_p,
    lu_pivots_to_permutation as lu_pivots_to_permutation,
    lu_pivots_to_permutation_p as lu_pivots_to_permutation_p,
    ormqr as ormqr,
    qr as qr,
    qr_p as qr_p,
    schur as schur,
    schur_p as schur_p,
    svd as svd,
    svd_p as svd_p,
    symmetric_product as symmetric_product,
    triangular_solve as triangular_solve,
    triangular_solve_p as triangular_solve_p,
    tridiagonal as tridiagonal,
    tridiagonal_p as tridiagonal_p,
    tridiagonal_solve as tridiagonal_solve,
    tridiagonal_solve_p as tridiagonal_solve_p,
)
from functx.errors import missing_name_hook as _missing_name_hook

# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "EigImplementation",
    "EighImplementation",
    "SvdAlgorithm",
    "cholesky",
    "cholesky_p",
    "cholesky_update",
    "eig",
    "eig_p",
    "eigh",
    "eigh_p",
    "hessenberg",
    "hessenberg_p",
    "householder_product",
    "householder_product_p",
    "lu",
    "lu_p",
    "lu_pivots_to_permutation",
    "lu_pivots_to_permutation_p",
    "ormqr",
    "qdwh",
    "qr",
    "qr_p",
    "schur",
    "schur_p",
    "svd",
    "svd_p",
    "symmetric_product",
    "triangular_solve",
    "triangular_solve_p",
    "tridiagonal",
    "tridiagonal_p",
    "tridiagonal_solve",
    "tridiagonal_solve_p",
]
