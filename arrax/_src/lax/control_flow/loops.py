"""Loops: the `scan` primitive and the APIs built on it and on `while` (fori_loop, scan, map,
associative_scan).

`scan_p` operands are (*consts, *carry, *xs); params `jaxpr` (consts, carry, x slices ->
carry, y slices), `length`, `reverse`, `unroll`, `num_consts`, `num_carry`. It lowers, like
JAX's, to a `while` written with lax operations (`_scan_impl`), unrolled `unroll` times.
"""
from __future__ import annotations

import weakref

import numpy as np

from arrax._src import core, dtypes
from arrax._src.config import config
from arrax._src.core import ShapedArray, Tracer
from arrax._src.errors import ConcretizationTypeError
from arrax._src.lax import lax, shape_ops
from arrax._src.lax.control_flow import common
from arrax._src.lax.control_flow.while_loop import _split, _weak_promotions, while_loop, while_p
from arrax._src.tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["while_loop", "fori_loop", "scan", "map", "associative_scan", "while_p", "scan_p"]


# ---- fori_loop --------------------------------------------------------------------------------
_fori_scan_bodies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_fori_while_bodies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _wrapper(cache, body_fun, make):
  # One wrapper per body function, so repeated loops reuse traces and executables.
  try:
    w = cache.get(body_fun)
  except TypeError:
    return make(lambda: body_fun)
  if w is None:
    ref = weakref.ref(body_fun)
    w = cache[body_fun] = make(ref)
  return w


def _make_fori_scan_body(ref):
  def scanned(carry, _):
    i, x = carry
    return (lax.add(i, _one_like(i)), ref()(i, x)), None
  return scanned


def _make_fori_while_body(ref):
  def body(carry):
    i, upper, x = carry
    return lax.add(i, _one_like(i)), upper, ref()(i, x)
  return body


def _fori_cond(carry):
  return lax.lt(carry[0], carry[1])


def _one_like(i):
  dt, weak = dtypes.dtype_and_weak_type(i)
  return lax.scalar_literal(1, dt, weak)


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
  """Run `val = body_fun(i, val)` for i in range(lower, upper); return the final `val`.

  With concrete bounds the loop is a `scan` (reverse-differentiable, `unroll` allowed);
  with traced bounds it is a `while_loop`.

  Example:
    >>> lax.fori_loop(0, 5, lambda i, x: x + i, 0)
    Array(10, dtype=int32, weak_type=True)
  """
  if not callable(body_fun):
    raise TypeError("lax.fori_loop: body_fun argument should be callable.")
  lower_dtype, lower_weak = dtypes.dtype_and_weak_type(lower)
  upper_dtype, upper_weak = dtypes.dtype_and_weak_type(upper)
  dtype = lower_dtype if lower_dtype == upper_dtype else None
  if dtype is None and lower_dtype.kind == "i" and upper_dtype.kind == "i":
    if lower_weak and not upper_weak:
      dtype = upper_dtype
    elif upper_weak and not lower_weak:
      dtype = lower_dtype
  if dtype is None:
    raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                    f"{lower_dtype.name} and {upper_dtype.name}")
  use_scan = False
  if not isinstance(lower, Tracer) and not isinstance(upper, Tracer):
    try:
      lower_, upper_ = int(lower), int(upper)
      use_scan = True
    except TypeError:
      pass
  if use_scan:
    length = max(upper_ - lower_, 0)
    if config.jax_disable_jit and length == 0:
      return init_val
    body = _wrapper(_fori_scan_bodies, body_fun, _make_fori_scan_body)
    (_, result), _ = scan(body, (lower_, init_val), None, length=length,
                          unroll=False if unroll is None else unroll)
    return result
  if unroll is not None and unroll is not False and unroll != 1:
    raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are statically "
                     "known.")
  if lower_dtype != dtype:
    lower = lax.convert_element_type(lower, dtype)
  if upper_dtype != dtype:
    upper = lax.convert_element_type(upper, dtype)
  body = _wrapper(_fori_while_bodies, body_fun, _make_fori_while_body)
  _, _, result = while_loop(_fori_cond, body, (lower, upper, init_val))
  return result


# ---- scan: the primitive ----------------------------------------------------------------------
scan_p = core.Primitive("scan")
scan_p.multiple_results = True


def _scan_abstract_eval(*avals, reverse, length, jaxpr, num_consts, num_carry, unroll):
  if len(avals) != len(jaxpr.in_avals):
    raise TypeError(f"scan: jaxpr takes {len(jaxpr.in_avals)} inputs but got {len(avals)}")
  consts, carry, xs = _split(avals, [num_consts, num_carry])
  for x, a in zip(xs, jaxpr.in_avals[num_consts + num_carry:]):
    if x.shape[:1] != (length,) or not common.typematch(a, x.update(shape=x.shape[1:])):
      raise TypeError(f"scan: scanned operand {x.str_short()} does not match the body's "
                      f"slice type {a.str_short()} with length {length}")
  carry_out, ys = _split(jaxpr.out_avals, [num_carry])
  if not common.all_typematch(carry, carry_out):
    raise TypeError(f"scan: the body maps carry ({common.avals_str(carry)}) to "
                    f"({common.avals_str(carry_out)})")
  return carry_out + [y.update(shape=(length, *y.shape)) for y in ys]


def _scan_impl(*args, reverse, length, jaxpr, num_consts, num_carry, unroll):
  """scan in lax operations: a while loop running `unroll` steps per iteration (the leftover
  steps, or all of them when fully unrolled, run straight-line after it)."""
  consts, carry, xs = _split(args, [num_consts, num_carry])
  y_avals = jaxpr.out_avals[num_carry:]
  ys = [shape_ops.broadcast_in_dim(lax.scalar_literal(0, a.dtype), (length, *a.shape), ())
        for a in y_avals]

  def step(s, carry, ys):
    # s counts steps (a Python int or an int32 tracer); step s handles element `idx`.
    if isinstance(s, int):
      idx = length - 1 - s if reverse else s
    else:
      idx = lax.sub(np.int32(length - 1), s) if reverse else s
    x = [_index(x, idx) for x in xs]
    outs = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *consts, *carry, *x)
    new_carry, y = outs[:num_carry], outs[num_carry:]
    return new_carry, [_update(b, v, idx) for b, v in zip(ys, y)]

  per_trip = unroll if unroll > 0 else max(length, 1)
  trips = length // per_trip
  if trips == 1 and unroll != 1:
    trips = 0   # fully unrolled: no loop at all
  if trips:
    def body(state):
      t, carry, ys = state
      for k in range(per_trip):
        s = lax.add(lax.mul(t, np.int32(per_trip)), np.int32(k))
        carry, ys = step(s, carry, ys)
      return lax.add(t, np.int32(1)), carry, ys
    _, carry, ys = while_loop(lambda st: lax.lt(st[0], np.int32(trips)), body,
                              (np.int32(0), list(carry), ys))
  for s in range(trips * per_trip, length):
    carry, ys = step(s, carry, ys)
  return [*carry, *ys]


def _index(x, idx):
  aval = core.get_aval(x)
  if isinstance(idx, int):
    return shape_ops.index_in_dim(x, idx, 0, keepdims=False)
  starts = [idx] + [np.int32(0)] * (aval.ndim - 1)
  out = shape_ops.dynamic_slice(x, starts, (1, *aval.shape[1:]), allow_negative_indices=False)
  return shape_ops.squeeze(out, (0,))


def _update(buf, y, idx):
  aval = core.get_aval(buf)
  if isinstance(idx, int):
    idx = np.int32(idx)
  starts = [idx] + [np.int32(0)] * (aval.ndim - 1)
  y = shape_ops.broadcast_in_dim(y, (1, *aval.shape[1:]), tuple(range(1, aval.ndim)))
  return shape_ops.dynamic_update_slice(buf, y, starts, allow_negative_indices=False)


scan_p.abstract_eval = _scan_abstract_eval
scan_p.lowering = common.lower_fun(_scan_impl)


# ---- scan -------------------------------------------------------------------------------------
def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
  """Loop `carry, y = f(carry, x)` over the leading axis of `xs`; return (carry, stacked ys).

  `init`, `xs` and the outputs may be pytrees; `xs=None` with `length` scans without inputs.
  `reverse` runs from the last element; `unroll` steps run per loop iteration (True: all).

  Example:
    >>> lax.scan(lambda c, x: (c + x, c), 0., jnp.arange(3.))
    (Array(3., dtype=float32), Array([0., 0., 1.], dtype=float32))
  """
  if not callable(f):
    raise TypeError("lax.scan: f argument should be a callable.")
  init_flat, init_tree = tree_flatten(init)
  xs_flat, _ = tree_flatten(xs)
  length = _infer_scan_length(xs_flat, length)
  if config.jax_disable_jit:
    return _scan_python(f, init, xs_flat, xs, length, reverse)
  unroll = _check_unroll(unroll, length)
  in_tree = tree_flatten((init, xs))[1]
  init_avals = tuple(core.get_aval(x) for x in init_flat)
  xs_avals = tuple(core.get_aval(x) for x in xs_flat)
  plan = common.cached((f,), ("scan", in_tree, init_tree, init_avals, xs_avals, length),
                       lambda: _scan_plan(f, in_tree, init_tree, init_avals, xs_avals))
  init_flat = [lax.convert_element_type(x, dt) if dt is not None else x
               for x, dt in zip(init_flat, plan.promote)]
  moved = [x for x, m in zip(init_flat, plan.move_to_const) if m]
  carry = [x for x, m in zip(init_flat, plan.move_to_const) if not m]
  consts = [*moved, *plan.consts]
  outs = scan_p.bind(*consts, *carry, *xs_flat, reverse=bool(reverse), length=length,
                     jaxpr=plan.jaxpr, num_consts=len(consts), num_carry=len(carry),
                     unroll=unroll)
  carry_out, ys = outs[:len(carry)], iter(outs[len(carry):])
  ys = [next(ys) if i is None else common.as_array(xs_flat[i]) for i in plan.ys_fwd]
  carry_out = common.merge_lists(plan.move_to_const, carry_out, moved)
  return tree_unflatten(plan.out_tree, [*carry_out, *ys])


class _ScanPlan:
  __slots__ = ("jaxpr", "consts", "promote", "move_to_const", "ys_fwd", "out_tree")


def _scan_plan(f, in_tree, init_tree, init_avals, xs_avals):
  x_avals = tuple(a.update(shape=a.shape[1:]) for a in xs_avals)
  traced, carry_tree, carry_avals = _trace_scan(f, in_tree, init_avals + x_avals)
  if carry_tree.num_leaves != len(init_avals):
    common.check_carry_type("scan body", f, init_tree, init_avals, carry_tree, carry_avals)
  promote = _weak_promotions(init_avals, carry_avals)
  if any(dt is not None for dt in promote):
    init_avals = tuple(a if dt is None else ShapedArray(a.shape, dt)
                       for a, dt in zip(init_avals, promote))
    traced, carry_tree, carry_avals = _trace_scan(f, in_tree, init_avals + x_avals)
  common.check_carry_type("scan body", f, init_tree, init_avals, carry_tree, carry_avals)
  n_consts, n_carry = len(traced.consts), len(init_avals)
  jaxpr = traced.jaxpr
  fwd = common.forwarding(jaxpr.jaxpr)
  carry_fwd, ys_fwd = fwd[:n_carry], fwd[n_carry:]
  # A carry the body returns unchanged is a const; a y that is its x is not stacked again.
  move = [n_consts + i == f for i, f in enumerate(carry_fwd)]
  n_ys = len(ys_fwd)
  if any(move):
    jaxpr = common.prune_outputs(jaxpr, [not m for m in move] + [True] * n_ys)
    jaxpr = common.move_binders_to_front(
        jaxpr, [False] * n_consts + move + [False] * len(x_avals))
  first_x = n_consts + n_carry
  ys_fwd = [f - first_x if f is not None and f >= first_x else None for f in ys_fwd]
  jaxpr = common.prune_outputs(jaxpr, [True] * (n_carry - sum(move))
                               + [f is None for f in ys_fwd])
  plan = _ScanPlan()
  plan.jaxpr, plan.consts, plan.promote, plan.move_to_const = jaxpr, traced.consts, promote, move
  plan.ys_fwd, plan.out_tree = ys_fwd, traced.out_tree
  return plan


def _trace_scan(f, in_tree, avals):
  traced = common.trace_body(f, in_tree, avals)
  out = common.leaves_like(traced.out_tree)
  if not isinstance(out, (tuple, list)) or len(out) != 2:
    shown = (traced.out_avals[0] if traced.out_tree.num_leaves == 1 and
             traced.out_tree.num_nodes == 1 else tree_unflatten(traced.out_tree,
                                                                traced.out_avals))
    raise TypeError(f"scan body output must be a pair, got {shown}.")
  carry_tree = traced.out_tree.children()[0]
  carry_avals = traced.out_avals[:carry_tree.num_leaves]
  return traced, carry_tree, carry_avals


def _infer_scan_length(xs_flat, length):
  try:
    lengths = [x.shape[0] for x in xs_flat]
  except AttributeError:
    bad = ", ".join(str(x) for x in xs_flat if not hasattr(x, "shape"))
    raise ValueError(f"scan got value with no leading axis to scan over: {bad}.") from None
  if length is not None:
    try:
      length = int(length)
    except (ConcretizationTypeError, TypeError):
      raise ConcretizationTypeError(
          length, "The `length` argument to `scan` expects a concrete `int` value. For "
          "scan-like iteration with a dynamic length, use `while_loop` or `fori_loop`.") from None
    if not all(length == n for n in lengths):
      raise ValueError(f"scan got `length` argument of {length} which disagrees with leading "
                       f"axis sizes {lengths}.")
    return length
  if len(set(lengths)) > 1:
    raise ValueError("scan got values with different leading axis sizes: "
                     f"{', '.join(str(n) for n in lengths)}.")
  if not lengths:
    raise ValueError("scan got no values to scan over and `length` not provided.")
  return lengths[0]


def _check_unroll(unroll, length):
  if isinstance(unroll, Tracer):
    raise ConcretizationTypeError(
        unroll, "The `unroll` argument to `scan` expects a concrete `int` or `bool` value.")
  if isinstance(unroll, (bool, np.bool_)):
    return max(length, 1) if unroll else 1
  unroll = int(unroll)
  if unroll < 0:
    raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
  return unroll


def _scan_python(f, init, xs_flat, xs, length, reverse):
  # jax_disable_jit: run the body op by op in Python.
  if length == 0:
    raise ValueError("zero-length scan is not supported in disable_jit() mode because the "
                     "output type is unknown.")
  xs_tree = tree_flatten(xs)[1]
  carry, ys = init, []
  for i in (reversed(range(length)) if reverse else range(length)):
    x = tree_unflatten(xs_tree, [shape_ops.index_in_dim(x, i, keepdims=False) for x in xs_flat])
    carry, y = f(carry, x)
    ys.append(y)
  if reverse:
    ys.reverse()
  stacked = tree_map(lambda *ys: shape_ops.concatenate(
      [shape_ops.expand_dims(common.as_array(y), (0,)) for y in ys], 0), *ys)
  return carry, stacked


# ---- map --------------------------------------------------------------------------------------
_map_bodies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _make_map_body(ref):
  return lambda _, x: ((), ref()(x))


def map(f, xs, *, batch_size=None):  # noqa: A001
  """Apply `f` to each slice of `xs` along its leading axis and stack the results (a scan).

  With `batch_size`, `batch_size` slices at a time go through `vmap(f)`.

  Example:
    >>> lax.map(lambda x: x * 2, jnp.arange(3))
    Array([0, 2, 4], dtype=int32)
  """
  if batch_size is None:
    _, ys = scan(_wrapper(_map_bodies, f, _make_map_body), (), xs)
    return ys
  from arrax._src.batching import vmap
  batch_size = int(batch_size)
  leaves, tree = tree_flatten(xs)
  batched = vmap(f)
  if not leaves:
    return batched(xs)
  n = core.get_aval(leaves[0]).shape[0]
  n_batches, rem = (0, n) if batch_size == 0 else divmod(n, batch_size)
  cut = n_batches * batch_size
  if not n_batches:
    return batched(tree_unflatten(tree, [_rows(x, cut, n) for x in leaves]))
  scan_leaves, rest_leaves = [], []
  for x in leaves:
    shape = core.get_aval(x).shape
    scan_leaves.append(shape_ops.reshape(_rows(x, 0, cut), (n_batches, batch_size, *shape[1:])))
    if rem:
      rest_leaves.append(_rows(x, cut, n))
  _, ys = scan(lambda _, x: ((), batched(x)), (), tree_unflatten(tree, scan_leaves))
  flatten = lambda y: shape_ops.reshape(y, (cut, *core.get_aval(y).shape[2:]))  # noqa: E731
  if not rem:
    return tree_map(flatten, ys)
  rest_ys = batched(tree_unflatten(tree, rest_leaves))
  return tree_map(lambda a, b: shape_ops.concatenate([flatten(a), b], 0), ys, rest_ys)


def _rows(x, start, stop):
  shape = core.get_aval(x).shape
  return shape_ops.slice(x, (start, *[0] * (len(shape) - 1)), (stop, *shape[1:]))


# ---- associative_scan -------------------------------------------------------------------------
def associative_scan(fn, elems, reverse=False, axis=0):
  """Inclusive scan of the associative `fn` along `axis`, by parallel prefix (log depth).

  Example:
    >>> lax.associative_scan(jnp.add, jnp.arange(4))
    Array([0, 1, 3, 6], dtype=int32)
  """
  if not callable(fn):
    raise TypeError("lax.associative_scan: fn argument should be callable.")
  flat, tree = tree_flatten(elems)
  if not flat:
    raise ValueError("associative_scan needs at least one array in `elems`.")
  axis = _canonical_axis(axis, core.get_aval(flat[0]).ndim)
  if reverse:
    flat = [shape_ops.rev(e, (axis,)) for e in flat]
  n = core.get_aval(flat[0]).shape[axis]
  if not all(core.get_aval(e).shape[axis] == n for e in flat[1:]):
    raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                     f"(saw: {[core.get_aval(e).shape for e in flat]})")

  def combine(a, b):
    out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
    return tree_flatten(out)[0]

  def sl(e, start, stop, stride=1):
    return shape_ops.slice_in_dim(e, start, stop, stride, axis)

  def prefix(elems):
    m = core.get_aval(elems[0]).shape[axis]
    if m < 2:
      return elems
    # Scan the sums of adjacent pairs: that gives the results at odd positions.
    odd = prefix(combine([sl(e, 0, -1, 2) for e in elems], [sl(e, 1, None, 2) for e in elems]))
    # Each even position (after the first) adds its element to the odd result before it.
    if m % 2 == 0:
      even = combine([sl(e, 0, -1) for e in odd], [sl(e, 2, None, 2) for e in elems])
    else:
      even = combine(odd, [sl(e, 2, None, 2) for e in elems])
    even = [shape_ops.concatenate([sl(e, 0, 1), r], axis) for e, r in zip(elems, even)]
    return [_interleave(a, b, axis) for a, b in zip(even, odd)]

  out = prefix(flat)
  if reverse:
    out = [shape_ops.rev(e, (axis,)) for e in out]
  return tree_unflatten(tree, out)


def _canonical_axis(axis, ndim):
  axis = int(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


def _interleave(a, b, axis):
  """a[0], b[0], a[1], b[1], ... along `axis` (a is as long as b or one longer)."""
  a_aval, b_aval = core.get_aval(a), core.get_aval(b)
  same = a_aval.shape[axis] == b_aval.shape[axis]
  a_pad = [(0, 0, 0)] * a_aval.ndim
  b_pad = [(0, 0, 0)] * b_aval.ndim
  a_pad[axis] = (0, 1 if same else 0, 1)
  b_pad[axis] = (1, 0 if same else 1, 1)
  combine = lax.bitwise_or if a_aval.dtype == np.bool_ else lax.add
  zero_a = lax.scalar_literal(0, a_aval.dtype, a_aval.weak_type)
  zero_b = lax.scalar_literal(0, b_aval.dtype, b_aval.weak_type)
  return combine(shape_ops.pad(a, zero_a, a_pad), shape_ops.pad(b, zero_b, b_pad))
