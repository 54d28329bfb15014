"""``functx.scipy.spatial.transform``: JAX's ``jax.scipy.spatial.transform``: ``Rotation`` and
``Slerp``.

A ``Rotation`` holds unit quaternions ``(x, y, z, w)`` (scalar last) along its last axis; every
conversion works on the components ``q[..., i]`` with NumPy broadcasting over the leading axes, so
one formula serves a single rotation and a stack. Both classes are NamedTuples, hence pytrees:
they pass through ``jit`` and ``vmap`` and are differentiable.
"""

from __future__ import annotations

import re
import typing

import numpy as np

from functx import numpy as jnp
from functx.errors import (
    FunctxTypeError,
    FunctxValueError,
    UnsupportedError,
    missing_name_hook as _missing_name_hook,
)

_AXES = {"x": 0, "y": 1, "z": 2}


def _parse_seq(seq, lengths):
    """Euler axes ``seq`` -> (axis indices, intrinsic?), with JAX's checks and messages."""
    if len(seq) not in lengths:
        if lengths == (3,):
            raise FunctxValueError(f"Expected 3 axes, got {seq}.")
        raise FunctxValueError(
            f"Expected axis specification to be a non-empty string of upto 3 characters, got {seq}"
        )
    intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
    if not (intrinsic or re.match(r"^[xyz]{1,3}$", seq)):
        raise FunctxValueError(
            f"Expected axes from `seq` to be from ['x', 'y', 'z'] or ['X', 'Y', 'Z'], got {seq}"
        )
    if any(a == b for a, b in zip(seq, seq[1:])):
        raise FunctxValueError(f"Expected consecutive axes to be different, got {seq}")
    return [_AXES[a] for a in seq.lower()], intrinsic


def _parts(q):
    return [q[..., i] for i in range(q.shape[-1])]


def _norm(v):
    return jnp.sqrt(jnp.sum(v * v, axis=-1))


def _normalize(q):
    return q / _norm(q)[..., None]


def _compose(p, q):
    """The quaternion product p q (apply q, then p)."""
    px, py, pz, pw = _parts(p)
    qx, qy, qz, qw = _parts(q)
    return jnp.stack(
        [
            pw * qx + qw * px + py * qz - pz * qy,
            pw * qy + qw * py + pz * qx - px * qz,
            pw * qz + qw * pz + px * qy - py * qx,
            pw * qw - px * qx - py * qy - pz * qz,
        ],
        axis=-1,
    )


def _elementary(axis, angle):
    """The quaternion of a rotation by ``angle`` about basis axis ``axis``."""
    zero = jnp.zeros_like(angle)
    half = angle / 2.0
    parts = [zero, zero, zero, jnp.cos(half)]
    parts[axis] = jnp.sin(half)
    return jnp.stack(parts, axis=-1)


def _rotvec_scale(angle, small, large):
    """``large(angle)``, or its Taylor series ``small(angle**2)`` for angles up to 1e-3."""
    a2 = angle * angle
    return jnp.where(angle <= 1e-3, small(a2), large(angle))


def _wrap(angles):
    return (angles + np.pi) % (2 * np.pi) - np.pi


def _euler(q, axes, extrinsic):
    """Euler angles about ``axes`` from unit quaternions (Bernardes and Viollet, 2022)."""
    if not extrinsic:
        axes = axes[::-1]
    i, j, k = axes
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    if symmetric:
        a, b, c, d = q[..., 3], q[..., i], q[..., j], q[..., k] * sign
    else:
        a, b = q[..., 3] - q[..., j], q[..., i] + q[..., k] * sign
        c, d = q[..., j] + q[..., 3], q[..., k] * sign - q[..., i]
    middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
    flat = jnp.abs(middle) <= 1e-7
    regular = ~flat & (jnp.abs(middle - np.pi) > 1e-7)
    half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
    # gimbal lock (the middle angle 0 or pi): the third angle is 0 and the first takes it all
    locked = jnp.where(flat, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    first = jnp.where(regular, half_sum - half_diff, locked if extrinsic else 0.0)
    third = jnp.where(regular, half_sum + half_diff, 0.0 if extrinsic else locked)
    if not symmetric:
        third, middle = third * sign, middle - np.pi / 2
    outer = (first, third) if extrinsic else (third, first)
    return _wrap(jnp.stack([outer[0], middle, outer[1]], axis=-1))


def _from_matrix(m):
    """Unit quaternions from rotation matrices, each from its largest of the diagonal and the
    trace (Shepperd's method)."""
    diag = [m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]]
    trace = diag[0] + diag[1] + diag[2]
    candidates = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        q = [None] * 4
        q[i] = 1 - trace + 2 * m[..., i, i]
        q[j] = m[..., j, i] + m[..., i, j]
        q[k] = m[..., k, i] + m[..., i, k]
        q[3] = m[..., k, j] - m[..., j, k]
        candidates.append(jnp.stack(q, axis=-1))
    candidates.append(
        jnp.stack(
            [
                m[..., 2, 1] - m[..., 1, 2],
                m[..., 0, 2] - m[..., 2, 0],
                m[..., 1, 0] - m[..., 0, 1],
                1 + trace,
            ],
            axis=-1,
        )
    )
    choice = jnp.argmax(jnp.stack([*diag, trace], axis=-1), axis=-1)
    picked = candidates[3]
    for i in range(3):
        picked = jnp.where((choice == i)[..., None], candidates[i], picked)
    return _normalize(picked)


def _canonical(q):
    """``q`` or ``-q`` (the same rotation), whichever has w > 0 (ties broken by x, y, z)."""
    neg, zero = q < 0, q == 0
    flip = neg[..., 3]
    rest = zero[..., 3]
    for i in range(3):
        flip = flip | (rest & neg[..., i])
        rest = rest & zero[..., i]
    return jnp.where(flip[..., None], -q, q)


class Rotation(typing.NamedTuple):
    """Rotations in 3-D, as ``jax.scipy.spatial.transform.Rotation``: one (``quat`` of shape
    (4,)) or a stack (``quat`` of shape (N, 4)), held as unit quaternions (x, y, z, w).

    Build one with ``from_quat``, ``from_matrix``, ``from_rotvec``, ``from_mrp``, ``from_euler``,
    ``identity`` or ``concatenate``; read it back with ``as_quat``, ``as_matrix``, ``as_rotvec``,
    ``as_mrp`` or ``as_euler``; ``apply`` rotates vectors, ``r * s`` composes (``s`` first),
    ``inv``, ``magnitude`` and ``mean`` as in SciPy; ``single``, ``len()`` and indexing as in
    JAX. ``random`` raises NotImplementedError, as in JAX.

    Differences from JAX: ``identity(num)`` with a number gives that many identity rotations
    (JAX asserts ``num is None``).

    Example:
      >>> from functx.scipy.spatial.transform import Rotation
      >>> r = Rotation.from_euler("z", 90, degrees=True)
      >>> print(r.as_matrix().round(3))
      [[ 0. -1.  0.]
       [ 1.  0.  0.]
       [ 0.  0.  1.]]
      >>> print((r * Rotation.from_euler("x", 90, degrees=True)).as_matrix().round(3))
      [[0. 0. 1.]
       [1. 0. 0.]
       [0. 1. 0.]]
    """

    quat: typing.Any

    @classmethod
    def concatenate(cls, rotations: typing.Sequence):
        """Stacks a sequence of ``Rotation`` stacks into one.

        Arguments:
          rotations: ``Rotation`` objects, each a stack (quat of shape (N, 4)).

        Returns:
          a ``Rotation`` holding all of them, in order.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.spatial.transform import Rotation
          >>> r = Rotation.from_rotvec(jnp.array([[0.0, 0.0, 1.0]]))
          >>> print(len(Rotation.concatenate([r, r])))
          2
        """
        return cls(jnp.concatenate([r.quat for r in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles, degrees: bool = False):
        """A rotation from Euler angles about 1 to 3 axes.

        Arguments:
          seq: the axes, ``'xyz'``-style for extrinsic rotations (about the fixed frame) or
            ``'XYZ'``-style for intrinsic ones (about the rotating frame); no axis twice in a row.
          angles: the angles, last axis of length ``len(seq)`` (a scalar for one axis).
          degrees: whether the angles are in degrees (default radians).

        Returns:
          a ``Rotation`` (a stack when ``angles`` has leading axes).

        Example:
          >>> from functx.scipy.spatial.transform import Rotation
          >>> print(Rotation.from_euler("xy", [90.0, 90.0], degrees=True).as_quat().round(3))
          [ 0.5  0.5 -0.5  0.5]
        """
        axes, intrinsic = _parse_seq(seq, (1, 2, 3))
        angles = jnp.atleast_1d(jnp.asarray(angles))
        if not jnp.issubdtype(angles.dtype, jnp.inexact):
            angles = angles.astype(jnp.asarray(1.0).dtype)
        if angles.shape[-1] != len(axes):
            raise FunctxValueError(
                f"Expected angles of last dimension {len(axes)} for seq {seq!r}, "
                f"got shape {angles.shape}"
            )
        if degrees:
            angles = jnp.deg2rad(angles)
        q = _elementary(axes[0], angles[..., 0])
        for n, axis in enumerate(axes[1:], 1):
            step = _elementary(axis, angles[..., n])
            q = _compose(q, step) if intrinsic else _compose(step, q)
        return cls(q)

    @classmethod
    def from_matrix(cls, matrix):
        """A rotation from rotation matrices (the nearest for matrices only close to one).

        Arguments:
          matrix: (3, 3) or (N, 3, 3).

        Returns:
          a ``Rotation``.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.spatial.transform import Rotation
          >>> m = jnp.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
          >>> print(Rotation.from_matrix(m).as_rotvec().round(4))
          [0.     0.     1.5708]
        """
        return cls(_from_matrix(jnp.asarray(matrix)))

    @classmethod
    def from_mrp(cls, mrp):
        """A rotation from modified Rodrigues parameters (the axis times tan(angle / 4)).

        Arguments:
          mrp: (3,) or (N, 3).

        Returns:
          a ``Rotation``.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.spatial.transform import Rotation
          >>> r = Rotation.from_mrp(jnp.array([0.0, 0.0, 0.5]))
          >>> print(r.as_euler("xyz", degrees=True).round(3))
          [  0.      0.    106.26]
        """
        mrp = jnp.asarray(mrp)
        sq1 = jnp.sum(mrp * mrp, axis=-1, keepdims=True) + 1
        return cls(jnp.concatenate([2 * mrp, 2 - sq1], axis=-1) / sq1)

    @classmethod
    def from_quat(cls, quat):
        """A rotation from quaternions (x, y, z, w), normalized.

        Arguments:
          quat: (4,) or (N, 4), scalar last.

        Returns:
          a ``Rotation``.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.spatial.transform import Rotation
          >>> print(Rotation.from_quat(jnp.array([0.0, 0.0, 2.0, 2.0])).as_quat().round(4))
          [0.     0.     0.7071 0.7071]
        """
        return cls(_normalize(jnp.asarray(quat)))

    @classmethod
    def from_rotvec(cls, rotvec, degrees: bool = False):
        """A rotation from rotation vectors (the axis times the angle).

        Arguments:
          rotvec: (3,) or (N, 3).
          degrees: whether the angles are in degrees (default radians).

        Returns:
          a ``Rotation``.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.spatial.transform import Rotation
          >>> r = Rotation.from_rotvec(jnp.array([0.0, 90.0, 0.0]), degrees=True)
          >>> print(r.as_quat().round(4))
          [0.     0.7071 0.     0.7071]
        """
        rotvec = jnp.asarray(rotvec)
        if degrees:
            rotvec = jnp.deg2rad(rotvec)
        angle = _norm(rotvec)
        scale = _rotvec_scale(
            angle, lambda a2: 0.5 - a2 / 48 + a2 * a2 / 3840, lambda a: jnp.sin(a / 2) / a
        )
        return cls(jnp.concatenate([scale[..., None] * rotvec, jnp.cos(angle / 2)[..., None]], -1))

    @classmethod
    def identity(cls, num: int | None = None, dtype=float):
        """The identity rotation, or ``num`` of them.

        Arguments:
          num: None for one rotation, or the number of rotations in a stack.
          dtype: the quaternion's dtype (default float: float32 under x64 off).

        Returns:
          a ``Rotation``.

        Example:
          >>> from functx.scipy.spatial.transform import Rotation
          >>> print(Rotation.identity().as_quat())
          [0. 0. 0. 1.]
        """
        quat = jnp.array([0.0, 0.0, 0.0, 1.0], dtype=dtype)
        return cls(quat if num is None else jnp.tile(quat, (num, 1)))

    @classmethod
    def random(cls, random_key, num: int | None = None):
        """Not implemented, as in JAX (raises NotImplementedError).

        Arguments:
          random_key: a PRNG key.
          num: the number of rotations.

        Returns:
          nothing: it raises.

        Example:
          >>> import functx
          >>> from functx.scipy.spatial.transform import Rotation
          >>> Rotation.random(functx.random.key(0))
          Traceback (most recent call last):
          ...
          functx.errors.UnsupportedError: Rotation.random is not implemented (as in JAX)
        """
        raise UnsupportedError("Rotation.random is not implemented (as in JAX)")

    def __getitem__(self, indexer):
        if self.single:
            raise FunctxTypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self):
        if self.single:
            raise FunctxTypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other):
        return Rotation.from_quat(_compose(self.quat, other.quat))

    def apply(self, vectors, inverse: bool = False):
        """Rotates vectors (by the inverse rotation with ``inverse=True``).

        Arguments:
          vectors: (3,) or (N, 3), broadcast against the rotations.
          inverse: whether to apply the inverse rotation.

        Returns:
          the rotated vectors.

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.spatial.transform import Rotation
          >>> r = Rotation.from_euler("z", 90, degrees=True)
          >>> print(r.apply(jnp.array([1.0, 0.0, 0.0])).round(4))
          [0. 1. 0.]
        """
        m = self.as_matrix()
        if inverse:
            m = jnp.swapaxes(m, -1, -2)
        return jnp.matmul(m, jnp.asarray(vectors)[..., None])[..., 0]

    def as_euler(self, seq: str, degrees: bool = False):
        """The rotation as Euler angles about three axes.

        Arguments:
          seq: three axes, ``'xyz'``-style (extrinsic) or ``'XYZ'``-style (intrinsic).
          degrees: whether to return degrees (default radians).

        Returns:
          (3,) or (N, 3) angles: the first and third in [-pi, pi), the second in [0, pi] for
          symmetric sequences (``'zxz'``) and [-pi/2, pi/2] otherwise.

        Example:
          >>> from functx.scipy.spatial.transform import Rotation
          >>> r = Rotation.from_euler("zyx", [30.0, 20.0, 10.0], degrees=True)
          >>> print(r.as_euler("zyx", degrees=True).round(3))
          [30. 20. 10.]
        """
        axes, intrinsic = _parse_seq(seq, (3,))
        angles = _euler(self.quat, axes, not intrinsic)
        return jnp.rad2deg(angles) if degrees else angles

    def as_matrix(self):
        """The rotation as rotation matrices.

        Arguments:
          (none)

        Returns:
          (3, 3) or (N, 3, 3).

        Example:
          >>> from functx.scipy.spatial.transform import Rotation
          >>> print(Rotation.from_euler("x", 90, degrees=True).as_matrix().round(3) + 0.0)
          [[ 1.  0.  0.]
           [ 0.  0. -1.]
           [ 0.  1.  0.]]
        """
        x, y, z, w = _parts(self.quat)
        rows = [
            [x * x - y * y - z * z + w * w, 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), -x * x + y * y - z * z + w * w, 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), -x * x - y * y + z * z + w * w],
        ]
        return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)

    def as_mrp(self):
        """The rotation as modified Rodrigues parameters (angle at most pi).

        Arguments:
          (none)

        Returns:
          (3,) or (N, 3).

        Example:
          >>> from functx.scipy.spatial.transform import Rotation
          >>> print(Rotation.from_euler("z", 90, degrees=True).as_mrp().round(4))
          [0.     0.     0.4142]
        """
        w = self.quat[..., 3:]
        sign = jnp.where(w < 0, -1.0, 1.0)
        return sign * self.quat[..., :3] / (1.0 + sign * w)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False):
        """The rotation as unit quaternions.

        Arguments:
          canonical: whether to pick, of ``q`` and ``-q``, the one with w >= 0.
          scalar_first: (w, x, y, z) instead of (x, y, z, w).

        Returns:
          (4,) or (N, 4).

        Example:
          >>> from functx.scipy.spatial.transform import Rotation
          >>> print(Rotation.from_euler("z", 90, degrees=True).as_quat(scalar_first=True).round(4))
          [0.7071 0.     0.     0.7071]
        """
        quat = _canonical(self.quat) if canonical else self.quat
        return jnp.roll(quat, 1, axis=-1) if scalar_first else quat

    def as_rotvec(self, degrees: bool = False):
        """The rotation as rotation vectors (the axis times the angle, at most pi).

        Arguments:
          degrees: whether the length is in degrees (default radians).

        Returns:
          (3,) or (N, 3).

        Example:
          >>> from functx.scipy.spatial.transform import Rotation
          >>> print(Rotation.from_euler("y", 45, degrees=True).as_rotvec(degrees=True).round(3))
          [ 0. 45.  0.]
        """
        q = jnp.where(self.quat[..., 3:] < 0, -self.quat, self.quat)
        angle = 2.0 * jnp.arctan2(_norm(q[..., :3]), q[..., 3])
        scale = _rotvec_scale(
            angle, lambda a2: 2 + a2 / 12 + 7 * a2 * a2 / 2880, lambda a: a / jnp.sin(a / 2)
        )
        if degrees:
            scale = jnp.rad2deg(scale)
        return scale[..., None] * q[..., :3]

    def inv(self):
        """The inverse rotation(s).

        Arguments:
          (none)

        Returns:
          a ``Rotation``.

        Example:
          >>> from functx.scipy.spatial.transform import Rotation
          >>> r = Rotation.from_euler("z", 30, degrees=True).inv()
          >>> print(r.as_euler("xyz", degrees=True).round(3))
          [  0.   0. -30.]
        """
        return Rotation(self.quat * jnp.array([-1, -1, -1, 1], dtype=self.quat.dtype))

    def magnitude(self):
        """The angle of each rotation, in [0, pi].

        Arguments:
          (none)

        Returns:
          a scalar or (N,).

        Example:
          >>> from functx.scipy.spatial.transform import Rotation
          >>> print(Rotation.from_rotvec([0.0, 0.0, 2.0]).magnitude().round(4))
          2.0
        """
        return 2.0 * jnp.arctan2(_norm(self.quat[..., :3]), jnp.abs(self.quat[..., 3]))

    def mean(self, weights=None):
        """The (weighted) mean of a stack of rotations: the quaternion that maximizes the
        weighted sum of squared dot products with the stack's (the top eigenvector of
        sum w q q^T).

        Arguments:
          weights: None (equal weights) or (N,) non-negative weights.

        Returns:
          a single ``Rotation`` (its quaternion's sign is the eigensolver's).

        Example:
          >>> import functx.numpy as jnp
          >>> from functx.scipy.spatial.transform import Rotation
          >>> r = Rotation.from_euler("z", jnp.array([[10.0], [30.0]]), degrees=True)
          >>> print(abs(r.mean().as_euler("xyz", degrees=True)).round(3))
          [ 0.  0. 20.]
        """
        dtype = self.quat.dtype
        w = jnp.ones(self.quat.shape[0], dtype) if weights is None else jnp.asarray(weights, dtype)
        if w.ndim != 1:
            raise FunctxValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
        if w.shape[0] != len(self):
            raise FunctxValueError(
                "Expected `weights` to have number of values equal to number of rotations, "
                f"got {w.shape[0]} values and {len(self)} rotations."
            )
        k = jnp.matmul(w[None, :] * self.quat.T, self.quat)
        return Rotation(jnp.linalg.eigh(k)[1][:, -1])

    @property
    def single(self) -> bool:
        """Whether this holds one rotation (``quat`` of shape (4,)) rather than a stack."""
        return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
    """Spherical linear interpolation between key rotations, as
    ``jax.scipy.spatial.transform.Slerp``: ``Slerp.init(times, rotations)`` from N >= 2 key
    times (increasing) and rotations, then ``slerp(t)`` for a time or a 1-D array of times
    (between the first and last key time) gives the interpolated ``Rotation``.

    Example:
      >>> from functx.scipy.spatial.transform import Rotation, Slerp
      >>> keys = Rotation.from_euler("z", [[0.0], [90.0]], degrees=True)
      >>> slerp = Slerp.init([0.0, 1.0], keys)
      >>> print(slerp([0.0, 0.5, 1.0]).as_euler("xyz", degrees=True)[:, 2].round(3))
      [ 0. 45. 90.]
    """

    times: typing.Any
    timedelta: typing.Any
    rotations: Rotation
    rotvecs: typing.Any

    @classmethod
    def init(cls, times, rotations: Rotation):
        """The interpolator through ``rotations`` at ``times``.

        Arguments:
          times: (N,) increasing key times.
          rotations: a ``Rotation`` stack of N >= 2 key rotations.

        Returns:
          a ``Slerp``.

        Example:
          >>> from functx.scipy.spatial.transform import Rotation, Slerp
          >>> keys = Rotation.from_rotvec([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
          >>> slerp = Slerp.init([0.0, 2.0], keys)
          >>> print(slerp(1.0).as_rotvec().round(3))
          [0.5 0.  0. ]
        """
        if not isinstance(rotations, Rotation):
            raise FunctxTypeError("`rotations` must be a `Rotation` instance.")
        if rotations.single or len(rotations) == 1:
            raise FunctxValueError("`rotations` must be a sequence of at least 2 rotations.")
        times = jnp.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise FunctxValueError(
                f"Expected times to be specified in a 1 dimensional array, got {times.ndim} "
                "dimensions."
            )
        if times.shape[0] != len(rotations):
            raise FunctxValueError(
                "Expected number of rotations to be equal to number of timestamps given, got "
                f"{len(rotations)} rotations and {times.shape[0]} timestamps."
            )
        start, end = Rotation(rotations.quat[:-1]), Rotation(rotations.quat[1:])
        return cls(times, jnp.diff(times), start, (start.inv() * end).as_rotvec())

    def __call__(self, times):
        t = jnp.asarray(times, dtype=self.times.dtype)
        if t.ndim > 1:
            raise FunctxValueError("`times` must be at most 1-dimensional.")
        single = t.ndim == 0
        t = jnp.atleast_1d(t)
        i = jnp.maximum(jnp.searchsorted(self.times, t) - 1, 0)
        frac = (t - self.times[i]) / self.timedelta[i]
        out = self.rotations[i] * Rotation.from_rotvec(self.rotvecs[i] * frac[:, None])
        return out[0] if single else out


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["Rotation", "Slerp"]
