"""Public methods and attributes of arrax's objects that JAX 0.10.2's have: Array, Mesh,
AbstractMesh, shardings, PartitionSpec, jaxprs and their equations, key arrays,
ShapeDtypeStruct and Traced. Differential against JAX (1-device meshes)."""
import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import io_callback as j_io_callback

import jax.experimental.layout  # noqa: F401
import arrax
import arrax.experimental.layout  # noqa: F401
from arrax.experimental import io_callback as a_io_callback

from tests.oracle import check, rand, raised, same_exception

LIBS = pytest.mark.parametrize("lib", [arrax, jax], ids=["arrax", "jax"])


def both_libs(fn):
  """fn(lib) for arrax and JAX."""
  return fn(arrax), fn(jax)


# ---- Array methods -----------------------------------------------------------------------------
_X = rand((3, 4), np.float32, seed=1)
_I = rand((2, 5), np.int32, seed=2)
METHOD_CASES = {
    "argpartition": (lambda x: x.argpartition(1), _X),
    "argpartition_axis0": (lambda x: x.argpartition(0, axis=0), _X),
    "byteswap_f32": (lambda x: x.byteswap(), _X),
    "byteswap_i16": (lambda x: x.byteswap(), _I.astype(np.int16)),
    "byteswap_u8": (lambda x: x.byteswap(), _I.astype(np.uint8)),
    "byteswap_c64": (lambda x: x.byteswap(), (_X + 1j * _X[::-1]).astype(np.complex64)),
    "byteswap_twice": (lambda x: x.byteswap().byteswap(), _I),
    "choose": (lambda x: (x % 3).choose([x, x * 2, -x]), _I),
    "choose_clip": (lambda x: x.choose([x, -x], mode="clip"), _I),
    "compress": (lambda x: x.compress(np.array([True, False, True]), axis=0), _X),
    "compress_flat_size": (lambda x: x.compress(np.arange(12) % 5 == 0, size=4,
                                                fill_value=-1.), _X),
    "nonzero": (lambda x: (x > 0).nonzero(), _I),
    "nonzero_size": (lambda x: x.nonzero(size=3, fill_value=-1), _I),
    "ptp": (lambda x: x.ptp(), _X),
    "ptp_axis": (lambda x: x.ptp(axis=1, keepdims=True), _I),
    "searchsorted": (lambda x: x.searchsorted(np.array([-1., 0.5, 9.])), np.sort(_X.ravel())),
    "searchsorted_right": (lambda x: x.searchsorted(2, side="right", method="sort"),
                           np.arange(6, dtype=np.int32) // 2),
}
_JITTABLE = {"argpartition", "byteswap_f32", "byteswap_c64", "choose", "ptp_axis",
             "searchsorted", "nonzero_size"}


@pytest.mark.parametrize("name", sorted(METHOD_CASES))
def test_array_method(name):
  fn, x = METHOD_CASES[name]
  check((fn, fn), x, jit=name in _JITTABLE)


@pytest.mark.parametrize("shape,dtype", [((2, 3), np.float32), ((), np.int8), ((0,), np.float32),
                                         ((3,), jnp.bfloat16), ((5,), np.bool_),
                                         ((2, 2), np.complex64)])
def test_array_device_facts(shape, dtype):
  a, j = both_libs(lambda lib: lib.numpy.ones(shape, dtype))
  assert a.on_device_size_in_bytes() == j.on_device_size_in_bytes()
  assert a.platform() == j.platform() == "cpu"
  assert str(a.format) == str(j.format)
  assert a.format.layout.major_to_minor == j.format.layout.major_to_minor


@pytest.mark.parametrize("committed", [False, True])
def test_array_clone(committed):
  def make(lib):
    x = lib.numpy.arange(6.).reshape(2, 3)
    return lib.device_put(x, lib.devices()[0]) if committed else x
  (a, j) = both_libs(make)
  ac, jc = a.clone(), j.clone()
  np.testing.assert_array_equal(np.asarray(ac), np.asarray(jc))
  assert ac.committed == jc.committed == committed
  assert type(ac) is type(a)
  a.delete()
  assert np.asarray(ac).sum() == 15   # (a copy: lives on)


def test_array_traceback_and_deleted_format():
  a, j = both_libs(lambda lib: lib.numpy.arange(3.) * 2)
  for tb in (a.traceback, j.traceback):
    assert type(tb).__name__ == "Traceback"
    assert any(f.file_name == __file__ for f in tb.frames)
  a.delete()
  j.delete()
  assert str(a.format) == str(j.format)    # layout None once deleted
  assert a.format.layout is None


@pytest.mark.parametrize("what", ["on_device_size_in_bytes", "traceback"])
def test_tracer_device_facts_raise(what):
  def run(lib):
    def f(x):
      v = getattr(x, what)
      return v() if callable(v) else v
    return lambda: lib.jit(f)(1.)
  e = same_exception(run(arrax), raised(run(jax)))
  assert what in str(e)


# ---- Mesh and AbstractMesh ---------------------------------------------------------------------
_MESH_PROPS = ("are_all_axes_auto", "are_all_axes_explicit", "are_all_axes_manual", "auto_axes",
               "explicit_axes", "manual_axes")
_TYPES = [("Auto", "Auto"), ("Explicit", "Explicit"), ("Manual", "Manual"),
          ("Explicit", "Manual"), ("Auto", "Explicit")]


def _mesh(lib, types):
  dev = np.array(lib.devices()[:1]).reshape(1, 1)
  return lib.sharding.Mesh(dev, ("a", "b"),
                           axis_types=tuple(getattr(lib.sharding.AxisType, t) for t in types))


@pytest.mark.parametrize("types", _TYPES, ids="-".join)
def test_mesh_axis_type_queries(types):
  am, jm = both_libs(lambda lib: _mesh(lib, types))
  for m_a, m_j in ((am, jm), (am.abstract_mesh, jm.abstract_mesh)):
    for p in _MESH_PROPS:
      assert getattr(m_a, p) == getattr(m_j, p), p
  assert am.is_scalar == jm.is_scalar is False


def test_mesh_scalar_and_empty():
  a, j = both_libs(lambda lib: lib.sharding.Mesh(np.array(lib.devices()[0]), ()))
  assert a.is_scalar == j.is_scalar is True
  a, j = both_libs(lambda lib: lib.sharding.AbstractMesh((), ()))
  for p in _MESH_PROPS:
    assert getattr(a, p) == getattr(j, p), p


def test_mesh_update():
  def go(lib):
    m = _mesh(lib, ("Auto", "Auto"))
    am = m.abstract_mesh
    out = [m.update(axis_names=("x", "y")), m.update(axis_types=(lib.sharding.AxisType.Explicit,) * 2),
           am.update(axis_names=("p", "q")), am.update(axis_sizes=(1, 1)),
           am.update_axis_types({"b": lib.sharding.AxisType.Manual}),
           am.update_axis_types({})]
    return [str(x) for x in out], raised(lambda: m.update(foo=1))
  (a, ae), (j, je) = both_libs(go)
  assert a == j
  assert type(ae) is type(je) is TypeError


# ---- shardings --------------------------------------------------------------------------------
def _shardings(lib):
  m = lib.sharding.Mesh(np.array(lib.devices()[:1]), ("x",))
  NS = lib.sharding.NamedSharding
  return {"ns_x": NS(m, lib.P("x")), "ns_rep": NS(m, lib.P()), "ns_none": NS(m, lib.P(None)),
          "sds": lib.sharding.SingleDeviceSharding(lib.devices()[0]),
          "ns_host": NS(m, lib.P("x"), memory_kind="pinned_host")}


@pytest.mark.parametrize("name", ["ns_x", "ns_rep", "sds"])
@pytest.mark.parametrize("shape", [(), (4,), (3, 2)])
def test_sharding_check_compatible_aval(name, shape):
  a, j = both_libs(lambda lib: _shardings(lib)[name])
  je = raised(lambda: j.check_compatible_aval(shape))
  if je is None:
    assert a.check_compatible_aval(shape) is None
  else:
    e = same_exception(lambda: a.check_compatible_aval(shape), je, match=("rank at least",))
    assert str(e) == str(je)


@pytest.mark.parametrize("name", ["ns_x", "sds"])
@pytest.mark.parametrize("kind", ["pinned_host", "unpinned_host", "device", "foo"])
def test_sharding_with_memory_kind(name, kind):
  a, j = both_libs(lambda lib: _shardings(lib)[name])
  je = raised(lambda: j.with_memory_kind(kind))
  if je is None:
    a2, j2 = a.with_memory_kind(kind), j.with_memory_kind(kind)
    assert str(a2) == str(j2) and a2.memory_kind == j2.memory_kind == kind
  else:
    e = same_exception(lambda: a.with_memory_kind(kind), je)
    assert str(e) == str(je)


def test_sharding_equivalence_and_replicated_axes():
  a, j = both_libs(_shardings)
  for n1 in a:
    assert a[n1].has_addressable_devices == j[n1].has_addressable_devices
    for n2 in a:
      for ndim in (1, 2):
        assert a[n1].is_equivalent_to(a[n2], ndim) == j[n1].is_equivalent_to(j[n2], ndim), (
            n1, n2, ndim)
  for n in ("ns_x", "ns_rep", "ns_none"):
    assert a[n].replicated_axes == j[n].replicated_axes
  m_a, m_j = both_libs(lambda lib: _mesh(lib, ("Auto", "Auto")))
  for spec in [("a",), (("a", "b"),), (None, "b"), ()]:
    ra = arrax.sharding.NamedSharding(m_a, arrax.P(*spec)).replicated_axes
    assert ra == jax.sharding.NamedSharding(m_j, jax.P(*spec)).replicated_axes


# ---- PartitionSpec ------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["x", None, ("y", "z"), ["y", "z"], "y", "q"])
def test_pspec_count_index(value):
  a, j = both_libs(lambda lib: lib.P("x", None, ("y", "z")))
  assert a.count(value) == j.count(value)
  je = raised(lambda: j.index(value))
  if je is None:
    assert a.index(value) == j.index(value)
  else:
    same_exception(lambda: a.index(value), je)


def test_pspec_update_and_specs():
  def go(lib):
    p = lib.P("x", unreduced={"u"}, reduced={"r"})
    q = lib.P("x", None, ("y", "z"))
    return [repr(v) for v in (p.update(partitions=("a",)), p.update(unreduced={"q"}),
                              q.update(reduced={"w"}), p.to_ct_spec(), p.to_tangent_spec(),
                              q.to_lo(), lib.P(lib.P.UNCONSTRAINED, "x"),
                              lib.P.UNCONSTRAINED)] + [
        type(raised(lambda: p.update(foo=1))).__name__]
  a, j = both_libs(go)
  assert a == j
  m = arrax.sharding.Mesh(np.array(arrax.devices()[:1]), ("x",))
  ns = arrax.sharding.NamedSharding(m, arrax.P(arrax.P.UNCONSTRAINED, "x"))
  assert ns.replicated_axes == frozenset()


# ---- jaxprs ------------------------------------------------------------------------------------
def _traced(lib):
  c = np.arange(3.)
  return lib.make_jaxpr(lambda x: x + lib.numpy.asarray(c) * 2.)(1.)


def _effects(lib, kind):
  def printing(x):
    lib.debug.print("{}", x)
    return x + 1

  if kind == "print":
    fn = printing
  elif kind == "nested":
    fn = lambda x: lib.jit(printing)(x)
  elif kind == "cond":
    fn = lambda x: lib.lax.cond(x > 0, printing, printing, x)
  else:
    io = a_io_callback if lib is arrax else j_io_callback
    fn = lambda x: io(lambda v: v, lib.ShapeDtypeStruct((), np.float32), x,
                      ordered=kind == "io_ordered")
  cj = lib.make_jaxpr(fn)(1.)
  return (sorted(map(str, cj.effects)), sorted(map(str, cj.jaxpr.effects)),
          [sorted(map(str, e.effects)) for e in cj.eqns])


def _effect_names(x):
  # JAX's effect objects print as `<...DebugEffect object at 0x...>`: keep the class name.
  return re.sub(r"<\S*\.(\w+?)(Effect)? object at 0x\w+>", r"\1", str(x))


@pytest.mark.parametrize("kind", ["print", "nested", "cond", "io", "io_ordered"])
def test_jaxpr_effects(kind):
  a, j = both_libs(lambda lib: _effects(lib, kind))
  assert str(a) == _effect_names(j)


def test_closed_jaxpr_views():
  a, j = both_libs(_traced)
  for n in ("constvars", "invars", "outvars"):
    assert [v.aval for v in getattr(a, n)] == [
        arrax.core.ShapedArray(v.aval.shape, v.aval.dtype, v.aval.weak_type)
        for v in getattr(j, n)]
  for n in ("in_aval_qdds", "final_aval_qdds"):
    assert str(getattr(a, n)) == str(getattr(j, n)) == str(getattr(a.jaxpr, n))
  assert a.is_high == j.is_high == a.jaxpr.is_high is False
  assert a.effects == j.effects == set()
  np.testing.assert_array_equal(np.asarray(a.literals[0]), np.asarray(j.literals[0]))
  assert str(a.map_jaxpr(lambda jp: jp.replace(eqns=jp.eqns[:]))) == str(
      j.map_jaxpr(lambda jp: jp.replace(eqns=jp.eqns[:])))
  assert str(a.replace(consts=a.consts)) == str(j.replace(consts=j.consts))
  assert a.debug_info is a.jaxpr.debug_info


def test_jaxpr_replace():
  a, j = both_libs(lambda lib: _traced(lib).jaxpr)
  assert str(a.replace(outvars=a.outvars + a.invars)) == str(j.replace(outvars=j.outvars + j.invars))
  for kw in ("invars", "outvars", "eqns"):
    ra, rj = (x.replace(**{kw: getattr(x, kw)[::-1] + x.constvars}) for x in (a, j))
    assert str(ra.debug_info) == str(rj.debug_info), kw
    assert (ra.debug_info.arg_names is None) == (kw != "eqns")
  ae, je = raised(lambda: a.replace(foo=1)), raised(lambda: j.replace(foo=1))
  assert type(ae) is type(je) is ValueError and str(ae) == str(je)


def test_eqn_replace_and_ctx():
  a, j = both_libs(lambda lib: _traced(lib).eqns[0])
  assert str(a.replace(params=dict(a.params))) == str(j.replace(params=dict(j.params)))
  assert str(a.replace(invars=a.invars[::-1])) == str(j.replace(invars=j.invars[::-1]))
  assert a.effects == j.effects == frozenset()
  for f in ("compute_type", "threefry_partitionable", "remove_size_one_mesh_axis",
            "xla_metadata"):
    assert getattr(a.ctx, f) == getattr(j.ctx, f), f
  assert str(a.ctx.cur_abstract_mesh) == str(j.ctx.cur_abstract_mesh)
  assert repr(a.ctx) == repr(j.ctx)


def _g(a, b, c=1.):
  return a + b * c


class _Callable:
  def __call__(self, x, y=2.):
    return x * y


_DEBUG_INFO_CASES = {
    "tree_out": (lambda x, y: {"s": (x, y * 2), "t": [x]}, (1., 2.), {}, ()),
    "kwarg": (lambda x, *, k: x * k, (1.,), {"k": 3.}, ()),
    "static": (lambda x, n: x * n, (1., 3), {}, (1,)),
    "dict_arg": (lambda d: d["a"], ({"a": 1., "b": 2.},), {}, ()),
    "varargs": (lambda *a, **k: a[0] + k["z"], (1.,), {"z": 2.}, ()),
    "no_args": (lambda: (), (), {}, ()),
    "partial": (functools.partial(_g, 1.), (2.,), {}, ()),
    "callable": (_Callable(), (1.,), {}, ()),
    "named": (_g, (1., 2.), {"c": 3.}, ()),
}


@pytest.mark.parametrize("name", sorted(_DEBUG_INFO_CASES))
def test_jaxpr_debug_info(name):
  fn, args, kwargs, static = _DEBUG_INFO_CASES[name]
  a, j = both_libs(lambda lib: lib.make_jaxpr(fn, static_argnums=static)(*args, **kwargs))
  assert str(a.debug_info) == str(j.debug_info)
  assert a.jaxpr.debug_info == a.debug_info
  if name in ("tree_out", "kwarg", "static", "dict_arg", "named"):
    a, j = both_libs(lambda lib: lib.jit(fn, static_argnums=static).trace(*args, **kwargs))
    assert str(a.jaxpr.debug_info) == str(j.jaxpr.debug_info)
    assert a.jaxpr is a.jaxpr


# ---- key arrays -------------------------------------------------------------------------------
_KEY_ABSTRACT = ["all", "any", "argmax", "argmin", "argpartition", "argsort", "astype",
                 "byteswap", "choose", "clip", "compress", "conj", "conjugate", "cumprod",
                 "cumsum", "diagonal", "dot", "item", "max", "mean", "min", "nonzero", "prod",
                 "ptp", "repeat", "round", "searchsorted", "sort", "std", "sum", "to_device",
                 "trace", "var", "view"]


def _keys(lib):
  return lib.random.split(lib.random.key(0), 4)


@pytest.mark.parametrize("name", _KEY_ABSTRACT)
def test_key_array_abstract_methods(name):
  a, j = both_libs(_keys)
  e = same_exception(lambda: getattr(a, name)(), raised(lambda: getattr(j, name)()))
  assert str(e) == f"Cannot call abstract method {name}"


def test_key_array_buffer_facts():
  a, j = both_libs(_keys)
  assert repr(a.aval) == repr(j.aval) and a.aval.dtype == a.dtype
  assert repr(arrax.random.key(1).aval) == repr(jax.random.key(1).aval)
  assert a.on_device_size_in_bytes() == j.on_device_size_in_bytes()
  assert isinstance(a.unsafe_buffer_pointer(), int)
  assert a.copy_to_host_async() is None
  assert a.is_fully_addressable == j.is_fully_addressable is True
  assert a.is_fully_replicated == j.is_fully_replicated is True
  assert repr(a.addressable_data(0)) == repr(j.addressable_data(0))
  for sa, sj in ((a.addressable_shards, j.addressable_shards),
                 (a.global_shards, j.global_shards)):
    assert [repr(s) for s in sa] == [repr(s) for s in sj]
  strip = lambda s: re.sub(r" at 0x\w+", "", s)
  assert strip(a.pprint()) == strip(j.pprint())


def test_key_array_take_and_at():
  def go(lib):
    ks = _keys(lib)
    idx = lib.numpy.array([2, 0])
    return [repr(ks.take(idx)), repr(ks.reshape(2, 2).take(3)),
            repr(ks.reshape(2, 2).take(lib.numpy.array([1]), axis=1)),
            repr(ks.at[1].get()), repr(ks.at[1:3].set(ks[:2])),
            repr(ks.reshape(2, 2).at[:, 0].set(ks[2:]))]
  a, j = both_libs(go)
  assert a == j


# ---- ShapeDtypeStruct -------------------------------------------------------------------------
def test_sds_format_update_fields():
  def go(lib):
    S = lib.ShapeDtypeStruct
    sds = S((2,), np.float32)
    dev_s = lib.sharding.SingleDeviceSharding(lib.devices()[0])
    layout = lib.experimental.layout.Layout((0,))
    fmt = lib.experimental.layout.Format(layout, dev_s)
    with_fmt = S((2,), np.float32, sharding=fmt)
    return [str(sds.format), sds.is_ref, sds.manual_axis_type, str(with_fmt),
            str(with_fmt.format), str(with_fmt.sharding),
            str(sds.update(shape=(3, 1), weak_type=True)), str(sds.update(dtype=np.int8)),
            str(with_fmt.update(shape=(5,))), str(sds.update(sharding=dev_s)),
            str(S((2,), np.float32, is_ref=True)),
            type(raised(lambda: with_fmt.update(sharding=dev_s))).__name__,
            type(raised(lambda: S((2,), np.float32, manual_axis_type=1))).__name__,
            type(raised(lambda: S((2,), None))).__name__,
            sds == S((2,), np.float32), sds == S((2,), np.float32, is_ref=True)]
  a, j = both_libs(go)
  assert a == j


@pytest.mark.parametrize("what", ["uncommitted", "committed", "numpy", "scalar", "int",
                                  "key", "tracer"])
def test_sds_like(what):
  def go(lib):
    S = lib.ShapeDtypeStruct
    if what == "tracer":
      out = []
      lib.jit(lambda x: out.append(str(S.like(x))) or x)(np.ones(2, np.float32))
      return out[0]
    x = {"uncommitted": lambda: lib.numpy.ones((2, 3), lib.numpy.bfloat16),
         "committed": lambda: lib.device_put(lib.numpy.ones(3), lib.devices()[0]),
         "numpy": lambda: np.ones((4,), np.int16), "scalar": lambda: 1.5,
         "int": lambda: 3, "key": lambda: lib.random.key(0)}[what]()
    return str(S.like(x))
  a, j = both_libs(go)
  assert a == j


# ---- Traced.lojax -----------------------------------------------------------------------------
def test_traced_lojax():
  def go(lib):
    lo = lib.jit(lambda x, y: {"s": x * 2 + y}).trace(1., np.ones(3, np.float32)).lojax
    return [str(lo.jaxpr), lo.fun_name, str(lo.out_tree), str(lo.args_info), str(lo.out_info)]
  a, j = both_libs(go)
  assert a == j
