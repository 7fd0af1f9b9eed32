"""arrax.scipy.linalg.eigh_tridiagonal against JAX 0.10.2: eigenvalues (the same bisection, so
bit-close), select='a'/'i', tol, complex Hermitian input, x64, sizes 0..40, jit, vmap, errors;
eigenvectors (inverse iteration from the same random start vectors, including clusters of equal
eigenvalues) against JAX up to each column's sign, and T V = V W: JAX solves the near-singular
shifted systems with jaxlib's perturbed kernel, whose perturbation rule arrax does not
reproduce, and that decides the sign of some columns."""
import jax
import jax.scipy.linalg as jsl
import numpy as np
import pytest

import arrax
import arrax.scipy.linalg as asl
from oracle import assert_raises_like, assert_same


def tri(n, dtype=np.float32, seed=0):
  r = np.random.default_rng(seed)
  d, e = r.standard_normal(n), r.standard_normal(max(n - 1, 0))
  if np.dtype(dtype).kind == "c":
    e = e + 1j * r.standard_normal(max(n - 1, 0))
  return d.astype(dtype), e.astype(dtype)


def both(*args, tol=(1e-5, 1e-5), **kw):
  kw.setdefault("eigvals_only", True)
  assert_same(asl.eigh_tridiagonal(*args, **kw), jsl.eigh_tridiagonal(*args, **kw), tol=tol)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 16, 17, 40])
def test_values(n):
  d, e = tri(n, seed=n)
  both(d, e)
  if n > 1:
    full = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    np.testing.assert_allclose(asl.eigh_tridiagonal(d, e, eigvals_only=True),
                               np.linalg.eigvalsh(full.astype(np.float64)), atol=1e-5)


def test_select_and_tol():
  d, e = tri(12, seed=3)
  both(d, e, select="i", select_range=(2, 6))
  both(d, e, select="i", select_range=(0, 0))
  both(d, e, select="i", select_range=(11, 11))
  both(d, e, tol=1e-2)
  both(d, e, tol=0.5, select="i", select_range=(1, 4))


def test_special_matrices():
  both(np.float32([1., 2., 3., 4.]), np.float32([1., 1., 1.]))
  both(np.zeros(5, np.float32), np.zeros(4, np.float32))            # all zero
  both(np.ones(6, np.float32), np.ones(5, np.float32) * 1e-30)      # tiny coupling
  both(np.float32([1e6, -1e6, 3.]), np.float32([1e3, 2e-3]))
  both(np.arange(8, dtype=np.float32), np.full(7, 1e-8, np.float32))


def test_complex_hermitian():
  d, e = tri(9, np.complex64, seed=5)
  d = d.real.astype(np.complex64)
  both(d, e)


def test_float64(x64):
  for n in (2, 10, 33):
    d, e = tri(n, np.float64, seed=n)
    both(d, e, tol=(1e-12, 1e-12))
  d, e = tri(6, np.complex128, seed=1)
  both(d, e, tol=(1e-12, 1e-12))


def test_jit_vmap():
  d, e = tri(10, seed=7)

  def f(mod):
    return lambda d, e: mod.scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True)

  assert_same(arrax.jit(f(arrax))(d, e), jax.jit(f(jax))(d, e), tol=(1e-5, 1e-5))
  ds = np.stack([tri(10, seed=s)[0] for s in range(3)])
  es = np.stack([tri(10, seed=s)[1] for s in range(3)])
  assert_same(arrax.vmap(f(arrax))(ds, es), jax.vmap(f(jax))(ds, es), tol=(1e-5, 1e-5))


@pytest.mark.parametrize("call", [
    lambda m, d, e: m.eigh_tridiagonal(d, e.astype(np.complex64), eigvals_only=True),
    lambda m, d, e: m.eigh_tridiagonal(d.astype(np.int32), e.astype(np.int32),
                                       eigvals_only=True),
    lambda m, d, e: m.eigh_tridiagonal(d, e, eigvals_only=True, select="v"),
    lambda m, d, e: m.eigh_tridiagonal(d, e, eigvals_only=True, select="x"),
    lambda m, d, e: m.eigh_tridiagonal(d, e, eigvals_only=True, select="i"),
    lambda m, d, e: m.eigh_tridiagonal(d, e, eigvals_only=True, select="i",
                                       select_range=(3, 1)),
])
def test_errors(call):
  d, e = tri(5)
  assert_raises_like(lambda: call(jsl, d, e), lambda: call(asl, d, e))


def same_up_to_sign(v, jv, tol):
  """Columns equal up to a sign (a unit phase for complex input)."""
  v, jv = np.asarray(v), np.asarray(jv)
  if v.size:
    overlap = np.sum(np.conj(v) * jv, axis=0)
    v = v * (overlap / np.abs(overlap)).astype(v.dtype)
  np.testing.assert_allclose(v, jv, rtol=tol[0], atol=tol[1])


def check_vectors(d, e, tol=(1e-4, 1e-5), **kw):
  w, v = asl.eigh_tridiagonal(d, e, **kw)
  jw, jv = jsl.eigh_tridiagonal(d, e, **kw)
  assert_same(w, jw, tol=tol)
  assert v.shape == jv.shape and v.dtype == jv.dtype, (v.shape, v.dtype, jv.shape, jv.dtype)
  same_up_to_sign(v, jv, tol)
  if d.shape[0] > 1:
    t = np.diag(d) + np.diag(e, 1) + np.diag(np.conj(e), -1)
    np.testing.assert_allclose(t @ np.asarray(v), np.asarray(v) * np.asarray(w),
                               atol=20 * tol[0])


@pytest.mark.parametrize("n", [0, 1, 2, 5, 12, 25])
def test_eigenvectors(n):
  check_vectors(*tri(n, seed=n))


def test_eigenvectors_special():
  check_vectors(np.float32([1., 1., 1., 2., 3.]), np.float32([0., 0., 1e-9, 1.]))  # cluster
  check_vectors(np.float32([1., 2., 3., 4.]), np.float32([1., 1., 1.]))
  check_vectors(np.ones(6, np.float32), np.ones(5, np.float32))
  d, e = tri(8, seed=2)
  check_vectors(d, e, select="i", select_range=(2, 5))
  w, v = asl.eigh_tridiagonal(d, e, key=arrax.random.key(7))
  jw, jv = jsl.eigh_tridiagonal(d, e, key=jax.random.key(7))
  assert_same(w, jw, tol=(1e-4, 1e-5))
  same_up_to_sign(v, jv, (1e-4, 1e-5))


def test_eigenvectors_complex_x64(x64):
  d, e = tri(7, np.complex128, seed=4)
  check_vectors(d.real.astype(np.complex128), e, tol=(1e-10, 1e-12))
  check_vectors(*tri(9, np.float64, seed=5), tol=(1e-10, 1e-12))


def test_eigenvectors_jit_vmap():
  d, e = tri(6, seed=11)

  def f(mod):
    return lambda d, e: mod.scipy.linalg.eigh_tridiagonal(d, e)

  (w, v), (jw, jv) = arrax.jit(f(arrax))(d, e), jax.jit(f(jax))(d, e)
  assert_same(w, jw, tol=(1e-4, 1e-5))
  same_up_to_sign(v, jv, (1e-4, 1e-5))
  ds = np.stack([tri(6, seed=s)[0] for s in range(3)])
  es = np.stack([tri(6, seed=s)[1] for s in range(3)])
  (w, v), (jw, jv) = arrax.vmap(f(arrax))(ds, es), jax.vmap(f(jax))(ds, es)
  assert_same(w, jw, tol=(1e-4, 1e-5))
  for i in range(3):
    same_up_to_sign(v[i], jv[i], (1e-4, 1e-5))
