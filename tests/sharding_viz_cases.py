"""Cases of tests/test_sharding_viz.py, run in a subprocess with 1, 2, 4 or 8 simulated CPU devices.

Each case is a function `(jax, jnp, ndev) -> list of strings` run once with arrax and once with
JAX 0.10.2: the text `visualize_(array_)sharding` printed (captured from stdout) and the reprs of
the shardings `inspect_array_sharding` called back with. The two lists must be equal. This module
imports neither library itself: the subprocess sets XLA_FLAGS first.
"""
import contextlib
import io
import json
import os
import sys
import traceback

import numpy as np

CASES = {}


def case(fn):
  CASES[fn.__name__] = fn
  return fn


def _drawn(fn, *args, **kwargs):
  buf = io.StringIO()
  with contextlib.redirect_stdout(buf):
    fn(*args, **kwargs)
  return buf.getvalue()


def _meshes(jax, ndev):
  """(name, mesh) of every 1-D and 2-D mesh shape over the ndev devices."""
  out = [("1d", jax.make_mesh((ndev,), ("x",)))]
  for rows in range(1, ndev + 1):
    if ndev % rows == 0:
      out.append((f"2d{rows}", jax.make_mesh((rows, ndev // rows), ("x", "y"))))
  return out


_SPECS_1D = [(), ("x",), (None,)]
_SPECS_2D = [(), ("x",), ("y",), ("x", "y"), ("y", "x"), (None, "y"), (None, "x"),
             (("x", "y"),), (None, ("x", "y")), (("y", "x"), None)]


def _shape_fits(shape, mesh, spec):
  for n, p in zip(shape, spec):
    names = () if p is None else (p,) if isinstance(p, str) else p
    size = int(np.prod([mesh.shape[a] for a in names])) if names else 1
    if n % size:
      return False
  return True


@case
def device_put_named(jax, jnp, ndev):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  out = []
  for _, mesh in _meshes(jax, ndev):
    specs = _SPECS_1D if len(mesh.axis_names) == 1 else _SPECS_2D
    for spec in specs:
      for shape in [(8,), (16,), (8, 8), (4, 16), (16, 4)]:
        if len(spec) > len(shape) or not _shape_fits(shape, mesh, spec):
          continue
        a = jax.device_put(np.zeros(shape, np.float32), NS(mesh, P(*spec)))
        out.append(f"{mesh.shape} {spec} {shape}\n" +
                   _drawn(jax.debug.visualize_array_sharding, a, use_color=False))
  return out


@case
def default_and_single_device(jax, jnp, ndev):
  d = jax.devices()[-1]
  out = [_drawn(jax.debug.visualize_array_sharding, jnp.ones(s)) for s in [(3,), (5, 7), (1, 40)]]
  for s in [(8,), (2, 3), (100, 3)]:
    a = jax.device_put(np.ones(s), jax.sharding.SingleDeviceSharding(d))
    out.append(_drawn(jax.debug.visualize_array_sharding, a, use_color=False))
  return out


@case
def options(jax, jnp, ndev):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  mesh = jax.make_mesh((ndev,), ("x",))
  out = []
  for shape, spec in [((8,), P("x")), ((8, 8), P("x")), ((8, 16), P(None, "x"))]:
    for kw in [dict(scale=0.5), dict(scale=2.0), dict(min_width=20), dict(max_width=30),
               dict(min_width=3, max_width=200, scale=1.5)]:
      out.append(f"{shape} {kw}\n" + _drawn(jax.debug.visualize_sharding, shape,
                                            NS(mesh, spec), use_color=False, **kw))
  return out


@case
def with_color(jax, jnp, ndev):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  os.environ["FORCE_COLOR"] = "1"
  try:
    out = []
    for mesh_name, mesh in _meshes(jax, ndev):
      spec = P("x") if mesh_name == "1d" else P("x", "y")
      for cmap in [lambda v: (v, 0.5, 1 - v, 1.0), lambda v: (0.9, 0.9, v, 1.0)]:
        out.append(_drawn(jax.debug.visualize_sharding, (8, 8), NS(mesh, spec), color_map=cmap))
    assert all("\x1b[" in o for o in out)   # (colored)
    out.append(_drawn(jax.debug.visualize_sharding, (8, 8), NS(mesh, P())))  # no matplotlib
    return out
  finally:
    del os.environ["FORCE_COLOR"]


@case
def jit_out_shardings(jax, jnp, ndev):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  mesh = _meshes(jax, ndev)[-1][1] if ndev > 1 else jax.make_mesh((1, 1), ("x", "y"))
  out = []
  for spec in [P("x"), P(None, "y"), P("x", "y"), P()]:
    f = jax.jit(lambda a: a * 2, out_shardings=NS(mesh, spec))
    out.append(_drawn(jax.debug.visualize_array_sharding, f(jnp.ones((8, 8))), use_color=False))
  return out


@case
def pmap_result(jax, jnp, ndev):
  a = jax.pmap(lambda v: v * 2)(jnp.ones((ndev, 6)))
  return [_drawn(jax.debug.visualize_array_sharding, a, use_color=False)]


@case
def shard_map_result(jax, jnp, ndev):
  P = jax.sharding.PartitionSpec
  mesh = jax.make_mesh((ndev,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
  f = jax.shard_map(lambda v: v + 1, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
  g = jax.shard_map(lambda v: v + 1, mesh=mesh, in_specs=P(None, "x"), out_specs=P(None, "x"))
  return [_drawn(jax.debug.visualize_array_sharding, f(jnp.ones((2 * ndev,))), use_color=False),
          _drawn(jax.debug.visualize_array_sharding, g(jnp.ones((4, 2 * ndev))),
                 use_color=False)]


@case
def inspect_eager_and_tree(jax, jnp, ndev):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  mesh = jax.make_mesh((ndev,), ("x",))
  seen = []
  a = jax.device_put(np.ones((ndev, 2)), NS(mesh, P("x")))
  jax.debug.inspect_array_sharding({"a": a, "b": [jnp.ones(3)]},
                                   callback=lambda s: seen.append(repr(s)))
  return seen


@case
def inspect_under_jit(jax, jnp, ndev):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  seen = []

  def f(v):
    w = jnp.sin(v)
    jax.debug.inspect_array_sharding(w, callback=lambda s: seen.append(repr(s)))
    return w * 2

  x = np.ones((8, 8), np.float32)
  jax.jit(f)(x)
  jax.jit(f)(x)   # (cached: no second call)
  seen.append("--")
  mesh = jax.make_mesh((ndev,), ("x",))
  g = jax.jit(f, in_shardings=NS(mesh, P("x")), out_shardings=NS(mesh, P("x")))
  g(x)
  seen.append("--")
  h = jax.jit(f, in_shardings=NS(mesh, P(None, "x")), out_shardings=NS(mesh, P()))
  h(x)
  return seen


@case
def visualize_under_jit(jax, jnp, ndev):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  mesh = jax.make_mesh((ndev,), ("x",))

  def f(v):
    jax.debug.visualize_array_sharding(v * 2, use_color=False)
    return v + 1

  return [_drawn(jax.jit(f), jnp.ones((8, 4))),
          _drawn(jax.jit(f, in_shardings=NS(mesh, P("x")), out_shardings=NS(mesh, P("x"))),
                 np.ones((8, 4), np.float32))]


@case
def inspect_in_shard_map_and_pmap(jax, jnp, ndev):
  P = jax.sharding.PartitionSpec
  mesh = jax.make_mesh((ndev,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
  seen = []

  def body(v):
    jax.debug.inspect_array_sharding(v, callback=lambda s: seen.append(repr(s)))
    return v * 2

  f = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
  for run in [f, jax.jit(f), jax.jit(lambda v: f(v) + 1), jax.pmap(body)]:
    run(np.ones((ndev, 2), np.float32))
    seen.append("--")
  return seen


@case
def error_raised_by_callback_at_compile_time(jax, jnp, ndev):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  mesh = jax.make_mesh((ndev,), ("x",))

  def f(v):
    jax.debug.visualize_array_sharding(v)
    return v

  try:
    jax.jit(f, in_shardings=NS(mesh, P("x")))(np.ones((ndev, 2, 2), np.float32))
  except Exception as e:  # noqa: BLE001
    return [type(e).__name__, "only works for shapes" in str(e)]
  return ["no error"]


@case
def errors(jax, jnp, ndev):
  out = []
  for s in [(), (2, 2, 2)]:
    try:
      jax.debug.visualize_array_sharding(jnp.ones(s))
    except Exception as e:  # noqa: BLE001
      out.append(f"{type(e).__name__}: {e}")
  return out


def main(ndev):
  import warnings
  warnings.simplefilter("ignore")
  import arrax
  import arrax.numpy as anp
  import jax
  import jax.numpy as jnp
  assert jax.device_count() == ndev and arrax.device_count() == ndev
  results = {}
  for name, fn in CASES.items():
    try:
      ours = fn(arrax, anp, ndev)
    except Exception:  # noqa: BLE001
      results[name] = "arrax raised:\n" + traceback.format_exc()
      continue
    try:
      theirs = fn(jax, jnp, ndev)
    except Exception:  # noqa: BLE001
      results[name] = "jax raised:\n" + traceback.format_exc()
      continue
    if ours == theirs:
      results[name] = "ok" if ours and all(ours) else f"nothing produced: {ours!r}"
    else:
      i = next((i for i, (u, v) in enumerate(zip(ours, theirs)) if u != v),
               min(len(ours), len(theirs)))
      results[name] = (f"item {i} of {len(ours)}/{len(theirs)} differs:\narrax:\n"
                       f"{ours[i] if i < len(ours) else None}\njax:\n"
                       f"{theirs[i] if i < len(theirs) else None}")
  sys.stdout.write("RESULTS" + json.dumps(results))
