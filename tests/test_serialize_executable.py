"""jax.experimental.serialize_executable against JAX 0.10.2: a compiled executable serialized
and loaded back (in this process, and in a fresh one) runs like the original, checks its
arguments, keeps its pytrees, and refuses what JAX refuses."""
import json
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import serialize_executable as jse

import arrax
import arrax.numpy as anp
from arrax.experimental import serialize_executable as ase
from tests.multidevice import run_script
from tests.oracle import BF16, assert_same, rand, same_exception, to_arrax, to_jax


def _round_trip(top, se, f, args, kwargs=None, call_args=None, call_kwargs=None, **jit_kw):
  kwargs = kwargs or {}
  compiled = top.jit(f, **jit_kw).lower(*args, **kwargs).compile()
  data, in_tree, out_tree = se.serialize(compiled)
  assert type(data) is bytes
  assert in_tree == compiled.in_tree and out_tree == compiled.out_tree
  loaded = se.deserialize_and_load(data, in_tree, out_tree)
  assert type(loaded) is type(compiled)
  assert loaded.in_tree == in_tree and loaded.out_tree == out_tree
  assert str(loaded.args_info) == str(compiled.args_info)
  call_args = args if call_args is None else call_args
  return loaded(*call_args, **(call_kwargs if call_kwargs is not None else kwargs))


def _dynamic(args, static):
  return [a for i, a in enumerate(args) if i not in static]


# (function, arguments, jit options): results, dtypes, weak types and pytrees as JAX's
CASES = {
    "tree_out": (lambda x, y: {"a": x + y, "b": (x * 2, None)},
                 (rand((3,)), 2.0), {}),
    "dtypes": (lambda a, b, c, d, e, f, g: (~a, b + 1, c * 2, d - 3, e / 2, f * f, g.conj()),
               (rand((2,), np.bool_), rand((2, 3), np.int8), rand((3,), np.uint8),
                rand((), np.int32), rand((2,), np.float16), rand((2,), BF16),
                rand((2,), np.complex64)), {}),
    "empty_and_scalar": (lambda x, s: (x.sum(0), s * 3, x.astype(BF16)),
                         (rand((0, 3)), 4), {}),
    "nan_inf": (lambda x: (x * 2, anp_or_jnp_where(x)),
                (np.array([np.nan, np.inf, -np.inf, -0.0], np.float32),), {}),
    "static": (lambda x, n: x ** n, (rand((4,)), 3), {"static_argnums": 1}),
    "donated": (lambda x, y: (x * y, y), (rand((2, 2)), rand((2, 2), seed=1)),
                {"donate_argnums": 0}),
    "no_args": (lambda: 1.5, (), {}),
    "no_outputs": (lambda x: None, (rand((2,)),), {}),
    "large_const": (lambda x: x + np.arange(300, dtype=np.float32), (rand((300,)),), {}),
}


def anp_or_jnp_where(x):
  xp = jnp if isinstance(x, jax.Array) else anp
  return xp.where(xp.isfinite(x), x, 0.0)


@pytest.mark.parametrize("name", list(CASES))
def test_round_trip_results(name):
  f, args, jit_kw = CASES[name]
  static = jit_kw.get("static_argnums", ())
  static = (static,) if isinstance(static, int) else static
  # (donated arguments are consumed: each call gets fresh copies)
  got = _round_trip(arrax, ase, f, to_arrax(args), call_args=_dynamic(to_arrax(args), static),
                    **jit_kw)
  want = _round_trip(jax, jse, f, to_jax(args), call_args=_dynamic(to_jax(args), static),
                     **jit_kw)
  assert_same(got, want, strict_tree=True)


def test_round_trip_kwargs_grad_vmap_keys():
  def loss(w, x, *, scale):
    return scale * jnp_or_anp(w).tanh(x @ w).sum()

  def run(top, se, lib):
    w, x = lib(rand((3, 2))), lib(rand((4, 3), seed=1))
    outs = [_round_trip(top, se, top.grad(loss), (w, x), {"scale": 2.0},
                        call_args=(w * 2, x), call_kwargs={"scale": 0.5}),
            _round_trip(top, se, top.vmap(lambda r: r @ w), (x,))]
    key = top.random.key(0)
    outs.append(_round_trip(top, se, lambda k: top.random.uniform(k, (3,)), (key,),
                            call_args=(top.random.key(7),)))
    return outs

  assert_same(run(arrax, ase, anp.asarray), run(jax, jse, jnp.asarray))


def jnp_or_anp(w):
  return jnp if isinstance(w, jax.Array) else anp


def test_round_trip_x64(x64):
  f = lambda x, i: (x * i, i + 1, x.sum())
  args = (rand((3,), np.float64), np.int64(2))
  assert_same(_round_trip(arrax, ase, f, to_arrax(args)), _round_trip(jax, jse, f, to_jax(args)))


def _both(fn):
  """fn(top, se, lib_np) for each library: (arrax's outcome, JAX's), each a result or error."""
  out = []
  for lib in ((arrax, ase, anp), (jax, jse, jnp)):
    try:
      out.append(fn(*lib))
    except Exception as e:  # noqa: BLE001
      out.append(e)
  return out


def _same_error(fn, match=()):
  a, j = _both(fn)
  assert isinstance(j, Exception), f"JAX did not raise: {j}"

  def rerun():
    if isinstance(a, Exception):
      raise a
  return same_exception(rerun, j, match)


def _serialized(top, se, lib):
  def f(x, y):
    return {"s": x + y, "t": [x * 2]}
  return se.serialize(top.jit(f).lower(lib.ones(3), 2.0).compile())


def test_pytrees_are_returned_not_serialized():
  def check(top, se, lib):
    data, in_tree, out_tree = _serialized(top, se, lib)
    tu = top.tree_util
    assert in_tree == tu.tree_structure(((1, 2), {}))
    assert out_tree == tu.tree_structure({"s": 1, "t": [2]})
    assert in_tree != tu.tree_structure(((1, 2, 3), {}))
    # another tree with as many leaves is taken: it is the caller's to keep
    other = tu.tree_structure(((1, {"z": 2}), {}))
    loaded = se.deserialize_and_load(data, other, out_tree)
    return (str(in_tree), str(out_tree), str(loaded.in_tree), loaded(lib.ones(3), {"z": 4.0}),
            loaded.args_info[0][1]["z"].shape)

  a, j = _both(check)
  assert not isinstance(a, Exception), a
  assert not isinstance(j, Exception), j
  assert a[:3] == j[:3]
  assert_same(a[3], j[3], strict_tree=True)
  assert a[4] == j[4]


@pytest.mark.parametrize("case", ["in_tree_too_many", "in_tree_too_few", "out_tree_too_many",
                                  "out_tree_too_few", "wrong_shape", "wrong_dtype",
                                  "wrong_call_tree"])
def test_tree_and_argument_errors(case):
  def run(top, se, lib):
    data, in_tree, out_tree = _serialized(top, se, lib)
    tu = top.tree_util
    if case == "in_tree_too_many":
      se.deserialize_and_load(data, tu.tree_structure(((1, 2, 3), {})), out_tree)
    elif case == "in_tree_too_few":
      se.deserialize_and_load(data, tu.tree_structure(((1,), {})), out_tree)
    elif case == "out_tree_too_many":
      se.deserialize_and_load(data, in_tree, tu.tree_structure((1, 2, 3)))(lib.ones(3), 1.0)
    elif case == "out_tree_too_few":
      se.deserialize_and_load(data, in_tree, tu.tree_structure(1))(lib.ones(3), 1.0)
    loaded = se.deserialize_and_load(data, in_tree, out_tree)
    if case == "wrong_shape":
      loaded(lib.ones(4), 1.0)
    elif case == "wrong_dtype":
      loaded(lib.ones(3, lib.int32), 1.0)
    elif case == "wrong_call_tree":
      loaded(lib.ones(3))
  _same_error(run)


def _debug_print(top, x):
  top.debug.print("x = {}", x)
  return x + 1


def _pure_callback(top, x):
  return top.pure_callback(lambda a: np.sin(a), top.ShapeDtypeStruct(x.shape, x.dtype), x)


@pytest.mark.parametrize("case", ["debug_print", "pure_callback", "not_compiled", "lowered",
                                  "junk", "empty", "str", "backend_missing"])
def test_errors(case):
  def run(top, se, lib):
    if case in ("debug_print", "pure_callback"):
      body = _debug_print if case == "debug_print" else _pure_callback
      return se.serialize(top.jit(lambda x: body(top, x)).lower(lib.ones(3)).compile())
    if case == "not_compiled":
      return se.serialize(top.jit(lambda x: x))
    if case == "lowered":
      return se.serialize(top.jit(lambda x: x).lower(1.0))
    data, in_tree, out_tree = _serialized(top, se, lib)
    if case == "junk":
      return se.deserialize_and_load(b"junk", in_tree, out_tree)
    if case == "empty":
      return se.deserialize_and_load(b"", in_tree, out_tree)
    if case == "str":
      return se.deserialize_and_load("data", in_tree, out_tree)
    return se.deserialize_and_load(data, in_tree, out_tree, backend="tpu")
  _same_error(run, match=("pickle",) if case in ("debug_print", "pure_callback") else ())


def test_backend_and_execution_devices():
  def run(top, se, lib):
    data, in_tree, out_tree = _serialized(top, se, lib)
    dev = top.devices()[0]
    outs = [se.deserialize_and_load(data, in_tree, out_tree, backend="cpu")(lib.ones(3), 1.0),
            se.deserialize_and_load(data, in_tree, out_tree, backend=dev.client,
                                    execution_devices=[dev])(lib.ones(3), 2.0),
            se.deserialize_and_load(data, in_tree, out_tree, "cpu", top.devices())(
                lib.arange(3.0), 3.0)]
    return outs
  a, j = _both(run)
  assert_same(a, j, strict_tree=True)
  with pytest.raises(IndexError):
    jse.deserialize_and_load(b"", None, None, execution_devices=[])
  with pytest.raises(IndexError):
    ase.deserialize_and_load(b"", None, None, execution_devices=[])


def test_bytes_of_the_other_library_are_refused():
  ajit = ase.serialize(arrax.jit(lambda x: x + 1).lower(anp.ones(2)).compile())
  jjit = jse.serialize(jax.jit(lambda x: x + 1).lower(jnp.ones(2)).compile())
  # (arrax reads only its own format: JAX's pickle, naming JAX's classes, is not unpickled)
  with pytest.raises(pickle.UnpicklingError, match="arrax"):
    ase.deserialize_and_load(jjit[0], ajit[1], ajit[2])
  with pytest.raises(ValueError, match="not an executable serialized by arrax"):
    ase.deserialize_and_load(pickle.dumps((1, 2)), ajit[1], ajit[2])


SERIALIZE = """
import arrax, arrax.numpy as jnp
from arrax.experimental import serialize_executable as se
def f(x, y, *, n):
  return {"s": jnp.sin(x) * y + n, "m": (x @ x.T, x.astype(jnp.bfloat16))}
c = arrax.jit(f).lower(jnp.ones((2, 3)), 2, n=jnp.int32(1)).compile()
data, in_tree, out_tree = se.serialize(c)
open(PATH, "wb").write(data)
print("SERIALIZED", len(data))
"""

LOAD = """
import json, numpy as np
import arrax, arrax.numpy as jnp
from arrax.experimental import serialize_executable as se
in_tree = arrax.tree_util.tree_structure(((1, 2), {"n": 3}))
out_tree = arrax.tree_util.tree_structure({"s": 1, "m": (2, 3)})
c = se.deserialize_and_load(open(PATH, "rb").read(), in_tree, out_tree)
x = jnp.arange(6.0).reshape(2, 3)
out = c(x, 3, n=jnp.int32(4))
leaves, tree = arrax.tree_util.tree_flatten(out)
errs = []
for bad in [lambda: c(x, 3.5, n=jnp.int32(4)), lambda: c(x, 3, jnp.int32(4)),
            lambda: c(x[:1], 3, n=jnp.int32(4))]:
  try:
    bad()
  except Exception as e:
    errs.append(type(e).__name__)
print("RESULT", json.dumps({"tree": str(tree), "errs": errs,
      "leaves": [[str(l.dtype), l.weak_type, np.asarray(l, np.float64).tolist()] for l in leaves]}))
"""


def test_fresh_process(tmp_path):
  path = repr(str(tmp_path / "exe.bin"))
  res = run_script(SERIALIZE.replace("PATH", path), ndev=1)
  assert res.returncode == 0 and "SERIALIZED" in res.stdout, res.stderr[-3000:]
  res = run_script(LOAD.replace("PATH", path), ndev=1)
  assert res.returncode == 0 and "RESULT" in res.stdout, res.stderr[-3000:]
  got = json.loads(res.stdout.split("RESULT", 1)[1])

  def f(x, y, *, n):
    return {"s": jnp.sin(x) * y + n, "m": (x @ x.T, x.astype(jnp.bfloat16))}
  c = jax.jit(f).lower(jnp.ones((2, 3)), 2, n=jnp.int32(1)).compile()
  want = c(jnp.arange(6.0).reshape(2, 3), 3, n=jnp.int32(4))
  leaves, tree = jax.tree_util.tree_flatten(want)
  assert got["tree"] == str(tree)
  assert got["errs"] == ["TypeError"] * 3
  assert len(got["leaves"]) == len(leaves)
  for (dtype, weak, vals), w in zip(got["leaves"], leaves):
    assert dtype == str(w.dtype) and weak == w.weak_type
    np.testing.assert_allclose(vals, np.asarray(w, np.float64), rtol=1e-6)
