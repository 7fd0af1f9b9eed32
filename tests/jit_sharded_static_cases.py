"""Cases of tests/test_jit_sharded_static.py (jit with shardings and static/donated arguments),
run in a subprocess with 4 simulated CPU devices, once with arrax and once with JAX 0.10.2.
Each case returns plain data (`sharding_cases.describe`); errors compare by builtin base class
and, for the names in _MESSAGES, message."""
import json
import sys
import traceback
import warnings

import numpy as np

from tests.multidevice import first_difference, same
from tests.sharding_cases import _error, describe

CASES = {}
_MESSAGES = {"error_static_kwarg_with_in_shardings", "error_in_shardings_count_with_static", "error_device_with_in_shardings",
             "error_backend_with_out_shardings", "error_device_and_backend"}


def case(fn):
  CASES[fn.__name__] = fn
  return fn


def _x():
  return np.arange(16, dtype=np.float32).reshape(4, 4)


def _mesh(jax):
  return jax.make_mesh((2, 2), ("x", "y"))


@case
def static_argnums_retrace(jax, jnp):
  m, NS, P = _mesh(jax), jax.NamedSharding, jax.P
  traces = []

  def f(a, n, b):
    traces.append(n)
    return a * n + b
  g = jax.jit(f, static_argnums=1, in_shardings=(NS(m, P("x")), NS(m, P(None, "y"))),
              out_shardings=NS(m, P("x", "y")))
  outs = [g(_x(), 2, _x()), g(_x(), 2, _x()), g(_x(), 3, _x()), g(_x(), 2.0, _x())]
  return outs, traces, g._cache_size()


@case
def static_argnames_positional(jax, jnp):
  m, NS, P = _mesh(jax), jax.NamedSharding, jax.P
  g = jax.jit(lambda a, b, *, scale=1: (a + b) * scale, static_argnames="scale",
              out_shardings=(NS(m, P("y")),))
  return g(_x(), _x(), scale=3), g(_x(), _x())


@case
def error_static_kwarg_with_in_shardings(jax, jnp):
  m = _mesh(jax)
  g = jax.jit(lambda a, n: a * n, static_argnames="n",
              in_shardings=jax.NamedSharding(m, jax.P("x")))
  return g(_x(), n=2)


@case
def error_in_shardings_count_with_static(jax, jnp):
  m, NS, P = _mesh(jax), jax.NamedSharding, jax.P
  g = jax.jit(lambda a, n, b: a * n + b, static_argnums=1,
              in_shardings=(NS(m, P("x")), NS(m, P()), NS(m, P())))
  return g(_x(), 2, _x())


@case
def error_unhashable_static(jax, jnp):
  g = jax.jit(lambda a, n: a, static_argnums=1,
              out_shardings=jax.NamedSharding(_mesh(jax), jax.P("x")))
  return g(_x(), [1])


@case
def donate_aliased(jax, jnp):
  m, NS, P = _mesh(jax), jax.NamedSharding, jax.P
  a = jax.device_put(_x(), NS(m, P("x")))
  b = jax.device_put(_x(), NS(m, P("x")))
  g = jax.jit(lambda a, b, n: a * n + b, in_shardings=(NS(m, P("x")), NS(m, P("x"))),
              out_shardings=NS(m, P("x")), donate_argnums=0, static_argnums=2)
  out = g(a, b, 2)
  try:
    np.asarray(a)
    read = "readable"
  except Exception as e:  # noqa: BLE001
    read = _error(e, True)
  return out, a.is_deleted(), b.is_deleted(), read


@case
def donate_unspecified_outputs(jax, jnp):
  m, NS, P = _mesh(jax), jax.NamedSharding, jax.P
  a = jax.device_put(_x(), NS(m, P("x", "y")))
  g = jax.jit(lambda a, b: (a - b, a.sum()), in_shardings=NS(m, P("x", "y")),
              donate_argnames="a")
  out = g(a, _x())
  return out, a.is_deleted()


@case
def donate_unusable_layout(jax, jnp):
  m, NS, P = _mesh(jax), jax.NamedSharding, jax.P
  a = jax.device_put(_x(), NS(m, P("x")))
  g = jax.jit(lambda a: a + 1, out_shardings=NS(m, P()), donate_argnums=0)
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    out = g(a)
  return out, a.is_deleted(), [str(x.message).split(":")[0] for x in w
                               if "donated" in str(x.message)]


@case
def keep_unused_with_shardings(jax, jnp):
  m, NS, P = _mesh(jax), jax.NamedSharding, jax.P
  g = jax.jit(lambda a, b: a * 2, in_shardings=NS(m, P("x")), keep_unused=True)
  return g(_x(), _x())


@case
def error_device_with_in_shardings(jax, jnp):
  return jax.jit(lambda a: a, in_shardings=jax.NamedSharding(_mesh(jax), jax.P()),
                 device=jax.devices()[0])


@case
def error_backend_with_out_shardings(jax, jnp):
  return jax.jit(lambda a: a, out_shardings=jax.NamedSharding(_mesh(jax), jax.P()),
                 backend="cpu")


@case
def error_device_and_backend(jax, jnp):
  return jax.jit(lambda a: a, out_shardings=jax.NamedSharding(_mesh(jax), jax.P()),
                 backend="cpu", device=jax.devices()[0])


@case
def stages_with_static_and_donation(jax, jnp):
  m, NS, P = _mesh(jax), jax.NamedSharding, jax.P
  g = jax.jit(lambda a, n, b: a * n + b, static_argnums=1, donate_argnums=0,
              in_shardings=(NS(m, P("x")), NS(m, P())))
  traced = g.trace(_x(), 2, _x())
  sds = jax.ShapeDtypeStruct((4, 4), np.float32)
  lowered = g.lower(sds, 2, sds)
  compiled = lowered.compile()
  a = jax.device_put(_x(), NS(m, P("x")))
  out = compiled(a, _x())
  return (str(traced.jaxpr), [i.donated for i in jax.tree.leaves(lowered.args_info)],
          out, a.is_deleted(), compiled.input_shardings,
          compiled.output_shardings, g.lower(_x(), 3, _x()).compile()(_x(), _x()))


@case
def compiler_options_with_shardings(jax, jnp):
  m, NS, P = _mesh(jax), jax.NamedSharding, jax.P
  g = jax.jit(lambda a: a * 2, out_shardings=NS(m, P("x")),
              compiler_options={"xla_backend_optimization_level": 1})
  bad = jax.jit(lambda a: a * 3, out_shardings=NS(m, P("x")),
                compiler_options={"xla_no_such_option": True})
  try:
    bad(_x())
    err = None
  except Exception as e:  # noqa: BLE001
    err = _error(e, True)
  return g(_x()), err


def main():
  warnings.simplefilter("ignore")
  import arrax
  import arrax.numpy as anp
  import jax
  import jax.numpy as jnp
  assert jax.device_count() == 4 and arrax.device_count() == 4
  results = {}
  for name, fn in CASES.items():
    try:
      outs = []
      for mods in ((arrax, anp), (jax, jnp)):
        try:
          outs.append(describe(fn(*mods)))
        except Exception as e:  # noqa: BLE001
          outs.append(_error(e, name in _MESSAGES))
      outs = [json.loads(json.dumps(o, default=repr)) for o in outs]
      results[name] = ("ok" if same(outs[0], outs[1]) else
                       first_difference(outs[0], outs[1], limit=2000))
    except Exception:  # noqa: BLE001
      results[name] = traceback.format_exc()
  sys.stdout.write("RESULTS" + json.dumps(results))
