"""Smaller jax.* names against JAX 0.10.2: jax.errors' InconclusiveDimensionOperation,
JaxprTypeError (raised by check_jaxpr) and KeyReuseError; jax.sharding's AbstractDevice,
ManualAxisType and make_single_device_sharding; jax.custom_derivatives.linear_call (values,
JVP, transposition, jaxprs, errors); jax.experimental.layout.with_layout_constraint."""
import pickle

import jax
import jax.extend.core as jcore
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import layout as jlayout

import arrax
import arrax.extend.core as acore
import arrax.numpy as anp
from arrax.experimental import layout as alayout
from tests.oracle import (assert_same, check, check_all, check_jaxpr, check_vmap, make_with,
                          raised, same_exception)

LIBS = [(jax, jnp, jcore, jlayout), (arrax, anp, acore, alayout)]


# ---- jax.errors --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["InconclusiveDimensionOperation", "JaxprTypeError",
                                  "KeyReuseError"])
def test_error_classes(name):
  j, a = getattr(jax.errors, name), getattr(arrax.errors, name)
  builtin = lambda c: [b.__name__ for b in c.__mro__ if b.__module__ == "builtins"]
  assert builtin(a) == builtin(j)
  assert issubclass(a, arrax.errors.JAXTypeError) == issubclass(j, jax.errors.JAXTypeError)
  with pytest.raises(a):
    raise a("message")


def test_inconclusive_dimension_operation_from_shape_polymorphism():
  for lib in (jax, arrax):
    a, = lib.export.symbolic_shape("a")
    with pytest.raises(lib.errors.InconclusiveDimensionOperation, match="inconclusive"):
      a >= 2  # noqa: B015
  a, = arrax.export.symbolic_shape("a")
  e = raised(lambda: a >= 2)
  assert [c.__name__ for c in type(e).__mro__][1:3] == ["InconclusiveDimensionOperation",
                                                        "Exception"]


def _bad_jaxprs(top, np_, core):
  j = top.make_jaxpr(lambda x: np_.sin(np_.cos(x)))(1.).jaxpr
  use_before_def = type(j)(j.constvars, j.invars, j.outvars, list(reversed(j.eqns)))
  bound_twice = type(j)(j.constvars, [j.invars[0], j.invars[0]], j.outvars, j.eqns)
  return {"ok": j, "use before definition": use_before_def, "bound twice": bound_twice}


@pytest.mark.filterwarnings("ignore:core.Jaxpr is missing a DebugInfo")
def test_check_jaxpr_raises_jaxpr_type_error():
  (jtop, jnp_, jc, _), (atop, anp_, ac, _) = LIBS
  jbad, abad = _bad_jaxprs(jtop, jnp_, jc), _bad_jaxprs(atop, anp_, ac)
  assert jc.check_jaxpr(jbad["ok"]) is None and ac.check_jaxpr(abad["ok"]) is None
  for name in ["use before definition", "bound twice"]:
    err = raised(lambda name=name: jc.check_jaxpr(jbad[name]))
    assert type(err).__name__ == "JaxprTypeError", name
    e = same_exception(lambda name=name: ac.check_jaxpr(abad[name]), err)
    assert isinstance(e, arrax.errors.JaxprTypeError) and isinstance(e, TypeError)


def test_enable_checks_raises_jaxpr_type_error():
  # A primitive whose rule disagrees with the type its equation declares is caught.
  from arrax._src import core
  j = arrax.make_jaxpr(lambda x: anp.sin(x))(1.).jaxpr
  eqn = j.eqns[0]
  wrong = core.Var(core.ShapedArray((2,), np.float32))
  bad = core.Jaxpr([], j.invars, [wrong], [core.JaxprEqn(eqn.invars, [wrong], eqn.primitive,
                                                         eqn.params)])
  with pytest.raises(arrax.errors.JaxprTypeError, match="declares output"):
    core.check_jaxpr(bad)


# ---- jax.sharding ------------------------------------------------------------------------------
def _sharding_probe(top):
  S = top.sharding
  dev = top.devices()[0]
  ad = S.AbstractDevice(device_kind="TPU v6 lite", num_cores=1, platform="tpu")
  M = S.ManualAxisType
  a = M(varying={"x"})
  mesh = S.Mesh(np.array(top.devices()), ("x",))
  out = {
      "single": repr(S.make_single_device_sharding(dev)),
      "single kind": repr(S.make_single_device_sharding(dev, memory_kind="device")),
      "single eq": S.make_single_device_sharding(dev) == S.SingleDeviceSharding(dev),
      "device repr": repr(ad),
      "device eq": (ad == S.AbstractDevice("TPU v6 lite", 1, "tpu"),
                    hash(ad) == hash(S.AbstractDevice("TPU v6 lite", 1, "tpu")),
                    ad == S.AbstractDevice("TPU v6 lite", 2, "tpu")),
      "abstract mesh": repr(S.AbstractMesh((2,), ("x",), abstract_device=ad)),
      "mesh's abstract mesh": repr(mesh.abstract_mesh),
      "mesh's abstract device": repr(mesh.abstract_mesh.abstract_device),
      "mat": [repr(a), repr(M()), repr(a.update(reduced={"y"})),
              repr(M(unreduced={"u"}, reduced={"r"}).to_ct_mat()), sorted(a.vur),
              M().empty, a.empty],
      "interned": (a is M(varying=frozenset({"x"})), pickle.loads(pickle.dumps(a)) is a,
                   M() is M()),
  }
  for label, thunk in [("frozen", lambda: setattr(ad, "platform", "cpu")),
                       ("vu", lambda: M(varying={"x"}, unreduced={"x"})),
                       ("vr", lambda: M(varying={"x", "y"}, reduced={"y"}))]:
    e = raised(thunk)
    out[label] = (type(e).__name__, str(e))
  return out


def test_sharding_names():
  j, a = _sharding_probe(jax), _sharding_probe(arrax)
  diffs = [f"{k}: arrax {a[k]!r} jax {j[k]!r}" for k in j if a[k] != j[k]]
  assert not diffs, "\n".join(diffs)


# ---- linear_call -------------------------------------------------------------------------------
def _lc(top):
  return top.custom_derivatives.linear_call


def scale(np_, top):
  # fun(r, x) = r * x with a deliberately different transpose (7 * ct), so the tests can tell
  # which rule ran.
  return lambda x, r: _lc(top)(lambda r, x: r * x, lambda r, ct: 7. * ct, r, x)


def trees(np_, top):
  def f(x):
    return _lc(top)(lambda r, x: {"a": x[0] * r["s"], "b": np_.sum(x[1], 0)},
                    lambda r, ct: (ct["a"] * r["s"] + 1., np_.broadcast_to(ct["b"], (2, 3))),
                    {"s": np_.float32(2.)}, (x, np_.stack([x, x])))
  return f


def closing(np_, top):
  # fun and its transpose close over an array.
  w = np_.array([1., -2., 3.], np_.float32)
  return lambda x: _lc(top)(lambda r, x: w * x + r * x, lambda r, ct: w * ct, 0.5, x)


X3 = np.array([0.5, 1.5, -2.], np.float32)


def test_linear_call():
  b = make_with("np", "top")
  grad_scale = lambda np_, top: top.grad(scale(np_, top))
  check_all([
      ("values", lambda: check(scale, np.float32(2.), np.float32(3.), build=b, jit=True)),
      ("tree values", lambda: check(trees, X3, build=b, jit=True, strict_tree=True)),
      ("closure values", lambda: check(closing, X3, build=b, jit=True)),
      ("grad uses fun_transpose", lambda: check(grad_scale, np.float32(2.), np.float32(3.),
                                                build=b, jit=True)),
      ("jvp", lambda: check(lambda np_, top: lambda x, t: top.jvp(
          lambda x: scale(np_, top)(x, 3.), (x,), (t,)), np.float32(2.), np.float32(0.5),
          build=b, jit=True)),
      ("vjp tree", lambda: check(lambda np_, top: lambda x, ct: top.vjp(trees(np_, top), x)[1](
          ct), X3, {"a": X3 * 2, "b": np.ones(3, np.float32)}, build=b, jit=True)),
      ("vjp closure", lambda: check(lambda np_, top: lambda x: top.vjp(closing(np_, top), x)[1](
          np_.ones(3)), X3, build=b)),
      ("linear_transpose", lambda: check(lambda np_, top: lambda x: top.linear_transpose(
          lambda t: scale(np_, top)(t, 3.), x)(np_.float32(1.)), np.float32(2.), build=b)),
      ("transpose of transpose", lambda: check(lambda np_, top: lambda x: top.linear_transpose(
          top.linear_transpose(lambda t: scale(np_, top)(t, 3.), x), x)(np_.float32(1.)),
          np.float32(2.), build=b)),
      ("grad of tree", lambda: check(lambda np_, top: top.grad(
          lambda x: trees(np_, top)(x)["a"].sum() + trees(np_, top)(x)["b"].sum()), X3,
          build=b)),
      ("jaxpr of grad", lambda: check_jaxpr(grad_scale, np.float32(2.), np.float32(3.),
                                            build=b)),
      ("jaxpr of tree", lambda: check_jaxpr(trees, X3, build=b)),
      ("vmap (no rule, as JAX)", lambda: check(lambda np_, top: top.vmap(scale(np_, top)), X3,
                                               X3, build=b)),
      ("wrong transpose structure", lambda: check(lambda np_, top: top.grad(
          lambda x: _lc(top)(lambda r, x: x, lambda r, ct: (ct, ct), 1., x)), np.float32(1.),
          build=b)),
  ])


# ---- with_layout_constraint --------------------------------------------------------------------
def test_with_layout_constraint():
  def wlc(np_, top, layouts, fn=lambda x: x):
    L = {jnp: jlayout, anp: alayout}[np_]
    lay = jax.tree_util.tree_map(lambda m: L.Layout(m), layouts,
                                 is_leaf=lambda t: isinstance(t, tuple))
    return lambda x: L.with_layout_constraint(fn(x), lay)

  x = np.arange(6.).reshape(2, 3).astype(np.float32)
  b = make_with("np", "top")
  check_all([
      ("eager", lambda: check(lambda np_, top: wlc(np_, top, (1, 0)), x, build=b)),
      ("jit column major", lambda: check(lambda np_, top: wlc(np_, top, (0, 1),
                                                              lambda x: x * 2 + 1),
                                         x, build=b, eager=False, jit=True)),
      ("tree prefix", lambda: check(lambda np_, top: wlc(np_, top, [(0, 1), (0,)]),
                                    [x, x[0]], build=b, jit=True)),
      ("grad", lambda: check(lambda np_, top: top.grad(lambda x: (wlc(np_, top, (0, 1))(x)
                                                                  ** 2).sum()), x, build=b)),
      ("jaxpr", lambda: check_jaxpr(lambda np_, top: top.jit(wlc(np_, top, (0, 1),
                                                                 lambda x: x * 2)), x, build=b)),
      ("vmap jaxpr", lambda: check_jaxpr(lambda np_, top: top.vmap(wlc(np_, top, (0,)),
                                                                    in_axes=1), x, build=b)),
      ("vmap", lambda: check_vmap(lambda np_, top: wlc(np_, top, (0,)), x, build=b,
                                  in_axes=1)),
      ("rank mismatch", lambda: check(lambda np_, top: wlc(np_, top, (0,)), x, build=b)),
      ("not a layout", lambda: check(lambda np_, top: lambda x: {jnp: jlayout, anp: alayout}[
          np_].with_layout_constraint(x, "a"), x, build=b)),
      ("eager numpy", lambda: check(lambda np_, top: wlc(np_, top, (1, 0)), x, build=b,
                                    convert=None)),
  ])
  lowered = arrax.jit(wlc(anp, arrax, (0, 1))).lower(x).as_text()
  assert "LayoutConstraint" in lowered and "result_layouts = [dense<[1, 0]>" in lowered


# ---- jax.extend.random -------------------------------------------------------------------------
def _extend_random_probe(top, r):
  i = r.threefry_prng_impl
  k = i.seed(np.uint32(5))
  out = {
      "impl": (str(i), i.name, i.tag, i.key_shape, hash(i) == hash("fry"), type(i).__name__),
      "seed": i.seed(np.uint32(5)), "seed int64": i.seed(np.int64(2 ** 40 + 3)),
      "split": i.split(k, (2, 3)), "fold_in": i.fold_in(k, np.uint32(3)),
      "bits32": i.random_bits(k, 32, (3,)), "bits8": i.random_bits(k, 8, (2, 2)),
      "bits16": i.random_bits(k, 16, (5,)),
      "random_seed": top.random.key_data(r.random_seed(np.arange(3), impl=i)),
      "random_seed 2d": top.random.key_data(r.random_seed(np.arange(4).reshape(2, 2), i)),
      "random_seed int": top.random.key_data(r.random_seed(7, i)),
      "seed_with_impl": top.random.key_data(r.seed_with_impl(i, 7)),
      "key dtype": str(r.seed_with_impl(i, 7).dtype),
      "key with impl": top.random.normal(top.random.key(1, impl=i), (2,)),
      "hash pair": r.threefry_2x32((np.uint32(1), np.uint32(2)), np.arange(5, dtype=np.uint32)),
      "hash array": r.threefry_2x32(np.array([1, 2], np.uint32),
                                    np.arange(6, dtype=np.uint32).reshape(2, 3)),
      "hash jit": top.jit(r.threefry_2x32)(np.array([3, 4], np.uint32),
                                           np.arange(7, dtype=np.uint32)),
      "prim": r.threefry2x32_p.bind(np.uint32(1), np.uint32(2), np.arange(3, dtype=np.uint32),
                                    np.arange(3, dtype=np.uint32) + 5),
      "prim name": (str(r.threefry2x32_p), r.threefry2x32_p.multiple_results),
  }
  e = raised(lambda: r.threefry_2x32((np.int32(1), np.uint32(2)), np.arange(5, dtype=np.uint32)))
  out["hash error"] = (type(e).__name__, str(e).split(",")[0])
  return out


def test_extend_random():
  import jax.extend.random as jr

  import arrax.extend.random as ar
  j, a = _extend_random_probe(jax, jr), _extend_random_probe(arrax, ar)
  assert set(a) == set(j)
  for k in j:
    if isinstance(j[k], (tuple, str)):
      assert a[k] == j[k], k
    else:
      assert_same(a[k], j[k])
  # An implementation whose seed does not give its key shape: JAX's TypeError.
  def bad(mod):
    spec = mod.rbg_prng_impl._replace()
    return mod.threefry_prng_impl._replace(name=spec.name, tag=spec.tag, key_shape=spec.key_shape)
  for fn in (lambda m, top: m.random_seed(0, bad(m)), lambda m, top: top.random.key(0, impl=bad(m))):
    with pytest.raises(TypeError, match=r"expected key_data.shape to end with \(4,\); got shape=\(2,\)"):
      fn(jr, jax)
    with pytest.raises(TypeError, match=r"expected key_data.shape to end with \(4,\); got shape=\(2,\)"):
      fn(ar, arrax)


# ---- jax.extend.mlir ---------------------------------------------------------------------------
def test_extend_mlir():
  import jax.extend.mlir as jm

  import arrax.extend.mlir as am
  for name in ["deserialize_portable_artifact", "serialize_portable_artifact",
               "refine_polymorphic_shapes", "hlo_to_stablehlo"]:
    assert getattr(am, name) is getattr(jm, name)   # jaxlib's functions
  # A lowering rule ending with lower_with_sharding_in_types, as JAX's rules do.
  from jaxlib.mlir.dialects import stablehlo as hlo

  from arrax.interpreters import mlir
  twice_p = acore.Primitive("twice_for_test")
  twice_p.def_abstract_eval(lambda x: x)

  def lowering(ctx, x):
    out = hlo.add(x, x)
    return [am.lower_with_sharding_in_types(ctx, out, ctx.avals_out[0])]
  mlir.register_lowering(twice_p, lowering)
  x = np.arange(3., dtype=np.float32)
  assert_same(arrax.jit(twice_p.bind)(x), anp.asarray(2 * x))
  assert_same(twice_p.bind(anp.asarray(x)), anp.asarray(2 * x))
