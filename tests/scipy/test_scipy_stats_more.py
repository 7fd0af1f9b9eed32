"""The newer arrax.scipy.stats distributions (binom, betabinom, geom, nbinom, multinomial,
chi2, pareto, gumbel_r, gumbel_l, dirichlet, vonmises, wrapcauchy, gennorm, and beta's
cdf/sf family) against jax.scipy.stats 0.10.2: values over support edges and nan, broadcasting,
dtypes and weak types, float64 (x64), gradients, jit, vmap and errors."""
import jax
import jax.scipy.stats as jst
import numpy as np
import pytest

import arrax
import arrax.scipy.stats as ast
from arrax.test_util import check_grads
from oracle import assert_raises_like, assert_same

X = np.float32([-np.inf, -1., -0., 0., 0.3, 1., 2.5, 4., 30., np.inf, np.nan])
K = np.float32([-1., 0., 1., 2., 2.5, 3., 5., 6., np.nan])
U = np.float32([-0.1, 0., 0.1, 0.5, 0.9, 1., 1.5, np.nan])


def both(dist, fn, *args, tol=(1e-4, 1e-6)):
  got = getattr(getattr(ast, dist), fn)(*args)
  want = getattr(getattr(jst, dist), fn)(*args)
  assert_same(got, want, tol=tol)


DISCRETE = [("binom", (5., 0.3)), ("binom", (np.float32([0., 3., 5.])[:, None], 1.)),
            ("binom", (4., 0.)), ("betabinom", (5., 2., 3.)), ("betabinom", (5., -1., 3.)),
            ("geom", (0.3,)), ("geom", (np.float32([0.1, 1.])[:, None],)),
            ("nbinom", (3., 0.4)), ("nbinom", (np.float32([1., 2.5])[:, None], 0.9))]


@pytest.mark.parametrize("dist,params", DISCRETE)
@pytest.mark.parametrize("fn", ["logpmf", "pmf"])
def test_discrete(dist, params, fn):
  both(dist, fn, K, *params)
  both(dist, fn, K, *params, 1.)   # loc


def test_multinomial():
  x = np.int32([[1, 2, 0], [3, 0, 0], [0, 0, 3]])
  p = np.float32([0.2, 0.5, 0.3])
  for fn in ("logpmf", "pmf"):
    both("multinomial", fn, x, 3, p)
    both("multinomial", fn, x[1], 3, p)
    both("multinomial", fn, np.int32([1, 1]), 2, np.float32([0.5, 0.5]))
  with pytest.raises(ValueError):
    ast.multinomial.logpmf(np.float32([1., 2.]), 3, p[:2])


CONT = {"chi2": [(3.,), (np.float32([1., 2., 10.])[:, None], 0.5, 2.)],
        "pareto": [(2.,), (np.float32([0.5, 3.])[:, None], -1., 2.)],
        "gumbel_r": [(), (0.5, 2.), (0., -1.)],
        "gumbel_l": [(), (0.5, 2.), (0., -1.)],
        "beta": [(2., 3.), (np.float32([0.5, 1., 4.])[:, None], 2., -0.5, 3.)]}


@pytest.mark.parametrize("dist", sorted(CONT))
@pytest.mark.parametrize("fn", ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"])
def test_continuous(dist, fn):
  for params in CONT[dist]:
    both(dist, fn, X / 4 if dist == "beta" else X, *params)


@pytest.mark.parametrize("dist", ["pareto", "gumbel_r", "gumbel_l"])
def test_ppf(dist):
  for params in CONT[dist]:
    both(dist, "ppf", U, *params)


def test_circular_and_gennorm():
  angles = np.float32([-1., 0., 1., np.pi, 6., 7., np.nan])
  for fn in ("logpdf", "pdf"):
    both("vonmises", fn, angles, np.float32([0.5, 2., 50., -1.])[:, None])
    both("wrapcauchy", fn, angles, np.float32([0.1, 0.5, 0.99, 1.5, -0.2])[:, None])
    both("gennorm", fn, X, np.float32([0.5, 1., 2., 8.])[:, None])
  both("gennorm", "cdf", X, np.float32([0.5, 1., 2., 8.])[:, None])


def test_dirichlet():
  alpha = np.float32([1., 2., 3.])
  x3 = np.float32([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])
  for fn in ("logpdf", "pdf"):
    both("dirichlet", fn, x3, alpha)
    both("dirichlet", fn, x3[:2], alpha)
    both("dirichlet", fn, np.float32([0.2, 0.3, 0.6]), alpha)
  for call in (lambda m: m.dirichlet.logpdf(x3, np.ones((2, 3))),
               lambda m: m.dirichlet.logpdf(x3[:1], alpha)):
    with pytest.raises(ValueError):
      call(jst)
    with pytest.raises(ValueError):
      call(ast)


def test_scalars_and_float64(x64):
  both("chi2", "logpdf", 2, 3)
  both("binom", "pmf", 2, 5, 0.5)
  both("gumbel_r", "cdf", 1.0)
  x = np.linspace(0.01, 5, 9)
  both("chi2", "cdf", x, 2.5, tol=(1e-10, 1e-12))
  both("pareto", "logpdf", x + 1, 1.5, tol=(1e-10, 1e-12))
  both("beta", "sf", x / 5, 2., 0.5, tol=(1e-10, 1e-12))


def test_grads_jit_vmap():
  x = np.float32([0.5, 1.5, 3.])
  for fn, args in [(ast.chi2.logpdf, (x, np.float32(3.))),
                   (ast.pareto.logpdf, (x + 1, np.float32(2.))),
                   (ast.gumbel_r.logcdf, (x, np.float32(0.5), np.float32(2.))),
                   (ast.gumbel_l.logcdf, (x, np.float32(0.5), np.float32(2.))),
                   (ast.vonmises.logpdf, (x, np.float32(2.))),
                   (ast.wrapcauchy.logpdf, (x, np.float32(0.5))),
                   (ast.binom.logpmf, (np.float32([1., 2.]), np.float32(5.), np.float32(0.3)))]:
    check_grads(fn, args, order=1, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)
  assert_same(arrax.grad(ast.beta.cdf)(0.3, 2., 3.), jax.grad(jst.beta.cdf)(0.3, 2., 3.),
              tol=(1e-3, 1e-5))
  for lib in (ast, jst):   # betainc has no derivative in a, b in either library
    with pytest.raises(ValueError):
      (arrax if lib is ast else jax).grad(lib.beta.cdf, 1)(0.3, 2., 3.)
  assert_same(arrax.jit(ast.betabinom.pmf)(K, 5., 2., 3.),
              jax.jit(jst.betabinom.pmf)(K, 5., 2., 3.), tol=(1e-5, 1e-6))
  assert_same(arrax.vmap(ast.chi2.cdf, (None, 0))(x, x), jax.vmap(jst.chi2.cdf, (None, 0))(x, x),
              tol=(1e-5, 1e-6))


@pytest.mark.parametrize("fn", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"])
def test_truncnorm(fn):
  x = np.float32([-np.inf, -3., -1., 0., 0.3, 1., 2.5, 4., np.inf, np.nan])
  both("truncnorm", fn, x, -1., 2.)
  both("truncnorm", fn, x, 0.5, 3., 0.2, 2.)
  both("truncnorm", fn, x, np.float32([-5., 1., 2.])[:, None], 6.)
  both("truncnorm", fn, x, 2., 1.)   # a >= b: nan


SAMPLE = np.float32([[1, 2, 2, 3], [3, 3, 1, 1], [0, 5, 5, 5]])


@pytest.mark.parametrize("kw", [{}, {"axis": 1}, {"axis": None}, {"keepdims": True},
                                {"axis": -1, "keepdims": True}])
def test_mode_sem(kw):
  assert_same(ast.mode(SAMPLE, **kw), jst.mode(SAMPLE, **kw))
  assert_same(ast.mode(SAMPLE.astype(np.int32), **kw), jst.mode(SAMPLE.astype(np.int32), **kw))
  assert_same(ast.sem(SAMPLE, **kw), jst.sem(SAMPLE, **kw), tol=(1e-5, 1e-6))
  assert_same(ast.sem(SAMPLE, ddof=0, nan_policy="omit", **kw),
              jst.sem(SAMPLE, ddof=0, nan_policy="omit", **kw), tol=(1e-5, 1e-6))


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_rankdata(method):
  assert_same(ast.rankdata(SAMPLE, method), jst.rankdata(SAMPLE, method))
  assert_same(ast.rankdata(SAMPLE, method, axis=1), jst.rankdata(SAMPLE, method, axis=1))
  assert_same(ast.rankdata(np.float32([1., np.nan]), method),
              jst.rankdata(np.float32([1., np.nan]), method))


@pytest.mark.parametrize("call", [
    lambda m: m.mode(SAMPLE, nan_policy="omit"), lambda m: m.mode(SAMPLE, nan_policy="bad"),
    lambda m: m.rankdata(SAMPLE, "bad"), lambda m: m.rankdata(SAMPLE, nan_policy="raise"),
    lambda m: m.sem(SAMPLE, nan_policy="raise"),
])
def test_sample_statistics_errors(call):
  assert_raises_like(lambda: call(jst), lambda: call(ast))


def test_poisson_entropy():
  mu = np.float32([0., 0.1, 1., 5., 9.9, 10., 50., 99., 100., 1e4])
  both("poisson", "entropy", mu, tol=(1e-5, 1e-6))
  both("poisson", "entropy", mu[:4, None], np.float32([0., 2.]), tol=(1e-5, 1e-6))
  both("poisson", "entropy", 3, tol=(1e-5, 1e-6))
  assert_same(arrax.jit(ast.poisson.entropy)(mu), jax.jit(jst.poisson.entropy)(mu),
              tol=(1e-5, 1e-6))
