"""The differentiation API beyond grad/jvp/vjp, differentially against JAX: check_grads,
jacfwd/jacrev/jacobian/hessian, linear_transpose, nesting with jit, and the error classes."""
import functools

import jax as real_jax
import jax.numpy as real_jnp
import jax.test_util as real_tu
import ml_dtypes
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
import arrax.test_util as atu
from arrax._src import public_test_util as aptu

from oracle import assert_prints_like_jax, assert_same


def _outcome(fn):
  """'ok' or the name of the exception class `fn()` raised."""
  try:
    fn()
  except Exception as e:   # noqa: BLE001 - we compare classes across libraries
    return type(e).__name__
  return "ok"


# ---- check_grads ------------------------------------------------------------------------------
# (name, function of a jnp module, args builder); each is checked to orders 1 and 2.
GOOD_FUNS = {
    "sin_mul": (lambda jnp: lambda x: jnp.sin(x) * x, lambda: (np.float32(0.7),)),
    "poly_2d": (lambda jnp: lambda x, y: x * y - y * x * x,
                lambda: (np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3),
                         np.arange(6, dtype=np.float32).reshape(2, 3) / 5)),
    "python_scalar": (lambda jnp: lambda x: jnp.cos(x) * 3.0, lambda: (0.3,)),
    "pytree": (lambda jnp: lambda d: {"a": d["x"] * d["y"], "b": (jnp.sin(d["x"]),)},
               lambda: ({"x": np.float32([0.5, -1.0]), "y": np.float32([2.0, 0.25])},)),
    "empty": (lambda jnp: lambda x: jnp.sin(x), lambda: (np.zeros((0, 3), np.float32),)),
}


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("modes", [("fwd",), ("rev",), ("fwd", "rev")])
@pytest.mark.parametrize("name", sorted(GOOD_FUNS))
def test_check_grads_passes_where_jax_passes(name, modes, order):
  fn, args = GOOD_FUNS[name]
  real_tu.check_grads(fn(real_jnp), args(), order, modes=modes)
  atu.check_grads(fn(anp), args(), order, modes=modes)


def test_check_grads_float64(x64):
  f = lambda jnp: lambda x: jnp.sin(x) * jnp.cos(x)
  x = np.float64(0.4)
  real_tu.check_grads(f(real_jnp), (x,), 2)
  atu.check_grads(f(anp), (x,), 2)
  atu.check_grads(f(anp), (x,), 2, modes=("lin",))


def test_check_grads_complex():
  f = lambda jnp: lambda z: z * z + jnp.sin(z)
  z = np.complex64(0.3 + 0.2j)
  real_tu.check_grads(f(real_jnp), (z,), 2)
  atu.check_grads(f(anp), (z,), 2)


def test_check_grads_detects_wrong_derivatives():
  # stop_gradient gives a wrong derivative for x*x: both libraries must reject it, per mode.
  f = lambda jax: lambda x: jax.lax.stop_gradient(x) * x
  for modes in [("fwd",), ("rev",)]:
    r = _outcome(lambda: real_tu.check_grads(f(real_jax), (np.float32(1.3),), 1, modes=modes))
    a = _outcome(lambda: atu.check_grads(f(arrax), (np.float32(1.3),), 1, modes=modes))
    assert r == a == "AssertionError"


def test_check_grads_order2_passes_through_stop_gradient_terms_with_zero_weight():
  def f(jax):
    return lambda x: x * x + 0.0 * jax.lax.stop_gradient(x)
  real_tu.check_grads(f(real_jax), (np.float32(1.3),), 2)
  atu.check_grads(f(arrax), (np.float32(1.3),), 2)


def test_check_grads_detects_partially_wrong_derivative():
  def h(jax):
    # d/dx computed as (7/3) x^2 instead of 3 x^2.
    return lambda x: x * jax.lax.stop_gradient(x * x) / 3 + x * x * x * 2 / 3
  r = _outcome(lambda: real_tu.check_grads(h(real_jax), (np.float32(1.3),), 1))
  a = _outcome(lambda: atu.check_grads(h(arrax), (np.float32(1.3),), 1))
  assert r == a == "AssertionError"


@pytest.mark.parametrize("tol", [None, 1e-1, {np.float32: 1e-1}])
def test_check_grads_tolerances(tol):
  # A derivative off by 1%: fails with default float32 tolerance, passes with 1e-1.
  def f(jax):
    return lambda x: x * x + 0.01 * x * jax.lax.stop_gradient(x)
  x = (np.float32(2.0),)
  r = _outcome(lambda: real_tu.check_grads(f(real_jax), x, 1, atol=tol, rtol=tol))
  a = _outcome(lambda: atu.check_grads(f(arrax), x, 1, atol=tol, rtol=tol))
  assert r == a


@pytest.mark.parametrize("eps", [None, 1e-2, 1e-3])
def test_numerical_jvp_matches_jax(eps):
  from jax._src import public_test_util as rptu
  f = lambda x, y: np.sin(x) * y
  args = (np.float32([0.1, 0.2, 0.3]), np.float32([1.0, 2.0, -1.0]))
  ts = (np.float32([1.0, 0.5, -0.25]), np.float32([0.0, 1.0, 2.0]))
  e = eps or 1e-4
  got = aptu.numerical_jvp(f, args, ts, eps=e)
  want = rptu.numerical_jvp(f, args, ts, eps=e)
  assert got.dtype == want.dtype
  np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.complex64, ml_dtypes.bfloat16,
                                   np.int32, np.bool_])
def test_tolerance_tables_match_jax(dtype):
  from jax._src import public_test_util as rptu
  assert aptu.tolerance(np.dtype(dtype)) == rptu.tolerance(np.dtype(dtype))
  dt = np.dtype(dtype)
  if dt in rptu.default_gradient_tolerance:
    assert aptu.default_gradient_tolerance[dt] == rptu.default_gradient_tolerance[dt]


def test_rand_like_matches_jax():
  from jax._src import public_test_util as rptu
  for x in [np.zeros((2, 3), np.float32), 1.5, np.zeros(4, np.complex64)]:
    a = aptu.rand_like(np.random.RandomState(0), x)
    r = rptu.rand_like(np.random.RandomState(0), x)
    assert type(a) is type(r)
    np.testing.assert_array_equal(a, r)


def test_check_jvp_check_vjp_public():
  f = lambda x: anp.tanh(x) if hasattr(anp, "tanh") else anp.sin(x)
  x = (np.float32([0.3, -0.2]),)
  atu.check_jvp(f, functools.partial(arrax.jvp, f), x)
  atu.check_vjp(f, functools.partial(arrax.vjp, f), x)


# ---- jacobians, hessian, linear_transpose: programs printing identical text -----------------


def _same(code):
  return assert_prints_like_jax(code)


JAC_PROGRAMS = {
    "doc_example": """
        def f(x):
          return jnp.asarray([x[0], 5*x[2], 4*x[1]**2 - 2*x[2], x[2] * jnp.sin(x[0])])
        x = jnp.array([1., 2., 3.])
        print(repr(jax.jacfwd(f)(x)), repr(jax.jacrev(f)(x)))
        print(repr(jax.jacobian(f)(x)))
    """,
    "hessian": """
        g = lambda x: x[0]**3 - 2*x[0]*x[1] - x[1]**6
        print(repr(jax.hessian(g)(jnp.array([1., 2.]))))
        h = lambda dct: {"c": jnp.power(dct["a"], dct["b"])}
        print(jax.hessian(h)({"a": jnp.arange(2.) + 1., "b": jnp.arange(2.) + 2.}))
    """,
    "argnums_pytrees_aux": """
        f = lambda x, y: (x * y, {"s": x + 1})
        print(jax.jacfwd(f, argnums=(0, 1))(2., jnp.ones(2)))
        print(jax.jacrev(f, argnums=(0, 1))(2., jnp.ones(2)))
        print(jax.jacrev(lambda x: (x.sum(), x * 2), has_aux=True)(jnp.ones(2)))
        print(jax.jacfwd(lambda x: (x.sum(), x * 2), has_aux=True)(jnp.ones(2)))
        print(jax.jacrev(lambda x: x * 2, argnums=-1)(jnp.ones(2)))
    """,
    "shapes_edge": """
        print(repr(jax.jacfwd(jnp.sin)(0.5)), repr(jax.jacrev(jnp.sin)(0.5)))
        e = jnp.ones((0, 2))
        print(repr(jax.jacfwd(jnp.sin)(e)), repr(jax.jacrev(jnp.sin)(e)))
        print(repr(jax.jacrev(lambda x: jnp.outer(x, x))(jnp.arange(3.))))
        print(repr(jax.jacfwd(lambda x: x.astype(jnp.bfloat16) * 2)(jnp.arange(3.))))
        b = jnp.arange(3., dtype=jnp.bfloat16)
        print(repr(jax.jacrev(lambda x: (x * x).astype(jnp.float32))(b)))
    """,
    "complex_holomorphic": """
        z = jnp.array([1 + 2j, 0.5 - 1j], dtype=jnp.complex64)
        print(repr(jax.jacfwd(lambda z: z * z, holomorphic=True)(z)))
        print(repr(jax.jacrev(lambda z: jnp.sin(z), holomorphic=True)(z)))
        print(repr(jax.jacfwd(lambda x: (x * (1 + 1j)).real)(jnp.arange(2.))))
    """,
    "nesting": """
        f = lambda x: jnp.sin(x) * x ** 2
        print(repr(jax.jacfwd(jax.jacrev(f))(jnp.arange(3.))))
        print(repr(jax.jacrev(jax.jacfwd(f))(jnp.arange(3.))))
        a = jnp.arange(3.)
        print(repr(jax.jit(jax.jacrev(f))(a)), repr(jax.jacfwd(jax.jit(f))(a)))
        print(repr(jax.vmap(jax.jacrev(f))(jnp.arange(6.).reshape(2, 3))))
        print(repr(jax.grad(jax.grad(jax.grad(lambda x: jnp.sin(x) * x)))(0.3)))
        print(repr(jax.jit(jax.grad(lambda x: jnp.sin(x) * x))(0.3)))
        print(repr(jax.grad(jax.jit(jnp.sin))(0.3)))
    """,
    "jaxprs": """
        print(jax.make_jaxpr(jax.jacfwd(jnp.sin))(jnp.ones(3)))
        print(jax.make_jaxpr(jax.jacrev(jnp.sin))(jnp.ones(3)))
    """,
    "linear_transpose": """
        f = lambda x, y: 0.5 * x - 0.5 * y
        s = jax.ShapeDtypeStruct(shape=(), dtype=np.float32)
        print(jax.linear_transpose(f, s, s)(1.0))
        g = lambda d: {"o": jnp.sum(d["a"], axis=0) * 3., "p": d["b"].T}
        print(jax.linear_transpose(g, {"a": jnp.ones((2, 3)), "b": jnp.ones((2, 2))})(
            {"o": jnp.arange(3.), "p": jnp.arange(4.).reshape(2, 2)}))
        print(jax.linear_transpose(lambda x: x * 2, jnp.arange(3))(jnp.arange(3)))
        print(jax.jit(jax.linear_transpose(lambda x: jnp.cumsum(x), jnp.ones(4)))(jnp.arange(4.)))
    """,
}


@pytest.mark.parametrize("name", sorted(JAC_PROGRAMS))
def test_jacobian_programs_match_jax(name):
  _same(JAC_PROGRAMS[name])


@pytest.mark.parametrize("code", [
    # grad of a non-scalar output, of an integer input, holomorphic with real input
    "jax.grad(lambda x: x * 2)(jnp.ones(3))",
    "jax.grad(lambda x: x * 2.)(3)",
    "jax.grad(lambda x: x * 2.)(2., )\njax.grad(lambda x: x, holomorphic=True)(2.)",
    # jacobians with integer / real inputs where not allowed, complex outputs
    "jax.jacfwd(lambda x: x * 2)(jnp.arange(3))",
    "jax.jacrev(lambda x: x * 2)(jnp.arange(3))",
    "jax.jacrev(lambda x: x * 1j)(jnp.arange(3.))",
    "jax.jacfwd(lambda x: x, holomorphic=True)(jnp.arange(3.))",
    "jax.jacrev(lambda x: x, argnums=3)(jnp.arange(3.))",
    "jax.jacrev(3)",
    # linear_transpose: cotangent structure/type mismatches, non-float functions
    "s = jnp.ones(3)\njax.linear_transpose(lambda x: x * 2, s)(jnp.ones(2))",
    "s = jnp.ones(3)\njax.linear_transpose(lambda x: (x, x), s)(jnp.ones(3))",
    "jax.linear_transpose(lambda x: x.astype(jnp.int32), jnp.ones(3))",
])
def test_error_classes_match_jax(code):
  assert "raised" in _same(code)


def test_grad_error_messages():
  with pytest.raises(TypeError, match=r"Gradient only defined for scalar-output functions. "
                                      r"Output had shape: \(3,\)"):
    arrax.grad(lambda x: x * 2)(anp.ones(3))
  with pytest.raises(TypeError, match="int32"):
    arrax.grad(lambda x: x * 2.)(3)
  assert_same(arrax.grad(lambda x: x * 2., allow_int=True)(3),
              real_jax.grad(lambda x: x * 2., allow_int=True)(3), check_weak=False)


def test_jacobians_check_grads():
  f = lambda x: anp.sin(x) * x
  x = np.float32([0.3, -0.7, 1.1])
  check = atu.check_grads
  check(arrax.jacrev(f), (x,), 1)
  check(arrax.jacfwd(f), (x,), 1)
