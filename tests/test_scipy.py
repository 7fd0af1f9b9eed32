"""arrax.scipy.special and arrax.scipy.stats against jax.scipy 0.10.2.

Values (nan where JAX gives nan), dtypes, shapes and weak types over grids that include the edge
values (0, -0, poles, +-inf, nan, the ends of each support); float64 paths under x64; gradients
(check_grads where smooth, and equality with JAX's custom-JVP gradients at the edges); jit and
vmap; a few traced jaxprs compared as text; and the error classes.
"""
import functools

import jax
import jax.scipy as jsp
import numpy as np
import pytest

import arrax
import arrax.scipy as asp
from arrax.test_util import check_grads
import oracle
from oracle import assert_raises_like, assert_same, both, named

# Cases are names under scipy; both libraries run under jit unless `eager` (one compilation
# instead of one per operation keeps the file fast; XLA's fusion can change the last bit, so the
# two sides must run the same way; the eager path is covered by the scalar and some grid cases).
check = functools.partial(oracle.check, build=named("scipy"), convert=None, eager=False, jit=True,
                          tol=(2e-5, 1e-6), strict_tree=True)

GRID = np.array([-np.inf, -3.5, -2., -1., -0.5, -0., 0., 1e-3, 0.5, 1., 2.5, 7., 30., np.inf,
                 np.nan], np.float32)
POS = np.array([0., 1e-3, 0.3, 1., 2., 4.5, 10., 40., np.inf, np.nan], np.float32)
UNIT = np.array([0., 1e-6, 0.01, 0.1, 0.3, 0.5, 0.8, 0.99, 1. - 1e-6, 1., np.nan], np.float32)


# ---- special: elementwise --------------------------------------------------------------------
UNARY = ["gammaln", "digamma", "erf", "erfc", "expit", "ndtr", "log_ndtr", "entr", "gamma",
         "gammasgn", "factorial"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_grid(name):
  check(f"special.{name}", GRID, tol=(5e-5, 1e-6), eager=name in ("log_ndtr", "gammasgn"),
        jit=name not in ("log_ndtr", "gammasgn"))


@pytest.mark.parametrize("name", ["erfinv", "logit", "ndtri"])
def test_unit_interval(name):
  # Outside [0, 1] too: nan or +-inf, as JAX.
  check(f"special.{name}", np.concatenate([UNIT, np.float32([-0.5, 1.5])]), tol=(5e-5, 1e-6))


BINARY = ["xlogy", "xlog1py", "gammainc", "gammaincc", "betaln", "beta", "rel_entr", "kl_div",
          "comb", "boxcox", "boxcox1p"]


@pytest.mark.parametrize("name", BINARY)
def test_binary(name):
  x, y = np.meshgrid(np.float32([-1., 0., 0.5, 2., 9., np.nan]),
                     np.float32([-1., 0., 0.5, 3., 12., np.inf]))
  check(f"special.{name}", x, y, tol=(1e-4, 2e-6))


def test_polygamma_and_multigammaln():
  check("special.polygamma", np.int32([0, 1, 2, 3])[:, None], POS[None, :6], tol=(1e-4, 1e-6))
  check("special.multigammaln", np.float32([2., 3.5, 10.]), 3, tol=(1e-5, 1e-6), eager=True,
        jit=False)
  check("special.multigammaln", 4.0, 2, eager=True, jit=False)


@pytest.mark.parametrize("name,args", [
    ("special.gammaln", (1.5,)), ("special.erf", (2,)), ("special.xlogy", (2, 3.0)),
    ("special.gammainc", (1, 2)), ("special.betaln", (np.float32(1.), 2.)),
    ("special.ndtr", (0.5,)), ("special.log_ndtr", (-12.0,)), ("special.factorial", (4,)),
    ("special.logsumexp", (2.0,)), ("stats.norm.logpdf", (1.0,)), ("stats.norm.cdf", (1,)),
    ("stats.gamma.logpdf", (1.0, 2)), ("stats.poisson.logpmf", (3, 2.0)),
    ("stats.expon.cdf", (np.float32(1.), 2.)),
])
def test_scalar_promotion_and_weak_types(name, args):
  check(name, *args, eager=True, jit=False)


def test_float64_paths(x64):
  x = np.linspace(-30, 10, 17)
  check("special.log_ndtr", x, tol=(1e-12, 1e-6))
  check("special.ndtr", x, tol=(1e-12, 1e-300))
  p = np.array([0., 1e-300, 1e-20, 1e-5, 0.1, 0.5, 0.9, 1 - 1e-12, 1.])
  check("special.ndtri", p, tol=(1e-12, 1e-6))
  check("special.betaln", np.array([0.5, 3., 20.]), np.array([9., 100., 1e4]), tol=(1e-12, 1e-6))
  check("stats.norm.ppf", p[1:-1], 1.0, 2.0, tol=(1e-12, 1e-6))


def test_log_ndtr_series_order():
  x = np.float32([-40., -15., -11.])
  for order in (0, 1, 5):
    check("special.log_ndtr", x, series_order=order)


# ---- logsumexp, softmax -----------------------------------------------------------------------
A = np.array([[1., -2., 0.5], [-np.inf, -np.inf, -np.inf], [3., np.inf, 1.]], np.float32)
B = np.array([[1., 2., -4.], [1., 1., 1.], [0., 1., 1.]], np.float32)
W = np.array([[True, False, True], [True, True, False], [False, True, True]])


@pytest.mark.parametrize("kw", [
    {}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"axis": (0, 1)}, {"axis": -1, "b": B},
    {"axis": 1, "b": B, "return_sign": True}, {"b": 2.0}, {"axis": 1, "where": W},
    {"axis": 0, "b": B, "keepdims": True, "return_sign": True},
])
def test_logsumexp(kw):
  check("special.logsumexp", A, **kw)
  check("special.logsumexp", A[::2, :], **kw) if "b" not in kw and "where" not in kw else None


def test_logsumexp_int_and_empty():
  check("special.logsumexp", np.arange(5, dtype=np.int32))
  check("special.logsumexp", np.zeros((0, 3), np.float32), axis=0)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax(name):
  x = np.array([[1., -2., 0.5], [3., 3., -np.inf]], np.float32)
  check(f"special.{name}", x)
  check(f"special.{name}", x, axis=0)
  check(f"special.{name}", x, axis=-1)
  check(f"special.{name}", x, axis=(0, 1))


# ---- stats --------------------------------------------------------------------------------------
X = np.float32([-np.inf, -4., -1., -0., 0., 0.3, 1., 2.5, 9., np.inf, np.nan])
CONT = {
    "norm": ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"],
    "expon": ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"],
    "laplace": ["pdf", "logpdf", "cdf"],
    "logistic": ["pdf", "logpdf", "cdf", "sf"],
    "cauchy": ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"],
    "uniform": ["pdf", "logpdf", "cdf"],
}
QUANTILE = {"norm": ["ppf", "isf"], "expon": ["ppf"], "logistic": ["ppf", "isf"],
            "cauchy": ["ppf", "isf"], "uniform": ["ppf"]}


@pytest.mark.parametrize("dist", sorted(CONT))
def test_loc_scale_families(dist):
  for fn in CONT[dist]:
    check(f"stats.{dist}.{fn}", X, tol=(1e-5, 1e-6), eager=fn == "logcdf", jit=fn != "logcdf")
    check(f"stats.{dist}.{fn}", X[:, None], np.float32([-1., 0.5]), np.float32([0.5, 3.]),
          tol=(1e-5, 1e-6))
  for fn in QUANTILE.get(dist, ()):
    check(f"stats.{dist}.{fn}", UNIT, 0.5, 2.0, tol=(1e-4, 1e-5))


@pytest.mark.parametrize("fn", ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"])
def test_gamma(fn):
  check(f"stats.gamma.{fn}", X[:, None], np.float32([0.5, 1., 4.]), tol=(1e-4, 1e-6))
  if fn in ("logpdf", "cdf", "sf"):
    check(f"stats.gamma.{fn}", X, 2.0, 1.0, 0.5, tol=(1e-4, 1e-6))


def test_beta_t():
  x = np.float32([-0.5, 0., 0.2, 0.5, 0.9, 1., 1.5])[:, None]
  for fn in ("pdf", "logpdf"):
    check(f"stats.beta.{fn}", x, np.float32([0.5, 1., 2., -1.]), 3.0, tol=(1e-4, 1e-6))
    check(f"stats.beta.{fn}", x, 2.0, 2.0, -0.5, 2.0, tol=(1e-4, 1e-6))
    check(f"stats.t.{fn}", X[:, None], np.float32([1., 3., 30.]), tol=(1e-4, 1e-6))


@pytest.mark.parametrize("fn", ["pmf", "logpmf", "cdf"])
def test_discrete(fn):
  k = np.float32([-1., 0., 1., 2., 2.5, 5., 20.])[:, None]
  check(f"stats.poisson.{fn}", k, np.float32([0., 0.5, 3.]), tol=(1e-4, 1e-7))
  check(f"stats.poisson.{fn}", k, 3.0, 1.0, tol=(1e-4, 1e-7))
  check(f"stats.bernoulli.{fn}", k[:4], np.float32([0., 0.3, 1., 1.5]), tol=(1e-5, 1e-6))
  check("stats.bernoulli.ppf", UNIT[:, None], np.float32([0., 0.3, 1.]))


COV = np.array([[2., .5, 0.], [.5, 1., .2], [0., .2, 1.5]], np.float32)
XS = np.random.RandomState(0).randn(4, 3).astype(np.float32)


def test_multivariate_normal():
  mean = np.float32([0.5, -1., 0.])
  for fn in ("pdf", "logpdf"):
    check(f"stats.multivariate_normal.{fn}", XS, mean, COV, tol=(1e-5, 1e-6))
  check("stats.multivariate_normal.logpdf", XS, mean, 2.0)
  check("stats.multivariate_normal.logpdf", XS[:, 0], 0.5, 2.0)
  covs = np.stack([COV, 2 * COV])
  check("stats.multivariate_normal.logpdf", XS[:2], mean, covs, tol=(1e-5, 1e-6))


# ---- transformations ----------------------------------------------------------------------
SMOOTH = [
    (asp.special.xlogy, (np.float32([0.5, 2.]), np.float32([1.5, 3.]))),
    (asp.special.xlog1py, (np.float32([0.5, 2.]), np.float32([0.5, 3.]))),
    (asp.special.logit, (np.float32([0.2, 0.7]),)),
    (asp.special.log_ndtr, (np.float32([-12., -1., 0.5, 6.]),)),
    (asp.special.ndtri, (np.float32([0.05, 0.5, 0.9]),)),
    (asp.special.betaln, (np.float32([0.5, 3.]), np.float32([2., 11.]))),
    (asp.special.entr, (np.float32([0.2, 1.5]),)),
    (lambda a, b: asp.special.logsumexp(a, axis=0, b=b), (A[0], np.float32([1., 2., 0.5]))),
    (functools.partial(asp.special.softmax, axis=0), (A[0],)),
    (asp.special.log_softmax, (A[0],)),
    (asp.stats.norm.logpdf, (np.float32([0.3, -1.]), np.float32(0.5), np.float32(2.))),
    (asp.stats.gamma.logpdf, (np.float32([0.3, 2.]), np.float32(2.5))),
    (asp.stats.t.logpdf, (np.float32([0.3, -2.]), np.float32(3.))),
    (lambda x, c: asp.stats.multivariate_normal.logpdf(x, np.zeros(3, np.float32), c @ c.T),
     (XS[0], COV)),
]


@pytest.mark.parametrize("i", range(len(SMOOTH)))
def test_check_grads(i):
  fn, args = SMOOTH[i]
  check_grads(fn, args, order=1, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)


EDGE_GRADS = [
    ("special.xlogy", (0., 0.), (0, 1)),       # custom JVP: log(0) for x, 0/0 for y
    ("special.xlogy", (0., 2.), (0, 1)),
    ("special.xlog1py", (0., -1.), (0, 1)),
    ("special.entr", (0.,), (0,)),
    ("special.log_ndtr", (-30.,), (0,)),
    ("special.log_ndtr", (10.,), (0,)),
    ("special.logit", (0.5,), (0,)),
    ("stats.norm.logcdf", (-25.,), (0,)),
    ("stats.gamma.logpdf", (0., 1.), (0, 1)),
]


@pytest.mark.parametrize("name,args,argnums", EDGE_GRADS)
def test_grads_match_jax(name, args, argnums):
  afn, jfn = both(name, named("scipy"))
  got = arrax.grad(afn, argnums)(*args)
  want = jax.grad(jfn, argnums)(*args)
  for g, w in zip(got, want):
    assert_same(g, w, rtol=1e-5)


def test_logsumexp_grad_at_infinities():
  x = np.float32([-np.inf, 1., np.inf])
  afn, jfn = both("special.logsumexp", named("scipy"))
  assert_same(arrax.grad(afn)(x), jax.grad(jfn)(x))
  y = np.float32([-np.inf, -np.inf])
  assert_same(arrax.grad(afn)(y), jax.grad(jfn)(y))


def test_jit_and_vmap():
  covs = np.stack([COV, 2 * COV, COV + np.eye(3, dtype=np.float32)])
  f = asp.stats.multivariate_normal.logpdf
  got = arrax.jit(arrax.vmap(f, in_axes=(None, None, 0)))(XS, np.zeros(3, np.float32), covs)
  want = jax.vmap(jsp.stats.multivariate_normal.logpdf, in_axes=(None, None, 0))(
      XS, np.zeros(3, np.float32), covs)
  assert_same(got, want, rtol=1e-5)
  g = arrax.vmap(lambda a: asp.special.logsumexp(a, return_sign=True))(A)
  w = jax.vmap(lambda a: jsp.special.logsumexp(a, return_sign=True))(A)
  for x, y in zip(g, w):
    assert_same(x, y)
  got = arrax.jit(asp.stats.poisson.cdf)(np.float32([0., 3., 7.]), np.float32(2.5))
  assert_same(got, jsp.stats.poisson.cdf(np.float32([0., 3., 7.]), np.float32(2.5)), rtol=1e-5)
  got = arrax.vmap(arrax.grad(asp.special.log_ndtr))(np.float32([-20., 0., 3.]))
  assert_same(got, jax.vmap(jax.grad(jsp.special.log_ndtr))(np.float32([-20., 0., 3.])),
              rtol=1e-5)


@pytest.mark.parametrize("fn", [
    lambda s, x: s.special.logsumexp(x, axis=1),
    lambda s, x: s.special.xlogy(x, x + 1),
    lambda s, x: s.stats.norm.logpdf(x, 1.0, 2.0),
    lambda s, x: s.special.expit(x) * s.special.erf(x),
])
def test_jaxpr_text(fn):
  x = np.arange(6, dtype=np.float32).reshape(2, 3) / 3
  want = str(jax.make_jaxpr(lambda v: fn(jsp, v))(x))
  got = str(arrax.make_jaxpr(lambda v: fn(asp, v))(x))
  assert got == want, f"arrax:\n{got}\njax:\n{want}"


# ---- errors -------------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda s: s.special.polygamma(1.0, 2.0),
    lambda s: s.special.ndtr(np.int32(1)),
    lambda s: s.special.ndtri(np.float16(0.5)),
    lambda s: s.special.log_ndtr(1.0, series_order=-1),
    lambda s: s.special.log_ndtr(1.0, series_order=31),
    lambda s: s.special.log_ndtr(1.0, series_order=2.0),
    lambda s: s.special.factorial(3, exact=True),
    lambda s: s.special.beta(np.complex64(1j), 2.),
    lambda s: s.stats.multivariate_normal.logpdf(XS, np.zeros(3), np.eye(2)),
    lambda s: s.stats.multivariate_normal.logpdf(XS, np.zeros(3), COV, allow_singular=True),
])
def test_errors(call):
  assert_raises_like(lambda: call(jsp), lambda: call(asp))
