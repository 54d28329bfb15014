"""``functx.scipy.stats``: ``jax.scipy.stats``' distributions, as composites of functx's
functions (``from functx.scipy.stats import norm; norm.logpdf(x)``).

Each distribution is a module with JAX's functions and signatures. Not yet: the CDFs of
``gamma``, ``beta``, ``chi2`` and ``poisson`` (they need the regularized incomplete gamma and
beta functions), ``poisson.entropy``, and ``multivariate_normal``
(it needs a Cholesky factorization: functx has no linear algebra decompositions yet).
"""

from functx.errors import missing_name_hook as _missing_name_hook
from functx.scipy.stats import (
    bernoulli as bernoulli,
    beta as beta,
    binom as binom,
    cauchy as cauchy,
    chi2 as chi2,
    dirichlet as dirichlet,
    expon as expon,
    gamma as gamma,
    geom as geom,
    laplace as laplace,
    logistic as logistic,
    norm as norm,
    poisson as poisson,
    t as t,
    uniform as uniform,
)

# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "bernoulli",
    "beta",
    "binom",
    "cauchy",
    "chi2",
    "dirichlet",
    "expon",
    "gamma",
    "geom",
    "laplace",
    "logistic",
    "norm",
    "poisson",
    "t",
    "uniform",
]
