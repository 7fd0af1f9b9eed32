"""lax.igamma / igammac / igamma_grad_a / random_gamma_grad and the gradient of jax.random.gamma
(and the samplers built on it), differentially against JAX.

Values over grids of (a, x) including the domain edges, in float32, float64 (x64), float16 and
bfloat16; type rules and errors; jit and vmap; derivatives (JVP rules, check_grads, printed
grad jaxprs, the rules JAX lacks); reparameterization gradients of gamma, loggamma, beta and
dirichlet samples, eagerly, under jit and under vmap.
"""
import jax as real_jax
import numpy as np
import pytest

import arrax
from arrax.test_util import check_grads
from oracle import BF16, assert_same

FUNS = ["igamma", "igammac", "igamma_grad_a", "random_gamma_grad"]

# A grid over small, unit and large a (a < 1 included) and x (near 0, x < a, x > a), then the
# edge cases: x = 0, x = inf, a = 0, negative operands, NaNs.
_A = [1e-3, 0.1, 0.5, 1.0, 1.5, 2.5, 10.0, 30.0, 150.0]
_X = [0.0, 1e-4, 0.1, 0.5, 1.0, 2.0, 5.0, 12.0, 40.0, 200.0]
_EDGES = [(0., 0.), (0., 1.), (0., 2.), (1., np.inf), (0., np.inf), (-1., 1.), (1., -1.),
          (np.nan, 1.), (1., np.nan), (np.inf, 1.), (2., 1e-30), (1e-30, 2.)]


def _grid(dtype):
  a, x = np.meshgrid(_A, _X, indexing="ij")
  a = np.concatenate([a.ravel(), [e[0] for e in _EDGES]])
  x = np.concatenate([x.ravel(), [e[1] for e in _EDGES]])
  return a.astype(dtype), x.astype(dtype)


def _both(name):
  """(arrax's function, JAX's jitted: JAX's random_gamma_grad is a Python function whose eager
  evaluation would compile every operation separately)."""
  return getattr(arrax.lax, name), real_jax.jit(getattr(real_jax.lax, name))


# ---- values -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FUNS)
def test_values_float32(name):
  a, x = _grid(np.float32)
  ours, theirs = _both(name)
  assert_same(ours(a, x), theirs(a, x), rtol=2e-5, atol=1e-30)


@pytest.mark.parametrize("name", FUNS)
def test_values_float64(name, x64):
  a, x = _grid(np.float64)
  ours, theirs = _both(name)
  assert_same(ours(a, x), theirs(a, x), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("name,dtype", [("igamma", np.float16), ("random_gamma_grad", BF16)],
                         ids=["igamma-float16", "random_gamma_grad-bfloat16"])
def test_values_narrow_dtypes(name, dtype):
  # Computed in float32 and rounded back: the same rounding as JAX's.
  a = np.array([0.3, 1.0, 2.5, 2.5, 8.0, 0.0, -1.0], dtype)
  x = np.array([0.2, 1.0, 1.5, 6.0, 3.0, 0.0, 1.0], dtype)
  ours, theirs = _both(name)
  assert_same(ours(a, x), theirs(a, x), rtol=1e-2)


# ---- types, shapes, errors ------------------------------------------------------------------
def test_python_scalars_are_weak():
  x = np.array([0.5, 3.0], np.float32)

  def fn(lib):
    return lib.jit(lambda x: (lib.lax.igamma(2.5, 1.5), lib.lax.igammac(2.5, x)))
  for got, want in zip(fn(arrax)(x), fn(real_jax)(x)):
    assert_same(got, want, rtol=1e-6)   # (assert_same compares weak types too)


@pytest.mark.parametrize("name,shapes", [("igamma", ((2, 3), (1, 3))),
                                         ("random_gamma_grad", ((2, 1), (1, 3)))], ids=str)
def test_broadcasting(name, shapes):
  rng = np.random.default_rng(0)
  a = rng.uniform(0.2, 4., shapes[0]).astype(np.float32)
  x = rng.uniform(0.1, 6., shapes[1]).astype(np.float32)
  ours, theirs = _both(name)
  # JAX's random_gamma_grad (a function, not a primitive) only broadcasts operands whose
  # leading axes line up: the oracle gets them broadcast.
  shape = np.broadcast_shapes(a.shape, x.shape)
  assert_same(ours(a, x), theirs(np.broadcast_to(a, shape), np.broadcast_to(x, shape)), rtol=2e-5)


@pytest.mark.parametrize("name", FUNS)
@pytest.mark.parametrize("args", [
    (np.int32(2), np.int32(3)),                                   # not floats
    (np.float32(2.), np.float16(3.)),                             # different dtypes
    (np.ones(3, np.float32), np.ones(2, np.float32)),             # incompatible shapes
    (np.ones((2, 3), np.float32), np.ones(3, np.float32)),        # different ranks
], ids=["int", "mixed", "shapes", "ranks"])
def test_type_errors(name, args):
  if name != "random_gamma_grad":   # JAX's random_gamma_grad is not a checked primitive
    with pytest.raises(TypeError):
      getattr(real_jax.lax, name)(*args)
  with pytest.raises(TypeError):
    getattr(arrax.lax, name)(*args)


def test_x64_python_scalar_with_float32_is_an_error(x64):
  x = np.float32(1.5)
  with pytest.raises(TypeError, match="same dtypes"):
    real_jax.lax.igamma(2.5, x)
  with pytest.raises(TypeError, match="same dtypes"):
    arrax.lax.igamma(2.5, x)


# ---- jit and vmap --------------------------------------------------------------------------
@pytest.mark.parametrize("name", FUNS)
def test_vmap_under_jit(name):
  # An outer product: each operand is mapped by one of two vmaps and shared by the other; the
  # batch axes land in the middle (in_axes=1) and at the end (out_axes=1).
  rng = np.random.default_rng(1)
  a = rng.uniform(0.1, 6., (2, 3)).astype(np.float32)
  x = rng.uniform(0.05, 9., (4, 2)).astype(np.float32)
  ours, theirs = _both(name)
  inner = arrax.vmap(ours, in_axes=(None, 0), out_axes=1)
  f = arrax.jit(arrax.vmap(inner, in_axes=(1, None)))
  # f(a, x)[i, l, j] = fn(a[l, i], x[j, l])
  a_full = np.broadcast_to(a.T[:, :, None], (3, 2, 4))
  x_full = np.broadcast_to(x.T[None], (3, 2, 4))
  assert_same(f(a, x), theirs(a_full, x_full), rtol=2e-5)


# ---- derivatives ---------------------------------------------------------------------------
def test_check_grads_igamma_in_x(x64):
  a = np.array([0.5, 2.5, 7.0])
  x = np.array([0.3, 1.7, 9.0])
  for fn in (arrax.lax.igamma, arrax.lax.igammac):
    check_grads(lambda x, fn=fn: fn(a, x), (x,), order=2, modes=["fwd", "rev"])


def test_check_grads_igamma_in_a(x64):
  # JAX has no derivative of igamma_grad_a, so only first order in a.
  a = np.array([0.5, 2.5, 7.0])
  x = np.array([0.3, 3.7, 9.0])
  for fn in (arrax.lax.igamma, arrax.lax.igammac):
    check_grads(lambda a, fn=fn: fn(a, x), (a,), order=1, modes=["fwd", "rev"], rtol=1e-5)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_grads_match_jax(name):
  a = np.array([0.4, 2.5, 6.0], np.float32)
  x = np.array([1.2, 0.7, 9.0], np.float32)

  def grads(lib):
    return lib.jit(lib.vmap(lib.grad(getattr(lib.lax, name), (0, 1))))(a, x)
  for g, w in zip(grads(arrax), grads(real_jax)):
    assert_same(g, w, rtol=2e-5)
  # The printed grad jaxpr (scalar Python operands: weak literals) is JAX's.
  ours, theirs = getattr(arrax.lax, name), getattr(real_jax.lax, name)
  expected = str(real_jax.make_jaxpr(real_jax.grad(theirs, (0, 1)))(2.5, 1.5))
  assert str(arrax.make_jaxpr(arrax.grad(ours, (0, 1)))(2.5, 1.5)) == expected


def test_igamma_grad_a_has_no_derivative():
  for lib in (real_jax, arrax):
    with pytest.raises(NotImplementedError, match="igamma_grad_a"):
      lib.grad(lib.lax.igamma_grad_a)(2.5, 1.5)
    with pytest.raises(NotImplementedError, match="igamma_grad_a"):
      lib.jvp(lambda x, lib=lib: lib.lax.igamma_grad_a(2.5, x), (1.5,), (1.0,))


def test_random_gamma_grad_forward_mode_only():
  # JAX differentiates random_gamma_grad's loops: forward mode works, reverse mode does not.
  a = np.array([0.3, 2.5, 7.0], np.float32)
  x = np.array([0.2, 1.5, 9.0], np.float32)

  def jvps(lib):
    f = lib.lax.random_gamma_grad
    return lib.jit(lambda a, x: lib.jvp(f, (a, x), (a * 0 + 1, x * 0 + 2)))(a, x)
  for g, w in zip(jvps(arrax), jvps(real_jax)):
    assert_same(g, w, rtol=2e-5)
  for lib in (real_jax, arrax):
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
      lib.jit(lib.grad(lib.lax.random_gamma_grad))(np.float32(2.5), np.float32(1.5))


# ---- gradients of the gamma samplers ---------------------------------------------------------
_ALPHA = np.array([0.02, 0.3, 1.0, 3.5, 40.0], np.float32)


def _samplers(lib):
  r = lib.random
  return {
      "gamma": lambda k, a: r.gamma(k, a),
      "loggamma": lambda k, a: r.loggamma(k, a),
      "beta": lambda k, a: r.beta(k, a, a[::-1]),
      "dirichlet": lambda k, a: r.dirichlet(k, a) * np.arange(a.shape[-1], dtype=a.dtype),
  }


# Each sampler is compiled with its rejection loops, so each case covers a different path once:
# jit(vmap(grad)) for gamma and beta, eager grad in float64 with a raw key for dirichlet, first
# and second derivatives (forward over reverse) for loggamma.
@pytest.mark.parametrize("name", ["gamma", "beta"])
def test_sampler_grad_jit_vmap(name):
  alphas = np.stack([_ALPHA, _ALPHA[::-1] * 2]).astype(np.float32)

  def grads(lib):
    fn = _samplers(lib)[name]
    keys = lib.random.split(lib.random.key(3), 2)
    return lib.jit(lib.vmap(lib.grad(lambda k, a: fn(k, a).sum(), 1)))(keys, alphas)
  assert_same(grads(arrax), grads(real_jax), rtol=1e-4, atol=1e-6)


def test_dirichlet_grad_eager_float64(x64):
  alpha = _ALPHA.astype(np.float64)

  def grad(lib):
    k = lib.random.PRNGKey(5)   # a raw key
    return lib.grad(lambda a: _samplers(lib)["dirichlet"](k, a).sum())(alpha)
  assert_same(grad(arrax), grad(real_jax), rtol=1e-10, atol=1e-14)


def test_loggamma_first_and_second_derivatives():
  # Forward over reverse works (forward mode goes through random_gamma_grad's loops);
  # reverse over reverse does not, in JAX either.
  def d1(lib):
    k = lib.random.key(0)
    return lib.grad(lambda a: lib.random.loggamma(k, a).sum())

  def both(lib):
    return lib.jit(lambda a: (d1(lib)(a), lib.jacfwd(d1(lib))(a)))(_ALPHA)
  for g, w in zip(both(arrax), both(real_jax)):
    assert_same(g, w, rtol=1e-4, atol=1e-6)
  for lib in (real_jax, arrax):
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
      lib.jit(lib.grad(lambda a, lib=lib: d1(lib)(a).sum()))(_ALPHA)
