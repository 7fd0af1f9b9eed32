"""jax_numpy_dtype_promotion='strict' against JAX: results, weak types, refusals and messages."""
import contextlib
import itertools
import threading

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from arrax._src import dtypes

DTYPES = [np.dtype(d) for d in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    ml_dtypes.bfloat16, np.float16, np.float32, np.float64, np.complex64, np.complex128)]
SCALARS = [True, 2, 1.5, 1j]
# The array dtypes the op matrix runs over (tracing only, via eval_shape).
OP_DTYPES = [np.dtype(d) for d in (np.bool_, np.int8, np.int32, np.uint8, np.uint32,
                                   ml_dtypes.bfloat16, np.float16, np.float32, np.complex64)]
MODES = ["standard", "strict"]


@contextlib.contextmanager
def mode(name):
  with jax.numpy_dtype_promotion(name), arrax.numpy_dtype_promotion(name):
    yield


@contextlib.contextmanager
def x64(on):
  jax.config.update("jax_enable_x64", on)
  arrax.config.update("jax_enable_x64", on)
  try:
    yield
  finally:
    jax.config.update("jax_enable_x64", False)
    arrax.config.update("jax_enable_x64", False)


def outcome(thunk):
  """(dtype, weak type) of each result leaf, or (exception class name, message)."""
  try:
    out = thunk()
  except Exception as e:   # noqa: BLE001 (the class is what is compared)
    return type(e).__name__, str(e)
  if isinstance(out, np.dtype):
    return out
  if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], bool):
    return np.dtype(out[0]), out[1]
  return tuple((np.dtype(leaf.dtype), bool(getattr(leaf, "weak_type", False)))
               for leaf in jax.tree_util.tree_leaves(out))


def assert_all_same(pairs):
  bad = [(label, a, e) for label, a, e in pairs if a != e]
  assert not bad, "\n".join(f"{label}: arrax {a} != jax {e}" for label, a, e in bad[:10])


def _name(v):
  return v.name if isinstance(v, np.dtype) else repr(v)


@pytest.mark.parametrize("use_x64", [False, True])
@pytest.mark.parametrize("name", MODES)
def test_result_type_and_promote_types(name, use_x64):
  values = DTYPES + SCALARS
  cases = []
  with x64(use_x64), mode(name):
    for a, b in itertools.product(values, repeat=2):
      cases.append((f"result_type({_name(a)}, {_name(b)})",
                    outcome(lambda: dtypes.result_type(a, b, return_weak_type_flag=True)),
                    outcome(lambda: jax.dtypes.result_type(a, b, return_weak_type_flag=True))))
    for a, b in itertools.product(DTYPES + [int, float, complex], repeat=2):
      cases.append((f"promote_types({_name(a)}, {_name(b)})",
                    outcome(lambda: (anp.promote_types(a, b), False)),
                    outcome(lambda: (jnp.promote_types(a, b), False))))
    for a, b, c in [(np.int8, 1, 2.5), (np.float16, 1, 1j), (2, 1.5, 1j), (np.int32, np.int32, 3)]:
      cases.append((f"result_type{(a, b, c)}", outcome(lambda: anp.result_type(a, b, c)),
                    outcome(lambda: jnp.result_type(a, b, c))))
  assert_all_same(cases)


def _ops(np_):
  return {
      "operator+": lambda x, y: x + y,
      "multiply": np_.multiply,
      "where": lambda x, y: np_.where(True, x, y),
      "concatenate": lambda x, y: np_.concatenate([np_.atleast_1d(x), np_.atleast_1d(y)]),
      "matmul": lambda x, y: np_.matmul(np_.broadcast_to(x, (2, 2)), np_.broadcast_to(y, (2, 2))),
  }


def _shaped(top, v):
  """An array argument of dtype `v` for eval_shape, or the weak Python scalar `v` itself."""
  return top.ShapeDtypeStruct((2,), v) if isinstance(v, np.dtype) else v


@pytest.mark.parametrize("left", OP_DTYPES, ids=str)
@pytest.mark.parametrize("name", MODES)
def test_ops_matrix(name, left):
  jops, aops = _ops(jnp), _ops(anp)
  cases = []
  with mode(name):
    for right in OP_DTYPES + SCALARS:
      for (op, jf), af in zip(jops.items(), aops.values()):
        for a, b in ((left, right), (right, left)):
          cases.append((f"{op}({_name(a)}, {_name(b)})",
                        outcome(lambda: arrax.eval_shape(lambda: af(*(
                            _shaped(arrax, v) if not isinstance(v, np.dtype) else
                            anp.zeros(2, v) for v in (a, b))))),
                        outcome(lambda: jax.eval_shape(lambda: jf(*(
                            _shaped(jax, v) if not isinstance(v, np.dtype) else
                            jnp.zeros(2, v) for v in (a, b)))))))
  assert_all_same(cases)


@pytest.mark.parametrize("case", [
    ("int32", "float32"), ("int8", "int16"), ("uint8", "int8"), ("bfloat16", "float16"),
    ("float32", "complex64"), ("bool", 1), ("int32", 1.0), ("float32", 2), ("float16", 1j),
    ("int32", "int32")], ids=str)
@pytest.mark.parametrize("name", MODES)
def test_eager_binary_ops(name, case):
  def run(np_, op):
    x = np_.ones(3, case[0])
    y = case[1] if not isinstance(case[1], str) else np_.ones(3, case[1])
    return op(x, y)
  ops = [lambda x, y: x + y, lambda x, y: y * x, lambda x, y: x - y if x.dtype != bool else x | y]
  with mode(name):
    assert_all_same([(f"{case} op{i}", outcome(lambda: run(anp, op)),
                      outcome(lambda: run(jnp, op))) for i, op in enumerate(ops)])


@pytest.mark.parametrize("top,np_", [(jax, jnp), (arrax, anp)], ids=["jax", "arrax"])
def test_jit_retraces_per_mode(top, np_):
  traces = []

  @top.jit
  def f(x, y):
    traces.append(1)
    return x + y

  x, y = np_.ones(2, np.int32), np_.ones(2, np.float32)
  assert f(x, y).dtype == np.float32
  with top.numpy_dtype_promotion("strict"):
    with pytest.raises(top.dtypes.TypePromotionError, match="jax_numpy_dtype_promotion=strict"):
      f(x, y)
    assert f(x, x).dtype == np.int32
  assert f(x, y).dtype == np.float32
  n = len(traces)
  top.config.update("jax_numpy_dtype_promotion", "strict")
  try:
    with pytest.raises(top.dtypes.TypePromotionError):
      f(x, y)
  finally:
    top.config.update("jax_numpy_dtype_promotion", "standard")
  assert len(traces) == n + 1
  assert f(x, y).dtype == np.float32 and len(traces) == n + 1


@pytest.mark.parametrize("name", MODES)
def test_jit_and_vmap_match_jax(name):
  def fns(top, np_):
    return [top.jit(lambda x, y: x * y), top.vmap(lambda x, y: x + y),
            top.jit(top.vmap(lambda x: np_.where(x > 0, x, 1))),
            top.vmap(lambda x: x * 2.5), top.jit(lambda x: np_.concatenate([x, x.astype("int8")]))]
  args = [(np.ones(2, np.int32), np.ones(2, np.float16)),
          (np.ones(2, np.uint8), np.ones(2, np.int8)),
          (np.ones((2, 2), np.float32),), (np.ones(3, np.int32),), (np.ones(2, np.int16),)]
  with mode(name):
    assert_all_same([
        (f"fn{i}", outcome(lambda: af(*map(anp.asarray, a))),
         outcome(lambda: jf(*map(jnp.asarray, a))))
        for i, (af, jf, a) in enumerate(zip(fns(arrax, anp), fns(jax, jnp), args))])


def test_context_manager_restores_previous_mode():
  read = lambda: arrax.config.jax_numpy_dtype_promotion  # noqa: E731
  assert read() == "standard"
  with arrax.numpy_dtype_promotion("strict"):
    assert read() == "strict"
    with arrax.numpy_dtype_promotion("standard"):
      assert read() == "standard"
      assert (anp.ones(2, "int32") + anp.ones(2, "float32")).dtype == np.float32
    assert read() == "strict"
    with pytest.raises(arrax.dtypes.TypePromotionError):
      anp.ones(2, "int32") + anp.ones(2, "float32")
  assert read() == "standard"
  with pytest.raises(ZeroDivisionError):
    with arrax.numpy_dtype_promotion("strict"):
      1 / 0
  assert read() == "standard"
  assert (anp.ones(2, "int32") + anp.ones(2, "float32")).dtype == np.float32
  arrax.config.update("jax_numpy_dtype_promotion", "strict")
  try:
    with arrax.numpy_dtype_promotion("standard"):
      assert read() == "standard"
    assert read() == "strict"
  finally:
    arrax.config.update("jax_numpy_dtype_promotion", "standard")
  assert read() == "standard"


def test_context_is_thread_local():
  seen = []
  with arrax.numpy_dtype_promotion("strict"):
    t = threading.Thread(target=lambda: seen.append(
        (arrax.config.jax_numpy_dtype_promotion, anp.result_type(np.int32, np.float32))))
    t.start()
    t.join()
    assert anp.result_type(np.int32, 1) == np.int32
  assert seen == [("standard", np.float32)]


@pytest.mark.parametrize("value", ["strict", "standard", "loose", 3])
def test_config_values_like_jax(value):
  def attempt(top):
    try:
      top.config.update("jax_numpy_dtype_promotion", value)
      return str(top.config.jax_numpy_dtype_promotion)
    except Exception as e:   # noqa: BLE001
      return type(e).__name__, str(e)
    finally:
      top.config.update("jax_numpy_dtype_promotion", "standard")
  assert attempt(arrax) == attempt(jax)
