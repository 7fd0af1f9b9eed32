"""jax.experimental.compute_on, .xla_metadata, .scheduling_groups, .control_deps and .fused,
differential against JAX 0.10.2: values under jit/grad/vmap, printed jaxprs, the frontend
attributes of the lowered StableHLO, and error classes."""
import inspect
import re
import textwrap

import jax
import jax.experimental.compute_on
import jax.experimental.control_deps
import jax.experimental.fused
import jax.experimental.scheduling_groups
import jax.experimental.xla_metadata
import jax.numpy as jnp
import pytest

import arrax
import arrax.experimental.compute_on
import arrax.experimental.control_deps
import arrax.experimental.fused
import arrax.experimental.scheduling_groups
import arrax.experimental.xla_metadata
import arrax.numpy as anp
from arrax._src import core as acore
from tests.oracle import assert_prints_like_jax, assert_same, run_printed

MODULES = ["compute_on", "xla_metadata", "scheduling_groups", "control_deps", "fused"]


def _scope(top):
  ex = top.experimental
  return {"co": ex.compute_on, "xm": ex.xla_metadata, "sg": ex.scheduling_groups,
          "cd": ex.control_deps, "fu": ex.fused, "Space": top.memory.Space}


SCOPES = dict(jax_scope=_scope(jax), arrax_scope=_scope(arrax))


def like_jax(code, prelude=""):
  return assert_prints_like_jax(code, prelude, **SCOPES)


@pytest.mark.parametrize("name", MODULES)
def test_public_names_and_signatures(name):
  theirs = getattr(jax.experimental, name)
  ours = getattr(arrax.experimental, name)
  funcs = {"compute_on": ["compute_on", "compute_on2"], "xla_metadata": ["set_xla_metadata"],
           "scheduling_groups": ["scheduling_group", "xla_metadata_call"],
           "control_deps": ["control_dep", "schedule"], "fused": ["fused"]}[name]
  for f in funcs:
    assert inspect.signature(getattr(ours, f)) == inspect.signature(getattr(theirs, f)), f
  for p in {"scheduling_groups": ["xla_metadata_call_p"], "fused": ["fused_p"]}.get(name, []):
    assert getattr(ours, p).name == getattr(theirs, p).name


# ---- compute_on (context) ---------------------------------------------------------------------
CO_PRELUDE = """
x = jnp.arange(4.0)
g = jax.jit(lambda t: jnp.cos(t) * t)
def f(x):
  y = x * x
  with co.compute_on('device_host'):
    z = jnp.sin(y) * 2.0 + g(y)   # (the broadcast of 2.0 is marked too, as in JAX)
    with co.compute_on('device'):
      w = z * y
  return w - z
"""


def test_compute_on_context_jaxpr_and_lowering():
  out = like_jax("""
  print(jax.make_jaxpr(f)(x))
  print(jax.jit(f).lower(x).as_text())
  print(jax.jit(jax.grad(lambda x: f(x).sum())).lower(x).as_text())
  print(jax.jit(jax.vmap(f)).lower(jnp.ones((2, 4))).as_text())
  """, CO_PRELUDE)
  assert '_xla_compute_type = "host"' in out and '_xla_compute_type = "dense"' in out


def test_compute_on_values_eager_jit_grad_vmap():
  like_jax("""
  print(jax.jit(f)(x))
  print(jax.jit(jax.grad(lambda x: f(x).sum()))(x))
  print(jax.jit(jax.vmap(f))(jnp.stack([x, x + 1])))
  with co.compute_on('device_host'):   # (eagerly too)
    print(jnp.sin(x), g(x), jax.lax.exp(x))
  """, CO_PRELUDE)


def test_compute_on_jit_traces_again_inside_the_context():
  # The context is part of jit's cache key: the same jitted function lowers with the
  # attribute inside it and without outside.
  like_jax("""
  for _ in range(2):
    print(g.lower(x).as_text())
    with co.compute_on('device_host'):
      print(g.lower(x).as_text())
      print(g(x))
    print(g(x))
  """, CO_PRELUDE)


def test_compute_on_gpu_stream_and_decorator():
  like_jax("""
  @co.compute_on('gpu_stream:2')
  def h(x):
    return jnp.sin(x)
  print(jax.jit(h).lower(jnp.ones(3)).as_text())
  print(h(jnp.ones(3)))
  """)


@pytest.mark.parametrize("bad", [1, None, "cpu", "gpu"])
def test_compute_on_bad_type(bad):
  like_jax(f"""
  cm = co.compute_on({bad!r})
  print(type(cm).__name__)
  with cm:
    pass
  """)


# ---- set_xla_metadata -----------------------------------------------------------------------------
XM_PRELUDE = """
x = jnp.arange(4.0)
g = jax.jit(lambda t: jnp.cos(t) * t)
def f(x):
  with xm.set_xla_metadata(a="b", n=3, flag=True):
    y = jnp.sin(x)
    with xm.set_xla_metadata(a="c", n=None, z=None):
      w = y * x
    v = g(w)
  return xm.set_xla_metadata(v + x, tag="t", k=False)
"""


def test_xla_metadata_jaxpr_and_lowering():
  out = like_jax("""
  print(jax.make_jaxpr(f)(x))
  print(jax.jit(f).lower(x).as_text())
  print(jax.make_jaxpr(jax.grad(lambda x: f(x).sum()))(x))
  print(jax.jit(jax.grad(lambda x: f(x).sum())).lower(x).as_text())
  print(jax.make_jaxpr(jax.vmap(f))(jnp.ones((2, 4))))
  """, XM_PRELUDE)
  assert 'mhlo.frontend_attributes = {a = "c", flag = "true"}' in out
  assert '{k = "false", tag = "t"}' in out


def test_xla_metadata_values_and_tagging():
  like_jax("""
  print(jax.jit(f)(x), jax.jit(jax.grad(lambda x: f(x).sum()))(x))
  print(jax.jit(jax.vmap(f))(jnp.stack([x, -x])))
  print(xm.set_xla_metadata(x, m=1), xm.set_xla_metadata(x), xm.set_xla_metadata(3.0, m=1))
  print(jax.make_jaxpr(lambda x: xm.set_xla_metadata({'a': x, 'b': (x, 2.0)}, m=1))(x))
  print(jax.jit(lambda x: jax.jvp(lambda x: xm.set_xla_metadata(jnp.sin(x), m=1), (x,), (x,)))(x))
  """, XM_PRELUDE)


def test_xla_metadata_with_compute_on_and_decorator():
  # An op's own attributes win over the context's, the compute type over the metadata.
  like_jax("""
  def h(x):
    with co.compute_on('device_host'), xm.set_xla_metadata(_xla_compute_type="zzz", q=1):
      y = jnp.sin(x)
    return xm.set_xla_metadata(y, _xla_compute_type="yyy", r=2)
  print(jax.jit(h).lower(x).as_text())
  dec = xm.set_xla_metadata(d=1)(jax.jit(jnp.cos))
  print(dec.lower(x).as_text())
  print(dec(x), dec.__name__)
  with xm.set_xla_metadata():
    print(jax.jit(jnp.cos).lower(x).as_text())
  with xm.set_xla_metadata(bad=[1]):
    pass
  """, XM_PRELUDE)


# ---- compute_on2 ---------------------------------------------------------------------------------
CO2_PRELUDE = """
x = jnp.arange(4.0)
@co.compute_on2(compute_type='device_host', out_memory_spaces=Space.Device)
def h(x, y):
  return jnp.sin(x) * y + 1.0
def nest(x):
  return co.compute_on2(lambda t: h(t, t) + t, compute_type='device_host',
                        out_memory_spaces=Space.Device)(x)
"""


def test_compute_on2_jaxpr_and_lowering():
  out = like_jax("""
  print(jax.make_jaxpr(h)(x, x))
  print(jax.jit(h).lower(x, x).as_text())
  print(jax.make_jaxpr(jax.grad(lambda x: h(x, x).sum()))(x))
  print(jax.make_jaxpr(jax.vmap(h, (0, None)))(jnp.ones((2, 4)), x))
  two = co.compute_on2(lambda a: (a + a, a * a), compute_type='device',
                       out_memory_spaces=(Space.Device, Space.Device),
                       compiler_options={'opt': 1})
  print(jax.make_jaxpr(two)(x))
  print(jax.jit(two).lower(x).as_text())
  print(jax.make_jaxpr(nest)(x))
  jax.jit(nest).lower(x)
  """, CO2_PRELUDE)
  assert "annotate_device_placement" in out and "Nesting" not in out


def test_compute_on2_values():
  like_jax("""
  print(h(x, x), h(x, x), jax.jit(h)(x, 2.0), jax.jit(jax.grad(lambda x: h(x, x).sum()))(x))
  print(jax.jit(jax.vmap(h, (0, None)))(jnp.stack([x, -x]), x))
  print(jax.jit(lambda x: jax.linearize(lambda x: h(x, x), x)[1](x))(x))
  print(jax.jit(jax.hessian(lambda x: h(x, x).sum()))(x))
  print(jax.make_jaxpr(jax.grad(lambda x, y: h(x, y).sum(), argnums=(0, 1)))(x, x))
  """, CO2_PRELUDE)


@pytest.mark.parametrize("code", [
    "co.compute_on2(lambda t: t, compute_type='cpu', out_memory_spaces=Space.Device)",
    "co.compute_on2(lambda t: t, compute_type=3, out_memory_spaces=Space.Device)",
    "co.compute_on2(lambda t: (t, t), compute_type='device', out_memory_spaces=(Space.Device,))(x)",
    "co.compute_on2(lambda t: t, compute_type='device', out_memory_spaces=None)(x)",
    "jax.jit(nest).lower(x)",
])
def test_compute_on2_errors(code):
  like_jax(code, CO2_PRELUDE)


# ---- scheduling_groups ----------------------------------------------------------------------------
SG_PRELUDE = """
x = jnp.arange(4.0)
@sg.scheduling_group('grp')
def s(x, y=1.0):
  return {'a': jnp.sin(x) * y}
"""


def test_scheduling_group_jaxpr_and_lowering():
  out = like_jax("""
  print(jax.make_jaxpr(s)(x, y=3.0))
  print(jax.jit(s).lower(x, y=x).as_text())
  print(jax.make_jaxpr(jax.grad(lambda x: s(x, x)['a'].sum()))(x))
  print(jax.make_jaxpr(jax.vmap(s))(jnp.ones((2, 4))))
  print(jax.make_jaxpr(lambda x, y: sg.scheduling_group('g')(lambda x: x * y)(x))(x, 2.0))
  m = sg.xla_metadata_call(lambda x: jnp.cos(x) * x, a='b', c='d')
  print(jax.jit(m).lower(x).as_text())
  print(jax.make_jaxpr(sg.xla_metadata_call(lambda x: x * x, a=1))(x))
  jax.jit(sg.xla_metadata_call(lambda x: x * x, a=1)).lower(x)
  """, SG_PRELUDE)
  assert 'mhlo.frontend_attributes = {scheduling_group = "grp"}' in out


def test_scheduling_group_values():
  like_jax("""
  print(s(x), jax.jit(s)(x, x), jax.jit(jax.grad(lambda x: s(x, x)['a'].sum()))(x))
  print(jax.jit(jax.vmap(s))(jnp.stack([x, -x])))
  print(jax.jit(lambda x: jax.jvp(lambda x: s(x)['a'], (x,), (x,)))(x))
  two = sg.scheduling_group('g')(lambda x, y: (jnp.sin(x), y * 3.0))
  print(jax.make_jaxpr(jax.grad(lambda x, y: two(x, y)[0].sum(), argnums=(0, 1)))(x, x))
  print(jax.make_jaxpr(jax.linear_transpose(lambda x: two(x, x)[1], x))(x))
  """, SG_PRELUDE)


# ---- control_deps ---------------------------------------------------------------------------------
CD_PRELUDE = """
x = jnp.arange(4.0)
def f(x):
  a = jnp.sin(x)
  b = jnp.cos(x)
  r = cd.control_dep(a, b)
  cd.schedule([x, a, b])
  cd.schedule([a])
  return a + b, r
"""


def test_control_deps():
  like_jax("""
  print(jax.make_jaxpr(f)(x))
  print(jax.jit(f).lower(x).as_text())
  print(jax.jit(f)(x), f(x))
  """, CD_PRELUDE)


@pytest.mark.parametrize("code", [
    "jax.grad(lambda x: f(x)[0].sum())(x)",
    "jax.vmap(f)(jnp.ones((2, 4)))",
])
def test_control_deps_errors(code):
  like_jax(code, CD_PRELUDE)


# ---- fused -----------------------------------------------------------------------------------------
FU_PRELUDE = """
x = jnp.arange(4.0)
@fu.fused(out_spaces=(Space.Device,))
def k(x):
  return (jnp.sin(x) * 2,)
"""


def test_fused_jaxprs():
  # JAX's inner avals print their memory space (f32<any>[4]); arrax's avals hold none.
  code = """
  print(jax.make_jaxpr(k)(x))
  print(jax.make_jaxpr(jax.grad(lambda x: k(x)[0].sum()))(x))
  print(jax.make_jaxpr(jax.vmap(k))(jnp.ones((2, 4))))
  print(jax.make_jaxpr(lambda x: jax.jvp(k, (x,), (x,)))(x))
  """
  code = FU_PRELUDE + textwrap.dedent(code)
  want = run_printed(code, {"jax": jax, "jnp": jnp, **SCOPES["jax_scope"]})
  got = run_printed(code, {"jax": arrax, "jnp": anp, **SCOPES["arrax_scope"]})
  assert "<any>" in want and "raised" not in want
  assert got == want.replace("<any>", "")


@pytest.mark.parametrize("code", [
    "k(x)", "jax.jit(k)(x)", "k(x=x)",
    "fu.fused(out_spaces=())(lambda x: x + 1)(x)",
])
def test_fused_errors(code):
  like_jax(code, FU_PRELUDE)


# ---- the mechanism ---------------------------------------------------------------------------------
def test_no_attributes_left_behind_and_names_unchanged():
  co = arrax.experimental.compute_on
  x = anp.arange(3.0)
  with co.compute_on("device_host"):
    with arrax.named_scope("s"):
      text = arrax.jit(lambda t: anp.sin(t)).lower(x).as_text(debug_info=True)
  assert acore.trace_ctx.name_stack == () and arrax.config.arrax_op_attributes == ()
  assert '"jit(<lambda>)/sin"' in text and "_xla_compute_type" in text
  assert not re.search(r"OpAttributes", text)
  with pytest.raises(ZeroDivisionError):
    with co.compute_on("device_host"):
      1 / 0
  assert acore.trace_ctx.name_stack == () and arrax.config.arrax_op_attributes == ()
  assert_same(arrax.jit(anp.sin)(x), jnp.sin(jnp.arange(3.0)))


def test_compute_on_control_flow():
  # Ops of cond branches and loop bodies (also the loop's own counter) get the attributes;
  # JAX's fori_loop/scan call helper functions arrax inlines, so the texts differ there.
  like_jax("""
  def f(x):
    with co.compute_on('device_host'), xm.set_xla_metadata(k="v"):
      y = jax.lax.cond(x[0] > 0, jnp.sin, jnp.cos, x)
      z = jax.lax.fori_loop(0, 3, lambda i, c: c * x, y)
    return y + z
  x = jnp.arange(4.0)
  print(jax.jit(f)(x), jax.jit(jax.grad(lambda x: f(x).sum()))(x))
  """)
  x = anp.arange(4.0)
  co, xm = arrax.experimental.compute_on, arrax.experimental.xla_metadata

  def f(x):
    with co.compute_on("device_host"), xm.set_xla_metadata(k="v"):
      y = arrax.lax.cond(x[0] > 0, anp.sin, anp.cos, x)
      return arrax.lax.fori_loop(0, 3, lambda i, c: c * x, y)
  text = arrax.jit(f).lower(x).as_text()
  attrs = '{mhlo.frontend_attributes = {_xla_compute_type = "host", k = "v"}}'
  for op in ["stablehlo.sine", "stablehlo.cosine", "stablehlo.multiply %iterArg",
             "stablehlo.add %iterArg"]:
    assert re.search(re.escape(op) + r"[^\n]*" + re.escape(attrs), text), op
