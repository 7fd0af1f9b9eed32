"""Block specs through fusions (jax.experimental.pallas.fuser): `pull_block_spec` carries the
block specs of a function's outputs back to its inputs (and gives a function computing the
output blocks from the input blocks inside a kernel), `push_block_spec` carries input block
specs forward to the outputs, `get_fusion_values` separates a fusion from the arrays it closes
over (to pass them to a pallas_call).

Block index transforms map the block indices of the outputs to those of a value. The rules
cover elementwise operations (exp, tanh, sin, cos, sqrt, rsqrt, square, log, integer_pow,
logistic, multiple_of), binary arithmetic and comparisons (with broadcasting of size-1
dimensions and scalars), select_n, broadcast_in_dim, transpose, convert_element_type,
bitcast_convert_type, nested jit and custom fusions; other operations raise
NotImplementedError, as for JAX's unsupported ones. Scalar-prefetch usage is not tracked:
scalars broadcast in a fusion are ordinary values (`get_fusion_values` returns no scalar
prefetch values)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from arrax._src import core, tracing, tree_util
from arrax._src.core import ShapedArray
from arrax._src.lax import broadcasting, elementwise as lax
from arrax._src.pallas import core as pallas_core
from arrax._src.pallas.fusion import CustomEvalContext, make_jaxpr

no_block_spec = pallas_core.no_block_spec


def _null_transform(*block_indices):
  return None


@dataclasses.dataclass
class BlockIndexTransform:
  """A block shape and a function from the block indices of the outputs (one tuple per output
  block spec) to the block indices of a value."""
  block_shape: Any
  block_index_transform: Callable[..., Any] = _null_transform
  memory_space: Any | None = dataclasses.field(kw_only=True, default=None)
  pipeline_mode: Any | None = dataclasses.field(kw_only=True, default=None)

  def replace(self, **kwargs):
    return dataclasses.replace(self, **kwargs)


class NoBlockIndexTransform:
  def __repr__(self):
    return "NoBlockIndexTransform"


no_block_index_transform = NoBlockIndexTransform()
_ILLEGAL = object()


def make_scalar_prefetch_handler(*args):
  """A function picking `sp[args[0]][args[1]]...` out of the scalar-prefetch operands."""
  def getter(*sp_inputs):
    out = sp_inputs
    for i in args:
      out = out[i]
    return out
  return getter


def _size(bd):
  if bd is None or isinstance(bd, pallas_core.Squeezed):
    return None
  return bd.block_size if hasattr(bd, "block_size") else bd


def _kept_shape(block_shape):
  return tuple(s for s in map(_size, block_shape) if s is not None)


def _jaxpr_parts(j):
  return getattr(j, "jaxpr", j), list(getattr(j, "consts", []))


# ---- pulling block index transforms backwards ------------------------------------------------------
@dataclasses.dataclass
class PullRuleContext:
  avals_in: tuple
  avals_out: tuple
  grid_len: int | None
  strict_mode: bool = True


def _bcast_dim(bt, i):
  """`bt` for an operand of size 1 in dimension i: block index 0 there (block size 1)."""
  def transform(*idxs):
    idx = bt.block_index_transform(*idxs)
    return tuple(0 if k == i else v for k, v in enumerate(idx))
  if bt.block_shape[i] is None:
    return bt.replace(block_index_transform=transform)
  one = pallas_core.Element(1) if isinstance(bt.block_shape[i], pallas_core.Element) else 1
  shape = tuple(one if k == i else b for k, b in enumerate(bt.block_shape))
  return bt.replace(block_shape=shape, block_index_transform=transform)


def _pull_eltwise(ctx, bt, **params):
  return [bt]


def _pull_binop(ctx, bt, **params):
  left, right = ctx.avals_in
  if not right.shape:
    return [bt, no_block_index_transform]
  if not left.shape:
    return [no_block_index_transform, bt]
  lt, rt = bt, bt
  for i, (l, r) in enumerate(zip(left.shape, right.shape)):
    if l == 1 and r != 1:
      lt = _bcast_dim(lt, i)
    if r == 1 and l != 1:
      rt = _bcast_dim(rt, i)
  return [lt, rt]


def _pull_select_n(ctx, bt, **params):
  if ctx.avals_in[0].shape:
    return [bt] * len(ctx.avals_in)
  return [no_block_index_transform] + [bt] * (len(ctx.avals_in) - 1)


def _pull_broadcast_in_dim(ctx, bt, *, shape, broadcast_dimensions, **params):
  in_shape = ctx.avals_in[0].shape
  if not in_shape:
    return [no_block_index_transform]

  def transform(*idxs):
    idx = bt.block_index_transform(*idxs)
    return tuple(0 if d == 1 else idx[i] for i, d in zip(broadcast_dimensions, in_shape))

  block = tuple(b if (b := bt.block_shape[i]) is None or d != 1 else 1
                for i, d in zip(broadcast_dimensions, in_shape))
  return [bt.replace(block_shape=block, block_index_transform=transform)]


def _check_perm(permutation):
  if set(permutation[-2:]) != {permutation[-1], permutation[-2]}:
    raise NotImplementedError("Cannot permute last two dimensions with leading dimensions.")


def _pull_transpose(ctx, bt, *, permutation):
  _check_perm(permutation)

  def transform(*idxs):
    idx = bt.block_index_transform(*idxs)
    return tuple(idx[i] for i in permutation)

  return [bt.replace(block_shape=tuple(bt.block_shape[i] for i in permutation),
                     block_index_transform=transform)]


def _pull_bitcast(ctx, bt, *, new_dtype, **params):
  old = np.dtype(ctx.avals_in[0].dtype)
  if old.itemsize != np.dtype(new_dtype).itemsize:
    raise NotImplementedError("bitcast_convert_type with different bitwidths not supported yet:"
                              f" old_dtype={old}, new_dtype={np.dtype(new_dtype)}")
  return [bt]


def _pull_jit(ctx, bts, *, jaxpr, **params):
  inner, consts = _jaxpr_parts(jaxpr)
  if consts:
    raise NotImplementedError("pjit with consts not supported yet")
  ins, _ = _pull_transforms(inner, tuple(bts), ctx.grid_len, ctx.strict_mode)
  return ins


def _pull_custom_fusion(ctx, bts, *, pull_block_spec_rule, **params):
  return pull_block_spec_rule(bts)


def _same_transform(t1, t2, idx_avals, strict):
  if isinstance(t1, NoBlockIndexTransform) or isinstance(t2, NoBlockIndexTransform):
    return t1 is t2
  if t1.block_shape is _ILLEGAL or t2.block_shape is _ILLEGAL:
    return False
  if tuple(map(_size, t1.block_shape)) != tuple(map(_size, t2.block_shape)):
    return False
  if not strict or t1.block_index_transform is t2.block_index_transform:
    return True
  flat = [a for group in idx_avals if group is not None for a in group]

  def traced(t):
    def fn(*xs):
      it = iter(xs)
      groups = [None if g is None else tuple(next(it) for _ in g) for g in idx_avals]
      return tree_util.tree_leaves(t.block_index_transform(*groups))
    return str(tracing.trace_to_jaxpr(fn, flat)[0])

  return traced(t1) == traced(t2)


def _pull_transforms(jaxpr, out_transforms, grid_len, strict_mode):
  """(transforms of the jaxpr's inputs, {var: transform}) from those of its outputs."""
  idx_avals = tuple(None if isinstance(t, NoBlockIndexTransform)
                    else (ShapedArray((), np.dtype(np.int32)),) * len(t.block_shape)
                    for t in out_transforms)
  env = {}
  for v, t in zip(jaxpr.outvars, out_transforms):
    if type(v) is core.Var:
      env[v] = t

  def read(v):
    return no_block_index_transform if type(v) is not core.Var else env.get(
        v, no_block_index_transform)

  for eqn in reversed(jaxpr.eqns):
    outs = tuple(read(v) for v in eqn.outvars)
    if all(t is no_block_index_transform for t in outs):
      continue
    rule = _PULL_RULES.get(eqn.primitive.name)
    if rule is None:
      raise NotImplementedError(eqn.primitive, outs)
    ctx = PullRuleContext(tuple(v.aval for v in eqn.invars),
                          tuple(v.aval for v in eqn.outvars), grid_len, strict_mode)
    ins = rule(ctx, outs if eqn.primitive.multiple_results else outs[0], **eqn.params)
    for v, t in zip(eqn.invars, ins, strict=True):
      if type(v) is not core.Var:
        continue
      if v in env and not _same_transform(env[v], t, idx_avals, strict_mode):
        t = BlockIndexTransform(_ILLEGAL, _ILLEGAL)
      env[v] = t

  def in_transform(v):
    t = env.get(v, no_block_index_transform)
    if t is not no_block_index_transform and t.block_shape is _ILLEGAL:
      raise ValueError(f"Fusion contains a DAG, cannot uniquely pull block specs:\n{jaxpr}")
    return t

  return tuple(in_transform(v) for v in jaxpr.invars), env


def _initial_transforms(specs):
  """The identity transforms of the output block specs (outputs with the same block shape and
  index map share one)."""
  reps = []
  for i, bs in enumerate(specs):
    rep = i
    for j in range(i):
      o = specs[j]
      if bs is no_block_spec or o is no_block_spec:
        same = bs is o
      else:
        same = (tuple(map(_size, bs.block_shape)) == tuple(map(_size, o.block_shape))
                and bs.index_map is o.index_map)
      if same:
        rep = reps[j]
        break
    reps.append(rep)
  out = []
  for bs, rep in zip(specs, reps):
    if bs is no_block_spec:
      out.append(no_block_index_transform)
    else:
      out.append(BlockIndexTransform(bs.block_shape, lambda *idx, _r=rep: idx[_r],
                                     pipeline_mode=bs.pipeline_mode))
  return tuple(out)


def _to_block_spec(specs, t):
  """The BlockSpec of transform `t` applied to the output block specs `specs`."""
  if isinstance(t, NoBlockIndexTransform):
    return no_block_spec
  def index_map(*grid):
    idx = tuple(None if s is no_block_spec else s.index_map(*grid) for s in specs)
    return t.block_index_transform(*idx)

  return pallas_core.BlockSpec(t.block_shape, None if t.block_shape is None else index_map,
                               memory_space=t.memory_space,
                               pipeline_mode=t.pipeline_mode)


# ---- evaluating a function on blocks ---------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class KernelEvalContext:
  """What an eval rule gets: the operand and result types (of whole arrays), their block specs
  and the program ids."""
  program_ids: tuple | None
  avals_in: tuple
  avals_out: tuple
  in_block_specs: tuple
  out_block_specs: tuple

  def get_program_ids(self):
    if self.program_ids is None:
      raise ValueError("Program ids not available.")
    return self.program_ids

  def get_out_block_indices(self):
    return tuple(None if bs is no_block_spec else bs.index_map(*self.program_ids)
                 for bs in self.out_block_specs)


def _eval_broadcast_in_dim(ctx, x, *, shape, broadcast_dimensions, **params):
  if ctx.avals_in[0].shape == tuple(shape):
    return x
  out_bs = ctx.out_block_specs[0]
  full = (tuple(shape) if out_bs is no_block_spec or out_bs.block_shape is None
          else tuple(map(_size, out_bs.block_shape)))
  dims = tuple(d - sum(s is None for s in full[:d]) for d in broadcast_dimensions
               if full[d] is not None)
  return broadcasting.broadcast_in_dim(x, tuple(s for s in full if s is not None), dims)


def _eval_transpose(ctx, x, *, permutation):
  out_bs = ctx.out_block_specs[0]
  if out_bs is no_block_spec:
    return broadcasting.transpose(x, permutation)
  kept = iter(range(len(_kept_shape(out_bs.block_shape))))
  pos = [None if _size(b) is None else next(kept) for b in out_bs.block_shape]
  return broadcasting.transpose(x, [p for p in (pos[i] for i in permutation) if p is not None])


def _eval_select_n(ctx, *args):
  return lax.select_n(*args)


def _eval_jit(ctx, *args, jaxpr, **params):
  inner, consts = _jaxpr_parts(jaxpr)
  outs = _initial_transforms(ctx.out_block_specs)
  _, env = _pull_transforms(inner, outs, None, False)
  specs = {v: _to_block_spec(ctx.out_block_specs, t) for v, t in env.items()}
  return _eval_blocks(inner, consts, list(args), specs, ctx.program_ids)


def _eval_custom_fusion(ctx, *args, eval_rule, num_consts, pallas_num_consts, **params):
  return eval_rule(CustomEvalContext(out_block_specs=ctx.out_block_specs,
                                     out_block_indices=ctx.get_out_block_indices()),
                   *args[num_consts + pallas_num_consts:])


def _eval_blocks(jaxpr, consts, args, specs, program_ids):
  env = dict(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))

  def read(v):
    return v.val if type(v) is core.Literal else env.get(v)

  def spec(v):
    return no_block_spec if type(v) is not core.Var else specs.get(v, no_block_spec)

  for eqn in jaxpr.eqns:
    name = eqn.primitive.name
    if name not in _EVAL_RULES and name not in _EVAL_BIND:
      raise NotImplementedError(eqn.primitive)
    ctx = KernelEvalContext(None if program_ids is None else tuple(program_ids),
                            tuple(v.aval for v in eqn.invars),
                            tuple(v.aval for v in eqn.outvars),
                            tuple(map(spec, eqn.invars)), tuple(map(spec, eqn.outvars)))
    ins = list(map(read, eqn.invars))
    if name in _EVAL_RULES:
      outs = _EVAL_RULES[name](ctx, *ins, **eqn.params)
    else:
      outs = eqn.primitive.bind(*ins, **eqn.params)
    env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
  return [read(v) for v in jaxpr.outvars]


def pull_block_spec(f: Callable, out_block_specs, *, scalar_prefetch_handler: Any | None = None,
                    grid_len: int | None = None, strict_mode: bool = True):
  """A function of `f`'s arguments returning (kernel_fn, in_block_arg_specs,
  in_block_kwarg_specs): the block specs of the arguments that the output blocks
  `out_block_specs` need, and `kernel_fn(program_ids, scalar_prefetch, *arg_blocks,
  **kwarg_blocks)` computing the output blocks from those blocks."""
  def wrapped(*args, **kwargs):
    jaxpr, consts, in_tree, _ = make_jaxpr(f, *args, **kwargs)
    flat_specs, out_tree = tree_util.tree_flatten(out_block_specs)
    outs = _initial_transforms(tuple(flat_specs))
    ins, env = _pull_transforms(jaxpr, outs, grid_len, strict_mode)
    specs = {v: _to_block_spec(flat_specs, t) for v, t in env.items()}
    in_specs = [_to_block_spec(flat_specs, t) for t in ins]
    in_avals = [v.aval for v in jaxpr.invars]
    kernel_type = tree_util.tree_structure(tree_util.tree_unflatten(in_tree, in_avals))

    def kernel_fn(program_ids, scalar_prefetch, *args, **kwargs):
      flat, tree = tree_util.tree_flatten((args, kwargs))
      if tree != kernel_type:
        raise ValueError(f"Expected {kernel_type} PyTree, got {tree}")
      outs = _eval_blocks(jaxpr, consts, flat, specs, program_ids)
      return tree_util.tree_unflatten(out_tree, outs)

    in_specs = tree_util.tree_unflatten(in_tree, [_with_grid_args(s, grid_len)
                                                  for s in in_specs])
    return kernel_fn, in_specs[0], in_specs[1]

  return wrapped


def _with_grid_args(spec, grid_len):
  """`spec` whose index map takes the grid indices then the scalar-prefetch operands (which
  it ignores)."""
  if spec is no_block_spec or spec.index_map is None:
    return spec
  inner = spec.index_map
  return spec.replace(index_map=lambda *args: inner(*(args if grid_len is None
                                                     else args[:grid_len])))


# ---- pushing block specs forwards ------------------------------------------------------------------
@dataclasses.dataclass
class PushRuleContext:
  avals_in: tuple
  avals_out: tuple


def _push_eltwise(ctx, bs, **params):
  return bs


def _push_binop(ctx, lbs, rbs, **params):
  left, right = ctx.avals_in
  if not right.shape:
    return lbs
  if not left.shape:
    return rbs
  has_l, has_r = lbs is not no_block_spec, rbs is not no_block_spec
  if not has_l ^ has_r:
    if lbs is rbs:
      return lbs
    raise ValueError("Illegal binary push. One of the block specs must be no_block_spec.")
  for l, r in zip(left.shape, right.shape):
    if l == 1 and r != 1 and has_l:
      raise ValueError("Cannot propagate block spec through LHS broadcast.")
    if r == 1 and l != 1 and has_r:
      raise ValueError("Cannot propagate block spec through RHS broadcast.")
  return rbs if not has_l else lbs


def _push_select_n(ctx, *specs):
  given = [b for b in specs if b is not no_block_spec]
  if any(b is not given[0] for b in given[1:]):
    raise NotImplementedError("select_n with multiple differing inputs not supported yet")
  return given[0]


def _push_transpose(ctx, bs, *, permutation):
  _check_perm(permutation)

  def index_map(*args):
    idx = bs.index_map(*args)
    return tuple(idx[i] for i in permutation)

  return pallas_core.BlockSpec(tuple(bs.block_shape[i] for i in permutation), index_map)


def _push_broadcast_in_dim(ctx, bs, *, shape, broadcast_dimensions, **params):
  in_shape = ctx.avals_in[0].shape
  from_in = {out: i for i, out in enumerate(broadcast_dimensions)}
  block = []
  for k, s in enumerate(shape):
    i = from_in.get(k)
    block.append(s if i is None or in_shape[i] != s else bs.block_shape[i])

  def index_map(*args):
    idx = bs.index_map(*args)
    return tuple(idx[from_in[k]] if k in from_in else 0 for k in range(len(shape)))

  return pallas_core.BlockSpec(tuple(block), index_map)


def _push_jit(ctx, *specs, jaxpr, **params):
  inner, consts = _jaxpr_parts(jaxpr)
  assert not consts
  return _push_specs(inner, specs)


def _push_custom_fusion(ctx, *specs, push_block_spec_rule, **params):
  return push_block_spec_rule(specs)


def _push_specs(jaxpr, in_specs):
  if len(in_specs) != len(jaxpr.invars):
    raise ValueError(f"Expected {len(jaxpr.invars)} block specs, got {len(in_specs)}")
  env = dict(zip(jaxpr.invars, in_specs))
  env.update((v, no_block_spec) for v in jaxpr.constvars)

  def read(v):
    return no_block_spec if type(v) is not core.Var else env[v]

  for eqn in jaxpr.eqns:
    ins = tuple(map(read, eqn.invars))
    if all(b is no_block_spec for b in ins):
      env.update((v, no_block_spec) for v in eqn.outvars)
      continue
    rule = _PUSH_RULES.get(eqn.primitive.name)
    if rule is None:
      raise NotImplementedError(eqn.primitive)
    ctx = PushRuleContext(tuple(v.aval for v in eqn.invars),
                          tuple(v.aval for v in eqn.outvars))
    outs = rule(ctx, *ins, **eqn.params)
    env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
  valid = [b for b in in_specs if b is not no_block_spec][0]
  out = tuple(valid if b is no_block_spec else b for b in map(read, jaxpr.outvars))
  return out


def push_block_spec(f: Callable, *in_spec_args, **in_spec_kwargs):
  """A function of `f`'s arguments returning the block specs of its outputs given those of
  its arguments (`in_spec_args`, `in_spec_kwargs`: one per argument leaf)."""
  def wrapper(*args, **kwargs):
    flat_specs, spec_tree = tree_util.tree_flatten((in_spec_args, in_spec_kwargs),
                                                   is_leaf=lambda x: x is no_block_spec)
    jaxpr, _, in_tree, out_tree = make_jaxpr(f, *args, **kwargs)
    if in_tree != spec_tree:
      raise ValueError(f"Expected {in_tree} PyTree, got {spec_tree}")
    return tree_util.tree_unflatten(out_tree, _push_specs(jaxpr, flat_specs))

  return wrapper


# ---- fusion values -----------------------------------------------------------------------------------
def _fusion_values(fusion, args, kwargs):
  jaxpr, values, _, out_tree = make_jaxpr(fusion, *args, **kwargs)

  def kernel_fn(values, *args, **kwargs):
    return tree_util.tree_unflatten(
        out_tree, core.eval_jaxpr(jaxpr, list(values), *tree_util.tree_leaves((args, kwargs))))

  return kernel_fn, tuple(values), ()


def get_fusion_values(fusion: Callable, *args, **kwargs):
  """(fn, values, scalar_prefetch_values): the arrays `fusion` closes over and
  `fn(values, *args, **kwargs)`, the fusion as a function of them."""
  jaxpr, values, _, _ = make_jaxpr(fusion, *args, **kwargs)
  if any(isinstance(core.get_aval(v), core.AbstractRef) for v in values):
    raise ValueError("Ref values are only supported in get_fusion_values when discharge_refs "
                     "is True.")
  return _fusion_values(fusion, args, kwargs)


def get_stateful_input_fusion_values(fusion: Callable, *args, **kwargs):
  """`get_fusion_values` for fusions that read or write refs (not supported by arrax)."""
  raise NotImplementedError("stateful fusions (fusions closing over refs) are not supported "
                            "by arrax's fuser")


def get_stateful_output_fusion_values(fusion: Callable, *args, **kwargs):
  """`get_fusion_values` for output fusions writing refs (not supported by arrax)."""
  raise NotImplementedError("stateful fusions (fusions closing over refs) are not supported "
                            "by arrax's fuser")


# ---- the rule tables -------------------------------------------------------------------------------
_ELTWISE = ("exp", "tanh", "sin", "cos", "sqrt", "rsqrt", "square", "log", "integer_pow",
            "logistic", "multiple_of")
_BINOPS = ("mul", "add", "sub", "div", "max", "min", "lt", "le", "eq", "gt", "ge", "or", "xor",
           "and", "shift_right_logical", "add_any", "pow")
_PUSH_BINOPS = ("mul", "add", "sub", "div", "max", "min", "lt", "eq", "gt", "and", "pow",
                "add_any")

_PULL_RULES = {**{n: _pull_eltwise for n in _ELTWISE}, **{n: _pull_binop for n in _BINOPS},
               "select_n": _pull_select_n, "broadcast_in_dim": _pull_broadcast_in_dim,
               "transpose": _pull_transpose, "convert_element_type": _pull_eltwise,
               "bitcast_convert_type": _pull_bitcast, "jit": _pull_jit,
               "custom_fusion": _pull_custom_fusion}
_PUSH_RULES = {**{n: _push_eltwise for n in _ELTWISE}, **{n: _push_binop for n in _PUSH_BINOPS},
               "select_n": _push_select_n, "broadcast_in_dim": _push_broadcast_in_dim,
               "transpose": _push_transpose, "convert_element_type": _push_eltwise,
               "jit": _push_jit, "custom_fusion": _push_custom_fusion}


_EVAL_BIND = frozenset(_ELTWISE + _BINOPS + ("convert_element_type", "bitcast_convert_type",
                                             "get", "axis_index"))
_EVAL_RULES = {"broadcast_in_dim": _eval_broadcast_in_dim, "transpose": _eval_transpose,
               "select_n": _eval_select_n, "jit": _eval_jit,
               "custom_fusion": _eval_custom_fusion}
