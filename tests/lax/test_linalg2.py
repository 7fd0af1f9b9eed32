"""lax.linalg eigh, qr (geqrf, geqp3, householder_product), svd; jnp.linalg eigh, eigvalsh, qr,
svd, svdvals, norm, pinv, matrix_rank, lstsq, matrix_power, cond; random.multivariate_normal
and random.orthogonal; differentially against JAX.

Both call the same LAPACK kernels, so factors are compared directly where JAX's are
deterministic, and by their invariants (reconstruction, orthonormality, order) everywhere;
jit, vmap, JVP/VJP (check_grads on inputs with distinct eigen/singular values) and errors.
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


def _herm(rng, shape, dtype):
  x = rand(shape, dtype, rng)
  return ((x + np.conj(np.swapaxes(x, -1, -2))) / 2).astype(dtype)


def _H(x):
  return np.conj(np.swapaxes(x, -1, -2))


def _jvps(f_arrax, f_jax, x, t):
  """(primal, tangent) outputs of both libraries, each under jit (one compilation)."""
  out = arrax.jit(lambda a, b: arrax.jvp(f_arrax, (a,), (b,)))(x, t)
  ref = real_jax.jit(lambda a, b: real_jax.jvp(f_jax, (a,), (b,)))(x, t)
  return out, ref


def _assert_orthonormal_columns(q, dtype, scale=10):
  q = np.asarray(q)
  k = q.shape[-1]
  np.testing.assert_allclose(_H(q) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)),
                             atol=linalg_tol(dtype, scale))


# ---- eigh ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5), (1, 1), (0, 0), (0, 3, 3)])
def test_eigh_values(dtype, shape):
  x = _herm(np.random.default_rng(0), shape, dtype)
  v, w = alax.eigh(x)
  ve, we = jlax.eigh(x)
  assert_close(w, we, linalg_tol(dtype, 10))
  assert v.shape == ve.shape and v.dtype == ve.dtype
  v, w = np.asarray(v), np.asarray(w)
  assert (np.diff(w, axis=-1) >= 0).all()
  _assert_orthonormal_columns(v, dtype)
  np.testing.assert_allclose(x @ v, v * w[..., None, :].astype(dtype), atol=1e-4)


def test_eigh_float64_triangle_options(x64):
  x = rand((2, 4, 4), np.float64, np.random.default_rng(1))
  for lower in (True, False):
    out = alax.eigh(x, lower=lower, symmetrize_input=False)
    ref = jlax.eigh(x, lower=lower, symmetrize_input=False)
    assert_close(out[1], ref[1], linalg_tol(np.float64))
    assert_close(np.abs(out[0]), np.abs(ref[0]), linalg_tol(np.float64, 1e3))
  for uplo in (None, "L", "U"):
    assert_close(anp.linalg.eigh(x, UPLO=uplo, symmetrize_input=False).eigenvalues,
                 jnp.linalg.eigh(x, UPLO=uplo, symmetrize_input=False).eigenvalues,
                 linalg_tol(np.float64))
    assert_close(anp.linalg.eigvalsh(x, uplo or "L"), jnp.linalg.eigvalsh(x, uplo or "L"),
                 linalg_tol(np.float64))


def test_eigh_jnp_vectors_match_jax():
  # Same kernel, same input: JAX's eigenvectors (and signs) come out exactly.
  x = _herm(np.random.default_rng(2), (3, 3), np.complex64)
  out, ref = anp.linalg.eigh(x), jnp.linalg.eigh(x)
  assert type(out).__name__ == "EighResult"
  assert_close(tuple(out), tuple(ref), linalg_tol(np.complex64))
  assert_same(anp.linalg.eigvalsh(np.eye(2, dtype=np.int32)),
              jnp.linalg.eigvalsh(np.eye(2, dtype=np.int32)))


def test_eigh_jaxpr_jit_vmap():
  x = _herm(np.random.default_rng(3), (3, 4, 4), np.float32)
  assert str(arrax.make_jaxpr(alax.eigh)(x[0])) == str(real_jax.make_jaxpr(jlax.eigh)(x[0]))
  assert_close(arrax.jit(anp.linalg.eigh)(x[0]), jnp.linalg.eigh(x[0]), linalg_tol(np.float32, 10))
  assert_close(arrax.vmap(anp.linalg.eigvalsh)(x), real_jax.vmap(jnp.linalg.eigvalsh)(x),
               linalg_tol(np.float32))
  assert_close(arrax.vmap(anp.linalg.eigvalsh, 1)(np.moveaxis(x, 0, 1)), jnp.linalg.eigvalsh(x),
               linalg_tol(np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_eigh_jvp_matches_jax(dtype):
  rng = np.random.default_rng(4)
  x, t = _herm(rng, (2, 4, 4), dtype), _herm(rng, (2, 4, 4), dtype)
  (out, tan), (oute, tane) = _jvps(alax.eigh, jlax.eigh, x, t)
  assert_close(tuple(out) + tuple(tan), tuple(oute) + tuple(tane), linalg_tol(dtype, 20))


def test_eigh_grads(x64):
  x = _herm(np.random.default_rng(5), (4, 4), np.float64)
  check_grads(lambda a: anp.linalg.eigvalsh(a), (x,), order=2, modes=["fwd", "rev"])
  # The sign of each eigenvector is LAPACK's choice: differentiate v ⊙ v, which ignores it.
  check_grads(lambda a: alax.eigh(a)[0] ** 2, (x,), order=1, modes=["fwd", "rev"])
  g = arrax.grad(lambda a: anp.sum(anp.linalg.eigvalsh(a) ** 3))(x)
  ge = real_jax.grad(lambda a: jnp.sum(jnp.linalg.eigvalsh(a) ** 3))(x)
  assert_close(g, ge, linalg_tol(np.float64, 100))


def test_eigh_errors():
  with pytest.raises(ValueError, match=r"\[\.\.\., n, n\]"):
    alax.eigh(np.ones((3, 4), np.float32), symmetrize_input=False)
  with pytest.raises(TypeError, match="square"):
    anp.linalg.eigh(np.ones((3, 4), np.float32))
  with pytest.raises(TypeError, match="rank at least 2"):
    alax.eigh(np.ones((3,), np.float32), symmetrize_input=False)
  with pytest.raises(TypeError, match="int32"):
    alax.eigh(np.ones((3, 3), np.int32))
  with pytest.raises(ValueError, match="UPLO"):
    anp.linalg.eigh(np.eye(3, dtype=np.float32), UPLO="X")
  with pytest.raises(NotImplementedError, match="subset_by_index"):
    alax.eigh(np.eye(3, dtype=np.float32), subset_by_index=(0, 2))
  with pytest.raises(NotImplementedError, match="Jacobi"):
    alax.eigh(np.eye(3, dtype=np.float32), implementation=alax.EighImplementation.JACOBI)


# ---- qr ------------------------------------------------------------------------------------------
QR_SHAPES = [(4, 3), (3, 5), (3, 3), (2, 5, 3), (3, 0), (2, 0, 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", QR_SHAPES)
def test_qr_values(dtype, shape):
  x = rand(shape, dtype, np.random.default_rng(6))
  for full in (True, False):
    for pivoting in (False, True):
      out = alax.qr(x, full_matrices=full, pivoting=pivoting)
      ref = jlax.qr(x, full_matrices=full, pivoting=pivoting)
      assert_close(out[:2], ref[:2], linalg_tol(dtype, 10))
      if pivoting:
        assert_same(out[2], ref[2])
      q, r = np.asarray(out[0]), np.asarray(out[1])
      _assert_orthonormal_columns(q, dtype)
      np.testing.assert_array_equal(r, np.triu(r))
      xp = np.take_along_axis(x, np.asarray(out[2])[..., None, :], -1) if pivoting else x
      np.testing.assert_allclose(q @ r, xp, atol=1e-4)


@pytest.mark.parametrize("mode", ["reduced", "complete", "r", "raw"])
def test_jnp_qr_modes(mode):
  x = rand((2, 5, 3), np.float32, np.random.default_rng(7))
  out, ref = anp.linalg.qr(x, mode), jnp.linalg.qr(x, mode)
  if mode != "r":
    assert type(out).__name__ == "QRResult"
  assert_close(tuple(out) if mode != "r" else out, tuple(ref) if mode != "r" else ref,
               linalg_tol(np.float32, 10))


def test_geqrf_householder_product():
  from jax._src.lax.linalg import geqrf as jax_geqrf  # not exported by jax.lax.linalg

  from arrax._src.lax.linalg import geqrf
  x = rand((2, 5, 3), np.float32, np.random.default_rng(8))
  a, taus = geqrf(x)
  ae, tause = jax_geqrf(x)
  assert_close((a, taus), (ae, tause), linalg_tol(np.float32))
  assert_close(alax.householder_product(a, taus), jlax.householder_product(ae, tause),
               linalg_tol(np.float32))
  assert_close(arrax.vmap(alax.householder_product, (0, None))(a, taus[0]),
               real_jax.vmap(jlax.householder_product, (0, None))(ae, tause[0]),
               linalg_tol(np.float32))


@pytest.mark.parametrize("dtype,shape,full", [
    (np.float32, (5, 3), True), (np.complex64, (5, 3), True), (np.float32, (5, 3), False),
    (np.float32, (3, 3), True), (np.complex64, (3, 5), True), (np.float32, (2, 3, 5), False)])
def test_qr_jvp_matches_jax(dtype, shape, full):
  rng = np.random.default_rng(9)
  x, t = rand(shape, dtype, rng), rand(shape, dtype, rng)
  f = lambda m: lambda a: m.qr(a, full_matrices=full)  # noqa: E731
  (out, tan), (oute, tane) = _jvps(f(alax), f(jlax), x, t)
  assert_close(tuple(out) + tuple(tan), tuple(oute) + tuple(tane), linalg_tol(dtype, 20))


@pytest.mark.parametrize("shape", [(4, 3), (3, 5)])
def test_qr_grads(x64, shape):
  x = rand(shape, np.float64, np.random.default_rng(10))
  for full in (True, False):
    check_grads(lambda a, full=full: alax.qr(a, full_matrices=full), (x,), order=1,
                modes=["fwd", "rev"])
  # Pivoted: the pivots are locally constant. (JAX's JVP of R for wide pivoted QR reads the
  # unpermuted columns of x; arrax's matches finite differences.)
  check_grads(lambda a: alax.qr(a, pivoting=True)[:2], (x,), order=1, modes=["fwd", "rev"])


def test_qr_jit_vmap_jaxpr():
  x = rand((3, 4, 3), np.float32, np.random.default_rng(11))
  assert str(arrax.make_jaxpr(alax.qr)(x[0])) == str(real_jax.make_jaxpr(jlax.qr)(x[0]))
  assert_close(tuple(arrax.jit(anp.linalg.qr)(x[0])), tuple(jnp.linalg.qr(x[0])),
               linalg_tol(np.float32))
  assert_close(tuple(arrax.vmap(anp.linalg.qr, 2, 2)(np.moveaxis(x, 0, 2))),
               tuple(real_jax.vmap(jnp.linalg.qr, 2, 2)(np.moveaxis(x, 0, 2))),
               linalg_tol(np.float32))


def test_qr_errors():
  with pytest.raises(TypeError, match="rank at least 2"):
    alax.qr(np.ones((3,), np.float32))
  with pytest.raises(TypeError, match="int32"):
    alax.qr(np.ones((3, 3), np.int32))
  with pytest.raises(ValueError, match="Unsupported QR decomposition mode"):
    anp.linalg.qr(np.eye(3, dtype=np.float32), mode="thin")
  with pytest.raises(ValueError, match="at least as many rows"):
    alax.householder_product(np.ones((2, 3), np.float32), np.ones((2,), np.float32))
  with pytest.raises(ValueError, match="must not have more rows"):
    alax.householder_product(np.ones((3, 2), np.float32), np.ones((3,), np.float32))


# ---- svd -----------------------------------------------------------------------------------------
SVD_SHAPES = [(4, 3), (3, 5), (3, 3), (2, 5, 3), (0, 3), (2, 0, 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_svd_values(dtype, shape):
  x = rand(shape, dtype, np.random.default_rng(12))
  for full in (True, False):
    u, s, vh = alax.svd(x, full_matrices=full)
    assert_close((u, s, vh), jlax.svd(x, full_matrices=full), linalg_tol(dtype, 10))
    assert_close(alax.svd(x, full_matrices=full, compute_uv=False),
                 jlax.svd(x, full_matrices=full, compute_uv=False), linalg_tol(dtype, 10))
    u, s, vh = map(np.asarray, (u, s, vh))
    k = s.shape[-1]
    assert (np.diff(s, axis=-1) <= 0).all() and (s >= 0).all()
    _assert_orthonormal_columns(u, dtype)
    _assert_orthonormal_columns(_H(vh), dtype)
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], x, atol=1e-4)


def test_svd_float64_qr_algorithm(x64):
  x = rand((2, 4, 6), np.float64, np.random.default_rng(13))
  out = alax.svd(x, full_matrices=False, algorithm=alax.SvdAlgorithm.QR)
  ref = jlax.svd(x, full_matrices=False, algorithm=jlax.SvdAlgorithm.QR)
  assert_close(out, ref, linalg_tol(np.float64, 100))
  assert_close(tuple(anp.linalg.svd(x)), tuple(jnp.linalg.svd(x)), linalg_tol(np.float64, 100))


@pytest.mark.parametrize("dtype,shape,full,uv", [
    (np.float32, (5, 3), False, True), (np.complex64, (3, 5), False, True),
    (np.complex64, (3, 3), True, True), (np.float32, (5, 3), True, False),
    (np.float32, (2, 3, 4), False, True)])
def test_svd_jvp_matches_jax(dtype, shape, full, uv):
  rng = np.random.default_rng(14)
  x, t = rand(shape, dtype, rng), rand(shape, dtype, rng)
  f = lambda m: lambda a: m.svd(a, full_matrices=full, compute_uv=uv)  # noqa: E731
  (out, tan), (oute, tane) = _jvps(f(alax), f(jlax), x, t)
  if not uv:
    out, tan, oute, tane = (out,), (tan,), (oute,), (tane,)
  assert_close(tuple(out) + tuple(tan), tuple(oute) + tuple(tane), linalg_tol(dtype, 50))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4)])
def test_svd_grads(x64, shape):
  x = rand(shape, np.float64, np.random.default_rng(15))
  order = 2 if shape[0] > shape[1] else 1
  check_grads(lambda a: anp.linalg.svd(a, compute_uv=False), (x,), order=order,
              modes=["fwd", "rev"])
  # Singular vectors up to a joint sign per pair: u_ik vh_kj is sign-free.
  def pairs(a):
    u, _, vh = anp.linalg.svd(a, full_matrices=False)
    return u[:, 0:1] * vh[0:1, :] + 2 * u[:, 1:2] * vh[1:2, :]
  check_grads(pairs, (x,), order=1, modes=["fwd", "rev"])


def test_svd_jit_vmap_jaxpr():
  x = rand((3, 4, 3), np.float32, np.random.default_rng(16))
  assert str(arrax.make_jaxpr(alax.svd)(x[0])) == str(real_jax.make_jaxpr(jlax.svd)(x[0]))
  assert_close(tuple(arrax.jit(anp.linalg.svd)(x[0])), tuple(jnp.linalg.svd(x[0])),
               linalg_tol(np.float32))
  assert_close(arrax.vmap(anp.linalg.svdvals, 1)(np.moveaxis(x, 0, 1)), jnp.linalg.svdvals(x),
               linalg_tol(np.float32))


def test_svd_errors():
  with pytest.raises(TypeError, match="rank at least 2"):
    alax.svd(np.ones((3,), np.float32))
  with pytest.raises(NotImplementedError, match="subset_by_index"):
    alax.svd(np.eye(3, dtype=np.float32), full_matrices=False, subset_by_index=(0, 2))
  with pytest.raises(ValueError, match="full_matrices and subset_by_index"):
    alax.svd(np.eye(3, dtype=np.float32), subset_by_index=(0, 2))
  with pytest.raises(NotImplementedError, match="Jacobi"):
    alax.svd(np.eye(3, dtype=np.float32), algorithm=alax.SvdAlgorithm.JACOBI)
  with pytest.raises(NotImplementedError, match="full matrices"):
    arrax.jvp(alax.svd, (np.ones((3, 2), np.float32),), (np.ones((3, 2), np.float32),))


# ---- jnp.linalg functions built on svd -----------------------------------------------------------
NORM_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("ord", NORM_ORDS)
def test_matrix_norm(ord):
  x = rand((2, 4, 3), np.float32, np.random.default_rng(17))
  for axis, keepdims in [((1, 2), False), ((2, 0), True), ((-1, -2), False)]:
    assert_close(anp.linalg.norm(x, ord, axis, keepdims), jnp.linalg.norm(x, ord, axis, keepdims),
                 linalg_tol(np.float32, 10))
  assert_close(anp.linalg.norm(x[0], ord), jnp.linalg.norm(x[0], ord), linalg_tol(np.float32, 10))
  assert_close(anp.linalg.matrix_norm(x, ord=ord or "fro"),
               jnp.linalg.matrix_norm(x, ord=ord or "fro"), linalg_tol(np.float32, 10))


def test_vector_norm():
  x = rand((2, 4, 3), np.complex64, np.random.default_rng(18))
  x[0, 0, 0] = 0
  for ord in [None, 0, 1, 2, 3, 0.5, -1, np.inf, -np.inf]:
    for axis in [0, -1]:
      assert_close(anp.linalg.norm(x, ord, axis), jnp.linalg.norm(x, ord, axis),
                   linalg_tol(np.complex64, 10))
    assert_close(anp.linalg.vector_norm(x, ord=ord or 2), jnp.linalg.vector_norm(x, ord=ord or 2),
                 linalg_tol(np.complex64, 10))
  assert_close(anp.linalg.norm(x), jnp.linalg.norm(x), linalg_tol(np.complex64))
  assert_same(anp.linalg.norm(np.arange(4)), jnp.linalg.norm(np.arange(4)))


def test_norm_errors_and_grads():
  x = rand((3, 4), np.float32, np.random.default_rng(19))
  with pytest.raises(ValueError, match="Invalid order"):
    anp.linalg.norm(x, "bad")
  with pytest.raises(ValueError, match="Invalid order 'inf'"):
    anp.linalg.norm(x[0], "inf")
  with pytest.raises(ValueError, match="Improper number of axes"):
    anp.linalg.norm(np.ones((2, 2, 2), np.float32), 2)
  for ord in ["nuc", 2, "fro"]:
    assert_close(arrax.grad(lambda a, ord=ord: anp.linalg.norm(a, ord))(x),
                 real_jax.grad(lambda a, ord=ord: jnp.linalg.norm(a, ord))(x),
                 linalg_tol(np.float32, 10))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_pinv_rank_cond(dtype, shape):
  x = rand(shape, dtype, np.random.default_rng(20))
  assert_close(anp.linalg.pinv(x), jnp.linalg.pinv(x), linalg_tol(dtype, 10))
  assert_close(anp.linalg.svdvals(x), jnp.linalg.svdvals(x), linalg_tol(dtype, 10))
  assert_same(anp.linalg.matrix_rank(x), jnp.linalg.matrix_rank(x))
  assert_close(anp.linalg.cond(x), jnp.linalg.cond(x), linalg_tol(dtype, 50))
  if len(shape) == 2:
    assert_close(anp.linalg.pinv(x, rtol=0.5), jnp.linalg.pinv(x, rtol=0.5), linalg_tol(dtype, 10))
    assert_same(anp.linalg.matrix_rank(x, 0.5), jnp.linalg.matrix_rank(x, 0.5))
    assert_close(anp.linalg.cond(x, -2), jnp.linalg.cond(x, -2), linalg_tol(dtype, 50))


def test_hermitian_variants():
  x = _herm(np.random.default_rng(21), (2, 4, 4), np.float32)
  assert_close(tuple(anp.linalg.svd(x, hermitian=True)), tuple(jnp.linalg.svd(x, hermitian=True)),
               linalg_tol(np.float32, 10))
  assert_close(anp.linalg.svd(x, hermitian=True, compute_uv=False),
               jnp.linalg.svd(x, hermitian=True, compute_uv=False), linalg_tol(np.float32, 10))
  assert_close(anp.linalg.pinv(x, hermitian=True), jnp.linalg.pinv(x, hermitian=True),
               linalg_tol(np.float32, 50))
  assert_same(anp.linalg.matrix_rank(x, hermitian=True), jnp.linalg.matrix_rank(x, hermitian=True))


def test_rank_deficient_and_special_inputs():
  a = np.array([[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]], np.float32)
  assert_same(anp.linalg.matrix_rank(a), jnp.linalg.matrix_rank(a))
  assert_close(anp.linalg.pinv(a), jnp.linalg.pinv(a), linalg_tol(np.float32, 10))
  assert_same(anp.linalg.matrix_rank(np.ones(3)), jnp.linalg.matrix_rank(np.ones(3)))
  assert_same(anp.linalg.matrix_rank(np.array([[1, 2], [3, 4]])),
              jnp.linalg.matrix_rank(np.array([[1, 2], [3, 4]])))
  empty = np.zeros((2, 0, 3), np.float32)
  assert_same(anp.linalg.pinv(empty), jnp.linalg.pinv(empty))
  s = np.array([[1., 2.], [0., 0.]], np.float32)
  for p in [None, 1, np.inf, "fro"]:
    assert_same(anp.linalg.cond(s, p), jnp.linalg.cond(s, p))
  sq = rand((3, 3), np.float32, np.random.default_rng(22))
  for p in [1, -1, np.inf, -np.inf, "fro", "nuc"]:
    assert_close(anp.linalg.cond(sq, p), jnp.linalg.cond(sq, p), linalg_tol(np.float32, 50))


def test_pinv_grads(x64):
  rng = np.random.default_rng(23)
  for shape in [(4, 3), (3, 4)]:
    x = rand(shape, np.float64, rng)
    check_grads(anp.linalg.pinv, (x,), order=1, modes=["fwd", "rev"])
    t = rand(shape, np.float64, rng)
    assert_close(*_jvps(anp.linalg.pinv, jnp.linalg.pinv, x, t), linalg_tol(np.float64, 100))
  h = _herm(rng, (3, 3), np.float64)
  t = rand((3, 3), np.float64, rng)
  f = lambda m: lambda a: m.linalg.pinv(a, hermitian=True)  # noqa: E731
  assert_close(*_jvps(f(anp), f(jnp), h, t), linalg_tol(np.float64, 100))


@pytest.mark.parametrize("a_shape,b_shape", [((5, 3), (5,)), ((5, 3), (5, 2)), ((3, 5), (3,)),
                                             ((0, 3), (0,))])
def test_lstsq(a_shape, b_shape):
  rng = np.random.default_rng(24)
  a, b = rand(a_shape, np.float32, rng), rand(b_shape, np.float32, rng)
  assert_close(anp.linalg.lstsq(a, b), jnp.linalg.lstsq(a, b), linalg_tol(np.float32, 20))
  assert_close(anp.linalg.lstsq(a, b, rcond=-1), jnp.linalg.lstsq(a, b, rcond=-1),
               linalg_tol(np.float32, 20))
  if a.size:
    assert_close(anp.linalg.lstsq(a, b, numpy_resid=True), jnp.linalg.lstsq(a, b, numpy_resid=True),
                 linalg_tol(np.float32, 20))


def test_lstsq_errors():
  with pytest.raises(ValueError, match="Leading dimensions"):
    anp.linalg.lstsq(np.ones((3, 2), np.float32), np.ones((4,), np.float32))
  with pytest.raises(TypeError, match="two-dimensional"):
    anp.linalg.lstsq(np.ones((2, 3, 2), np.float32), np.ones((2,), np.float32))


def test_matrix_power():
  x = rand((2, 3, 3), np.float32, np.random.default_rng(25))
  for n in [-3, -1, 0, 1, 2, 3, 4, 7]:
    assert_close(anp.linalg.matrix_power(x, n), jnp.linalg.matrix_power(x, n),
                 linalg_tol(np.float32, 100))
  m = np.arange(4).reshape(2, 2)
  assert_same(anp.linalg.matrix_power(m, 5), jnp.linalg.matrix_power(m, 5))
  with pytest.raises(TypeError, match="two-dimensional"):
    anp.linalg.matrix_power(np.ones(3), 2)
  with pytest.raises(TypeError, match="square"):
    anp.linalg.matrix_power(np.ones((2, 3)), 2)
  with pytest.raises(TypeError, match="integer"):
    anp.linalg.matrix_power(np.eye(2), 1.5)


def test_cond_errors():
  with pytest.raises(ValueError, match="at least 2D"):
    anp.linalg.cond(np.ones(3, np.float32))
  with pytest.raises(ValueError, match="must not be empty"):
    anp.linalg.cond(np.ones((0, 3), np.float32))
  with pytest.raises(ValueError, match="must be square"):
    anp.linalg.cond(np.ones((2, 3), np.float32), 1)


# ---- random samplers built on linalg -------------------------------------------------------------
@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_matches_jax(method):
  rng = np.random.default_rng(26)
  a = rng.standard_normal((3, 3)).astype(np.float32)
  cov = a @ a.T + np.eye(3, dtype=np.float32)
  mean = rng.standard_normal(3).astype(np.float32)
  ka, kj = arrax.random.key(1), real_jax.random.key(1)
  assert_same(arrax.random.multivariate_normal(ka, mean, cov, (2, 5), method=method),
              real_jax.random.multivariate_normal(kj, mean, cov, (2, 5), method=method))
  covs, means = np.stack([cov, 2 * cov])[:, None], np.stack([mean, -mean])[:, None]
  assert_same(arrax.random.multivariate_normal(ka, means, covs, method=method),
              real_jax.random.multivariate_normal(kj, means, covs, method=method))
  with pytest.raises(ValueError, match="method must be one of"):
    arrax.random.multivariate_normal(ka, mean, cov, method="qr")
  with pytest.raises(ValueError, match="cov.shape"):
    arrax.random.multivariate_normal(ka, mean, cov[:2, :2])


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_orthogonal_matches_jax(dtype):
  ka, kj = arrax.random.key(2), real_jax.random.key(2)
  for n, shape, m in [(3, (), None), (4, (2,), 2), (2, (), 5), (0, (), None)]:
    out = arrax.random.orthogonal(ka, n, shape, dtype, m)
    assert_same(out, real_jax.random.orthogonal(kj, n, shape, dtype, m))
    q = np.asarray(out)
    _assert_orthonormal_columns(q if q.shape[-2] >= q.shape[-1] else _H(q), dtype)
