"""arrax.scipy.linalg against jax.scipy.linalg 0.10.2.

Values, dtypes and shapes over float32 / complex64 (and float64 under x64), batched inputs where
JAX vectorizes; factorizations with a unique answer are compared directly, Schur forms and
Hessenberg reductions too (the same LAPACK kernels run on both sides); gradients of expm, solve,
cholesky and det against numerical ones; jit and vmap; the errors for bad inputs.
"""
import functools

import jax
import jax.scipy.linalg as jsl
import numpy as np
import pytest

import arrax
import arrax.scipy.linalg as asl
from arrax.test_util import check_grads
from oracle import assert_raises_like, assert_same, linalg_tol, rand


def _close(got, want, dtype=np.float32, scale=1.0):
  tol = linalg_tol(dtype, scale)
  g_leaves = arrax.tree_util.tree_leaves(got)
  w_leaves = jax.tree_util.tree_leaves(want)
  assert len(g_leaves) == len(w_leaves)
  if isinstance(want, (list, tuple)):
    assert type(got) is type(want), (type(got), type(want))
  for g, w in zip(g_leaves, w_leaves):
    assert_same(g, w, tol=(tol, tol), check_weak=False)


def both(name, *args, dtype=np.float32, scale=1.0, **kw):
  got = getattr(asl, name)(*args, **kw)
  want = getattr(jsl, name)(*args, **kw)
  _close(got, want, dtype, scale)
  return got


def _spd(shape, dtype, seed=0):
  x = rand(shape, dtype, seed)
  n = shape[-1]
  return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


DTYPES = [np.float32, np.complex64]
SHAPES = [(3, 3), (2, 4, 4), (1, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("lower", [False, True])
def test_cholesky_family(dtype, shape, lower):
  a = _spd(shape, dtype)
  both("cholesky", a, lower=lower, dtype=dtype)
  c = both("cho_factor", a, lower=lower, dtype=dtype)
  b = rand(shape[:-1] + (2,), dtype, 1)
  both("cho_solve", (np.asarray(c[0]), lower), b, dtype=dtype, scale=10)
  both("solve", a, b, assume_a="pos", lower=lower, dtype=dtype, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_general(dtype, shape):
  a = rand(shape, dtype, 2) + 3 * np.eye(shape[-1], dtype=dtype)
  b = rand(shape[:-1] + (3,), dtype, 3)
  both("det", a, dtype=dtype, scale=10)
  both("inv", a, dtype=dtype, scale=10)
  both("solve", a, b, dtype=dtype, scale=10)
  both("lu_factor", a, dtype=dtype)
  lu = jsl.lu_factor(a)
  for trans in (0, 1, 2):
    both("lu_solve", (np.asarray(lu[0]), np.asarray(lu[1])), b, trans=trans, dtype=dtype,
         scale=10)
  for trans in (0, 1, 2, "N", "T", "C"):
    for lower in (False, True):
      both("solve_triangular", a, b, trans=trans, lower=lower, dtype=dtype, scale=10)
  both("solve_triangular", a, b, lower=True, unit_diagonal=True, dtype=dtype, scale=10)
  both("solve_triangular", a, b[..., 0] if a.ndim == 2 else b[0, :, 0], dtype=dtype, scale=10)
  both("eigh", a + np.conj(np.swapaxes(a, -1, -2)), eigvals_only=True, dtype=dtype, scale=10)
  both("svd", a, compute_uv=False, dtype=dtype, scale=10)
  both("expm", a / 4, dtype=dtype, scale=10)
  both("schur", a, dtype=dtype, scale=10)
  both("hessenberg", a, calc_q=True, dtype=dtype, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_lu_qr(dtype, shape):
  a = rand(shape, dtype, 4)
  both("lu", a, dtype=dtype)
  both("lu", a, permute_l=True, dtype=dtype)
  # QR is unique up to column phases, which LAPACK fixes the same way on both sides.
  for mode in ("full", "r", "economic"):
    both("qr", a, mode=mode, dtype=dtype, scale=10)
    both("qr", a, mode=mode, pivoting=True, dtype=dtype, scale=10)
  m, n = shape
  k = min(m, n)
  both("qr_multiply", a, rand((2, m), dtype, 5), dtype=dtype, scale=10)
  both("qr_multiply", a, rand((k, 2), dtype, 5), mode="left", dtype=dtype, scale=10)
  both("qr_multiply", a, rand((k,), dtype, 5), mode="left", conjugate=True, dtype=dtype,
       scale=10)
  both("qr_multiply", a, rand((m,), dtype, 6), pivoting=True, dtype=dtype, scale=10)
  both("polar", a, method="svd", dtype=dtype, scale=10)
  if m >= n:
    both("polar", a, dtype=dtype, scale=10)
  both("polar", a, side="left", method="svd", dtype=dtype, scale=10)


def test_float64(x64):
  a = rand((5, 5), np.float64, 7)
  spd = _spd((5, 5), np.float64, 8)
  both("expm", a, dtype=np.float64, scale=100)
  both("expm", 8 * a, dtype=np.float64, scale=1e4)
  both("expm_frechet", a, a.T, dtype=np.float64, scale=100)
  both("sqrtm", spd, dtype=np.float64, scale=1e3)
  both("solve", spd, a, assume_a="pos", dtype=np.float64, scale=100)
  both("schur", a, output="complex", dtype=np.float64, scale=100)
  both("funm", spd / 10, np.exp, dtype=np.float64, scale=1e3)
  both("solve_sylvester", spd, spd, a, dtype=np.float64, scale=1e3)
  both("hilbert", 4, dtype=np.float64)
  both("dft", 4, dtype=np.float64)


@pytest.mark.parametrize("scale", [0.01, 0.3, 1.0, 3.0, 30.0, 1e3])
def test_expm_pade_branches(scale):
  # The 1-norm picks the Pade degree (3, 5, 7) and the number of squarings.
  a = rand((4, 4), np.float32, 9) * scale
  tol = 1e-3 if scale < 100 else 5e-2
  got, want = asl.expm(a), jsl.expm(a)
  assert_same(got, want, tol=(tol, tol * np.abs(np.asarray(want)).max()))
  both("expm", np.triu(a) / scale, upper_triangular=True, scale=10)
  both("expm", rand((2, 3, 3), np.complex64, 10), dtype=np.complex64, scale=10)
  assert np.isnan(np.asarray(asl.expm(a * 1e6, max_squarings=2))).all()


def test_expm_frechet():
  a, e = rand((3, 3), np.float32, 11), rand((3, 3), np.float32, 12)
  both("expm_frechet", a, e, scale=10)
  both("expm_frechet", a, e, compute_expm=False, scale=10)


def test_schur_based():
  a = rand((4, 4), np.float32, 13)
  spd = _spd((4, 4), np.float32, 14)
  t, z = jsl.schur(a)
  both("rsf2csf", np.asarray(t), np.asarray(z), dtype=np.complex64, scale=10)
  both("sqrtm", spd, dtype=np.complex64, scale=20)
  both("funm", spd / 8, np.exp, dtype=np.complex64, scale=20)
  got = asl.funm(spd / 8, arrax.numpy.exp, disp=False)
  want = jsl.funm(spd / 8, jax.numpy.exp, disp=False)
  _close(got, want, np.complex64, 20)
  for method in ("schur", "eigen"):
    both("solve_sylvester", spd, spd.T, a, method=method, scale=50)
  both("hessenberg", a + 0j, dtype=np.complex64, scale=10)
  both("hessenberg", np.zeros((0, 0), np.float32), calc_q=True)


SPECIAL = [
    ("block_diag", (np.ones((2, 3), np.float32), np.int32(4), np.arange(2.))),
    ("block_diag", ()),
    ("toeplitz", (np.arange(1, 4, dtype=np.float32),)),
    ("toeplitz", (np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(4, dtype=np.int32))),
    ("toeplitz", (np.array([1 + 2j, 3j], np.complex64),)),
    ("hankel", (np.arange(3, dtype=np.float32),)),
    ("hankel", (np.arange(3, dtype=np.float32), np.arange(5, dtype=np.float32))),
    ("circulant", (np.arange(4, dtype=np.int32),)),
    ("circulant", (np.arange(6, dtype=np.float32).reshape(2, 3),)),
    ("leslie", (np.float32([0.1, 2., 1.]), np.float32([0.2, 0.8]))),
    ("companion", (np.float32([2., -3., 1.]),)),
    ("companion", (np.arange(1, 7, dtype=np.int32).reshape(2, 3),)),
    ("fiedler", (np.float32([1., 4., 12., 45.]),)),
    ("fiedler_companion", (np.float32([1., -2., 3., -4., 5.]),)),
    ("fiedler_companion", (np.float32([2., 4.]),)),
    ("convolution_matrix", (np.float32([1., 2., 3.]), 4)),
    ("convolution_matrix", (np.float32([1., 2., 3.]), 5, "same")),
    ("convolution_matrix", (np.float32([1., 2., 3.]), 4, "valid")),
    ("hilbert", (5,)), ("invhilbert", (4,)), ("pascal", (5,)), ("pascal", (4, "lower")),
    ("pascal", (4, "upper")), ("invpascal", (4,)), ("invpascal", (4, "upper")),
    ("helmert", (5,)), ("helmert", (4, True)), ("hadamard", (8,)), ("hadamard", (4, float)),
    ("dft", (5,)), ("dft", (4, "sqrtn")), ("dft", (3, "n")),
]


@pytest.mark.parametrize("name,args", SPECIAL)
def test_special_matrices(name, args):
  got = getattr(asl, name)(*args)
  want = getattr(jsl, name)(*args)
  assert_same(got, want, tol=(1e-5, 1e-4))


@pytest.mark.parametrize("call", [
    lambda m: m.expm(np.ones((2, 3), np.float32)),
    lambda m: m.solve(np.eye(2), np.ones(2), assume_a="bad"),
    lambda m: m.schur(np.eye(2), output="bad"),
    lambda m: m.solve_triangular(np.eye(2), np.ones(2), trans=3),
    lambda m: m.qr(np.eye(2), mode="bad"),
    lambda m: m.eigh(np.eye(2), np.eye(2)),
    lambda m: m.polar(np.ones((2, 3)), side="right"),
    lambda m: m.polar(np.ones(3)),
    lambda m: m.leslie(np.ones(3), np.ones(3)),
    lambda m: m.hadamard(6),
    lambda m: m.pascal(3, "bad"),
    lambda m: m.dft(3, "bad"),
    lambda m: m.sqrtm(np.eye(2), blocksize=2),
    lambda m: m.rsf2csf(np.eye(2), np.eye(3)),
    lambda m: m.solve_sylvester(np.eye(2), np.eye(3), np.ones((3, 2))),
    lambda m: m.expm_frechet(np.eye(2), np.eye(3)),
    lambda m: m.qr_multiply(np.eye(3), np.ones((2, 2)), mode="left"),
    lambda m: m.convolution_matrix(np.ones(3), 0),
])
def test_errors(call):
  assert_raises_like(lambda: call(jsl), lambda: call(asl))


def test_batched_1d_solve_warns():
  a = np.stack([np.eye(3, dtype=np.float32)] * 2)
  b = np.ones((2, 3), np.float32)
  with pytest.warns(FutureWarning):
    got = asl.solve_triangular(a, b)
  with pytest.warns(FutureWarning):
    want = jsl.solve_triangular(a, b)
  assert_same(got, want)


# ---- transformations ----------------------------------------------------------------------
GRADS = [
    (lambda a: asl.expm(a), (rand((3, 3), np.float32, 20) / 2,)),
    (lambda a: asl.expm(a), (rand((3, 3), np.float32, 21) * 3,)),
    (lambda a: asl.det(a), (rand((3, 3), np.float32, 22),)),
    (lambda a, b: asl.solve(a @ a.T + 3 * arrax.numpy.eye(3), b, assume_a="pos"),
     (rand((3, 3), np.float32, 23), rand((3, 2), np.float32, 24))),
    (lambda a: asl.cholesky(a @ a.T + 3 * arrax.numpy.eye(3)), (rand((3, 3), np.float32, 25),)),
    (lambda a, b: asl.solve_triangular(a + 3 * arrax.numpy.eye(3), b, lower=True),
     (rand((3, 3), np.float32, 26), rand((3,), np.float32, 27))),
    (lambda a: asl.toeplitz(a), (rand((4,), np.float32, 28),)),
]


@pytest.mark.parametrize("i", range(len(GRADS)))
def test_check_grads(i):
  fn, args = GRADS[i]
  check_grads(fn, args, order=1, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)


def test_expm_grad_matches_jax():
  a = rand((3, 3), np.float32, 30)
  got = arrax.grad(lambda x: asl.expm(x).sum())(a)
  want = jax.grad(lambda x: jsl.expm(x).sum())(a)
  assert_same(got, want, tol=(1e-4, 1e-4))


def test_jit_and_vmap():
  a = rand((3, 4, 4), np.float32, 31) / 2
  assert_same(arrax.jit(asl.expm)(a), jax.jit(jsl.expm)(a), tol=(1e-4, 1e-5))
  assert_same(arrax.vmap(asl.expm)(a), jax.vmap(jsl.expm)(a), tol=(1e-4, 1e-5))
  f = functools.partial(asl.lu, permute_l=False)
  g = functools.partial(jsl.lu, permute_l=False)
  _close(arrax.vmap(f)(a), jax.vmap(g)(a))
  spd = _spd((3, 4, 4), np.float32, 32)
  b = rand((3, 4), np.float32, 33)
  assert_same(arrax.vmap(lambda x, y: asl.solve(x, y, assume_a="pos"))(spd, b),
              jax.vmap(lambda x, y: jsl.solve(x, y, assume_a="pos"))(spd, b), tol=(1e-4, 1e-5))
  _close(arrax.vmap(asl.schur)(a), jax.vmap(jsl.schur)(a), scale=10)
  assert_same(arrax.vmap(asl.toeplitz)(a[:, 0]), jax.vmap(jsl.toeplitz)(a[:, 0]))


def test_lax_schur_hessenberg():
  a = rand((2, 3, 3), np.float32, 34)
  _close(arrax.lax.linalg.schur(a), jax.lax.linalg.schur(a))
  _close(arrax.lax.linalg.schur(a, compute_schur_vectors=False),
         jax.lax.linalg.schur(a, compute_schur_vectors=False))
  _close(arrax.lax.linalg.hessenberg(a), jax.lax.linalg.hessenberg(a))
  for fn in (lambda m, x: m.lax.linalg.schur(x), lambda m, x: m.lax.linalg.hessenberg(x)):
    assert str(arrax.make_jaxpr(lambda x: fn(arrax, x))(a[0])) == \
        str(jax.make_jaxpr(lambda x: fn(jax, x))(a[0]))
  with pytest.raises(NotImplementedError):
    arrax.grad(lambda x: arrax.lax.linalg.schur(x)[0].sum())(a[0])


# ---- the program expm builds is JAX's (same XLA underneath, so the same speed) ------------------
def _same_jaxpr(fa, fj, *args):
  want = str(jax.make_jaxpr(fj)(*args))
  got = str(arrax.make_jaxpr(fa)(*args))
  assert got == want, f"\narrax:\n{got}\njax:\n{want}"


EXPM_JAXPR_CASES = [((64, 64), np.float32, {}), ((3, 3), np.float32, {}),
                    ((4, 8, 8), np.float32, {}), ((3, 3), np.complex64, {}),
                    ((3, 3), np.float32, {"upper_triangular": True}),
                    ((3, 3), np.float32, {"max_squarings": 4})]


@pytest.mark.parametrize("shape,dtype,kw", EXPM_JAXPR_CASES,
                         ids=[f"{s}-{np.dtype(d).name}-{k}" for s, d, k in EXPM_JAXPR_CASES])
def test_expm_jaxpr(shape, dtype, kw):
  a = np.zeros(shape, dtype)
  _same_jaxpr(lambda x: asl.expm(x, **kw), lambda x: jsl.expm(x, **kw), a)


def test_expm_jvp_frechet_jaxpr():
  a, e = np.zeros((3, 3), np.float32), np.ones((3, 3), np.float32)
  _same_jaxpr(lambda a, e: arrax.jvp(asl.expm, (a,), (e,)),
              lambda a, e: jax.jvp(jsl.expm, (a,), (e,)), a, e)
  _same_jaxpr(asl.expm_frechet, jsl.expm_frechet, a, e)


def test_expm_jaxpr_x64(x64):
  _same_jaxpr(asl.expm, jsl.expm, np.zeros((3, 3), np.float64))
