"""arrax.numpy.linalg: NumPy's linear algebra API over the lax.linalg primitives."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from arrax._src import core
from arrax._src.custom_derivatives import custom_jvp
from arrax._src.lax import shape_ops
from arrax._src.lax import linalg as lax_linalg
from arrax._src.numpy import creation, lax_numpy, reductions, ufuncs
from arrax._src.jit import jit
from arrax._src.numpy.util import ensure_arraylike, promote_dtypes_inexact


class EigResult(NamedTuple):
  eigenvalues: object
  eigenvectors: object


class SlogdetResult(NamedTuple):
  sign: object
  logabsdet: object


def _inexact(name, a):
  a = ensure_arraylike(name, a)
  a, = promote_dtypes_inexact(a)
  return a


def _shape(x):
  return core.get_aval(x).shape


def _check_square(name, a):
  shape = _shape(a)
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Argument to {name} must have shape [..., n, n], got {shape}.")


# ---- eigendecompositions -------------------------------------------------------------------------
def eig(a):
  """Eigenvalues and right eigenvectors (columns, unit norm) of general square matrices.

  >>> w, v = jnp.linalg.eig(jnp.array([[2., 0.], [0., 3.]]))
  """
  a = _inexact("jnp.linalg.eig", a)
  w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
  return EigResult(w, v)


@jit
def eigvals(a):
  """Eigenvalues (complex) of general square matrices a [..., n, n].

  >>> jnp.linalg.eigvals(jnp.array([[0., 1.], [-1., 0.]]))   # ±1j
  """
  a = _inexact("jnp.linalg.eigvals", a)
  return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


# ---- cholesky, solve, inv ------------------------------------------------------------------------
def cholesky(a, *, upper=False, symmetrize_input=True):
  """The Cholesky factor of Hermitian positive-definite a: lower L with a = L Lᴴ (or U = Lᴴ).

  >>> jnp.linalg.cholesky(jnp.array([[4., 2.], [2., 3.]]))
  """
  a = _inexact("jnp.linalg.cholesky", a)
  factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
  return lax_linalg._H(factor) if upper else factor


def solve(a, b):
  """x with a @ x = b, for square a [..., n, n] and b [n] or [..., n, k] (batch axes broadcast).

  >>> jnp.linalg.solve(jnp.array([[2., 0.], [0., 4.]]), jnp.array([2., 2.]))
  """
  a, b = ensure_arraylike("jnp.linalg.solve", a, b)
  a, b = promote_dtypes_inexact(a, b)
  a_shape, b_shape = _shape(a), _shape(b)
  if len(a_shape) < 2:
    raise ValueError(f"left hand array must be at least two dimensional; got a.shape={a_shape}")
  _check_square("jnp.linalg.solve", a)
  n = a_shape[-1]
  if (len(b_shape) > 1 and len(a_shape) == len(b_shape) + 1 and b_shape[-1] == n
      and b_shape[-2] != n):
    raise ValueError(f"Invalid shapes for solve: {a_shape}, {b_shape}. Prior to JAX v0.5.0, "
                     "this would have been treated as a batched 1-dimensional solve. To "
                     "recover this behavior, use solve(a, b[..., None]).squeeze(-1).")
  vector = len(b_shape) == 1
  if vector:
    b = shape_ops.expand_dims(b, (1,))
  if _shape(b)[-2] != n:
    raise ValueError(f"solve: the last two axes of a {a_shape} and b {b_shape} do not match: "
                     f"b needs {n} rows.")
  batch = lax_numpy.broadcast_shapes(a_shape[:-2], _shape(b)[:-2])
  a = lax_numpy.broadcast_to(a, (*batch, n, n))
  b = lax_numpy.broadcast_to(b, (*batch, *_shape(b)[-2:]))
  x = lax_linalg._solve(a, b)
  return shape_ops.squeeze(x, (len(batch) + 1,)) if vector else x


def inv(a):
  """The inverse of square matrices a [..., n, n] (computed by an LU solve).

  >>> jnp.linalg.inv(jnp.array([[2., 0.], [0., 4.]]))
  """
  a = ensure_arraylike("jnp.linalg.inv", a)
  shape = _shape(a)
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Argument to inv must have shape [..., n, n], got {shape}.")
  a, = promote_dtypes_inexact(a)
  eye = lax_linalg._eye(shape[-1], shape[-1], core.get_aval(a).dtype, shape[:-2])
  return solve(a, eye)


# ---- determinants --------------------------------------------------------------------------------
@custom_jvp
def _slogdet_lu(a):
  dtype = core.get_aval(a).dtype
  factors, pivots, _ = lax_linalg.lu(a)
  diag = lax_linalg._diagonal(factors)
  is_zero = reductions.any(diag == 0, axis=-1)
  n = _shape(a)[-1]
  parity = reductions.sum(pivots != creation.arange(n, dtype=np.int32), axis=-1)
  if dtype.kind == "c":
    sign = reductions.prod(diag / ufuncs.abs(diag).astype(dtype), axis=-1)
  else:
    sign = creation.array(1, dtype=dtype)
    parity = parity + reductions.sum(diag < 0, axis=-1)
  flip = (-2 * (parity % 2) + 1).astype(dtype)
  sign = lax_numpy.where(is_zero, creation.array(0, dtype=dtype), sign * flip)
  logdet = lax_numpy.where(is_zero, creation.array(-np.inf, dtype=dtype),
                           reductions.sum(ufuncs.log(ufuncs.abs(diag)).astype(dtype), axis=-1))
  return sign, ufuncs.real(logdet)


@_slogdet_lu.defjvp
def _slogdet_jvp(primals, tangents):
  (x,), (g,) = primals, tangents
  sign, logdet = _slogdet_lu(x)
  # d log det x = tr(x⁻¹ dx).
  dlog = reductions.sum(lax_linalg._diagonal(solve(x, g)), axis=-1)
  if core.get_aval(x).dtype.kind == "c":
    sign_dot = (dlog - ufuncs.real(dlog).astype(dlog.dtype)) * sign
    dlog = ufuncs.real(dlog)
  else:
    sign_dot = creation.zeros_like(sign)
  return (sign, logdet), (sign_dot, dlog)


def slogdet(a, *, method=None):
  """(sign, log|det|) of square matrices a [..., n, n], from an LU factorization.

  >>> jnp.linalg.slogdet(jnp.array([[2., 0.], [0., -3.]]))   # (-1, log 6)
  """
  a = _inexact("jnp.linalg.slogdet", a)
  shape = _shape(a)
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Argument to slogdet() must have shape [..., n, n], got {shape}")
  if method not in (None, "lu"):
    raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                     "(`None`); arrax does not implement 'qr'.")
  return SlogdetResult(*_slogdet_lu(a))


def _det_2x2(a):
  return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]


def _det_3x3(a):
  return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2]
          + a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0]
          + a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1]
          - a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0]
          - a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1]
          - a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])


def _det(a):
  shape = _shape(a)
  if shape[-2:] == (2, 2):
    return _det_2x2(a)
  if shape[-2:] == (3, 3):
    return _det_3x3(a)
  sign, logdet = _slogdet_lu(a)
  return sign * ufuncs.exp(logdet).astype(sign.dtype)


@jit
def det(a):
  """The determinant of square matrices a [..., n, n].

  >>> jnp.linalg.det(jnp.array([[1., 2.], [3., 4.]]))   # -2
  """
  a = _inexact("jnp.linalg.det", a)
  shape = _shape(a)
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Argument to _det() must have shape [..., n, n], got {shape}")
  return _det(a)
