"""3-D rotations as unit quaternions (x, y, z, w), and spherical linear interpolation.

`Rotation` and `Slerp` are NamedTuples, so they are pytrees that pass through jit and vmap.
The per-quaternion helpers are vectorized over leading axes (a batch of rotations is a quat
array [n, 4]).
"""
from __future__ import annotations

import functools
import re
import typing

import numpy as np

from arrax._src.numpy import (assembly, creation, lax_numpy, reductions, searching, statistics,
                              ufuncs)
from arrax._src.numpy import linalg as jnp_linalg
from arrax._src.numpy.vectorize import vectorize


def _vec(signature):
  return functools.partial(vectorize, signature=signature)


@_vec("(n)->()")
def _norm(v):
  return ufuncs.sqrt(lax_numpy.dot(v, v))


@_vec("(n)->(n)")
def _normalize(q):
  return q / _norm(q)


@_vec("(n),(n)->(n)")
def _compose(p, q):
  """The Hamilton product p q (apply q, then p)."""
  c = jnp_linalg.cross(p[:3], q[:3])
  return creation.array([p[3] * q[0] + q[3] * p[0] + c[0], p[3] * q[1] + q[3] * p[1] + c[1],
                         p[3] * q[2] + q[3] * p[2] + c[2],
                         p[3] * q[3] - p[0] * q[0] - p[1] * q[1] - p[2] * q[2]])


@_vec("(m)->(n,n)")
def _as_matrix(q):
  x, y, z, w = q[0], q[1], q[2], q[3]
  xx, yy, zz, ww = x * x, y * y, z * z, w * w
  return creation.array([[xx - yy - zz + ww, 2 * (x * y - z * w), 2 * (x * z + y * w)],
                         [2 * (x * y + z * w), -xx + yy - zz + ww, 2 * (y * z - x * w)],
                         [2 * (x * z - y * w), 2 * (y * z + x * w), -xx - yy + zz + ww]])


@_vec("(m,m),(m),()->(m)")
def _apply(matrix, vector, inverse):
  return lax_numpy.where(inverse, matrix.T, matrix) @ vector


@_vec("(m)->(n)")
def _as_mrp(q):
  sign = lax_numpy.where(q[3] < 0, -1., 1.)
  return sign * q[:3] / (1. + sign * q[3])


@_vec("(m),()->(n)")
def _as_rotvec(q, degrees):
  q = lax_numpy.where(q[3] < 0, -q, q)   # w >= 0: the angle is in [0, pi]
  angle = 2. * ufuncs.arctan2(_norm(q[:3]), q[3])
  a2 = angle * angle
  # angle / sin(angle / 2), by its Taylor series near 0.
  scale = lax_numpy.where(angle <= 1e-3, 2 + a2 / 12 + 7 * a2 * a2 / 2880,
                          angle / ufuncs.sin(angle / 2))
  scale = lax_numpy.where(degrees, ufuncs.rad2deg(scale), scale)
  return scale * creation.array(q[:3])


@_vec("(m),()->(n)")
def _from_rotvec(rotvec, degrees):
  rotvec = lax_numpy.where(degrees, ufuncs.deg2rad(rotvec), rotvec)
  angle = _norm(rotvec)
  a2 = angle * angle
  scale = lax_numpy.where(angle <= 1e-3, 0.5 - a2 / 48 + a2 * a2 / 3840,
                          ufuncs.sin(angle / 2) / angle)
  return lax_numpy.hstack([scale * rotvec, ufuncs.cos(angle / 2)])


@_vec("(m,m)->(n)")
def _from_matrix(m):
  """Shepperd's method: build the quaternion from its largest component's formula."""
  tr = m[0, 0] + m[1, 1] + m[2, 2]
  cands = creation.array([m[0, 0], m[1, 1], m[2, 2], tr], dtype=m.dtype)
  choice = reductions.argmax(cands)
  i = choice
  j = (i + 1) % 3
  k = (j + 1) % 3
  from_diag = creation.empty(4, dtype=m.dtype)
  from_diag = from_diag.at[i].set(1 - cands[3] + 2 * m[i, i])
  from_diag = from_diag.at[j].set(m[j, i] + m[i, j])
  from_diag = from_diag.at[k].set(m[k, i] + m[i, k])
  from_diag = from_diag.at[3].set(m[k, j] - m[j, k])
  from_trace = creation.array([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1],
                               1 + cands[3]], dtype=m.dtype)
  return _normalize(lax_numpy.where(choice != 3, from_diag, from_trace))


@_vec("(m)->(n)")
def _from_mrp(mrp):
  s = lax_numpy.dot(mrp, mrp) + 1
  return lax_numpy.hstack([2 * mrp[:3], (2 - s)]) / s


@_vec("(n)->(n)")
def _inv(q):
  return q * creation.array([-1, -1, -1, 1], dtype=q.dtype)


@_vec("(n)->()")
def _magnitude(q):
  return 2. * ufuncs.arctan2(_norm(q[:3]), ufuncs.abs(q[3]))


@_vec("(),()->(n)")
def _axis_quat(axis, angle):
  q = creation.zeros(4, dtype=angle.dtype).at[3].set(ufuncs.cos(angle / 2.))
  return q.at[axis].set(ufuncs.sin(angle / 2.))


@_vec("(m),(m),(),()->(n)")
def _compose_axes(angles, axes, intrinsic, degrees):
  angles = lax_numpy.where(degrees, ufuncs.deg2rad(angles), angles)
  out = _axis_quat(axes[0], angles[0])
  for idx in range(1, len(axes)):
    q = _axis_quat(axes[idx], angles[idx])
    out = lax_numpy.where(intrinsic, _compose(out, q), _compose(q, out))
  return out


@_vec("(n)->(n)")
def _canonical(q):
  """q or -q, whichever has w > 0 (ties broken by the first nonzero of x, y, z)."""
  neg, zero = q < 0, q == 0
  flip = (neg[3] | (zero[3] & neg[0]) | (zero[3] & zero[0] & neg[1])
          | (zero[3] & zero[0] & zero[1] & neg[2]))
  return lax_numpy.where(flip, -q, q)


@_vec("(m),(l),(),()->(n)")
def _euler_from_quat(q, axes, extrinsic, degrees):
  """Euler angles by Bernardes & Viollet's (2022) quaternion method."""
  first = lax_numpy.where(extrinsic, 0, 2)
  third = lax_numpy.where(extrinsic, 2, 0)
  axes = lax_numpy.where(extrinsic, axes, axes[::-1])
  i, j, k = axes[0], axes[1], axes[2]
  symmetric = i == k
  k = lax_numpy.where(symmetric, 3 - i - j, k)
  sign = creation.array((i - j) * (j - k) * (k - i) // 2, dtype=q.dtype)
  eps = 1e-7
  a = lax_numpy.where(symmetric, q[3], q[3] - q[j])
  b = lax_numpy.where(symmetric, q[i], q[i] + q[k] * sign)
  c = lax_numpy.where(symmetric, q[j], q[j] + q[3])
  d = lax_numpy.where(symmetric, q[k] * sign, q[k] * sign - q[i])
  angles = creation.empty(3, dtype=q.dtype)
  angles = angles.at[1].set(2 * ufuncs.arctan2(ufuncs.hypot(c, d), ufuncs.hypot(a, b)))
  case = lax_numpy.where(ufuncs.abs(angles[1] - np.pi) <= eps, 2, 0)
  case = lax_numpy.where(ufuncs.abs(angles[1]) <= eps, 1, case)
  half_sum = ufuncs.arctan2(b, a)
  half_diff = ufuncs.arctan2(d, c)
  angles = angles.at[0].set(lax_numpy.where(case == 1, 2 * half_sum,
                                            2 * half_diff * lax_numpy.where(extrinsic, -1, 1)))
  angles = angles.at[first].set(lax_numpy.where(case == 0, half_sum - half_diff, angles[first]))
  angles = angles.at[third].set(lax_numpy.where(case == 0, half_sum + half_diff, angles[third]))
  angles = angles.at[third].set(lax_numpy.where(symmetric, angles[third], angles[third] * sign))
  angles = angles.at[1].set(lax_numpy.where(symmetric, angles[1], angles[1] - np.pi / 2))
  angles = (angles + np.pi) % (2 * np.pi) - np.pi
  return lax_numpy.where(degrees, ufuncs.rad2deg(angles), angles)


def _axis_index(axis):
  if axis in ("x", "y", "z"):
    return "xyz".index(axis)
  raise ValueError(f"Expected axis to be from ['x', 'y', 'z'], got {axis}")


def _parse_seq(seq):
  intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
  extrinsic = re.match(r"^[xyz]{1,3}$", seq) is not None
  if not (intrinsic or extrinsic):
    raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or ['X', 'Y', 'Z'], "
                     f"got {seq}")
  if any(seq[i] == seq[i + 1] for i in range(len(seq) - 1)):
    raise ValueError(f"Expected consecutive axes to be different, got {seq}")
  return intrinsic, extrinsic, creation.array([_axis_index(x) for x in seq.lower()])


class Rotation(typing.NamedTuple):
  """A rotation in 3 dimensions (or a stack of them), stored as unit quaternions (x, y, z, w)."""
  quat: typing.Any

  @classmethod
  def concatenate(cls, rotations):
    """One Rotation stacking the given ones."""
    return cls(lax_numpy.concatenate([r.quat for r in rotations]))

  @classmethod
  def from_euler(cls, seq, angles, degrees=False):
    """From Euler angles about up to 3 axes: 'xyz' extrinsic, 'XYZ' intrinsic."""
    if len(seq) < 1 or len(seq) > 3:
      raise ValueError("Expected axis specification to be a non-empty string of upto 3 "
                       f"characters, got {seq}")
    intrinsic, _, axes = _parse_seq(seq)
    return cls(_compose_axes(lax_numpy.atleast_1d(angles), axes, intrinsic, degrees))

  @classmethod
  def from_matrix(cls, matrix):
    """From rotation matrices [..., 3, 3]."""
    return cls(_from_matrix(matrix))

  @classmethod
  def from_mrp(cls, mrp):
    """From modified Rodrigues parameters [..., 3]."""
    return cls(_from_mrp(mrp))

  @classmethod
  def from_quat(cls, quat):
    """From quaternions (x, y, z, w) [..., 4], normalized."""
    return cls(_normalize(quat))

  @classmethod
  def from_rotvec(cls, rotvec, degrees=False):
    """From rotation vectors (axis times angle) [..., 3]."""
    return cls(_from_rotvec(rotvec, degrees))

  @classmethod
  def identity(cls, num=None, dtype=float):
    """The identity rotation (num must be None)."""
    assert num is None
    return cls(creation.array([0., 0., 0., 1.], dtype=dtype))

  @classmethod
  def random(cls, random_key, num=None):
    raise NotImplementedError()

  def __getitem__(self, indexer):
    if self.single:
      raise TypeError("Single rotation is not subscriptable.")
    return Rotation(self.quat[indexer])

  def __len__(self):
    if self.single:
      raise TypeError("Single rotation has no len().")
    return self.quat.shape[0]

  def __mul__(self, other):
    """The composition: apply `other`, then self."""
    return Rotation.from_quat(_compose(self.quat, other.quat))

  def apply(self, vectors, inverse=False):
    """Rotate vectors [..., 3] (by the inverse rotation with inverse=True)."""
    return _apply(self.as_matrix(), vectors, inverse)

  def as_euler(self, seq, degrees=False):
    """Euler angles about 3 axes ('xyz' extrinsic, 'XYZ' intrinsic)."""
    if len(seq) != 3:
      raise ValueError(f"Expected 3 axes, got {seq}.")
    _, extrinsic, axes = _parse_seq(seq)
    return _euler_from_quat(self.quat, axes, extrinsic, degrees)

  def as_matrix(self):
    """Rotation matrices [..., 3, 3]."""
    return _as_matrix(self.quat)

  def as_mrp(self):
    """Modified Rodrigues parameters [..., 3]."""
    return _as_mrp(self.quat)

  def as_rotvec(self, degrees=False):
    """Rotation vectors [..., 3]."""
    return _as_rotvec(self.quat, degrees)

  def as_quat(self, canonical=False, scalar_first=False):
    """Quaternions [..., 4], (x, y, z, w) or (w, x, y, z) with scalar_first."""
    quat = _canonical(self.quat) if canonical else self.quat
    return assembly.roll(quat, shift=1, axis=-1) if scalar_first else quat

  def inv(self):
    """The inverse rotation(s)."""
    return Rotation(_inv(self.quat))

  def magnitude(self):
    """The rotation angle(s) in radians, in [0, pi]."""
    return _magnitude(self.quat)

  def mean(self, weights=None):
    """The (weighted) mean rotation: the top eigenvector of sum w q qᵀ."""
    w = (creation.ones(self.quat.shape[0], dtype=self.quat.dtype) if weights is None
         else creation.asarray(weights, dtype=self.quat.dtype))
    if w.ndim != 1:
      raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
    if w.shape[0] != len(self):
      raise ValueError("Expected `weights` to have number of values equal to number of "
                       f"rotations, got {w.shape[0]} values and {len(self)} rotations.")
    k = lax_numpy.dot(w[np.newaxis, :] * self.quat.T, self.quat)
    _, v = jnp_linalg.eigh(k)
    return Rotation(v[:, -1])

  @property
  def single(self):
    """Whether this is one rotation (not a stack)."""
    return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
  """Spherical linear interpolation between rotations given at increasing times."""
  times: typing.Any
  timedelta: typing.Any
  rotations: Rotation
  rotvecs: typing.Any

  @classmethod
  def init(cls, times, rotations):
    """The interpolator of `rotations` (at least 2) at `times` (1-D, increasing)."""
    if not isinstance(rotations, Rotation):
      raise TypeError("`rotations` must be a `Rotation` instance.")
    if rotations.single or len(rotations) == 1:
      raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
    times = creation.asarray(times, dtype=rotations.quat.dtype)
    if times.ndim != 1:
      raise ValueError("Expected times to be specified in a 1 dimensional array, got "
                       f"{times.ndim} dimensions.")
    if times.shape[0] != len(rotations):
      raise ValueError("Expected number of rotations to be equal to number of timestamps "
                       f"given, got {len(rotations)} rotations and {times.shape[0]} "
                       "timestamps.")
    starts = Rotation(rotations.as_quat()[:-1])
    steps = (starts.inv() * Rotation(rotations.as_quat()[1:])).as_rotvec()
    return cls(times=times, timedelta=statistics.diff(times), rotations=starts, rotvecs=steps)

  def __call__(self, times):
    t = creation.asarray(times, dtype=self.times.dtype)
    if t.ndim > 1:
      raise ValueError("`times` must be at most 1-dimensional.")
    single = t.ndim == 0
    t = lax_numpy.atleast_1d(t)
    ind = ufuncs.maximum(searching.searchsorted(self.times, t) - 1, 0)
    alpha = (t - self.times[ind]) / self.timedelta[ind]
    result = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
    return result[0] if single else result
