"""vmap: API semantics (in_axes/out_axes/axis_size, errors), composition with jit, grad and
itself, and the batching rules of the elementwise primitives, differentially against jax.vmap."""
import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from arrax._src import core
from oracle import (BF16, assert_same, check, check_jaxpr, check_raises, check_vmap, make_with,
                    rand, vectorized, vmapped)

B = 3   # the mapped size


def stacked(shape, d, dtype=np.float32, seed=0):
  """An argument whose per-example shape is `shape`, batched at axis d (None: unbatched)."""
  if d is None:
    return rand(shape, dtype, seed)
  full = list(shape)
  full.insert(d, B)
  return rand(tuple(full), dtype, seed)


# ---- in_axes / out_axes / axis_size ------------------------------------------------------------
@pytest.mark.parametrize("in_axes", [0, 1, 2, -1, -2, -3, (1,), [2]])
def test_in_axes_int(in_axes):
  check_vmap(lambda lib: lambda x: lib.numpy.sin(x) * 2.0, rand((2, 3, 4)), in_axes=in_axes)


@pytest.mark.parametrize("out_axes", [0, 1, 2, -1, -3])
def test_out_axes_int(out_axes):
  check_vmap(lambda lib: lambda x: x + 1.0, rand((3, 2, 4)), in_axes=1, out_axes=out_axes)


def test_in_axes_none_mixed_and_pytrees():
  args = ({"a": rand((B, 2)), "b": rand((2, B), seed=1)}, [rand((4,)), rand((B,), seed=2)],
          rand((2,), seed=3))

  def make(lib):
    def f(d, l, c):
      return {"s": d["a"] * d["b"] + c, "t": (l[0].sum() * l[1], l[0])}
    return f
  check_vmap(make, *args, in_axes=({"a": 0, "b": 1}, [None, 0], None))
  check_vmap(make, *args, in_axes=({"a": 0, "b": 1}, (None, 0), None),
             out_axes={"s": 1, "t": (0, None)})


def test_kwargs_mapped_over_axis_0():
  check_vmap(lambda lib: lambda x, y=None: x * y, rand((B, 2)), kwargs={"y": rand((B, 2), seed=1)},
             in_axes=(0,))
  check_vmap(lambda lib: lambda x, y=None: x * y, rand((2, B)), kwargs={"y": rand((B, 2), seed=1)},
             in_axes=1)


@pytest.mark.parametrize("out_axes", [0, 1, -1, None])
def test_unbatched_outputs(out_axes):
  # Outputs that do not depend on the mapped inputs: broadcast (or kept as they are for None).
  check_vmap(lambda lib: lambda x: (lib.numpy.ones(2), 3.0, x.sum() * 0 + 1), rand((B, 2)),
             out_axes=(out_axes, out_axes, 0))


def test_axis_size():
  check_vmap(lambda lib: lambda: lib.numpy.arange(3.0), axis_size=4)
  check_vmap(lambda lib: lambda x: x * 2, rand((2,)), in_axes=None, axis_size=3)
  check_vmap(lambda lib: lambda x: x * 2, rand((3, 2)), axis_size=3)


def test_host_and_python_inputs():
  # NumPy arrays are mapped; Python scalars may be passed unmapped.
  check_vmap(lambda lib: lambda x, s: x * s, rand((B, 2)), 2, in_axes=(0, None))
  check_vmap(lambda lib: lambda x, s: x * s, rand((B, 2)).astype(np.int32), True, in_axes=(0, None))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, BF16, np.complex64])
@pytest.mark.parametrize("shape", [(B,), (B, 0), (0,), (B, 1, 2)])
def test_identity_dtypes_shapes(dtype, shape):
  check_vmap(lambda lib: lambda x: x, rand(shape, dtype), in_axes=0, out_axes=-1)


# ---- errors ----------------------------------------------------------------------------------
ERROR_CASES = {
    "inconsistent_sizes": (lambda lib: lambda a, b: a + b, (rand((2, 3)), rand((3, 3))), {}),
    "inconsistent_with_axis_size": (lambda lib: lambda a: a, (rand((2, 3)),), {"axis_size": 3}),
    "inconsistent_kwargs": (lambda lib: lambda a, b=1: a, (rand((2,)),), {}),
    "axis_out_of_range": (lambda lib: lambda a: a, (rand((2, 3)),), {"in_axes": 2}),
    "negative_axis_out_of_range": (lambda lib: lambda a: a, (rand((2, 3)),), {"in_axes": -3}),
    "scalar_mapped": (lambda lib: lambda a: a, (1.0,), {}),
    "in_axes_not_prefix": (lambda lib: lambda a: a, (rand((2, 3)),), {"in_axes": ((0, 0),)}),
    "in_axes_dict_keys": (lambda lib: lambda a: a, ({"a": rand((2,)), "c": rand((2,))},),
                          {"in_axes": ({"a": 0, "b": 0},)}),
    "in_axes_length": (lambda lib: lambda a, b: a, (rand((2,)), rand((2,))), {"in_axes": (0,)}),
    "in_axes_type": (lambda lib: lambda a: a, (rand((2,)),), {"in_axes": 1.0}),
    "in_axes_leaf_type": (lambda lib: lambda a: a, (rand((2,)),), {"in_axes": (True,)}),
    "in_axes_numpy_int": (lambda lib: lambda a: a, (rand((2,)),), {"in_axes": np.int64(0)}),
    "out_axes_leaf_type": (lambda lib: lambda a: a, (rand((2,)),), {"out_axes": "x"}),
    "out_axes_not_prefix": (lambda lib: lambda a: (a, a), (rand((2,)),), {"out_axes": (0, 0, 0)}),
    "out_axes_out_of_range": (lambda lib: lambda a: a, (rand((2, 3)),), {"out_axes": 2}),
    "out_axes_none_mapped": (lambda lib: lambda a: a, (rand((2, 3)),), {"out_axes": None}),
    "out_axes_none_named": (lambda lib: lambda a: a, (rand((2, 3)),),
                            {"out_axes": None, "axis_name": "i"}),
    "no_arguments": (lambda lib: lambda: 1.0, (), {}),
    "all_unmapped": (lambda lib: lambda a: a, (rand((2,)),), {"in_axes": None}),
    "non_array_output": (lambda lib: lambda a: "s", (rand((2,)),), {}),
}


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_errors(name):
  make, args, kw = ERROR_CASES[name]
  kwargs = {}
  if name == "inconsistent_kwargs":
    kwargs = {"b": rand((3,))}
  check_raises(make, *args, build=make_with("top"), transform=vmapped(**kw), **kwargs)


def test_error_messages_name_the_arguments():
  with pytest.raises(ValueError, match=r"axis 0 of argument b of type float32\[3\]"):
    arrax.vmap(lambda a, b: a)(anp.ones((2,)), anp.ones((3,)))
  with pytest.raises(ValueError, match="tree prefix"):
    arrax.vmap(lambda a: a, in_axes=((0, 0),))(anp.ones((2,)))
  with pytest.raises(ValueError, match="rank should be at least 3"):
    arrax.vmap(lambda a: a, in_axes=2)(anp.ones((2, 3)))


def test_not_callable():
  with pytest.raises(TypeError):
    jax.vmap(3)
  with pytest.raises(TypeError):
    arrax.vmap(3)


def test_missing_rule_error():
  from arrax._src import core
  p = core.Primitive("no_rule_prim")
  p.abstract_eval = lambda x: x
  with pytest.raises(NotImplementedError, match="Batching rule for 'no_rule_prim'"):
    arrax.vmap(lambda x: p.bind(x))(anp.ones((2,)))


def test_leaked_tracer_raises():
  box = []

  def f(x):
    box.append(x)
    return x
  arrax.vmap(f)(anp.ones((2,)))
  with pytest.raises(arrax.errors.UnexpectedTracerError):
    anp.sin(box[0])


# ---- composition -----------------------------------------------------------------------------
def test_vmap_of_vmap_different_axes():
  def make(lib):
    inner = lib.vmap(lambda a, b: a * b + lib.numpy.cos(a), in_axes=(1, None), out_axes=1)
    return lambda x, y: inner(x, y)
  check_vmap(make, rand((2, 4, 3)), rand((4, 2), seed=1), in_axes=(2, 0), out_axes=0)
  check_vmap(make, rand((2, 4, 3)), rand((4, 2), seed=1), in_axes=(0, None), out_axes=-1)


def test_closure_over_outer_batched_value():
  # The inner vmap sees the outer tracer as an unbatched constant.
  def make(lib):
    def f(x, ys):
      return lib.vmap(lambda y: x * y + 1.0)(ys)
    return f
  check_vmap(make, rand((B, 2)), rand((B, 4, 2), seed=1))
  check_vmap(make, rand((B, 2)), rand((4, 2), seed=1), in_axes=(0, None))


def test_jit_of_vmap_and_vmap_of_jit():
  def body(lib):
    return lambda a, b: lib.numpy.tanh(a @ b) * 2.0 - b.sum()

  x, y = rand((B, 2, 3)), rand((3, 4), seed=1)
  check_vmap(body, x, y, in_axes=(0, None), jit=True)
  check_vmap(lambda lib: lib.jit(body(lib)), x, y, in_axes=(0, None))
  check_vmap(lambda lib: lib.jit(body(lib)), np.swapaxes(x, 0, 2), y, in_axes=(2, None), out_axes=1)
  # Nested jit inside vmap inside jit.
  check_vmap(lambda lib: lib.jit(body(lib)), x, y, in_axes=(0, None), jit=True)


def test_vmap_of_jit_unbatched_inputs():
  check_vmap(lambda lib: lambda a, b: lib.jit(lambda u: u * 2.0)(b) + a, rand((B, 2)), rand((2,)),
             in_axes=(0, None))


def test_vmap_of_jit_reuses_the_compiled_jaxpr():
  f = arrax.jit(lambda a: a * 2.0)
  g = arrax.vmap(f)
  x = anp.ones((3, 2))
  g(x)
  n = sum(len(v) for v in core._memo_cache.values())
  g(x)
  assert sum(len(v) for v in core._memo_cache.values()) == n


def test_make_jaxpr_matches_jax():
  x, y = rand((2, 3)), rand((2,))
  cases = [
      (lambda lib: lib.vmap(lambda a, b: lib.numpy.sin(a) * b + 1.0, in_axes=(1, None)), (x, y)),
      (lambda lib: lib.vmap(lib.jit(lambda a, b: a * b - 2.0), in_axes=(1, None)), (x, y)),
      (lambda lib: lib.vmap(lambda a: lib.lax.select_n(a > 0, a, -a)), (x,)),
      (lambda lib: lib.vmap(lambda a, b: a + b, in_axes=(1, 0)), (x, rand((3, 2)))),
  ]
  for make, args in cases:
    check_jaxpr(make, *args, build=make_with("top"))


def test_grad_of_vmap_and_vmap_of_grad():
  def loss(lib):
    return lambda w, x: lib.numpy.sum(lib.numpy.tanh(x * w) ** 2)
  w, x = rand((3,)), rand((B, 3), seed=1)
  # per-example gradients
  check_vmap(lambda lib: lib.grad(loss(lib)), w, x, in_axes=(None, 0), tol=1e-5)
  e = jax.grad(lambda w, x: jax.vmap(loss(jax), in_axes=(None, 0))(w, x).sum())(
      jnp.asarray(w), jnp.asarray(x))
  a = arrax.grad(lambda w, x: arrax.vmap(loss(arrax), in_axes=(None, 0))(w, x).sum())(
      anp.asarray(w), anp.asarray(x))
  assert_same(a, e, tol=1e-5)


def test_jvp_of_vmap():
  f = lambda lib: lib.vmap(lambda a: lib.numpy.sin(a) * a)
  x, t = rand((B, 2)), rand((B, 2), seed=1)
  e = jax.jvp(f(jax), (jnp.asarray(x),), (jnp.asarray(t),))
  a = arrax.jvp(f(arrax), (anp.asarray(x),), (anp.asarray(t),))
  assert_same(list(a), list(e), tol=1e-6)


def test_vmap_of_jvp_and_vjp():
  x0 = rand((2,))
  basis = np.eye(2, dtype=np.float32)
  check_vmap(lambda lib: lambda t: lib.jvp(lambda v: lib.numpy.sin(v) * v, (x0,), (t,))[1], basis,
             tol=1e-6)
  check_vmap(lambda lib: lambda c: lib.vjp(lambda v: lib.numpy.sin(v) * v, x0)[1](c)[0], basis,
             tol=1e-6)


def test_debug_print_under_vmap(capsys):
  def f(x):
    arrax.debug.print("x={x}", x=x)
    return x
  arrax.vmap(f)(anp.arange(3))
  arrax.block_until_ready(arrax.jit(arrax.vmap(f))(anp.arange(2)))
  out_a = capsys.readouterr().out

  def g(x):
    jax.debug.print("x={x}", x=x)
    return x
  jax.vmap(g)(jnp.arange(3))
  jax.block_until_ready(jax.jit(jax.vmap(g))(jnp.arange(2)))
  jax.effects_barrier()
  out_j = capsys.readouterr().out
  assert sorted(out_a.split()) == sorted(out_j.split())


# ---- elementwise batching rules -----------------------------------------------------------------
UNARY = {
    "neg": "f", "abs": "f", "sign": "f", "floor": "f", "ceil": "f", "is_finite": "f",
    "exp": "f", "log": "p", "log1p": "p", "expm1": "f", "sqrt": "p", "rsqrt": "p", "cbrt": "f",
    "tanh": "f", "logistic": "f", "sin": "f", "cos": "f", "tan": "f", "asin": "u", "acos": "u",
    "atan": "f", "sinh": "f", "cosh": "f", "asinh": "f", "acosh": "g", "atanh": "u", "erf": "f",
    "erfc": "f", "erf_inv": "u", "lgamma": "p", "digamma": "p", "exp2": "f", "square": "f",
    "real": "c", "imag": "c", "conj": "c", "bitwise_not": "i", "population_count": "i",
    "clz": "i",
}


def _unary_arg(kind, shape, d):
  x = stacked(shape, d, np.complex64 if kind == "c" else np.int32 if kind == "i" else np.float32)
  if kind == "p":
    x = np.abs(x) + 0.5
  elif kind == "u":
    x = np.tanh(x) * 0.9
  elif kind == "g":
    x = np.abs(x) + 1.5
  return x


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_rules(name):
  kind = UNARY[name]
  for shape, d in [((2, 3), 1)] if kind == "f" else [((2, 3), 1), ((), 0)]:
    check_vmap(lambda lib: getattr(lib.lax, name), _unary_arg(kind, shape, d), in_axes=d, jit=True,
               tol=1e-5)


@pytest.mark.parametrize("d,out", [(0, 0), (1, 2), (2, -1)])
def test_unary_rule_every_axis(d, out):
  check_vmap(lambda lib: lambda x: lib.lax.exp(lib.lax.neg(x)), stacked((2, 3), d), in_axes=d,
             out_axes=out, tol=1e-6)


@pytest.mark.parametrize("case", [
    ("round", {"rounding_method": 1}), ("round", {}), ("integer_pow", {"y": 3}),
    ("integer_pow", {"y": -2}), ("reduce_precision", {"exponent_bits": 5, "mantissa_bits": 2}),
    ("convert_element_type", {"new_dtype": np.int32}),
    ("convert_element_type", {"new_dtype": BF16}),
    ("bitcast_convert_type", {"new_dtype": np.int32}),
    ("bitcast_convert_type", {"new_dtype": np.uint16}),
])
def test_unary_rules_with_params(case):
  name, params = case
  for shape, d in [((2, 3), 0), ((2, 3), 2), ((), 0)]:
    check_vmap(lambda lib: lambda x: getattr(lib.lax, name)(x, **params), stacked(shape, d) * 3,
               in_axes=d, jit=True)


def test_bitcast_widening_with_batch_axis_last():
  # JAX's rule fails when the batch axis is the consumed last axis; arrax moves it first. The
  # result must equal JAX's with the batch axis in front.
  x = (rand((2, 2, B)) * 1000).astype(np.uint16)
  f = lambda lib: lambda v: lib.lax.bitcast_convert_type(v, np.float32)  # noqa: E731
  a = arrax.vmap(f(arrax), in_axes=2)(anp.asarray(x))
  e = jax.vmap(f(jax))(jnp.asarray(np.moveaxis(x, 2, 0)))
  np.testing.assert_array_equal(np.asarray(a).view(np.uint32), np.asarray(e).view(np.uint32))
  check_vmap(f, np.moveaxis(x, 2, 1), in_axes=1)


BINARY = {
    "add": "f", "sub": "f", "mul": "f", "div": "f", "rem": "f", "max": "f", "min": "f",
    "pow": "p", "atan2": "f", "nextafter": "f", "eq": "f", "ne": "f", "lt": "f", "le": "f",
    "gt": "f", "ge": "f", "bitwise_and": "i", "bitwise_or": "i", "bitwise_xor": "b",
    "shift_left": "s", "shift_right_arithmetic": "s", "shift_right_logical": "s",
    "complex": "f", "polygamma": "g",
}


def _binary_arg(kind, shape, d, which):
  dtype = {"i": np.int32, "b": np.bool_, "s": np.int32}.get(kind, np.float32)
  x = stacked(shape, d, dtype, seed=which)
  if kind == "p" and which == 0:
    x = np.abs(x) + 0.5
  if kind == "s" and which == 1:
    x = np.abs(x) % 5
  if kind == "g":
    x = np.abs(x) + 0.5 if which == 1 else np.floor(np.abs(x) * 2)
  return x


# (per-example shape, batch axis) of each operand; None: unbatched.
BINARY_CONFIGS = [
    (((2, 3), 0), ((2, 3), 0)),
    (((2, 3), 1), ((2, 3), None)),
    (((2, 3), None), ((2, 3), 2)),
    (((), 0), ((2, 3), 1)),
    (((2, 3), 2), ((), None)),
]


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_rules(name):
  kind = BINARY[name]
  # The rule is shared: every configuration for a few operators, two (the general path and a
  # per-example scalar) for the rest.
  full = name in ("add", "pow", "complex", "bitwise_xor", "shift_right_logical", "lt")
  configs = BINARY_CONFIGS if full else BINARY_CONFIGS[2:4]
  for (sx, dx), (sy, dy) in configs:
    args = (_binary_arg(kind, sx, dx, 0), _binary_arg(kind, sy, dy, 1))
    check_vmap(lambda lib: getattr(lib.lax, name), *args, in_axes=(dx, dy), jit=True, tol=1e-5)


@pytest.mark.parametrize("dx,dy", list(itertools.product([0, 1, 2, None], [0, 1, 2, None]))[:-1])
def test_add_every_axis_combination(dx, dy):
  check_vmap(lambda lib: lambda a, b: lib.lax.add(a, b), stacked((2, 3), dx),
             stacked((2, 3), dy, seed=1), in_axes=(dx, dy))


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, BF16, np.complex64, np.uint8])
def test_binary_dtypes(dtype):
  op = "bitwise_or" if dtype == np.bool_ else "add"
  check_vmap(lambda lib: getattr(lib.lax, op), stacked((2,), 1, dtype), stacked((2,), None, dtype),
             in_axes=(1, None))


def test_python_scalar_operands_stay_weak():
  check_vmap(lambda lib: lambda x: lib.lax.mul(x, 2.0) + 1, rand((B, 2)))
  check_vmap(lambda lib: lambda x: x * 2, rand((B,)).astype(np.int32))


def test_empty_and_zero_d():
  check_vmap(lambda lib: lib.lax.add, stacked((0,), 0), stacked((0,), None, seed=1),
             in_axes=(0, None))
  check_vmap(lambda lib: lib.lax.mul, stacked((), 0), stacked((), None, seed=1), in_axes=(0, None))
  check_vmap(lambda lib: lib.lax.mul, rand((0, 2)), rand((0, 2), seed=1))


SELECT_CONFIGS = [
    # (which (shape, dim, dtype)), cases [(shape, dim)...]
    (((2, 3), 0, np.bool_), [((2, 3), 0), ((2, 3), 0)]),
    (((), 0, np.bool_), [((2, 3), 0), ((2, 3), 0)]),
    (((), 0, np.bool_), [((2, 3), 1), ((2, 3), None)]),
    (((), None, np.bool_), [((2, 3), 1), ((2, 3), 0)]),
    (((), None, np.bool_), [((2, 3), 1), ((2, 3), 1)]),
    (((2, 3), 1, np.bool_), [((2, 3), None), ((2, 3), None)]),
    (((2, 3), None, np.bool_), [((2, 3), 2), ((2, 3), None)]),
    (((2, 3), 0, np.bool_), [((), None), ((), None)]),
    (((), 0, np.bool_), [((), None), ((), 0)]),
    (((2,), 0, np.int32), [((2,), 1), ((2,), None), ((2,), 0)]),
    (((), 0, np.int32), [((2,), None), ((2,), None), ((2,), 1)]),
]


@pytest.mark.parametrize("config", range(len(SELECT_CONFIGS)))
def test_select_n_rule(config):
  (ws, wd, wdt), cases = SELECT_CONFIGS[config]
  which = stacked(ws, wd, wdt)
  if wdt == np.int32:
    which = np.abs(which) % len(cases)
  args = (which,) + tuple(stacked(s, d, seed=i + 1) for i, (s, d) in enumerate(cases))
  check_vmap(lambda lib: lib.lax.select_n, *args, in_axes=(wd,) + tuple(d for _, d in cases))


CLAMP_CONFIGS = [
    [((2, 3), 0), ((2, 3), 0), ((2, 3), 0)],
    [((), None), ((2, 3), 1), ((), None)],
    [((), 0), ((2, 3), 0), ((), 0)],
    [((), 0), ((2, 3), 1), ((), None)],
    [((2, 3), None), ((2, 3), 2), ((2, 3), 0)],
    [((), 0), ((), None), ((), None)],
    [((), 0), ((2,), None), ((2,), 1)],
]


@pytest.mark.parametrize("config", range(len(CLAMP_CONFIGS)))
def test_clamp_rule(config):
  cfg = CLAMP_CONFIGS[config]
  lo = stacked(cfg[0][0], cfg[0][1], seed=0) - 1.0
  x = stacked(cfg[1][0], cfg[1][1], seed=1) * 2
  hi = stacked(cfg[2][0], cfg[2][1], seed=2) + 1.0
  check_vmap(lambda lib: lib.lax.clamp, lo, x, hi, in_axes=tuple(d for _, d in cfg))


def test_every_elementwise_primitive_has_a_batching_rule():
  from arrax._src import core
  from arrax._src.lax import elementwise
  missing = [p.name for p in vars(elementwise).values()
             if isinstance(p, core.Primitive) and p.batch is None and p.batch_collective is None]
  assert not missing, missing


def test_jnp_functions_under_vmap():
  def make(lib):
    np_ = lib.numpy
    return lambda x, y: np_.where(x > 0, np_.exp(x) * y, np_.clip(y, -0.5, 0.5)) + x.astype(
        np_.int32) ** 2
  check_vmap(make, rand((B, 4)), rand((4,), seed=1), in_axes=(0, None))
  check_vmap(make, rand((4, B)), rand((B, 4), seed=1), in_axes=(1, 0), jit=True)


# ---- jnp.vectorize ---------------------------------------------------------------------------
# jnp.vectorize(make(lib), ...) on both libraries: results or error classes agree.
check_vectorized = functools.partial(check, build=make_with("top"), transform=vectorized(),
                                     tol=1e-5, strict_tree=True)


@pytest.mark.parametrize("shapes", [
    [(), ()], [(3,), ()], [(2, 1, 3), (3,)], [(1, 4), (5, 1)], [(2, 3), (2, 3)], [(0, 3), (3,)],
    [(2, 1), (1, 1)],
])
def test_vectorize_elementwise_broadcasting(shapes):
  args = tuple(rand(s, seed=i) for i, s in enumerate(shapes))
  check_vectorized(lambda lib: lambda x, y: lib.numpy.where(x > y, x * y, lib.numpy.sin(y)), *args)


@pytest.mark.parametrize("sig,make,shapes", [
    ("(k),(k)->(k)", lambda lib: lambda a, b: lib.numpy.array(
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]),
     [(1, 2, 3), (2, 1, 3)]),
    ("(n,m),(m)->(n)", lambda lib: lambda m, v: m @ v, [(2, 3), (4, 3)]),
    ("(n,m),(m)->(n)", lambda lib: lambda m, v: m @ v, [(5, 1, 2, 3), (4, 3)]),
    ("(n)->(),(n)", lambda lib: lambda v: (v.sum(), v * 2), [(3, 4)]),
    ("()->()", lambda lib: lambda x: x ** 2, [(2, 3)]),
    ("(n),()->(n)", lambda lib: lambda v, s: v * s, [(4, 2), (3, 1, 1)]),
])
def test_vectorize_signatures(sig, make, shapes):
  args = tuple(rand(s, seed=i) for i, s in enumerate(shapes))
  check_vectorized(make, *args, transform=vectorized(signature=sig))


def test_vectorize_excluded_and_none():
  check_vectorized(lambda lib: lambda x, n, y: x * n + y, rand((3,)), 2, rand((2, 1), seed=1),
                   transform=vectorized(excluded={1}))
  check_vectorized(lambda lib: lambda x, n, y: x * n + y, rand((3,)), 2, rand((2, 1), seed=1),
                   transform=vectorized(excluded=frozenset({1}), signature="(),()->()"))
  check_vectorized(lambda lib: lambda x, y, z: x + (0 if z is None else z), rand((3,)), None, None)

  def run(lib):   # excluded by name
    f = lib.numpy.vectorize(lambda x, scale=1.0: x * scale, excluded={"scale"})
    return f(lib.numpy.ones((2, 3)), scale=3.0)
  assert_same(run(arrax), run(jax))


def test_vectorize_under_jit_and_vmap():
  def make(lib):
    f = lib.numpy.vectorize(lambda m, v: m @ v, signature="(n,m),(m)->(n)")
    return lib.jit(lambda a, b: lib.vmap(f, in_axes=(0, None))(a, b))

  a, b = rand((3, 2, 4, 5)), rand((5,), seed=1)
  assert_same(make(arrax)(anp.asarray(a), anp.asarray(b)),
                   make(jax)(jnp.asarray(a), jnp.asarray(b)), tol=1e-5)
  f = lambda lib: lib.numpy.vectorize(lambda x, y: x * y + 1)  # noqa: E731
  e = str(jax.make_jaxpr(f(jax))(jnp.ones((2, 1, 3)), jnp.ones(3)))
  assert str(arrax.make_jaxpr(f(arrax))(anp.ones((2, 1, 3)), anp.ones(3))) == e


VEC_ERRORS = {
    "bad_signature": (lambda lib: lambda x: x, [(3,)], {"signature": "(n->()"}),
    "not_enough_dims": (lambda lib: lambda m, v: m @ v, [(3,), (3,)],
                        {"signature": "(n,m),(m)->(n)"}),
    "inconsistent_core": (lambda lib: lambda a, b: a + b, [(3,), (4,)],
                          {"signature": "(n),(n)->(n)"}),
    "wrong_output_core": (lambda lib: lambda a: a.sum(), [(3,)], {"signature": "(n)->(n)"}),
    "output_count": (lambda lib: lambda a: (a, a), [(3,)], {"signature": "(n)->(n),(n),(n)"}),
    "output_not_tuple": (lambda lib: lambda a: a, [(3,)], {"signature": "(n)->(n),(n)"}),
    "positional_count": (lambda lib: lambda a: a, [(3,), (3,)], {"signature": "(n)->(n)"}),
    "loop_shapes": (lambda lib: lambda a, b: a + b, [(2,), (3,)], {}),
    "excluded_negative": (lambda lib: lambda a: a, [(2,)], {"excluded": {-1}}),
    "excluded_type": (lambda lib: lambda a: a, [(2,)], {"excluded": {1.5}}),
    "none_with_core_dims": (lambda lib: lambda a, b: a, [(2,), None], {"signature": "(),(n)->()"}),
}


@pytest.mark.parametrize("name", sorted(VEC_ERRORS))
def test_vectorize_errors(name):
  make, shapes, kw = VEC_ERRORS[name]
  args = tuple(None if s is None else rand(s, seed=i) for i, s in enumerate(shapes))
  check_raises(make, *args, build=make_with("top"), transform=vectorized(**kw))
