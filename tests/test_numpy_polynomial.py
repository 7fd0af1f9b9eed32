"""arrax.numpy polynomial functions (poly, polyadd, polyder, polydiv, polyfit, polyint, polymul,
polysub, polyval, roots) compared with jax.numpy 0.10.2: values, dtypes (int / bool / float16 /
complex promotion), weak types, leading zeros, empty and 0-d inputs, error classes, under jit,
grad and vmap, and jaxprs.
"""
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from oracle import assert_tree_same as assert_close
from oracle import Raw, assert_tree_same, check, check_all, same_exception

P = np.array([1.0, -3.0, 2.0, 0.5], np.float32)
P_LEAD0 = np.array([0.0, 0.0, 1.0, -3.0, 2.0], np.float32)
P_INT = np.array([2, 0, -1], np.int32)
P_C = np.array([1 + 1j, 2, -1j], np.complex64)
X = np.array([-1.5, 0.0, 0.5, 2.0, 3.0], np.float32)


def run(name, cases, tol=None):
  afn, jfn = getattr(anp, name), getattr(jnp, name)
  check_all([(f"{name}{i}:{args!r:.60}{kw}",
              lambda args=args, kw=kw: check(afn, jfn, *args, tol=tol, **kw))
             for i, (args, kw) in enumerate(cases)])


def test_roots():
  run("roots", [
      ((P,), {}), ((P_LEAD0,), {}), ((P_LEAD0,), {"strip_zeros": False}), ((P_INT,), {}),
      ((P_C,), {}), ((np.array([2.0]),), {}), ((np.zeros(0, np.float32),), {}),
      ((np.zeros(3, np.float32),), {}), ((np.zeros(3, np.float32),), {"strip_zeros": False}),
      ((np.array([1.0, 0.0, 0.0]),), {}), ((np.array([True, True]),), {}), ((3.0,), {}),
      ((np.ones((2, 2)),), {}), ((Raw([1.0, 2.0]),), {}),
  ], tol=1e-5)


def test_roots_under_jit():
  f = lambda np_: lambda p: np_.roots(p, strip_zeros=False)  # noqa: E731
  assert_tree_same(arrax.jit(f(anp))(P_LEAD0), jax.jit(f(jnp))(P_LEAD0), tol=1e-5)
  with pytest.raises(arrax.errors.ConcretizationTypeError):
    arrax.jit(anp.roots)(P_LEAD0)


def test_poly():
  run("poly", [
      ((P[:3],), {}), ((P_INT,), {}), ((P_C,), {}), ((np.zeros(0, np.float32),), {}),
      ((2.0,), {}), ((np.array([[1.0, 2.0], [3.0, 4.0]], np.float32),), {}),
      ((np.ones((2, 3)),), {}), ((np.array([True, False]),), {}),
  ], tol=1e-4)


def test_polyval():
  run("polyval", [
      ((P, X), {}), ((P, 2.0), {}), ((P_INT, 3), {}), ((P_INT, X), {}),
      ((P_INT, np.float16(1.5)), {}), ((P_C, X), {}), ((P, X.reshape(5, 1)), {}),
      ((np.stack([P, 2 * P], 1), X[:2]), {}), ((np.array([True, False]), 2), {}),
      ((P, X), {"unroll": 2}), ((np.zeros(0, np.float32), X), {}), ((3.0, X), {}),
  ])


@pytest.mark.parametrize("name", ["polyadd", "polysub"])
def test_polyadd_polysub(name):
  run(name, [
      ((P, P[:2]), {}), ((P[:2], P), {}), ((P_INT, P), {}), ((P_INT, P_INT[:1]), {}),
      ((P_C, P), {}), ((P, np.float16([1.0])), {}), ((np.array([True]), np.array([True])), {}),
      ((P, 2.0), {}),
  ])


def test_polymul():
  run("polymul", [
      ((P, P_INT), {}), ((P_LEAD0, P), {"trim_leading_zeros": True}), ((P_LEAD0, P), {}),
      ((P_C, P), {}), ((np.zeros(0, np.float32), P), {}), ((P, np.zeros(0, np.int32)), {}),
      ((np.zeros(2), np.zeros(3)), {"trim_leading_zeros": True}),
      ((np.array([True]), P_INT), {}), ((2.0, P), {}),
  ])


def test_polydiv():
  run("polydiv", [
      ((P, np.array([1.0, 2.0], np.float32)), {}),
      ((P, np.array([1.0, -2.0], np.float32)), {"trim_leading_zeros": True}),
      ((P_INT, np.array([2, 1], np.int32)), {}), ((P[:2], P), {}),
      ((np.array([1.0, -3.0, 2.0]), np.array([1.0, -1.0])), {"trim_leading_zeros": True}),
  ])


def test_polyder_polyint():
  run("polyder", [((P,), {}), ((P,), {"m": 2}), ((P_INT,), {"m": 3}), ((P,), {"m": 0}),
                  ((P_C,), {}), ((P,), {"m": -1}), ((np.array([True, True]),), {})])
  run("polyint", [((P,), {}), ((P,), {"m": 2, "k": np.array([1.0, 2.0])}),
                  ((P_INT,), {"k": 3}), ((P,), {"m": 0}), ((P_C,), {"m": 1, "k": 1j}),
                  ((P,), {"m": -1}), ((P,), {"m": 2, "k": np.ones(3)}),
                  ((P.astype(np.float16),), {"k": 2.5})])


def test_polyder_polyint_static():
  # m is a static argument of the jitted function: a tracer is rejected when it is hashed.
  with pytest.raises(Exception) as jax_error:
    jax.jit(lambda p, m: jnp.polyder(p, m))(P, 1)
  same_exception(lambda: arrax.jit(lambda p, m: anp.polyder(p, m))(P, 1), jax_error.value)
  run("polyint", [((P,), {"m": Raw([1])}), ((P,), {"m": 1.5})])   # static m: hashable int


XS = np.linspace(-1.0, 1.0, 8).astype(np.float32)
YS = (XS ** 2 - XS + np.random.default_rng(0).standard_normal(8) * 0.1).astype(np.float32)


def test_polyfit():
  run("polyfit", [
      ((XS, YS, 2), {}), ((XS, YS, 1), {"full": True}), ((XS, YS, 3), {"w": np.arange(1.0, 9.0)}),
      ((XS, YS, 2), {"cov": True}), ((XS, np.stack([YS, 2 * YS], 1), 2), {"cov": True}),
      ((XS, YS, 2), {"cov": "unscaled"}), ((np.arange(5), np.arange(5) ** 2, 2), {}),
      ((XS, np.stack([YS, YS], 1), 1), {"w": np.ones(8), "full": True}),
      ((XS, YS, 1), {"rcond": 1e-3}),
  ], tol=2e-4)
  run("polyfit", [
      ((XS, YS, -1), {}), ((XS.reshape(2, 4), YS, 1), {}), ((XS[:0], YS[:0], 1), {}),
      ((XS, YS.reshape(2, 2, 2), 1), {}), ((XS, YS[:5], 1), {}),
      ((XS, YS, 1), {"w": np.ones((8, 1))}), ((XS, YS, 1), {"w": np.ones(3)}),
      ((XS[:3], YS[:3], 2), {"cov": True}),
  ])


def test_x64(x64):
  run("polyval", [((P.astype(np.float64), X), {}), ((P_INT, 3), {})])
  run("polyfit", [((XS.astype(np.float64), YS, 2), {})], tol=1e-8)
  run("roots", [((P.astype(np.float64),), {})], tol=1e-10)
  run("polyint", [((P_INT,), {})])


JIT_CASES = {
    "poly": lambda np_, p: [np_.poly(p)],
    "polyval": lambda np_, p: [np_.polyval(p, np_.arange(3.0))],
    "polyadd": lambda np_, p: [np_.polyadd(p, p[:2]), np_.polysub(p[:1], p)],
    "polymul": lambda np_, p: [np_.polymul(p, p[:3])],
    "polydiv": lambda np_, p: list(np_.polydiv(p, p[:2])),
    "polyder": lambda np_, p: [np_.polyder(p, 2), np_.polyint(p, 2, k=p[:2])],
    "polyfit": lambda np_, p: [np_.polyfit(np_.arange(4.0), p, 1)],
}


@pytest.mark.parametrize("name", list(JIT_CASES))
def test_under_jit(name):
  fn = JIT_CASES[name]
  assert_tree_same(arrax.jit(lambda p: fn(anp, p))(P), jax.jit(lambda p: fn(jnp, p))(P),
                   tol=1e-4)


GRAD_CASES = {
    "polyval_p": lambda np_, p: np_.polyval(p, np_.array([0.5, -1.0, 2.0])).sum(),
    "polyval_x": lambda np_, p: np_.polyval(np_.array([1.0, 2.0, -1.0]), p).sum(),
    "polyfit": lambda np_, p: np_.polyfit(np_.arange(4.0), p, 2).sum(),
    "roots": lambda np_, p: np_.abs(np_.roots(p[:3])).sum(),
    "poly": lambda np_, p: np_.poly(p[:3]).sum(),
    "polymul": lambda np_, p: (np_.polymul(p, p[::-1]) ** 2).sum(),
    "polydiv": lambda np_, p: np_.polydiv(p, p[:2])[0].sum(),
    "polyint": lambda np_, p: np_.polyint(p, k=p[0]).sum(),
    "polyder": lambda np_, p: (np_.polyder(p) ** 2).sum(),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_grad_and_vmap(name):
  fn = GRAD_CASES[name]
  p = np.array([1.5, -3.0, 2.0, 0.5], np.float32)
  assert_close(arrax.grad(lambda p: fn(anp, p))(p), jax.grad(lambda p: fn(jnp, p))(p),
               tol=1e-4)
  if name != "roots":     # roots strips leading zeros: it needs concrete coefficients
    ps = np.stack([p, 2 * p])
    assert_close(arrax.vmap(lambda p: fn(anp, p))(ps), jax.vmap(lambda p: fn(jnp, p))(ps),
                 tol=1e-4)


JAXPR_CASES = {
    "polyval": lambda np_: lambda p: np_.polyval(p, 2.0),
    "polyadd": lambda np_: lambda p: np_.polyadd(p, p[:2]),
    "polysub": lambda np_: lambda p: np_.polysub(p, p[:2]),
    "polyder": lambda np_: lambda p: np_.polyder(p),
    "polyint": lambda np_: lambda p: np_.polyint(p),
}


@pytest.mark.parametrize("name", list(JAXPR_CASES))
def test_jaxpr_matches(name):
  mk = JAXPR_CASES[name]
  assert str(arrax.make_jaxpr(mk(anp))(P)) == str(jax.make_jaxpr(mk(jnp))(P))


def test_signatures():
  for name in ["poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul",
               "polysub", "polyval", "roots"]:
    a, j = inspect.signature(getattr(anp, name)), inspect.signature(getattr(jnp, name))
    assert [(p.name, p.kind, p.default) for p in a.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in j.parameters.values()], name
    assert getattr(anp, name).__doc__, name
