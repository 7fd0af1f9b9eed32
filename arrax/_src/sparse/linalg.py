"""Sparse linear algebra: `spsolve` (jax.experimental.sparse.linalg.spsolve).

JAX solves on CPU with SciPy's sparse LU through a host callback; arrax densifies the CSR
matrix and solves with XLA's LU (`jnp.linalg.solve`), so results agree to rounding. The JVP
follows d(A^-1 b) = A^-1 (b_dot - A_dot A^-1 b); the transpose with respect to `b` is the
backward pass of the dense solve. (`lobpcg_standard` is not implemented.)"""
from __future__ import annotations

import numpy as np

from arrax._src import ad, core, dtypes
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
