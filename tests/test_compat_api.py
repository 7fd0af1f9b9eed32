"""The names JAX libraries import (jax.typing, jax.core, jax.extend, jax.interpreters,
jax.flatten_util, typed key dtypes, checkify, layout, versions, ...), compared with JAX 0.10.2."""
import contextlib
import functools

import jax
import jax.extend
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify as jcheckify
from jax.experimental import layout as jlayout
from jax.interpreters import ad as jad, batching as jbatching, mlir as jmlir

import arrax
import arrax.numpy as anp
from arrax.experimental import checkify as acheckify
from arrax.experimental import layout as alayout
from arrax.interpreters import ad as aad, batching as abatching, mlir as amlir

from tests.oracle import assert_same

assert_tree_same = functools.partial(assert_same, strict_tree=True)

LIBS = {"arrax": (arrax, anp, aad, abatching, amlir), "jax": (jax, jnp, jad, jbatching, jmlir)}


# ---- versions, typing, Device ------------------------------------------------------------------
def test_versions():
  assert arrax.__version__ == jax.__version__ == "0.10.2"
  assert arrax.__version_info__ == jax.__version_info__ == (0, 10, 2)
  assert arrax.version.__version__ == jax.version.__version__
  assert arrax.version._version == jax.version._version
  assert arrax.version._minimum_jaxlib_version == jax.version._minimum_jaxlib_version
  assert arrax.version._minimum_jaxlib_version_info == jax.version._minimum_jaxlib_version_info
  assert isinstance(arrax.__arrax_version__, str) and arrax.__arrax_version__ != "0.10.2"


VALUES = [np.float32(1), 1, 2.5, True, 1j, np.zeros(3), [1, 2], (1,), "abc", None, np.int8,
          object()]


@pytest.mark.parametrize("i", range(len(VALUES)))
def test_arraylike(i):
  v = VALUES[i]
  assert isinstance(v, arrax.typing.ArrayLike) == isinstance(v, jax.typing.ArrayLike)
  assert isinstance(anp.ones(2), arrax.typing.ArrayLike)
  assert not isinstance(jnp.ones(2), arrax.typing.ArrayLike)


def test_dtypelike():
  import typing
  names = lambda t: [getattr(a, "__name__", str(a)) for a in typing.get_args(t)]
  assert names(arrax.typing.DTypeLike) == names(jax.typing.DTypeLike)
  assert names(arrax.typing.ArrayLike)[1:] == names(jax.typing.ArrayLike)[1:]
  from arrax._src.typing import SupportsDType
  assert isinstance(anp.float32, SupportsDType) and isinstance(anp.ones(1), SupportsDType)


def test_arraylike_inside_jit():
  arrax.jit(lambda x: isinstance(x, arrax.typing.ArrayLike) or 1 / 0)(1.0)


def test_device():
  assert arrax.Device is jax.Device
  assert isinstance(arrax.devices()[0], arrax.Device)
  assert dir(jax.lib) == dir(arrax.lib) or not [n for n in dir(arrax.lib) if n[0] != "_"]


# ---- jax.core / jax.extend.core -----------------------------------------------------------------
def test_core_classes():
  assert issubclass(arrax.core.ShapedArray, arrax.core.AbstractValue)
  assert isinstance(arrax.core.ShapedArray((2,), np.float32), arrax.core.AbstractValue)
  assert isinstance(arrax.typeof(anp.ones(2)), arrax.core.AbstractValue)
  assert arrax.core.max_dim(3, 4) == jax.core.max_dim(3, 4) == 4
  assert arrax.core.min_dim(3, 4) == jax.core.min_dim(3, 4) == 3

  seen = {}

  def f(x):
    seen["tracer"] = isinstance(x, arrax.core.Tracer)
    return x
  arrax.jit(f)(1.0)
  assert seen["tracer"]


@pytest.mark.parametrize("lib", ["arrax", "jax"])
def test_eval_jaxpr(lib):
  top, np_, *_ = LIBS[lib]
  c = np_.arange(3.0)
  closed = top.make_jaxpr(lambda x, y: np_.sin(x) * y + c)(np_.ones(3), 2.0)
  out = top.core.eval_jaxpr(closed.jaxpr, closed.consts, np_.full(3, 0.5), 3.0)
  assert np.allclose(np.asarray(out[0]), np.sin(0.5) * 3 + np.arange(3.0))


def test_eval_jaxpr_same_values():
  def run(top, np_):
    closed = top.make_jaxpr(lambda x: np_.cumsum(x * 2) - 1)(np_.arange(4.0))
    return top.core.eval_jaxpr(closed.jaxpr, closed.consts, np_.arange(4.0))[0]
  assert_same(run(arrax, anp), run(jax, jnp))


@pytest.mark.parametrize("lib", ["arrax", "jax"])
def test_ensure_compile_time_eval(lib):
  top, np_, *_ = LIBS[lib]

  @top.jit
  def f(x):
    with top.core.ensure_compile_time_eval():
      n = np_.sum(np_.arange(4))
      k = int(n)             # concrete although we are tracing
    return x * k
  assert float(f(2.0)) == 12.0


def test_mapped_unmapped_aval():
  for lib in (arrax, jax):
    a = lib.core.ShapedArray((3, 4), np.float32)
    assert lib.extend.core.mapped_aval(4, 1, a).shape == (3,)
    assert lib.extend.core.unmapped_aval(5, 0, a).shape == (5, 3, 4)
    assert lib.extend.core.mapped_aval(4, None, a) == a
    assert lib.extend.core.unmapped_aval(5, None, a) == a


@pytest.mark.parametrize("lib", ["arrax", "jax"])
def test_opaque_trace_state(lib):
  top = LIBS[lib][0]
  outer = top.extend.core.get_opaque_trace_state(convention="flax")
  seen = []

  def f(x):
    seen.append(top.extend.core.get_opaque_trace_state(convention="flax"))
    seen.append(top.extend.core.get_opaque_trace_state(convention="flax"))
    return x
  top.jit(f)(1.0)
  assert seen[0] == seen[1]
  assert not (seen[0] == outer)
  assert outer == top.extend.core.get_opaque_trace_state(convention="flax")


def test_find_top_trace_and_primal_dtype():
  for lib in (arrax, jax):
    inside = []
    lib.jit(lambda x: inside.append(lib.extend.core.find_top_trace((x,))) or x)(1.0)
    assert inside[0] is not lib.extend.core.find_top_trace(())
  for dt in [np.float32, np.int32, np.bool_, np.complex64]:
    a = arrax.extend.core.primal_dtype_to_tangent_dtype(np.dtype(dt))
    j = jax.extend.core.primal_dtype_to_tangent_dtype(np.dtype(dt))
    assert str(a) == str(j)


def test_jaxpr_classes():
  closed = arrax.make_jaxpr(lambda x: arrax.jit(lambda y: y + 1)(x) * 2)(1.0)
  assert isinstance(closed, arrax.extend.core.ClosedJaxpr)
  assert isinstance(closed.jaxpr, arrax.extend.core.Jaxpr)
  eqn = closed.jaxpr.eqns[0]
  assert isinstance(eqn, arrax.extend.core.JaxprEqn)
  assert isinstance(eqn.primitive, arrax.extend.core.Primitive)
  assert len(arrax.extend.core.jaxprs_in_params(eqn.params)) == 1
  assert len(list(arrax.extend.core.subjaxprs(closed.jaxpr))) == 1
  arrax.extend.core.check_jaxpr(closed.jaxpr)
  assert float(arrax.extend.core.jaxpr_as_fun(closed)(2.0)[0]) == 6.0


# ---- a primitive defined by a library through jax.interpreters ----------------------------------
def _define(lib):
  top, np_, ad, batching, mlir = LIBS[lib]
  p = top.extend.core.Primitive(f"lib_cube_{lib}")

  def impl(x):
    return x * x * x
  p.def_impl(impl)
  p.def_abstract_eval(lambda x: top.core.ShapedArray(x.shape, x.dtype))
  ad.primitive_jvps[p] = lambda primals, tangents: (
      p.bind(primals[0]), 3 * primals[0] ** 2 * ad.instantiate_zeros(tangents[0]))

  def batch(args, dims):
    return p.bind(args[0]), dims[0]
  batching.primitive_batchers[p] = batch
  mlir.register_lowering(p, mlir.lower_fun(impl, multiple_results=False))

  # A multiple-results primitive with an old-style axis batcher and a transpose (equinox).
  q = top.extend.core.Primitive(f"lib_scale2_{lib}")
  q.multiple_results = True
  q.def_impl(lambda x, y: [2 * x, 2 * y])
  q.def_abstract_eval(lambda x, y: [top.core.ShapedArray(x.shape, x.dtype),
                                    top.core.ShapedArray(y.shape, y.dtype)])
  ad.primitive_jvps[q] = lambda primals, tangents: (
      q.bind(*primals), q.bind(*map(ad.instantiate_zeros, tangents)))

  def transpose(cts, x, y):
    assert ad.is_undefined_primal(x) and ad.is_undefined_primal(y)
    return [2 * ad.instantiate_zeros(c) for c in cts]
  ad.primitive_transposes[q] = transpose

  def axis_batch(axis_size, axis_name, trace_type, args, dims):
    x, y = (np_.moveaxis(a, d, 0) if d is not None else np_.broadcast_to(a, (axis_size,) + a.shape)
            for a, d in zip(args, dims))
    return q.bind(x, y), (0, 0)
  batching.axis_primitive_batchers[q] = axis_batch
  mlir.register_lowering(q, mlir.lower_fun(lambda x, y: [2 * x, 2 * y], multiple_results=True))
  return p, q


PRIMS = {lib: _define(lib) for lib in LIBS}


@pytest.mark.parametrize("how", ["eager", "jit", "grad", "vmap", "jit_vmap_grad", "jvp"])
def test_library_primitive(how):
  def run(lib):
    top, np_ = LIBS[lib][:2]
    p, _ = PRIMS[lib]
    f = lambda x: p.bind(x)
    x = np_.arange(1.0, 4.0)
    if how == "eager":
      return f(x)
    if how == "jit":
      return top.jit(f)(x)
    if how == "grad":
      return top.grad(lambda v: f(v).sum())(x)
    if how == "vmap":
      return top.vmap(f)(np_.stack([x, -x], 1))
    if how == "jvp":
      return top.jvp(f, (x,), (np_.ones(3),))
    return top.jit(top.vmap(top.grad(lambda v: f(v).sum())))(np_.stack([x, 2 * x]))
  assert_tree_same(run("arrax"), run("jax"))


@pytest.mark.parametrize("how", ["eager", "jit", "grad", "vmap", "vmap_one"])
def test_library_multiple_results_primitive(how):
  def run(lib):
    top, np_ = LIBS[lib][:2]
    _, q = PRIMS[lib]
    x, y = np_.arange(3.0), np_.ones((2, 3))
    if how == "eager":
      return q.bind(x, y)
    if how == "jit":
      return top.jit(lambda a, b: q.bind(a, b))(x, y)
    if how == "grad":
      return top.grad(lambda a, b: sum(o.sum() for o in q.bind(a, b)), (0, 1))(x, y)
    if how == "vmap":
      return top.vmap(lambda a, b: q.bind(a, b))(np_.stack([x, x]), np_.stack([y, y]))
    return top.vmap(lambda a, b: q.bind(a, b), in_axes=(0, None))(np_.stack([x, x]), y)
  assert_tree_same(run("arrax"), run("jax"))


def test_rule_tables_read_back():
  p, q = PRIMS["arrax"]
  assert p in aad.primitive_jvps and q in aad.primitive_transposes
  assert p not in aad.primitive_transposes
  assert callable(abatching.primitive_batchers[p])
  with pytest.raises(KeyError):
    aad.primitive_transposes[p]
  assert arrax.lax.sin_p in aad.primitive_jvps     # arrax's own rules are visible too


# ---- jax.flatten_util.ravel_pytree ------------------------------------------------------------------
TREES = [
    lambda np_: {"a": np_.arange(3.0), "b": (np_.ones((2, 2)), 2.0)},
    lambda np_: [np_.arange(3, dtype=np.int32), np_.ones(2, np.float32)],
    lambda np_: {"x": np_.ones((2,), np.float16), "y": np_.zeros((1, 2), np_.bfloat16)},
    lambda np_: [np_.ones(2, np.int8), np_.ones(3, np.uint8)],
    lambda np_: [],
    lambda np_: {"s": np_.float32(3), "c": np_.ones(2, np.complex64)},
    lambda np_: [np_.ones((0, 3)), np_.ones((2,))],
]


@pytest.mark.parametrize("i", range(len(TREES)))
def test_ravel_pytree(i):
  aflat, aun = arrax.flatten_util.ravel_pytree(TREES[i](anp))
  jflat, jun = jax.flatten_util.ravel_pytree(TREES[i](jnp))
  assert_same(aflat, jflat)
  assert_tree_same(aun(aflat * 2 if aflat.size else aflat), jun(jflat * 2 if jflat.size else jflat))


def test_ravel_pytree_under_jit_and_grad():
  def run(lib, np_):
    tree = {"w": np_.arange(4.0).reshape(2, 2), "b": np_.ones(2)}
    flat, unravel = lib.flatten_util.ravel_pytree(tree)
    f = lib.jit(lambda v: sum(l.sum() ** 2 for l in lib.tree_util.tree_leaves(unravel(v))))
    return lib.grad(f)(flat), lib.jit(lambda t: lib.flatten_util.ravel_pytree(t)[0])(tree)
  assert_tree_same(run(arrax, anp), run(jax, jnp))


def test_unravel_dtype_mismatch():
  _, aun = arrax.flatten_util.ravel_pytree([anp.ones(2, np.int32), anp.ones(2, np.float32)])
  _, jun = jax.flatten_util.ravel_pytree([jnp.ones(2, np.int32), jnp.ones(2, np.float32)])
  with pytest.raises(TypeError) as je:
    jun(jnp.ones(4, np.int32))
  with pytest.raises(TypeError) as ae:
    aun(anp.ones(4, np.int32))
  assert str(ae.value) == str(je.value)
  _, aun1 = arrax.flatten_util.ravel_pytree([anp.ones(2), anp.ones(2)])
  _, aun2 = arrax.flatten_util.ravel_pytree([anp.ones(2), anp.ones(2)])
  assert aun1 == aun2 and hash(aun1) == hash(aun2)


# ---- typed key dtypes, dtype predicates ---------------------------------------------------------------
def test_key_dtype_predicates():
  ak, jk = arrax.random.key(0), jax.random.key(0)
  for b in ["prng_key", "extended"]:
    assert anp.issubdtype(ak.dtype, getattr(arrax.dtypes, b))
    assert jnp.issubdtype(jk.dtype, getattr(jax.dtypes, b))
  for b in [np.floating, np.generic, np.integer, np.uint32]:
    assert anp.issubdtype(ak.dtype, b) == jnp.issubdtype(jk.dtype, b)
  for dt in [np.float32, np.int32, np.bool_, anp.bfloat16]:
    for b in ["prng_key", "extended"]:
      assert anp.issubdtype(dt, getattr(arrax.dtypes, b)) == \
          jnp.issubdtype(dt, getattr(jax.dtypes, b))
  assert anp.issubdtype(ak.dtype, ak.dtype) and jnp.issubdtype(jk.dtype, jk.dtype)
  assert not anp.issubdtype(ak.dtype, np.float32) and not jnp.issubdtype(jk.dtype, np.float32)
  assert issubclass(arrax.dtypes.prng_key, arrax.dtypes.extended)
  assert issubclass(arrax.dtypes.extended, np.generic)
  from arrax._src import dtypes as adt
  from jax._src import dtypes as jdt
  assert isinstance(ak.dtype, adt.ExtendedDType) and isinstance(jk.dtype, jdt.ExtendedDType)
  assert ak.dtype.type is arrax.dtypes.prng_key
  assert issubclass(arrax.dtypes.TypePromotionError, ValueError)
  assert arrax.dtypes.extended.__name__ == jax.dtypes.extended.__name__


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2",
                                "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz",
                                "int32", "bool", "complex64"])
def test_supports_inf(dt):
  from arrax._src import dtypes as adt
  from jax._src import dtypes as jdt
  d = getattr(jnp, dt) if dt != "bool" else np.bool_
  assert adt.supports_inf(d) == jdt.supports_inf(d)


def test_extended_dtype_subclass():
  # flax.linen.fp8_ops derives its own extended dtype from the _src classes.
  from arrax._src import dtypes as adt

  class meta(adt.extended):
    pass

  class wrapper(adt.ExtendedDType):
    type = meta
  assert anp.issubdtype(wrapper(), adt.extended) and anp.issubdtype(wrapper(), meta)
  assert not anp.issubdtype(wrapper(), arrax.dtypes.prng_key)
  with pytest.raises(TypeError):
    adt.ExtendedDType()


OBJS = [anp.float32, anp.complex64, anp.int32, anp.bool_, anp.bfloat16, np.float32, np.complex128,
        np.dtype("complex64"), 1, 1.5, 1j, np.complex64(1), "a", None, [1, 2], [1j]]


@pytest.mark.parametrize("i", range(len(OBJS)))
def test_iscomplexobj_isrealobj(i):
  a = OBJS[i]
  j = getattr(jnp, a.__name__) if isinstance(a, type) and a.__module__.startswith("arrax") else a
  for name in ["iscomplexobj", "isrealobj"]:
    try:
      expected = getattr(jnp, name)(j)
    except Exception as e:   # noqa: BLE001
      with pytest.raises(type(e)):
        getattr(anp, name)(a)
    else:
      assert getattr(anp, name)(a) == expected


def test_iscomplexobj_arrays():
  for x in [anp.ones(2), anp.ones(2, np.complex64), anp.float32(1), anp.zeros((0,), np.complex64)]:
    assert anp.iscomplexobj(x) == jnp.iscomplexobj(np.asarray(x))
  assert arrax.jit(lambda x: anp.ones(2) * anp.iscomplexobj(x))(anp.ones(2, np.complex64))[0] == 1


# ---- checkify ---------------------------------------------------------------------------------------
def _checked(mod, np_):
  def f(x):
    mod.check(x > 0, "x must be positive, got {x}", x=x)
    return x * 2
  return f


@pytest.mark.parametrize("v", [-1.0, 1.0, 0.0])
def test_checkify(v):
  aerr, aout = acheckify.checkify(_checked(acheckify, anp))(anp.float32(v))
  jerr, jout = jcheckify.checkify(_checked(jcheckify, jnp))(jnp.float32(v))
  assert aerr.get() == jerr.get()
  assert_same(aout, jout)
  assert type(aerr.get_exception()).__name__ == type(jerr.get_exception()).__name__ or \
      aerr.get_exception() is None is jerr.get_exception()
  for mod, err in [(acheckify, aerr), (jcheckify, jerr)]:
    ctx = pytest.raises(mod.JaxRuntimeError) if v <= 0 else contextlib.nullcontext()
    with ctx:
      mod.check_error(err)


def test_check_outside_checkify_and_traced():
  for mod, np_ in [(acheckify, anp), (jcheckify, jnp)]:
    with pytest.raises(mod.JaxRuntimeError, match=r"boom 3 \(`check` failed\)"):
      mod.check(np_.array(False), "boom {}", np_.array(3))
    mod.check(np_.array(True), "fine")
    with pytest.raises(TypeError, match="check takes a scalar pred as argument"):
      mod.check(np_.array([True, True]), "fine")
    with pytest.raises(TypeError, match="Formatting arguments"):
      mod.check(np_.array(False), "bad {}", 3.0)
  lib_pairs = [(arrax, acheckify), (jax, jcheckify)]
  for lib, mod in lib_pairs:
    with pytest.raises(ValueError, match="Cannot abstractly evaluate a checkify.check"):
      lib.jit(lambda x: mod.check(x > 0, "no"))(1.0)
  for name in ["user_checks", "nan_checks", "index_checks", "div_checks", "float_checks",
               "automatic_checks", "all_checks"]:
    assert len(getattr(acheckify, name)) == len(getattr(jcheckify, name))


# ---- layout, linear_util, source_info_util, compiler ---------------------------------------------------
def test_layout_format():
  for mod in (alayout, jlayout):
    lay = mod.Layout((1, 0))
    assert lay == mod.Layout([1, 0]) and hash(lay) == hash(mod.Layout((1, 0)))
    assert repr(lay) == repr(jlayout.Layout((1, 0)))
    assert lay.update(major_to_minor=(0, 1)).major_to_minor == (0, 1)
    assert repr(mod.Format()) == "Format(layout=None, sharding=None)"
    assert repr(mod.Format(mod.Layout.AUTO)) == "Format(layout=AUTO, sharding=None)"
    with pytest.raises(ValueError, match="Sharding has to be concrete"):
      mod.Format(lay)
    with pytest.raises(TypeError, match="Invalid value received for the layout"):
      mod.Format("row-major")


def test_linear_util_and_partial_eval():
  from arrax.extend import linear_util as lu
  from arrax.interpreters import partial_eval as pe
  f = lu.wrap_init(lambda x, y: [x * y, x + y], debug_info=None)
  assert f.call_wrapped(2.0, 3.0) == [6.0, 5.0]
  aval = arrax.core.ShapedArray((), np.float32)
  jaxpr, out_avals, consts = pe.trace_to_jaxpr_dynamic(f, [aval, aval])
  assert out_avals == [aval, aval] and consts == []
  assert [float(v) for v in arrax.core.eval_jaxpr(jaxpr, consts, 2.0, 3.0)] == [6.0, 5.0]
  pruned, used = pe.dce_jaxpr(jaxpr, [True, False])
  assert len(pruned.outvars) == 1 and used == [True, True] and len(pruned.eqns) == 1
  _, out_pvals, _ = pe.trace_to_jaxpr_nounits(f, [pe.PartialVal.unknown(aval)] * 2)
  assert [pv.get_aval() for pv in out_pvals] == [aval, aval]


def test_compiler_hook_sees_compilations():
  from arrax._src import compiler
  seen = []
  inner = compiler.backend_compile_and_load
  x = anp.ones(3)   # made (and any eager compilation done) before the spy is installed

  def spy(backend, *args, **kwargs):
    seen.append(backend.platform)
    return inner(backend, *args, **kwargs)
  compiler.backend_compile_and_load = spy
  try:
    arrax.jit(lambda x: x * 7.25 + 1)(x)
  finally:
    compiler.backend_compile_and_load = inner
  assert seen == ["cpu"]


def test_traceback_util_and_source_info():
  from arrax._src import traceback_util
  from arrax.extend import source_info_util
  wrapped = traceback_util.api_boundary(lambda x: x + 1)
  assert wrapped(1) == 2
  traceback_util.register_exclusion("/some/path")
  source_info_util.register_exclusion("/other/path")
  with source_info_util.extend_name_stack("x"):
    pass
  from arrax._src import dispatch
  assert dispatch.wait_for_tokens() is None


# ---- typeof and eval_shape of typed keys, jit with None shardings, the tree registry -----------------
def test_typeof_and_eval_shape_of_keys():
  assert str(arrax.typeof(arrax.random.key(0))) == str(jax.typeof(jax.random.key(0)))
  assert repr(arrax.typeof(arrax.random.split(arrax.random.key(0), 3))) == \
      repr(jax.typeof(jax.random.split(jax.random.key(0), 3)))
  a = arrax.eval_shape(lambda: {"k": arrax.random.key(0), "x": anp.ones(2)})
  j = jax.eval_shape(lambda: {"k": jax.random.key(0), "x": jnp.ones(2)})
  assert repr(a) == repr(j)
  assert arrax.typeof(anp.ones(2)).sharding is None


def test_jit_accepts_none_shardings():
  f = arrax.jit(lambda x: x * 2, in_shardings=None, out_shardings=(None,))
  assert_same(f(anp.ones(2)), jax.jit(lambda x: x * 2, in_shardings=None)(jnp.ones(2)))


def test_python_tree_registry():
  from arrax._src import tree_util as atu
  from jax._src import tree_util as jtu_src
  import dataclasses

  class Node:
    pass
  arrax.tree_util.register_pytree_node(Node, lambda n: ((), None), lambda a, c: Node())

  @dataclasses.dataclass
  class DC:
    a: int
  arrax.tree_util.register_dataclass(DC, data_fields=["a"], meta_fields=[])
  assert Node in atu._registry and DC in atu._registry
  for t in (tuple, list, dict, type(None)):
    assert (t in atu._registry) == (t in jtu_src._registry)
  children, aux = atu._registry[DC].to_iter(DC(3))
  assert atu._registry[DC].from_iter(aux, children) == DC(3)


def test_named_call_and_top_level_compile_time_eval():
  def f(x):
    return anp.sin(x) * 2
  g = arrax.named_call(f, name="my_f")
  assert g.__name__ == jax.named_call(f, name="my_f").__name__ == "f"
  assert_same(g(anp.float32(0.5)), jax.named_call(lambda x: jnp.sin(x) * 2)(jnp.float32(0.5)))
  assert str(arrax.make_jaxpr(g)(1.0)) == str(arrax.make_jaxpr(f)(1.0))
  assert arrax.ensure_compile_time_eval is arrax.core.ensure_compile_time_eval

  @arrax.jit
  def h(x):
    with arrax.ensure_compile_time_eval():
      c = anp.arange(3.0) * 2
      assert not isinstance(c, arrax.core.Tracer)
    return x + c
  assert_same(h(anp.ones(3)), jnp.ones(3) + jnp.arange(3.0) * 2)


def test_core_deprecated_and_removed_names():
  import warnings
  for name in ["check_jaxpr", "find_top_trace", "valid_jaxtype", "get_opaque_trace_state"]:
    with warnings.catch_warnings(record=True) as w:
      warnings.simplefilter("always")
      assert getattr(arrax.core, name) is getattr(arrax.extend.core, name)
      getattr(jax.core, name)
    assert len(w) == 2 and all(issubclass(x.category, DeprecationWarning) for x in w)
  for name in ["get_aval", "mapped_aval", "subjaxprs", "no_such_name"]:
    with pytest.raises(AttributeError):
      getattr(jax.core, name)
    with pytest.raises(AttributeError, match=name):
      getattr(arrax.core, name)
  assert not hasattr(arrax.core, "raise_to_shaped") and not hasattr(jax.core, "raise_to_shaped")


@pytest.mark.parametrize("lib", ["arrax", "jax"])
def test_api_util_flatten_and_trace(lib):
  # What flax.core.axes_scan does: flatten a pytree function, trace it, DCE, evaluate.
  top = LIBS[lib][0]
  np_ = LIBS[lib][1]
  import importlib
  lu = importlib.import_module(f"{lib}.extend.linear_util")
  pe = importlib.import_module(f"{lib}.interpreters.partial_eval")

  def body(c, xs):
    return {"sum": c + xs["a"].sum()}, [xs["a"] * 2, c]
  init, xs = np_.float32(1), {"a": np_.arange(3.0)}
  in_flat, in_tree = top.tree_util.tree_flatten((init, xs))
  dbg = top.api_util.debug_info("test scan", body, (init, xs), {})
  f_flat, out_tree = top.api_util.flatten_fun_nokwargs(lu.wrap_init(body, debug_info=dbg),
                                                       in_tree)
  avals = [top.api_util.shaped_abstractify(x) for x in in_flat]
  jaxpr, out_avals, consts = pe.trace_to_jaxpr_dynamic(f_flat, avals)
  assert [str(a) for a in out_avals] == ["float32[]", "float32[3]", "float32[]"]
  jaxpr, used = pe.dce_jaxpr(jaxpr, [True, False, False])
  assert used == [True, True]           # c and xs["a"] both feed the first output
  out = top.core.eval_jaxpr(jaxpr, consts, *[x for x, u in zip(in_flat, used) if u])
  assert float(out[0]) == 4.0
  assert str(out_tree()) == str(top.tree_util.tree_structure(({"sum": 0}, [0, 0])))
  assert dbg.traced_for == "test scan"


def _dbg_f(x, y, *, z=1):
  return x


def _dbg_g(a, *rest, **kw):
  return a


DEBUG_INFO_CASES = [
    (_dbg_f, ((1, 2), {"a": 3}), {"z": 4}, {}),
    (_dbg_f, ((1, 2), {"a": 3}), {"z": 4}, dict(static_argnums=(0,))),
    (_dbg_f, ((1, 2), {"a": 3}), {"z": 4}, dict(static_argnums=(-1,), static_argnames=("z",))),
    (_dbg_f, (1,), {"y": [5, 6], "z": 4}, {}),
    (_dbg_g, (1, 2, (3, 4)), {"q": 1, "b": {"c": 2}}, dict(static_argnums=(1,))),
    (_dbg_f, (1, 2, 3, 4), {"w": None, "v": 2.0}, dict(static_argnums=(2,))),   # no binding
    (lambda *a: a, (np.ones(2), None, (3,)), {}, {}),
]


@pytest.mark.parametrize("i", range(len(DEBUG_INFO_CASES)))
def test_api_util_debug_info_arg_names(i):
  fn, args, kwargs, kw = DEBUG_INFO_CASES[i]
  assert (arrax.api_util.debug_info("t", fn, args, kwargs, **kw).arg_names
          == jax.api_util.debug_info("t", fn, args, kwargs, **kw).arg_names)


@pytest.mark.parametrize("fn", [lambda x: x * x, lambda x: anp.sin(x) + 1,
                                lambda x: (x.sum(), x[::-1])])
def test_compiler_ir_hlo(fn):
  import re
  lowered = arrax.jit(fn).lower(anp.arange(3.0))
  text = lowered.compiler_ir("hlo").as_hlo_text()
  assert re.search(r"ENTRY .*\{", text) and "f32[3]" in text
  assert type(lowered.compiler_ir()) is type(jax.jit(lambda x: x).lower(1.0).compiler_ir())
  assert str(lowered.compiler_ir("stablehlo")) == str(lowered.compiler_ir())
  with pytest.raises(ValueError):
    lowered.compiler_ir("mhlo-but-not-really")


def test_compiler_ir_hlo_same_ops_as_jax():
  # optax's numerics tests compare the HLO ops of equivalent functions.
  import re
  def ops(lib, np_, f):
    text = lib.jit(f).lower(np_.ones(3)).compiler_ir(dialect="hlo").as_hlo_text()
    entry = re.search(r"ENTRY.*", text, re.DOTALL).group()
    return re.findall(r"= \S+ (\w+)\(", entry)
  assert ops(arrax, anp, lambda x: x * x) == ops(jax, jnp, lambda x: x * x)
  assert ops(arrax, anp, lambda x: anp.square(x)) == ops(jax, jnp, lambda x: jnp.square(x))


@pytest.mark.parametrize("lib", ["arrax", "jax"])
def test_direct_lowering_rule_and_fancy_batcher(lib):
  top, np_, ad, batching, mlir = LIBS[lib]
  from jaxlib.mlir.dialects import stablehlo as hlo
  p = top.extend.core.Primitive(f"direct_double_{lib}")
  p.def_abstract_eval(lambda x: top.core.ShapedArray(x.shape, x.dtype))

  def lower(ctx, x):
    assert [a.shape for a in ctx.avals_in] == [a.shape for a in ctx.avals_out]
    return [hlo.add(x, x)]
  mlir.register_lowering(p, lower)
  seen = []

  def fancy(axis_data, args, dims):
    seen.append(axis_data.size)
    return p.bind(*args), dims[0]
  batching.fancy_primitive_batchers[p] = fancy
  ad.deflinear2(p, lambda ct, x: [p.bind(ct)])
  p.def_impl(lambda x: x + x)     # JAX needs it for eager binds (arrax would lower instead)
  x = np_.arange(6.0).reshape(2, 3)
  out = top.jit(lambda v: p.bind(v))(x)
  assert np.array_equal(np.asarray(out), 2 * np.arange(6.0).reshape(2, 3))
  out = top.vmap(lambda v: p.bind(v))(x)
  assert np.array_equal(np.asarray(out), 2 * np.arange(6.0).reshape(2, 3)) and seen == [2]
  g = top.grad(lambda v: p.bind(v).sum())(x)
  assert np.array_equal(np.asarray(g), np.full((2, 3), 2.0))
  assert np.array_equal(np.asarray(p.bind(x)), 2 * np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("fn", ["isfinite", "isinf", "isnan", "isreal", "signbit"])
def test_constant_results_of_jnp_functions_are_arrays(fn):
  # jnp.isfinite of an integer is a constant; under jit it must still be a traced array value
  # with array methods (chex calls `.all()` on it), not a jaxpr Literal.
  def run(lib, np_):
    @lib.jit
    def f(x):
      y = getattr(np_, fn)(x)
      return lib.lax.select(y.all(), 1.0, 2.0), y
    return f(3), lib.make_jaxpr(lambda x: getattr(np_, fn)(x))(3)
  (a, aj), (j, jj) = run(arrax, anp), run(jax, jnp)
  assert_same(a, j)
  assert str(aj) == str(jj)
  assert isinstance(getattr(anp, fn)(3), arrax.Array)


def test_deprecated_experimental_pjit_like_jax():
  import warnings

  import arrax.experimental.pjit as apj
  import jax.experimental.pjit as jpj
  fns = []
  for mod in (apj, jpj):
    with warnings.catch_warnings(record=True) as w:
      warnings.simplefilter("always")
      fns.append(mod.pjit)
    assert [str(x.message) for x in w if x.category is DeprecationWarning] == [
        "jax.experimental.pjit.pjit has been deprecated. Please use `jax.jit` instead."]
  (apjit, jpjit), x = fns, np.float32([1, 2])
  assert str(arrax.make_jaxpr(lambda v: apjit(lambda y: y * 2, None, None, (), ())(v))(x)) == \
      str(jax.make_jaxpr(lambda v: jpjit(lambda y: y * 2, None, None, (), ())(v))(x))
  with pytest.raises(AttributeError):
    apj.not_there  # noqa: B018
