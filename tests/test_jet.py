"""jax.experimental.jet against JAX 0.10.2: Taylor series of compositions of the primitives
with rules (sin, cos, exp, log, tanh, logistic, mul, add, sub, neg, div, integer powers,
dot_general, reduce_sum, ...) at orders 1 to 4, factorial-scaled or not (jet2), several inputs,
arrays, constants, jit around and inside, vmap, and the errors."""
import jax
import jax.experimental.jet as jjet
import numpy as np
import pytest

import arrax
import arrax.experimental.jet as ajet
from tests.oracle import check, check_all, make_with

JET = {arrax: ajet, jax: jjet}
TOL = 2e-5


def run(make, order=3, jit=False, scaled=True, inner_jit=False):
  def build(np_, top):
    f = make(np_, top)
    if inner_jit:
      f = top.jit(f)
    j = JET[top].jet if scaled else JET[top].jet2

    def g(primals, series):
      return j(f, tuple(primals), tuple(series))
    return top.jit(g) if jit else g
  return build


def series_for(*xs, order=3, seed=0):
  rng = np.random.RandomState(seed)
  return [[np.asarray(rng.randn(*np.shape(x)) * 0.5, np.float32) for _ in range(order)]
          for x in xs]


X = np.float32(0.7)
V = np.array([0.3, -0.8, 1.4], np.float32)
M = np.arange(6, dtype=np.float32).reshape(2, 3) / 5 - 0.4

UNARY = {
    "sin cos": lambda np_, top: lambda x: np_.sin(x) + np_.cos(2 * x),
    "exp log": lambda np_, top: lambda x: np_.exp(x) - np_.log(x),
    "tanh logistic": lambda np_, top: lambda x: np_.tanh(x) * top.nn.sigmoid(x),
    "neg sub add pow": lambda np_, top: lambda x: -x - (x + 2.) + 3. * x ** 3 + x ** 0,
    "pow -2": lambda np_, top: lambda x: x ** -2,
    "div": lambda np_, top: lambda x: np_.sin(x) / (1. + x * x),
    "sinh cosh square expm1 log1p": lambda np_, top: lambda x: (
        np_.sinh(x) * np_.cosh(x) + np_.square(x) + np_.expm1(x) - np_.log1p(x)),
    "composition": lambda np_, top: lambda x: np_.exp(np_.tanh(np_.sin(x) * x)) / np_.log(2. + x),
    "erf": lambda np_, top: lambda x: top.scipy.special.erf(x * 2),
    "sqrt pow": lambda np_, top: lambda x: np_.sqrt(x) + 1 / np_.sqrt(x + 1) + x ** 1.7,
    "abs min max": lambda np_, top: lambda x: (np_.abs(x - 1.) + np_.minimum(x, 0.2)
                                               + np_.maximum(x, x)),
    "slices gathers": lambda np_, top: lambda x: ((x * np_.arange(4.))[1:3]
                                                  + (x * np_.arange(4.))[np_.array([0, 2])]
                                                  + top.lax.dynamic_slice(
                                                      x * np_.arange(4.), (np_.int32(1),),
                                                      (2,))),
    "scatter add": lambda np_, top: lambda x: np_.zeros(4).at[np_.array([1, 1, 2])].add(
        x * np_.ones(3)),
    "atan2 reduce_max/min": lambda np_, top: lambda x: (
        np_.arctan2(x * 2., 1. + x) + np_.max(np_.sin(x * np_.arange(4.)).reshape(2, 2), axis=1)
        + np_.min(x * np_.array([1., 2., 1.]))),
    "cumulative": lambda np_, top: lambda x: (
        np_.cumprod(x * np_.arange(1., 5.)) + np_.cumsum(x * np_.ones(4))
        + top.lax.cummax(np_.sin(x * np_.arange(4.)), axis=0, reverse=True)),
    "constant": lambda np_, top: lambda x: np_.float32(2.),
    "where": lambda np_, top: lambda x: np_.where(x > 0.5, x ** 2, -x),
}


def test_unary_scalar():
  b = make_with("np", "top")
  # Under jit (one compilation per case; the other tests run jet eagerly).
  check_all([(name, lambda mk=mk: check(run(mk), [X], series_for(X), build=b, tol=TOL,
                                         eager=False, jit=True))
             for name, mk in UNARY.items()])


def test_x64(x64):
  check(run(UNARY["composition"]), [np.float64(0.7)], [[np.float64(0.3)] * 3],
        build=make_with("np", "top"), tol=1e-12)


def test_orders_and_arrays():
  b = make_with("np", "top")
  f = UNARY["composition"]
  check_all([
      (f"order {k}", lambda k=k: check(run(f, order=k), [X], series_for(X, order=k), build=b,
                                        tol=1e-4))
      for k in (1, 4)] + [
      ("vector", lambda: check(run(f), [V], series_for(V), build=b, tol=TOL)),
      ("jet2", lambda: check(run(f, scaled=False), [V], series_for(V), build=b, tol=TOL)),
      ("logistic vector jet2", lambda: check(run(UNARY["tanh logistic"], scaled=False), [V],
                                             series_for(V, order=4), build=b, tol=TOL)),
  ])


def test_several_inputs_and_reductions():
  b = make_with("np", "top")
  two = lambda np_, top: lambda x, y: np_.sum(np_.tanh(x * y) - x / y)  # noqa: E731
  mat = lambda np_, top: lambda a, v: np_.dot(np_.sin(a), v * v)  # noqa: E731
  matmat = lambda np_, top: lambda a: np_.sum(a @ a.T, axis=0)  # noqa: E731
  tree_out = lambda np_, top: lambda x: {"s": np_.sin(x), "p": (x ** 2, x)}  # noqa: E731
  check_all([
      ("two inputs", lambda: check(run(two), [V, V[::-1] + 2], series_for(V, V), build=b,
                                   tol=TOL)),
      ("dot", lambda: check(run(mat), [M, V], series_for(M, V), build=b, tol=TOL)),
      ("matmul sum", lambda: check(run(matmat), [M], series_for(M), build=b, tol=TOL)),
      ("tree output", lambda: check(run(tree_out), [V], series_for(V), build=b, tol=TOL,
                                    strict_tree=True)),
  ])


def test_jit_and_vmap():
  b = make_with("np", "top")
  f = UNARY["composition"]

  def vmapped(np_, top):
    g = run(f)(np_, top)
    return top.vmap(lambda x, s: g([x], [[s, s * 2]]))
  check_all([
      ("jit around", lambda: check(run(f, jit=True), [V], series_for(V), build=b, tol=TOL)),
      ("jit inside", lambda: check(run(f, inner_jit=True), [V], series_for(V), build=b,
                                   tol=TOL)),
      ("vmap", lambda: check(vmapped, V, V * 0.5, build=b, tol=TOL)),
      ("grad of jet", lambda: check(lambda np_, top: top.grad(second(np_, top)), X, build=b,
                                    tol=TOL)),
      ("nested jet", lambda: check(lambda np_, top: lambda x: JET[top].jet(
          second(np_, top), (x,), ([np.float32(1.)],)), X, build=b, tol=TOL)),
      ("jet of grad", lambda: check(lambda np_, top: lambda x: JET[top].jet(
          top.grad(lambda y: np_.sin(y) * y), (x,), ([np.float32(1.), np.float32(0.)],)), X,
          build=b, tol=TOL)),
  ])


def second(np_, top):
  # The second derivative of sin(y) * y, by jet.
  return lambda x: JET[top].jet(lambda y: np_.sin(y) * y, (x,),
                                ([np.float32(1.), np.float32(0.)],))[1][1]


def test_errors():
  b = make_with("np", "top")
  f = UNARY["sin cos"]
  check_all([
      ("inconsistent lengths", lambda: check(run(lambda np_, top: lambda x, y: x * y),
                                             [X, X], [[X], [X, X]], build=b)),
      ("primal not an array", lambda: check(run(lambda np_, top: lambda x: x[0]),
                                            [(X, X)], [[X]], build=b)),
      ("term not an array", lambda: check(run(f), [X], [[(X, X)]], build=b)),
  ])
  # JAX has no rule for scatter either (a KeyError there); arrax names the primitive.
  with pytest.raises(NotImplementedError, match="Jet rule for 'scatter' not implemented"):
    ajet.jet(lambda x: arrax.numpy.zeros(3).at[1].set(x), (X,), ([X],))


def test_rule_tables():
  # The helpers extend the rule table as JAX's do.
  assert ajet.zero_series is ajet.zero_series and isinstance(ajet.zero_term, ajet.ZeroTerm)
  assert set(ajet.jet_rules) >= {p for p in ajet.jet_rules}
  from arrax import lax
  assert ajet.jet_rules[lax.sin_p] and ajet.jet_rules[lax.dot_general_p]
  assert np.isclose(float(ajet.fact(4)), 24., rtol=1e-6)
