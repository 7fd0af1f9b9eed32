"""Cases of tests/test_shard_map.py, run in subprocesses with 4 and 8 simulated CPU devices.

Each case is a function `(jax, jnp, lax, P) -> pytree` run once with arrax and once with JAX
0.10.2. `describe` turns arrays into (dtype, shape, weak type, sharding repr, values), jaxpr text
into its normalized form (see `normalize_jaxpr`) and an exception into its builtin base class
(plus the message for the cases in `_MESSAGES`); floats compare with a relative tolerance. `main`
prints one JSON object {case: "ok" | first difference}. This module imports neither library
itself: the subprocess sets XLA_FLAGS first.
"""
import functools
import json
import math
import re
import sys
import traceback

import numpy as np

from tests.multidevice import builtin_base, first_difference, rand as _x, same

CASES = {}    # name -> (function, minimum device count)
_MESSAGES = set()   # cases whose error message must match too


def case(min_devices=4, message=False):
  def register(fn):
    CASES[fn.__name__] = (fn, min_devices)
    if message:
      _MESSAGES.add(fn.__name__)
    return fn
  return register


def _mesh(jax, shape, names):
  """An Auto mesh over the first devices (the axis type JAX's Mesh constructor defaults to)."""
  n = math.prod(shape)
  return jax.sharding.Mesh(np.array(jax.devices()[:n], dtype=object).reshape(shape), names)


def normalize_jaxpr(text):
  """Jaxpr text with frozensets sorted (their printed order follows string hashing)."""
  return re.sub(r"frozenset\(\{([^}]*)\}\)",
                lambda m: "frozenset({" + ", ".join(sorted(m.group(1).split(", "))) + "})", text)


class Jaxpr:
  def __init__(self, text):
    self.text = normalize_jaxpr(str(text))


# ---- basics ------------------------------------------------------------------------------------
@case()
def psum_to_replicated(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  return jax.shard_map(lambda x: lax.psum(x, "i"), mesh=mesh, in_specs=P("i"),
                       out_specs=P())(_x(8, 3))


@case()
def split_and_concat(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x: jnp.sin(x) * 2, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
  return f(_x(8, 3)), f(_x(4, 2, dtype=np.int32).astype(np.float32))


@case()
def split_second_axis(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  return jax.shard_map(lambda x: x.sum(1, keepdims=True), mesh=mesh, in_specs=P(None, "i"),
                       out_specs=P(None, "i"))(_x(3, 8))


@case()
def replicated_and_split_args(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x, w, s: (x @ w + s, lax.psum(x.sum(), "i")), mesh=mesh,
                    in_specs=(P("i"), P(), P()), out_specs=(P("i"), P()))
  return f(_x(8, 3), _x(3, 5, seed=1), 2.0)


@case()
def pytree_prefix_specs(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda d: {"a": d["a"] * 2, "b": lax.pmean(d["b"], "i")}, mesh=mesh,
                    in_specs=({"a": P("i"), "b": P("i")},), out_specs={"a": P("i"), "b": P()})
  return f({"a": _x(4, 2), "b": _x(8)})


@case()
def dtypes_and_weak_types(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  outs = []
  for dt in (np.int32, np.float16, np.bool_, np.uint8):
    f = jax.shard_map(lambda x: x, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    outs.append(f(_x(8, dtype=dt)))
  g = jax.shard_map(lambda x: (x * 2, x + 1), mesh=mesh, in_specs=P("i"),
                    out_specs=(P("i"), P("i")))
  outs.append(g(jnp.arange(8)))
  return outs


@case()
def decorator_partial(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))

  @functools.partial(jax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P())
  def total(x):
    return lax.psum(jnp.sum(x, keepdims=True), "i")
  return total(_x(8))


@case()
def decorator_keywords_only(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))

  @jax.shard_map(mesh=mesh, in_specs=P("i"), out_specs=P("i"))
  def f(x):
    return x * lax.axis_index("i")
  return f(_x(8))


@case()
def context_mesh(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  with jax.sharding.set_mesh(mesh):
    out = jax.shard_map(lambda x: lax.psum(x, "i"), in_specs=P("i"), out_specs=P())(_x(8))
    am = jax.sharding.get_abstract_mesh()
  return out, repr(am), am.axis_names, am.size


@case()
def scalar_argument(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x, s: (x, s * 2), mesh=mesh, in_specs=(P("i"), P()),
                    out_specs=(P("i"), P()))
  return f(np.ones((8, 2), np.float32), np.float32(3))


# ---- 2-D meshes ----------------------------------------------------------------------------------
@case()
def mesh_2d_both_axes(jax, jnp, lax, P):
  mesh = _mesh(jax, (2, 2), ("x", "y"))
  return jax.shard_map(lambda x: x * (lax.axis_index("x") * 10 + lax.axis_index("y")),
                       mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))(_x(4, 8))


@case()
def mesh_2d_tuple_axes(jax, jnp, lax, P):
  mesh = _mesh(jax, (2, 2), ("x", "y"))
  f = jax.shard_map(lambda x: x + lax.axis_index(("x", "y")), mesh=mesh,
                    in_specs=P(("x", "y")), out_specs=P(("x", "y")))
  g = jax.shard_map(lambda x: x + lax.axis_index("x"), mesh=mesh,
                    in_specs=P(("y", "x")), out_specs=P(("y", "x")))
  return f(_x(8, 2)), g(_x(8, 2))


@case()
def mesh_2d_psum_one_axis(jax, jnp, lax, P):
  mesh = _mesh(jax, (2, 2), ("x", "y"))
  f = jax.shard_map(lambda x: lax.psum(x, "x"), mesh=mesh, in_specs=P("x", "y"),
                    out_specs=P(None, "y"))
  g = jax.shard_map(lambda x: lax.psum(x, "y"), mesh=mesh, in_specs=P("x", "y"),
                    out_specs=P("x"))
  h = jax.shard_map(lambda x: lax.psum(x, ("x", "y")), mesh=mesh, in_specs=P("x", "y"),
                    out_specs=P())
  return f(_x(4, 6)), g(_x(4, 6)), h(_x(4, 6))


@case()
def mesh_2d_replicated_over_one(jax, jnp, lax, P):
  mesh = _mesh(jax, (2, 2), ("x", "y"))
  return jax.shard_map(lambda x: x * 3, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(_x(4, 6))


@case(8)
def mesh_2x4_collectives(jax, jnp, lax, P):
  mesh = _mesh(jax, (2, 4), ("x", "y"))
  f = jax.shard_map(lambda x: (lax.psum(x, "y"), lax.all_gather(x, "y", tiled=True),
                               lax.ppermute(x, "y", [(i, (i + 1) % 4) for i in range(4)])),
                    mesh=mesh, in_specs=P("x", "y"),
                    out_specs=(P("x"), P("x"), P("x", "y")))
  return f(_x(4, 8))


@case(8)
def mesh_3d(jax, jnp, lax, P):
  mesh = _mesh(jax, (2, 2, 2), ("a", "b", "c"))
  f = jax.shard_map(lambda x: lax.psum(x, ("a", "c")) + lax.axis_index("b"), mesh=mesh,
                    in_specs=P(("a", "b"), "c"), out_specs=P("b"))
  return f(_x(8, 4))


# ---- collectives -----------------------------------------------------------------------------
@case()
def collectives_reductions(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x: (lax.pmean(x, "i"), lax.pmax(x, "i"), lax.pmin(x, "i")),
                    mesh=mesh, in_specs=P("i"), out_specs=P())
  return f(_x(8, 3))


@case()
def collective_all_gather(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x: (lax.all_gather(x, "i"), lax.all_gather(x, "i", tiled=True),
                               lax.all_gather(x, "i", axis=1, tiled=True)),
                    mesh=mesh, in_specs=P("i"), out_specs=(P("i"), P("i"), P("i")))
  return f(_x(8, 3))


@case()
def collective_psum_scatter(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x: (lax.psum_scatter(x, "i", tiled=True),
                               lax.psum_scatter(x.reshape(4, -1), "i")),
                    mesh=mesh, in_specs=P("i"), out_specs=(P("i"), P("i")))
  return f(_x(32))


@case()
def collective_all_to_all(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x: (lax.all_to_all(x, "i", 0, 0, tiled=True),
                               lax.all_to_all(x, "i", 1, 0, tiled=True)),
                    mesh=mesh, in_specs=P("i"), out_specs=(P("i"), P("i")))
  return f(_x(16, 8))


@case()
def collective_ppermute(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x: (lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
                               lax.ppermute(x, "i", [(0, 3), (2, 1)])),
                    mesh=mesh, in_specs=P("i"), out_specs=(P("i"), P("i")))
  return f(_x(8, 2))


@case()
def collective_axis_index_and_size(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x: (x + lax.axis_index("i"), lax.axis_size("i") * x), mesh=mesh,
                    in_specs=P("i"), out_specs=(P("i"), P("i")))
  return f(_x(8))


@case()
def collective_psum_of_invariant(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x, c: (lax.psum(c, "i"), lax.psum(1, "i") * x), mesh=mesh,
                    in_specs=(P("i"), P()), out_specs=(P(), P("i")))
  return f(_x(8), _x(3, seed=2))


# ---- transformations -------------------------------------------------------------------------
@case()
def jit_of_shard_map(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x, y: (lax.psum(x * y, "i"), x - lax.pmean(x, "i")), mesh=mesh,
                    in_specs=(P("i"), P("i")), out_specs=(P(), P("i")))
  g = jax.jit(lambda x, y: [v * 2 for v in f(x, y)])
  return jax.jit(f)(_x(8, 2), _x(8, 2, seed=1)), g(_x(8, 2), _x(8, 2, seed=1))


@case()
def jit_of_shard_map_result_sharding(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x: x * 2, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
  x = jax.device_put(_x(8, 2), jax.NamedSharding(mesh, P("i")))
  return jax.jit(lambda x: f(x) + 1)(_x(8, 2)), jax.jit(lambda x: f(x * 2).sum(0))(x)


@case()
def grad_through_shard_map(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))

  def loss(w, x):
    f = jax.shard_map(lambda w, x: lax.psum(jnp.sum(jnp.tanh(x @ w) ** 2), "i"), mesh=mesh,
                      in_specs=(P(), P("i")), out_specs=P())
    return f(w, x)
  return (jax.grad(loss)(_x(3, 2), _x(8, 3, seed=1)),
          jax.grad(loss, argnums=1)(_x(3, 2), _x(8, 3, seed=1)),
          jax.jit(jax.value_and_grad(loss))(_x(3, 2), _x(8, 3, seed=1)))


@case()
def grad_closure_over_params(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))

  def loss(w, x):
    f = jax.shard_map(lambda x: lax.pmean(jnp.mean((x * w) ** 2), "i"), mesh=mesh,
                      in_specs=P("i"), out_specs=P())
    return f(x)
  return jax.grad(loss)(1.5, _x(8, 3))


@case()
def grad_split_output(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x, w: jnp.sin(x) * w, mesh=mesh, in_specs=(P("i"), P()),
                    out_specs=P("i"))
  return jax.grad(lambda x, w: f(x, w).sum(), argnums=(0, 1))(_x(8, 3), _x(3, seed=1))


@case()
def grad_2d_mesh(jax, jnp, lax, P):
  mesh = _mesh(jax, (2, 2), ("x", "y"))
  f = jax.shard_map(lambda x, w: lax.psum(jnp.sum(x * w), ("x", "y")), mesh=mesh,
                    in_specs=(P("x", "y"), P(None, "y")), out_specs=P())
  return jax.grad(lambda x, w: f(x, w), argnums=(0, 1))(_x(4, 6), _x(1, 6, seed=1))


@case()
def grad_collectives(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x: (lax.all_gather(x, "i", tiled=True).sum() +
                               lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]).sum() +
                               (lax.psum_scatter(x, "i", tiled=True) ** 2).sum())[None],
                    mesh=mesh, in_specs=P("i"), out_specs=P("i"))
  return jax.grad(lambda x: f(x).sum())(_x(16))


@case()
def jvp_and_vjp(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x: (jnp.cos(x), lax.psum(x ** 2, "i")), mesh=mesh, in_specs=P("i"),
                    out_specs=(P("i"), P()))
  primal, tangent = jax.jvp(f, (_x(8),), (_x(8, seed=1),))
  out, vjp = jax.vjp(f, _x(8))
  return primal, tangent, out, vjp((_x(8, seed=2), _x(2, seed=3)))


@case()
def vmap_of_shard_map(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x, y: (lax.psum(x, "i") * y, x * 2), mesh=mesh,
                    in_specs=(P("i"), P()), out_specs=(P(), P("i")))
  moved = [jax.vmap(f, in_axes=(1, None))(_x(8, 5), _x(2, seed=1)),
           jax.vmap(f, in_axes=(0, None), out_axes=1)(_x(3, 8), _x(2, seed=1))]
  # (arrax moves batch axes with eager ops, which gather: compare their values only)
  return jax.vmap(f)(_x(3, 8), _x(3, 2, seed=1)), [[np.asarray(v) for v in m] for m in moved]


@case()
def shard_map_of_vmap_with_collective(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(jax.vmap(lambda r: lax.psum(r * r.sum(), "i")),
                    mesh=mesh, in_specs=P(None, "i"), out_specs=P())
  return f(_x(3, 8))


@case()
def shard_map_with_inner_jit_and_scan(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))

  def body(x):
    def step(c, v):
      return c + lax.psum(v, "i"), c
    return jax.jit(lambda x: lax.scan(step, jnp.zeros(()), x))(x)[0]
  return jax.shard_map(body, mesh=mesh, in_specs=P(None), out_specs=P())(_x(5))


@case()
def check_vma_false(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x: lax.psum(x, "i") * 2, mesh=mesh, in_specs=P("i"),
                    out_specs=P(), check_vma=False)
  return f(_x(8)), jax.grad(lambda x: f(x).sum())(_x(8))


@case()
def experimental_shard_map(jax, jnp, lax, P):
  import importlib
  import warnings
  mod = importlib.import_module(jax.__name__ + ".experimental.shard_map")
  mesh = _mesh(jax, (4,), ("i",))
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    sm = mod.shard_map
  f = sm(lambda x: lax.psum(x, "i"), mesh, in_specs=P("i"), out_specs=P(), check_rep=False)
  return f(_x(8)), [(w.category.__name__, str(w.message)) for w in caught]


@case()
def smap_single_axis(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  with jax.sharding.set_mesh(mesh):
    f = jax.smap(lambda x: x * lax.axis_index("i"), in_axes=0, out_axes=0, axis_name="i")
    return f(_x(8, 2))


# ---- jaxprs (normalized, see normalize_jaxpr) ----------------------------------------------------
@case()
def jaxpr_psum(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x: lax.psum(x, "i"), mesh=mesh, in_specs=P("i"), out_specs=P())
  return Jaxpr(jax.make_jaxpr(f)(_x(8)))


@case()
def jaxpr_2d_specs(jax, jnp, lax, P):
  mesh = _mesh(jax, (2, 2), ("x", "y"))
  f = jax.shard_map(lambda x: lax.psum(jnp.sin(x), "x"), mesh=mesh, in_specs=P("x", "y"),
                    out_specs=P(None, "y"))
  return Jaxpr(jax.make_jaxpr(f)(_x(4, 6)))


@case()
def jaxpr_split_to_split(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x, y: (x * y, lax.all_gather(x, "i", tiled=True)), mesh=mesh,
                    in_specs=(P("i"), P("i")), out_specs=(P("i"), P("i")))
  return Jaxpr(jax.make_jaxpr(f)(_x(8), _x(8)))


@case()
def jaxpr_under_jit(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda x: jnp.cos(x), mesh=mesh, in_specs=P(("i",)), out_specs=P("i"))
  return Jaxpr(jax.make_jaxpr(jax.jit(lambda x: f(x) + 1))(_x(8)))


# ---- varying manual axes (check_vma=True types: {V:...}, implicit pvary, pcast) ----------------
def _smap2(jax, f, in_specs, out_specs, **kw):
  return jax.shard_map(f, mesh=_mesh(jax, (2, 2), ("i", "j")), in_specs=in_specs,
                       out_specs=out_specs, **kw)


@case()
def vma_typeof(jax, jnp, lax, P):
  seen = []

  def f(x, y):
    for v in (x, y, x + y, lax.psum(x + y, "i"), lax.axis_index("j"), lax.pmax(x, "i")):
      t = jax.typeof(v)
      seen.append([str(t), sorted(t.mat.varying), sorted(t.manual_axis_type.varying)])
    return x
  _smap2(jax, f, (P("i"), P(None, "j")), P("i"))(_x(4, 4), _x(4, 4))
  seen.append(str(jax.typeof(jnp.ones(3))))
  return seen


@case()
def vma_jaxpr_elementwise(jax, jnp, lax, P):
  x = _x(4, 4)
  fs = [_smap2(jax, lambda x: x + lax.axis_index("i"), P(), P("i")),
        _smap2(jax, lambda x: lax.pmean(x, "j"), P("i", "j"), P("i")),
        _smap2(jax, lambda x: lax.psum(x, "j"), P("i"), P("i")),
        _smap2(jax, lambda x, y: jnp.dot(x, y) + jnp.sin(x).sum(), (P("i"), P()), P("i")),
        _smap2(jax, lambda x: jnp.zeros_like(x) + jnp.ones(4), P("i"), P("i")),
        _smap2(jax, lambda x, y: jnp.where(x > 0.5, x, y), (P("i"), P()), P("i"))]
  nargs = [1, 1, 1, 2, 1, 2]
  return [Jaxpr(jax.make_jaxpr(f)(*[x] * n)) for f, n in zip(fs, nargs)] + [fs[3](x, x)]


@case()
def vma_jaxpr_collectives(jax, jnp, lax, P):
  x = _x(4, 4)
  fs = [_smap2(jax, lambda x: lax.pmax(x, ("i", "j")), P("i", "j"), P()),
        _smap2(jax, lambda x: lax.all_gather(x, "i"), P(), P("i")),
        _smap2(jax, lambda x: lax.ppermute(x, "i", [(0, 1), (1, 0)]), P(), P("i")),
        _smap2(jax, lambda x: lax.psum_scatter(x, "i", tiled=True), P(), P("i")),
        _smap2(jax, lambda x: lax.all_to_all(x, "i", 0, 1, tiled=True), P(), P("i"))]
  return [Jaxpr(jax.make_jaxpr(f)(x)) for f in fs] + [f(x) for f in fs[1:]]


@case()
def vma_pcast(jax, jnp, lax, P):
  x = _x(4, 4)
  f = _smap2(jax, lambda x: lax.pcast(x, ("j", "i"), to="varying") * 2, P(), P(("i", "j")))
  g = _smap2(jax, lambda x: lax.pcast({"a": x}, "i", to="varying")["a"], P(), P("i"),
             check_vma=False)
  return Jaxpr(jax.make_jaxpr(f)(x)), f(x), Jaxpr(jax.make_jaxpr(g)(x)), g(x)


@case(message=True)
def error_pcast_from_varying(jax, jnp, lax, P):
  return _smap2(jax, lambda x: lax.pcast(x, "i", to="varying"), P("i"), P("i"))(_x(4, 4))


@case(message=True)
def error_pcast_set_axis(jax, jnp, lax, P):
  return _smap2(jax, lambda x: lax.pcast(x, {"i"}, to="varying"), P(), P("i"))(_x(4, 4))


@case()
def error_pcast_bad_to(jax, jnp, lax, P):
  return _smap2(jax, lambda x: lax.pcast(x, "i", to="foo"), P(), P("i"))(_x(4, 4))


@case()
def error_pcast_mixed_axes(jax, jnp, lax, P):
  return _smap2(jax, lambda x: lax.pcast(x, ("i", "j"), to="varying"), P("i"), P("i"))(_x(4, 4))


@case(message=True)
def error_pcast_outside_shard_map(jax, jnp, lax, P):
  return lax.pcast(_x(3), "i", to="varying")


@case(message=True)
def error_vma_all_gather_not_replicated(jax, jnp, lax, P):
  def f(x):
    return lax.all_gather(x, "i", tiled=True)
  return _smap2(jax, f, P("i"), P())(_x(4, 4))


@case(message=True)
def error_vma_scan_carry(jax, jnp, lax, P):
  f = _smap2(jax, lambda x, y: lax.scan(lambda c, a: (c + a, c * 2), y, x)[0], (P("i"), P()),
             P("i"))
  return f(_x(4, 4), _x(4))


@case(message=True)
def error_vma_cond_branches(jax, jnp, lax, P):
  f = _smap2(jax, lambda x, y: lax.cond(True, lambda a, b: a, lambda a, b: b, x, y),
             (P("i"), P()), P("i"))
  return f(_x(2, 4), _x(2, 4))


@case()
def vma_control_flow(jax, jnp, lax, P):
  x = _x(4, 4)
  fs = [_smap2(jax, lambda x, y: lax.scan(lambda c, a: (c + a, c * 2),
                                          lax.pcast(y, "i", to="varying"), x), (P("i"), P()),
               (P("i"), P("i"))),
        _smap2(jax, lambda x, y: lax.while_loop(lambda c: c[0] < 3,
                                                lambda c: (c[0] + 1, c[1] * 2 + c[2]),
                                                (0, x, y))[1], (P("i"), P()), P("i")),
        _smap2(jax, lambda x, y: lax.cond(x.sum() > 0, lambda a, b: a * b, lambda a, b: a - b,
                                          x, y), (P("i"), P()), P("i")),
        _smap2(jax, lambda x, y: jax.jit(lambda a, b: a * b + 1)(x, y), (P("i"), P()), P("i"))]
  args = [(x, x[0]), (x, x[:2]), (x, x[:2]), (x, x[:2])]
  return [(Jaxpr(jax.make_jaxpr(f)(*a)), f(*a)) for f, a in zip(fs, args)]


@case()
def vma_grad(jax, jnp, lax, P):
  x, w = _x(4, 4), _x(4, 4, seed=1)
  f1 = _smap2(jax, lambda w, x: lax.psum((w * x).sum(), ("i", "j")), (P(), P("i", "j")), P())
  f2 = _smap2(jax, lambda w, x: jnp.sin(w) * x, (P(), P("i")), P("i"))
  f3 = _smap2(jax, lambda w, x: jax.grad(lambda w: (jnp.sin(w) * x).sum())(w), (P(), P("i")),
              P("i"))
  g1 = jax.grad(lambda w, x: f1(w, x))
  g2 = jax.grad(lambda w, x: f2(w, x).sum())
  return [(Jaxpr(jax.make_jaxpr(g)(w, x)), g(w, x)) for g in (g1, g2, f3)]


@case()
def vma_vmap_and_linearize(jax, jnp, lax, P):
  x = _x(4, 4)
  f = jax.vmap(_smap2(jax, lambda x: lax.psum(x, "i") * x, P("i"), P("i")))
  g = _smap2(jax, lambda x: jnp.sin(x) * lax.psum(x, "j"), P("i"), P("i"))
  lin = jax.linearize(g, x)[1]
  return Jaxpr(jax.make_jaxpr(f)(np.stack([x, x]))), f(np.stack([x, x])), lin(x)


@case()
def vma_all_gather_invariant(jax, jnp, lax, P):
  x = _x(4, 4)
  f = _smap2(jax, lambda x: lax.all_gather(x, "i", to="invarying", tiled=True) * 2, P("i"), P())
  g = _smap2(jax, lambda x: lax.all_gather(x, "i", axis=1, to="invarying"), P("i"), P(),
             check_vma=False)
  grad = jax.grad(lambda x: f(x).sum() * 3)
  return Jaxpr(jax.make_jaxpr(f)(x)), f(x), Jaxpr(jax.make_jaxpr(g)(x)), g(x), grad(x)


@case()
def vma_more_bodies(jax, jnp, lax, P):
  x, y = _x(4, 4), _x(2, 4, seed=1)
  fs = [(_smap2(jax, lambda x: (x * 2, x), P(), (P("i"), P(("i", "j")))), (x,)),
        (_smap2(jax, lambda x: lax.switch(lax.axis_index("i"), [lambda a: a, lambda a: -a], x),
                P(), P("i")), (x,)),
        (_smap2(jax, lambda x: jax.jit(lambda a: a * lax.axis_index("i"))(x), P(), P("i")), (x,)),
        (_smap2(jax, lambda x, y: jax.checkpoint(lambda a, b: jnp.sin(a) * b)(x, y),
                (P("i"), P()), P("i")), (x, y)),
        (_smap2(jax, lambda x: lax.pmax(x, "i") + jnp.arange(4.0), P(), P()), (x,)),
        (_smap2(jax, lambda x, y: jnp.maximum(x, y).max(axis=0), (P("i"), P()), P("i")), (x, y)),
        (_smap2(jax, lambda x, y: lax.scan(lambda c, a: (c * a, c + a), x[0], y)[1],
                (P("i"), P()), P("i")), (x, x)),
        (_smap2(jax, lambda x: lax.fori_loop(0, 3, lambda i, c: c + i, x), P("i"), P("i")), (x,)),
        (_smap2(jax, lambda x: x * lax.psum(2.0, "i") + lax.axis_size("j"), P("i"), P("i")),
         (x,)),
        (jax.jit(_smap2(jax, lambda x: x * 2 + lax.axis_index("i"), P("i"), P("i"),
                        axis_names={"i"})), (x,))]
  return [(Jaxpr(jax.make_jaxpr(f)(*a)), f(*a)) for f, a in fs]


@case(message=True)
def error_vma_vjp_cotangent(jax, jnp, lax, P):
  f = _smap2(jax, lambda x, y: jax.vjp(lambda a: jnp.sin(a) * y, x)[1](y)[0], (P("i"), P()),
             P("i"))
  return f(_x(4, 4), _x(2, 4))


@case(message=True)
def error_vma_custom_vjp_bwd(jax, jnp, lax, P):
  @jax.custom_vjp
  def cf(x, y):
    return x * y
  cf.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1], g * r[0]))
  f = _smap2(jax, cf, (P("i"), P()), P("i"))
  return jax.grad(lambda x, y: f(x, y).sum(), argnums=1)(_x(4, 4), _x(2, 4))


def _message(thunk):
  try:
    thunk()
  except Exception as e:  # noqa: BLE001
    return _error(e, True)
  return "no error"


@case()
def error_vma_loop_carries(jax, jnp, lax, P):
  x, y = _x(4, 4), _x(2, 4)
  fs = [_smap2(jax, lambda x, y: lax.while_loop(lambda c: c[0] < 3,
                                                lambda c: (c[0] + 1, c[1] + x), (0, y))[1],
               (P("i"), P()), P("i")),
        _smap2(jax, lambda x, y: lax.fori_loop(0, 3, lambda i, c: (c[0] + x, c[1] * x),
                                               (y, y))[0], (P("i"), P()), P("i")),
        _smap2(jax, lambda x, y: lax.scan(lambda c, a: ((c[0] + a, c[1] * a), None),
                                          (y[0], y[0]), x)[0][0], (P("i"), P()), P("i"))]
  return [_message(lambda f=f, a=a: f(x, a)) for f, a in zip(fs, (y, y, x))]


@case()
def vma_linearize_jaxpr(jax, jnp, lax, P):
  x = _x(4, 4)
  g = _smap2(jax, lambda x: jnp.sin(x) * lax.psum(x, "j"), P("i"), P("i"))
  return Jaxpr(jax.make_jaxpr(lambda x: jax.linearize(g, x)[1](x))(x))


# ---- the sharding names --------------------------------------------------------------------------
@case()
def abstract_mesh(jax, jnp, lax, P):
  AM = jax.sharding.AbstractMesh
  AT = jax.sharding.AxisType
  m = AM((2, 2), ("a", "b"))
  m2 = AM((4,), ("i",), axis_types=(AT.Explicit,))
  out = [repr(m), str(m2), list(m.shape.items()), m.size, repr(m.axis_types), m.empty,
         m == AM((2, 2), ("a", "b")), hash(m) == hash(AM((2, 2), ("a", "b"))),
         repr(jax.sharding.get_abstract_mesh()), jax.sharding.get_abstract_mesh().empty]
  with jax.sharding.use_abstract_mesh(m):
    out.append(repr(jax.sharding.get_abstract_mesh()))
    out.append(repr(jax.sharding.get_mesh()))
  out.append(repr(jax.sharding.get_abstract_mesh()))
  mesh = jax.make_mesh((4,), ("i",))
  out.append(repr(mesh.abstract_mesh))
  return out


@case()
def reshard_named_and_spec(jax, jnp, lax, P):
  mesh = jax.make_mesh((4,), ("i",))
  x = jnp.arange(8.)
  y = jax.reshard(x, jax.NamedSharding(mesh, P("i")))
  with jax.sharding.set_mesh(mesh):
    z = jax.reshard({"a": x, "b": jnp.ones((4, 4))}, {"a": P("i"), "b": P(None, "i")})
  return y, z


@case()
def error_reshard_spec_without_mesh(jax, jnp, lax, P):
  return jax.reshard(jnp.arange(8.), P("i"))


@case()
def auto_and_explicit_axes(jax, jnp, lax, P):
  mesh = jax.make_mesh((4,), ("i",))
  with jax.sharding.set_mesh(mesh):
    f = jax.sharding.auto_axes(lambda x: x * 2, out_sharding=P("i"))
    return f(jnp.arange(8.))


# ---- errors --------------------------------------------------------------------------------------
@case(message=True)
def error_in_spec_rank(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))

  def f(x, y):
    return x
  return jax.shard_map(f, mesh=mesh, in_specs=(P("i"), P(None, "i")),
                       out_specs=P("i"))(_x(8), _x(8))


@case(message=True)
def error_out_spec_rank(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  return jax.shard_map(lambda x: x.sum(), mesh=mesh, in_specs=P("i"), out_specs=P("i"))(_x(8))


@case(message=True)
def error_axis_not_in_mesh(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  return jax.shard_map(lambda x: x, mesh=mesh, in_specs=P("j"), out_specs=P("i"))(_x(8))


@case()
def error_out_axis_not_in_mesh(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  return jax.shard_map(lambda x: x, mesh=mesh, in_specs=P("i"), out_specs=P("k"))(_x(8))


@case(message=True)
def error_not_divisible(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))

  def f(x):
    return x
  return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(_x(6))


@case(message=True)
def error_not_divisible_2d(jax, jnp, lax, P):
  mesh = _mesh(jax, (2, 2), ("x", "y"))

  def f(x):
    return x
  return jax.shard_map(f, mesh=mesh, in_specs=P(("x", "y")), out_specs=P(("x", "y")))(_x(6))


@case(message=True)
def error_replication_check(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))

  def f(x):
    return x * 2
  return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P())(_x(8))


@case(message=True)
def error_replication_check_2d(jax, jnp, lax, P):
  mesh = _mesh(jax, (2, 2), ("x", "y"))

  def f(x):
    return lax.psum(x, "x")
  return jax.shard_map(f, mesh=mesh, in_specs=P("x", "y"), out_specs=P())(_x(4, 4))


@case()
def error_axis_index_not_replicated(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  return jax.shard_map(lambda x: x + lax.axis_index("i"), mesh=mesh, in_specs=P(),
                       out_specs=P())(_x(8))


@case()
def error_spec_not_partitionspec(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  return jax.shard_map(lambda x: x, mesh=mesh, in_specs=("i",), out_specs=P("i"))(_x(8))


@case(message=True)
def error_in_specs_none(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  return jax.shard_map(lambda x: x, mesh=mesh, in_specs=None, out_specs=P("i"))(_x(8))


@case(message=True)
def error_empty_context_mesh(jax, jnp, lax, P):
  return jax.shard_map(lambda x: x, in_specs=P("i"), out_specs=P("i"))(_x(8))


@case(message=True)
def error_explicit_mesh_spec_mismatch(jax, jnp, lax, P):
  mesh = jax.make_mesh((4,), ("i",))
  return jax.shard_map(lambda x: x, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(
      jnp.arange(8.))


@case()
def error_infer_with_auto_axes(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  return jax.shard_map(lambda x: x, mesh=mesh, out_specs=P("i"))(_x(8))


@case()
def error_not_callable(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  return jax.shard_map(3, mesh=mesh, in_specs=P("i"), out_specs=P("i"))


@case()
def explicit_mesh_infer_specs(jax, jnp, lax, P):
  mesh = jax.make_mesh((4,), ("i",))
  x = jax.device_put(jnp.arange(8.), jax.NamedSharding(mesh, P("i")))
  return jax.shard_map(lambda x: x * 2, mesh=mesh, out_specs=P("i"))(x)


# ---- a data-parallel training step -----------------------------------------------------------------
def _mlp_train(jax, jnp, lax, P, parallel):
  mesh = _mesh(jax, (4,), ("i",))
  rng = np.random.RandomState(0)
  params = [(rng.randn(4, 16).astype(np.float32) * 0.5, np.zeros(16, np.float32)),
            (rng.randn(16, 1).astype(np.float32) * 0.5, np.zeros(1, np.float32))]
  xs = rng.randn(32, 4).astype(np.float32)
  ys = (np.sin(xs).sum(1, keepdims=True)).astype(np.float32)

  def loss(params, x, y):
    h = x
    for i, (w, b) in enumerate(params):
      h = h @ w + b
      if i == 0:
        h = jnp.tanh(h)
    return jnp.mean((h - y) ** 2)

  if parallel:   # each device's loss on its batch shard, averaged over the devices
    dp_loss = jax.shard_map(lambda p, x, y: lax.pmean(loss(p, x, y), "i"), mesh=mesh,
                            in_specs=(P(), P("i"), P("i")), out_specs=P())
    sharded = jax.grad(dp_loss)
  else:
    sharded = jax.grad(loss)

  @jax.jit
  def step(params, x, y):
    g = sharded(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, g)

  for _ in range(5):
    params = step(params, xs, ys)
  return [np.asarray(p) for layer in params for p in layer]


@case()
def mlp_data_parallel_step(jax, jnp, lax, P):
  par = _mlp_train(jax, jnp, lax, P, True)
  single = _mlp_train(jax, jnp, lax, P, False)
  close = all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(par, single))
  return par, close


@case()
def grad_inside_body_of_invariant_param(jax, jnp, lax, P):
  # JAX (check_vma=True) inserts pvary on the replicated `w` where it meets the varying `x`;
  # its transpose psums the per-device gradients, so pmean then returns their sum.
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda w, x: lax.pmean(jax.grad(lambda w: jnp.sum(jnp.sin(x * w)))(w),
                                           "i"),
                    mesh=mesh, in_specs=(P(), P("i")), out_specs=P())
  return f(_x(3), _x(8, 3, seed=1))


@case()
def grad_inside_body_check_vma_false(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  f = jax.shard_map(lambda w, x: lax.pmean(jax.grad(lambda w: jnp.sum(jnp.sin(x * w)))(w),
                                           "i"),
                    mesh=mesh, in_specs=(P(), P("i")), out_specs=P(), check_vma=False)
  return f(_x(3), _x(8, 3, seed=1))


# ---- psend / precv and ragged_all_to_all (XLA:CPU runs neither) ---------------------------------
def _outcome(thunk):
  """What `thunk()` gives: its described value, or ["error", builtin base class]."""
  try:
    return describe(thunk())
  except Exception as e:  # noqa: BLE001
    return _error(e, False)


def _lowered_lines(jax, f, args, keys, **lower_kw):
  """The lines of jit(f)'s lowered StableHLO holding one of `keys` (no locations). arrax's jit
  does not lower a multi-device program; its module comes from the lowering the SPMD runner
  (shard_map: `num_partitions`) or pmap (`num_replicas`, `axis_env`) uses."""
  if jax.__name__ == "arrax":
    from arrax._src import batching, mlir
    if "axis_env" in lower_kw:
      (name, size), = lower_kw["axis_env"].items()
      with batching.extend_axis_env(name, size):
        closed = jax.make_jaxpr(f)(*args)
        text = str(mlir.lower_jaxpr_to_module("f", closed, **lower_kw).module)
    else:
      text = str(mlir.lower_jaxpr_to_module("f", jax.make_jaxpr(f)(*args), **lower_kw).module)
  else:
    if "axis_env" in lower_kw:
      (name, size), = lower_kw["axis_env"].items()
      f = jax.pmap(f, axis_name=name)
      args = [np.stack([a] * size) for a in args]
    text = jax.jit(f).lower(*args).as_text()
  return [re.sub(r"%\w+", "%_", re.sub(r" loc\(.*\)$", "", ln.strip()))
          for ln in text.splitlines() if any(k in ln for k in keys)]


def _ragged_args(n=2):
  """Per-device ragged exchanges over an axis of size n (two slices to each device)."""
  k = 2 * n
  operand = np.arange(1, 3 * n + 1, dtype=np.float32)
  offsets = np.tile(np.array([0, 1] * n, np.int32)[:k], 1)
  ones = np.ones(k * n, np.int32)
  return (operand, np.zeros(4 * n, np.float32), np.tile(offsets, n), ones,
          np.tile(np.arange(k, dtype=np.int32) % 2, n), ones)


@case()
def ragged_all_to_all_shard_map(jax, jnp, lax, P):
  mesh = _mesh(jax, (2,), ("i",))
  body = lambda *a: lax.ragged_all_to_all(*a, axis_name="i")  # noqa: E731
  f = jax.shard_map(body, mesh=mesh, in_specs=(P("i"),) * 6, out_specs=P("i"), check_vma=False)
  args = _ragged_args()
  bad_dtype = list(args)
  bad_dtype[2] = args[2].astype(np.float32)
  bad_rank = list(args)
  bad_rank[5] = args[5].reshape(2, -1)
  return (Jaxpr(jax.make_jaxpr(f)(*args)),
          _lowered_lines(jax, f, args, ["ragged_all_to_all"], num_partitions=2, mesh=mesh),
          _outcome(lambda: f(*args)), _outcome(lambda: jax.jit(f)(*args)),
          _outcome(lambda: body(*args)),
          _outcome(lambda: jax.make_jaxpr(f)(*bad_dtype)),
          _outcome(lambda: jax.make_jaxpr(f)(*bad_rank)))


@case()
def ragged_all_to_all_groups_and_meshes(jax, jnp, lax, P):
  mesh = _mesh(jax, (4,), ("i",))
  grouped = jax.shard_map(
      lambda *a: lax.ragged_all_to_all(*a, axis_name="i", axis_index_groups=[[0, 1], [2, 3]]),
      mesh=mesh, in_specs=(P("i"),) * 6, out_specs=P("i"), check_vma=False)
  mesh2 = _mesh(jax, (2, 2), ("i", "j"))
  outs = []
  for names in ["j", ("i", "j")]:
    outs.append(jax.shard_map(lambda *a, names=names: lax.ragged_all_to_all(
        *a, axis_name=names), mesh=mesh2, in_specs=(P(("i", "j")),) * 6,
        out_specs=P(("i", "j")), check_vma=False))
  args = _ragged_args(4)
  keys = ["ragged_all_to_all"]
  return (_lowered_lines(jax, grouped, args, keys, num_partitions=4, mesh=mesh),
          [_lowered_lines(jax, f, args, keys, num_partitions=4, mesh=mesh2) for f in outs],
          [Jaxpr(jax.make_jaxpr(f)(*args)) for f in [grouped] + outs])


@case()
def ragged_all_to_all_pmap(jax, jnp, lax, P):
  body = lambda *a: lax.ragged_all_to_all(*a, axis_name="i")  # noqa: E731
  args = [a[:len(a) // 2] for a in _ragged_args()]
  return (_lowered_lines(jax, body, args, ["ragged_all_to_all"], num_replicas=2,
                         axis_env={"i": 2}),
          _outcome(lambda: jax.pmap(body, axis_name="i")(*[np.stack([a] * 2) for a in args])))


@case()
def ragged_all_to_all_derivatives(jax, jnp, lax, P):
  mesh = _mesh(jax, (2,), ("i",))
  specs = {"mesh": mesh, "in_specs": (P("i"),) * 6, "check_vma": False}

  def grad_body(op, out, *rest):
    def loss(op, out):
      return (lax.ragged_all_to_all(op, out, *rest, axis_name="i") ** 2).sum()
    return jax.grad(loss, argnums=(0, 1))(op, out)

  def jvp_body(op, out, *rest):
    return jax.jvp(lambda op, out: lax.ragged_all_to_all(op, out, *rest, axis_name="i"),
                   (op, out), (op, jnp.zeros_like(out)))

  def operand_only(op, out, *rest):   # (the output's tangent is a symbolic zero)
    return jax.jvp(lambda op: lax.ragged_all_to_all(op, out, *rest, axis_name="i"), (op,),
                   (op,))

  def no_tangent(op, out, *rest):   # (both symbolic zeros: only the integer inputs vary)
    return jax.jvp(lambda io: lax.ragged_all_to_all(op, out, io, *rest[1:], axis_name="i"),
                   (rest[0],), (np.zeros(rest[0].shape, jax.dtypes.float0),))

  args = _ragged_args()
  return [Jaxpr(jax.make_jaxpr(jax.shard_map(f, out_specs=o, **specs))(*args))
          for f, o in [(grad_body, (P("i"), P("i"))), (jvp_body, (P("i"), P("i"))),
                       (operand_only, (P("i"), P("i"))), (no_tangent, (P("i"), P("i")))]]


@case()
def ragged_all_to_all_vmap(jax, jnp, lax, P):
  mesh = _mesh(jax, (2,), ("i",))

  def body(op, out, io, ss, oo, rs):   # a batch of 3 exchanges; the offsets batched at axis 1
    return jax.vmap(lambda *a: lax.ragged_all_to_all(*a, axis_name="i"),
                    in_axes=(0, 0, 1, 0, 1, 0))(op, out, io, ss, oo, rs)
  f = jax.shard_map(body, mesh=mesh, in_specs=(P(None, "i"), P(None, "i"), P("i"),
                                                P(None, "i"), P("i"), P(None, "i")),
                    out_specs=P(None, "i"), check_vma=False)
  op, out, io, ss, oo, rs = _ragged_args()
  batched = (np.stack([op] * 3), np.stack([out] * 3), np.stack([io] * 3, 1),
             np.stack([ss] * 3), np.stack([oo] * 3, 1), np.stack([rs] * 3))
  over_axis = jax.vmap(lambda *a: lax.ragged_all_to_all(*a, axis_name="i"), axis_name="i")
  per_example = [a.reshape(2, -1) for a in _ragged_args()]
  return (Jaxpr(jax.make_jaxpr(f)(*batched)),
          _outcome(lambda: jax.make_jaxpr(over_axis)(*per_example)))


@case()
def psend_precv(jax, jnp, lax, P):
  mesh = _mesh(jax, (2,), ("i",))
  perm = [(0, 1), (1, 0)]

  def body(x):
    token = lax.psend(x, "i", perm)
    return lax.precv(token, jax.ShapeDtypeStruct(x.shape, x.dtype), "i", perm)
  f = jax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"), check_vma=False)
  tree = jax.shard_map(lambda x: (lax.psend((x, {"a": x * 2}), "i", perm), x)[1], mesh=mesh,
                       in_specs=P("i"), out_specs=P("i"), check_vma=False)
  x = np.arange(4, dtype=np.float32)
  shape = jax.ShapeDtypeStruct((2,), np.float32)
  return (Jaxpr(jax.make_jaxpr(f)(x)), Jaxpr(jax.make_jaxpr(tree)(x)),
          _outcome(lambda: jax.jit(f)(x)),
          _outcome(lambda: jax.pmap(body, axis_name="i")(x.reshape(2, 2))),
          _outcome(lambda: jax.jit(f).lower(x)),
          _outcome(lambda: jax.grad(lambda x: jax.jit(f)(x).sum())(x)),
          _outcome(lambda: lax.psend(x, "i", perm)),
          _outcome(lambda: lax.precv(lax.create_token(), shape, "i", perm)))


@case()
def psend_precv_vmap(jax, jnp, lax, P):
  perm = [(0, 1), (1, 0)]
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  send = jax.vmap(lambda v: lax.psend(v, "i", perm), axis_name="i")
  recv = jax.vmap(lambda v: lax.precv(lax.create_token(), jax.ShapeDtypeStruct((3,), v.dtype),
                                      "i", perm), axis_name="i")
  return (np.asarray(send(x)), Jaxpr(jax.make_jaxpr(send)(x)), _outcome(lambda: recv(x)))


# ---- running and comparing -----------------------------------------------------------------------
def _value(v):
  v = np.asarray(v)
  if v.dtype.kind == "f":
    return [str(v.dtype), list(v.shape), np.asarray(v, np.float64).ravel().tolist()]
  return [str(v.dtype), list(v.shape), v.ravel().tolist()]


def describe(x):
  if isinstance(x, Jaxpr):
    return {"jaxpr": x.text}
  if hasattr(x, "aval") and hasattr(x, "dtype") and hasattr(x, "sharding"):
    return {"array": _value(x), "weak": bool(getattr(x.aval, "weak_type", False)),
            "sharding": repr(x.sharding) if "Named" in type(x.sharding).__name__ else
            "single"}
  if isinstance(x, dict):
    return {str(k): describe(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [describe(v) for v in x]
  if isinstance(x, (np.ndarray, np.generic)):
    return _value(x)
  if isinstance(x, (bool, int, float, str, type(None))):
    return x
  return repr(x)


def _error(e, message):
  # (JAX names an internal function, not the user's, in its replication-check message.)
  text = str(e).replace("function '_rem_singleton'", "function 'f'")
  return ["error", builtin_base(e).__name__] + ([text] if message else [])


def run_case(name, fn, libs):
  outs = []
  for mods in libs:
    try:
      outs.append(describe(fn(*mods)))
    except Exception as e:  # noqa: BLE001
      outs.append(_error(e, name in _MESSAGES))
  outs = [json.loads(json.dumps(o, default=repr)) for o in outs]
  return "ok" if same(outs[0], outs[1]) else first_difference(outs[0], outs[1])


def main(ndev):
  import warnings
  warnings.simplefilter("ignore")
  import arrax
  import arrax.lax as alax
  import arrax.numpy as anp
  import jax
  import jax.lax as jlax
  import jax.numpy as jnp
  assert jax.device_count() == ndev and arrax.device_count() == ndev
  libs = [(arrax, anp, alax, arrax.sharding.PartitionSpec),
          (jax, jnp, jlax, jax.sharding.PartitionSpec)]
  results = {}
  for name, (fn, need) in CASES.items():
    if need > ndev or (ndev > 4 and need <= 4 and not name.startswith("mesh_")):
      continue   # the 8-device run repeats only the mesh cases
    try:
      results[name] = run_case(name, fn, libs)
    except Exception:  # noqa: BLE001
      results[name] = traceback.format_exc()
  sys.stdout.write("RESULTS" + json.dumps(results))
