"""jax.export against JAX 0.10.2: Exported's attributes, calling convention (the module's main),
serialization round trips arrax->arrax, jax->arrax and arrax->jax, calls eagerly / under jit /
grad, symbolic shapes, and errors.

JAX's side of the serialization needs the `flatbuffers` package (a test extra); arrax writes
and reads the format itself.
"""
import collections
import inspect
import re

import jax
import jax.export  # noqa: F401
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from arrax import export as aexport
from arrax._src.export import shape_poly
from tests.oracle import BF16, assert_prints_like_jax, assert_same, rand

jexport = jax.export


@pytest.fixture
def jax_ser():
  """JAX's Exported.serialize/deserialize import flatbuffers."""
  pytest.importorskip("flatbuffers", reason="flatbuffers (a test extra) is needed by JAX's "
                      "serializer")


# ---- the functions exported: name -> (make(top, np) -> f, args) ------------------------------
def _args(*specs):
  return tuple(rand(s, d, seed=i) for i, (s, d) in enumerate(specs))


F32 = np.float32
CASES = {
    "elementwise": (lambda top, np_: lambda x: np_.sin(x) * 2 + 1, _args(((3, 4), F32))),
    "matmul": (lambda top, np_: lambda x, y: x @ y, _args(((2, 3), F32), ((3, 4), F32))),
    "reductions": (lambda top, np_: lambda x: (x.sum(0), x.max(), np_.mean(x, axis=-1)),
                   _args(((3, 5), F32))),
    "pytree_io": (lambda top, np_: lambda d, t: {"s": d["a"] + t[0], "p": [d["b"] * t[1]]},
                  ({"a": rand((3,), F32), "b": rand((2,), F32, 1)},
                   (rand((3,), F32, 2), rand((), F32, 3)))),
    "multiple_outputs": (lambda top, np_: lambda x: (x, x * x, -x), _args(((4,), F32))),
    "int": (lambda top, np_: lambda x, y: (x * y + 3, x // 2), _args(((5,), np.int32),
                                                                    ((5,), np.int32))),
    "int8_uint8": (lambda top, np_: lambda x, y: (x + x, y * 2), _args(((3,), np.int8),
                                                                       ((3,), np.uint8))),
    "bool": (lambda top, np_: lambda b, x: np_.where(b, x, -x), _args(((4,), np.bool_),
                                                                       ((4,), F32))),
    "bfloat16": (lambda top, np_: lambda x: x * x + 1, _args(((3,), BF16))),
    "float16": (lambda top, np_: lambda x: np_.exp(x), _args(((3,), np.float16))),
    "complex": (lambda top, np_: lambda z: (z * np_.conj(z), np_.abs(z)),
                _args(((3,), np.complex64))),
    "scalar": (lambda top, np_: lambda x: x * 3.0, _args(((), F32))),
    "empty": (lambda top, np_: lambda x: (x + 1, x.sum()), _args(((0, 3), F32))),
    "unused_arg": (lambda top, np_: lambda x, y: x * 2, _args(((2,), F32), ((3,), np.int32))),
    "no_args": (lambda top, np_: lambda: np_.arange(4), ()),
}


def _named(fn, name):
  fn.__name__ = fn.__qualname__ = name
  return fn


def _export(lib_export, top, np_, case):
  make, args = CASES[case]
  return lib_export.export(top.jit(_named(make(top, np_), f"f_{case}")))(*args)


def _attrs(e):
  return (e.fun_name, str(e.in_tree), str(e.in_avals), str(e.out_tree), str(e.out_avals),
          e.nr_devices, e.platforms, e.calling_convention_version, e.module_kept_var_idx,
          e.uses_global_constants, e.ordered_effects, e.unordered_effects,
          tuple(map(str, e.disabled_safety_checks)), e.in_shardings_hlo, e.out_shardings_hlo,
          tuple(e.in_shardings_jax(None)), tuple(e.out_shardings_jax(None)), e.has_vjp(),
          str(e))


def _main_signature(text):
  """The module line and the `main` line of a module's text, without source locations."""
  lines = [ln for ln in text.splitlines()
           if ln.lstrip().startswith(("module @", "func.func public @main"))]
  return [re.sub(r" loc\(#loc\d*\)", "", ln).strip() for ln in lines]


def _np(tree):
  return jax.tree_util.tree_map(np.asarray, tree)


def _jax_same(got, want):
  """Two JAX results with the same structure, dtypes, shapes and values."""
  assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
  for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
    assert type(g) is type(w) and g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("case", sorted(CASES))
def test_exported_attributes_like_jax(case):
  a = _export(aexport, arrax, anp, case)
  j = _export(jexport, jax, jnp, case)
  assert _attrs(a) == _attrs(j)
  assert _main_signature(a.mlir_module()) == _main_signature(j.mlir_module())


@pytest.mark.parametrize("case", sorted(CASES))
def test_call_like_jax(case):
  _, args = CASES[case]
  a = _export(aexport, arrax, anp, case)
  j = _export(jexport, jax, jnp, case)
  want = j.call(*args)
  assert_same(a.call(*args), want, strict_tree=True)
  assert_same(arrax.jit(a.call)(*args), want, strict_tree=True)


@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trips(case, jax_ser):
  _, args = CASES[case]
  a = _export(aexport, arrax, anp, case)
  j = _export(jexport, jax, jnp, case)
  want = j.call(*args)
  a_bytes, j_bytes = a.serialize(), j.serialize()
  assert isinstance(a_bytes, bytearray)
  j_back = jexport.deserialize(j_bytes)
  for got_exp in (aexport.deserialize(a_bytes), aexport.deserialize(j_bytes)):
    assert _attrs(got_exp) == _attrs(j_back)
    assert_same(got_exp.call(*args), want, strict_tree=True)
  from_arrax = jexport.deserialize(a_bytes)   # arrax's bytes read and run by JAX
  assert _attrs(from_arrax) == _attrs(j_back)
  _jax_same(from_arrax.call(*args), want)
  assert _main_signature(from_arrax.mlir_module()) == _main_signature(j.mlir_module())


def test_kwargs_and_namedtuple(jax_ser):
  outs = {}
  for name, top, np_, exp in (("jax", jax, jnp, jexport), ("arrax", arrax, anp, aexport)):
    Point = collections.namedtuple("Point", ["x", "y"])
    exp.register_namedtuple_serialization(Point, serialized_name=f"test_export.Point.{name}")

    def f(p, *, scale):
      return Point(p.x * scale, p.y + scale)

    e = exp.export(top.jit(f))(Point(np.ones(2, F32), np.ones(3, F32)), scale=np.float32(2))
    back = exp.deserialize(e.serialize())
    res = back.call(Point(np.arange(2, dtype=F32), np.arange(3, dtype=F32)),
                    scale=np.float32(3))
    assert type(res) is Point
    outs[name] = (str(e.in_tree), str(back.out_tree), _np(tuple(res)))
  assert outs["arrax"][0].replace("arrax", "jax") == outs["jax"][0]
  assert_same(outs["arrax"][2], outs["jax"][2])


def test_unregistered_node_cannot_serialize():
  Pair = collections.namedtuple("Pair", ["a", "b"])
  e = aexport.export(arrax.jit(lambda p: p.a + p.b))(Pair(np.ones(2, F32), np.ones(2, F32)))
  with pytest.raises(ValueError, match="Cannot serialize PyTreeDef containing an unregistered"):
    e.serialize()


# ---- autodiff ---------------------------------------------------------------------------------
def _grad_fn(top, e):
  return top.grad(lambda x, y: top.numpy.sum(e.call(x, y)[0] ** 2))


def _f_for_grad(top, np_):
  return _named(lambda x, n: (np_.sin(x) * n, n + 1), "f_grad")


GRAD_ARGS = (rand((4,), F32), np.float32(1.5))


def test_grad_through_call_and_deserialized_call(jax_ser):
  j = jexport.export(jax.jit(_f_for_grad(jax, jnp)))(*GRAD_ARGS)
  a = aexport.export(arrax.jit(_f_for_grad(arrax, anp)))(*GRAD_ARGS)
  want = _grad_fn(jax, j)(*GRAD_ARGS)
  assert_same(_grad_fn(arrax, a)(*GRAD_ARGS), want, tol=1e-6)
  assert _attrs(a.vjp()) == _attrs(j.vjp())
  # arrax->arrax, jax->arrax, arrax->jax with the VJP serialized
  for e in (aexport.deserialize(a.serialize(vjp_order=1)),
            aexport.deserialize(j.serialize(vjp_order=1))):
    assert_same(_grad_fn(arrax, e)(*GRAD_ARGS), want, tol=1e-6)
    assert_same(arrax.jit(_grad_fn(arrax, e))(*GRAD_ARGS), want, tol=1e-6)
  e = jexport.deserialize(a.serialize(vjp_order=1))
  assert_same(np.asarray(_grad_fn(jax, e)(*GRAD_ARGS)), np.asarray(want), tol=1e-6)


def test_second_order_grad(jax_ser):
  def g(top, e):
    return top.grad(lambda x: top.grad(lambda x: e.call(x, np.float32(2))[0].sum())(x).sum())

  j = jexport.export(jax.jit(_f_for_grad(jax, jnp)))(*GRAD_ARGS)
  a = aexport.export(arrax.jit(_f_for_grad(arrax, anp)))(*GRAD_ARGS)
  want = g(jax, jexport.deserialize(j.serialize(vjp_order=2)))(GRAD_ARGS[0])
  for e in (aexport.deserialize(a.serialize(vjp_order=2)),
            aexport.deserialize(j.serialize(vjp_order=2))):
    assert_same(g(arrax, e)(GRAD_ARGS[0]), want, tol=1e-6)


def test_grad_int_output_and_input():
  # float0 cotangents for integer inputs and outputs, as in JAX's exported VJP
  def f(np_):
    return lambda x, k: (x * k.astype(x.dtype), k * 2)

  args = (rand((3,), F32), np.arange(3, dtype=np.int32))
  a = aexport.export(arrax.jit(f(anp)))(*args)
  j = jexport.export(jax.jit(f(jnp)))(*args)
  assert _attrs(a.vjp()) == _attrs(j.vjp())
  assert_same(arrax.grad(lambda x: a.call(x, args[1])[0].sum())(args[0]),
              jax.grad(lambda x: j.call(x, args[1])[0].sum())(args[0]))


SNIPPETS = {
    "vmap": """
      e = export.export(jax.jit(jnp.sin))(jnp.ones(3))
      jax.vmap(e.call)(jnp.ones((2, 3)))
    """,
    "jvp": """
      e = export.export(jax.jit(jnp.sin))(jnp.ones(3))
      jax.jvp(e.call, (jnp.ones(3),), (jnp.ones(3),))
    """,
    "make_jaxpr": """
      e = export.export(jax.jit(lambda x, y: (x + y, y)))(jnp.ones(3), jnp.ones((), jnp.int32))
      print(jax.make_jaxpr(e.call)(jnp.ones(3), 1))
    """,
    "wrong_shape": """
      e = export.export(jax.jit(lambda x, y: x * 2))(jnp.ones(3), jnp.ones((2, 2), jnp.int32))
      for args in [(jnp.ones(4), jnp.ones((2, 2), jnp.int32)),
                   (jnp.ones(3), jnp.ones((2, 2))),
                   (jnp.ones((3, 1)), jnp.ones((2, 2), jnp.int32)),
                   (jnp.ones(3),), ([jnp.ones(3)], jnp.ones((2, 2), jnp.int32))]:
        try:
          e.call(*args)
        except Exception as ex:
          print(type(ex).__name__, ex)
      try:
        e.call(jnp.ones(3), y=jnp.ones((2, 2), jnp.int32))
      except Exception as ex:
        print(type(ex).__name__, ex)
      jax.jit(e.call)(jnp.ones(3), jnp.ones((2, 3), jnp.int32))
    """,
    "not_jitted": "export.export(jnp.sin)",
    "platforms_check": """
      e = export.export(jax.jit(jnp.sin))(jnp.ones(3))
      print(export.default_export_platform(), e.platforms)
      print(export.minimum_supported_calling_convention_version,
            export.maximum_supported_calling_convention_version)
      print(export.DisabledSafetyCheck.platform(), export.DisabledSafetyCheck.custom_call("x"),
            export.DisabledSafetyCheck.custom_call("x").is_custom_call(),
            export.DisabledSafetyCheck.platform() == export.DisabledSafetyCheck.platform())
    """,
    "disabled_checks_kept": """
      dc = (export.DisabledSafetyCheck.custom_call("my_target"),)
      e = export.export(jax.jit(jnp.cos), disabled_checks=dc)(jnp.ones(2))
      print(e.disabled_safety_checks, e.call(jnp.zeros(2)))
    """,
    "static_args": """
      g = jax.jit(lambda x, n, *, k: x * n + k, static_argnums=1, static_argnames="k")
      e = export.export(g)(jnp.ones(3), 3, k=2)
      print(e.in_tree, e.in_avals, e.out_avals, e.module_kept_var_idx)
      print(e.call(jnp.arange(3.)))
    """,
    "weak_scalar_args": """
      e = export.export(jax.jit(lambda x, y: x * y))(1.0, np.float32(2))
      print(e.in_avals, e.out_avals, e.call(3.0, np.float32(2)))
    """,
    "callbacks_not_exported": """
      f = jax.jit(lambda x: jax.pure_callback(lambda v: v, jax.ShapeDtypeStruct((3,), np.float32), x))
      try:
        export.export(f)(np.ones(3, np.float32))
      except Exception as ex:
        print(type(ex).__name__, ex)
      def h(x):
        jax.debug.print("{}", x)
        return x
      export.export(jax.jit(h))(np.ones(3, np.float32))
    """,
    "calling_convention_version": """
      try:
        jax.config.update("jax_export_calling_convention_version", 9)
        print(export.export(jax.jit(jnp.sin))(jnp.ones(2)).calling_convention_version)
        jax.config.update("jax_export_calling_convention_version", 8)
        export.export(jax.jit(jnp.sin))(jnp.ones(2))
      finally:
        jax.config.update("jax_export_calling_convention_version", 10)
    """,
    "symbolic_shape": """
      for spec in ["b, 4", "b, 2*b + 1", "(a, b*c, 3)", "floordiv(b, 2), mod(c, 3)",
                   "max(b, c) - 1, b - 2", "b, a", ""]:
        s = export.symbolic_shape(spec)
        print(s, [export.is_symbolic_dim(d) for d in s])
      print(export.symbolic_shape("_, b, ...", like=(2, None, 5, 6)))
      a, = export.symbolic_shape("a")
      print(a + 1, 2 * a, a * a, a - a, (a + 1) - 1 == a, a == a, a * 0)
      for sp in ["a + b", "a - b", "b*b + a", "3*a + 2*b + 1", "c*b*a", "-a + 3",
                 "mod(a, 2) + b", "floordiv(a, 2) + a", "a^2 + b^3", "2 - a"]:
        print(export.symbolic_shape(sp))
      a, b = export.symbolic_shape("a, b")
      for f in [lambda: a == 1, lambda: a != 1, lambda: a >= 1, lambda: a > 1, lambda: a < 1,
                lambda: 2 * a >= a, lambda: a >= b, lambda: a + b > 1, lambda: a <= 0,
                lambda: a == b, lambda: int(a)]:
        try:
          print(f())
        except Exception as ex:
          print(type(ex).__name__, ex)
      spec = export.symbolic_args_specs((jnp.ones((3, 4)), [jnp.ones(2, jnp.int32)]), "b, ...")
      print(spec)
      export.symbolic_shape("b +")
    """,
}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_like_jax(name):
  assert_prints_like_jax(SNIPPETS[name],
                         jax_scope={"export": jexport}, arrax_scope={"export": aexport})


SER_SNIPPETS = {
    "no_vjp_after_deserialize": """
      e = export.deserialize(export.export(jax.jit(jnp.sin))(jnp.ones(3)).serialize())
      print(e.has_vjp())
      jax.grad(lambda x: e.call(x).sum())(jnp.ones(3))
    """,
    "garbage": """
      for blob in [b"garbage!", b"", bytes(64), b"\\x04\\x00\\x00\\x00" + b"\\xff" * 40]:
        try:
          export.deserialize(blob)
        except Exception as ex:
          print(type(ex).__name__)
    """,
    "no_vjp_to_serialize": """
      e = export.deserialize(export.export(jax.jit(jnp.sin))(jnp.ones(3)).serialize())
      e.serialize(vjp_order=1)
    """,
}


@pytest.mark.parametrize("name", sorted(SER_SNIPPETS))
def test_serialization_like_jax(name, jax_ser):
  assert_prints_like_jax(SER_SNIPPETS[name],
                         jax_scope={"export": jexport}, arrax_scope={"export": aexport})


# ---- symbolic shapes --------------------------------------------------------------------------
def _poly_export():
  b, = jexport.symbolic_shape("b")
  return jexport.export(jax.jit(lambda x, y: (jnp.tanh(x) @ y, x.sum(0))))(
      jax.ShapeDtypeStruct((b, 4), jnp.float32), jax.ShapeDtypeStruct((4, 2), jnp.float32))


def test_call_jax_symbolic_export(jax_ser):
  j = _poly_export()
  a = aexport.deserialize(j.serialize(vjp_order=1))
  assert _attrs(a) == _attrs(jexport.deserialize(j.serialize(vjp_order=1)))
  y = rand((4, 2), F32, 1)
  for n in (1, 3, 7):
    x = rand((n, 4), F32)
    want = j.call(x, y)
    assert_same(a.call(x, y), want, tol=1e-6)
    assert_same(arrax.jit(a.call)(x, y), want, tol=1e-6)
    assert_same(arrax.grad(lambda x: a.call(x, y)[0].sum())(x),
                jax.grad(lambda x: j.call(x, y)[0].sum())(x), tol=1e-6)


def test_symbolic_shape_errors_like_jax(jax_ser):
  j = _poly_export()
  a = aexport.deserialize(j.serialize())
  b, = jexport.symbolic_shape("b")
  j2 = jexport.export(jax.jit(lambda x, y: x + y))(jax.ShapeDtypeStruct((b,), jnp.float32),
                                                   jax.ShapeDtypeStruct((b,), jnp.float32))
  a2 = aexport.deserialize(j2.serialize())
  for je, ae, args in ((j, a, (np.ones((0, 4), F32), np.ones((4, 2), F32))),
                       (j, a, (np.ones((3, 5), F32), np.ones((4, 2), F32))),
                       (j2, a2, (np.ones(3, F32), np.ones(4, F32)))):
    with pytest.raises(ValueError) as want:
      je.call(*args)
    with pytest.raises(ValueError) as got:
      ae.call(*args)
    assert str(got.value) == str(want.value)


def test_call_multi_platform_export(jax_ser):
  j = jexport.export(jax.jit(jnp.cos), platforms=("cpu", "cuda"))(jnp.ones(3))
  a = aexport.deserialize(j.serialize())
  assert a.platforms == ("cpu", "cuda") and a.uses_global_constants
  x = rand((3,), F32)
  assert_same(a.call(x), j.call(x))


def test_platform_not_exported_for(jax_ser):
  j = jexport.export(jax.jit(jnp.cos), platforms=("cuda",))(jnp.ones(3))
  a = aexport.deserialize(j.serialize())
  with pytest.raises(ValueError) as want:
    j.call(np.ones(3, F32))
  with pytest.raises(ValueError) as got:
    a.call(np.ones(3, F32))
  assert str(got.value) == str(want.value)
  jd = jexport.export(jax.jit(jnp.cos), platforms=("cuda",),
                      disabled_checks=[jexport.DisabledSafetyCheck.platform()])(jnp.ones(3))
  ad = aexport.deserialize(jd.serialize())
  assert_same(ad.call(np.ones(3, F32)), jd.call(np.ones(3, F32)))


POLY_CASES = {
    "elementwise": lambda np_: lambda x: np_.sin(x) * 2 + 1,
    "matmul": lambda np_: lambda x: np_.tanh(x @ np_.asarray(W_POLY)) + 1.0,
    "reductions": lambda np_: lambda x: (x.sum(0), x.sum(1), x.max()),
    "two_args": lambda np_: lambda x, y: (x * y, np_.maximum(x, 0.0)),
    "mean_var": lambda np_: lambda x: (x.mean(0), x.mean(), x.var(1), x.sum() / x.shape[0]),
    "layernorm": lambda np_: lambda x: ((x - x.mean(1, keepdims=True))
                                        / np_.sqrt(x.var(1, keepdims=True) + 1e-5)),
    "reshape": lambda np_: lambda x: (x.reshape(-1), x.reshape(-1, 1, 3), x.T.reshape(3, -1)),
    "where_concat": lambda np_: lambda x: np_.concatenate([np_.where(x > 0, x, 0.0), x], 0),
    "slice_index": lambda np_: lambda x: (x[1:], x[:-1] * x[1:], x[:, 0], x[0], x[..., 1:]),
    # not yet in arrax: strided slices of a symbolic axis, and bounds that may exceed it
    "strided_slice": lambda np_: lambda x: x[::2],
    "bounded_slice": lambda np_: lambda x: x[:2],
}
_POLY_MISSING = {"strided_slice", "bounded_slice"}
W_POLY = rand((3, 4), F32, 9)


def _poly_specs(lib, case):
  b, = lib.symbolic_shape("b")
  n = 2 if case == "two_args" else 1
  top = jax if lib is jexport else arrax
  return [top.ShapeDtypeStruct((b, 3), np.float32)] * n


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=pytest.mark.xfail(
        strict=True, raises=(NotImplementedError, shape_poly.InconclusiveDimensionOperation),
        reason="arrax slices symbolic axes with step 1 and provable bounds only"))
    if c in _POLY_MISSING else c
    for c in sorted(POLY_CASES)])
def test_export_with_symbolic_shapes(case, jax_ser):
  a = aexport.export(arrax.jit(POLY_CASES[case](anp)))(*_poly_specs(aexport, case))
  j = jexport.export(jax.jit(POLY_CASES[case](jnp)))(*_poly_specs(jexport, case))
  assert _attrs(a) == _attrs(j)
  assert _main_signature(a.mlir_module()) == _main_signature(j.mlir_module())
  from_arrax = jexport.deserialize(a.serialize(vjp_order=1))
  back = aexport.deserialize(a.serialize(vjp_order=1))
  for n in (1, 4):
    args = [rand((n, 3), F32, k) for k in range(len(_poly_specs(aexport, case)))]
    want = j.call(*args)
    assert_same(a.call(*args), want, tol=1e-6)
    assert_same(back.call(*args), want, tol=1e-6)
    assert_same(arrax.jit(a.call)(*args), want, tol=1e-6)
    got = from_arrax.call(*args)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
      np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)

    def loss(top, e):
      return lambda *xs: sum(top.numpy.sum(o) for o in top.tree_util.tree_leaves(e.call(*xs)))

    want_g = jax.grad(loss(jax, j))(*args)
    assert_same(arrax.grad(loss(arrax, back))(*args), want_g, tol=1e-5)
    np.testing.assert_allclose(np.asarray(jax.grad(loss(jax, from_arrax))(*args)),
                               np.asarray(want_g), rtol=1e-5)


# ---- the module -----------------------------------------------------------------------------
def test_public_names_and_signatures():
  names = {n for n in dir(jexport) if not n.startswith("_")}
  assert {n for n in dir(aexport) if not n.startswith("_")} == names
  for n in sorted(names):
    jobj, aobj = getattr(jexport, n), getattr(aexport, n)
    if callable(jobj):
      jsig, asig = inspect.signature(jobj), inspect.signature(aobj)
      assert [(p.name, p.kind, p.default) for p in asig.parameters.values()] == \
          [(p.name, p.kind, p.default) for p in jsig.parameters.values()], n
    else:
      assert aobj == jobj, n
  for m in ("mlir_module", "serialize", "call", "vjp", "has_vjp", "in_shardings_jax",
            "out_shardings_jax"):
    jsig = inspect.signature(getattr(jexport.Exported, m))
    asig = inspect.signature(getattr(aexport.Exported, m))
    assert [(p.name, p.kind, p.default) for p in asig.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in jsig.parameters.values()], m
  assert arrax.export is aexport


def test_lapack_kernels_exported():
  from arrax import lax as alax
  x = rand((3, 3), F32)
  spd = x @ x.T + 3 * np.eye(3, dtype=F32)
  # LAPACK kernels are stable custom calls: exported and called
  e = aexport.export(arrax.jit(alax.linalg.cholesky))(spd)
  assert_same(e.call(spd), jax.lax.linalg.cholesky(spd), tol=1e-5)


def test_unstable_custom_call_rejected():
  # A module with a custom call JAX does not promise to keep stable is not exported unless
  # the check is disabled for its target (JAX's message).
  from jaxlib.mlir import ir

  from arrax._src import mlir
  from arrax._src.export import _export
  text = """
  func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.custom_call @my_kernel(%arg0) : (tensor<3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  }"""
  with mlir.make_ir_context():
    module = ir.Module.parse(text)
    with pytest.raises(ValueError, match="Cannot serialize code with custom calls whose "
                       "targets have no compatibility guarantees(.|\n)*my_kernel"):
      _export._check_module(module, ())
    _export._check_module(module, (aexport.DisabledSafetyCheck.custom_call("my_kernel"),))


@pytest.mark.parametrize("platforms", [("cpu", "cuda"), ("tpu",), ("cuda", "cpu", "tpu")])
def test_export_for_platforms(platforms, jax_ser):
  x = rand((3,), F32)
  a = aexport.export(arrax.jit(lambda x: anp.cos(x) * 2), platforms=platforms)(x)
  j = jexport.export(jax.jit(lambda x: jnp.cos(x) * 2), platforms=platforms)(x)
  assert _attrs(a) == _attrs(j)
  assert _main_signature(a.mlir_module()) == _main_signature(j.mlir_module())
  from_arrax = jexport.deserialize(a.serialize())
  if "cpu" in platforms:
    assert_same(a.call(x), j.call(x))
    assert_same(aexport.deserialize(a.serialize()).call(x), j.call(x))
    _jax_same(from_arrax.call(x), j.call(x))
    _jax_same(jax.jit(from_arrax.call)(x), j.call(x))
  else:
    with pytest.raises(ValueError) as want:
      j.call(x)
    for e in (a, aexport.deserialize(a.serialize())):
      with pytest.raises(ValueError) as got:
        e.call(x)
      assert str(got.value) == str(want.value)


def test_cpu_kernels_not_exported_for_other_platforms():
  # arrax lowers linear algebra to CPU LAPACK kernels only (JAX lowers it per platform)
  with pytest.raises(NotImplementedError, match="lapack_spotrf_ffi"):
    aexport.export(arrax.jit(arrax.lax.linalg.cholesky), platforms=("cpu", "tpu"))(
        np.eye(2, dtype=F32))


def test_jax_export_with_lapack_kernel(jax_ser):
  x = rand((3, 3), F32)
  spd = x @ x.T + 3 * np.eye(3, dtype=F32)
  j = jexport.export(jax.jit(jax.lax.linalg.cholesky))(spd)
  a = aexport.deserialize(j.serialize())
  assert_same(a.call(spd), j.call(spd), tol=1e-5)


def test_jax_export_with_shardings(jax_ser):
  from jax.sharding import NamedSharding, PartitionSpec as P
  mesh = jax.make_mesh((1,), ("a",))
  j = jexport.export(jax.jit(lambda x: x * 2, in_shardings=NamedSharding(mesh, P("a")),
                             out_shardings=NamedSharding(mesh, P())))(np.ones(4, F32))
  a = aexport.deserialize(j.serialize())
  assert repr(a._in_named_shardings) == repr(j._in_named_shardings)
  assert repr(a._out_named_shardings) == repr(j._out_named_shardings)
  x = rand((4,), F32)
  assert_same(a.call(x), j.call(x))
  amesh = arrax.make_mesh((1,), ("a",))
  assert repr(a.in_shardings_jax(amesh)) == repr(j.in_shardings_jax(mesh))
  back = jexport.deserialize(a.serialize())   # re-serialized by arrax, read by JAX
  assert back._in_named_shardings == j._in_named_shardings
  assert back._out_named_shardings == j._out_named_shardings
  _jax_same(back.call(x), j.call(x))


def test_x64_round_trip(x64, jax_ser):
  def f(np_):
    return lambda x, i: (x * 2, i + 1, x.astype(np_.complex128))

  args = (rand((3,), np.float64), np.int64(3))
  a = aexport.export(arrax.jit(f(anp)))(*args)
  j = jexport.export(jax.jit(f(jnp)))(*args)
  assert _attrs(a) == _attrs(j)
  want = j.call(*args)
  assert_same(aexport.deserialize(j.serialize()).call(*args), want)
  _jax_same(jexport.deserialize(a.serialize()).call(*args), want)


def test_symbolic_export_shape_errors_like_jax(jax_ser):
  def make(top, lib):
    c, = lib.symbolic_shape("c")
    return lib.export(top.jit(lambda x, y: x.sum() + y.sum()))(
        top.ShapeDtypeStruct((c, 2), np.float32), top.ShapeDtypeStruct((2 * c,), np.float32))

  a, j = make(arrax, aexport), make(jax, jexport)
  assert _attrs(a) == _attrs(j)
  assert "shape_assertion" in a.mlir_module()
  assert_same(a.call(np.ones((3, 2), F32), np.ones(6, F32)),
              j.call(np.ones((3, 2), F32), np.ones(6, F32)))
  for args in ((np.ones((3, 2), F32), np.ones(5, F32)), (np.ones((0, 2), F32), np.ones(0, F32))):
    with pytest.raises(ValueError) as want:
      j.call(*args)
    for e in (a, aexport.deserialize(a.serialize())):
      with pytest.raises(ValueError) as got:
        e.call(*args)
      assert str(got.value) == str(want.value)
    with pytest.raises(ValueError) as got:
      jexport.deserialize(a.serialize()).call(*args)
    assert str(got.value) == str(want.value)
