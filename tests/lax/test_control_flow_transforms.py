"""Differential tests of the transformation rules of cond/switch and while against JAX 0.10.2:
jvp, vjp/grad, linearize, jacobians and vmap (alone and nested, with jit), printed jaxprs,
reverse-mode errors, and vmapped samplers built on while_loop.

Each case is written once as `make(top, lax, jnp) -> function` and built for both libraries.
"""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import functools  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import arrax  # noqa: E402
import arrax.numpy as anp  # noqa: E402
from arrax.test_util import check_grads  # noqa: E402
import oracle  # noqa: E402
from oracle import ARRAX, JAX, assert_same, both, make_with  # noqa: E402

# Cases are make(top, lax, jnp) -> function; results are the same pytrees.
check = functools.partial(oracle.check, build=make_with("top", "lax", "np"), strict_tree=True)
check_raises = functools.partial(oracle.check_raises, build=make_with("top", "lax", "np"))
check_jaxpr = functools.partial(oracle.check_jaxpr, build=make_with("top", "lax", "np"),
                                typecheck=True)


def check_at(make, points):
  """`check` at several argument tuples, building each library's function once."""
  fa, fj = both(make, make_with("top", "lax", "np"))
  for args in points:
    oracle.check(fa, fj, *args, strict_tree=True)


F32 = np.float32
XS = np.array([1.5, -0.5, 0.25, -2.0], F32)
YS = np.array([0.5, 2.0, -1.0, 3.0], F32)
IS = np.array([-1, 0, 1, 2, 5], np.int32)


# ---- cond / switch: the functions -------------------------------------------------------------
# Each takes float scalars (x, y) and returns a pytree; the predicate depends on x, so x > 0
# and x < 0 take different branches.
# Branch functions are made once per `make` (not per call), so repeated calls reuse traces and
# executables, as they would in JAX.
def _sin_mul(top, lax, np_):
  t, e = lambda x, y: np_.sin(x) * y, lambda x, y: np_.cos(x) + y
  return lambda x, y: lax.cond(x > 0, t, e, x, y)


def _closure(top, lax, np_):
  def f(x, y):
    w = np_.exp(x) * 0.5          # a traced value the branches close over
    c = np_.array([1., 2., 3.])   # a concrete one
    return lax.cond(x < 1., lambda y: (w * y * c).sum(), lambda y: w - y, y)
  return f


def _pytree_ints(top, lax, np_):
  def t(x, n, k, y):
    return {"a": x * n, "b": (k + n, np_.tanh(x) * y)}

  def e(x, n, k, y):
    return {"a": x ** 2, "b": (k * 2, y)}

  def f(x, y):
    n = (x * 3).astype(np_.int32)   # an integer operand (no tangent)
    return lax.cond(x > 0, t, e, x, n, np_.arange(3), y)
  return f


def _switch3(top, lax, np_):
  branches = [lambda x, y: np_.sin(x * y), lambda x, y: x * x * y, lambda x, y: np_.exp(x) - y]

  def f(x, y):
    return lax.switch(np_.floor(x).astype(np_.int32) + 1, branches, x, y)
  return f


def _switch_shared(top, lax, np_):
  # one function used by two branches; one branch ignores its operands
  g = lambda x, y: x * y
  branches = [g, lambda x, y: 2.0 + np_.zeros_like(x), g]

  def f(x, y):
    i = (x > 0).astype(np_.int32) + (y > 0).astype(np_.int32)
    return lax.switch(i, branches, x, y)
  return f


def _nested(top, lax, np_):
  mul, sin, sq = lambda x, y: x * y, lambda x, y: np_.sin(x), lambda x, y: x * x
  inner = lambda x, y: lax.cond(y > 0, mul, sin, x, y)
  return lambda x, y: lax.cond(x > 0, inner, sq, x, y)


COND_FUNS = {"sin_mul": _sin_mul, "closure": _closure, "pytree_ints": _pytree_ints,
             "switch3": _switch3, "switch_shared": _switch_shared, "nested": _nested}
POINTS = [(1.5, 0.5), (-0.5, 2.0), (0.25, -1.0), (-2.0, 3.0)]


def _scalar(make):
  def scalar_make(top, lax, np_):
    f = make(top, lax, np_)
    return lambda x, y: sum(v.sum() for v in top.tree_util.tree_leaves(f(x, y))
                            if np_.issubdtype(v.dtype, np_.floating))
  return scalar_make


# ---- cond / switch: autodiff ------------------------------------------------------------------
@pytest.mark.parametrize("name", COND_FUNS)
def test_cond_jvp_vjp(name):
  make = COND_FUNS[name]
  points = [(F32(x), F32(y)) for x, y in POINTS[:3]]
  check_at(lambda top, lax, np_: lambda x, y: top.jvp(make(top, lax, np_), (x, y),
                                                      (F32(0.7), F32(-1.3))), points)

  def vjp(top, lax, np_):
    fn = make(top, lax, np_)

    def f(x, y):
      out, pullback = top.vjp(fn, x, y)
      ct = top.tree_util.tree_map(
          lambda o: np_.ones_like(o) * 0.5 if np_.issubdtype(o.dtype, np_.floating)
          else np.zeros(np_.shape(o), jax.dtypes.float0), out)
      return out, pullback(ct)
    return f
  check_at(vjp, points)
  check_at(lambda top, lax, np_: top.grad(_scalar(make)(top, lax, np_), (0, 1)), points)


@pytest.mark.parametrize("name", ["sin_mul", "switch3", "nested"])
def test_cond_check_grads(name):
  f = _scalar(COND_FUNS[name])(*ARRAX)
  for x, y in POINTS[:3]:
    check_grads(f, (F32(x), F32(y)), order=2, modes=["fwd", "rev"], atol=2e-2, rtol=2e-2)


def test_cond_jit_and_grad_nest():
  make = _scalar(_switch3)
  points = [(F32(x), F32(y)) for x, y in POINTS[:2]]
  check_at(lambda top, lax, np_: top.jit(top.grad(make(top, lax, np_), (0, 1))), points)
  check_at(lambda top, lax, np_: top.grad(top.jit(make(top, lax, np_)), (0, 1)), points)
  check_at(lambda top, lax, np_: top.jit(top.hessian(make(top, lax, np_))), points)
  check_at(lambda top, lax, np_: top.jacfwd(top.jacrev(_scalar(_closure)(top, lax, np_), 1)),
           points[:2])


def test_cond_linearize():
  def make(top, lax, np_):
    fn = _switch3(top, lax, np_)

    def f(x, y):
      out, lin = top.linearize(fn, x, y)
      return out, lin(F32(1.0), F32(0.5)), lin(F32(-2.0), F32(0.0))
    return f
  check_at(make, [(F32(x), F32(y)) for x, y in POINTS])


def test_cond_grad_arrays_and_jit_inside():
  # Array operands, a jitted function inside a branch, and a cond inside jit inside grad.
  def make(top, lax, np_):
    branch = top.jit(lambda v, m: np_.tanh(m @ v))

    def f(v, m):
      r = lax.cond(v.sum() > 0, branch, lambda v, m: (m * m) @ v, v, m)
      return (r * r).sum()
    return top.grad(top.jit(f), (0, 1))
  m = np.arange(6, dtype=F32).reshape(2, 3) / 4
  check(make, np.array([0.5, -1., 2.], F32), m)
  check(make, np.array([-0.5, -1., 0.], F32), m)


def test_cond_grad_jaxprs_print_like_jax():
  check_jaxpr(lambda top, lax, np_: top.grad(_sin_mul(top, lax, np_)), 1., 2.)
  check_jaxpr(lambda top, lax, np_: lambda x, y: top.jvp(_sin_mul(top, lax, np_), (x, y),
                                                         (1., 1.)), 1., 2.)
  check_jaxpr(lambda top, lax, np_: top.grad(_switch3(top, lax, np_), (0, 1)), 1., 2.)


def test_cond_grad_with_checkpoint_and_debug_callback():
  seen = {"arrax": [], "jax": []}

  def make(key):
    def mk(top, lax, np_):
      def t(x):
        top.debug.callback(lambda v: seen[key].append(float(v)), x)
        return np_.sin(x) * x
      f = lambda x: lax.cond(x > 0, t, lambda x: x * x, x)
      return lambda x: (top.grad(f)(x), top.grad(top.checkpoint(f))(x),
                        top.jit(top.grad(top.checkpoint(f)))(x))
    return mk
  for x in (F32(1.5), F32(-2.)):
    assert_same(make("arrax")(*ARRAX)(x), make("jax")(*JAX)(x), strict_tree=True)
  # the callback sees primal values only, as often as in JAX
  assert seen["arrax"] == seen["jax"] and seen["jax"]


# ---- cond / switch: vmap ----------------------------------------------------------------------
@pytest.mark.parametrize("name", COND_FUNS)
def test_cond_vmap_batched_index(name):
  make = COND_FUNS[name]
  check(lambda top, lax, np_: top.vmap(make(top, lax, np_)), XS, YS)
  check(lambda top, lax, np_: top.vmap(make(top, lax, np_), in_axes=(0, None)), XS, F32(-1.))
  check(lambda top, lax, np_: top.jit(top.vmap(make(top, lax, np_))), XS, YS)


def test_switch_vmap_index_clamped():
  def make(top, lax, np_):
    branches = [np_.sin, lambda x: x * 2, lambda x: -x, lambda x: x]
    return top.vmap(lambda i, x: lax.switch(i, branches, x))
  check(make, IS, np.arange(5, dtype=F32))
  check(lambda top, lax, np_: top.vmap(lambda i: lax.switch(i, [lambda: 1, lambda: 2])), IS)


def test_cond_vmap_unbatched_index():
  def make(top, lax, np_):
    def f(p, x, y):
      return lax.cond(p, lambda x, y: (x * y, y + 1), lambda x, y: (x - y, 2 * y), x, y)
    return f
  for p in (True, False):
    check(lambda top, lax, np_: top.vmap(make(top, lax, np_), in_axes=(None, 0, None)), p, XS,
          F32(2.))
    check(lambda top, lax, np_: top.vmap(make(top, lax, np_), in_axes=(None, 1, 0)), p,
          np.arange(8, dtype=F32).reshape(2, 4), YS)
    check(lambda top, lax, np_: top.vmap(top.vmap(make(top, lax, np_), in_axes=(None, 0, None)),
                                         in_axes=(None, None, 0)), p, XS, YS)


def test_cond_vmap_jaxprs_print_like_jax():
  check_jaxpr(lambda top, lax, np_: top.vmap(_sin_mul(top, lax, np_)), XS, YS)
  check_jaxpr(lambda top, lax, np_: top.vmap(
      lambda i, x: lax.switch(i, [np_.sin, np_.cos, lambda x: x], x)), IS[:3], XS[:3])
  check_jaxpr(lambda top, lax, np_: top.vmap(
      lambda p, x: lax.cond(p, lambda x: (x, 1), lambda x: (2 * x, 2), x), in_axes=(None, 0)),
      True, XS)


@pytest.mark.parametrize("name", ["sin_mul", "closure", "switch3", "nested"])
def test_cond_vmap_and_grad_nest(name):
  f = _scalar(COND_FUNS[name])
  check(lambda top, lax, np_: top.vmap(top.grad(f(top, lax, np_), (0, 1))), XS, YS)
  check(lambda top, lax, np_: top.grad(lambda x, y: top.vmap(f(top, lax, np_))(x, y).sum(),
                                       (0, 1)), XS, YS)
  check(lambda top, lax, np_: top.vmap(top.grad(f(top, lax, np_)), in_axes=(0, None)), XS,
        F32(0.5))
  check(lambda top, lax, np_: top.jit(top.vmap(top.jacfwd(f(top, lax, np_), (0, 1)))), XS, YS)


def test_cond_vmap_grad_does_not_leak_unselected_branch():
  # Under a batched predicate every branch runs; the unselected branch's gradient (here
  # infinite) must not reach the operands.
  def make(top, lax, np_):
    f = lambda x: lax.cond(x > 0, np_.sqrt, lambda x: x, x)
    return top.vmap(top.grad(f))
  check(make, np.array([4., -1., 0.25], F32))
  check(lambda top, lax, np_: top.grad(lambda x: top.vmap(
      lambda x: lax.cond(x > 0, np_.sqrt, lambda x: x, x))(x).sum()), np.array([4., -1.], F32))


def test_cond_vmap_batched_index_runs_debug_callbacks_like_jax():
  seen = {"arrax": [], "jax": []}

  def make(key):
    def mk(top, lax, np_):
      def t(x):
        top.debug.callback(lambda v: seen[key].append(float(v)), x)
        return x
      return top.vmap(lambda x: lax.cond(x > 0, t, lambda x: -x, x))
    return mk
  a = make("arrax")(*ARRAX)(anp.asarray(XS))
  e = make("jax")(*JAX)(jnp.asarray(XS))
  assert_same(a, e)
  assert sorted(seen["arrax"]) == sorted(seen["jax"]) and seen["jax"]


def test_cond_vmap_collective_in_branch():
  def make(top, lax, np_):
    def f(x):
      return lax.cond(x > 0, lambda x: x / lax.psum(x, "i"), lambda x: lax.psum(1., "i") * x, x)
    return top.vmap(f, axis_name="i")
  check(make, XS)
  check(lambda top, lax, np_: top.vmap(lambda x: lax.cond(
      True, lambda x: lax.psum(1., "i") * x, lambda x: x, x), axis_name="i"), XS)


# ---- while: forward-mode autodiff -------------------------------------------------------------
def _doubling(top, lax, np_):
  return lambda x: lax.while_loop(lambda c: c[1] < 10., lambda c: (c[0] * 2., c[1] + 1),
                                  (x, 0))


def _late_tangent(top, lax, np_):
  # b's tangent starts as zero and becomes nonzero through the body (a fixed point).
  def f(x, y):
    def body(c):
      a, b, i = c
      return a * y, b + np_.sin(a), i + 1
    return lax.while_loop(lambda c: c[2] < 4, body, (x, F32(0.), 0))
  return f


def _vector_loop(top, lax, np_):
  def f(v):
    scale = v.sum()    # a body const with a tangent

    def body(c):
      u, n = c
      return np_.tanh(u) * scale + u, n + 1
    return lax.while_loop(lambda c: (c[1] < 3) & (c[0].sum() < 50.), body, (v, 0))[0]
  return f


def test_while_jvp():
  check_at(lambda top, lax, np_: lambda x: top.jvp(_doubling(top, lax, np_), (x,), (F32(1.5),)),
           [(F32(x),) for x in (1., 3., 20.)])
  for t in [(F32(1.), F32(0.)), (F32(0.), F32(1.))]:
    check_at(lambda top, lax, np_, t=t: lambda x, y: top.jvp(_late_tangent(top, lax, np_),
                                                             (x, y), t),
             [(F32(1.), F32(0.5)), (F32(0.3), F32(-2.))])


def test_while_jacfwd_and_linearize():
  v = np.array([0.5, -1., 2.], F32)
  check(lambda top, lax, np_: top.jacfwd(_vector_loop(top, lax, np_)), v)
  check(lambda top, lax, np_: top.jit(top.jacfwd(_vector_loop(top, lax, np_))), v)
  check(lambda top, lax, np_: top.jacfwd(top.jacfwd(_late_tangent(top, lax, np_), 1), 0),
        F32(0.7), F32(1.1))

  def lin(top, lax, np_):
    def f(v):
      out, fn = top.linearize(_vector_loop(top, lax, np_), v)
      return out, fn(np_.ones_like(v)), fn(v)
    return f
  check(lin, v)
  check(lambda top, lax, np_: top.jit(lin(top, lax, np_)), v)


def test_while_jvp_jaxprs_print_like_jax():
  check_jaxpr(lambda top, lax, np_: lambda x: top.jvp(_doubling(top, lax, np_), (x,), (1.,)), 1.)
  check_jaxpr(lambda top, lax, np_: lambda x: top.linearize(_doubling(top, lax, np_), x)[1](1.),
              1.)


def test_while_check_grads_fwd():
  f = _late_tangent(*ARRAX)
  check_grads(lambda x, y: f(x, y)[1], (F32(0.7), F32(1.1)), order=2, modes=["fwd"], atol=2e-2,
              rtol=2e-2)


# ---- while: reverse mode is an error ------------------------------------------------------------
REV_MSG = ("Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
           "dynamic start/stop values. Try using lax.scan, or using fori_loop with static "
           "start/stop.")


REV_CASES = {
    "grad": (lambda top, lax, np_: top.grad(
        lambda x: lax.while_loop(lambda c: c < 10., lambda c: c * 2., x)), (F32(1.),)),
    "grad_tuple": (lambda top, lax, np_: top.grad(lambda x: _doubling(top, lax, np_)(x)[0]),
                   (F32(1.),)),
    "fori_traced_bounds": (lambda top, lax, np_: top.jit(top.grad(
        lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, 1.))), (F32(1.), 4)),
    "jacrev": (lambda top, lax, np_: top.jacrev(_vector_loop(top, lax, np_)), (np.ones(3, F32),)),
    "vjp": (lambda top, lax, np_: lambda x: top.vjp(_doubling(top, lax, np_), x)[1](
        (F32(1.), np.zeros((), jax.dtypes.float0))), (F32(1.),)),
}


@pytest.mark.parametrize("name", REV_CASES)
def test_while_reverse_mode_raises(name):
  make, args = REV_CASES[name]
  check_raises(make, *args, match=[REV_MSG])


def test_while_grad_of_integer_only_loop_is_fine():
  # No float carry: nothing to transpose.
  def make(top, lax, np_):
    return top.grad(lambda x: x * lax.while_loop(lambda i: i < 5, lambda i: i + 2, 0))
  check(make, F32(3.))


# ---- while: vmap ------------------------------------------------------------------------------
def test_while_vmap_batched_init():
  cases = [
      lambda top, lax, np_: top.vmap(lambda x: lax.while_loop(lambda c: c < 10., lambda c: c * 2.,
                                                              x)),
      lambda top, lax, np_: top.vmap(lambda x: _doubling(top, lax, np_)(x)),
      lambda top, lax, np_: top.vmap(_vector_loop(top, lax, np_), in_axes=1),
  ]
  check(cases[0], np.array([1., 3., 20., 0.5], F32))
  check(cases[1], np.array([1., 3., 20., 0.5], F32))
  check(cases[2], np.arange(12, dtype=F32).reshape(3, 4) / 8 - 0.5)


def test_while_vmap_batched_consts():
  def make(top, lax, np_):
    def f(lim, x, s):
      # lim batches the predicate, s only the body (so x becomes batched via the body).
      return lax.while_loop(lambda c: c[1] < lim, lambda c: (c[0] * s + 1., c[1] + 1),
                            (x, 0))
    return f
  lims = np.array([0, 3, 1, 5], np.int32)
  check(lambda top, lax, np_: top.vmap(make(top, lax, np_), in_axes=(0, None, None)), lims,
        F32(1.), F32(2.))
  check(lambda top, lax, np_: top.vmap(make(top, lax, np_), in_axes=(None, None, 0)), 3, F32(1.),
        YS)
  check(lambda top, lax, np_: top.vmap(make(top, lax, np_), in_axes=(0, 0, 0)), lims, XS, YS)


def test_while_vmap_fori_traced_bounds():
  def make(top, lax, np_):
    return top.vmap(lambda lo, hi, x: lax.fori_loop(lo, hi, lambda i, c: c * 1.5 + i, x))
  check(make, np.array([0, 2, 5, 1], np.int32), np.array([4, 3, 5, 6], np.int32), XS)
  check(lambda top, lax, np_: top.vmap(lambda n: lax.fori_loop(0, n, lambda i, c: c + i, 0)),
        np.array([0, 3, 7], np.int32))


def test_while_vmap_with_jit():
  def f(top, lax, np_):
    return lambda x: lax.while_loop(lambda c: c[0] < 10., lambda c: (c[0] * 2., c[1] + c[0]),
                                    (x, F32(0.)))
  xs = np.array([1., 3., 20., 0.5], F32)
  check(lambda top, lax, np_: top.jit(top.vmap(f(top, lax, np_))), xs)
  check(lambda top, lax, np_: top.vmap(top.jit(f(top, lax, np_))), xs)


def test_while_nested_vmap():
  def f(top, lax, np_):
    return lambda x, lim: lax.while_loop(lambda c: c[0] < lim, lambda c: (c[0] * 2., c[1] + 1),
                                         (x, 0))
  xs = np.array([[1., 3., 0.5], [2., 0.1, 7.]], F32)
  lims = np.array([4., 40.], F32)
  # predicate batched by both vmaps; then only by the inner one
  check(lambda top, lax, np_: top.vmap(top.vmap(f(top, lax, np_))), xs, xs[::-1] * 3)
  check(lambda top, lax, np_: top.vmap(top.vmap(f(top, lax, np_), in_axes=(0, None)),
                                       in_axes=(None, 0)), xs[0], lims)
  check(lambda top, lax, np_: top.vmap(top.vmap(f(top, lax, np_), in_axes=(0, None)),
                                       in_axes=(0, 0)), xs, lims)


def test_while_vmap_and_jvp_nest():
  xs = np.array([1., 3., 20., 0.5], F32)
  check(lambda top, lax, np_: top.vmap(lambda x: top.jvp(_doubling(top, lax, np_), (x,),
                                                         (F32(1.),))), xs)
  check(lambda top, lax, np_: lambda x: top.jvp(top.vmap(_doubling(top, lax, np_)), (x,),
                                                (np_.ones_like(x),)), xs)
  check(lambda top, lax, np_: top.vmap(top.jacfwd(_late_tangent(top, lax, np_), (0, 1))), XS, YS)


def test_while_vmap_jaxpr_prints_like_jax():
  check_jaxpr(lambda top, lax, np_: top.vmap(
      lambda x: lax.while_loop(lambda c: c < 10., lambda c: c * 2., x)), XS)
  check_jaxpr(lambda top, lax, np_: top.vmap(
      lambda x, s: lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * s, c[1] + 1), (x, 0)),
      in_axes=(None, 0)), F32(1.), YS)


def test_while_cond_mixed_under_vmap_and_jvp():
  def make(top, lax, np_):
    def f(x):
      def body(c):
        v, i = c
        v = lax.cond(i % 2 == 0, lambda v: v * 1.5, np_.sin, v)
        return v, i + 1
      return lax.while_loop(lambda c: (c[1] < 5) & (c[0] < 3.), body, (x, 0))[0]
    return top.vmap(lambda x: top.jvp(f, (x,), (F32(1.),)))
  check(make, XS)


# ---- samplers built on while_loop, vmapped ------------------------------------------------------
def test_vmap_poisson_binomial_bits():
  lam = np.array([0.5, 3., 12., 40.], F32)
  n = np.array([5., 20., 100., 3.], F32)
  p = np.array([0.3, 0.5, 0.9, 0.1], F32)

  def keys(top):
    return top.random.split(top.random.key(0), 4)
  for fn in [
      lambda top: top.jit(top.vmap(lambda k, l: top.random.poisson(k, l, (3,))))(keys(top), lam),
      lambda top: top.jit(top.vmap(lambda k, n, p: top.random.binomial(k, n, p, (2,))))(
          keys(top), n, p),
  ]:
    a, e = fn(arrax), fn(jax)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(e))
    assert np.asarray(a).dtype == np.asarray(e).dtype
