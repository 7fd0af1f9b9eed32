"""A differential fuzzer: random programs from op records, under random stacks of transformations,
run by arrax and by JAX 0.10.2 and compared.

A program is drawn step by step (with hypothesis's `draw`, so failures shrink): inputs of one
random shape and dtype, then a few ops, each reading earlier values, then one or two outputs.
Every op is an `Op` record: how each library computes it (from the Lib namespace of
tests.oracle), the dtype kinds it takes, and whether it is differentiable. Shapes are checked
while drawing by JAX's eval_shape: an op JAX rejects is still kept sometimes, since then
arrax must raise the same error class. The program is wrapped in transformations drawn from
jit, vmap (random in_axes), grad / jvp / vjp (float programs), checkpoint, scan and cond, in
any order, and the run compares values (per-dtype tolerance), dtypes, weak types, shapes, the
error class when JAX raises and, optionally, the printed jaxpr.

`python -m tests.fuzzing --programs N [--seed S] [--jaxpr]` runs a long campaign and prints
each mismatch with the program that shows it; tests/test_fuzz.py runs a small fixed budget.
"""
from __future__ import annotations

import argparse
import difflib
import dataclasses
import sys
import traceback
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

from tests.oracle import ARRAX, BF16, JAX, assert_same, rand, same_exception, to_arrax, to_jax

KINDS = {"b": [np.bool_], "i": [np.int8, np.uint8, np.int32], "f": [np.float16, BF16, np.float32],
         "c": [np.complex64]}


@dataclasses.dataclass(frozen=True)
class Op:
  name: str
  arity: int
  fn: Callable[..., Any]        # fn(lib, *values, **params)
  kinds: str = "bifc"           # dtype kinds it takes
  diff: bool = True             # differentiable (float inputs)
  params: Callable | None = None  # params(draw, ndim) -> dict

  def __repr__(self):
    return self.name


def _axis(draw, ndim):
  return {"axis": draw(st.integers(-ndim, ndim - 1))} if ndim else {"axis": None}


def _np(name):
  return lambda lib, *xs, **kw: getattr(lib.np, name)(*xs, **kw)


UNARY = [Op(n, 1, _np(n), k, d) for n, k, d in [
    ("negative", "ifc", True), ("abs", "ifc", True), ("sin", "fc", True), ("cos", "fc", True),
    ("tanh", "fc", True), ("exp", "fc", True), ("log1p", "f", True), ("square", "ifc", True),
    ("sign", "ifc", False), ("floor", "f", False), ("round", "ifc", False),
    ("logical_not", "b", False), ("conj", "fc", True), ("cbrt", "f", True),
    ("isnan", "fc", False), ("sinh", "f", True), ("arctan", "f", True), ("expm1", "f", True)]]
UNARY += [
    Op("sqrt_abs", 1, lambda lib, x: lib.np.sqrt(lib.np.abs(x) + 1), "f"),
    Op("relu", 1, lambda lib, x: lib.top.nn.relu(x), "if"),
    Op("sigmoid", 1, lambda lib, x: lib.top.nn.sigmoid(x), "f"),
    Op("softplus", 1, lambda lib, x: lib.top.nn.softplus(x), "f"),
    Op("stop_gradient", 1, lambda lib, x: lib.lax.stop_gradient(x), "bifc"),
    Op("astype_f32", 1, lambda lib, x: x.astype(np.float32), "bif", False),
    Op("mul_weak", 1, lambda lib, x: x * 2, "ifc"),
    Op("add_weak_float", 1, lambda lib, x: x + 0.5, "ifc"),
    Op("transpose", 1, lambda lib, x: lib.np.transpose(x)),
    Op("flip", 1, lambda lib, x, axis: lib.np.flip(x, axis), params=_axis),
    Op("reverse_slice", 1, lambda lib, x: x[::-1] if x.ndim else x),
    Op("stride_slice", 1, lambda lib, x: x[..., ::2]),
    Op("reshape_flat", 1, lambda lib, x: x.reshape(-1)),
    Op("expand_dims", 1, lambda lib, x: lib.np.expand_dims(x, 0)),
    Op("sum", 1, lambda lib, x, axis: lib.np.sum(x, axis=axis), "bifc", params=_axis),
    Op("mean", 1, lambda lib, x, axis: lib.np.mean(x, axis=axis), "fc", params=_axis),
    Op("max", 1, lambda lib, x, axis: lib.np.max(x, axis=axis), "bif", params=_axis),
    Op("prod", 1, lambda lib, x, axis: lib.np.prod(x, axis=axis), "if", params=_axis),
    Op("argmax", 1, lambda lib, x, axis: lib.np.argmax(x, axis=axis), "bif", False, _axis),
    Op("cumsum", 1, lambda lib, x, axis: lib.np.cumsum(x, axis=axis), "ifc", params=_axis),
    Op("cummax", 1, lambda lib, x, axis: lib.lax.cummax(x, axis=axis % max(x.ndim, 1)), "if",
       params=_axis),
    Op("sort", 1, lambda lib, x, axis: lib.np.sort(x, axis=axis), "bif", params=_axis),
    Op("softmax", 1, lambda lib, x, axis: lib.top.nn.softmax(x, axis=axis), "f", params=_axis),
    Op("logsumexp", 1, lambda lib, x, axis: lib.top.nn.logsumexp(x, axis=axis), "f",
       params=_axis),
    Op("gather", 1, lambda lib, x: x[lib.np.array([0, -1, 0])] if x.ndim and x.shape[0] else x),
    Op("at_add", 1, lambda lib, x: x.at[0].add(1) if x.ndim and x.shape[0] else x, "ifc"),
    Op("where_pos", 1, lambda lib, x: lib.np.where(x > 0, x, 0 * x), "if"),
    Op("matmul_t", 1, lambda lib, x: x @ x.T if x.ndim == 2 else x, "ifc"),
    Op("concat_self", 1, lambda lib, x: lib.np.concatenate([x, x]) if x.ndim else x),
    Op("pad", 1, lambda lib, x: lib.np.pad(x, 1)),
    Op("clip", 1, lambda lib, x: lib.np.clip(x, -1, 1), "if"),
    Op("cond_self", 1, lambda lib, x: lib.lax.cond(lib.np.sum(x.real if x.dtype.kind == "c"
                                                               else x) > 0,
                                                  lambda v: v * 2, lambda v: -v, x), "if"),
    Op("fori", 1, lambda lib, x: lib.lax.fori_loop(0, 3, lambda i, v: v * 0.5 + 1, x), "f"),
    Op("scan_cumsum", 1, lambda lib, x: lib.lax.scan(lambda c, r: (c + r, c * r), x[0] * 0,
                                                     x)[1] if x.ndim and x.shape[0] else x,
       "if"),
]
BINARY = [Op(n, 2, _np(n), k, d) for n, k, d in [
    ("add", "bifc", True), ("subtract", "ifc", True), ("multiply", "bifc", True),
    ("maximum", "bif", True), ("minimum", "bif", True), ("true_divide", "fc", True),
    ("arctan2", "f", True), ("hypot", "f", True), ("logical_and", "b", False),
    ("greater", "bif", False), ("equal", "bifc", False), ("floor_divide", "if", False),
    ("remainder", "if", False), ("logaddexp", "f", True)]]
BINARY += [
    Op("power_abs", 2, lambda lib, x, y: lib.np.power(lib.np.abs(x) + 1, y), "f"),
    Op("where", 2, lambda lib, x, y: lib.np.where(x > y, x, y), "if"),
    Op("stack", 2, lambda lib, x, y: lib.np.stack([x, y])),
    Op("dot_general", 2, lambda lib, x, y: lib.np.tensordot(x, y, axes=x.ndim), "ifc"),
]
OPS = UNARY + BINARY

TRANSFORMS = ["jit", "vmap", "grad", "jvp", "vjp", "checkpoint", "scan", "cond"]


@dataclasses.dataclass
class Program:
  shape: tuple
  dtype: Any
  n_inputs: int
  steps: list            # (op, input indices, params)
  outputs: tuple         # value indices
  transforms: list       # (name, options) innermost first
  seed: int

  def __str__(self):
    lines = [f"inputs: {self.n_inputs} x {np.dtype(self.dtype).name}{list(self.shape)} "
             f"(seed {self.seed})"]
    for k, (op, ins, params) in enumerate(self.steps):
      lines.append(f"  v{self.n_inputs + k} = {op.name}({', '.join(f'v{i}' for i in ins)}"
                   f"{''.join(f', {p}={v!r}' for p, v in params.items())})")
    lines.append(f"  outputs: {[f'v{i}' for i in self.outputs]}")
    lines.append(f"  transforms (innermost first): {self.transforms}")
    return "\n".join(lines)


def _kind(dtype):
  return "f" if np.dtype(dtype) == BF16 else np.dtype(dtype).kind.replace("u", "i")


def draw_program(draw, max_steps=4) -> Program:
  """A random program (see the module docstring), drawn with `draw(strategy)`."""
  import jax  # the oracle computes the avals the draw needs (never arrax's code)
  ndim = draw(st.integers(0, 3))
  shape = tuple(draw(st.lists(st.sampled_from([0, 1, 2, 3, 4]), min_size=ndim, max_size=ndim)))
  dtype = draw(st.sampled_from([d for ds in KINDS.values() for d in ds]))
  n_inputs = draw(st.integers(1, 2))
  avals = [jax.ShapeDtypeStruct(shape, np.dtype(dtype))] * n_inputs
  steps = []
  for _ in range(draw(st.integers(1, max_steps))):
    op = draw(st.sampled_from(OPS))
    ins = [draw(st.integers(0, len(avals) - 1)) for _ in range(op.arity)]
    in_avals = [avals[i] for i in ins]
    if op.kinds and _kind(in_avals[0].dtype) not in op.kinds and not draw(st.integers(0, 9)) == 0:
      continue  # mostly skip ops outside their dtype domain (sometimes keep: errors must match)
    params = op.params(draw, len(in_avals[0].shape)) if op.params else {}
    try:
      out = jax.eval_shape(lambda *xs: op.fn(JAX, *xs, **params), *in_avals)
    except Exception:  # noqa: BLE001
      if draw(st.integers(0, 4)):
        continue
      steps.append((op, ins, params))
      break  # the program ends in an error JAX raises: arrax must raise the same class
    steps.append((op, ins, params))
    avals.append(out)
  n_out = min(len(avals), draw(st.integers(1, 2)))
  outputs = tuple(sorted({len(avals) - 1 - k for k in range(n_out)}))
  transforms = []
  for _ in range(draw(st.integers(0, 3))):
    name = draw(st.sampled_from(TRANSFORMS))
    opts = {}
    if name == "vmap":
      opts = {"in_axes": tuple(draw(st.integers(0, len(shape))) for _ in range(n_inputs))}
    elif name == "cond":
      opts = {"branch": draw(st.booleans())}
    transforms.append((name, opts))
  return Program(shape, dtype, n_inputs, steps, outputs, transforms, draw(st.integers(0, 2**16)))


def build(program: Program, lib):
  """The program as a function of its inputs for `lib` (oracle.ARRAX or oracle.JAX)."""
  def f(*xs):
    vals = list(xs)
    for op, ins, params in program.steps:
      vals.append(op.fn(lib, *(vals[i] for i in ins), **params))
    outs = tuple(vals[i] for i in program.outputs if i < len(vals))
    return outs if len(outs) > 1 else outs[0]
  return f


def _scalar_loss(lib, f):
  def loss(*xs):
    leaves = lib.top.tree_util.tree_leaves(f(*xs))
    return sum(lib.np.sum(lib.np.real(leaf).astype(np.float32)) for leaf in leaves)
  return loss


def _batched(x, axis, seed):
  """x and a second random value of its shape and dtype, stacked along `axis`."""
  return np.stack([x, rand(x.shape, x.dtype, seed=seed)], axis=axis)


def transform(program: Program, lib, f, args):
  """Wrap `f` in the program's transformations; returns (function, NumPy arguments)."""
  top = lib.top
  for k, (name, opts) in enumerate(program.transforms):
    if name == "jit":
      f = top.jit(f)
    elif name == "checkpoint":
      f = top.checkpoint(f)
    elif name == "vmap":
      axes = tuple(min(ax, a.ndim) for a, ax in zip(args, opts["in_axes"]))
      args = [_batched(a, ax, program.seed + 100 * k + i)
              for i, (a, ax) in enumerate(zip(args, axes))]
      f = top.vmap(f, in_axes=axes)
    elif name == "grad":
      f = top.grad(_scalar_loss(lib, f), argnums=tuple(range(len(args))))
    elif name == "jvp":
      def f(*xs, g=f):
        return top.jvp(g, xs, tuple(lib.np.ones_like(x) for x in xs))
    elif name == "vjp":
      def f(*xs, g=f):
        out, pullback = top.vjp(g, *xs)
        return out, pullback(top.tree_util.tree_map(lib.np.ones_like, out))
    elif name == "scan":
      def f(*xs, g=f):
        return top.lax.scan(lambda c, row: (c, g(*row)), 0, xs)[1]
      args = [_batched(a, 0, program.seed + 100 * k + i) for i, a in enumerate(args)]
    elif name == "cond":
      def f(*xs, g=f, branch=opts["branch"]):
        return top.lax.cond(branch, g, lambda *ys: g(*ys), *xs)
  return f, args


def _tol(program):
  dt = np.dtype(program.dtype)
  loose = dt in (np.float16, BF16) or any(n in ("grad", "jvp", "vjp") for n, _ in
                                          program.transforms)
  return (5e-2, 5e-2) if dt in (np.float16, BF16) else ((2e-4, 2e-4) if loose else (2e-5, 2e-5))


def run(program: Program, check_jaxpr=False):
  """Run the program under both libraries; raises AssertionError describing a mismatch."""
  inputs = [rand(program.shape, program.dtype, seed=program.seed + k)
            for k in range(program.n_inputs)]

  def go(lib, convert):
    f, args = transform(program, lib, build(program, lib), inputs)
    args = [convert(a) for a in args]
    return f, args, f(*args)

  try:
    jf, jargs, expected = go(JAX, to_jax)
  except Exception as e:  # noqa: BLE001
    same_exception(lambda: go(ARRAX, to_arrax), e)
    return "error"
  af, aargs, actual = go(ARRAX, to_arrax)
  rtol, atol = _tol(program)
  assert_same(actual, expected, rtol=rtol, atol=atol, signbits=None)
  if check_jaxpr:
    import jax
    import arrax
    je, ae = str(jax.make_jaxpr(jf)(*jargs)), str(arrax.make_jaxpr(af)(*aargs))
    if ae != je:
      diff = "\n".join(difflib.unified_diff(je.splitlines(), ae.splitlines(), "jax", "arrax",
                                            lineterm="", n=2))
      raise JaxprMismatch(f"jaxprs differ:\n{diff}")
  return "ok"


class JaxprMismatch(AssertionError):
  """Same values, different printed jaxprs."""


def main(argv=None):
  from hypothesis import HealthCheck, given, seed, settings
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--programs", type=int, default=1000)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--jaxpr", action="store_true", help="also compare printed jaxprs")
  args = parser.parse_args(argv)
  counts = {"ok": 0, "error": 0, "jaxpr mismatch": 0, "mismatch": 0}

  @seed(args.seed)
  @settings(max_examples=args.programs, deadline=None, database=None,
            suppress_health_check=list(HealthCheck))
  @given(st.data())
  def campaign(data):
    program = draw_program(data.draw)
    try:
      counts[run(program, args.jaxpr)] += 1
    except Exception as e:  # noqa: BLE001  (a mismatch: print it and go on)
      kind = "jaxpr mismatch" if isinstance(e, JaxprMismatch) else "mismatch"
      counts[kind] += 1
      print(f"=== {kind} {counts[kind]}\n{program}\n{type(e).__name__}: "
            f"{str(e)[:4000]}", flush=True)
      if not isinstance(e, AssertionError):
        traceback.print_exc(limit=4)

  campaign()
  print(f"{sum(counts.values())} programs: {counts}")
  return 1 if counts["mismatch"] else 0


if __name__ == "__main__":
  sys.exit(main())
