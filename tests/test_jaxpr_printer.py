"""Differential tests of arrax's jaxpr printer against JAX's.

Each real JAX jaxpr is converted structurally into an arrax jaxpr (same vars, literals,
primitive names, params, nested jaxprs and sharing), and both are printed: the texts must be
identical. The document pretty printer is also fuzzed against JAX's own.
"""
import functools
import random

import ml_dtypes
import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax
from jax._src import core as jcore
from jax._src import pretty_printer as jpp
from jax._src.named_sharding import UnspecifiedValue

from arrax._src import core
from arrax._src import jaxpr_printer
from arrax._src import pretty_printer as pp


# --------------------------------------------------------------------------------------------
# Converting a JAX jaxpr into an arrax one.
# --------------------------------------------------------------------------------------------
def _drop_none(key):
  def hook(params):
    if key in params and params[key] is None:
      del params[key]
    return params
  return hook


def _jit_hook(params):
  params.pop("inline", None)
  if "donated_invars" in params and not any(params["donated_invars"]):
    del params["donated_invars"]
  for k in ("in_shardings", "out_shardings"):
    if k in params and all(isinstance(s, UnspecifiedValue) for s in params[k]):
      del params[k]
  for k in ("in_layouts", "out_layouts"):
    if k in params and all(l is None for l in params[k]):
      del params[k]
  if "keep_unused" in params and not params["keep_unused"]:
    del params["keep_unused"]
  if "ctx_mesh" in params and params["ctx_mesh"].empty:
    del params["ctx_mesh"]
  if "compiler_options_kvs" in params and not params["compiler_options_kvs"]:
    del params["compiler_options_kvs"]
  return params


def _dot_general_hook(params):
  params = {k: v for k, v in params.items() if v is not None}
  (lc, rc), (lb, rb) = params["dimension_numbers"]
  params["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
  params.pop("out_sharding", None)
  return params


def _broadcast_in_dim_hook(params):
  if not params["broadcast_dimensions"]:
    del params["broadcast_dimensions"]
  del params["shape"]
  params.pop("sharding", None)
  return params


def _pop(key):
  def hook(params):
    params.pop(key, None)
    return params
  return hook


# The filtering that JAX's custom pp_eqn_rules apply, expressed as arrax pp_params hooks.
_PP_HOOKS = {
    "jit": _jit_hook,
    "mul": _drop_none("out_dtype"),
    "convert_element_type": _pop("sharding"),
    "dot_general": _dot_general_hook,
    "broadcast_in_dim": _broadcast_in_dim_hook,
    **{name: _drop_none("accuracy") for name in (
        "exp", "exp2", "log", "expm1", "log1p", "tanh", "logistic", "sin", "cos", "tan",
        "sqrt", "rsqrt", "cbrt")},
}
_CUSTOM_RULE_NAMES = {p.name for p in jcore.pp_eqn_rules}


class _Converter:
  def __init__(self):
    self.vars = {}
    self.prims = {}
    self.jaxprs = {}

  def aval(self, a):
    return core.ShapedArray(a.shape, a.dtype, a.weak_type)

  def var(self, v):
    if isinstance(v, jcore.Literal):
      return core.Literal(self.literal_value(v.val), self.aval(v.aval))
    if isinstance(v, jcore.DropVar):
      return core.DropVar(self.aval(v.aval))
    if v not in self.vars:
      self.vars[v] = core.Var(self.aval(v.aval))
    return self.vars[v]

  @staticmethod
  def literal_value(val):
    for t in (bool, int, float, complex):  # TypedFloat etc. subclass the Python scalar types
      if isinstance(val, t):
        return t(val)
    return np.asarray(val)

  def prim(self, p):
    if p not in self.prims:
      name = p.name
      assert name in _PP_HOOKS or name not in _CUSTOM_RULE_NAMES, (
          f"JAX prints {name} with a custom rule; add a hook to the test")
      ap = core.Primitive(name)
      ap.multiple_results = p.multiple_results
      ap.pp_params = _PP_HOOKS.get(name)
      self.prims[p] = ap
    return self.prims[p]

  def param(self, v):
    if isinstance(v, jcore.ClosedJaxpr):
      return core.ClosedJaxpr(self.jaxpr(v.jaxpr), v.consts)
    if isinstance(v, jcore.Jaxpr):
      return self.jaxpr(v)
    if type(v) is tuple and v and all(isinstance(x, (jcore.Jaxpr, jcore.ClosedJaxpr))
                                      for x in v):
      return tuple(self.param(x) for x in v)
    return v

  def jaxpr(self, j):
    if j not in self.jaxprs:  # keep sharing: the same JAX jaxpr maps to the same arrax one
      eqns = [core.JaxprEqn([self.var(v) for v in e.invars],
                            [self.var(v) for v in e.outvars],
                            self.prim(e.primitive),
                            {k: self.param(v) for k, v in e.params.items()})
              for e in j.eqns]
      self.jaxprs[j] = core.Jaxpr([self.var(v) for v in j.constvars],
                                  [self.var(v) for v in j.invars],
                                  [self.var(v) for v in j.outvars], eqns)
    return self.jaxprs[j]


def jaxpr_to_arrax(closed):
  conv = _Converter()
  if isinstance(closed, jcore.ClosedJaxpr):
    return core.ClosedJaxpr(conv.jaxpr(closed.jaxpr), closed.consts)
  return conv.jaxpr(closed)


def check_printed(f, *args, **kwargs):
  """JAX's jaxpr of f, rebuilt from arrax's jaxpr types, prints as JAX prints it (whole, and
  equation by equation)."""
  closed = jax.make_jaxpr(f, **kwargs)(*args)
  expected = str(closed)
  ours = jaxpr_to_arrax(closed)
  assert str(ours) == expected
  assert str(ours.jaxpr) == expected
  assert jaxpr_printer.pp_jaxpr(ours) == expected
  # Each equation on its own, as repr(eqn) prints it.
  for je, ae in zip(closed.jaxpr.eqns, ours.jaxpr.eqns):
    assert jaxpr_printer.pp_eqn(ae) == repr(je)
    assert repr(ae) == repr(je)
  return expected


# --------------------------------------------------------------------------------------------
# Programs.
# --------------------------------------------------------------------------------------------
f32 = functools.partial(jnp.ones, dtype=jnp.float32)
_c3 = np.arange(3.0, dtype=np.float32)


def _chain(n):
  def f(x):
    for i in range(n):
      x = jnp.sin(x) if i % 2 else x * 1.5
    return x
  return f


@jax.jit
def _inner(x, y):
  return x * y, x + 1.0


@jax.jit
def _g(x):
  return jnp.sin(x) * 2


def _big(x):
  for _ in range(11):
    x = jnp.cos(x)
  return x


def _level3(x):
  return jnp.sum(x * x)


def _level2(x):
  return jax.jit(_level3)(x + 1) * 2


def _level1(x):
  return jax.jit(_level2)(jnp.sin(x)) - 1


def _fn(x):
  return jnp.sum(x ** 2 - x ** 3 - x)


def _make_g(k):
  @jax.jit
  def g(x):
    return x * k
  return g


_g_a, _g_b, _g_c = _make_g(2.0), _make_g(3.0), _make_g(4.0)


def _shared_same_names(x):
  # Three different jaxprs all named `g`, each used twice: printed as g, g1, g2; no var is `g`.
  return _g_a(x) + _g_a(x) + _g_b(x) + _g_b(x) + _g_c(x) * _g_c(x) + _g(x) + _g(x)


PROGRAMS = {
    "sin_add": (lambda x: 2.0 + jnp.sin(x), (1.0,)),
    "one_line": (lambda x: jnp.sin(x) + 1, (f32(3),)),
    "nested_jit_example": (lambda x: jax.jit(_fn)(x), (f32(100),)),
    "constvars": (lambda x: x * _c3 + 2, (f32(3),)),
    "dot_transpose_convert": (lambda a: (a @ a.T).astype(jnp.int32), (f32((4, 3)),)),
    "chain_30": (_chain(30), (1.0,)),
    "chain_800": (_chain(800), (f32(2),)),
    "literals_f32": (lambda x: x * 0.1 + 1e-5 - jnp.nan + jnp.inf - 3.5 * -2.0 + 1e20
                     - 1e-30 + np.float32(0.1) + np.float32(-0.0), (1.0,)),
    "literals_bf16": (lambda x: x * 0.1 + 1e20 - 3, (jnp.ones(2, jnp.bfloat16),)),
    "literals_f16": (lambda x: x * 0.1 + 3 - jnp.inf, (jnp.ones(2, jnp.float16),)),
    "literals_c64": (lambda x: x * (1 + 2j) - 1j + 0.5, (jnp.ones(2, jnp.complex64),)),
    "literals_int": (lambda x: x * -3 + 7 - np.int32(-2147483648), (jnp.ones(2, jnp.int32),)),
    "literals_uint8": (lambda x: x + np.uint8(3) + 250, (jnp.ones(2, jnp.uint8),)),
    "literals_bool": (lambda x: (x & True) | False, (jnp.ones(2, bool),)),
    "literals_where": (lambda x: jnp.where(x, 1.5, -jnp.inf), (jnp.ones(2, bool),)),
    "int_cast_literals": (lambda x: (x > 0.5).astype(jnp.int8) + jnp.int8(-5), (f32(3),)),
    "multiple_outputs": (lambda x, y: (x + y, x * y, jnp.sin(x)), (f32(2), f32(2))),
    "tuple_nested_outputs": (lambda x: ((x, x + 1), [x * 2]), (f32(2),)),
    "outvars_are_invars": (lambda x, y: (y, x, y), (1.0, 2.0)),
    "outvar_literal": (lambda x: (x, 2.0, x), (1.0,)),
    "empty": (lambda x: x, (f32((2, 2)),)),
    "no_inputs": (lambda: 1.0, ()),
    "no_inputs_no_outputs": (lambda: (), ()),
    "unused_results": (lambda x: (x * 2, jnp.sin(x))[1], (1.0,)),
    "grad": (jax.grad(lambda x: jnp.sum(jnp.sin(x) * x)), (f32(3),)),
    "grad_of_jit": (jax.grad(lambda x: jax.jit(lambda y: jnp.sum(jnp.tanh(y) ** 2))(x)),
                    (f32(3),)),
    "value_and_grad": (jax.value_and_grad(lambda x, y: jnp.sum(jnp.exp(x) * y), argnums=(0, 1)),
                       (f32(3), f32(3))),
    "jit_unused_output": (lambda x: _inner(x, x)[1], (1.0,)),
    "jit_identity": (lambda x: jax.jit(lambda y: y)(x), (1.0,)),
    "jit_literal_args": (lambda x: jax.jit(lambda y, z: (z, y, y))(x, 2.0), (1.0,)),
    "jit_twice_shared": (lambda x: _g(x) + _g(x + 1), (1.0,)),
    "jit_big_shared": (lambda x: jax.jit(_big)(x) + 1, (1.0,)),
    "jit_same_name_different": (lambda x: jax.jit(lambda y: y * 2)(jax.jit(lambda y: y + 1)(
        jax.jit(lambda y: y - 1)(jax.jit(lambda y: y + 1)(x)))), (1.0,)),
    "jit_3_levels": (_level1, (f32(4),)),
    "jit_3_levels_twice": (lambda x: jax.jit(_level1)(x) + jax.jit(_level1)(x * 2), (f32(4),)),
    "jit_closure_const": (lambda x: jax.jit(lambda y: y * _c3)(x), (f32(3),)),
    "vmap_jit": (jax.vmap(lambda x: jax.jit(_fn)(x)), (f32((5, 3)),)),
    "while": (lambda x: lax.while_loop(lambda v: v[0] < 10,
                                       lambda v: (v[0] + 1, v[1] * _c3), (0, x)), (f32(3),)),
    "cond": (lambda x: lax.cond(x[0] > 0, lambda y: y * 2, jnp.sin, x), (f32(3),)),
    "switch3": (lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda y: y * y], x),
                (1, f32(3))),
    "scan": (lambda x: lax.scan(lambda c, y: (c + y, c * y), 0.0, x), (f32(3),)),
    "fori": (lambda x: lax.fori_loop(0, 5, lambda i, v: v * i, x), (f32(3),)),
    "conv": (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"),
             (f32((1, 2, 8, 8)), f32((3, 2, 3, 3)))),
    "split_many_outputs": (lambda x: jnp.split(x, 30), (f32(60),)),
    "concat_many_inputs": (lambda *xs: jnp.concatenate(xs), tuple(f32(i + 1) for i in range(40))),
    "many_outputs": (lambda *xs: tuple(x + 1 for x in xs), tuple(f32(2) for _ in range(40))),
    "gather": (lambda x: x[jnp.array([0, 2])], (f32((4, 5)),)),
    "scatter": (lambda x: x.at[1:3].add(2.0), (f32((4, 5)),)),
    "reductions": (lambda x: (jnp.max(x, axis=1), jnp.argmin(x, axis=0), jnp.mean(x)),
                   (f32((4, 5)),)),
    "reshape_broadcast": (lambda x: jnp.broadcast_to(x.reshape(2, 3)[:, None, :], (2, 4, 3)),
                          (f32(6),)),
    "dot_batched": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b,
                                            preferred_element_type=jnp.float32),
                    (f32((2, 3, 4)), f32((2, 4, 5)))),
    "iota_trailing_space": (lambda x: x * np.float32(0.1) + jnp.arange(3.0), (f32(3),)),
    "sort_multi": (lambda x, y: lax.sort((x, y), num_keys=1), (f32(5), f32(5))),
    "unary_accuracy": (lambda x: jnp.exp(x) + jnp.log(x) + jnp.tanh(x) + jnp.sqrt(x)
                       + jax.nn.sigmoid(x) + jnp.cbrt(x), (f32(3),)),
    "long_shapes": (lambda x: jnp.sum(x, axis=(0, 2)) * 2,
                    (f32((123456, 1, 7)),)),
    "float64_x64_off": (lambda x: x.astype(jnp.float16) * 3, (f32(3),)),
    "integer_pow_and_pow": (lambda x: x ** 2 + x ** 2.5 + 2 ** x, (f32(3),)),
    "cumsum": (lambda x: jnp.cumsum(x) + jnp.cumprod(x), (f32(4),)),
    "remat": (jax.checkpoint(lambda x: jnp.sin(jnp.sin(x))), (f32(3),)),
    "shared_same_names": (_shared_same_names, (1.0,)),
    "cond_big_branch_shared": (lambda x: lax.cond(x > 0, _big, jnp.sin, x), (1.0,)),
    "scan_big_body_shared": (lambda x: lax.scan(lambda c, y: (_big(c + y), c), 0.0, x),
                             (f32(3),)),
    "jit_inside_scan": (lambda x: lax.scan(lambda c, y: (jax.jit(_fn)(c * y), c), 0.0, x),
                        (f32(3),)),
    "custom_jvp_free_grad": (jax.grad(lambda x: jnp.sum(jnp.abs(x) ** 3)), (f32(3),)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_jax(name):
  f, args = PROGRAMS[name]
  check_printed(f, *args)


def test_given_examples():
  assert check_printed(lambda x: 2.0 + jnp.sin(x), 1.0) == (
      "{ lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = add 2.0:f32[] b in (c,) }")
  assert check_printed(lambda x: jax.jit(_fn)(x), f32(100)) == """\
{ lambda ; a:f32[100]. let
    b:f32[] = jit[
      name=_fn
      jaxpr={ lambda ; a:f32[100]. let
          c:f32[100] = integer_pow[y=2] a
          d:f32[100] = integer_pow[y=3] a
          e:f32[100] = sub c d
          f:f32[100] = sub e a
          b:f32[] = reduce_sum[axes=(0,) out_sharding=None] f
        in (b,) }
    ] a
  in (b,) }"""


def test_chain_names_ba_and_baa():
  text = check_printed(_chain(800), f32(2))
  lines = text.splitlines()
  assert lines[1].lstrip().startswith("b:f32[2] = mul a 1.5:f32[]")
  assert any(l.lstrip().startswith("ba:") for l in lines)
  assert any(l.lstrip().startswith("zz:") for l in lines)
  assert any(l.lstrip().startswith("baa:") for l in lines)


def test_many_args_jit_names():
  # An inner jaxpr with more than 26 inputs, named after the outer operands.
  def f(*xs):
    return jax.jit(lambda *ys: sum(ys))(*xs)
  check_printed(f, *[f32(2) for _ in range(30)])


def test_dropvar_eqn_outputs():
  a = core.Var(core.ShapedArray((), np.float32))
  d = core.DropVar(core.ShapedArray((), np.float32))
  b = core.Var(core.ShapedArray((), np.float32))
  sin = core.Primitive("sin")
  cos = core.Primitive("cos")
  jaxpr = core.Jaxpr([], [a], [b], [core.JaxprEqn([a], [d], sin, {}),
                                    core.JaxprEqn([a], [b], cos, {})])
  assert str(jaxpr) == ("{ lambda ; a:f32[]. let _:f32[] = sin a; b:f32[] = cos a "
                        "in (b,) }")


def test_eqn_without_outvars_and_hand_built_params():
  a = core.Var(core.ShapedArray((3,), np.float32))
  prim = core.Primitive("debug_thing")
  prim.multiple_results = True
  eqn = core.JaxprEqn([a], [], prim, {"z": None, "dtype": np.dtype(np.float32),
                                       "axes": (0,), "flags": frozenset({"b", "a"})})
  jaxpr = core.Jaxpr([], [a], [a], [eqn])
  assert str(jaxpr) == (
      "{ lambda ; a:f32[3]. let\n"
      "    debug_thing[axes=(0,) dtype=float32 flags=frozenset({'a', 'b'}) z=None] a\n"
      "  in (a,) }")
  assert jaxpr_printer.pp_eqn(eqn) == (
      "debug_thing[axes=(0,) dtype=float32 flags=frozenset({'a', 'b'}) z=None] a")


def test_pp_params_hook():
  a = core.Var(core.ShapedArray((3,), np.float32))
  b = core.Var(core.ShapedArray((3,), np.float32))
  prim = core.Primitive("thing")
  prim.pp_params = lambda params: {k: v for k, v in params.items() if k != "hidden"}
  eqn = core.JaxprEqn([a], [b], prim, {"hidden": 1, "shown": 2})
  assert str(core.Jaxpr([], [a], [b], [eqn])) == (
      "{ lambda ; a:f32[3]. let b:f32[3] = thing[shown=2] a in (b,) }")


def test_closed_jaxpr_str():
  closed = jax.make_jaxpr(lambda x: x * _c3 + 2)(f32(3))
  ours = jaxpr_to_arrax(closed)
  assert str(ours) == repr(ours) == str(closed)


@pytest.mark.parametrize("val,dtype,expected", [
    (2.0, np.float32, "2.0:f32[]"),
    (1, np.int32, "1:i32[]"),
    (-7, np.int32, "-7:i32[]"),
    (True, np.bool_, "True:bool[]"),
    (False, np.bool_, "False:bool[]"),
    (1e-05, np.float32, "1e-05:f32[]"),
    (float("nan"), np.float32, "nan:f32[]"),
    (float("inf"), np.float32, "inf:f32[]"),
    (float("-inf"), np.float32, "-inf:f32[]"),
    (-0.0, np.float32, "-0.0:f32[]"),
    (1e20, np.float32, "1e+20:f32[]"),
    (np.float32(0.1), np.float32, "0.10000000149011612:f32[]"),
    (np.asarray(0.1, ml_dtypes.bfloat16), ml_dtypes.bfloat16, "0.10009765625:bf16[]"),
    (np.asarray(0.1, np.float16), np.float16, "0.0999755859375:f16[]"),
    (np.asarray(1 + 2j, np.complex64), np.complex64, "(1+2j):c64[]"),
    (-1j, np.complex64, "(-0-1j):c64[]"),
    (np.uint8(250), np.uint8, "250:u8[]"),
    (np.ones(3, np.float32), np.float32, "[...]:f32[3]"),
])
def test_literal_format(val, dtype, expected):
  shape = np.shape(val)
  aval = core.ShapedArray(shape, dtype, isinstance(val, (int, float, complex)))
  ours = jaxpr_printer.literal_str(core.Literal(val, aval))
  theirs = jcore.Literal(val, jcore.ShapedArray(shape, np.dtype(dtype))).pretty_print(
      jcore.JaxprPpContext())
  assert ours == theirs == expected


# --------------------------------------------------------------------------------------------
# The document printer, fuzzed against JAX's.
# --------------------------------------------------------------------------------------------
def _random_doc(r, depth):
  k = r.random()
  if depth > 5 or k < 0.3:
    c = r.random()
    if c < 0.5:
      s = "x" * r.randint(0, 14)
      return jpp.text(s), pp.text(s)
    if c < 0.9:
      s = r.choice([" ", "", "; ", ","])
      return jpp.brk(s), pp.brk(s)
    return jpp.nil(), pp.nil()
  if k < 0.55:
    kids = [_random_doc(r, depth + 1) for _ in range(r.randint(0, 5))]
    return jpp.concat([a for a, _ in kids]), pp.concat([b for _, b in kids])
  if k < 0.65:
    sep = r.choice([" ", ", "])
    kids = [_random_doc(r, depth + 1) for _ in range(r.randint(0, 4))]
    return (jpp.join(jpp.text(sep) + jpp.brk(), [a for a, _ in kids]),
            pp.join(pp.text(sep) + pp.brk(), [b for _, b in kids]))
  if k < 0.85:
    a, b = _random_doc(r, depth + 1)
    return jpp.group(a), pp.group(b)
  n = r.randint(0, 4)
  a, b = _random_doc(r, depth + 1)
  return jpp.nest(n, a), pp.nest(n, b)


@pytest.mark.parametrize("chunk", range(4))
def test_pretty_printer_fuzz(chunk):
  for seed in range(chunk * 2500, (chunk + 1) * 2500):
    r = random.Random(seed)
    jdoc, adoc = _random_doc(r, 0)
    width = r.choice([0, 5, 10, 20, 40, 80])
    assert adoc.format(width) == jdoc.format(width, use_color=False), (seed, width)
  assert str(adoc) == jdoc.format(use_color=False)


def test_pretty_printer_basics():
  d = pp.group(pp.nest(2, pp.concat([pp.text("f("), pp.brk(""),
                                     pp.join(pp.text(",") + pp.brk(), [pp.text("aaaa")] * 5),
                                     pp.text(")")])))
  assert d.format(80) == "f(aaaa, aaaa, aaaa, aaaa, aaaa)"
  assert d.format(10) == "f(\n  aaaa,\n  aaaa,\n  aaaa,\n  aaaa,\n  aaaa)"
  assert str(pp.text("a") + pp.brk() + pp.text("b")) == "a\nb"
  assert pp.join(pp.text(","), []).format() == ""


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "any", "all", "mean"])
def test_reductions_of_rank0_print_like_jax(name):
  import arrax
  import arrax.numpy as anp
  x = np.float32(1.5)
  assert (str(arrax.make_jaxpr(getattr(anp, name))(x))
          == str(jax.make_jaxpr(getattr(jnp, name))(x)))
