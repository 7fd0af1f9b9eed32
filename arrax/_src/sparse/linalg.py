"""Sparse linear algebra: `spsolve` (jax.experimental.sparse.linalg.spsolve).

JAX solves on CPU with SciPy's sparse LU through a host callback; arrax densifies the CSR
matrix and solves with XLA's LU (`jnp.linalg.solve`), so results agree to rounding. The JVP
follows d(A^-1 b) = A^-1 (b_dot - A_dot A^-1 b); the transpose with respect to `b` is the
backward pass of the dense solve. `lobpcg_standard`: JAX's LOBPCG iteration (SVQB
orthonormalization, Rayleigh-Ritz on [X, P, R] in a while_loop)."""
from __future__ import annotations

import numpy as np

from arrax._src import ad, core, dtypes
from arrax._src.array import Array
from arrax._src.jit import jit
from arrax._src.lax import dot as lax_dot
from arrax._src.lax.control_flow.while_loop import while_loop
from arrax._src.numpy import creation, index_tricks, lax_numpy, ufuncs
from arrax._src.numpy import linalg as jnp_linalg
from arrax._src.sparse import csr
from arrax._src.sparse.util import sparse_primitive


def _check(data, indices, indptr, b, reorder):
  if data.dtype != b.dtype:
    raise ValueError(f"data types do not match: data.dtype={data.dtype} b.dtype={b.dtype}")
  if not (dtypes.issubdtype(indices.dtype, np.integer)
          and dtypes.issubdtype(indptr.dtype, np.integer)):
    raise ValueError("index arrays must be integer typed; got "
                     f"indices.dtype={indices.dtype} indptr.dtype={indptr.dtype}")
  if not data.ndim == indices.ndim == indptr.ndim == b.ndim == 1:
    raise ValueError("Arrays must be one-dimensional. Got "
                     f"data.shape={data.shape} indices.shape={indices.shape} "
                     f"indptr.shape={indptr.shape} b.shape={b.shape}")
  if indptr.size != b.size + 1 or data.shape != indices.shape:
    raise ValueError(f"Invalid CSR buffer sizes: data.shape={data.shape} "
                     f"indices.shape={indices.shape} indptr.shape={indptr.shape}")
  if reorder not in [0, 1, 2, 3]:
    raise ValueError(f"reorder={reorder} not valid, must be one of [1, 2, 3, 4]")


def _spsolve_impl(data, indices, indptr, b, *, tol, reorder):
  _check(data, indices, indptr, b, reorder)
  n = b.shape[0]
  a = csr._todense_impl(data, indices, indptr, shape=(n, n))
  return jnp_linalg.solve(a, b)


spsolve_p = sparse_primitive("spsolve", _spsolve_impl, linear=None)


@spsolve_p.def_jvp
def _spsolve_jvp(primals, tangents, *, tol, reorder):
  data, indices, indptr, b = primals
  data_dot, _, _, b_dot = tangents
  x = spsolve_p.bind(data, indices, indptr, b, tol=tol, reorder=reorder)
  rhs = None
  if type(b_dot) is not ad.Zero:
    rhs = b_dot
  if type(data_dot) is not ad.Zero:
    q = csr.csr_matvec_p.bind(data_dot, indices, indptr, x, shape=(b.shape[0], b.shape[0]),
                              transpose=False)
    rhs = -q if rhs is None else rhs - q
  if rhs is None:
    return x, ad.Zero(ad.tangent_aval(core.get_aval(x)))
  return x, spsolve_p.bind(data, indices, indptr, rhs, tol=tol, reorder=reorder)


@spsolve_p.def_transpose
def _spsolve_transpose(ct, data, indices, indptr, b, *, tol, reorder):
  if not ad.is_undefined(b) or any(ad.is_undefined(x) for x in (data, indices, indptr)):
    raise NotImplementedError("spsolve transpose with respect to the matrix")
  n = b.aval.shape[0]
  a = csr._todense_impl(data, indices, indptr, shape=(n, n))
  return [None, None, None, jnp_linalg.solve(a.T, ad.instantiate(ct))]


def spsolve(data, indices, indptr, b, tol=1e-6, reorder=1):
  """The solution x of A x = b for the square CSR matrix A = (data, indices, indptr)."""
  return spsolve_p.bind(data, indices, indptr, b, tol=float(tol), reorder=reorder)


# ---- LOBPCG -----------------------------------------------------------------------------------
def _matmul(a, b):
  hi = lax_dot.Precision.HIGHEST
  return lax_dot.dot_general(a, b, (((a.ndim - 1,), (0,)), ((), ())), precision=(hi, hi))


def _colnorms(x):
  return jnp_linalg.norm(x, ord=2, axis=0, keepdims=True)


def _eigh_descending(a):
  w, v = jnp_linalg.eigh(a)
  return w[::-1], v[:, ::-1]


def _svqb(x):
  """Columns of x made orthonormal through the eigendecomposition of their Gram matrix;
  columns in the (numerical) null space become zero."""
  n0 = _colnorms(x)
  x = x / lax_numpy.where(n0 == 0, 1.0, n0)
  gram = _matmul(x.T, x)
  w, v = _eigh_descending(gram)
  tau = dtypes.finfo(x.dtype).eps * w[0]
  scale = lax_numpy.where(tau > 0, ufuncs.maximum(w, tau), 1.0) ** (-0.5)
  out = _matmul(x, v * scale[None, :])
  keep = ((w > tau) * (index_tricks.diag(gram) > 0.0))[None, :]
  out = out * keep.astype(out.dtype)
  n1 = _colnorms(out)
  keep = keep * (n1 > 0.0)
  return out / lax_numpy.where(keep, n1, 1.0)


def _orthonormalize(x):
  return _svqb(_svqb(x))


def _project_out(basis, u):
  """u with the span of the orthonormal `basis` removed (twice, with reorthonormalization);
  columns that lost most of their norm are zeroed."""
  for _ in range(2):
    u = _orthonormalize(u - _matmul(basis, _matmul(basis.T, u)))
  for _ in range(2):
    u = u - _matmul(basis, _matmul(basis.T, u))
  return u * (_colnorms(u) >= 0.99).astype(u.dtype)


def _extend_basis(x, m):
  """m orthonormal columns orthogonal to the orthonormal columns of x (Householder-like
  reflection of the leading block)."""
  n, k = x.shape
  top, bottom = x[:k], x[k:]
  u, s, vt = jnp_linalg.svd(top)
  y = lax_numpy.concatenate([top + _matmul(u, vt), bottom], axis=0)
  other = lax_numpy.concatenate([creation.eye(m, dtype=x.dtype),
                                 creation.zeros((n - k - m, m), dtype=x.dtype)], axis=0)
  w = _matmul(y, vt.T * ((2 * (1 + s)) ** (-1 / 2))[None, :])
  h = -2 * _matmul(_matmul(w, w[k:, :].T), other)
  return h.at[k:].add(other)


def _lobpcg_check(A, X):
  n, k = X.shape
  if k == 0:
    raise ValueError(f"must have search dim > 0, got {k}")
  if k * 5 >= n:
    raise ValueError(f"expected search dim * 5 < matrix dim (got {k * 5}, {n})")
  probe = A(creation.zeros((n, 1), dtype=X.dtype))
  if probe.dtype != X.dtype:
    raise ValueError(f"A, X must have same dtypes (were {probe.dtype}, {X.dtype})")
  if probe.shape != (n, 1):
    raise ValueError(f"A must be ({n}, {n}) matrix A, got output {probe.shape}")


def _lobpcg(A, X, m, tol):
  n, k = X.shape
  _lobpcg_check(A, X)
  if tol is None:
    tol = float(dtypes.finfo(X.dtype).eps)
  X = _orthonormalize(X)
  P = _extend_basis(X, k)
  AX = A(X)
  theta = (X * AX).sum(axis=0, keepdims=True)
  R = AX - theta * X

  def cond(state):
    i, _, _, _, converged, _ = state
    return ufuncs.logical_and(i < m, converged < k)

  def body(state):
    i, X, P, R, _, theta = state
    R = _project_out(lax_numpy.concatenate((X, P), axis=1), R)
    S = lax_numpy.concatenate((X, P, R), axis=1)
    theta, Q = _eigh_descending(_matmul(S.T, A(S)))
    B = Q[:, :k]
    B = B / _colnorms(B)
    X = _matmul(S, B)
    X = X / _colnorms(X)
    q, _ = jnp_linalg.qr(Q[:k, k:].T)
    P = _matmul(S, _matmul(Q[:, k:], q))
    nP = _colnorms(P)
    P = P / lax_numpy.where(nP == 0, 1.0, nP)
    AX = A(X)
    R = AX - theta[None, :k] * X
    resid = jnp_linalg.norm(R, ord=2, axis=0)
    reltol = (jnp_linalg.norm(AX, ord=2, axis=0) + theta[:k]) * n * 10
    converged = (resid < tol * reltol).sum()
    return i + 1, X, P, R, converged, theta[None, :k]
  i, X, _, _, _, theta = while_loop(cond, body, (0, X, P, R, 0, theta))
  return theta[0, :], X, i


_lobpcg_matrix = jit(lambda A, X, m, tol: _lobpcg(lambda v: _matmul(A, v), X, m, tol),
                     static_argnames=("m",))


def lobpcg_standard(A, X, m=100, tol=None):
  """The k largest eigenvalues (descending) and eigenvectors of the symmetric n x n `A` (a
  matrix, or a function computing A @ v for (n, j) arrays) by LOBPCG from the (n, k) initial
  guess `X` (k * 5 < n): (theta, U, iterations) after at most `m` iterations."""
  if isinstance(A, (Array, np.ndarray)):
    return _lobpcg_matrix(A, X, m, tol)
  return _lobpcg(A, X, m, tol)
