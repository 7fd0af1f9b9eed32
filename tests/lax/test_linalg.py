"""lax.linalg (eig, cholesky, triangular_solve, lu) and jnp.linalg (eig, eigvals, cholesky,
solve, inv, det, slogdet), differentially against JAX.

Values, dtypes and shapes in float32, float64 (x64) and complex64, with batch axes and empty
matrices; eigenvectors by their invariants (A v = λ v, unit norm), since their phases are
LAPACK's choice; jit, vmap, JVP/VJP (check_grads) and the errors for bad inputs.
"""
import jax as real_jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from arrax.test_util import check_grads
from oracle import assert_close, assert_same, linalg_tol, rand

alax = arrax.lax.linalg
jlax = real_jax.lax.linalg

DTYPES = [np.float32, np.complex64]


def _spd(rng, shape, dtype):
  x = rand(shape, dtype, rng)
  n = shape[-1]
  return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def _sorted_eigs(w):
  """Eigenvalues sorted along the last axis (rounded, so conjugate pairs sort stably)."""
  w = np.round(np.asarray(w).astype(np.complex128), 4)
  return np.take_along_axis(w, np.lexsort((w.imag, w.real), axis=-1), axis=-1)


def _spectral_radius(np_mod):
  return lambda a: np_mod.max(np_mod.abs(np_mod.linalg.eigvals(a)))


# ---- eig -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5), (1, 1), (0, 0), (0, 3, 3)])
def test_eigvals_values(dtype, shape):
  x = rand(shape, dtype, np.random.default_rng(0))
  w = anp.linalg.eigvals(x)
  e = jnp.linalg.eigvals(x)
  assert w.dtype == e.dtype and w.shape == e.shape
  np.testing.assert_allclose(_sorted_eigs(w), _sorted_eigs(np.linalg.eigvals(x)), atol=1e-3)


def test_eigvals_float64(x64):
  x = rand((3, 6, 6), np.float64, np.random.default_rng(1))
  w = anp.linalg.eigvals(x)
  assert w.dtype == np.complex128
  np.testing.assert_allclose(np.sort_complex(np.asarray(w)),
                             np.sort_complex(np.linalg.eigvals(x)), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left,right", [(True, True), (False, True), (True, False)])
def test_eig_vectors(dtype, left, right):
  x = rand((2, 5, 5), dtype, np.random.default_rng(2))
  outs = alax.eig(x, compute_left_eigenvectors=left, compute_right_eigenvectors=right)
  ref = jlax.eig(x, compute_left_eigenvectors=left, compute_right_eigenvectors=right)
  assert [o.shape for o in outs] == [o.shape for o in ref]
  assert [o.dtype for o in outs] == [o.dtype for o in ref]
  w = np.asarray(outs[0])
  xc = x.astype(w.dtype)
  if left:
    vl = np.asarray(outs[1])
    lhs = np.conj(np.swapaxes(vl, -1, -2)) @ xc
    np.testing.assert_allclose(lhs, w[..., :, None] * np.conj(np.swapaxes(vl, -1, -2)),
                               atol=1e-4)
  if right:
    vr = np.asarray(outs[-1])
    np.testing.assert_allclose(xc @ vr, vr * w[..., None, :], atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(vr, axis=-2), 1, atol=1e-5)


def test_jnp_eig_matches_jax_vectors():
  # With distinct eigenvalues geev's normalization fixes the vectors: compare them directly.
  x = np.diag([1., 2., 3.]).astype(np.float32) + np.triu(np.ones((3, 3), np.float32), 1)
  w, v = anp.linalg.eig(x)
  we, ve = jnp.linalg.eig(x)
  assert_close(w, we, linalg_tol(np.float32))
  assert_close(v, ve, linalg_tol(np.float32))


def test_spectral_radius_value_grad_vmap():
  # The spec documents' example: a spectral radius, its gradient, and vmap of it.
  x = rand((3, 4, 4), np.float32, np.random.default_rng(3))
  f, jf = _spectral_radius(anp), _spectral_radius(jnp)
  assert_close(f(x[0]), jf(x[0]), linalg_tol(np.float32))
  assert_close(arrax.jit(f)(x[0]), jf(x[0]), linalg_tol(np.float32))
  assert_close(arrax.grad(f)(x[0]), real_jax.grad(jf)(x[0]), linalg_tol(np.float32, 10))
  assert_close(arrax.vmap(f)(x), real_jax.vmap(jf)(x), linalg_tol(np.float32))
  assert_close(arrax.vmap(arrax.grad(f))(x), real_jax.vmap(real_jax.grad(jf))(x),
               linalg_tol(np.float32, 10))
  assert_close(arrax.jit(arrax.grad(f))(x[1]), real_jax.grad(jf)(x[1]), linalg_tol(np.float32, 10))


def test_eigvals_jaxpr_matches_jax():
  x = np.eye(3, dtype=np.float32)
  assert str(arrax.make_jaxpr(_spectral_radius(anp))(x)) == str(
      real_jax.make_jaxpr(_spectral_radius(jnp))(x))


def test_eigvals_check_grads(x64):
  x = rand((4, 4), np.float64, np.random.default_rng(4))
  check_grads(lambda a: anp.real(anp.linalg.eigvals(a)) * 1.0, (x,), order=1,
              modes=["fwd", "rev"])
  check_grads(lambda a: anp.abs(anp.linalg.eigvals(a)), (x,), order=1, modes=["fwd", "rev"])


def test_eigvals_complex_jvp():
  x = rand((3, 3), np.complex64, np.random.default_rng(5))
  t = rand((3, 3), np.complex64, np.random.default_rng(6))
  w, dw = arrax.jvp(anp.linalg.eigvals, (x,), (t,))
  we, dwe = real_jax.jvp(jnp.linalg.eigvals, (x,), (t,))
  order = np.argsort(np.round(np.asarray(we), 4))
  np.testing.assert_allclose(np.asarray(w)[order], np.asarray(we)[order], atol=1e-4)
  np.testing.assert_allclose(np.asarray(dw)[order], np.asarray(dwe)[order], atol=1e-3)


def test_eigvec_jvp_opt_in():
  x = np.diag([1., 2., 4.]) + np.triu(np.ones((3, 3)), 1) * 0.5
  x = x.astype(np.float32)
  t = rand((3, 3), np.float32, np.random.default_rng(7))
  f = lambda m, a: m.eig(a, compute_left_eigenvectors=False,  # noqa: E731
                         enable_eigvec_derivs=True)
  (w, v), (dw, dv) = arrax.jvp(lambda a: f(alax, a), (x,), (t,))
  (we, ve), (dwe, dve) = real_jax.jvp(lambda a: f(jlax, a), (x,), (t,))
  assert_close(dw, dwe, linalg_tol(np.float32, 10))
  assert_close(dv, dve, linalg_tol(np.float32, 10))
  with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
    arrax.jvp(lambda a: alax.eig(a)[1], (x,), (t,))


def test_eig_errors():
  with pytest.raises(ValueError, match="square"):
    anp.linalg.eigvals(np.ones((3, 4), np.float32))
  with pytest.raises(TypeError, match="rank at least 2"):
    alax.eig(np.ones((3,), np.float32))
  with pytest.raises(TypeError, match="int32"):
    alax.eig(np.ones((3, 3), np.int32))
  # jnp promotes integers
  assert anp.linalg.eigvals(np.eye(2, dtype=np.int32)).dtype == np.complex64


# ---- cholesky ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (0, 0), (0, 2, 2)])
def test_cholesky_values(dtype, shape):
  x = _spd(np.random.default_rng(8), shape, dtype)
  assert_close(anp.linalg.cholesky(x), jnp.linalg.cholesky(x), linalg_tol(dtype, 5))
  assert_close(anp.linalg.cholesky(x, upper=True), jnp.linalg.cholesky(x, upper=True),
               linalg_tol(dtype, 5))
  assert_close(alax.cholesky(x, symmetrize_input=False), jlax.cholesky(x, symmetrize_input=False),
               linalg_tol(dtype, 5))


def test_cholesky_failure_is_nan():
  out = np.asarray(anp.linalg.cholesky(np.stack([-np.eye(3), np.eye(3)]).astype(np.float32)))
  assert np.isnan(out[0][np.tril_indices(3)]).all()
  np.testing.assert_allclose(out[1], np.eye(3))


def test_cholesky_grads_vmap(x64):
  x = _spd(np.random.default_rng(9), (3, 3), np.float64)
  check_grads(anp.linalg.cholesky, (x,), order=2, modes=["fwd", "rev"])
  xs = _spd(np.random.default_rng(10), (2, 3, 3), np.float64)
  assert_close(arrax.vmap(anp.linalg.cholesky)(xs), real_jax.vmap(jnp.linalg.cholesky)(xs),
               linalg_tol(np.float64))
  g = arrax.grad(lambda a: anp.sum(anp.linalg.cholesky(a) ** 2))(x)
  ge = real_jax.grad(lambda a: jnp.sum(jnp.linalg.cholesky(a) ** 2))(x)
  assert_close(g, ge, linalg_tol(np.float64))


# ---- triangular_solve ----------------------------------------------------------------------------
TS_CASES = [dict(left_side=True, lower=True), dict(left_side=False, lower=False),
            dict(left_side=True, lower=False, transpose_a=True),
            dict(left_side=False, lower=True, transpose_a=True, conjugate_a=True),
            dict(left_side=True, lower=True, unit_diagonal=True)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kw", TS_CASES)
def test_triangular_solve_values(dtype, kw):
  rng = np.random.default_rng(11)
  a = rand((2, 4, 4), dtype, rng) + 4 * np.eye(4, dtype=dtype)
  b = rand((2, 4, 3) if kw["left_side"] else (2, 3, 4), dtype, rng)
  assert_close(alax.triangular_solve(a, b, **kw), jlax.triangular_solve(a, b, **kw),
               linalg_tol(dtype, 10))


def test_triangular_solve_vector_rhs():
  rng = np.random.default_rng(12)
  a = rand((4, 4), np.float32, rng) + 4 * np.eye(4, dtype=np.float32)
  b = rand((4,), np.float32, rng)
  for left in (True, False):
    assert_close(alax.triangular_solve(a, b, left_side=left, lower=True),
                 jlax.triangular_solve(a, b, left_side=left, lower=True),
                 linalg_tol(np.float32, 10))


@pytest.mark.parametrize("kw", TS_CASES[:4])
def test_triangular_solve_grads(x64, kw):
  rng = np.random.default_rng(13)
  a = rand((3, 3), np.float64, rng) + 3 * np.eye(3)
  b = rand((3, 2) if kw["left_side"] else (2, 3), np.float64, rng)
  check_grads(lambda a, b: alax.triangular_solve(a, b, **kw), (a, b), order=2,
              modes=["fwd", "rev"])


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (0, None), (1, 2)])
def test_triangular_solve_vmap(in_axes):
  rng = np.random.default_rng(14)
  a = rand((2, 3, 3), np.float32, rng) + 3 * np.eye(3, dtype=np.float32)
  b = rand((2, 3, 2), np.float32, rng)
  a_in = a if in_axes[0] == 0 else a[0] if in_axes[0] is None else np.moveaxis(a, 0, 1)
  b_in = b if in_axes[1] == 0 else b[0] if in_axes[1] is None else np.moveaxis(b, 0, 2)
  f = lambda m: lambda x, y: m.triangular_solve(x, y, left_side=True, lower=True)  # noqa: E731
  assert_close(arrax.vmap(f(alax), in_axes)(a_in, b_in),
               real_jax.vmap(f(jlax), in_axes)(a_in, b_in), linalg_tol(np.float32, 10))


def test_triangular_solve_errors():
  with pytest.raises(ValueError, match="square"):
    alax.triangular_solve(np.ones((3, 4), np.float32), np.ones((3, 4), np.float32))
  with pytest.raises(ValueError, match="Incompatible shapes"):
    alax.triangular_solve(np.eye(3, dtype=np.float32), np.ones((2, 4), np.float32),
                          left_side=True)


# ---- lu ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 5), (0, 0), (2, 0, 3)])
def test_lu_values(dtype, shape):
  x = rand(shape, dtype, np.random.default_rng(15))
  outs, ref = alax.lu(x), jlax.lu(x)
  assert_close(outs[0], ref[0], linalg_tol(dtype, 10))
  for o, r in zip(outs[1:], ref[1:]):
    assert_same(o, r)


def test_lu_grads_vmap(x64):
  for shape in [(3, 3), (4, 2), (2, 4)]:
    x = rand(shape, np.float64, np.random.default_rng(16))
    check_grads(lambda a: alax.lu(a)[0], (x,), order=1, modes=["fwd", "rev"])
  xs = rand((3, 4, 4), np.float64, np.random.default_rng(17))
  outs = arrax.vmap(alax.lu)(xs)
  ref = real_jax.vmap(jlax.lu)(xs)
  for o, r in zip(outs, ref):
    assert_close(o, r,
                 linalg_tol(np.float64)) if np.asarray(r).dtype.kind == "f" else assert_same(o, r)


def test_lu_pivots_to_permutation():
  piv = np.array([[2, 2, 3, 3], [1, 1, 2, 3]], np.int32)
  assert_same(alax.lu_pivots_to_permutation(piv, 5), jlax.lu_pivots_to_permutation(piv, 5))


# ---- solve, inv, det, slogdet --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape,b_shape", [((4, 4), (4,)), ((4, 4), (4, 2)),
                                             ((2, 4, 4), (4, 3)), ((4, 4), (3, 4, 1)),
                                             ((2, 1, 3, 3), (4, 3, 2)), ((0, 0), (0,))])
def test_solve_values(dtype, a_shape, b_shape):
  rng = np.random.default_rng(18)
  a = rand(a_shape, dtype, rng) + 2 * np.eye(a_shape[-1], dtype=dtype)
  b = rand(b_shape, dtype, rng)
  assert_close(anp.linalg.solve(a, b), jnp.linalg.solve(a, b), linalg_tol(dtype, 20))


@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_det_slogdet_values(dtype):
  rng = np.random.default_rng(19)
  for shape in [(5, 5), (2, 3, 3), (2, 2), (0, 0)]:
    a = rand(shape, dtype, rng)
    assert_close(anp.linalg.inv(a), jnp.linalg.inv(a), linalg_tol(dtype, 100))
    assert_close(anp.linalg.det(a), jnp.linalg.det(a), linalg_tol(dtype, 10))
    s, ld = anp.linalg.slogdet(a)
    se, lde = jnp.linalg.slogdet(a)
    assert_close(s, se, linalg_tol(dtype, 10))
    assert_close(ld, lde, linalg_tol(dtype, 10))


def test_det_singular_and_int():
  a = np.array([[1., 2., 3., 4.], [2., 4., 6., 8.], [0., 1., 0., 1.], [1., 0., 0., 2.]],
               np.float32)
  assert_same(anp.linalg.det(a), jnp.linalg.det(a))
  s, ld = anp.linalg.slogdet(a)
  assert float(s) == 0 and float(ld) == -np.inf
  assert_same(anp.linalg.det(np.eye(3, dtype=np.int32)), jnp.linalg.det(np.eye(3, dtype=np.int32)))


def test_solve_inv_det_grads(x64):
  rng = np.random.default_rng(20)
  a = rand((4, 4), np.float64, rng) + 2 * np.eye(4)
  b = rand((4, 2), np.float64, rng)
  check_grads(anp.linalg.solve, (a, b), order=2, modes=["fwd", "rev"])
  check_grads(anp.linalg.inv, (a,), order=1, modes=["fwd", "rev"])
  check_grads(anp.linalg.det, (a,), order=1, modes=["fwd", "rev"])
  check_grads(lambda x: anp.linalg.slogdet(x)[1], (a,), order=1, modes=["fwd", "rev"])
  for f, jf in [(anp.linalg.det, jnp.linalg.det),
                (lambda x: anp.linalg.slogdet(x)[1], lambda x: jnp.linalg.slogdet(x)[1]),
                (lambda x: anp.sum(anp.linalg.inv(x)), lambda x: jnp.sum(jnp.linalg.inv(x)))]:
    assert_close(arrax.grad(f)(a), real_jax.grad(jf)(a), linalg_tol(np.float64, 1e3))


def test_complex_slogdet_grad():
  a = rand((3, 3), np.complex64, np.random.default_rng(21))
  t = rand((3, 3), np.complex64, np.random.default_rng(22))
  out, tan = arrax.jvp(lambda x: anp.linalg.slogdet(x), (a,), (t,))
  oute, tane = real_jax.jvp(lambda x: jnp.linalg.slogdet(x), (a,), (t,))
  for u, v in zip((*out, *tan), (*oute, *tane)):
    assert_close(u, v, linalg_tol(np.complex64, 10))


def test_solve_jit_vmap():
  rng = np.random.default_rng(23)
  a = rand((3, 4, 4), np.float32, rng) + 2 * np.eye(4, dtype=np.float32)
  b = rand((3, 4), np.float32, rng)
  assert_close(arrax.jit(anp.linalg.solve)(a[0], b[0]), jnp.linalg.solve(a[0], b[0]),
               linalg_tol(np.float32, 20))
  assert_close(arrax.vmap(anp.linalg.solve)(a, b), real_jax.vmap(jnp.linalg.solve)(a, b),
               linalg_tol(np.float32, 20))
  assert_close(arrax.vmap(anp.linalg.det)(a), real_jax.vmap(jnp.linalg.det)(a),
               linalg_tol(np.float32, 20))
  assert_close(arrax.vmap(anp.linalg.inv, 1, 1)(np.moveaxis(a, 0, 1)),
               real_jax.vmap(jnp.linalg.inv, 1, 1)(np.moveaxis(a, 0, 1)),
               linalg_tol(np.float32, 100))


def test_linalg_errors():
  with pytest.raises(ValueError, match=r"\[\.\.\., n, n\]"):
    anp.linalg.inv(np.ones((2, 3), np.float32))
  with pytest.raises(ValueError, match=r"\[\.\.\., n, n\]"):
    anp.linalg.det(np.ones((2, 3), np.float32))
  with pytest.raises(ValueError, match="two dimensional"):
    anp.linalg.solve(np.ones((3,), np.float32), np.ones((3,), np.float32))
  with pytest.raises(ValueError, match="batched 1-dimensional solve"):
    anp.linalg.solve(np.ones((2, 3, 3), np.float32), np.ones((2, 3), np.float32))
  with pytest.raises(TypeError, match="square"):
    anp.linalg.cholesky(np.ones((2, 3), np.float32))
  with pytest.raises(ValueError, match="square"):
    alax.cholesky(np.ones((2, 3), np.float32), symmetrize_input=False)


# ---- the programs solve and inv build (custom_linear_solve over a jitted LU solve) ---------------
def _same_jaxpr(fa, fj, *args):
  want = str(real_jax.make_jaxpr(fj)(*args))
  got = str(arrax.make_jaxpr(fa)(*args))
  assert got == want, f"\narrax:\n{got}\njax:\n{want}"


@pytest.mark.parametrize("a_shape,b_shape", [((3, 3), (3,)), ((2, 3, 3), (3, 2)),
                                             ((3, 3), (2, 3, 1))])
def test_solve_jaxpr(a_shape, b_shape):
  a, b = np.ones(a_shape, np.float32), np.ones(b_shape, np.float32)
  _same_jaxpr(anp.linalg.solve, jnp.linalg.solve, a, b)
  _same_jaxpr(lambda a, b: arrax.jvp(anp.linalg.solve, (a, b), (a, b)),
              lambda a, b: real_jax.jvp(jnp.linalg.solve, (a, b), (a, b)), a, b)
  _same_jaxpr(arrax.grad(lambda a, b: anp.linalg.solve(a, b).sum(), (0, 1)),
              real_jax.grad(lambda a, b: jnp.linalg.solve(a, b).sum(), (0, 1)), a, b)


def test_inv_jaxpr(x64):
  # under x64: the identity's iotas are int64, as jnp.eye makes them
  for a in (np.ones((3, 3), np.float32), np.ones((2, 3, 3), np.float64)):
    _same_jaxpr(anp.linalg.inv, jnp.linalg.inv, a)
  a = np.ones((4, 3, 3), np.float32)
  _same_jaxpr(arrax.vmap(anp.linalg.solve), real_jax.vmap(jnp.linalg.solve), a, a[:, 0])
