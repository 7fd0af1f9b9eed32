"""Cases of tests/test_sharding_in_types.py, run in a subprocess with 8 simulated CPU devices.

Each case is a function `(jax, jnp) -> value` run once with arrax and once with JAX 0.10.2 over
Explicit mesh axes (the default of `make_mesh`). `describe` turns arrays into their type
(`jax.typeof` printed, e.g. `float32[8@x,4]`), their sharding's repr and their values, types
into their str and their sharding's repr, and exceptions into (builtin base class, message), so
the two results compare with `==`. This module imports neither library itself.
"""
import json
import sys
import traceback

import numpy as np

from tests.multidevice import builtin_base, first_difference, same

CASES = {}


def case(fn):
  CASES[fn.__name__] = fn
  return fn


def _type(jax, x):
  t = jax.typeof(x)
  s = t.sharding
  # (arrax's types hold no sharding when nothing is split over Explicit axes: JAX's hold one
  # over an empty abstract mesh or with an all-None spec, which means the same)
  shown = None if s is None or all(p is None for p in s.spec) else repr(s)
  return [str(t), repr(t), shown]


def describe(jax, x):
  """Plain, comparable data for arrays, types, jaxprs and containers."""
  if hasattr(x, "addressable_shards") and hasattr(x, "dtype"):
    v = np.asarray(x)
    return {"type": _type(jax, x), "sharding": repr(x.sharding), "dtype": str(v.dtype),
            "value": v.astype(np.float64).round(4).tolist()}
  if type(x).__name__ == "ShapedArray":
    s = x.sharding
    return [str(x), None if s is None or all(p is None for p in s.spec) else repr(s)]
  if type(x).__name__ == "ClosedJaxpr":
    return str(x)
  if isinstance(x, dict):
    return {str(k): describe(jax, v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [describe(jax, v) for v in x]
  if isinstance(x, (bool, int, float, str, type(None))):
    return x
  return repr(x)


def _error(e, message=True):
  return ["error", builtin_base(e).__name__] + ([str(e).split("\n")[0]] if message else [])


def _mesh(jax):
  return jax.make_mesh((2, 4), ("x", "y"))


def _arrays(jax):
  """x: (8, 4) split over x; y: over x and y; w: rows over y (all on the 2x4 Explicit mesh)."""
  m = _mesh(jax)
  ns = jax.sharding.NamedSharding
  P = jax.sharding.PartitionSpec
  v = np.arange(32.0, dtype=np.float32).reshape(8, 4) / 8
  return (m, jax.device_put(v, ns(m, P("x"))), jax.device_put(v + 1, ns(m, P("x", "y"))),
          jax.device_put(v - 1, ns(m, P("y"))))


def _jaxpr(jax, f, *args):
  return str(jax.make_jaxpr(f)(*args))


def _try(fn, message=True):
  try:
    return fn()
  except Exception as e:  # noqa: BLE001
    return _error(e, message)


# ---- types of placed arrays --------------------------------------------------------------------
@case
def typeof_placed_arrays(jax, jnp):
  m, x, y, w = _arrays(jax)
  P, ns = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  z = jax.device_put(np.ones((8, 4), np.int32), ns(m, P(("x", "y"))))
  s = jax.device_put(np.float32(3), ns(m, P()))
  t = jax.typeof(x)
  return [x, y, w, z, s, repr(t.sharding.mesh), repr(t.sharding.spec), t.shape, str(t.dtype),
          t.ndim, t.str_short(short_dtypes=True), t.str_short(mesh_axis_types=True)]


@case
def typeof_mixed_axis_types(jax, jnp):
  AT = jax.sharding.AxisType
  m = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AT.Explicit, AT.Auto))
  P, ns = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  v = jax.device_put(np.ones((8, 4), np.float32), ns(m, P("x", "y")))
  a = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AT.Auto, AT.Auto))
  u = jax.device_put(np.ones((8, 4), np.float32), ns(a, P("x", "y")))
  return [_type(jax, v), repr(jax.typeof(v).sharding.spec), str(jax.typeof(u)),
          str(jax.typeof(v * 2)), np.asarray(v * 2).sum()]


# ---- elementwise -------------------------------------------------------------------------------
@case
def eager_elementwise(jax, jnp):
  _, x, y, w = _arrays(jax)
  return [x + 1, x * y, jnp.sin(y), x.astype(jnp.int32), -w, x + jnp.ones((8, 4)),
          x + jnp.ones(4), jnp.where(x > 1, x, 0.0), jnp.maximum(y, 2.0), x > y]


@case
def error_elementwise_conflict(jax, jnp):
  _, x, y, w = _arrays(jax)
  return [_try(lambda: x + w), _try(lambda: jax.make_jaxpr(lambda a, b: a * b)(y, w)),
          _try(lambda: jnp.where(x > 0, x, w))]


@case
def jaxpr_elementwise_and_reductions(jax, jnp):
  _, x, y, _ = _arrays(jax)
  return [_jaxpr(jax, lambda a: jnp.sin(a).sum(0), x),
          _jaxpr(jax, lambda a, b: (a * b + 1.0).max(1), x, y),
          _jaxpr(jax, lambda a: jnp.where(a > 1, a, 0.0), x),
          _jaxpr(jax, lambda a: a.astype(jnp.int32), y),
          _jaxpr(jax, lambda a: jnp.argmax(a, 1), x)]


@case
def dtypes_and_scalars(jax, jnp):
  _, x, y, _ = _arrays(jax)
  b = x.astype(jnp.bfloat16)
  i = y.astype(jnp.int8)
  c = jax.lax.complex(x, x)
  return [b * 2, jnp.exp(b), i + 1, i.sum(1), (x > 1) & (y < 3), jnp.abs(c), c * 1j,
          x * np.float32(2), x + jnp.float32(1), jnp.where(True, x, 0.0), jnp.zeros((0, 4)) + 1]


@case
def x64_types(jax, jnp):
  m = _mesh(jax)
  P, ns = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  jax.config.update("jax_enable_x64", True)
  try:
    v = jax.device_put(np.arange(32.0).reshape(8, 4), ns(m, P("x", "y")))
    return [v, v.sum(0), v.astype(jnp.int64) * 2, _jaxpr(jax, lambda a: jnp.cos(a).sum(1), v)]
  finally:
    jax.config.update("jax_enable_x64", False)


# ---- reductions --------------------------------------------------------------------------------
@case
def reductions(jax, jnp):
  _, x, y, _ = _arrays(jax)
  return [x.sum(0), x.sum(1), y.max(1), y.min(0), jnp.argmax(y, 1), jnp.argmin(x, 0),
          y.sum(), jnp.prod(x, 1), jnp.any(x > 2, 1), jax.lax.reduce_sum(y, (0,))]


@case
def cumulative_and_sort(jax, jnp):
  _, x, y, _ = _arrays(jax)
  return [jnp.cumsum(x, 1), _try(lambda: jnp.cumsum(x, 0)), jnp.sort(x, 1),
          _try(lambda: jnp.sort(x, 0)),
          _try(lambda: jax.lax.cummax(y, 1))]


# ---- shapes ------------------------------------------------------------------------------------
@case
def shape_ops(jax, jnp):
  _, x, y, _ = _arrays(jax)
  return [x[None], jnp.expand_dims(y, 1), jnp.squeeze(x[:, :1], 1), jnp.transpose(y),
          jnp.broadcast_to(x[:, :1], (8, 4)), x[:, 1:3], jnp.concatenate([x, x], 1),
          jnp.concatenate([y, y], 0), jnp.pad(x, ((0, 0), (1, 1))), jnp.flip(y, 1),
          jax.lax.dynamic_slice(x, (0, 1), (8, 2))]


@case
def jaxpr_shape_ops(jax, jnp):
  _, x, y, _ = _arrays(jax)
  return [_jaxpr(jax, lambda a: a[None].reshape(8, 4).T[:, 2:], x),
          _jaxpr(jax, lambda a: a[2:], x),
          _jaxpr(jax, lambda a: jnp.concatenate([a, a], 0), x),
          _jaxpr(jax, lambda a: jnp.expand_dims(a, 2), y)]


@case
def reshapes(jax, jnp):
  _, x, y, _ = _arrays(jax)
  return [x.reshape(2, 4, 4), x.reshape(32), x.reshape(8, 1, 4), y.reshape(8, 4, 1),
          x.reshape(4, 2, 4), _try(lambda: x.reshape(4, 8)), _try(lambda: y.reshape(32)),
          _jaxpr(jax, lambda a: a.reshape(2, 4, 4), x)]


@case
def error_slicing_sharded_dims(jax, jnp):
  _, x, y, w = _arrays(jax)
  # (JAX indexes with a gather where the slice would not split evenly, and raises the gather's
  # error; arrax slices and raises slice's: only the class is compared)
  return [_try(lambda: x[1:], False), _try(lambda: y[:, 1:], False),
          _try(lambda: jax.lax.slice(x, (1, 0), (8, 4)), False),
          _try(lambda: jnp.concatenate([x, w], 0)), _try(lambda: jnp.concatenate([x, y], 1))]


# ---- dot_general -------------------------------------------------------------------------------
@case
def dots(jax, jnp):
  m, x, _y, w = _arrays(jax)
  P, ns = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  b = jax.device_put(np.ones((2, 4, 4), np.float32), ns(m, P("x", None, "y")))
  return [x @ jnp.ones((4, 3)), jnp.dot(w, x.T), jnp.einsum("ij,kj->ik", x, w), jnp.einsum("ij,ij->i", x, x),
          jnp.einsum("bij,bjk->bik", b, jnp.ones((2, 4, 3))), jnp.matmul(b, jnp.ones((4, 4)))]


@case
def error_dots(jax, jnp):
  _, x, _, w = _arrays(jax)
  return [_try(lambda: x.T @ x), _try(lambda: w @ w.T), _try(lambda: x.T @ w),
          _try(lambda: jax.make_jaxpr(lambda a: a @ a.T)(x))]


@case
def dots_with_out_sharding(jax, jnp):
  m, x, _y, _ = _arrays(jax)
  P = jax.sharding.PartitionSpec
  with jax.set_mesh(m):
    return [jnp.dot(x.T, x, out_sharding=P("x")), jnp.matmul(x.T, x, out_sharding=P(None, "y")),
            jax.lax.dot_general(x, x, (((0,), (0,)), ((), ())), out_sharding=P("y")),
            jnp.einsum("ij,ik->jk", x, x, out_sharding=P("x")),
            jnp.einsum("ij,ik,kl->jl", x, x, jnp.ones((4, 2)), out_sharding=P("y")),
            _jaxpr(jax, lambda a: jnp.dot(a.T, a, out_sharding=P("x")), x),
            _try(lambda: jnp.dot(x.T, x, out_sharding=P("x", "x")))]


# ---- creation with out_sharding ----------------------------------------------------------------
@case
def creation_out_sharding(jax, jnp):
  m, x, _y, _ = _arrays(jax)
  P = jax.sharding.PartitionSpec
  with jax.set_mesh(m):
    return [jnp.zeros((8, 4), out_sharding=P("x")), jnp.ones((8, 4), jnp.int32,
                                                            out_sharding=P(None, "y")),
            jnp.full((8, 4), 2.5, out_sharding=P("x", "y")), jnp.empty((4,), out_sharding=P("y")),
            jnp.arange(8, out_sharding=P("x")), jnp.arange(2, 10, out_sharding=P("y")),
            jnp.zeros_like(x, out_sharding=P(None, "y")),
            jnp.full_like(x, 3, out_sharding=P("y")),
            jnp.array(np.ones((8, 4), np.float32), out_sharding=P("x")),
            jnp.asarray(np.arange(8.0, dtype=np.float32), out_sharding=P("y")),
            jnp.broadcast_to(jnp.ones(4), (8, 4), out_sharding=P("x")),
            jax.lax.broadcasted_iota(jnp.int32, (8, 4), 1, out_sharding=P("x")),
            jax.lax.full((8,), 1.0, jnp.float32,
                         sharding=jax.sharding.NamedSharding(m, P("x"))),
            # (JAX places these over the mesh, replicated; arrax's types name no mesh when
            # nothing is split, so they stay on one device: only the types are compared)
            _type(jax, jnp.zeros((8, 4))), _type(jax, jnp.arange(8))]


@case
def jaxpr_creation(jax, jnp):
  m = _mesh(jax)
  P = jax.sharding.PartitionSpec
  with jax.set_mesh(m):
    return [_jaxpr(jax, lambda: jnp.zeros((8, 4), out_sharding=P("x"))),
            _jaxpr(jax, lambda: jnp.arange(8, out_sharding=P("x"))),
            _jaxpr(jax, lambda a: a.reshape(32, out_sharding=P("y")), jnp.ones((8, 4))),
            _try(lambda: jnp.zeros((6,), out_sharding=P("y")))]


@case
def error_out_sharding_without_mesh(jax, jnp):
  P = jax.sharding.PartitionSpec
  return [_try(lambda: jnp.zeros((8,), out_sharding=P("x"))),
          _try(lambda: jnp.dot(jnp.ones((2, 2)), jnp.ones((2, 2)), out_sharding=P("x")))]


# ---- reshard, auto_axes, explicit_axes ---------------------------------------------------------
@case
def reshard_types(jax, jnp):
  m, x, y, w = _arrays(jax)
  P, ns = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  rs = jax.sharding.reshard
  with jax.set_mesh(m):
    a = rs(x, P(None, "y"))
    b = rs(y, P())
    jx = _jaxpr(jax, lambda v: rs(v, P(None, "y")) * 2, x)
  c = rs(x, ns(m, P("y", "x")))
  return [a, b, c, jx, rs(x, ns(m, P("y"))) + w]


@case
def auto_and_explicit_axes(jax, jnp):
  m, x, y, _ = _arrays(jax)
  P = jax.sharding.PartitionSpec
  seen = []

  def contract(a):
    seen.append(str(jax.typeof(a)))
    return a.T @ a

  with jax.set_mesh(m):
    out = jax.sharding.auto_axes(contract, out_sharding=P("x"))(x)
    out2 = jax.sharding.auto_axes(contract, axes="x", out_sharding=P(None, "y"))(y)
    jx = _jaxpr(jax, jax.sharding.auto_axes(lambda a: a.T @ a, out_sharding=P("x")), x)
  AT = jax.sharding.AxisType
  am = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AT.Auto, AT.Auto))

  def inner(a):
    seen.append(str(jax.typeof(a)))
    return a * 2

  with jax.set_mesh(am):
    out3 = jax.sharding.explicit_axes(inner, in_sharding=P("x"))(np.ones((8, 4), np.float32))
  return [out, out2, str(jax.typeof(out3)), np.asarray(out3).sum(), seen,
          jx.count("dot_general")]


# ---- jit -------------------------------------------------------------------------------------
@case
def jit_results(jax, jnp):
  _, x, y, w = _arrays(jax)
  f = jax.jit(lambda a: (a * 2, a.sum(0), a.sum(1)))
  g = jax.jit(lambda a, b: a @ b.T)
  return [f(x), f(y), g(x, jnp.ones((3, 4))), _jaxpr(jax, f, x),
          jax.jit(lambda a, b: a + b)(x, y), _try(lambda: jax.jit(lambda a, b: a + b)(x, w))]


@case
def jit_in_and_out_shardings(jax, jnp):
  m = _mesh(jax)
  P, ns = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  f = jax.jit(lambda a: a + 1, in_shardings=ns(m, P("x")), out_shardings=ns(m, P(None, "y")))
  v = np.arange(32.0, dtype=np.float32).reshape(8, 4)
  out = f(v)
  h = jax.jit(lambda a: jnp.sin(a) * 2, in_shardings=ns(m, P("y")))
  return [out, h(v), jax.jit(lambda a: a * 3)(out)]


@case
def eval_shape_and_structs(jax, jnp):
  m, x, _, _ = _arrays(jax)
  P, ns = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  s = jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=ns(m, P("x")))
  o1 = jax.eval_shape(lambda a: a * 2, x)
  o2 = jax.eval_shape(lambda a: a.sum(1), s)
  return [repr(o1), repr(o2.sharding), _jaxpr(jax, lambda a: a.sum(1), s),
          str(jax.jit(lambda a: a * 2).trace(s).jaxpr)]


# ---- transformations ---------------------------------------------------------------------------
@case
def grad_and_vmap(jax, jnp):
  m, x, y, _ = _arrays(jax)
  with jax.set_mesh(m):
    g = jax.grad(lambda a: (jnp.sin(a) * a).sum())(x)
    g2 = jax.jit(jax.grad(lambda a, b: (a * b).sum(), argnums=(0, 1)))(x, y)
    _, vjp = jax.vjp(lambda a: a.reshape(2, 4, 4) * 2, x)
    ct = vjp(jnp.ones((2, 4, 4)))
  v1 = jax.vmap(lambda a: a * 2, in_axes=1)(x)
  v2 = jax.vmap(lambda a: a.sum())(x)
  return [g, g2, ct, v1, v2, _jaxpr(jax, jax.vmap(lambda a: jnp.sin(a) * 2, in_axes=1), x),
          _jaxpr(jax, jax.vmap(lambda a: a * 2), y)]


@case
def jvp_keeps_sharding(jax, jnp):
  _, _, y, _ = _arrays(jax)
  p, t = jax.jvp(lambda a: jnp.sin(a) * 2, (y,), (y,))
  return [p, t, _jaxpr(jax, lambda a, b: jax.jvp(jnp.sin, (a,), (b,)), y, y)]


@case
def library_ops(jax, jnp):
  m, x, y, _ = _arrays(jax)
  with jax.set_mesh(m):
    return [x.mean(1), jax.nn.softmax(x, axis=1), jax.nn.logsumexp(x, axis=1), jnp.var(y, 1),
            jnp.clip(y, 0.5, 1.0), jnp.stack([x, x], 1), jnp.tile(x, (1, 2)),
            jnp.roll(x, 1, axis=1), x.at[:, 0].set(1.0), x.at[:, 1:3].add(2.0),
            x[:, :, None] * y[:, None, :], x.sum(1, keepdims=True),
            jax.random.normal(jax.random.key(0), (8, 4)) + x]


@case
def control_flow_and_grads(jax, jnp):
  m, x, y, _ = _arrays(jax)
  with jax.set_mesh(m):
    return [jax.lax.cond(True, lambda a: a * 2, lambda a: a + 1, x),
            jax.lax.fori_loop(0, 3, lambda i, c: c * 2, y),
            jax.lax.scan(lambda c, _: (c * 2, None), y, None, length=3)[0],
            jax.lax.scan(lambda c, a: (c + a, a * 2), jnp.zeros(8), y.T)[1],
            _try(lambda: jax.lax.scan(lambda c, a: (c + a, a), jnp.zeros(4), x)),
            jax.grad(lambda w, a: jnp.tanh(a @ w).sum())(jnp.ones((4, 3)), x),
            jax.jit(jax.grad(lambda w, a: jnp.tanh(a @ w).sum(), argnums=(0, 1)))(
                jnp.ones((4, 3)), x),
            jax.grad(jax.checkpoint(lambda a: jnp.sin(a).sum()))(x),
            jax.grad(lambda a: jax.nn.gelu(a).sum())(x),
            jax.vmap(lambda r: r @ jnp.ones((4,)))(x)]


@case
def control_flow_type_checks(jax, jnp):
  m, x, _, w = _arrays(jax)
  P, rs = jax.sharding.PartitionSpec, jax.sharding.reshard
  cond, loop = jax.lax.cond, jax.lax.while_loop
  a = jnp.zeros((8, 4))   # (made outside the mesh: JAX's type then names no mesh, as arrax's)
  grad_cond = jax.grad(lambda u: cond(u.sum() > 0, lambda v: (v * 2).sum(),
                                      lambda v: jnp.sin(v).sum(), u))
  with jax.set_mesh(m):
    return [_try(lambda: cond(True, lambda: x, lambda: w)),
            _try(lambda: jax.lax.switch(1, [lambda: x, lambda: w, lambda: x])),
            _try(lambda: jax.jit(lambda p, u, v: cond(p, lambda: u, lambda: v))(True, x, w)),
            _try(lambda: cond(True, lambda: (x, x), lambda: (x, w))),
            _try(lambda: cond(True, lambda v: v, lambda v: rs(v, P(None, "y")), x)),
            cond(True, lambda: a, lambda: x),
            _jaxpr(jax, lambda p, u: cond(p, lambda: u, lambda: a), True, x),
            _try(lambda: loop(lambda c: c.sum() < 10, lambda c: rs(c * 2, P("y")), x)),
            loop(lambda c: c.sum() < 100, lambda c: c + x, a),
            _try(lambda: jax.lax.fori_loop(0, 3, lambda i, c: rs(c * 2, P("y")), x)),
            _try(lambda: jax.lax.scan(lambda c, _: (rs(c, P("y")), None), x, None, length=2)),
            _try(lambda: jax.jit(lambda u: loop(lambda c: c.sum() < 100,
                                                lambda c: rs(c * 2, P(None, "y")), u))(x)),
            grad_cond(x),
            # (the forward cond, its residual slots typed; JAX's backward pass then reshards
            # the 1.0 it starts from to the mesh, which arrax's types do not name)
            _jaxpr(jax, grad_cond, x).split("] d a")[0]]


@case
def vmap_over_explicit_axes(jax, jnp):
  m, x, y, w = _arrays(jax)
  P, rs = jax.sharding.PartitionSpec, jax.sharding.reshard
  seen = []

  def look(v):
    seen.append(str(jax.typeof(v)))
    return v
  with jax.set_mesh(m):
    out = [jax.vmap(lambda r: look(r) * 2, spmd_axis_name="x")(x),
           _try(lambda: jax.vmap(lambda r: r * 2, spmd_axis_name="y")(x)),
           _type(jax, jax.vmap(lambda r: look(r) * 2, spmd_axis_name="x")(jnp.ones((8, 4)))),
           _jaxpr(jax, jax.vmap(lambda r: r * 2, spmd_axis_name="x"), jnp.ones((8, 4))),
           _try(lambda: jax.vmap(lambda a, b: a + b)(x, w)),
           _try(lambda: jax.vmap(lambda a, b: a + b)(x, jnp.ones((8, 4)))),
           _try(lambda: jax.vmap(lambda a, b: a + b.sum(), in_axes=(0, None))(x, x)),
           jax.vmap(lambda a, b: a + b, in_axes=(0, None))(x, w),
           jax.vmap(lambda r: look(r) * 2, in_axes=1)(y),
           jax.vmap(lambda r: look(r) * 2, in_axes=1, out_axes=1)(y),
           jax.vmap(lambda r: look(r.sum()))(x),
           jax.vmap(lambda r: look(r @ jnp.ones((4, 3))))(x),
           jax.vmap(lambda r: look(rs(r, P("y"))))(x),
           jax.vmap(lambda r: jnp.dot(r, jnp.ones((4, 4)), out_sharding=P("y")))(x),
           _try(lambda: jax.vmap(lambda r: jnp.dot(r, jnp.ones((4, 3)), out_sharding=P("y")))(x),
                False),
           _type(jax, jax.vmap(lambda r: jnp.ones(3), axis_size=8, in_axes=None)(x)),
           jax.vmap(lambda r: jnp.ones(3))(x),
           jax.vmap(jax.vmap(lambda e: look(e) * 2), in_axes=1)(y),
           jax.vmap(jax.jit(lambda r: look(r) + 1))(x),
           _jaxpr(jax, jax.vmap(lambda r: jnp.sin(rs(r, P("y"))).sum()), x),
           jax.grad(lambda a: jax.vmap(lambda r: (r ** 2).sum())(a).sum())(x)]
    keys = jax.device_put(jax.random.split(jax.random.key(1), 8),
                          jax.sharding.NamedSharding(m, P("x")))
    # (arrax's key types hold no sharding yet: only the values are compared)
    out.append(np.asarray(jax.vmap(lambda k: jax.random.normal(k, (4,)))(keys)).tolist())
  return out + [seen]


# ---- what JAX raises -----------------------------------------------------------------------------
@case
def gather_and_scatter_on_sharded_operands(jax, jnp):
  m, x, _, _ = _arrays(jax)
  P = jax.sharding.PartitionSpec
  idx = jnp.array([0, 3])
  with jax.set_mesh(m):
    return [_try(lambda: x[idx]), x[:, idx], x.at[idx].get(out_sharding=P("y")),
            _try(lambda: x.at[idx].set(0.0)), x.at[idx].set(0.0, out_sharding=P("x")),
            x.at[:, idx].add(1.0)]


# ---- out_sharding of samplers, conv and scatter-based functions ----------------------------------
@case
def random_out_sharding(jax, jnp):
  m = _mesh(jax)
  P = jax.sharding.PartitionSpec
  R, init = jax.random, jax.nn.initializers
  k = R.key(0)
  with jax.set_mesh(m):
    out = [R.normal(k, (8, 4), out_sharding=P("x")), R.uniform(k, (8, 4), out_sharding=P("x", "y")),
           R.bits(k, (8, 4), out_sharding=P(None, "y")),
           R.randint(k, (8, 4), 0, 10, out_sharding=P("x")),
           R.categorical(k, jnp.zeros((8, 4)), out_sharding=P("x")),
           R.permutation(k, 8, out_sharding=P("y")),
           R.exponential(k, (8,), out_sharding=P("y")),
           jax.jit(lambda kk: R.normal(kk, (8, 4), out_sharding=P("x")) * 2)(k),
           init.glorot_normal()(k, (8, 4), out_sharding=P("x")),
           init.zeros(k, (8, 4), out_sharding=P(None, "y")),
           init.constant(2.0)(k, (8, 4), out_sharding=P("x")),
           _try(lambda: R.normal(k, (8, 4), out_sharding=P("x", "x"))),
           _try(lambda: R.normal(k, (6,), out_sharding=P("y"))),
           _try(lambda: R.normal(k, (8,), out_sharding="x"))]
  return out + [_try(lambda: R.normal(k, (8,), out_sharding=P("x")))]


@case
def conv_shardings(jax, jnp):
  m = _mesh(jax)
  P, ns = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  v = np.arange(8 * 4 * 6 * 6, dtype=np.float32).reshape(8, 4, 6, 6) / 500
  lhs = jax.device_put(v, ns(m, P("x")))
  feat = jax.device_put(v, ns(m, P(None, "y")))
  conv = lambda a, b, **kw: jax.lax.conv_general_dilated(a, b, (1, 1), "SAME", **kw)  # noqa: E731
  with jax.set_mesh(m):
    # (made under the mesh: JAX's transpose then asks for a result unsplit over it)
    rhs = jnp.ones((4, 4, 3, 3)) / 9
    rs = jax.device_put(np.ones((4, 4, 3, 3), np.float32), ns(m, P("x")))
    return [conv(lhs, rhs), _jaxpr(jax, conv, lhs, rhs), conv(v, rhs, out_sharding=P("x")),
            conv(lhs, rhs, out_sharding=P(None, "y")), _try(lambda: conv(feat, rhs)),
            _try(lambda: conv(lhs, rs)),
            jax.grad(lambda a, b: (conv(a, b) ** 2).sum(), argnums=(0, 1))(lhs, rhs),
            jax.jit(lambda a, b: conv(a, b, out_sharding=P("x", "y")))(lhs, rhs),
            # (a per-example out_sharding under vmap: the mapped axis merges into the batch
            # axis, split over the vmapped mesh axis when there is one)
            jax.vmap(lambda a: conv(a[None], rhs, out_sharding=P(None, "y")))(v),
            jax.vmap(lambda a: conv(a[None], rhs, out_sharding=P(None, "y")))(lhs)]


@case
def other_out_shardings(jax, jnp):
  m, x, _, _ = _arrays(jax)
  P = jax.sharding.PartitionSpec
  ids = jnp.array([0, 1, 1, 3, 2, 7, 7, 5])
  with jax.set_mesh(m):
    return [jax.ops.segment_sum(jnp.arange(8.0), ids, 8, out_sharding=P("x")),
            _try(lambda: jax.ops.segment_sum(jnp.ones(8), ids, 8, bucket_size=2,
                                             out_sharding=P("x"))),
            jnp.repeat(jnp.arange(4), jnp.array([1, 2, 3, 2]), total_repeat_length=8,
                       out_sharding=P("y")),
            jnp.repeat(x, 2, axis=1), _try(lambda: jnp.repeat(x, 2, axis=0)),
            _try(lambda: jnp.repeat(x, 2)),
            jnp.percentile(x, 50, axis=1, out_sharding=P("x")),
            jax.lax.reduce(x, 0., jax.lax.add, (1,), out_sharding=P("x")),
            _try(lambda: jax.lax.reduce(x, -np.inf, jax.lax.max, (1,), out_sharding=P("x"))),
            jax.lax.ragged_dot(jnp.ones((8, 4)), jnp.ones((2, 4, 4)), jnp.array([4, 4]),
                               out_sharding=P("x", "y")),
            _try(lambda: jax.lax.ragged_dot(x, jnp.ones((2, 4, 3)), jnp.array([4, 4]))),
            _type(jax, jnp.bincount(ids, length=8, out_sharding=P())),
            _try(lambda: jnp.bincount(ids, length=8, out_sharding=P("x"))),
            jnp.linalg.tensordot(x, x, axes=((0,), (0,)), out_sharding=P("y")),
            _rng_bits(jax, jnp, P("x"))]


def _rng_bits(jax, jnp, spec):
  key, bits = jax.lax.rng_bit_generator(jnp.zeros(4, jnp.uint32), (8, 4), out_sharding=spec)
  return [_type(jax, key), np.asarray(key).tolist(), bits]


def run_case(name, fn, a_mods, j_mods):
  outs = []
  for mods in (a_mods, j_mods):
    try:
      outs.append(describe(mods[0], fn(*mods)))
    except Exception as e:  # noqa: BLE001
      outs.append(_error(e))
  outs = [json.loads(json.dumps(o, default=repr)) for o in outs]
  if same(outs[0], outs[1]):
    return "ok"
  return first_difference(outs[0], outs[1], limit=2000)


def main():
  import warnings
  warnings.simplefilter("ignore")
  import jax
  import jax.numpy as jnp

  import arrax
  import arrax.numpy as anp
  assert jax.device_count() == 8 and arrax.device_count() == 8
  results = {}
  for name, fn in CASES.items():
    try:
      results[name] = run_case(name, fn, (arrax, anp), (jax, jnp))
    except Exception:  # noqa: BLE001
      results[name] = traceback.format_exc()
  sys.stdout.write("RESULTS" + json.dumps(results))
