"""jax.experimental.pallas.fuser against JAX 0.10.2: `fuse`/`fusible` (input and output
fusions, output groups, the errors), `Fusion`, `evaluate`, block specs pulled and pushed through
fusions (and the kernel functions computing blocks), `get_fusion_values`, `custom_fusion`, and a
fused Pallas kernel in interpret mode."""
import functools

import jax
import jax.experimental.pallas  # noqa: F401
import jax.experimental.pallas.fuser  # noqa: F401
import numpy as np
from oracle import call_with, check_all, check_error, check_value, rand

import arrax
import arrax.experimental.pallas  # noqa: F401
import arrax.experimental.pallas.fuser  # noqa: F401

TOP = call_with("top")
ok = functools.partial(check_value, build=TOP)   # a case JAX runs
err = functools.partial(check_error, build=TOP)  # a case JAX raises on (err(..., match=...))


def _fuser(top):
  return top.experimental.pallas.fuser


def _double(top):
  """A fusible doubling its input, applying its output fusion if any."""
  @_fuser(top).fusible
  def f(x_fusion, out_fusion):
    y = x_fusion() * 2
    return y if out_fusion is None else out_fusion(y)
  return f


def _split(top):
  """A fusible with two output groups (sum and difference)."""
  @_fuser(top).fusible(output_fusion_prefix=(True, True))
  def g(a_fusion, b_fusion, out_fusions):
    a, b = a_fusion(), b_fusion()
    outs = [a + b, a - b]
    return tuple(o if of is None else of(o) for o, of in zip(outs, out_fusions))
  return g


def test_fuse():
  x = rand((4,), np.float32, seed=1)
  y = rand((4,), np.float32, seed=2)
  np_ = lambda top: top.numpy  # noqa: E731

  def fused(top, fn, *args):
    return _fuser(top).fuse(fn(top))(*args)

  check_all([
      ("unfused", lambda: ok(lambda top, x: _double(top)(x), x)),
      ("input_output", lambda: ok(fused, lambda t: lambda x: _double(t)(np_(t).sin(x)) + 1, x)),
      ("jit", lambda: ok(lambda top, x: top.jit(_fuser(top).fuse(
          lambda x: _double(top)(top.numpy.exp(x)) * x))(x), x)),
      ("independent", lambda: ok(fused, lambda t: lambda x: (_double(t)(x), 2 * x)[1], x)),
      ("no_fusible", lambda: err(fused, lambda t: lambda x: x * 3, x,
                                 match="No fusible eqn found")),
      ("groups", lambda: ok(fused, lambda t: lambda a, b: (lambda r: (r[0] * 2, r[1] + 1))(
          _split(t)(a, b)), x, y)),
      ("one_group", lambda: ok(fused, lambda t: lambda a, b: (lambda r: (r[0] * 2, r[1]))(
          _split(t)(a, b)), x, y)),
      ("overlap", lambda: err(fused, lambda t: lambda a, b: (lambda r: r[0] + r[1])(
          _split(t)(a, b)), x, y, match="must be disjoint")),
      ("vmap_one", lambda: ok(lambda top, x: top.vmap(_double(top))(x[None]), x)),
      ("vmap_many", lambda: err(lambda top, x: top.vmap(_double(top))(x[:, None]), x,
                                match="non-trivial batching")),
  ])


def test_fusion_objects():
  seen = {}
  for top in (jax, arrax):
    @_fuser(top).fusible
    def f(x_fusion, out_fusion, top=top):
      seen.setdefault(top, []).append(
          (x_fusion.shape, str(x_fusion.dtype), x_fusion.in_shape, str(x_fusion.type))
          + (() if out_fusion is None else (out_fusion.shape, out_fusion.in_shape,
                                            str(out_fusion.in_type), str(out_fusion.out_type))))
      y = x_fusion() + 1
      return y if out_fusion is None else out_fusion(y)

    _fuser(top).fuse(lambda x, f=f, top=top: f(top.numpy.cos(x)).astype(np.int32))(
        np.ones((2, 3), np.float32))
  assert seen[arrax] == seen[jax] and len(seen[jax]) == 2
  sds = {top: top.ShapeDtypeStruct((2,), np.float32) for top in (jax, arrax)}
  for top in (jax, arrax):
    fu = _fuser(top).Fusion(lambda a: a + 1, ((sds[top],), {}), sds[top])
    assert (fu.shape, fu.in_shape, fu(1.0), fu.strict_mode) == ((2,), (((2,),), {}), 2.0, True)
    assert fu.in_dtype == ((np.dtype(np.float32),), {})


def test_evaluate():
  x = rand((2, 3), np.float32, seed=3)
  check_all([
      ("plain", lambda: ok(lambda top, x: _fuser(top).evaluate(
          lambda v: top.numpy.sin(v).T * 2)(x), x)),
      ("no_transpose", lambda: err(lambda top, x: _fuser(top).evaluate(
          lambda v: v.T, allow_transpose=False)(x), x, match="Transpose not allowed")),
      ("no_loops", lambda: err(lambda top, x: _fuser(top).evaluate(
          lambda v: top.lax.fori_loop(0, 2, lambda i, c: c + 1, v))(x), x,
          match="not supported")),
  ])


# ---- block specs -------------------------------------------------------------------------------------
GRID = [(0, 0), (1, 0), (1, 1)]


def _spec_summary(spec, grid=GRID):
  """A block spec as (block shape, block indices at some grid points)."""
  if not hasattr(spec, "block_shape"):
    return repr(spec)
  idx = None if spec.index_map is None else [
      tuple(int(i) for i in spec.index_map(*g)) for g in grid]
  return (tuple(spec.block_shape), idx)


def _pulled(top, fn, args, block_shape=(2, 8)):
  """The specs pulled from one (2, 8) output block at (i, j), and the output block (1, 0)
  computed from the input blocks."""
  pl, fuser = top.experimental.pallas, _fuser(top)
  spec = pl.BlockSpec(block_shape, lambda i, j: (i, j))
  kernel_fn, arg_specs, kw_specs = fuser.pull_block_spec(fn(top), spec, grid_len=2)(*args)
  summary = [_spec_summary(s) for s in arg_specs]
  blocks = []
  for a, s in zip(args, arg_specs):
    if not hasattr(s, "block_shape"):
      blocks.append(a)
      continue
    start = [int(i) * b for i, b in zip(s.index_map(1, 0), s.block_shape)]
    blocks.append(a[tuple(slice(st, st + b) for st, b in zip(start, s.block_shape))])
  out = kernel_fn((1, 0), (), *blocks)
  return summary, kw_specs, out


def test_pull_block_spec():
  x = rand((4, 16), np.float32, seed=4)
  row = rand((1, 16), np.float32, seed=5)
  col = rand((16,), np.float32, seed=6)
  xt = rand((16, 4), np.float32, seed=7)
  check_all([
      ("unary", lambda: ok(_pulled, lambda t: lambda a: t.numpy.exp(a / 3) + 1.0, (x,))),
      ("binary_bcast", lambda: ok(_pulled, lambda t: lambda a, b: a * b, (x, row))),
      ("broadcast_in_dim", lambda: ok(_pulled, lambda t: lambda a, b: a - b[None, :],
                                      (x, col))),
      ("transpose", lambda: ok(_pulled, lambda t: lambda a: t.numpy.tanh(a.T), (xt,))),
      ("convert", lambda: ok(_pulled, lambda t: lambda a: a.astype(np.int32) + 1, (x,))),
      ("where", lambda: ok(_pulled, lambda t: lambda a: t.numpy.where(a > 0, a, 0.0), (x,))),
      ("same_twice", lambda: ok(_pulled, lambda t: lambda a: a * t.numpy.sin(a), (x,))),
      ("dag", lambda: err(_pulled, lambda t: lambda a: a[:, :4] + a[:4, :].T, (x[:, :4],),
                          block_shape=(2, 2), match="cannot uniquely pull")),
      ("unsupported", lambda: err(_pulled, lambda t: lambda a: t.numpy.cumsum(a, 0), (x,),
                                  match="cumsum")),
  ])


def _pushed(top, fn, args, specs):
  pl = top.experimental.pallas
  made = [pl.BlockSpec(s, lambda i, j: (i, j)) if s else pl.no_block_spec for s in specs]
  out = _fuser(top).push_block_spec(fn(top), *made)(*args)
  return [_spec_summary(s) for s in top.tree.leaves(out)]


def test_push_block_spec():
  x = rand((4, 16), np.float32, seed=8)
  row = rand((1, 16), np.float32, seed=9)
  check_all([
      ("unary", lambda: ok(_pushed, lambda t: lambda a: t.numpy.sin(a) * 2, (x,), [(2, 8)])),
      ("transpose", lambda: ok(_pushed, lambda t: lambda a: a.T, (x,), [(2, 8)])),
      ("binop_other_unblocked", lambda: ok(_pushed, lambda t: lambda a, b: a + b, (x, x),
                                           [(2, 8), None])),
      ("two_outputs", lambda: ok(_pushed, lambda t: lambda a: (a + 1, a.astype(np.int32)),
                                 (x,), [(2, 8)])),
      ("lhs_broadcast", lambda: err(_pushed, lambda t: lambda a, b: b * a, (x, row),
                                    [(2, 8), (1, 8)], match="Illegal binary push")),
      ("rhs_broadcast", lambda: err(_pushed, lambda t: lambda a, b: a * b, (x, row),
                                    [None, (1, 8)], match="through RHS broadcast")),
  ])


def test_get_fusion_values_and_helpers():
  x = rand((3,), np.float32, seed=10)

  def values(top, x):
    fuser = _fuser(top)
    c = top.numpy.asarray(x)
    fn, vals, sp = fuser.get_fusion_values(lambda a: top.numpy.sin(c) + a, 2.0)
    return fn(vals, 3.0), len(vals), len(sp)

  ok(values, x)
  for top in (jax, arrax):
    h = _fuser(top).make_scalar_prefetch_handler(1, 0)
    assert h("a", ("b", "c")) == "b"
    t = _fuser(top).BlockIndexTransform((2, 2))
    assert t.block_index_transform(1, 2) is None and t.memory_space is None
    assert t.replace(block_shape=(1,)).block_shape == (1,)


def _custom(top):
  fuser = _fuser(top)

  @fuser.custom_fusion
  def plus_one(a):
    return a + 1

  plus_one.def_eval_rule(lambda ctx, a: [a + 1])
  plus_one.def_pull_block_spec(lambda bts: bts)
  return plus_one


def test_custom_fusion():
  x = rand((4, 16), np.float32, seed=11)
  check_all([
      ("call", lambda: ok(lambda top, x: _custom(top)(x), x)),
      ("jit", lambda: ok(lambda top, x: top.jit(_custom(top))(x), x)),
      ("pulled", lambda: ok(_pulled, lambda t: lambda a: _custom(t)(a) * 2, (x,))),
  ])


# ---- a fused kernel ----------------------------------------------------------------------------------
def _scaled_kernel(top):
  """A fusible Pallas kernel multiplying its input by 3 in (2, 8) row blocks, with its
  input fusion and output fusion computed inside the kernel."""
  pl, fuser = top.experimental.pallas, _fuser(top)

  @fuser.fusible
  def scaled(x_fn, out_fn):
    fn, vals, _ = fuser.get_fusion_values(x_fn)
    spec = pl.BlockSpec((2, 8), lambda i: (i, 0))
    in_fn, (val_specs,), _ = fuser.pull_block_spec(fn, spec, grid_len=1)(vals)
    out_spec, out_type = spec, x_fn.type
    if out_fn is not None:
      ofn, ovals, _ = fuser.get_fusion_values(out_fn, x_fn.type)
      out_spec = fuser.push_block_spec(ofn, tuple(None for _ in ovals), spec)(
          ovals, x_fn.type)[0]
      out_in_fn, _, _ = fuser.pull_block_spec(ofn, out_spec, grid_len=1)(ovals, x_fn.type)
      out_type = out_fn.out_type[0]
    n = len(vals)

    def kernel(*refs):
      ids = (pl.program_id(0),)
      y = in_fn(ids, (), tuple(r[...] for r in refs[:n])) * 3
      if out_fn is not None:
        y = out_in_fn(ids, (), (), y)   # (one output block spec: one block)
      refs[-1][...] = y

    return pl.pallas_call(kernel, grid=(x_fn.shape[0] // 2,), in_specs=list(val_specs),
                          out_specs=out_spec,
                          out_shape=top.ShapeDtypeStruct(out_type.shape, out_type.dtype),
                          interpret=True)(*vals)
  return scaled


def test_fused_kernel():
  x = rand((4, 8), np.float32, seed=12)
  b = rand((8,), np.float32, seed=13)
  check_all([
      ("plain", lambda: ok(lambda top, x: _scaled_kernel(top)(x), x)),
      ("fused", lambda: ok(lambda top, x, b: _fuser(top).fuse(
          lambda x, b: _scaled_kernel(top)(top.numpy.exp(x / 4) + b[None, :]).astype(np.int32)
          - 1)(x, b), x, b, tol=1e-6)),
  ])
