"""JVP and transpose rules of the elementwise primitives, differentially against JAX.

For each primitive: arrax.jvp / arrax.vjp of the lax function against jax.jvp / jax.vjp (values,
dtypes, shapes, weak types) over float32, float64 (x64) and complex64 where accepted, shapes (),
(3,), (2,3) and broadcasting operands; second derivatives of the smooth ones; JAX's conventions
at non-differentiable points; float0 tangents; the printed jaxprs of grad; error classes.
"""
import functools

import jax as real_jax
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from oracle import BF16, FLOAT0, ad_tol, assert_same, check_jvp_vjp, named


# ---- helpers --------------------------------------------------------------------------------
def _sample(rng, shape, dtype, domain):
  """Random values of `dtype` inside the domain where the primitive is smooth."""
  lo_hi = {"any": (-2.0, 2.0), "pos": (0.5, 2.0), "unit": (-0.8, 0.8), "gt1": (1.5, 3.0),
           "small": (-1.2, 1.2)}
  dt = np.dtype(dtype)
  if domain == "nonzero":
    re = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
  else:
    re = rng.uniform(*lo_hi[domain], shape)
  if dt.kind == "c":
    im = rng.uniform(-0.5, 0.5, shape)
    return np.asarray(re + 1j * im).astype(dt)
  if dt.kind in "iub":
    return np.asarray(np.round(re * 3)).astype(dt)
  return np.asarray(re).astype(dt)


def _tangent_like(x, rng):
  x = np.asarray(x)
  if x.dtype.kind in "iub":
    return np.zeros(x.shape, FLOAT0)
  return _sample(rng, x.shape, x.dtype, "any")


# Cases are lax.<name>(*primals, **kwargs); jvp and vjp are checked eagerly, with tangents drawn
# from the smooth domain of every primitive.
check = functools.partial(check_jvp_vjp, build=named("lax"), eager=True, tangent=_tangent_like)


def _fn(lib, name, **kw):
  fun = getattr(lib.lax, name)
  return lambda *args: fun(*args, **kw)


def _grad2_both(name, x, kw=None):
  kw = kw or {}
  ga = arrax.grad(arrax.grad(_fn(arrax, name, **kw)))(x)
  gj = real_jax.grad(real_jax.grad(_fn(real_jax, name, **kw)))(x)
  return ga, gj


# ---- unary primitives -----------------------------------------------------------------------
# name -> (domain, accepts complex, smooth (second order checked), keyword arguments)
UNARY = {
    "neg": ("any", True, True, {}),
    "exp": ("any", True, True, {}),
    "exp2": ("any", True, True, {}),
    "log": ("pos", True, True, {}),
    "log1p": ("pos", True, True, {}),
    "expm1": ("any", True, True, {}),
    "sqrt": ("pos", True, True, {}),
    "rsqrt": ("pos", True, True, {}),
    "cbrt": ("nonzero", False, True, {}),
    "tanh": ("any", True, True, {}),
    "logistic": ("any", True, True, {}),
    "sin": ("any", True, True, {}),
    "cos": ("any", True, True, {}),
    "tan": ("small", True, True, {}),
    "asin": ("unit", True, True, {}),
    "acos": ("unit", True, True, {}),
    "atan": ("any", True, True, {}),
    "sinh": ("any", True, True, {}),
    "cosh": ("any", True, True, {}),
    "asinh": ("any", True, True, {}),
    "acosh": ("gt1", True, True, {}),
    "atanh": ("unit", True, True, {}),
    "erf": ("any", False, True, {}),
    "erfc": ("any", False, True, {}),
    "erf_inv": ("unit", False, True, {}),
    "lgamma": ("pos", False, True, {}),
    "digamma": ("pos", False, True, {}),
    "square": ("any", True, True, {}),
    "abs": ("nonzero", True, True, {}),
    "conj": ("any", True, False, {}),
    "sign": ("nonzero", False, True, {}),
    "floor": ("any", False, True, {}),
    "ceil": ("any", False, True, {}),
    "round": ("any", False, True, {}),
    "is_finite": ("any", False, False, {}),
    "reduce_precision": ("any", False, True, {"exponent_bits": 5, "mantissa_bits": 10}),
    "integer_pow": ("nonzero", True, True, {"y": 3}),
}


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float32(name, shape):
  domain, _, _, kw = UNARY[name]
  x = _sample(np.random.default_rng(1), shape, np.float32, domain)
  check(name, x, kwargs=kw)


@pytest.mark.parametrize("name", sorted(n for n, v in UNARY.items() if v[1]) + ["real", "imag"])
def test_unary_complex64(name):
  domain, _, _, kw = UNARY.get(name, ("any", True, False, {}))
  x = _sample(np.random.default_rng(2), (2, 3), np.complex64, domain)
  check(name, x, kwargs=kw, tol=1e-4)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float64_and_finite_differences(name, x64):
  domain, _, smooth, kw = UNARY[name]
  x = _sample(np.random.default_rng(3), (3,), np.float64, domain)
  check(name, x, kwargs=kw)
  if name in ("reduce_precision", "is_finite"):
    return
  # Central differences of the primal (zero for the piecewise-constant ones away from jumps).
  f = _fn(arrax, name, **kw)
  t = np.random.default_rng(4).uniform(-1, 1, x.shape)
  eps = 1e-6
  fd = (np.asarray(f(x + eps * t)) - np.asarray(f(x - eps * t))) / (2 * eps)
  _, tan = arrax.jvp(f, (x,), (t,))
  np.testing.assert_allclose(np.asarray(tan), fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(n for n, v in UNARY.items() if v[2]))
def test_unary_second_order(name):
  domain, _, _, kw = UNARY[name]
  x = float(_sample(np.random.default_rng(5), (), np.float32, domain))
  ga, gj = _grad2_both(name, x, kw)
  assert_same(ga, gj, tol=1e-4)


@pytest.mark.parametrize("y", [0, 1, 2, 3, -1, -2, 5])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_integer_pow(y, dtype):
  x = _sample(np.random.default_rng(6), (2, 3), dtype, "nonzero")
  check("integer_pow", x, kwargs={"y": y}, tol=1e-4)
  if dtype == np.float32:
    ga, gj = _grad2_both("integer_pow", 1.5, {"y": y})
    assert_same(ga, gj, tol=ad_tol)


def test_unary_bfloat16():
  x = _sample(np.random.default_rng(7), (4,), BF16, "pos")
  for name in ("sin", "exp", "sqrt", "tanh", "log", "abs"):
    check(name, x)


# ---- binary primitives ----------------------------------------------------------------------
# name -> (domain of x, domain of y, accepts complex)
BINARY = {
    "add": ("any", "any", True),
    "sub": ("any", "any", True),
    "mul": ("any", "any", True),
    "div": ("any", "nonzero", True),
    "rem": ("any", "nonzero", False),
    "max": ("any", "any", False),
    "min": ("any", "any", False),
    "atan2": ("any", "nonzero", False),
    "pow": ("pos", "any", True),
    "complex": ("any", "any", False),
}
SHAPE_PAIRS = [((), ()), ((3,), (3,)), ((2, 3), (2, 3)), ((), (2, 3)), ((2, 3), ()),
               ((1, 3), (2, 3)), ((2, 1), (1, 3))]


@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_float32(name, shapes):
  dx, dy, _ = BINARY[name]
  rng = np.random.default_rng(8)
  x = _sample(rng, shapes[0], np.float32, dx)
  y = _sample(rng, shapes[1], np.float32, dy)
  check(name, x, y)
  # Each operand alone (the other one is a constant), as in grad with respect to one argument.
  check(name, x, y, argnums=(0,))
  check(name, x, y, argnums=(1,))


@pytest.mark.parametrize("name", sorted(n for n, v in BINARY.items() if v[2]))
def test_binary_complex64(name):
  dx, dy, _ = BINARY[name]
  rng = np.random.default_rng(9)
  x = _sample(rng, (2, 3), np.complex64, dx)
  y = _sample(rng, (), np.complex64, dy)
  check(name, x, y, tol=1e-4)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_float64_and_finite_differences(name, x64):
  dx, dy, _ = BINARY[name]
  rng = np.random.default_rng(10)
  x = _sample(rng, (3,), np.float64, dx)
  y = _sample(rng, (3,), np.float64, dy)
  check(name, x, y)
  f = _fn(arrax, name)
  tx, ty = rng.uniform(-1, 1, (2, 3))
  eps = 1e-6
  fd = (np.asarray(f(x + eps * tx, y + eps * ty))
        - np.asarray(f(x - eps * tx, y - eps * ty))) / (2 * eps)
  _, tan = arrax.jvp(f, (x, y), (tx, ty))
  np.testing.assert_allclose(np.asarray(tan), fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "max", "min", "atan2", "pow", "rem"])
def test_binary_second_order(name):
  dx, dy, _ = BINARY[name]
  rng = np.random.default_rng(11)
  x = float(_sample(rng, (), np.float32, dx))
  y = float(_sample(rng, (), np.float32, dy))
  for argnums in (0, 1):
    def build(lib):
      f = _fn(lib, name)
      g = lib.grad(f, argnums=argnums)
      return lib.grad(lambda a, b: g(a, b), argnums=(0, 1))
    assert_same(build(arrax)(x, y), build(real_jax)(x, y), tol=1e-4)


def test_pow_integer_exponent():
  x = _sample(np.random.default_rng(12), (2, 3), np.float32, "pos")
  for y in (np.int32(3), np.array([[0, 1, 2], [3, -1, 4]], np.int32), 2):
    check("pow", x, y, argnums=(0,))
  xc = _sample(np.random.default_rng(13), (3,), np.complex64, "pos")
  check("pow", xc, np.int32(2), argnums=(0,), tol=1e-4)


def test_polygamma_and_nextafter():
  x = _sample(np.random.default_rng(14), (3,), np.float32, "pos")
  m = np.float32(1.0)
  check("polygamma", m, x, argnums=(1,), tol=1e-4)
  assert_same(*_grad2_both("digamma", 1.5), tol=1e-4)
  # Neither library differentiates polygamma in m, nor nextafter at all.
  for lib in (arrax, real_jax):
    with pytest.raises(ValueError):
      lib.grad(lambda m: lib.lax.polygamma(m, 2.5))(1.0)
    with pytest.raises(NotImplementedError):
      lib.grad(lambda x: lib.lax.nextafter(x, 1.0))(0.5)


# ---- JAX's conventions at non-differentiable points -----------------------------------------
def test_abs_at_zero():
  x = np.array([-1.0, 0.0, -0.0, 2.0], np.float32)
  check("abs", x)
  z = np.array([0j, 1 + 1j, -2j], np.complex64)
  check("abs", z)
  assert_same(arrax.grad(arrax.lax.abs)(0.0), real_jax.grad(real_jax.lax.abs)(0.0), tol=ad_tol)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_ties_split_the_gradient(name):
  x = np.array([1.0, 2.0, 3.0, -0.0], np.float32)
  y = np.array([1.0, 0.0, 5.0, 0.0], np.float32)
  check(name, x, y)
  check(name, x, np.float32(1.0))
  for lib in (arrax, real_jax):
    g = lib.grad(_fn(lib, name), argnums=(0, 1))(2.0, 2.0)
    assert [float(v) for v in g] == [0.5, 0.5]


def test_sqrt_rsqrt_cbrt_at_zero():
  x = np.array([0.0, 1.0, 4.0], np.float32)
  for name in ("sqrt", "rsqrt", "cbrt"):
    check(name, x)


@pytest.mark.parametrize("y", [0, 1, 2, 3, 0.0, 0.5, 1.0, 2.0, 2.5])
def test_pow_at_zero(y):
  x = np.array([0.0, 1.0, 2.0], np.float32)
  y_arr = np.full(3, y, np.int32 if isinstance(y, int) else np.float32)
  argnums = (0,) if isinstance(y, int) else None
  check("pow", x, y_arr, argnums=argnums)
  ga = arrax.grad(lambda x: arrax.lax.pow(x, y))(0.0)
  gj = real_jax.grad(lambda x: real_jax.lax.pow(x, y))(0.0)
  assert_same(ga, gj, tol=ad_tol)


@pytest.mark.parametrize("y", [0, 1, 2, 3])
def test_integer_pow_at_zero(y):
  check("integer_pow", np.zeros(3, np.float32), kwargs={"y": y})


def test_piecewise_constant_have_zero_derivative():
  x = np.array([-1.5, -0.5, 0.0, 0.5, 2.5], np.float32)
  for name in ("sign", "floor", "ceil", "round", "is_finite"):
    check(name, x)


def test_rem_at_jumps():
  x = np.array([-3.0, 3.0, 2.5, 0.0], np.float32)
  y = np.array([1.5, -1.5, 1.0, 2.0], np.float32)
  check("rem", x, y)


# ---- selection --------------------------------------------------------------------------------
@pytest.mark.parametrize("which_shape", [(), (2, 3)])
def test_select_n_bool(which_shape):
  rng = np.random.default_rng(15)
  which = rng.uniform(size=which_shape) > 0.5
  a, b = (_sample(rng, (2, 3), np.float32, "any") for _ in range(2))
  check("select_n", which, a, b)
  check("select_n", which, a, b, argnums=(1,))
  check("select_n", which, a, b, argnums=(2,))


def test_select_n_int32_three_cases():
  rng = np.random.default_rng(16)
  which = rng.integers(0, 3, (2, 3)).astype(np.int32)
  cases = tuple(_sample(rng, (2, 3), np.float32, "any") for _ in range(3))
  check("select_n", *(which,) + cases)
  check("select_n", *(which,) + cases, argnums=(2,))
  xc = _sample(rng, (2, 3), np.complex64, "any")
  check("select_n", which, xc, xc * 2, xc * 3, argnums=(1, 3))


def test_select_with_integer_cases_has_float0_tangent():
  which = np.array([True, False])
  a, b = np.array([1, 2], np.int32), np.array([3, 4], np.int32)
  check("select_n", which, a, b)


def test_where_gradient():
  x = np.array([-1.0, 0.0, 1.0, 2.0], np.float32)
  ct = np.arange(4, dtype=np.float32)
  ga = arrax.vjp(lambda x: anp.where(x > 0, anp.sin(x), x * 2.0), x)[1](ct)
  gj = real_jax.vjp(lambda x: real_jax.numpy.where(x > 0, real_jax.numpy.sin(x), x * 2.0),
                    x)[1](ct)
  assert_same(ga, gj, tol=ad_tol)


@pytest.mark.parametrize("bounds", ["arrays", "scalars"])
def test_clamp(bounds):
  x = np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 3.0], np.float32)
  if bounds == "arrays":
    lo, hi = np.full(6, -1.0, np.float32), np.full(6, 1.0, np.float32)
    check("clamp", lo, x, hi)
  else:
    lo, hi = np.float32(-1.0), np.float32(1.0)
    check("clamp", lo, x, hi, argnums=(1,))
    # Scalar bounds with an array operand: JAX's rule cannot select a rank-0 tangent.
    for lib in (arrax, real_jax):
      with pytest.raises(TypeError):
        lib.jvp(lambda lo: lib.lax.clamp(lo, x, hi), (lo,), (np.float32(1.0),))
  check("clamp", np.float32(-1.0), np.float32(0.3), np.float32(1.0))
  check("clamp", np.float32(-1.0), np.float32(-1.0), np.float32(1.0))


# ---- complex parts ------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((), ()), ((2, 3), (2, 3)), ((), (3,)), ((1, 3), (2, 3))],
                         ids=str)
def test_complex_real_imag_conj(shapes):
  rng = np.random.default_rng(17)
  x, y = (_sample(rng, s, np.float32, "any") for s in shapes)
  check("complex", x, y)
  check("complex", x, y, argnums=(1,))
  check("conj", x)   # real input, complex output
  z = _sample(rng, shapes[1], np.complex64, "any")
  for name in ("real", "imag", "conj"):
    check(name, z)


def test_complex_gradient_conventions():
  # JAX's convention for a real function f of z = x + iy: grad is df/dx - i df/dy (no extra
  # conjugation is applied by the rules).
  z = np.complex64(1.0 + 2.0j)
  for f in (lambda lax: lambda z: lax.real(lax.mul(z, z)),
            lambda lax: lambda z: lax.imag(lax.mul(z, lax.conj(z))),
            lambda lax: lambda z: lax.abs(lax.exp(z)),
            lambda lax: lambda z: lax.real(lax.conj(lax.sin(z)))):
    assert_same(arrax.grad(f(arrax.lax))(z), real_jax.grad(f(real_jax.lax))(z), tol=1e-5)


# ---- conversions ------------------------------------------------------------------------------
@pytest.mark.parametrize("src,dst", [(np.float32, np.float32), (np.float32, BF16),
                                     (np.float32, np.complex64), (np.complex64, np.float32),
                                     (np.float32, np.int32), (np.int32, np.float32),
                                     (BF16, np.float32)], ids=str)
@pytest.mark.filterwarnings("ignore:Casting complex values to real")
def test_convert_element_type(src, dst):
  x = _sample(np.random.default_rng(18), (2, 3), src, "any")
  check("convert_element_type", x, kwargs={"new_dtype": dst}, tol=2e-2)


def test_convert_element_type_float64(x64):
  x = _sample(np.random.default_rng(19), (3,), np.float32, "any")
  check("convert_element_type", x, kwargs={"new_dtype": np.float64})
  check("convert_element_type", x.astype(np.float64), kwargs={"new_dtype": np.float32}, tol=1e-6)


def test_weak_types_are_kept():
  # grad of Python-scalar inputs stays weakly typed through the rules' constants (as in JAX).
  for name, kw in (("integer_pow", {"y": 4}), ("sqrt", {}), ("tanh", {}), ("logistic", {}),
                   ("erf", {}), ("atanh", {}), ("square", {}), ("exp2", {})):
    ga, gj = _grad2_both(name, 0.5, kw)
    assert_same(ga, gj, tol=1e-5)
    assert_same(arrax.grad(_fn(arrax, name, **kw))(0.5),
                real_jax.grad(_fn(real_jax, name, **kw))(0.5), tol=1e-5)


# ---- integer inputs: float0 tangents ---------------------------------------------------------
INT_UNARY = ["neg", "sign", "abs", "bitwise_not", "population_count", "clz", "square"]
INT_BINARY = ["add", "mul", "max", "min", "rem", "eq", "lt", "bitwise_and", "bitwise_xor",
              "shift_left", "shift_right_logical"]


@pytest.mark.parametrize("name", INT_UNARY + INT_BINARY)
def test_integer_inputs_give_float0(name):
  rng = np.random.default_rng(20)
  n = 1 if name in INT_UNARY else 2
  args = tuple(np.abs(_sample(rng, (3,), np.int32, "pos")) + 1 for _ in range(n))
  check(name, *args)


def test_bool_and_bitcast_give_float0():
  b = np.array([True, False, True])
  check("bitwise_not", b)
  x = _sample(np.random.default_rng(21), (3,), np.float32, "any")
  check("bitcast_convert_type", x, kwargs={"new_dtype": np.int32})
  for name in ("eq", "ne", "lt", "le", "gt", "ge"):
    check(name, x, x[::-1].copy())


def test_float_function_through_integer_ops():
  def build(lib):
    lax = lib.lax
    def f(x):
      n = lax.convert_element_type(lax.floor(x), np.int32)
      k = lax.convert_element_type(lax.shift_left(n, np.int32(1)), np.float32)
      return lax.mul(lax.sin(x), k)
    return f
  x = np.array([0.5, 1.5, 2.5], np.float32)
  ga = arrax.vjp(build(arrax), x)[1](np.ones(3, np.float32))
  gj = real_jax.vjp(build(real_jax), x)[1](np.ones(3, np.float32))
  assert_same(ga, gj, tol=ad_tol)


# ---- nesting with jit ------------------------------------------------------------------------
def test_rules_under_jit():
  def build(lib):
    lax = lib.lax
    f = lambda x, y: lax.div(lax.max(lax.tanh(x), y), lax.add(lax.exp(y), 1.0))
    return lib.jit(lib.grad(lib.jit(f), argnums=(0, 1)))
  assert_same(build(arrax)(0.3, 0.1), build(real_jax)(0.3, 0.1), tol=1e-6)


# ---- printed jaxprs of grad ------------------------------------------------------------------
JAXPR_FUNS = {
    "sin": lambda lax, jnp: lambda x: lax.sin(x),
    "tanh": lambda lax, jnp: lambda x: lax.tanh(x),
    "exp": lambda lax, jnp: lambda x: lax.exp(x),
    "log": lambda lax, jnp: lambda x: lax.log(x),
    "x_times_x": lambda lax, jnp: lambda x: x * x,
    "integer_pow3": lambda lax, jnp: lambda x: lax.integer_pow(x, 3),
    "jnp_cube": lambda lax, jnp: lambda x: x ** 3,
    "div": lambda lax, jnp: lambda x: lax.div(lax.sin(x), x),
    "div_by": lambda lax, jnp: lambda x: lax.div(2.0, x),
    "max": lambda lax, jnp: lambda x: lax.max(x, 0.5),
    "min_both": lambda lax, jnp: lambda x: lax.min(lax.sin(x), x),
    "select": lambda lax, jnp: lambda x: lax.select(lax.gt(x, 0.0), lax.sin(x), lax.neg(x)),
    "logistic": lambda lax, jnp: lambda x: lax.logistic(x),
    "abs": lambda lax, jnp: lambda x: lax.abs(x),
    "sqrt": lambda lax, jnp: lambda x: lax.sqrt(x),
    "rsqrt": lambda lax, jnp: lambda x: lax.rsqrt(x),
    "pow_float": lambda lax, jnp: lambda x: lax.pow(x, 2.5),
    "pow_int": lambda lax, jnp: lambda x: lax.pow(x, 3),
    "pow_exponent": lambda lax, jnp: lambda x: lax.pow(2.0, x),
    "atan2": lambda lax, jnp: lambda x: lax.atan2(x, 2.0),
    "clamp": lambda lax, jnp: lambda x: lax.clamp(0.0, x, 2.0),
    "erf": lambda lax, jnp: lambda x: lax.erf(x),
    "atanh": lambda lax, jnp: lambda x: lax.atanh(x),
    "complex_parts": lambda lax, jnp: lambda x: lax.real(lax.mul(lax.complex(x, 2.0),
                                                                 lax.complex(x, x))),
    "square_sub": lambda lax, jnp: lambda x: lax.sub(lax.square(x), lax.expm1(x)),
    "rem": lambda lax, jnp: lambda x: lax.rem(x, 0.7),
    "lgamma": lambda lax, jnp: lambda x: lax.lgamma(x),
    "convert": lambda lax, jnp: lambda x: lax.add(
        lax.mul(lax.convert_element_type(lax.convert_element_type(x, np.int32), np.float32), x),
        lax.convert_element_type(lax.sin(lax.convert_element_type(x, BF16)), np.float32)),
}


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("name", sorted(JAXPR_FUNS))
def test_grad_jaxpr_text_matches_jax(name, order):
  def build(lib, jnp):
    f = JAXPR_FUNS[name](lib.lax, jnp)
    for _ in range(order):
      f = lib.grad(f)
    return f
  x = 0.7
  expected = str(real_jax.make_jaxpr(build(real_jax, real_jax.numpy))(x))
  actual = str(arrax.make_jaxpr(build(arrax, anp))(x))
  assert actual == expected


VJP_JAXPR_FUNS = {
    "mul_scalar_operand": ("mul", ((), (3,))),
    "add_scalar_operand": ("add", ((3,), ())),
    "sub_size1": ("sub", ((1, 3), (2, 3))),
    "div_scalar_divisor": ("div", ((2, 3), ())),
    "max_scalar": ("max", ((), (3,))),
    "atan2_size1": ("atan2", ((2, 1), (2, 3))),
    "complex_scalar": ("complex", ((), (3,))),
}


@pytest.mark.parametrize("name", sorted(VJP_JAXPR_FUNS))
def test_vjp_jaxpr_text_with_broadcasting(name):
  prim, shapes = VJP_JAXPR_FUNS[name]
  rng = np.random.default_rng(22)
  x, y = (_sample(rng, s, np.float32, "pos") for s in shapes)

  def build(lib):
    f = _fn(lib, prim)
    def g(x, y):
      out, pullback = lib.vjp(f, x, y)
      return pullback(lib.numpy.ones_like(out))
    return g
  expected = str(real_jax.make_jaxpr(build(real_jax))(x, y))
  actual = str(arrax.make_jaxpr(build(arrax))(x, y))
  assert actual == expected
