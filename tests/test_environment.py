"""Top-level configuration context managers and environment APIs, against JAX 0.10.2:
ensure_compile_time_eval, named_scope/named_call, no_tracing, numpy_rank_promotion, transfer
guards, default_device, default_matmul_precision, live_arrays, copy_to_host_async, ..."""
import inspect

import jax
import pytest

import arrax
from tests.oracle import assert_prints_like_jax

PRELUDE = """
import warnings
def is_array(y):
  return type(y).__name__ in ("Array", "ArrayImpl")
b3 = jnp.arange(3) * 2
b4 = jnp.arange(4) * 2
"""

CASES = {
    "ensure_compile_time_eval": """
      @jax.jit
      def f(x):
        with jax.ensure_compile_time_eval():
          y = jnp.arange(3) * 2
          print(is_array(y), y, int(y.sum()))
          z = x + 1
          print("tracer", not is_array(z))
        return x + y
      print(f(1))
    """,
    "ensure_compile_time_eval_eager": """
      with jax.ensure_compile_time_eval():
        print(jnp.arange(3) + 1)
    """,
    "ensure_compile_time_eval_static_shape": """
      @jax.jit
      def f(x):
        with jax.ensure_compile_time_eval():
          n = int(jnp.array([1, 2, 3]).sum())
        return jnp.zeros(n) + x
      print(f(1.))
    """,
    "named_scope_type_error": "jax.named_scope(1)",
    "named_scope_jaxpr": """
      with jax.named_scope('outer'):
        print(jax.make_jaxpr(lambda x: x + 1)(1.))
    """,
    "named_scope_decorator": """
      @jax.named_scope("deco")
      def h(x): return x * 2
      print(jax.jit(h)(2.), h.__name__)
    """,
    "named_call": """
      print(jax.make_jaxpr(jax.named_call(lambda x: x * 2, name='foo'))(1.))
      def g(x): return x - 1
      print(jax.named_call(g)(3.), jax.named_call(g).__name__)
    """,
    "no_tracing": """
      f = jax.jit(lambda x: x * 3)
      print(f(1.))
      v = jnp.ones(2)   # made outside: JAX's jnp.ones may trace its own helpers when cold
      with jax.no_tracing(True):
        print(f(2.))
        try:
          f(v)
        except RuntimeError as e:
          print("ERR", str(e).split(" at ")[0])
    """,
    "rank_promotion_raise": """
      with jax.numpy_rank_promotion('raise'):
        try:
          jnp.ones(3) + jnp.ones((2, 3))
        except ValueError as e:
          print('ERR', e)
        print(jnp.ones(3) + 1, jnp.ones((2, 3)) + jnp.ones((2, 3)), jnp.ones((2, 3)) * jnp.ones((1, 3)))
      print(jnp.ones(3) + jnp.ones((2, 3)))
    """,
    "rank_promotion_warn": """
      with jax.numpy_rank_promotion('warn'):
        with warnings.catch_warnings(record=True) as w:
          warnings.simplefilter("always")
          jnp.ones(3) * jnp.ones((2, 3))
          jnp.where(jnp.ones((2, 3)) > 0, jnp.ones(3), 0.)
          print([str(x.message) for x in w])
    """,
    "rank_promotion_bad_value": """
      with jax.numpy_rank_promotion("bad"):
        pass
    """,
    "transfer_guard_all": """
      with jax.transfer_guard('disallow'):
        try:
          jnp.ones(3) + np.ones(3)
        except jax.errors.JaxRuntimeError as e:
          print('ERR', str(e).split(":")[0], "host-to-device" in str(e))
        print(np.asarray(b3))
        jax.device_put(np.ones(3)); print('explicit ok')
        print(jax.device_get(b3))
        print(b3 + b3)
    """,
    "transfer_guard_scalar": """
      with jax.transfer_guard_host_to_device('disallow'):
        try:
          b3 * 2
        except jax.errors.JaxRuntimeError as e:
          print('ERR')
    """,
    "transfer_guard_host_to_device": """
      with jax.transfer_guard_host_to_device('disallow'):
        try:
          jax.jit(lambda a, b: a + b)(b3, np.ones(3, np.int32))
        except jax.errors.JaxRuntimeError:
          print('ERR')
        print(np.asarray(b4))
      print(b3 + np.ones(3, np.int32))
    """,
    "transfer_guard_device_to_host_on_cpu": """
      with jax.transfer_guard_device_to_host('disallow'):
        print(np.asarray(b4 + b4), float(b3[1]))
    """,
    "transfer_guard_allow_and_disallow_explicit": """
      with jax.transfer_guard('allow'):
        print(jnp.arange(3.) + np.ones(3))
      with jax.transfer_guard('disallow_explicit'):
        try:
          jax.device_put(np.ones(3))
        except jax.errors.JaxRuntimeError as e:
          print('ERR', str(e).split(":")[0])
    """,
    "copy_to_host_async": "print(jax.copy_to_host_async(jnp.ones(3)), jax.copy_to_host_async({'a': b3})['a'])",
    "live_arrays": """
      keep = jnp.arange(7.) * 3
      live = jax.live_arrays()
      print(all(is_array(a) for a in live), any(a is keep for a in live))
    """,
    "print_environment_info": """
      info = jax.print_environment_info(return_string=True)
      print([k in info for k in ("jaxlib:", "numpy:", "python:", "process_count:", "platform:")])
    """,
    "flags": """
      with jax.default_matmul_precision("highest"):
        print(jax.config.jax_default_matmul_precision)
      print(jax.config.jax_default_matmul_precision)
      with jax.log_compiles(True):
        print(jax.config.jax_log_compiles)
      with jax.explain_cache_misses(True):
        print(jax.config.jax_explain_cache_misses)
      with jax.checking_leaks():
        print(jax.jit(lambda x: x + 1)(1.))
      print(jax.config.jax_numpy_rank_promotion, jax.config.jax_numpy_dtype_promotion,
            jax.config.jax_default_device, jax.config.jax_transfer_guard, jax.config.jax_no_tracing)
      with jax.numpy_dtype_promotion("standard"):
        print(jnp.ones(2, jnp.int32) + jnp.ones(2, jnp.float32))
    """,
    "default_device": """
      cpu = jax.devices("cpu")[0]
      with jax.default_device(cpu):
        a = jnp.ones(2)
        print(a.devices() == {cpu}, jax.config.jax_default_device == cpu)
        print(jax.jit(lambda x: x * 2)(a).devices() == {cpu})
      with jax.default_device("cpu"):
        print(jnp.ones(2) * 2)
      print(jax.config.jax_default_device)
    """,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_environment_like_jax(name):
  assert_prints_like_jax(CASES[name], PRELUDE)


NAMES = ["named_call", "named_scope", "ensure_compile_time_eval", "live_arrays",
         "print_environment_info", "copy_to_host_async", "transfer_guard", "effects_barrier",
         "pure_callback"]


def _params(f):
  return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]


@pytest.mark.parametrize("name", NAMES)
def test_signature(name):
  assert _params(getattr(arrax, name)) == _params(getattr(jax, name))


@pytest.mark.parametrize("name", [
    "default_device", "default_matmul_precision", "numpy_rank_promotion",
    "numpy_dtype_promotion", "log_compiles", "explain_cache_misses", "no_tracing",
    "transfer_guard_host_to_device", "transfer_guard_device_to_host",
    "transfer_guard_device_to_device", "checking_leaks", "check_tracer_leaks"])
def test_context_manager_names_exist(name):
  assert hasattr(jax, name)
  cm = getattr(arrax, name)
  assert callable(cm)


def test_strict_dtype_promotion():
  with arrax.numpy_dtype_promotion("strict"):
    with pytest.raises(arrax.dtypes.TypePromotionError, match="no available implicit dtype"):
      arrax.numpy.ones(3, "int32") + arrax.numpy.ones(3, "float32")
