"""arrax.scipy.stats.gaussian_kde against jax.scipy.stats.gaussian_kde 0.10.2: bandwidth rules,
weights, evaluate/logpdf, the integrals, resample (same random bits), pytree under jit and vmap,
and the errors."""
import jax
import jax.scipy.stats as jst
import numpy as np
import pytest

import arrax
import arrax.scipy.stats as ast
from oracle import assert_raises_like, assert_same

RS = np.random.RandomState(0)
D1 = RS.randn(20).astype(np.float32)
D2 = RS.randn(2, 30).astype(np.float32)
W = RS.rand(30).astype(np.float32)
PTS = RS.randn(2, 5).astype(np.float32)
TOL = (1e-4, 1e-6)


@pytest.mark.parametrize("bw", [None, "scott", "silverman", 0.5, lambda k: 0.3])
@pytest.mark.parametrize("weighted", [False, True])
def test_evaluate(bw, weighted):
  w = W if weighted else None
  a, j = ast.gaussian_kde(D2, bw, weights=w), jst.gaussian_kde(D2, bw, weights=w)
  for name in ("neff", "dataset", "weights", "covariance", "inv_cov"):
    assert_same(getattr(a, name), getattr(j, name), tol=TOL)
  assert_same(a(PTS), j(PTS), tol=TOL)
  assert_same(a.pdf(PTS), j.pdf(PTS), tol=TOL)
  assert_same(a.logpdf(PTS), j.logpdf(PTS), tol=TOL)
  assert_same(a.evaluate(PTS[:, 0]), j.evaluate(PTS[:, 0]), tol=TOL)
  assert (a.d, a.n) == (j.d, j.n)


def test_integrals_and_resample():
  a, j = ast.gaussian_kde(D1), jst.gaussian_kde(D1)
  assert_same(a.pdf(np.float32([0., 1.])), j.pdf(np.float32([0., 1.])), tol=TOL)
  assert_same(a.integrate_box_1d(-1., 0.5), j.integrate_box_1d(-1., 0.5), tol=TOL)
  assert_same(a.integrate_gaussian(0.3, 2.), j.integrate_gaussian(0.3, 2.), tol=TOL)
  assert_same(a.integrate_kde(ast.gaussian_kde(D1[:7])),
              j.integrate_kde(jst.gaussian_kde(D1[:7])), tol=TOL)
  a2, j2 = ast.gaussian_kde(D2, weights=W), jst.gaussian_kde(D2, weights=W)
  assert_same(a2.integrate_gaussian(np.float32([0., 1.]), np.eye(2, dtype=np.float32)),
              j2.integrate_gaussian(np.float32([0., 1.]), np.eye(2, dtype=np.float32)), tol=TOL)
  assert_same(a2.resample(arrax.random.key(0), (4,)), j2.resample(jax.random.key(0), (4,)),
              tol=TOL)
  assert_same(a2.resample(arrax.random.key(1)), j2.resample(jax.random.key(1)), tol=TOL)


def test_pytree_jit_vmap():
  a, j = ast.gaussian_kde(D1), jst.gaussian_kde(D1)
  x = np.float32([0., 1., -2.])
  assert_same(arrax.jit(lambda k, p: k(p))(a, x), jax.jit(lambda k, p: k(p))(j, x), tol=TOL)
  assert len(arrax.tree_util.tree_leaves(a)) == len(jax.tree_util.tree_leaves(j))
  assert_same(arrax.vmap(lambda p: a.logpdf(p))(x), jax.vmap(lambda p: j.logpdf(p))(x), tol=TOL)


@pytest.mark.parametrize("call", [
    lambda m: m.gaussian_kde(np.ones(1)), lambda m: m.gaussian_kde(D2, "bad"),
    lambda m: m.gaussian_kde(D2.astype(np.complex64)),
    lambda m: m.gaussian_kde(D2, weights=np.ones(5)),
    lambda m: m.gaussian_kde(D2, weights=np.ones((2, 30))),
    lambda m: m.gaussian_kde(D2)(np.ones((3, 2), np.float32)),
    lambda m: m.gaussian_kde(D2).integrate_box_1d(0., 1.),
    lambda m: m.gaussian_kde(D1).integrate_box_1d(np.zeros(2), 1.),
    lambda m: m.gaussian_kde(D2).integrate_box(0., 1.),
    lambda m: m.gaussian_kde(D2).set_bandwidth("scott"),
    lambda m: m.gaussian_kde(D2).integrate_gaussian(np.zeros(3), np.eye(2)),
    lambda m: m.gaussian_kde(D2).integrate_kde(m.gaussian_kde(D1)),
])
def test_errors(call):
  assert_raises_like(lambda: call(jst), lambda: call(ast))
