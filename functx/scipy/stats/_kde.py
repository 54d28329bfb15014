"""``functx.scipy.stats.gaussian_kde``: kernel density estimation with Gaussian kernels, a
pytree (its arrays are the leaves) so that it passes through ``jit`` and ``vmap``."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp, random
from functx.errors import FunctxValueError, UnsupportedError
from functx.numpy import _core
from functx.scipy import linalg, special
from functx.transforms.vmap import vmap as _vmap
from functx.tree_util import register_pytree_node_class

_LEAVES = ("neff", "dataset", "weights", "covariance", "inv_cov")


def _array(x):
    return x if hasattr(x, "aval") else jnp.asarray(x)


def _bandwidth(kde, bw_method):
    """The bandwidth factor: Scott's or Silverman's rule of thumb, a scalar, or a callable of
    the estimator."""
    d = kde.d
    if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
        return kde.neff ** (-1.0 / (d + 4))
    if isinstance(bw_method, str) and bw_method == "silverman":
        return (kde.neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
    if jnp.isscalar(bw_method) and not isinstance(bw_method, str):
        return bw_method
    if callable(bw_method):
        return bw_method(kde)
    raise FunctxValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")


@register_pytree_node_class
class gaussian_kde:  # noqa: N801 (JAX's and SciPy's name)
    """A Gaussian kernel density estimate, like ``jax.scipy.stats.gaussian_kde``.

    Arguments:
      dataset: the samples, ``(d, n)`` (or ``(n,)`` for one dimension); real.
      bw_method: the bandwidth factor: ``'scott'`` (the default), ``'silverman'``, a scalar, or a
        callable taking the estimator (its ``dataset``, ``weights``, ``neff``, ``d``, ``n``).
      weights: the samples' weights, ``(n,)`` (default: equal), normalized to sum to 1.

    Returns:
      The estimator: ``evaluate``/``pdf``/``__call__``, ``logpdf``, ``integrate_gaussian``,
      ``integrate_box_1d``, ``integrate_kde`` and ``resample``; attributes ``dataset``,
      ``weights``, ``neff``, ``covariance``, ``inv_cov``, ``d`` and ``n``.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.stats import gaussian_kde
      >>> kde = gaussian_kde(jnp.array([0.0, 1.0, 1.5, 3.0]))
      >>> print(kde.pdf(jnp.array([1.0, 5.0])))
      [0.26851976 0.0114651 ]
    """

    __slots__ = _LEAVES

    def __init__(self, dataset, bw_method=None, weights=None):
        dataset = jnp.atleast_2d(_array(dataset))
        if dataset.dtype.kind == "c":
            raise UnsupportedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise FunctxValueError("`dataset` input should have multiple elements.")
        d, n = dataset.shape
        if weights is None:
            (dataset,) = _core._promote_only(dataset, kind="inexact")
            weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
        else:
            dataset, weights = _core._promote_only(dataset, _array(weights), kind="inexact")
            weights = jnp.atleast_1d(weights)
            weights = weights / jnp.sum(weights)
            if weights.ndim != 1:
                raise FunctxValueError("`weights` input should be one-dimensional.")
            if len(weights) != n:
                raise FunctxValueError("`weights` input should be of length n")
        self._set(dataset=dataset, weights=weights, neff=1 / jnp.sum(weights**2))
        factor = _bandwidth(self, bw_method)
        cov = jnp.atleast_2d(jnp.cov(dataset, rowvar=1, bias=False, aweights=weights))
        self._set(covariance=cov * factor**2, inv_cov=jnp.linalg.inv(cov) / factor**2)

    def _set(self, **leaves):
        for name, value in leaves.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"gaussian_kde is immutable: cannot set {name!r}")

    def tree_flatten(self):
        """The five arrays (``neff``, ``dataset``, ``weights``, ``covariance``, ``inv_cov``)."""
        return tuple(getattr(self, k) for k in _LEAVES), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        """The estimator from ``tree_flatten``'s arrays."""
        del aux_data
        kde = cls.__new__(cls)
        kde._set(**dict(zip(_LEAVES, children)))
        return kde

    @property
    def d(self):
        """The number of dimensions."""
        return self.dataset.shape[0]

    @property
    def n(self):
        """The number of samples."""
        return self.dataset.shape[1]

    def _points(self, points):
        """``points`` as ``(d, m)``: a row of ``d`` numbers is one point."""
        points = _array(points)
        if points.dtype.kind == "c":
            raise UnsupportedError("gaussian_kde does not support complex coordinates")
        points = jnp.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return jnp.reshape(points, (self.d, 1))
            raise FunctxValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points

    def _log_kernels(self, points):
        """``(m, n)``: the log of each sample's weighted kernel at each point."""
        data, weights, x, prec = _core._promote_only(
            self.dataset, self.weights, self._points(points), self.inv_cov, kind="inexact"
        )
        white = jnp.linalg.cholesky(prec)  # prec = white @ white.T
        data, x = data.T @ white, x.T @ white
        log_norm = jnp.sum(jnp.log(jnp.diagonal(white))) - 0.5 * self.d * np.log(2 * np.pi)
        dist2 = jnp.sum((x[:, None, :] - data[None, :, :]) ** 2, axis=-1)
        return jnp.log(weights) + log_norm - 0.5 * dist2

    def evaluate(self, points):
        """The estimated density at ``points``.

        Arguments:
          points: ``(d, m)`` points (or ``(m,)`` in one dimension, or one ``(d,)`` point).

        Returns:
          The densities, ``(m,)``.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.stats import gaussian_kde
          >>> print(gaussian_kde(jnp.array([0.0, 2.0])).evaluate(jnp.array([1.0])))
          [0.23299]
        """
        return jnp.sum(jnp.exp(self._log_kernels(points)), axis=1)

    def __call__(self, points):
        """``evaluate(points)``."""
        return self.evaluate(points)

    def pdf(self, x):
        """The estimated density, as ``evaluate``.

        Arguments:
          x: ``(d, m)`` points.

        Returns:
          The densities, ``(m,)``.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.stats import gaussian_kde
          >>> print(gaussian_kde(jnp.array([0.0, 2.0])).pdf(jnp.array([1.0])))
          [0.23299]
        """
        return self.evaluate(x)

    def logpdf(self, x):
        """The log of the estimated density (by ``logsumexp``: finite far from the samples).

        Arguments:
          x: ``(d, m)`` points.

        Returns:
          The log densities, ``(m,)``.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.stats import gaussian_kde
          >>> print(gaussian_kde(jnp.array([0.0, 2.0])).logpdf(jnp.array([1.0, 60.0])))
          [   -1.4567597 -1111.5264   ]
        """
        return special.logsumexp(self._log_kernels(x), axis=1)

    def _convolve(self, chol, dataset, weights, mean):
        """The weighted sum of Gaussians of covariance ``chol``'s matrix, centred on ``dataset``'s
        columns, at ``mean``."""
        diff = dataset - mean[:, None]
        quad = jnp.sum(diff * linalg.cho_solve(chol, diff), axis=0)
        norm = float(np.sqrt(2 * np.pi)) ** self.d * jnp.prod(jnp.diagonal(chol[0]))
        return jnp.sum(jnp.exp(-0.5 * quad) * weights) / norm

    def integrate_gaussian(self, mean, cov):
        """The integral of the estimate times a Gaussian.

        Arguments:
          mean: the Gaussian's mean, ``(d,)``.
          cov: its covariance, ``(d, d)``.

        Returns:
          The integral, a scalar.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.stats import gaussian_kde
          >>> kde = gaussian_kde(jnp.array([0.0, 2.0]))
          >>> print(kde.integrate_gaussian(jnp.array([1.0]), jnp.array([[1.0]])))
          0.2061878
        """
        mean = jnp.atleast_1d(jnp.squeeze(_array(mean)))
        cov = jnp.atleast_2d(_array(cov))
        if mean.shape != (self.d,):
            raise FunctxValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise FunctxValueError(f"covariance does not have dimension {self.d}")
        chol = linalg.cho_factor(self.covariance + cov)
        return self._convolve(chol, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low, high):
        """The probability mass of a one-dimensional estimate between two bounds.

        Arguments:
          low: the lower bound, a scalar.
          high: the upper bound, a scalar.

        Returns:
          The mass, a scalar.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.stats import gaussian_kde
          >>> print(gaussian_kde(jnp.array([0.0, 2.0])).integrate_box_1d(-1.0, 1.0))
          0.39213338
        """
        if self.d != 1:
            raise FunctxValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise FunctxValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = jnp.squeeze(jnp.sqrt(self.covariance))
        lo = jnp.squeeze((low - self.dataset) / sigma)
        hi = jnp.squeeze((high - self.dataset) / sigma)
        return jnp.sum(self.weights * (special.ndtr(hi) - special.ndtr(lo)))

    def integrate_kde(self, other):
        """The integral of the product of two estimates.

        Arguments:
          other: a ``gaussian_kde`` of the same dimension.

        Returns:
          The integral, a scalar.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.stats import gaussian_kde
          >>> kde = gaussian_kde(jnp.array([0.0, 2.0]))
          >>> print(kde.integrate_kde(gaussian_kde(jnp.array([1.0, 1.5, 3.0]))))
          0.18193181
        """
        if other.d != self.d:
            raise FunctxValueError("KDEs are not the same dimensionality")
        chol = linalg.cho_factor(self.covariance + other.covariance)
        small, large = (self, other) if self.n < other.n else (other, self)
        each = _vmap(
            lambda mean: self._convolve(chol, large.dataset, large.weights, mean), in_axes=1
        )(small.dataset)
        return jnp.sum(each * small.weights)

    def resample(self, key, shape=()):
        """Random samples from the estimate: a sample's point plus Gaussian noise of the
        kernel's covariance (the same keys give JAX's samples).

        Arguments:
          key: a PRNG key.
          shape: the batch shape of the samples.

        Returns:
          The samples, ``(d, *shape)``.

        Example:
          >>> import functx
          >>> import functx.numpy as jnp
          >>> from functx.scipy.stats import gaussian_kde
          >>> kde = gaussian_kde(jnp.array([0.0, 2.0]))
          >>> kde.resample(functx.random.key(0), (3,)).shape
          (1, 3)
        """
        ind_key, eps_key = random.split(key)
        ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
        eps = random.multivariate_normal(
            eps_key,
            jnp.zeros(self.d, self.covariance.dtype),
            self.covariance,
            shape=shape,
            dtype=self.dataset.dtype,
        ).T
        return self.dataset[:, ind] + eps

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        """Not supported, as in JAX: only one-dimensional boxes (``integrate_box_1d``).

        Arguments:
          low_bounds, high_bounds, maxpts: SciPy's arguments.

        Returns:
          Nothing: raises NotImplementedError.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.stats import gaussian_kde
          >>> gaussian_kde(jnp.array([0.0, 2.0])).integrate_box([0.0], [1.0])
          Traceback (most recent call last):
          ...
          functx.errors.UnsupportedError: only 1D box integrations are supported; ...
        """
        del low_bounds, high_bounds, maxpts
        raise UnsupportedError("only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        """Not supported, as in JAX (the estimator is immutable): make a new one.

        Arguments:
          bw_method: SciPy's argument.

        Returns:
          Nothing: raises NotImplementedError.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.stats import gaussian_kde
          >>> gaussian_kde(jnp.array([0.0, 2.0])).set_bandwidth("silverman")
          Traceback (most recent call last):
          ...
          functx.errors.UnsupportedError: dynamically changing the bandwidth method is not supported
        """
        del bw_method
        raise UnsupportedError("dynamically changing the bandwidth method is not supported")
