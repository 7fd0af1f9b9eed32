"""arrax.experimental.buffer_callback, .transfer, .roofline and .source_mapper against JAX
0.10.2 on CPU: values, jaxprs, errors, roofline costs and source maps."""
import dataclasses
import datetime
import inspect
import logging

import jax
import jax.extend  # noqa: F401
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax.experimental import buffer_callback as jbc
from jax.experimental import roofline as jrl
from jax.experimental import source_mapper as jsm
from jax.experimental import transfer as jtr

import arrax
import arrax.extend  # noqa: F401
import arrax.numpy as anp
from arrax.experimental import buffer_callback as abc_
from arrax.experimental import roofline as arl
from arrax.experimental import source_mapper as asm
from arrax.experimental import transfer as atr
from tests.oracle import assert_same, error_of

LIBS = {"jax": (jax, jnp, jbc, jrl, jsm, jtr), "arrax": (arrax, anp, abc_, arl, asm, atr)}


def _params(fn):
  return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("mod,names", [
    (2, ["buffer_callback"]),
    (3, ["roofline", "roofline_and_grad", "register_roofline", "register_standard_roofline"]),
    (4, ["generate_sourcemaps", "compile_with_env", "create_mlir_sourcemap", "register_pass",
         "all_passes", "filter_passes", "canonicalize_filename"]),
])
def test_signatures(mod, names):
  jm, am = LIBS["jax"][mod], LIBS["arrax"][mod]
  for n in names:
    assert _params(getattr(am, n)) == _params(getattr(jm, n)), n
  for n in dir(jm):
    if not n.startswith("_") and n not in ("jax", "common", "generate_map", "jaxpr", "hlo",
                                           "mlir", "rooflines"):
      assert hasattr(am, n), n


# ---- buffer_callback -------------------------------------------------------------------------
def _double_and_seven(log):
  def cb(ctx, out, x, *, y):
    log.append((type(ctx).__name__, str(ctx.stage), x.shape, str(x.dtype), x.writeable,
                out[0].writeable, y.shape))
    np.asarray(out[0])[...] = np.asarray(x) * 2 + np.asarray(y)
    np.asarray(out[1])[...] = 7
  return cb


def _bc_case(lib, mode):
  top, np_, bc = LIBS[lib][:3]
  log = []
  f = bc.buffer_callback(_double_and_seven(log), (top.ShapeDtypeStruct((3,), np.float32),
                                                  top.ShapeDtypeStruct((), np.int32)))
  g = lambda x: f(x, y=np_.float32(1.0))   # noqa: E731
  x = np_.arange(3.0)
  if mode == "eager":
    return g(x), log
  if mode == "jit":
    return top.jit(g)(x), log
  if mode == "jaxpr":
    return str(top.make_jaxpr(g)(x)), log
  if mode in ("sequential", "expand_dims", "broadcast_all"):
    f = bc.buffer_callback(_double_and_seven(log), (top.ShapeDtypeStruct((3,), np.float32),
                                                    top.ShapeDtypeStruct((), np.int32)),
                           vmap_method=mode)
    if mode != "sequential":
      f = bc.buffer_callback(_double_and_seven(log), (top.ShapeDtypeStruct((2, 3), np.float32),
                                                      top.ShapeDtypeStruct((2,), np.int32)),
                             vmap_method=mode)
      return top.jit(top.vmap(lambda v: f(v, y=np_.ones(3, np.float32))))(
          np_.arange(6.0).reshape(2, 3)), log
    return top.vmap(lambda v: f(v, y=np_.float32(1.0)))(np_.arange(6.0).reshape(2, 3)), log
  raise ValueError(mode)


@pytest.mark.parametrize("mode", ["eager", "jit", "jaxpr", "sequential", "broadcast_all"])
def test_buffer_callback_like_jax(mode):
  (a, alog), (j, jlog) = _bc_case("arrax", mode), _bc_case("jax", mode)
  if mode == "jaxpr":
    assert a == j
  else:
    assert_same(a, j)
  assert alog == jlog and (alog or mode == "jaxpr")


def _bc_error(lib, case):
  top, np_, bc = LIBS[lib][:3]
  out = top.ShapeDtypeStruct((2,), np.float32)

  def fill(ctx, o, x):
    np.asarray(o)[...] = np.asarray(x)

  x = np_.ones(2)
  if case == "returns":
    return lambda: top.jit(bc.buffer_callback(lambda ctx, o, x: 1, out))(x)
  if case == "raises":
    return lambda: bc.buffer_callback(lambda ctx, o, x: 1 / 0, out)(x)
  if case == "grad":
    return lambda: top.grad(lambda v: bc.buffer_callback(fill, out)(v).sum())(x)
  if case == "vmap_none":
    return lambda: top.vmap(bc.buffer_callback(fill, out))(np_.ones((3, 2)))
  if case in ("alias_in", "alias_out", "alias_type"):
    aliases = {"alias_in": {1: 0}, "alias_out": {0: 3}, "alias_type": {0: 0}}[case]
    y = np_.ones(3) if case == "alias_type" else x
    return lambda: bc.buffer_callback(fill, out, input_output_aliases=aliases)(y)
  raise ValueError(case)


@pytest.mark.parametrize("case", ["returns", "raises", "grad", "vmap_none", "alias_in",
                                  "alias_out", "alias_type"])
def test_buffer_callback_errors_like_jax(case, caplog):
  with caplog.at_level(logging.CRITICAL):
    a, j = error_of(_bc_error("arrax", case)), error_of(_bc_error("jax", case))
  assert j is not None and a is not None and a[0] == j[0]
  if case in ("returns", "raises"):
    tail = lambda m: m.strip().splitlines()[-1]   # noqa: E731  (the Python error raised)
    assert tail(a[1]) == tail(j[1]) and a[1].startswith("INTERNAL: Error when calling buffer")
  else:
    assert a[1] == j[1]


def test_buffer_callback_aliases_and_side_effects():
  for lib in ("arrax", "jax"):
    top, np_, bc = LIBS[lib][:3]
    calls = []

    def inc(ctx, o, x):
      calls.append(1)
      np.asarray(o)[...] = np.asarray(x) + 1

    out = top.ShapeDtypeStruct((2,), np.float32)
    f = bc.buffer_callback(inc, out, input_output_aliases={0: 0})
    assert np.asarray(top.jit(f)(np_.ones(2))).tolist() == [2.0, 2.0]
    calls.clear()
    top.jit(lambda v: (bc.buffer_callback(inc, out)(v), v)[1])(np_.ones(2))
    pure_calls = len(calls)
    top.jit(lambda v: (bc.buffer_callback(inc, out, has_side_effect=True)(v), v)[1])(
        np_.ones(2))
    assert (lib, pure_calls, len(calls)) == (lib, 0, 1)


# ---- transfer ---------------------------------------------------------------------------------
def test_transfer_server_loopback_like_jax():
  got = {}
  for lib in ("jax", "arrax"):
    top, np_, _, _, _, tr = LIBS[lib]
    server = tr.start_transfer_server(top.devices()[0].client)
    assert isinstance(server.address(), str) and ":" in server.address()
    xs = {"a": np_.arange(6.0).reshape(2, 3), "b": [np_.arange(4, dtype=np_.int8)]}
    server.await_pull(11, xs)
    conn = server.connect(server.address())
    sds = top.tree.map(lambda v: top.ShapeDtypeStruct(v.shape, v.dtype, sharding=v.sharding),
                       xs)
    # (an absolute deadline: a broken transfer fails the test instead of hanging it)
    pulled = conn.pull(11, sds, timeout=datetime.datetime.now() + datetime.timedelta(
        seconds=60))
    # (read now: JAX's pull completes asynchronously, and a transfer still in flight when
    # another server starts in the process never completes)
    got[lib] = top.tree.map(np.asarray, pulled)
    got[lib + "_type"] = type(pulled["a"]).__name__
    assert conn.pull(12, []) == [] and conn.pull(12, {}) == {}
    missing = error_of(lambda: conn.pull(13, [top.ShapeDtypeStruct((2,), np.float32)]))
    got[lib + "_err"] = missing[0]
  assert jax.tree.map(lambda v: v.dtype, got["arrax"]) == jax.tree.map(lambda v: v.dtype,
                                                                         got["jax"])
  assert jax.tree.map(np.ndarray.tolist, got["arrax"]) == jax.tree.map(np.ndarray.tolist,
                                                                        got["jax"])
  assert got["jax_type"] == "ArrayImpl" and got["arrax_type"] == "Array"
  assert got["arrax_err"] == got["jax_err"] == "AttributeError"
  with pytest.raises(NotImplementedError):
    atr.make_error_array(arrax.ShapeDtypeStruct((2,), np.float32), "boom")


# ---- roofline ----------------------------------------------------------------------------------
def _fns(lib):
  top, np_ = LIBS[lib][:2]
  lax = top.lax
  return {
      "mlp": lambda x, w: np_.tanh(x @ w).sum(),
      "elementwise": lambda x, w: np_.exp(x) * 2.0 + np_.sin(x) / (x + 1),
      "cumsum_jit": top.jit(lambda x, w: np_.cumsum(x, axis=1) + lax.cumlogsumexp(x, axis=0)),
      "gather_fill": lambda x, w: x.at[np_.array([0, 5])].get(mode="fill", fill_value=0.0),
      "scatter_add": lambda x, w: x.at[np_.array([0, 1])].add(w[0, :3]),
      "where_max": lambda x, w: np_.where(x > 0, x, w.T[:4, :3]).max(axis=0),
      "scan": lambda x, w: lax.scan(lambda c, r: (c + r, c * r), x[0], x)[1],
      "conv": lambda x, w: lax.conv_general_dilated(
          x[None, None], w[None, None, :2, :2], (2, 1), ((1, 0), (0, 2)), (1, 2), (2, 1)),
      "callbacks": lambda x, w: top.pure_callback(
          np.sin, top.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential") + 1,
  }


def _roofline(lib, name, **kw):
  top = LIBS[lib][0]
  x = top.ShapeDtypeStruct((4, 3), np.float32)
  w = top.ShapeDtypeStruct((3, 5), np.float32)
  shapes, res = LIBS[lib][3].roofline(_fns(lib)[name], **kw)(x, w)
  return [(s.shape, str(s.dtype)) for s in top.tree.leaves(shapes)], dataclasses.asdict(res)


@pytest.mark.parametrize("name", list(_fns("jax")))
def test_roofline_like_jax(name):
  a, j = _roofline("arrax", name), _roofline("jax", name)
  assert a == j and (j[1]["unfused_flops"] or j[1]["flops"] or name == "scan")


def test_roofline_vjp_pins_and_shard_map_like_jax():
  res = {}
  for lib in ("jax", "arrax"):
    top, np_, _, rl = LIBS[lib][:4]
    x = np.ones((4, 3), ml_dtypes.bfloat16)
    w = np.ones((3, 5), ml_dtypes.bfloat16)
    mlp = lambda a, b: np_.tanh(a @ b).sum()   # noqa: E731
    out = [dataclasses.asdict(rl.roofline(mlp, vjp=True)(x, w)[1]),
           dataclasses.asdict(rl.roofline(mlp, pin_lhs_in_vmem=True)(x, w)[1]),
           dataclasses.asdict(rl.roofline(mlp, pin_rhs_in_vmem=True)(x, w)[1])]
    out.append(error_of(lambda: rl.roofline(mlp, vjp=True)(x.astype(np.float32), w))[0])
    mesh = top.sharding.Mesh(np.array(top.devices()[:1]), ("i",))
    P = top.sharding.PartitionSpec
    body = lambda a: top.lax.psum(a * 2, "i")   # noqa: E731
    shapes, fwd, bwd = rl.roofline_and_grad(body, mesh, P("i"), P())(
        top.ShapeDtypeStruct((4,), np.float32))
    out += [(shapes.shape, str(shapes.sharding.spec)), dataclasses.asdict(fwd),
            dataclasses.asdict(bwd)]
    r = rl.RooflineResult(flops=3, ici_bytes={"i": 2}, peak_hbm_bytes=5)
    r2 = r + rl.RooflineResult(flops=1, ici_bytes={"j": 1}, peak_hbm_bytes=2)
    out += [dataclasses.asdict(r2), dataclasses.asdict(2.5 * r2), dataclasses.asdict(r2 * 2)]
    out.append(rl.RooflineShape(shape=(2, 3), dtype=np.dtype("int16")).bytes)
    res[lib] = out
  assert res["arrax"] == res["jax"]


def test_register_roofline_rule():
  results = {}
  for lib in ("jax", "arrax"):
    top, np_, _, rl = LIBS[lib][:4]
    prim = top.extend.core.Primitive(f"twice_{lib}")
    prim.def_impl(lambda x, **_: x * 2)
    prim.def_abstract_eval(lambda x, **_: x)
    seen = []

    @rl.register_roofline(prim)
    def rule(ctx, x, **params):
      seen.append((ctx.primitive.name, x.shape, [a.shape for a in ctx.avals_out], params))
      return rl.RooflineResult(flops=x.size * 10)

    _, r = rl.roofline(lambda v: prim.bind(v, k=1) + 1)(np_.ones(3))
    other = top.extend.core.Primitive(f"nothing_{lib}")
    other.def_abstract_eval(lambda x: x)
    rl.register_standard_roofline(other)
    _, r0 = rl.roofline(lambda v: other.bind(v))(np_.ones(3))
    results[lib] = (r.flops, r.unfused_flops, seen[0][1:], r0.flops, r0.peak_hbm_bytes)
  assert results["arrax"] == results["jax"]


# ---- source_mapper -----------------------------------------------------------------------------
def _source_fn(lib, with_cond):
  top, np_ = LIBS[lib][:2]

  @top.jit
  def g(x):
    return np_.sin(x) + 1.0

  def f(x):
    y = g(x)
    if with_cond:
      y = top.lax.cond(True, lambda v: v * 2, lambda v: v, y)
    return y + np_.cos(y)
  return f


def _dumps(lib, names, with_cond=False):
  top, np_, _, _, sm, _ = LIBS[lib]
  passes = [p for p in sm.all_passes() if p.name in names]
  # (locations hold the innermost frame only: the two libraries see different frames of the
  # test runner as the user's)
  top.config.update("jax_traceback_in_locations_limit", 1)
  try:
    dumps = sm.generate_sourcemaps(_source_fn(lib, with_cond), passes)(np_.ones(3))
  finally:
    top.config.update("jax_traceback_in_locations_limit", 10)
  return {d.pass_name: d for d in dumps}


def test_source_maps_like_jax():
  names = ["jaxpr", "hlo:original"]
  assert [p.name for p in asm.all_passes()] == [p.name for p in jsm.all_passes()]
  # (with a cond, arrax's lowering gives the branch's ops other locations than JAX's: only
  # the jaxpr pass is compared there)
  for with_cond, compared in [(False, names), (True, ["jaxpr"])]:
    a, j = _dumps("arrax", names, with_cond), _dumps("jax", names, with_cond)
    for name in compared:
      assert a[name].generated_code == j[name].generated_code, name
      assert a[name].source_map.to_json() == j[name].source_map.to_json(), name
      assert any(a[name].source_map.mappings)
  # The StableHLO and optimized HLO passes' parsers, on JAX's own texts.
  js = _dumps("jax", ["hlo:stable-hlo", "hlo:optimized"])
  assert (asm.create_mlir_sourcemap(js["hlo:stable-hlo"].generated_code).to_json()
          == js["hlo:stable-hlo"].source_map.to_json())
  opt = js["hlo:optimized"].generated_code
  assert asm.hlo.parse_hlo_dump(opt).to_json() == jsm.hlo.parse_hlo_dump(opt).to_json()
  old = ('  %add = f32[3]{0} add(%x, %y), metadata={op_name="jit(f)/add" '
         'source_file="/a/b.py" source_line=12}\n  ROOT %r = f32[] reduce()')
  assert asm.hlo.parse_hlo_dump(old).to_json() == jsm.hlo.parse_hlo_dump(old).to_json()
  ad = _dumps("arrax", ["hlo:stable-hlo", "hlo:optimized"])
  for name in ad:
    assert ad[name].source_map.sources and any(ad[name].source_map.mappings)


def test_sourcemap_format_like_jax():
  from jax._src import sourcemap as jmap

  from arrax._src import sourcemap as amap
  segs = [[(0,), (4, 0, 3, 6), (10, 1, -2, 0, 3)], [], [(2, 0, 100, -40)]]
  assert amap.serialize_mappings(segs) == jmap.serialize_mappings(segs)
  text = jmap.serialize_mappings(segs)
  assert amap.deserialize_mappings(text) == jmap.deserialize_mappings(text) == segs
  for v in [0, 1, -1, 15, 16, -16, 1023, -123456, 2 ** 40]:
    assert amap.encode_vlq(v) == jmap.encode_vlq(v)
    assert amap.decode_vlq(jmap.encode_vlq(v)) == v
  ga, gj = asm.MappingsGenerator(), jsm.MappingsGenerator()
  for g in (ga, gj):
    with pytest.raises(RuntimeError):
      g.new_segment(1)
    g.new_group()
    g.new_segment(4, 0, 3, 6)
    g.new_segment(9, 1, 1, 2, 0)
    g.new_group()
    g.new_segment(2)
    g.new_segment(3, 0, 7, 1)
  assert ga.mappings() == gj.mappings()
  m = asm.SourceMap(version=3, sources=["a.py"], sources_content=[""], names=["n"],
                    mappings=ga.mappings())
  assert m.to_json() == jsm.SourceMap(version=3, sources=["a.py"], sources_content=[""],
                                      names=["n"], mappings=gj.mappings()).to_json()
  assert asm.SourceMap.from_json(m.to_json()) == m


def test_pass_registry_like_jax():
  for sm in (asm, jsm):
    assert [p.name for p in sm.filter_passes("hlo")] == ["hlo:stable-hlo", "hlo:original",
                                                         "hlo:optimized"]
    assert [p.name for p in sm.filter_passes(".*original")] == ["hlo:original"]
    with pytest.raises(ValueError, match="already registered"):
      sm.register_pass(sm.all_passes()[0])
    dump = sm.SourceMapDump(source_map=None, generated_code="x", pass_name="p")
    assert dump.generated_code == "x"
  assert asm.canonicalize_filename("/a/b.py") == jsm.canonicalize_filename("/a/b.py")
  asm.compile_with_env(lambda x: x * 2, (anp.ones(2),), {}, {}, None)
