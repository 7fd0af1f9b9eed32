"""jit, make_jaxpr, lowering and the spec documents' examples, compared with JAX 0.10.2."""
import functools
import logging
from collections import namedtuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from arrax import errors
from oracle import assert_same, both, make_with


# ---- make_jaxpr text ---------------------------------------------------------------------------
JAXPR_CASES = [
    ("sin_add", lambda np_: lambda x: 2 + np_.sin(x), lambda np_: (np_.array(1.0),)),
    ("quadratic", lambda np_: lambda a, b: (-b + np_.sqrt(b**2 - 4 * a)) / (2 * a),
     lambda np_: (1.0, 4.0)),
    ("fnc_jax", lambda np_: lambda x1, x2: (np_.divide(x1, x2) - np_.exp(x2)) * (
        np_.sin(np_.divide(x1, x2)) + np_.divide(x1, x2) - np_.exp(x2)), lambda np_: (1.0, 1.0)),
    ("poly_sum", lambda np_: lambda x: np_.sum(x**2 - x**3 - x), lambda np_: (np_.ones(100),)),
    ("int_ops", lambda np_: lambda x: np_.maximum(x, 0) > 1, lambda np_: (np_.ones((3, 4), np_.int32),)),
    ("mixed_promote", lambda np_: lambda x, y: x * y, lambda np_: (np_.ones((3, 4)), 2)),
    ("int_div", lambda np_: lambda x, y: x / y, lambda np_: (np_.ones((3, 4), np_.int32), 2)),
    ("convert", lambda np_: lambda x: x.astype(np_.int8) + 1, lambda np_: (np_.ones((2, 2)),)),
    ("identity", lambda np_: lambda x: x, lambda np_: (np_.ones((2, 2)),)),
    ("weak_mul", lambda np_: lambda x: np_.array(3) * x, lambda np_: (2,)),
    ("abs_neg", lambda np_: lambda x: -x + abs(x), lambda np_: (np_.ones(3),)),
    ("matmul", lambda np_: lambda x: x @ x, lambda np_: (np_.ones((3, 3)),)),
    ("sqrt_int", lambda np_: lambda x: np_.sqrt(x), lambda np_: (np_.ones(3, np_.int32),)),
    ("pow_float", lambda np_: lambda x: x ** 2.5, lambda np_: (np_.ones(3),)),
    ("broadcast_rank", lambda np_: lambda x, y: x + y, lambda np_: (np_.ones((3, 4)), np_.ones(4))),
    ("mean_max", lambda np_: lambda x: np_.mean(x) + np_.max(x), lambda np_: (np_.ones((3, 4)),)),
    ("floordiv", lambda np_: lambda x, y: x // y, lambda np_: (np_.ones((3, 4), np_.int32), 2)),
    ("remainder", lambda np_: lambda x, y: x % y, lambda np_: (np_.ones((3, 4)), 2)),
    ("where", lambda np_: lambda x: np_.where(x > 0, x, 0), lambda np_: (np_.ones(3),)),
    ("unrolled_loop", lambda np_: _loop(np_), lambda np_: (np_.ones((2, 2)),)),
]


def _loop(np_):
  def f(x):
    for i in range(8):
      x = np_.sin(x) * np_.cos(x) + i
    return x
  return f


@pytest.mark.parametrize("name,make_fn,make_args", JAXPR_CASES, ids=[c[0] for c in JAXPR_CASES])
def test_make_jaxpr_text_matches_jax(name, make_fn, make_args):
  expected = str(jax.make_jaxpr(make_fn(jnp))(*make_args(jnp)))
  actual = str(arrax.make_jaxpr(make_fn(anp))(*make_args(anp)))
  assert actual == expected


def test_nested_jit_jaxpr_text():
  def make(api, np_):
    def fn(x):
      return np_.sum(x**2 - x**3 - x)
    return api.jit(fn)
  fa, fj = both(make, make_with("top", "np"))
  assert str(arrax.make_jaxpr(fa)(anp.ones(100))) == str(jax.make_jaxpr(fj)(jnp.ones(100)))
  ga = arrax.jit(lambda x: arrax.jit(anp.sin)(x) + 1)
  gj = jax.jit(lambda x: jax.jit(jnp.sin)(x) + 1)
  assert str(arrax.make_jaxpr(ga)(1.0)) == str(jax.make_jaxpr(gj)(1.0))


def test_closed_over_constants_become_constvars():
  ca, cj = anp.arange(3.0), jnp.arange(3.0)
  fa = lambda x: x * ca + np.float32(2)  # noqa: E731
  fj = lambda x: x * cj + np.float32(2)  # noqa: E731
  assert str(arrax.make_jaxpr(fa)(anp.ones(3))) == str(jax.make_jaxpr(fj)(jnp.ones(3)))


def test_make_jaxpr_return_shape_and_static():
  closed, shape = arrax.make_jaxpr(lambda x, n: x * n, static_argnums=1,
                                   return_shape=True)(anp.ones(3), 2)
  assert shape.shape == (3,) and shape.dtype == np.float32
  assert "mul" in str(closed)


# ---- jit behaviour ----------------------------------------------------------------------------
def test_quadratic_formula_values():
  fa, fj = both(lambda api, np_: api.jit(lambda a, b: (-b + np_.sqrt(b**2 - 4 * a)) / (2 * a)),
                make_with("top", "np"))
  a = np.random.RandomState(0).uniform(0.1, 1, 50).astype(np.float32)
  b = np.random.RandomState(1).uniform(3, 5, 50).astype(np.float32)
  assert_same(fa(a, b), fj(a, b))
  assert_same(fa(1.0, 4.0), fj(1.0, 4.0))


def test_my_function_spec_example():
  def make(api, np_):
    def my_function(x, y):
      x = x * y
      x = np_.minimum(x, 0)
      x = x + y
      return x
    return api.jit(my_function)
  fa, fj = both(make, make_with("top", "np"))
  xa, ya = anp.arange(1024), anp.arange(1024) - 512
  xj, yj = jnp.arange(1024), jnp.arange(1024) - 512
  assert_same(fa(xa, ya), fj(xj, yj))


def test_trace_side_effects_happen_once_and_retrace_on_new_shape():
  calls = []

  @arrax.jit
  def f(x):
    calls.append(x.shape)
    return x * 2
  f(anp.ones(3))
  f(anp.ones(3) + 1)
  assert calls == [(3,)]
  f(anp.ones(4))
  assert calls == [(3,), (4,)]
  f(anp.ones(4, anp.int32))
  assert len(calls) == 3
  f(2.0)            # weak scalar: a new signature
  f(np.float32(2))  # strong scalar: another
  assert len(calls) == 5


def test_traced_value_repr_is_jittracer():
  seen = []

  @arrax.jit
  def f(x):
    seen.append(repr(x))
    return x
  f(anp.array([1, 2, 3]))
  assert seen == ["JitTracer(int32[3])"]


def test_static_argnums_and_argnames():
  @functools.partial(arrax.jit, static_argnums=(1,))
  def f(x, n):
    return x * n
  assert_same(f(anp.ones(3), 3), jax.jit(lambda x, n: x * n, static_argnums=1)(jnp.ones(3), 3))

  @functools.partial(arrax.jit, static_argnames="axis")
  def g(x, axis):
    return x.sum(axis)
  assert g(anp.ones((2, 3)), axis=1).shape == (2,)
  assert g(anp.ones((2, 3)), axis=0).shape == (3,)


def test_unhashable_static_argument_raises_like_jax():
  fa = arrax.jit(lambda x, s: x, static_argnums=1)
  fj = jax.jit(lambda x, s: x, static_argnums=1)
  with pytest.raises(ValueError) as ej:
    fj(jnp.ones(2), [1, 2])
  with pytest.raises(type(ej.value), match="Non-hashable static arguments"):
    fa(anp.ones(2), [1, 2])


def test_method_with_static_self():
  class Counter:
    def __init__(self):
      self.n = 2

    @functools.partial(arrax.jit, static_argnums=0)
    def scale(self, x):
      return x * self.n
  assert np.asarray(Counter().scale(anp.ones(3))).tolist() == [2.0, 2.0, 2.0]


Point = namedtuple("Point", "x y")


def test_pytrees_in_and_out():
  def f(p, d, t):
    return {"sum": p.x + p.y, "nested": [d["a"] * 2, None, (t[0],)]}
  fa, fj = arrax.jit(f), jax.jit(f)
  ia = (Point(anp.ones(2), anp.ones(2)), {"a": anp.arange(3)}, (1.5,))
  ij = (Point(jnp.ones(2), jnp.ones(2)), {"a": jnp.arange(3)}, (1.5,))
  ra, rj = fa(*ia), fj(*ij)
  assert_same(ra["sum"], rj["sum"])
  assert_same(ra["nested"][0], rj["nested"][0])
  assert ra["nested"][1] is None
  assert_same(ra["nested"][2][0], rj["nested"][2][0])


def test_disable_jit_runs_python():
  calls = []

  @arrax.jit
  def f(x):
    calls.append(type(x).__name__)
    return x + 1
  with arrax.disable_jit():
    f(anp.ones(2))
    f(anp.ones(2))
  assert calls == ["Array", "Array"]


def test_lower_and_compile_text():
  def fnc(x1, x2):
    return (anp.divide(x1, x2) - anp.exp(x2)) * (anp.sin(anp.divide(x1, x2)) +
                                                 anp.divide(x1, x2) - anp.exp(x2))
  lowered = arrax.jit(fnc).lower(1.0, 1.0)
  text = lowered.as_text()
  assert text.startswith("module @jit_fnc")
  assert "stablehlo.sine" in text and 'jax.result_info = "result"' in text
  compiled = lowered.compile()
  hlo = compiled.as_text()
  assert "HloModule jit_fnc" in hlo and "fusion" in hlo
  assert float(compiled(1.0, 1.0)) == pytest.approx(float(jax.jit(
      lambda a, b: (a / b - jnp.exp(b)) * (jnp.sin(a / b) + a / b - jnp.exp(b)))(1.0, 1.0)))
  cost = compiled.cost_analysis()
  assert isinstance(cost, dict) and cost.get("flops", 0) > 0


def test_log_compiles_explains_cache_miss(caplog):
  f = arrax.jit(lambda x: x + 1)
  arrax.config.update("jax_log_compiles", True)
  try:
    with caplog.at_level(logging.WARNING, logger="arrax"):
      f(anp.ones(3))
      f(anp.ones(4))
  finally:
    arrax.config.update("jax_log_compiles", False)
  text = caplog.text
  assert "Compiling <lambda>" in text
  assert "argument 0 changed: shape (3,) -> (4,)" in text


def test_results_are_async_arrays():
  x = anp.ones((256, 256))
  y = arrax.jit(lambda a: a @ a @ a)(x)
  assert isinstance(y, arrax.Array)
  y.block_until_ready()
  assert y.is_ready()


# ---- errors -----------------------------------------------------------------------------------
def test_python_if_on_tracer_raises_bool_conversion_error():
  @arrax.jit
  def f(x):
    if x > 0:
      return x
    return -x
  with pytest.raises(errors.TracerBoolConversionError, match="jnp.where"):
    f(1.0)
  assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)


def test_int_of_tracer_raises():
  with pytest.raises(errors.TracerIntegerConversionError):
    arrax.jit(lambda x: range(x))(3)


def test_numpy_conversion_of_tracer_raises():
  with pytest.raises(errors.TracerArrayConversionError):
    arrax.jit(lambda x: np.sin(np.asarray(x)))(1.0)


def test_leaked_tracer_raises_unexpected_tracer_error():
  leaked = []

  @arrax.jit
  def f(x):
    leaked.append(x)
    return x
  f(1.0)
  with pytest.raises(errors.UnexpectedTracerError):
    anp.sin(leaked[0])


def test_item_assignment_hint():
  x = anp.array([1, 2, 3])
  with pytest.raises(TypeError, match=r"x.at\[idx\].set\(y\)"):
    x[1] = 0


def test_lax_shape_and_dtype_errors_are_typeerrors():
  with pytest.raises(TypeError, match=r"\(3,\), \(2,\)"):
    arrax.lax.add(anp.ones(3), anp.ones(2))
  with pytest.raises(TypeError, match="same dtypes"):
    arrax.lax.add(anp.ones(3), anp.ones(3, anp.int32))


# ---- runtime ----------------------------------------------------------------------------------
def test_devices_and_device_put():
  assert arrax.default_backend() == "cpu"
  assert arrax.device_count() >= 1
  assert arrax.devices()[0].platform == "cpu"
  x = arrax.device_put(np.arange(4))
  assert isinstance(x, arrax.Array) and x.dtype == np.int32
  tree = arrax.device_get({"a": x})
  assert isinstance(tree["a"], np.ndarray)


def test_eval_shape():
  out = arrax.eval_shape(lambda x, y: {"s": x @ y}, anp.ones((2, 3)), anp.ones((3, 4)))
  assert out["s"].shape == (2, 4) and out["s"].dtype == np.float32
  sds = arrax.ShapeDtypeStruct((5,), np.int32)
  assert arrax.eval_shape(lambda x: x + 1, sds).shape == (5,)


def test_cache_keys_on_threefry_mode():
  # Flipping jax_threefry_partitionable must retrace, not reuse the other mode's executable.
  f = arrax.jit(lambda k: arrax.random.normal(k, (3,)))
  g = jax.jit(lambda k: jax.random.normal(k, (3,)))
  try:
    for mode in (True, False, True):
      arrax.config.update("jax_threefry_partitionable", mode)
      jax.config.update("jax_threefry_partitionable", mode)
      assert_same(f(arrax.random.key(42)), g(jax.random.key(42)))
  finally:
    arrax.config.update("jax_threefry_partitionable", True)
    jax.config.update("jax_threefry_partitionable", True)


def test_array_methods_named_like_tracer_fields_work_under_jit():
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  assert_same(arrax.jit(lambda x: x.var(axis=0) + x.std())(x),
              jax.jit(lambda x: x.var(axis=0) + x.std())(x))


@pytest.mark.parametrize("lib", [jax, arrax], ids=["jax", "arrax"])
def test_donation_warns_at_compile_not_at_definition(lib):
  import warnings
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    f = lib.jit(lambda x: x + 1, donate_argnums=0)
    g = lib.jit(lambda x: x + 1, donate_argnums=())
    h = lib.jit(lambda x: x.sum(), donate_argnums=0)
    assert not w   # libraries decorate at import time (equinox): nothing to say yet
    np.testing.assert_array_equal(f(np.ones(2, np.float32)), np.full(2, 2, np.float32))
    g(np.ones(2, np.float32))
    f(np.ones(3, np.float32))
    assert not w   # the donated buffers were used
    h(np.ones(3, np.float32))
    h(np.ones(3, np.float32))
  assert [str(x.message).split("\n")[0] for x in w] == [
      "Some donated buffers were not usable: float32[3]."]
