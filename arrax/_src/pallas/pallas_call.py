"""`pallas_call`: a kernel written on refs, run over a grid of blocks.

The kernel is traced once with refs of its blocks' shapes (inputs, outputs, then scratch);
`pallas_call_p` holds that jaxpr and the grid mapping (each operand's block shape and index map
traced to a jaxpr of the grid indices). There is no TPU/GPU here: the primitive lowers only
with `interpret=True`, as a loop over the grid (row-major) whose body dynamic-slices every
operand's block at the index map's position, runs the kernel with its refs discharged into
values, and writes the blocks back (all with lax operations, so XLA runs it). Operands are
padded to whole blocks with "uninitialized" values (NaN, the smallest integer, False) and
outputs start as such values (or as the aliased input), as JAX's interpreter does.

Scalar-prefetch operands (`num_index_operands`) lead the operands and reach the kernel and
every index map whole; dynamic grid sizes come before them. vmap adds a leading grid
dimension (the kernel does not see it: its program ids skip the vmapped dimensions); JVP runs
the JVP of the kernel on primal and tangent blocks in one pallas_call; there is no transpose,
so reverse mode fails as in JAX.
"""
from __future__ import annotations

import contextlib
import re
import weakref

import numpy as np

from arrax._src import ad, batching, core, environment, jit, tracing, tree_util
from arrax._src.core import AbstractRef, ShapedArray
from arrax._src.lax import broadcasting, elementwise as lax, shape_ops
from arrax._src.lax.control_flow import common, conditionals, loops
from arrax._src.lax.control_flow.while_loop import while_p
from arrax._src.numpy import lax_numpy
from arrax._src.pallas import core as pallas_core
from arrax._src.pallas import primitives
from arrax._src.pallas.core import (BlockMapping, Blocked, BoundedSlice, Element, GridMapping,
                                    GridSpec, Indirect, Squeezed, no_block_spec)
from arrax._src.state import primitives as state

_I32 = np.dtype(np.int32)


class KernelJaxpr:
  """The kernel's closed jaxpr as pallas_call's `jaxpr` param. (Wrapped: the jaxpr takes refs
  by design, and the passes that discharge refs in jaxprs held by params must leave it.)"""
  __slots__ = ("closed", "src", "__weakref__")

  def __init__(self, closed, src=""):
    self.closed = closed
    self.src = src   # the kernel's `name at file:line`

  def __repr__(self):
    return str(self.closed)


pallas_call_p = core.Primitive("pallas_call")
pallas_call_p.multiple_results = True


@pallas_call_p.def_abstract_eval
def _pallas_call_abstract_eval(*avals, out_avals, input_output_aliases, grid_mapping,
                               **params):
  out = list(out_avals)
  avals = avals[grid_mapping.num_dynamic_grid_bounds:]
  for i, o in input_output_aliases:
    out[o] = avals[i]
  return out


@pallas_call_p.def_pp_params
def _pallas_call_pp_params(params):
  return dict(params, jaxpr=params["jaxpr"].closed)


# ---- the kernel with program ids as inputs ---------------------------------------------------
def _uses_pids(jaxpr) -> bool:
  """Whether `jaxpr` (open or closed) or a jaxpr inside it reads program ids or grid sizes."""
  for eqn in jaxpr.eqns:
    if eqn.primitive in (primitives.program_id_p, primitives.num_programs_p):
      return True
    if any(map(_uses_pids, core.jaxprs_in_params(eqn.params))):
      return True
  return False


# the primitives whose inner jaxprs `_eval_with_pids` passes the program ids into
_PID_CARRIERS = (jit.jit_p, conditionals.cond_p, while_p, primitives.run_scoped_p, loops.scan_p)


def _eval_with_pids(jaxpr, consts, args, pids):
  """Evaluate `jaxpr` under the current trace with `program_id(k)` read as `pids[k]` and
  `num_programs(k)` as `pids[n + k]` (`pids` holds the n program ids, then the n grid sizes),
  also in the bodies of loops, conds and nested jits."""
  env = {}

  def read(v):
    return v.val if type(v) is core.Literal else env[v]

  for v, c in zip(jaxpr.constvars, consts):
    env[v] = c
  for v, a in zip(jaxpr.invars, args):
    env[v] = a
  n = len(pids)
  for eqn in jaxpr.eqns:
    prim, ins, params = eqn.primitive, [read(v) for v in eqn.invars], eqn.params
    if prim is primitives.program_id_p:
      outs = [pids[params["axis"]]]
    elif prim is primitives.num_programs_p:
      outs = [pids[n // 2 + params["axis"]]]
    elif prim not in _PID_CARRIERS or not any(map(_uses_pids,
                                                  core.jaxprs_in_params(params))):
      ans = prim.bind(*ins, **params)
      outs = ans if prim.multiple_results else [ans]
    elif prim is jit.jit_p:
      inner = params["jaxpr"]
      outs = _eval_with_pids(inner.jaxpr, inner.consts, ins, pids)
    elif prim is conditionals.cond_p:
      branches = tuple(_with_pids(b, n) for b in params["branches"])
      outs = prim.bind(ins[0], *pids, *ins[1:], **dict(params, branches=branches))
    elif prim is while_p:
      outs = prim.bind(*pids, *ins[:params["cond_nconsts"]], *pids,
                       *ins[params["cond_nconsts"]:],
                       **dict(params, cond_jaxpr=_with_pids(params["cond_jaxpr"], n),
                              body_jaxpr=_with_pids(params["body_jaxpr"], n),
                              cond_nconsts=params["cond_nconsts"] + n,
                              body_nconsts=params["body_nconsts"] + n))
    elif prim is primitives.run_scoped_p:
      inner = params["jaxpr"]
      jx, consts = tracing.trace_to_jaxpr(
          lambda *refs: _eval_with_pids(inner, ins, refs, pids), [v.aval for v in inner.invars])
      outs = prim.bind(*consts, **dict(params, jaxpr=jx))
    else:   # scan
      outs = prim.bind(*pids, *ins, **dict(params, jaxpr=_with_pids(params["jaxpr"], n),
                                           num_consts=params["num_consts"] + n))
    for v, o in zip(eqn.outvars, outs):
      if not isinstance(v, core.DropVar):
        env[v] = o
  return [read(v) for v in jaxpr.outvars]


def _with_pids(closed, n):
  """`closed` taking `n` int32 program ids first, with its program_id equations replaced."""
  def fun(*a):
    return _eval_with_pids(closed.jaxpr, closed.consts, a[n:], a[:n])
  jaxpr, consts = tracing.trace_to_jaxpr(fun, [ShapedArray((), _I32)] * n
                                         + list(closed.in_avals))
  new, outer = tracing.closed_with_host_consts(jaxpr, consts)
  assert not outer
  return new


_kernel_cache: "weakref.WeakKeyDictionary" = core.register_cache(weakref.WeakKeyDictionary())


def _kernel_program(closed, n_pids):
  """The kernel as a function of values: (*program ids, *grid sizes, *block values, *scratch
  values) -> (*final block values, *final scratch values)."""
  per = _kernel_cache.setdefault(closed, {})
  if n_pids not in per:
    lowered, (ext, ref_args) = state._discharge(_with_pids(closed, 2 * n_pids))
    assert not ext and len(ref_args) == len(closed.jaxpr.invars)
    per[n_pids] = lowered
  return per[n_pids]


# ---- interpret mode ------------------------------------------------------------------------------
def _full(shape, dtype):
  return primitives.uninitialized_value(shape, dtype)


def _scalar_fill(dtype):
  return primitives.uninitialized_value((), dtype)


def _block_shape(bm):
  return tuple(pallas_core.block_dim_size(d) for d in bm.block_shape)


def _start_indices(bm, idx, scalars=()):
  im = bm.index_map_jaxpr
  if scalars:   # (the index map reads the scalar-prefetch refs: evaluated discharged)
    im = state._discharge(im)[0]
  outs = core.eval_jaxpr(im.jaxpr, im.consts, *idx, *scalars)[:len(bm.block_shape)]
  starts = []
  for i, b in zip(outs, bm.block_shape):
    i = lax.convert_element_type(i, _I32)
    if isinstance(b, (Squeezed, Element)):
      starts.append(i)
    elif isinstance(b, Blocked):
      starts.append(lax.mul(i, np.int32(b.block_size)))
    else:
      raise ValueError(f"Unsupported block dim type: {type(b)}")
  return starts


def _prod(xs):
  """The product of int32 scalars (NumPy ones, or traced for dynamic grid sizes)."""
  out = np.int32(1)
  for x in xs:
    out = out * x if isinstance(x, np.integer) and isinstance(out, np.integer) else lax.mul(
        lax.convert_element_type(out, _I32), lax.convert_element_type(x, _I32))
  return out


def _element_padding(bm):
  return [b.padding if isinstance(b, Element) else (0, 0) for b in bm.block_shape]


def _interpret(*args, jaxpr, grid_mapping, input_output_aliases, out_avals, debug, **_):
  gm = grid_mapping
  for bm in gm.block_mappings:
    for b in bm.block_shape:
      if isinstance(b, (BoundedSlice, Indirect)):
        raise ValueError(f"Unsupported block dim type: {type(b)}")
  n_dyn = gm.num_dynamic_grid_bounds
  dyn, args = iter(args[:n_dyn]), args[n_dyn:]
  grid = [lax.convert_element_type(next(dyn), _I32) if g is pallas_core.dynamic_grid_dim
          else np.int32(g) for g in gm.grid]
  n_pids = len(grid) - len(gm.vmapped_dims)
  program = _kernel_program(jaxpr.closed, n_pids)
  if debug:
    print(f"\nJaxpr of the kernel in pallas_call {jaxpr.src}:")
    print(program)
  alias_of = {o: i for i, o in input_output_aliases}
  outs = [args[alias_of[k]] if k in alias_of else _full(bm.array_aval.shape, bm.array_aval.dtype)
          for k, bm in enumerate(gm.block_mappings_output)]
  nidx = gm.num_index_operands
  scalars, args = list(args[:nidx]), args[nidx:]
  carry = []
  for x, bm in zip(list(args) + outs, gm.block_mappings):
    pads = _element_padding(bm)
    if any(p != (0, 0) for p in pads):
      if input_output_aliases:
        raise NotImplementedError("Padding with aliasing not supported.")
      x = shape_ops.pad(x, _scalar_fill(x.dtype), [(lo, hi, 0) for lo, hi in pads])
    shape = core.get_aval(x).shape
    bs = _block_shape(bm)
    padded = [-(-d // b) * b for d, b in zip(shape, bs)]
    if list(padded) != list(shape):
      x = shape_ops.pad(x, _scalar_fill(x.dtype),
                        [(0, p - d, 0) for p, d in zip(padded, shape)])
    carry.append(x)
  n_blocks = len(carry)
  scratch = [_full(a.inner_aval.shape, a.inner_aval.dtype) for a in gm.scratch_avals]
  strides = [_prod(grid[k + 1:]) for k in range(len(grid))]
  sizes = [g for k, g in enumerate(grid) if k not in gm.vmapped_dims]

  def body(i, vals):
    vals = list(vals)
    i = lax.convert_element_type(i, _I32)
    idx = [lax.rem(lax.div(i, s), g) for s, g in zip(strides, grid)]
    pids = [x for k, x in enumerate(idx) if k not in gm.vmapped_dims]
    starts = [_start_indices(bm, idx, scalars) for bm in gm.block_mappings]
    blocks = []
    for x, bm, st in zip(vals[:n_blocks], gm.block_mappings, starts):
      blk = shape_ops.dynamic_slice(x, st, _block_shape(bm))
      sq = tuple(k for k, b in enumerate(bm.block_shape) if isinstance(b, Squeezed))
      blocks.append(broadcasting.squeeze(blk, sq) if sq else blk)
    res = core.eval_jaxpr(program.jaxpr, program.consts, *pids, *sizes, *scalars, *blocks,
                          *vals[n_blocks:])[nidx:]
    new = []
    for x, bm, st, blk in zip(vals[:n_blocks], gm.block_mappings, starts, res[:n_blocks]):
      bs = _block_shape(bm)
      if tuple(core.get_aval(blk).shape) != bs:
        blk = broadcasting.reshape(blk, bs)
      new.append(shape_ops.dynamic_update_slice(x, blk, st))
    return new + list(res[n_blocks:])

  n_iter = _prod(grid)
  if n_dyn:
    final = loops.fori_loop(np.int32(0), n_iter, body, carry + scratch)
  else:
    final = loops.fori_loop(0, int(n_iter), body, carry + scratch)
  results = []
  for o, bm in zip(final[len(args):n_blocks], gm.block_mappings_output):
    pads = _element_padding(bm)
    shape = core.get_aval(o).shape
    if any(p != (0, 0) for p in pads):
      o = shape_ops.slice(o, [lo for lo, _ in pads], [d - hi for d, (_, hi) in zip(shape, pads)])
    if tuple(core.get_aval(o).shape) != tuple(bm.array_aval.shape):
      o = shape_ops.slice(o, [0] * len(bm.array_aval.shape), bm.array_aval.shape)
    results.append(o)
  return results


_interpret_lowering = common.lower_fun(_interpret)


@pallas_call_p.def_lowering
def _pallas_call_lowering(ctx, *args, interpret, **params):
  if not interpret:
    raise ValueError("Only interpret mode is supported on CPU backend.")
  return _interpret_lowering(ctx, *args, **params)


# ---- JVP ---------------------------------------------------------------------------------------
@pallas_call_p.def_jvp
def _pallas_call_jvp(primals, tangents, *, jaxpr, grid_mapping, input_output_aliases,
                     cost_estimate, out_avals, **params):
  if grid_mapping.num_dynamic_grid_bounds:
    raise NotImplementedError("interpret with dynamic grid bounds unsupported")
  if grid_mapping.num_index_operands:
    raise NotImplementedError
  if input_output_aliases:
    raise NotImplementedError("JVP with aliasing not supported.")
  nz = [type(t) is not ad.Zero for t in tangents]
  tangents = [t for t in tangents if type(t) is not ad.Zero]
  n_in, n_out = grid_mapping.num_inputs, grid_mapping.num_outputs
  jvp = _kernel_jvp(jaxpr.closed, nz, n_in, n_out, grid_mapping.num_scratch_operands)
  in_bms = grid_mapping.block_mappings[:n_in]
  out_bms = grid_mapping.block_mappings[n_in:]
  t_bms = tuple(bm for bm, z in zip(in_bms, nz) if z)
  sc = grid_mapping.scratch_avals
  gm = grid_mapping.replace(block_mappings=(*in_bms, *t_bms, *out_bms, *out_bms),
                            num_inputs=n_in + len(t_bms), num_outputs=2 * n_out,
                            scratch_avals=(*sc, *[ad.tangent_aval(a) for a in sc]))
  if cost_estimate is not None:
    cost_estimate = pallas_core.CostEstimate(
        flops=2 * cost_estimate.flops, bytes_accessed=2 * cost_estimate.bytes_accessed,
        transcendentals=2 * cost_estimate.transcendentals)
  if params["debug"]:
    print(f"\nThe jaxpr for the jvp of pallas_call {jaxpr.src}:")
    print(jvp.closed)
  jvp.src = jaxpr.src
  outs = pallas_call_p.bind(*primals, *tangents, jaxpr=jvp, grid_mapping=gm,
                            input_output_aliases=(), cost_estimate=cost_estimate,
                            out_avals=(*out_avals, *[ad.tangent_aval(a) for a in out_avals]),
                            **params)
  return outs[:n_out], outs[n_out:]


def _kernel_jvp(closed, nz, n_in, n_out, n_scratch):
  """The kernel's JVP as a kernel on (primal ins, nonzero tangent ins, primal outs, tangent
  outs, primal scratch, tangent scratch) refs."""
  avals = closed.in_avals
  in_av, out_av, sc_av = avals[:n_in], avals[n_in:n_in + n_out], avals[n_in + n_out:]
  t_in = [a for a, z in zip(in_av, nz) if z]
  n_t = len(t_in)

  def fun(*refs):
    p_in, t_ins = refs[:n_in], refs[n_in:n_in + n_t]
    p_out = refs[n_in + n_t:n_in + n_t + n_out]
    t_out = refs[n_in + n_t + n_out:n_in + n_t + 2 * n_out]
    p_sc = refs[n_in + n_t + 2 * n_out:n_in + n_t + 2 * n_out + n_scratch]
    t_sc = refs[n_in + n_t + 2 * n_out + n_scratch:]
    it = iter(t_ins)
    tans = ([next(it) if z else ad.Zero(a) for a, z in zip(in_av, nz)]
            + list(t_out) + list(t_sc))
    ad.jvp_flat(lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                [*p_in, *p_out, *p_sc], tans, transform_stack=False)
    return []

  jaxpr, consts = tracing.trace_to_jaxpr(fun, [*in_av, *t_in, *out_av, *out_av, *sc_av,
                                               *sc_av])
  new, outer = tracing.closed_with_host_consts(jaxpr, consts)
  assert not outer
  return KernelJaxpr(new)


# ---- vmap --------------------------------------------------------------------------------------
def _batch_block_mapping(bm, dim, axis_size, grid, index_avals):
  old = bm.index_map_jaxpr

  def index_map(new_idx, *rest):
    outs = core.eval_jaxpr(old.jaxpr, old.consts, *rest)
    if dim is not None:
      outs = list(outs[:dim]) + [new_idx] + list(outs[dim:])
    return list(outs)

  jaxpr, consts = tracing.trace_to_jaxpr(
      index_map, [ShapedArray((), _I32)] * (len(grid) + 1) + list(index_avals))
  closed, _ = tracing.closed_with_host_consts(jaxpr, consts)
  if dim is None:
    return BlockMapping(bm.block_shape, bm.ref_aval, closed, bm.array_aval, bm.origin)
  shape = list(bm.array_aval.shape)
  shape.insert(dim, axis_size)
  block_shape = list(bm.block_shape)
  block_shape.insert(dim, pallas_core.squeezed)
  return BlockMapping(tuple(block_shape), bm.ref_aval, closed,
                      bm.array_aval.update(shape=tuple(shape)), bm.origin)


def _batch_with_loop(args, dims, axis_size, out_avals, params):
  """vmap as a loop of pallas_calls over the batch (for batched scalar-prefetch operands)."""
  init = [_full((axis_size, *a.shape), a.dtype) for a in out_avals]

  def body(b, outs):
    sliced = [a if d is None else broadcasting.squeeze(
        shape_ops.dynamic_slice_in_dim(a, b, 1, d), (d,)) for a, d in zip(args, dims)]
    res = pallas_call_p.bind(*sliced, out_avals=out_avals, **params)
    return [shape_ops.dynamic_update_index_in_dim(o, r, b, 0) for o, r in zip(outs, res)]

  outs = loops.fori_loop(0, axis_size, body, init)
  return outs, [0] * len(outs)


@pallas_call_p.def_batch
def _pallas_call_batch(args, dims, *, grid_mapping, input_output_aliases, cost_estimate,
                       out_avals, **params):
  gm = grid_mapping
  axis_size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  if axis_size == 1:   # (as JAX: the call on the squeezed operands, its results expanded)
    args = [x if d is None else lax_numpy.squeeze(x, d) for x, d in zip(args, dims)]
    outs = pallas_call_p.bind(*args, grid_mapping=gm, input_output_aliases=input_output_aliases,
                              cost_estimate=cost_estimate, out_avals=out_avals, **params)
    return [lax_numpy.expand_dims(x, 0) for x in outs], [0] * len(outs)
  args, dims = list(args), list(dims)
  off = gm.num_dynamic_grid_bounds
  for i, _ in input_output_aliases:
    i += off
    if dims[i] is None:
      args[i] = batching.broadcast(args[i], axis_size, 0)
    elif dims[i] != 0:
      args[i] = batching.moveaxis(args[i], dims[i], 0)
    dims[i] = 0
  nidx = gm.num_index_operands
  if any(d is not None for d in dims[:off + nidx]):
    if axis_size != 1:
      return _batch_with_loop(args, dims, axis_size, out_avals,
                              dict(params, grid_mapping=gm, cost_estimate=cost_estimate,
                                   input_output_aliases=input_output_aliases))
    for k in range(off + nidx):
      if dims[k] is not None:
        args[k], dims[k] = broadcasting.squeeze(args[k], (dims[k],)), None
  all_dims = dims[off + nidx:] + [0] * gm.num_outputs
  bms = tuple(_batch_block_mapping(bm, d, axis_size, gm.grid, gm.index_avals)
              for bm, d in zip(gm.block_mappings, all_dims))
  new_gm = gm.replace(grid=(axis_size, *gm.grid), block_mappings=bms,
                      vmapped_dims=(0,) + tuple(v + 1 for v in gm.vmapped_dims),
                      grid_names=None if gm.grid_names is None else (None, *gm.grid_names))
  if cost_estimate is not None:
    cost_estimate = pallas_core.CostEstimate(
        flops=cost_estimate.flops * axis_size,
        bytes_accessed=cost_estimate.bytes_accessed * axis_size,
        transcendentals=cost_estimate.transcendentals * axis_size)
  new_out = tuple(a.update(shape=(axis_size, *a.shape)) for a in out_avals)
  outs = pallas_call_p.bind(*args, grid_mapping=new_gm,
                            input_output_aliases=input_output_aliases,
                            cost_estimate=cost_estimate, out_avals=new_out, **params)
  return outs, [0] * len(outs)


# ---- the public entry point ------------------------------------------------------------------
def _pp_aval(a):
  return a.str_short(short_dtypes=True) if hasattr(a, "str_short") else str(a)


def _trace_kernel(kernel, flat_avals, kernel_tree, grid, src, interpreted=None):
  def flat_fun(*refs):
    args, kwargs = tree_util.tree_unflatten(kernel_tree, list(refs))
    out = kernel(*args, **kwargs)
    if out is not None:
      raise ValueError(f"The kernel function in the pallas_call {src} should return None. "
                       f"It returns a PyTree: {tree_util.tree_structure(out)}")
    return []

  with pallas_core.tracing_grid_env(grid, interpreted=interpreted):
    jaxpr, consts = tracing.trace_to_jaxpr(flat_fun, list(flat_avals))
  jaxpr, _ = core.dce_jaxpr(jaxpr, [], keep_inputs=True)
  closed, outer = tracing.closed_with_host_consts(jaxpr, consts)
  captured = [core.get_aval(c) for c in list(outer) + list(closed.consts)
              if not isinstance(c, state.Ref)]
  if captured or outer:
    raise ValueError(f"The kernel function in the pallas_call {src} captures constants "
                     f"[{', '.join(_pp_aval(a) for a in captured)}]. You should pass them "
                     "as inputs.")
  if closed.consts:
    raise NotImplementedError("pallas_call kernels closing over mutable array references")
  return closed


def _flat_specs(specs, tree, n, specs_name, values_name):
  """The block specs `specs` flattened along `tree` (`n` leaves); `no_block_spec` for each leaf
  when none are given."""
  if specs is no_block_spec:
    return [no_block_spec] * n
  flat, specs_tree = tree_util.tree_flatten(specs)
  if specs_tree != tree:
    raise ValueError(pallas_core.pytreedef_mismatch_err_msg(
        specs_name, specs_tree, values_name, tree))
  return flat


def pallas_call(kernel, out_shape, *, grid_spec=None, grid=(), in_specs=no_block_spec,
                out_specs=no_block_spec, scratch_shapes=(), input_output_aliases={},
                debug=False, interpret=False, name=None, compiler_params=None,
                cost_estimate=None, metadata=None):
  """A function running `kernel` over `grid`: the kernel gets a ref per input block, output
  block and scratch buffer (blocks as the BlockSpecs say; by default whole arrays) and writes
  its outputs through its output refs. Only `interpret=True` runs on CPU."""
  flat_scratch, scratch_tree = tree_util.tree_flatten(scratch_shapes)
  if grid_spec is None:
    grid_spec = GridSpec(grid, in_specs, out_specs, flat_scratch)
  else:
    if grid:
      raise ValueError(f"If `grid_spec` is specified, then `grid` must be `()`. It is {grid}")
    if in_specs is not no_block_spec:
      raise ValueError("If `grid_spec` is specified, then `in_specs` must be `no_block_spec`. "
                       f"It is {in_specs}")
    if out_specs is not no_block_spec:
      raise ValueError("If `grid_spec` is specified, then `out_specs` must be "
                       f"`no_block_spec`. It is {out_specs}")
    if scratch_shapes:
      raise ValueError("If `grid_spec` is specified, then `scratch_shapes` must be `()`. It "
                       f"is {scratch_shapes}")
    flat_scratch, scratch_tree = tree_util.tree_flatten(grid_spec.scratch_shapes)
  if isinstance(out_shape, list):
    out_shape = tuple(out_shape)
  flat_out_shapes, out_tree = tree_util.tree_flatten(out_shape)
  src = pallas_core.src_info(kernel)
  if name is not None:   # (the kernel is called `name` in messages, as in JAX)
    src = re.sub(r"[^\w.]", "_", name) + src[len(getattr(kernel, "__name__", src)):]
  static_grid = tuple(int(g) if isinstance(g, (int, np.integer))
                      else pallas_core.dynamic_grid_dim for g in grid_spec.grid)
  dyn_bounds = [g for g in grid_spec.grid if not isinstance(g, (int, np.integer))]
  aliases = dict(input_output_aliases)

  n_prefetch = getattr(grid_spec, "num_scalar_prefetch", 0)

  @jit.jit(inline=True)
  def wrapped(*args):
    all_flat = tree_util.tree_flatten(args)[0]
    all_avals = [core.get_aval(a) for a in all_flat]
    all_paths = [f"args{tree_util.keystr(p)}" for p, _ in
                 tree_util.tree_flatten_with_path(args)[0]]
    scalar_args, rest = args[:n_prefetch], args[n_prefetch:]
    flat_scalars, scalar_tree = tree_util.tree_flatten(tuple(scalar_args))
    index_avals = tuple(grid_spec._make_scalar_ref_aval(core.get_aval(a))
                        for a in flat_scalars)
    flat_args, in_tree = tree_util.tree_flatten(tuple(rest))
    n_idx = len(flat_scalars)
    in_avals = all_avals[n_idx:]
    flat_out_avals = [pallas_core.out_shape_to_aval(s) for s in flat_out_shapes]
    in_paths = all_paths[n_idx:]
    out_paths = [f"outputs{tree_util.keystr(p)}" for p, _ in
                 tree_util.tree_flatten_with_path(out_shape)[0]]
    flat_in_specs = _flat_specs(grid_spec.in_specs, in_tree, len(flat_args),
                                "`in_specs`", "`inputs`")
    flat_out_specs = _flat_specs(grid_spec.out_specs, out_tree, len(flat_out_avals),
                                 "`out_specs`", "`out_shape`")
    bms = tuple(pallas_core.block_mapping(s, o, a, static_grid, index_avals,
                                          scalar_tree if n_prefetch else None)
                for s, o, a in zip(list(flat_in_specs) + list(flat_out_specs),
                                   in_paths + out_paths, in_avals + flat_out_avals))
    scratch_avals = tuple(pallas_core.scratch_ref_aval(s) for s in flat_scratch)
    gm = GridMapping(static_grid, grid_spec.grid_names, bms, (), scratch_avals,
                     len(flat_args), len(flat_out_avals), n_idx, index_avals)
    in_refs = tree_util.tree_unflatten(in_tree, [bm.ref_aval for bm in bms[:len(flat_args)]])
    if n_prefetch:
      in_refs = (*tree_util.tree_unflatten(scalar_tree, list(index_avals)), *in_refs)
    out_refs = tree_util.tree_unflatten(out_tree, [bm.ref_aval for bm in bms[len(flat_args):]])
    if not isinstance(out_refs, (tuple, list)):
      out_refs = (out_refs,)
    scratch_refs = tree_util.tree_unflatten(scratch_tree, list(scratch_avals))
    if isinstance(scratch_refs, dict):
      kernel_args = ((*in_refs, *out_refs), scratch_refs)
    else:
      if not isinstance(scratch_refs, (tuple, list)):
        scratch_refs = (scratch_refs,)
      kernel_args = ((*in_refs, *out_refs, *scratch_refs), {})
    flat_kernel_avals, kernel_tree = tree_util.tree_flatten(
        kernel_args, is_leaf=lambda x: isinstance(x, AbstractRef))
    closed = _trace_kernel(kernel, flat_kernel_avals, kernel_tree, static_grid, src,
                           bool(pallas_core.tpu_interpret_mode.value or interpret))
    for i_idx, o_idx in aliases.items():
      if i_idx not in range(len(all_avals)):
        raise ValueError(f"input_output_aliases contains the mapping '{i_idx}:{o_idx}' with "
                         f"input index {i_idx} outside the range [0, {len(all_avals)})")
      if o_idx not in range(len(flat_out_avals)):
        raise ValueError(f"input_output_aliases contains the mapping '{i_idx}:{o_idx}' with "
                         f"output index {o_idx} outside the range "
                         f"[0, {len(flat_out_avals)})")
      ia, oa = all_avals[i_idx], flat_out_avals[o_idx]
      if ia.shape != oa.shape or ia.dtype != oa.dtype:
        raise ValueError(
            f"input_output_aliases contains the mapping '{i_idx}:{o_idx}' referring to "
            f"input{all_paths[i_idx][4:]} with abstract value {ia.str_short()} and to "
            f"output{out_paths[o_idx][7:]} with a different abstract value "
            f"{oa.str_short()}.")
    with environment.named_scope(name) if name is not None else contextlib.nullcontext():
      out_flat = pallas_call_p.bind(
          *dyn_bounds, *flat_scalars, *flat_args, jaxpr=KernelJaxpr(closed, src),
          grid_mapping=gm, mesh=None, debug=debug,
          interpret=pallas_core.tpu_interpret_mode.value or interpret,
          input_output_aliases=tuple(aliases.items()), compiler_params=compiler_params,
          cost_estimate=cost_estimate, out_avals=tuple(flat_out_avals), name=name,
          metadata=None if metadata is None else tuple(sorted(metadata.items())))
    return tree_util.tree_unflatten(out_tree, out_flat)

  return wrapped

