"""``functx.scipy.stats``: ``jax.scipy.stats``' distributions, as composites of functx's
functions (``from functx.scipy.stats import norm; norm.logpdf(x)``).

Each distribution is a module with JAX's functions and signatures; ``sem``, ``rankdata``,
``mode`` and ``gaussian_kde`` are here too.
"""

from functx.errors import missing_name_hook as _missing_name_hook
from functx.scipy.stats import (
    bernoulli as bernoulli,
    beta as beta,
    betabinom as betabinom,
    binom as binom,
    cauchy as cauchy,
    chi2 as chi2,
    dirichlet as dirichlet,
    expon as expon,
    gamma as gamma,
    gennorm as gennorm,
    geom as geom,
    gumbel_l as gumbel_l,
    gumbel_r as gumbel_r,
    laplace as laplace,
    logistic as logistic,
    multinomial as multinomial,
    multivariate_normal as multivariate_normal,
    nbinom as nbinom,
    norm as norm,
    pareto as pareto,
    poisson as poisson,
    t as t,
    truncnorm as truncnorm,
    uniform as uniform,
    vonmises as vonmises,
    wrapcauchy as wrapcauchy,
)
from functx.scipy.stats._kde import gaussian_kde as gaussian_kde
from functx.scipy.stats._summary import mode as mode, rankdata as rankdata, sem as sem

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
    "multivariate_normal",
    "norm",
    "poisson",
    "t",
    "uniform",
    "gumbel_l",
    "gumbel_r",
    "pareto",
    "betabinom",
    "gennorm",
    "multinomial",
    "nbinom",
    "truncnorm",
    "vonmises",
    "wrapcauchy",
    "mode",
    "rankdata",
    "sem",
    "gaussian_kde",
]
