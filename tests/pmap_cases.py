"""Cases of tests/test_pmap.py, run in a subprocess with several simulated CPU devices.

Each case is a function `(jax, jnp, lax) -> pytree` run once with arrax and once with JAX 0.10.2;
`main` compares values, dtypes, shapes, weak types and output shardings (class, spec, devices),
or the error class when JAX raises, and prints one JSON object {case: "ok" | failure}.
This module imports neither library itself: the subprocess sets XLA_FLAGS first.
"""
import json
import sys
import traceback

import numpy as np

from tests.multidevice import builtin_base, rand as _x

CASES = {}    # name -> (function, minimum device count)


def case(min_devices=4):
  def register(fn):
    CASES[fn.__name__] = (fn, min_devices)
    return fn
  return register


# ---- in_axes / out_axes ------------------------------------------------------------------------
@case()
def basic_map(jax, jnp, lax):
  return jax.pmap(lambda x: jnp.sin(x) * 2)(_x(4, 3))


@case()
def psum_basic(jax, jnp, lax):
  return jax.pmap(lambda x: lax.psum(x, "i"), "i")(_x(4, 3))


@case()
def in_axes_none_out_axes_none(jax, jnp, lax):
  f = jax.pmap(lambda x, y: (x * 2, lax.psum(x, "i") + y), "i", in_axes=(0, None),
               out_axes=(0, None))
  return f(_x(4, 2), np.float32(1.5))


@case()
def python_scalar_broadcast(jax, jnp, lax):
  return jax.pmap(lambda x, y: x + y, in_axes=(0, None))(_x(4, 2), 3.0)


@case()
def in_axes_1(jax, jnp, lax):
  return jax.pmap(lambda x: x * 3, in_axes=1)(_x(2, 4, 3))


@case()
def in_axes_negative(jax, jnp, lax):
  return jax.pmap(lambda x: x.sum(), in_axes=-1)(_x(3, 4))


@case()
def out_axes_1(jax, jnp, lax):
  return jax.pmap(lambda x: x + 1, out_axes=1)(_x(4, 3, 2))


@case()
def out_axes_negative(jax, jnp, lax):
  return jax.pmap(lambda x: x + 1, out_axes=-1)(_x(4, 3))


@case()
def pytree_in_out(jax, jnp, lax):
  f = jax.pmap(lambda d, t: {"s": d["a"] + t[0], "p": (d["b"] * t[1], lax.pmax(t[0], "i"))},
               "i", in_axes=({"a": 0, "b": None}, 0), out_axes={"s": 0, "p": (None, None)})
  return f({"a": _x(4, 3), "b": np.float32(2.0)}, (_x(4, 3, seed=1), _x(4, 1, seed=2)))


@case()
def kwargs_are_mapped(jax, jnp, lax):
  return jax.pmap(lambda x, y=None: x * y)(_x(4, 2), y=_x(4, 2, seed=3))


@case()
def out_none_from_replicated_value(jax, jnp, lax):
  return jax.pmap(lambda x, w: (w * 2, lax.pmean(x, "i")), "i", in_axes=(0, None),
                  out_axes=None)(_x(4, 3), _x(3, seed=4))


@case()
def static_broadcasted_argnums(jax, jnp, lax):
  f = jax.pmap(lambda n, x: x ** n + lax.psum(n, "i"), "i", static_broadcasted_argnums=0)
  return f(3, _x(4, 2)), f(2, _x(4, 2))


@case()
def devices_argument(jax, jnp, lax):
  out = jax.pmap(lambda x: lax.psum(x, "i"), "i", devices=jax.devices()[:2])(_x(2, 3))
  return out


@case()
def devices_out_of_order(jax, jnp, lax):
  devs = jax.devices()
  f = jax.pmap(lambda x: (lax.psum(x, "i"), lax.axis_index("i") * x), "i",
               devices=[devs[3], devs[1]])
  return f(_x(2, 3))


@case()
def error_axis_size_mismatch(jax, jnp, lax):
  return jax.pmap(lambda x: x, axis_size=3)(_x(4, 3))


@case()
def error_inconsistent_sizes(jax, jnp, lax):
  return jax.pmap(lambda x, y: x + y)(_x(4, 3), _x(2, 3))


@case()
def fewer_than_all_devices(jax, jnp, lax):
  return jax.pmap(lambda x: lax.psum(x, "i") * lax.axis_index("i"), "i")(_x(2, 3))


@case(min_devices=8)
def eight_devices(jax, jnp, lax):
  return jax.pmap(lambda x: (lax.psum(x, "i"), lax.axis_index("i")), "i")(_x(8, 2))


# ---- collectives -------------------------------------------------------------------------------
@case()
def pmean_pmax_pmin(jax, jnp, lax):
  return jax.pmap(lambda x: (lax.pmean(x, "i"), lax.pmax(x, "i"), lax.pmin(x, "i")),
                  "i")(_x(4, 5))


@case()
def psum_dtypes(jax, jnp, lax):
  outs = []
  for dt in (np.int32, np.int8, np.uint8, np.float16, jnp.bfloat16, np.complex64):
    outs.append(jax.pmap(lambda x: lax.psum(x, "i"), "i")(_x(4, 3, dtype=dt)))
  outs.append(jax.pmap(lambda x: lax.psum(x, "i"), "i")(_x(4, 3, dtype=np.bool_)))
  return outs


@case()
def pmax_int_and_bool(jax, jnp, lax):
  return (jax.pmap(lambda x: lax.pmax(x, "i"), "i")(_x(4, 3, dtype=np.int32)),
          jax.pmap(lambda x: lax.pmin(x, "i"), "i")(_x(4, 3, dtype=np.int8)))


@case()
def psum_scalar_and_constant(jax, jnp, lax):
  return jax.pmap(lambda x: (lax.psum(x.sum(), "i"), lax.psum(1, "i"), lax.psum(2.0, "i")),
                  "i")(_x(4, 3))


@case()
def psum_tuple_tree(jax, jnp, lax):
  return jax.pmap(lambda x: lax.psum((x, {"y": x * 2}), "i"), "i")(_x(4, 3))


@case()
def axis_index(jax, jnp, lax):
  return jax.pmap(lambda x: x * lax.axis_index("i"), "i")(_x(4, 3))


@case()
def psum_axis_index_groups(jax, jnp, lax):
  return jax.pmap(lambda x: lax.psum(x, "i", axis_index_groups=[[0, 1], [2, 3]]), "i")(_x(4, 3))


@case()
def all_gather_variants(jax, jnp, lax):
  x = _x(4, 3, 2)
  return (jax.pmap(lambda v: lax.all_gather(v, "i"), "i")(x),
          jax.pmap(lambda v: lax.all_gather(v, "i", axis=1), "i")(x),
          jax.pmap(lambda v: lax.all_gather(v, "i", tiled=True), "i")(x),
          jax.pmap(lambda v: lax.all_gather(v, "i", axis=1, tiled=True), "i")(x),
          jax.pmap(lambda v: lax.all_gather(v.sum(), "i"), "i")(x))


@case()
def psum_scatter_variants(jax, jnp, lax):
  x = _x(4, 4, 8)
  return (jax.pmap(lambda v: lax.psum_scatter(v, "i"), "i")(x),
          jax.pmap(lambda v: lax.psum_scatter(v, "i", tiled=True), "i")(x),
          jax.pmap(lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True),
                   "i")(x),
          jax.pmap(lambda v: lax.psum_scatter(v[:, :4], "i", scatter_dimension=1), "i")(x))


@case()
def all_to_all_variants(jax, jnp, lax):
  x = _x(4, 4, 8)
  return (jax.pmap(lambda v: lax.all_to_all(v, "i", 0, 0), "i")(x),
          jax.pmap(lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True), "i")(x),
          jax.pmap(lambda v: lax.all_to_all(v, "i", 0, 1), "i")(x),
          jax.pmap(lambda v: lax.all_to_all(v[:, :4], "i", 1, 0), "i")(x))


@case()
def ppermute_variants(jax, jnp, lax):
  x = _x(4, 3)
  ring = [(i, (i + 1) % 4) for i in range(4)]
  return (jax.pmap(lambda v: lax.ppermute(v, "i", ring), "i")(x),
          jax.pmap(lambda v: lax.ppermute(v, "i", [(0, 2), (3, 1)]), "i")(x),
          jax.pmap(lambda v: lax.pshuffle(v, "i", [3, 2, 0, 1]), "i")(x))


@case()
def pbroadcast(jax, jnp, lax):
  # JAX 0.10.2 cannot lower pbroadcast on CPU; its side computes the same with all_gather.
  if jax.__name__ == "arrax":
    bc = lambda v, src: lax.pbroadcast(v, "i", src)   # noqa: E731
  else:
    bc = lambda v, src: lax.all_gather(v, "i")[src]   # noqa: E731
  return (jax.pmap(lambda v: bc(v, 2), "i")(_x(4, 3)),
          jax.pmap(lambda v: bc(v.sum() > 0, 1), "i")(_x(4, 3)),
          jax.pmap(jax.grad(lambda v: jnp.sum(bc(v, 3) ** 2)), "i")(_x(4, 3)))


@case()
def pswapaxes(jax, jnp, lax):
  return jax.pmap(lambda v: lax.pswapaxes(v, "i", 0), "i")(_x(4, 4, 3))


# ---- transformations inside and around pmap ----------------------------------------------------
@case()
def grad_inside_with_pmean(jax, jnp, lax):
  def step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return lax.pmean((loss, g), "b")
  return jax.pmap(step, "b", in_axes=(None, 0, 0), out_axes=None)(
      _x(3, 2), _x(4, 5, 3, seed=1), _x(4, 5, 2, seed=2))


@case()
def pmap_of_grad(jax, jnp, lax):
  return jax.pmap(jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2)))(_x(4, 3))


@case()
def grad_through_psum(jax, jnp, lax):
  return jax.pmap(jax.grad(lambda x: lax.psum(x ** 2, "i").sum() + lax.axis_index("i")),
                  "i")(_x(4, 3))


@case()
def grad_through_collectives(jax, jnp, lax):
  def f(x):
    g = lax.all_gather(x, "i")
    p = lax.ppermute(x, "i", [(i, (i + 1) % 4) for i in range(4)])
    return jnp.sum(g * g) + jnp.sum(p * jnp.arange(3.0))
  return jax.pmap(jax.grad(f), "i")(_x(4, 3))


@case()
def vmap_inside_pmap(jax, jnp, lax):
  f = jax.pmap(lambda x: jax.vmap(lambda r: lax.psum(r, "i") + lax.psum(r, "v"),
                                  axis_name="v")(x), "i")
  return f(_x(4, 2, 3))


@case()
def jit_inside_pmap(jax, jnp, lax):
  inner = jax.jit(lambda x: lax.psum(x * 2, "i"))
  return jax.pmap(lambda x: inner(x) + 1, "i")(_x(4, 3))


@case()
def jit_of_pmap(jax, jnp, lax):
  f = jax.jit(jax.pmap(lambda x, y: lax.psum(x, "i") * y, "i", in_axes=(0, None)))
  return f(_x(4, 3), 2.0), f(_x(4, 3, seed=1), 3.0)


@case()
def grad_of_pmap(jax, jnp, lax):
  f = jax.pmap(lambda x: jnp.sin(x) * 2)
  return jax.grad(lambda x: f(x).sum())(_x(4, 3))


@case()
def grad_of_pmap_unmapped_in_and_out(jax, jnp, lax):
  g = jax.pmap(lambda w, x: lax.pmean(jnp.sum(jnp.tanh(x * w) ** 2), "i"), "i",
               in_axes=(None, 0), out_axes=None)
  w, x = _x(3, seed=1), _x(4, 3)
  return jax.grad(g)(w, x), jax.grad(g, argnums=1)(w, x), jax.jit(jax.grad(g))(w, x)


@case()
def grad_of_pmap_mixed_outputs(jax, jnp, lax):
  h = jax.pmap(lambda w, x: (x * w, lax.psum(x, "i") * w), "i", in_axes=(None, 0),
               out_axes=(0, None))
  x = _x(4, 3)
  v, g = jax.value_and_grad(lambda w: sum(jnp.sum(o ** 2) for o in h(w, x)))(_x(3, seed=2))
  return np.asarray(v), np.asarray(g)   # (eager sums of several results are gathered)


@case()
def grad_of_pmap_collectives(jax, jnp, lax):
  f = jax.pmap(lambda x, w: (lax.all_gather(x * w, "i"), lax.ppermute(x, "i", [(0, 1), (1, 0)]),
                             lax.psum_scatter(x * w, "i", tiled=True)),
               "i", in_axes=(0, None))
  return jax.grad(lambda x, w: sum(jnp.sum(o ** 3) for o in f(x, w)), argnums=(0, 1))(
      _x(4, 4), _x(4, seed=3))


@case()
def jvp_of_pmap(jax, jnp, lax):
  f = jax.pmap(lambda x, y: (lax.psum(x * y, "i"), jnp.cos(x)), "i", in_axes=(0, None))
  return jax.jvp(f, (_x(4, 3), _x(3, seed=1)), (_x(4, 3, seed=2), _x(3, seed=3)))


@case()
def vmap_of_pmap(jax, jnp, lax):
  f = jax.pmap(lambda x, y: lax.psum(x, "i") * y, "i", in_axes=(0, None))
  return (jax.vmap(f, in_axes=(0, None))(_x(2, 4, 3), 2.0),
          jax.vmap(f, in_axes=(2, 0))(_x(4, 3, 5), _x(5, seed=1)))


@case()
def control_flow_inside(jax, jnp, lax):
  def f(x):
    return lax.fori_loop(0, 3, lambda i, c: lax.psum(c, "i") / 4 + i, x)
  return jax.pmap(f, "i")(_x(4, 3))


@case()
def random_inside(jax, jnp, lax):
  keys = jax.random.split(jax.random.PRNGKey(0), 4)
  return jax.pmap(lambda k: jax.random.normal(k, (3,)))(keys)


# ---- results as inputs ---------------------------------------------------------------------------
@case()
def result_into_eager_and_jit(jax, jnp, lax):
  y = jax.pmap(lambda x: x * 2)(_x(4, 3))
  outs = (y + 1, jnp.sum(y, axis=0), jax.jit(lambda v: v @ np.ones(3, np.float32))(y), y[1],
          jnp.mean(y))
  return [(np.asarray(o), str(o.dtype), o.shape) for o in outs]


@case()
def eager_op_on_result_stays_sharded(jax, jnp, lax):
  return jax.pmap(lambda x: x * 2)(_x(4, 3)) + 1


@case()
def result_into_pmap_again(jax, jnp, lax):
  f = jax.pmap(lambda x: lax.psum(x, "i") + x, "i")
  y = f(_x(4, 3))
  for _ in range(3):
    y = f(y)
  return y


@case()
def replicated_result_into_pmap(jax, jnp, lax):
  f = jax.pmap(lambda w, x: (w - 0.1 * lax.pmean(x * w, "i"), lax.psum(x, "i").sum()), "i",
               in_axes=(None, 0), out_axes=(None, None))
  w = np.ones(3, np.float32)
  for i in range(3):
    w, s = f(w, _x(4, 3, seed=i))
  return w, s


@case()
def host_views(jax, jnp, lax):
  y = jax.pmap(lambda x: x + 1)(_x(4, 3))
  shards = y.addressable_shards
  return (np.asarray(y), str(y).replace(" ", ""), [int(s.device.id) for s in shards],
          [str(s.index) for s in shards], [np.asarray(s.data) for s in shards],
          sorted(d.id for d in y.devices()), y.tolist(), float(y[0, 0]),
          jax.device_get(y))


@case()
def replicated_host_views(jax, jnp, lax):
  y = jax.pmap(lambda x: lax.psum(x, "i"), "i", out_axes=None)(_x(4, 3))
  shards = y.addressable_shards
  return (np.asarray(y), [str(s.index) for s in shards], [s.replica_id for s in shards],
          [np.asarray(s.data) for s in shards], repr(y))


# ---- errors --------------------------------------------------------------------------------------
@case()
def error_too_many_devices(jax, jnp, lax):
  return jax.pmap(lambda x: x)(_x(8, 3))


@case()
def error_not_divisible(jax, jnp, lax):
  return jax.pmap(lambda x: x)(_x(5, 3))


@case()
def error_no_mapped_axis(jax, jnp, lax):
  return jax.pmap(lambda x: x, in_axes=None)(_x(4, 3))


@case()
def error_bad_in_axes_type(jax, jnp, lax):
  return jax.pmap(lambda x: x, in_axes=1.5)(_x(4, 3))


@case()
def error_static_argnum_out_of_range(jax, jnp, lax):
  return jax.pmap(lambda x, n: x, static_broadcasted_argnums=(1,))(_x(4, 3))


@case()
def error_unbound_axis_name(jax, jnp, lax):
  return jax.pmap(lambda x: lax.psum(x, "j"), "i")(_x(4, 3))


# ---- comparison ----------------------------------------------------------------------------------
def _describe(tree, jax_mod):
  leaves = jax_mod.tree_util.tree_leaves(tree)
  out = []
  for v in leaves:
    if isinstance(v, (str, int, float, list)) and not hasattr(v, "dtype"):
      out.append(("py", v))
      continue
    sh = getattr(v, "sharding", None)
    shd = None
    if sh is not None and type(v).__module__ != "numpy":
      shd = (type(sh).__name__, str(getattr(sh, "spec", None)),
             tuple(sorted(d.id for d in sh.device_set)))
    out.append(("arr", np.asarray(v), str(np.asarray(v).dtype), tuple(np.shape(v)),
                bool(getattr(v, "weak_type", False)), shd))
  return out


def _compare(a, j):
  if len(a) != len(j):
    return f"{len(a)} leaves vs JAX {len(j)}"
  for i, (x, y) in enumerate(zip(a, j)):
    if x[0] != y[0]:
      return f"leaf {i}: kind {x[0]} vs {y[0]}"
    if x[0] == "py":
      if x[1] != y[1]:
        return f"leaf {i}: {x[1]!r} vs JAX {y[1]!r}"
      continue
    _, av, adt, ash, awt, ashd = x
    _, jv, jdt, jsh, jwt, jshd = y
    if (adt, ash, awt) != (jdt, jsh, jwt):
      return f"leaf {i}: dtype/shape/weak {(adt, ash, awt)} vs JAX {(jdt, jsh, jwt)}"
    if ashd != jshd:
      return f"leaf {i}: sharding {ashd} vs JAX {jshd}"
    if av.dtype.kind in "fc" or str(av.dtype) == "bfloat16":
      tol = 1e-2 if str(av.dtype) in ("float16", "bfloat16") else 1e-5
      if not np.allclose(av.astype(np.complex128), jv.astype(np.complex128), rtol=tol,
                         atol=tol, equal_nan=True):
        return f"leaf {i}: values differ\n{av}\nvs JAX\n{jv}"
    elif not np.array_equal(av, jv):
      return f"leaf {i}: values differ\n{av}\nvs JAX\n{jv}"
  return None


def run_case(fn, arrax_mods, jax_mods):
  try:
    expected = ("ok", _describe(fn(*jax_mods), jax_mods[0]))
  except Exception as e:   # noqa: BLE001
    expected = ("raise", builtin_base(e))
  try:
    actual = ("ok", _describe(fn(*arrax_mods), arrax_mods[0]))
  except Exception as e:   # noqa: BLE001
    if expected[0] == "raise" and isinstance(e, expected[1]):
      return "ok"
    return f"arrax raised {type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}"
  if expected[0] == "raise":
    return f"JAX raised {expected[1].__name__}, arrax returned"
  return _compare(actual[1], expected[1]) or "ok"


def main(ndev):
  import arrax
  import arrax.numpy as anp
  import arrax.lax as alax
  import jax
  import jax.numpy as jnp
  import jax.lax as jlax
  assert jax.device_count() == ndev and arrax.device_count() == ndev
  results = {}
  for name, (fn, need) in CASES.items():
    if need != ndev:
      continue
    results[name] = run_case(fn, (arrax, anp, alax), (jax, jnp, jlax))
    arrax.clear_caches()
  sys.stdout.write("RESULTS" + json.dumps(results))
