"""JAX's extension APIs on arrax, against JAX 0.10.2: user primitives built with
`jax.interpreters.{ad,batching,mlir,partial_eval,xla}` and `jax.extend.*` (their values and
jaxprs under jit/grad/vmap), the call primitives, the MLIR module helpers and the modules that
re-export jaxlib's MLIR bindings."""
import functools
import warnings

import jax
import jax.extend.core
import jax.extend.sharding
import jax.interpreters.ad
import jax.interpreters.batching
import jax.interpreters.mlir
import jax.interpreters.partial_eval
import jax.interpreters.pxla
import jax.interpreters.xla
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.tree_util import FlatTree

import arrax
import arrax.extend.sharding
import arrax.extend.xla
import arrax.interpreters.pxla
import arrax.interpreters.xla
import arrax.numpy as anp
from tests.oracle import assert_same

LIBS = {"arrax": (arrax, anp), "jax": (jax, jnp)}


def both(build):
  """`build(lib, lib_numpy)` for arrax and for JAX."""
  return build(arrax, anp), build(jax, jnp)


# ---- call primitives ------------------------------------------------------------------------
def _call_program(lib, np_):
  from importlib import import_module
  P = import_module(lib.__name__ + ".extend.core.primitives")
  lu = import_module(lib.__name__ + ".extend.linear_util")
  c = np_.arange(3.0)

  def f(x):
    sub = lu.wrap_init(lambda a: [np_.sin(a) * 2 + c], debug_info=None)
    return P.closed_call_p.bind(x, subfuns=(sub,))[0]

  def g(x):
    sub = lu.wrap_init(lambda a: [np_.cos(a) * a], debug_info=None)
    return P.call_p.bind(x, subfuns=(sub,))[0]

  x = np_.array([1.0, 2.0, 3.0])
  out = []
  for h in (f, g):
    loss = lambda x: h(x).sum()  # noqa: E731
    # (the jaxprs of grad differ: JAX orders a call's residual outputs first and keeps a
    # literal among them; arrax's partial evaluation gives the primal outputs first)
    out += [str(lib.make_jaxpr(h)(x)), h(x), lib.jit(h)(x), lib.grad(loss)(x),
            lib.jit(lib.vmap(lib.grad(loss)))(np_.stack([x, 2 * x]))]
  return out


def test_call_primitives_match_jax():
  ours, theirs = both(_call_program)
  for a, e in zip(ours, theirs):
    if isinstance(e, str):
      assert a == e
    else:
      assert_same(a, e)


def test_call_primitive_dce():
  jaxpr = arrax.make_jaxpr(lambda x: arrax.extend.core.primitives.closed_call_p.bind(
      x, subfuns=(lambda a: [anp.sin(a), anp.cos(a)],)))(1.0)
  eqn = jaxpr.jaxpr.eqns[0]
  pe = arrax.interpreters.partial_eval
  for rule in (pe.dce_rules[eqn.primitive], pe.dce_jaxpr_closed_call_rule):
    used_in, new = rule([False, True], eqn)
    assert used_in == [True] and len(new.outvars) == 1
    assert [e.primitive.name for e in new.params["call_jaxpr"].eqns] == ["cos"]
    assert rule([False, False], eqn) == ([False], None)
  pruned, used = arrax._src.core.dce_jaxpr(jaxpr.jaxpr, [True, False])
  assert [e.primitive.name for e in pruned.eqns[0].params["call_jaxpr"].eqns] == ["sin"]


# ---- a user primitive: defbilinear, lowering with the extend.mlir dialects ----------------------
def _bilinear_program(lib, np_):
  from importlib import import_module
  core = import_module(lib.__name__ + ".extend.core")
  hlo = import_module(lib.__name__ + ".extend.mlir.dialects.stablehlo")
  ad, batching, mlir, xla = (lib.interpreters.ad, lib.interpreters.batching,
                             lib.interpreters.mlir, lib.interpreters.xla)
  mul_p = core.Primitive("my_mul")
  mul_p.def_impl(functools.partial(xla.apply_primitive, mul_p))
  mul_p.def_abstract_eval(lambda x, y: x)

  def lower(ctx, x, y):
    (t,) = mlir.aval_to_ir_types(ctx.module_context, ctx.avals_out[0])
    assert hlo.MulOp(x, y).result.type == t
    return [hlo.multiply(x, y)]
  mlir.register_lowering(mul_p, lower)
  ad.defbilinear(mul_p, lambda ct, x, y: mul_p.bind(ct, y), lambda ct, x, y: mul_p.bind(x, ct))

  def batch(args, dims):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    return mul_p.bind(*(batching.bdim_at_front(a, d, size) for a, d in zip(args, dims))), 0
  batching.primitive_batchers[mul_p] = batch
  assert ad.get_primitive_transpose(mul_p) is not None

  def f(x, y):
    return mul_p.bind(mul_p.bind(x, y), x).sum()

  x, y = np_.array([1.0, 2.0, 3.0]), np_.array([0.5, -1.0, 2.0])
  return [f(x, y), lib.jit(f)(x, y), lib.grad(f, (0, 1))(x, y), lib.jit(lib.grad(f))(x, y),
          lib.vmap(lib.grad(f))(np_.stack([x, y]), np_.stack([y, x])),
          lib.jacrev(lambda x: mul_p.bind(x, y))(x),
          str(lib.make_jaxpr(lib.grad(f))(x, y)), str(lib.make_jaxpr(lib.vmap(f))(x, y))]


def test_defbilinear_user_primitive_matches_jax():
  ours, theirs = both(_bilinear_program)
  for a, e in zip(ours, theirs):
    if isinstance(e, str):
      assert a == e
    else:
      assert_same(a, e)


def test_get_primitive_transpose_error():
  p = arrax.extend.core.Primitive("no_transpose")
  with pytest.raises(NotImplementedError, match="Transpose rule .* for 'no_transpose' not "):
    arrax.interpreters.ad.get_primitive_transpose(p)
  assert_same(arrax.interpreters.ad.add_jaxvals(anp.ones(2), anp.arange(2.0)),
              jax.interpreters.ad.add_jaxvals(jnp.ones(2), jnp.arange(2.0)))


# ---- defreducer -----------------------------------------------------------------------------
def _reducer_program(lib, np_):
  from importlib import import_module
  core = import_module(lib.__name__ + ".extend.core")
  mlir, batching = lib.interpreters.mlir, lib.interpreters.batching
  p = core.Primitive("my_max_reduce")
  p.def_impl(functools.partial(lib.interpreters.xla.apply_primitive, p))
  p.def_abstract_eval(lambda x, *, axes: lib.core.ShapedArray(
      tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype))
  mlir.register_lowering(p, mlir.lower_fun(lambda x, *, axes: np_.max(x, axis=axes),
                                           multiple_results=False))
  batching.defreducer(p)
  x = np_.arange(24.0).reshape(2, 3, 4) % 7
  f = lambda x: p.bind(x, axes=(1,))  # noqa: E731
  return [lib.vmap(f, in_axes=0)(x), lib.vmap(f, in_axes=2)(x), lib.jit(lib.vmap(f, 1))(x),
          str(lib.make_jaxpr(lib.vmap(f, in_axes=2))(x))]


def test_defreducer_matches_jax():
  ours, theirs = both(_reducer_program)
  for a, e in zip(ours, theirs):
    if isinstance(e, str):
      assert a == e
    else:
      assert_same(a, e)


# ---- register_vmappable ---------------------------------------------------------------------
def _vmappable_program(lib, np_):
  batching = lib.interpreters.batching

  class Named:       # a user container (not a pytree) that vmap maps over
    def __init__(self, data):
      self.data = data

  class Spec:
    def __init__(self, axis):
      self.axis = axis

  def to_elt(cont, get_idx, x, spec):
    return Named(cont(x.data, spec.axis))

  def from_elt(cont, axis_size, elt, spec):
    return Named(cont(axis_size, elt.data, spec.axis))

  batching.register_vmappable(Named, Spec, int, to_elt, from_elt, None)
  try:
    x = np_.arange(12.0).reshape(3, 4)
    f = lib.vmap(lambda n, y: Named(n.data * y + 1), in_axes=(Spec(1), 0), out_axes=Spec(1))
    out = f(Named(x), np_.arange(4.0))
    g = lib.vmap(lambda n: (n.data.sum(), Named(n.data)), in_axes=(Spec(0),),
                 out_axes=(0, Spec(1)), axis_size=3)
    s, n2 = g(Named(x))
    return [out.data, s, n2.data]
  finally:
    batching.unregister_vmappable(Named)


def test_register_vmappable_matches_jax():
  ours, theirs = both(_vmappable_program)
  assert_same(ours, theirs)
  assert not arrax._src.batching.vmappables   # unregistered again


# ---- jvp / linearize of jax.interpreters.ad -----------------------------------------------------
def test_ad_jvp_and_linearize():
  f_a = lambda x, y: (anp.sin(x) * y, x)  # noqa: E731
  f_j = lambda x, y: (jnp.sin(x) * y, x)  # noqa: E731
  args = (np.float32(0.5), np.float32(2.0))
  tans = (np.float32(1.0), np.float32(0.0))
  p_a, t_a = arrax.interpreters.ad.jvp(f_a, args, tans)
  p_j, t_j = jax.interpreters.ad.jvp(f_j, FlatTree.flatten(args), FlatTree.flatten(tans))
  assert_same(list(p_a), list(p_j.unflatten()))
  assert_same(list(t_a), list(t_j.unflatten()))
  out_a, zeros_a, jaxpr_a, consts_a = arrax.interpreters.ad.linearize(f_a, args)
  out_j, zeros_j, jaxpr_j, consts_j = jax.interpreters.ad.linearize(f_j, FlatTree.flatten(args))
  assert_same(list(out_a), list(out_j.unflatten()))
  assert zeros_a == zeros_j
  tangent = lambda core, jaxpr, consts: core.eval_jaxpr(  # noqa: E731
      jaxpr, consts, np.float32(1.0), np.float32(1.0))
  from jax._src import core as jcore
  from arrax._src import core as acore
  assert_same(tangent(acore, jaxpr_a, consts_a), tangent(jcore, jaxpr_j, consts_j))


def test_dce_jaxpr_consts_matches_jax():
  def build(lib, np_):
    c = np_.arange(3.0)
    d = np_.ones(3)
    jaxpr = lib.make_jaxpr(lambda x: (x * c, x + d))(np_.zeros(3)).jaxpr
    pe = lib.interpreters.partial_eval
    new, used_consts, used_in = pe.dce_jaxpr_consts(jaxpr, [True, False])
    return str(new), used_consts, used_in
  assert both(build)[0] == both(build)[1]


# ---- MLIR module helpers ----------------------------------------------------------------------
SRC = """
func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = call @helper(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func private @helper(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<2xf32>
  return %0 : tensor<2xf32>
}
"""
DST = """
func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  return %arg0 : tensor<2xf32>
}
func.func private @helper(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  return %arg0 : tensor<2xf32>
}
"""


def _module_helpers(lib):
  from importlib import import_module
  ir = import_module(lib.__name__ + ".extend.mlir.ir")
  mlir = lib.interpreters.mlir
  with mlir.make_ir_context(), ir.Location.unknown():
    dst, src = ir.Module.parse(DST), ir.Module.parse(SRC)
    name = mlir.merge_mlir_modules(dst, "double", src)
    text = mlir.module_to_string(dst, enable_debug_info=False)
    round_trip = str(ir.Module.parse(mlir.module_to_bytecode(dst)))
    i32 = ir.IntegerType.get_signless(32)
    attrs = [str(mlir.dense_int_elements([1, 2])), str(mlir.dense_int_array([3, 4])),
             str(mlir.ir_attribute(1.5)), str(mlir.ir_attribute([1, True])),
             str(mlir.token_type())]
    flat = mlir.flatten_ir_types([i32, (i32, i32)])
    grouped = mlir.unflatten_ir_values_like_types([1, 2, 3], [i32, (i32, i32)])
  return name, text, round_trip == str(dst), attrs, len(flat), grouped


def test_module_helpers_match_jax():
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)   # (JAX deprecates the flatteners)
    ours = _module_helpers(arrax)
    theirs = _module_helpers(jax)
  assert ours == theirs


def _constant_and_callback_program(lib, np_):
  from importlib import import_module
  core = import_module(lib.__name__ + ".extend.core")
  mlir = lib.interpreters.mlir

  class Scale:       # a user type lowered as a constant by its handler
    def __init__(self, v):
      self.v = v
  mlir.register_constant_handler(
      Scale, lambda s, aval=None: mlir.ir_constant(np.full((3,), s.v, np.float32)))

  p = core.Primitive("host_scale")
  p.def_abstract_eval(lambda x, *, s: x)

  def lower(ctx, x, *, s):
    scale = mlir.ir_constant(s)
    (out,), _, _ = mlir.emit_python_callback(
        ctx, lambda a: (np.asarray(a) ** 2,), None, [x], ctx.avals_in, ctx.avals_out,
        has_side_effect=False)
    from importlib import import_module
    hlo = import_module(lib.__name__ + ".extend.mlir.dialects.stablehlo")
    return [hlo.multiply(out, scale)]
  mlir.register_lowering(p, lower)
  x = np_.array([1.0, 2.0, 3.0], np_.float32)
  return lib.jit(lambda x: p.bind(x, s=Scale(2.0)))(x)


def test_constant_handler_and_python_callback_match_jax():
  assert_same(*both(_constant_and_callback_program))


def test_lower_jaxpr_to_module_compiles_and_overrides():
  from arrax._src import backend, dispatch, mlir as amlir
  mlir = arrax.interpreters.mlir
  closed = arrax.make_jaxpr(lambda x: anp.sin(x) * 2)(anp.ones(3))
  cos_rule = mlir.lower_fun(anp.cos, multiple_results=False)
  results = []
  for overrides in (None, ((arrax.lax.sin_p, cos_rule),)):
    res = mlir.lower_jaxpr_to_module(
        "jit_f", closed, num_const_args=0, in_avals=closed.in_avals, ordered_effects=[],
        platforms=["cpu"], backend=None, axis_context=mlir.ShardingContext(1),
        donated_args=[False], lowering_parameters=mlir.LoweringParameters(
            override_lowering_rules=overrides))
    assert isinstance(res, mlir.LoweringResult)
    assert str(res.module.operation.attributes["sym_name"]) == '"jit_f"'
    dev = backend.default_device()
    exe = dispatch.Executable(
        dispatch.compile_module(amlir.LoweredModule(res.module, res.host_callbacks), dev, "f"),
        closed.in_avals, closed.out_avals, dev, name="jit(f)")
    results.append(exe.execute([anp.arange(3.0)._buf])[0])
  np.testing.assert_allclose(results[0], np.sin(np.arange(3.0)) * 2, rtol=1e-6)
  np.testing.assert_allclose(results[1], np.cos(np.arange(3.0)) * 2, rtol=1e-6)
  with pytest.raises(NotImplementedError):
    mlir.lower_jaxpr_to_module(
        "jit_f", closed, num_const_args=0, in_avals=closed.in_avals, ordered_effects=[],
        platforms=["tpu"], backend=None, axis_context=mlir.ShardingContext(1),
        donated_args=[False], lowering_parameters=mlir.LoweringParameters())


def test_lower_jaxpr_to_fun_inside_a_rule():
  mlir = arrax.interpreters.mlir
  from arrax.extend.mlir.dialects import func
  inner = arrax.make_jaxpr(lambda x: anp.exp(x) + 1)(1.0)
  p = arrax.extend.core.Primitive("calls_fun")
  p.def_abstract_eval(lambda x: x)

  def lower(ctx, x):
    fn = mlir.lower_jaxpr_to_fun(ctx.module_context, "my_fun", inner, [], num_const_args=0,
                                 in_avals=inner.in_avals)
    return func.CallOp(fn, [x]).results
  mlir.register_lowering(p, lower)
  f = arrax.jit(lambda x: p.bind(x) * 2)
  assert "func.func private @my_fun" in f.lower(1.0).as_text()
  np.testing.assert_allclose(f(1.0), (np.exp(1.0) + 1) * 2, rtol=1e-6)


# ---- extend.{sharding,xla,lowering}, interpreters.{pxla,xla}, cloud_tpu_init ----------------------
def test_sharding_protos_and_gspmd_sharding():
  from jaxlib import xla_client as xc
  tiled = xc.HloSharding.iota_tile([1, 1])
  for h in (xc.HloSharding.replicate(), tiled):
    blob = arrax.extend.sharding.get_serialized_proto_from_hlo_sharding(h)
    assert blob == jax.extend.sharding.get_serialized_proto_from_hlo_sharding(h)
    assert (arrax.extend.sharding.get_hlo_sharding_from_serialized_proto(blob)
            == jax.extend.sharding.get_hlo_sharding_from_serialized_proto(blob))
    a = arrax.extend.sharding.GSPMDSharding(arrax.devices(), h)
    j = jax.extend.sharding.GSPMDSharding(jax.devices(), h)
    assert (list(a.devices_indices_map((4, 2)).values())
            == list(j.devices_indices_map((4, 2)).values()))
    assert a.is_fully_replicated == j.is_fully_replicated and repr(a) == repr(j)
    assert_same(arrax.device_put(anp.arange(3.0), a), jax.device_put(jnp.arange(3.0), j))


def test_gspmd_sharding_tiles():
  from jaxlib import xla_client as xc
  devs = ["d0", "d1", "d2", "d3"]
  proto = xc.OpSharding()
  proto.type = xc.OpSharding.Type.OTHER
  proto.tile_assignment_dimensions = [2, 1, 2]
  proto.tile_assignment_devices = [3, 2, 1, 0]
  proto.replicate_on_last_tile_dim = True
  s = arrax.extend.sharding.GSPMDSharding(devs, proto)
  idx = s.devices_indices_map((5, 3))
  assert idx["d3"] == idx["d2"] == (slice(0, 3), slice(None))
  assert idx["d1"] == idx["d0"] == (slice(3, 5), slice(None))


def test_hlo_module_transformation_runs_in_compilation():
  xla = arrax.extend.xla
  seen = []
  xla.register_hlo_module_transformation(lambda b: seen.append(len(b)), name="arrax_test_pass")
  try:
    arrax.jit(lambda x: x * 3 + 0.25)(anp.ones(7))
  finally:
    assert xla.clear_hlo_module_transformation("arrax_test_pass")
  assert seen and all(n > 0 for n in seen)
  assert not xla.clear_hlo_module_transformation("arrax_test_pass")
  with pytest.raises(TypeError):
    xla.register_hlo_module_transformation(lambda b: None, name="x", stage=0)


def test_create_compile_options_matches_jax():
  module = jax.jit(jnp.sin).lower(1.0).compiler_ir()
  outs = []
  for lib in (arrax, jax):
    dev = np.array(lib.devices(), dtype=object)
    o = lib.interpreters.pxla.create_compile_options(module, True, [False], [True], None, dev,
                                                     {})
    b = o.executable_build_options
    outs.append((o.num_replicas, o.num_partitions, o.parameter_is_tupled_arguments,
                 list(b.allow_spmd_sharding_propagation_to_parameters),
                 list(b.allow_spmd_sharding_propagation_to_output),
                 o.device_assignment.serialize() if hasattr(o.device_assignment, "serialize")
                 else str(o.device_assignment)))
  assert outs[0] == outs[1]


def test_xla_module_and_lowering_context():
  assert arrax.interpreters.xla.Backend is jax.interpreters.xla.Backend
  assert_same(arrax.interpreters.xla.apply_primitive(arrax.lax.add_p, anp.ones(2), 1.0),
              jax.interpreters.xla.apply_primitive(jax.lax.add_p, jnp.ones(2), 1.0))
  for lib in (arrax, jax):
    h = lib.interpreters.xla.canonicalize_dtype_handlers[np.ndarray]
    assert np.asarray(h(np.arange(3.0))).dtype == np.float32
  ctx = arrax.interpreters.mlir.make_ir_context()
  assert isinstance(ctx, arrax.extend.lowering.JaxIrContext)
  from jaxlib.mlir import ir
  assert isinstance(arrax.extend.lowering.upstream_dialects, ir.DialectRegistry)


def test_cloud_tpu_init_deprecated_like_jax():
  import importlib
  import sys
  msgs = []
  for name in ("arrax.cloud_tpu_init", "jax.cloud_tpu_init"):
    sys.modules.pop(name, None)
    with pytest.warns(DeprecationWarning, match="deprecated in JAX v0.8.1"):
      mod = importlib.import_module(name)
    with pytest.raises(AttributeError) as e:
      mod.cloud_tpu_init
    msgs.append(str(e.value))
  assert msgs[0] == msgs[1]


# ---- custom_vjp with optimize_remat: remat_opt_p ----------------------------------------------
def _remat_opt_program(lib, np_):
  @lib.custom_vjp
  def f(x, y):
    return np_.sin(x) * y

  def f_fwd(x, y):
    return f(x, y), (np_.cos(x), np_.sin(x), y)

  def f_bwd(res, g):
    c, s, y = res
    return c * g * y, s * g
  f.defvjp(f_fwd, f_bwd, optimize_remat=True)
  x, y = np_.array([0.3, 1.2]), np_.array([2.0, -1.0])
  loss = lambda x, y: f(x, y).sum()  # noqa: E731
  fwd_only = lib.make_jaxpr(lambda x: lib.vjp(lambda x: f(x, y), x)[0])(x)
  pruned, _ = lib.interpreters.partial_eval.dce_jaxpr(fwd_only.jaxpr, [True])
  return [lib.grad(loss, (0, 1))(x, y), lib.jit(lib.grad(lib.checkpoint(loss), (0, 1)))(x, y),
          lib.vmap(lib.grad(loss))(np_.stack([x, y]), np_.stack([y, x])),
          str(fwd_only), str(pruned),
          str(lib.make_jaxpr(lambda x: lib.vjp(lambda x: f(x, y), x))(x))]


def test_custom_vjp_optimize_remat_matches_jax():
  ours, theirs = both(_remat_opt_program)
  for a, e in zip(ours, theirs):
    if isinstance(e, str):
      assert a == e
    else:
      assert_same(a, e)
  assert arrax.custom_derivatives.remat_opt_p.name == jax.custom_derivatives.remat_opt_p.name


# ---- the typed-key primitives -------------------------------------------------------------------
def _key_primitives_program(lib, np_):
  from importlib import import_module
  jex = import_module(lib.__name__ + ".extend")
  import_module(lib.__name__ + ".extend.random")
  P = jex.core.primitives
  keys = P.random_seed_p.bind(np_.array([1, 2, 3]), impl=jex.random.threefry_prng_impl)
  data = lib.random.key_data
  return [data(keys), data(P.random_split_p.bind(keys, shape=(2,))),
          data(P.random_fold_in_p.bind(keys, np_.array([5, 6, 7], np_.uint32))),
          P.random_bits_p.bind(keys, bit_width=16, shape=(2,)),
          lib.jit(lambda k: P.random_bits_p.bind(k, bit_width=32, shape=(3,)))(
              lib.random.key(4)),
          lib.vmap(lambda k: data(P.random_split_p.bind(k, shape=(2,))))(keys)]


def test_key_primitives_match_jax():
  assert_same(*both(_key_primitives_program))


def test_pxla_deprecated_and_removed_names_match_jax():
  for name in ("MeshAxisName", "are_hlo_shardings_equal", "is_hlo_sharding_replicated"):
    msgs = []
    for mod in (arrax.interpreters.pxla, jax.interpreters.pxla):
      with pytest.warns(DeprecationWarning) as rec:
        getattr(mod, name)
      msgs.append(str(rec[0].message))
    assert msgs[0] == msgs[1]
  from jaxlib import xla_client as xc
  pair = (xc.HloSharding.replicate(), xc.HloSharding.iota_tile([1]))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    assert (arrax.interpreters.pxla.are_hlo_shardings_equal(*pair)
            == jax.interpreters.pxla.are_hlo_shardings_equal(*pair))
  for name in ("MapTracer", "Chunked", "spec_to_indices", "shard_args"):
    msgs = []
    for mod in (arrax.interpreters.pxla, jax.interpreters.pxla):
      with pytest.raises(AttributeError) as e:
        getattr(mod, name)
      msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
