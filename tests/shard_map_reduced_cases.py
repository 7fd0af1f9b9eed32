"""Cases of tests/test_shard_map_reduced.py (unreduced/reduced manual axes and nested shard_map),
run in one subprocess with 4 simulated CPU devices, as tests/shard_map_cases.py's are.

Each case is a function `(jax, jnp, lax, P) -> pytree` run once with arrax and once with JAX
0.10.2 and compared with shard_map_cases' `describe` (arrays, normalized jaxpr text, errors by
builtin base class; messages too for the cases marked so).
"""
import json
import sys
import traceback

import numpy as np

from tests.multidevice import first_difference, rand as _x, same
from tests.shard_map_cases import Jaxpr, _error, describe

CASES = {}
_MESSAGES = set()


def case(message=False):
  def register(fn):
    CASES[fn.__name__] = fn
    if message:
      _MESSAGES.add(fn.__name__)
    return fn
  return register


def _mesh(jax):
  return jax.sharding.Mesh(np.array(jax.devices()[:4], dtype=object).reshape(2, 2), ("i", "j"))


def _smap(jax, f, in_specs, out_specs, **kw):
  return jax.shard_map(f, mesh=_mesh(jax), in_specs=in_specs, out_specs=out_specs, **kw)


def _outcome(thunk, message=True):
  try:
    out = thunk()
  except Exception as e:  # noqa: BLE001
    return _error(e, message)
  return describe(out)


# ---- unreduced / reduced types -------------------------------------------------------------------
@case()
def ur_types(jax, jnp, lax, P):
  seen = []

  def f(x, y):
    u = lax.pcast(x, "i", to="unreduced")
    r = lax.pcast(y, "i", to="reduced")
    ur = lax.pcast(lax.pcast(x, "j", to="unreduced"), "i", to="reduced")
    vals = [u, r, ur, lax.psum(u, "i"), u + u, u * r, u.T, u.reshape(8), u.sum(0),
            u.astype(jnp.float16), r * r, jnp.sin(r), -r, r[:1], lax.pcast(r, "i", to="varying"),
            lax.pcast(ur, "i", to="varying"), jnp.broadcast_to(r[0], (3, 4)), r.sum()]
    for v in vals:
      t = jax.typeof(v)
      seen.append([str(t), repr(t), sorted(t.mat.varying), sorted(t.mat.unreduced),
                   sorted(t.mat.reduced), sorted(t.manual_axis_type.unreduced)])
    return x
  _smap(jax, f, (P("i"), P()), P("i"))(_x(4, 4), _x(2, 4))
  mat = jax.sharding.ManualAxisType(varying=frozenset({"i"}), reduced=frozenset({"j"}))
  seen.append([repr(mat), repr(mat.to_ct_mat()), sorted(mat.vur)])
  return seen


@case()
def ur_cast_chain(jax, jnp, lax, P):
  def body(x):
    u = lax.pcast(x, "i", to="unreduced")
    r = lax.pcast(lax.psum(u, "i"), "i", to="reduced")
    return lax.pcast(r, "i", to="varying") * 2
  f = _smap(jax, body, P("i", "j"), P("i", "j"))
  x = _x(4, 4)
  grad = jax.jit(jax.grad(lambda x: (f(x) * jnp.arange(4.0)).sum()))
  return Jaxpr(jax.make_jaxpr(f)(x)), jax.jit(f)(x), grad(x)


@case()
def ur_reduced_operand(jax, jnp, lax, P):
  # a reduced operand next to a varying one is cast reduced -> varying (JAX's implicit cast)
  def body(x, y):
    return x * lax.pcast(y, "i", to="reduced") + 1
  f = _smap(jax, body, (P("i"), P()), P("i"))
  x, y = _x(4, 4), _x(2, 4, seed=1)
  grad = jax.jit(jax.grad(lambda x, y: (f(x, y) ** 2).sum(), argnums=(0, 1)))
  return Jaxpr(jax.make_jaxpr(f)(x, y)), jax.jit(f)(x, y), grad(x, y)


@case()
def ur_unreduced_sum(jax, jnp, lax, P):
  def body(x, y):
    u = lax.pcast(x, "i", to="unreduced") + lax.pcast(y, "i", to="unreduced")
    return lax.psum({"a": u, "b": y}, "i")
  f = _smap(jax, body, (P("i"), P("i")), P())
  x, y = _x(4, 4), _x(4, 4, seed=2)
  return Jaxpr(jax.make_jaxpr(f)(x, y)), jax.jit(f)(x, y)


@case()
def ur_vjp_in_body(jax, jnp, lax, P):
  # the transposes of the casts, staged inside the body
  def g(x, y):
    u = lax.pcast(x * y, "i", to="unreduced")
    return lax.pcast(lax.pcast(lax.psum(u, "i"), "i", to="reduced"), "i", to="varying")

  def body(x, y):
    out, pull = jax.vjp(g, x, y)
    return pull(out)
  f = _smap(jax, body, (P("i"), P("i")), (P("i"), P("i")))
  x, y = _x(4, 4), _x(4, 4, seed=3)
  return Jaxpr(jax.make_jaxpr(f)(x, y)), jax.jit(f)(x, y)


@case()
def ur_gather_scatter(jax, jnp, lax, P):
  # all_gather(to='reduced') (varying -> reduced) and psum_scatter of an unreduced value
  # (unreduced -> varying), each the other's transpose
  def body(x):
    g = lax.pcast(lax.all_gather(x, "i", tiled=True, to="reduced"), "i", to="varying")
    return lax.psum_scatter(lax.pcast(g * 3, "i", to="unreduced"), "i", tiled=True)
  f = _smap(jax, body, P("i"), P("i"))
  x = _x(4, 4)
  vjp = _smap(jax, lambda x: jax.vjp(body, x)[1](x)[0], P("i"), P("i"))
  untiled = _smap(jax, lambda x: lax.pcast(lax.all_gather(x, "i", axis=1, to="reduced"), "i",
                                           to="varying"), P("i"), P("i"))
  errors = [
      lambda: jax.make_jaxpr(_smap(jax, lambda x: lax.all_gather(x, "i", to="reduced"), P(),
                                   P()))(x),
      lambda: jax.make_jaxpr(_smap(jax, lambda x: lax.all_gather(
          x, "i", to="reduced", axis_index_groups=[[0, 1]]), P("i"), P()))(x),
      lambda: jax.make_jaxpr(_smap(jax, lambda x: lax.psum_scatter(
          lax.pcast(x, "i", to="unreduced"), "j", tiled=True), P("i"), P()))(x),
      lambda: jax.vmap(_smap(jax, lambda x: lax.pcast(lax.all_gather(
          x, "i", to="reduced", tiled=True), "i", to="varying")[:2] + x, P("i"), P("i")))(
              np.stack([x, x]))]
  return (Jaxpr(jax.make_jaxpr(f)(x)), jax.jit(f)(x),
          jax.jit(jax.grad(lambda x: (f(x) * jnp.arange(4.0)).sum()))(x),
          Jaxpr(jax.make_jaxpr(vjp)(x)), jax.jit(vjp)(x), Jaxpr(jax.make_jaxpr(untiled)(x)),
          [_outcome(e, False) for e in errors])


@case()
def ur_inside_jaxprs(jax, jnp, lax, P):
  # unreduced/reduced values through jit, scan and cond bodies, and remat's transpose
  x = _x(4, 4)
  u = lambda x: lax.pcast(x, "i", to="unreduced")   # noqa: E731
  r = lambda x: lax.pcast(x, "i", to="reduced")     # noqa: E731
  fs = [_smap(jax, lambda x: lax.psum(jax.jit(lambda a: a + a)(u(x)), "i"), P("i"), P()),
        _smap(jax, lambda x: lax.pcast(lax.scan(lambda c, a: (c * c, None), r(x), None,
                                                length=2)[0], "i", to="varying"), P(), P("i")),
        _smap(jax, lambda x: lax.psum(lax.cond(True, lambda a: a + a, lambda a: a, u(x)), "i"),
              P("i"), P())]
  ck = _smap(jax, lambda x: lax.psum(jax.checkpoint(lambda a: u(a * 2))(x), "i"), P("i"), P())
  bad = _smap(jax, lambda x: lax.psum(lax.cond(True, lambda a: a, lambda a: lax.psum(a, "i"),
                                               u(x)), "i"), P("i"), P())
  return ([(Jaxpr(jax.make_jaxpr(f)(x)), np.asarray(jax.jit(f)(x))) for f in fs] +
          [np.asarray(jax.jit(jax.grad(lambda x: (ck(x) * x[:2]).sum()))(x)),
           _outcome(lambda: jax.make_jaxpr(bad)(x), False)])


@case()
def ur_check_vma_false(jax, jnp, lax, P):
  g = _smap(jax, lambda x: lax.pcast(x, "i", to="reduced") * 2, P(), P(), check_vma=False)
  x = _x(4, 4)
  return (Jaxpr(jax.make_jaxpr(g)(x)), g(x),
          _outcome(lambda: _smap(jax, lambda x: lax.pcast(x, "i", to="unreduced"), P("i"), P("i"),
                                 check_vma=False)(x)))


def _ur_error_bodies(jax, jnp, lax, P):
  u = lambda x: lax.pcast(x, "i", to="unreduced")   # noqa: E731
  r = lambda x: lax.pcast(x, "i", to="reduced")     # noqa: E731
  return [
      (lambda x, y: lax.psum(u(x) * y[:2], "i"), (P("i"), P()), P()),
      (lambda x, y: lax.psum(u(x) * u(y), "i"), (P("i"), P("i")), P()),
      (lambda x, y: lax.psum(u(x) + y[:2], "i"), (P("i"), P()), P()),
      (lambda x, y: lax.psum(u(x) + lax.pcast(y, "j", to="unreduced"), ("i", "j")),
       (P("i"), P("j")), P()),
      (lambda x, y: lax.psum(jnp.sin(u(x)), "i"), (P("i"), P()), P()),
      (lambda x, y: lax.psum(u(x) @ y, "i"), (P("i"), P()), P()),
      (lambda x, y: lax.pcast(u(x), "i", to="varying"), (P("i"), P()), P("i")),
      (lambda x, y: lax.psum(lax.pcast(x, "i", to="unreduced"), ("i", "j")), (P("i", "j"), P()),
       P()),
      (lambda x, y: lax.pmax(u(x), "i"), (P("i"), P()), P()),
      (lambda x, y: lax.all_gather(u(x), "i"), (P("i"), P()), P()),
      (lambda x, y: lax.ppermute(r(y), "i", [(0, 1), (1, 0)]), (P("i"), P()), P("i")),
      (lambda x, y: lax.pcast(r(y), "i", to="unreduced"), (P("i"), P()), P()),
      (lambda x, y: r(r(y)), (P("i"), P()), P()),
      (lambda x, y: lax.pcast(x, "i", to="reduced"), (P("i"), P()), P("i")),
      (lambda x, y: lax.pcast(y, "i", to="unreduced"), (P("i"), P()), P("i")),
      (lambda x, y: lax.psum(r(y), "i"), (P("i"), P()), P()),
      (lambda x, y: r(y) * y, (P("i"), P()), P()),
      (lambda x, y: r(y) + lax.pcast(y, "j", to="reduced"), (P("i"), P()), P()),
      (lambda x, y: u(x), (P("i"), P()), P()),
      (lambda x, y: r(y), (P("i"), P()), P()),
      (lambda x, y: r(y), (P("i"), P()), P("i")),
      (lambda x, y: u(x), (P("i"), P()), P(unreduced={"i"})),
      (lambda x, y: r(y), (P("i"), P()), P(reduced={"i"})),
  ]


@case()
def ur_errors_traced(jax, jnp, lax, P):
  x, y = _x(4, 4), _x(4, 4, seed=1)
  return [_outcome(lambda f=f, i=i, o=o: jax.make_jaxpr(_smap(jax, f, i, o))(x, y), False)
          for f, i, o in _ur_error_bodies(jax, jnp, lax, P)]


@case(message=True)
def ur_errors_messages(jax, jnp, lax, P):
  x, y = _x(4, 4), _x(4, 4, seed=1)
  picked = [0, 2, 4, 6, 8, 11, 15, 16, 21]
  bodies = _ur_error_bodies(jax, jnp, lax, P)
  return [_outcome(lambda f=bodies[k][0], i=bodies[k][1], o=bodies[k][2]:
                   jax.make_jaxpr(_smap(jax, f, i, o))(x, y)) for k in picked]


@case(message=True)
def ur_errors_misc(jax, jnp, lax, P):
  x = _x(4, 4)
  body = lambda x: lax.psum(lax.pcast(x, "i", to="unreduced"), "i")   # noqa: E731
  return [
      # eagerly JAX runs the body op by op: an unreduced value over an Auto mesh raises
      _outcome(lambda: _smap(jax, body, P("i"), P())(x)),
      _outcome(lambda: jax.jit(_smap(jax, body, P("i"), P()))(x)),
      _outcome(lambda: lax.pcast(x, "i", to="reduced")),
      _outcome(lambda: jax.shard_map(lambda x: x, mesh=_mesh(jax), in_specs=P(reduced={"j"}),
                                     out_specs=P(), axis_names={"i"})(x)),
      _outcome(lambda: jax.vmap(_smap(jax, body, P("i"), P()))(np.stack([x, x]))),
  ]


@case(message=True)
def mixed_axis_states(jax, jnp, lax, P):
  # psum/pmean/psum_scatter over axes some of which the operand varies over and some not
  x = _x(4, 4)
  m = lambda f, o=P(): jax.jit(_smap(jax, f, P("i"), o))   # noqa: E731
  return [_outcome(lambda: m(lambda x: lax.psum(x, ("i", "j")))(x)),
          _outcome(lambda: m(lambda x: lax.pmean(x, ("i", "j")))(x), False),
          _outcome(lambda: m(lambda x: lax.psum_scatter(x, ("i", "j"), tiled=True),
                             P(("i", "j")))(x), False),
          _outcome(lambda: m(lambda x: x * lax.axis_size(("i", "j")), P("i"))(x))]


# ---- nested shard_map -----------------------------------------------------------------------------
def _nested(jax, lax, P, inner_specs=("j",), check_vma=True, inner_axes=frozenset({"j"})):
  def inner(y):
    return lax.psum(y, "j") * 2

  def outer(x):
    z = jax.shard_map(inner, in_specs=P(None, *inner_specs), out_specs=P(),
                      axis_names=inner_axes)(x)
    return z + lax.axis_index("i")
  return _smap(jax, outer, P("i"), P("i"), axis_names={"i"}, check_vma=check_vma)


@case()
def nested_basic(jax, jnp, lax, P):
  seen = []

  def inner(y):
    seen.append([str(jax.typeof(y)), repr(jax.sharding.get_abstract_mesh())])
    return lax.psum(y, "j") * 2

  def outer(x):
    seen.append(str(jax.typeof(x)))
    z = jax.shard_map(inner, in_specs=P(None, "j"), out_specs=P(), axis_names={"j"})(x)
    seen.append(str(jax.typeof(z)))
    return z + lax.axis_index("i")
  f = _smap(jax, outer, P("i"), P("i"), axis_names={"i"})
  x = _x(4, 4)
  return Jaxpr(jax.make_jaxpr(f)(x)), f(x), np.asarray(jax.jit(f)(x)), sorted(set(map(str, seen)))


@case()
def nested_variants(jax, jnp, lax, P):
  x = _x(4, 4)
  mesh = _mesh(jax)

  def outer2(x):
    return jax.shard_map(lambda y: y * lax.axis_index("j") + lax.axis_index("i"),
                         in_specs=P(None, "j"), out_specs=P(None, "j"), axis_names={"j"})(
                             jnp.sin(x))
  k = _smap(jax, outer2, P("i"), P("i"), axis_names={"i"})
  # the inner shard_map on the context's abstract mesh; over all its axes (the outer's manual
  # one stays manual); with check_vma=False outside
  h = _smap(jax, lambda x: jax.shard_map(lambda y: y * 2, mesh=jax.sharding.get_abstract_mesh(),
                                         in_specs=P(None, "j"), out_specs=P(None, "j"),
                                         axis_names={"j"})(x), P("i"), P("i"), axis_names={"i"})
  g = _smap(jax, lambda x: jax.shard_map(lambda y: y * 2, in_specs=P("j"), out_specs=P("j"))(x),
            P("i"), P("i"), axis_names={"i"})
  kv = _smap(jax, outer2, P("i"), P("i"), axis_names={"i"}, check_vma=False)
  with jax.set_mesh(mesh):
    setmesh = jax.jit(jax.shard_map(outer2, in_specs=P("i"), out_specs=P("i"),
                                    axis_names={"i"}))(x)
  # (values only: JAX names the jit results' layouts as XLA propagates them from the inner one)
  return [(Jaxpr(jax.make_jaxpr(f)(x)), np.asarray(jax.jit(f)(x))) for f in (k, h, g)] + [
      Jaxpr(jax.make_jaxpr(kv)(x)), np.asarray(setmesh)]


@case()
def nested_transforms(jax, jnp, lax, P):
  def outer(x):
    return jax.shard_map(lambda y: lax.psum(y, "j") * lax.axis_index("i"),
                         in_specs=P(None, "j"), out_specs=P(), axis_names={"j"})(x)
  f = _smap(jax, outer, P("i"), P("i"), axis_names={"i"})
  x = _x(2, 4, 4)
  return [np.asarray(jax.vmap(f)(x)), np.asarray(jax.jit(jax.vmap(f))(x)),
          [np.asarray(a) for a in jax.jvp(f, (x[0],), (x[1],))]]


@case()
def nested_grad(jax, jnp, lax, P):
  # JAX 0.10.2 cannot differentiate a nested shard_map (DuplicateSpecError eagerly, a Shardy
  # verifier error under jit): arrax's gradients are compared with JAX's of the same function
  # written as one shard_map over both axes.
  x = _x(4, 4)
  body = lambda y: jnp.sin(y) * (lax.axis_index("j") + 1.0) + lax.axis_index("i")  # noqa: E731
  if jax.__name__ == "arrax":
    f = _smap(jax, lambda x: jax.shard_map(body, in_specs=P(None, "j"), out_specs=P(None, "j"),
                                           axis_names={"j"})(x), P("i"), P("i"),
              axis_names={"i"})
    g = _nested(jax, lax, P)
  else:
    f = _smap(jax, body, P("i", "j"), P("i", "j"))
    g = _smap(jax, lambda x: (lax.psum(x, "j") * 2 + lax.axis_index("i")), P("i", "j"),
              P("i", None))
  loss_f = lambda x: (f(x) ** 2).sum()   # noqa: E731
  loss_g = lambda x: (g(x) * jnp.arange(2.0)).sum()   # noqa: E731
  return [np.asarray(jax.grad(loss_f)(x)), np.asarray(jax.jit(jax.grad(loss_f))(x)),
          np.asarray(jax.jit(jax.grad(loss_g))(x)), np.asarray(jax.jit(g)(x))]


@case()
def nested_errors(jax, jnp, lax, P):
  x = _x(4, 4)
  mesh = _mesh(jax)
  remap = _smap(jax, lambda x: jax.shard_map(lambda y: y * 2, in_specs=P("i"), out_specs=P("i"),
                                             axis_names={"i"})(x), P("i"), P("i"),
                axis_names={"i"})
  concrete = _smap(jax, lambda x: jax.shard_map(lambda y: y, mesh=mesh, in_specs=P(None, "j"),
                                                out_specs=P(None, "j"), axis_names={"j"})(x),
                   P("i"), P("i"), axis_names={"i"})
  return [_outcome(lambda: jax.jit(remap)(x), False), _outcome(lambda: concrete(x))]


# ---- running and comparing -----------------------------------------------------------------------
def run_case(name, fn, libs):
  outs = []
  for mods in libs:
    try:
      outs.append(describe(fn(*mods)))
    except Exception as e:  # noqa: BLE001
      outs.append(_error(e, name in _MESSAGES))
  outs = [json.loads(json.dumps(o, default=repr)) for o in outs]
  return "ok" if same(outs[0], outs[1]) else first_difference(outs[0], outs[1])


def main():
  import warnings
  warnings.simplefilter("ignore")
  import arrax
  import arrax.lax as alax
  import arrax.numpy as anp
  import jax
  import jax.lax as jlax
  import jax.numpy as jnp
  libs = [(arrax, anp, alax, arrax.sharding.PartitionSpec),
          (jax, jnp, jlax, jax.sharding.PartitionSpec)]
  results = {}
  for name, fn in CASES.items():
    try:
      results[name] = run_case(name, fn, libs)
    except Exception:  # noqa: BLE001
      results[name] = traceback.format_exc()
  sys.stdout.write("RESULTS" + json.dumps(results))
