"""Reductions over axes, argmin/argmax, cumulative reductions and the general `reduce`.

Monoid reductions lower to a single stablehlo.reduce with the operation's identity as the
initial value. argmin/argmax reduce (value, index) pairs so that NaNs win and ties go to the
lowest index. Cumulative reductions lower to a stablehlo.reduce_window whose window spans the
whole axis (padded on one side), which XLA rewrites into an efficient scan.

Differentiation follows JAX: reduce_sum and cumsum are linear; reduce_max/min send the tangent
to the location(s) of the extremum (averaged over ties); reduce_prod and the general reduce are
differentiated through a tree of pairwise combinations, and cumprod/cummax/cummin/cumlogsumexp
through a parallel prefix scan, so that values (also at ties) match JAX's. Each primitive's
rules follow its definition.
"""
from __future__ import annotations

import functools
import operator

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

import math

from arrax._src import ad, batching, core, dtypes, mlir, tracing, tree_util
from arrax._src.core import ShapedArray
from arrax._src.lax import elementwise as lax_api
from arrax._src.lax import shape_ops as so
from arrax._src.lax import utils
from arrax._src.lax.broadcasting import reduce_sum, reduce_sum_p  # noqa: F401  (one family)
from arrax._src.lax.utils import (_all_ones, _axes, _fixed, _number_check, _one, _reduced_shape,
                                  _reducer_batch, _reduction, _scalar_const, _scalar_type,
                                  _supports_inf, _zero, asarray_operand)

__all__ = [
    "reduce", "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
    "reduce_or", "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin",
    "cumlogsumexp",
]


# ---- identities -------------------------------------------------------------------------------


def _max_identity(dtype):
  """The smallest value of `dtype` (the identity of max)."""
  dtype = np.dtype(dtype)
  if dtypes.is_inexact(dtype):
    real = np.float32 if dtype.kind == "c" else dtype
    return np.asarray(-np.inf if _supports_inf(real) else dtypes.finfo(dtype).min, dtype)
  if dtype == np.bool_:
    return np.asarray(False)
  return np.asarray(dtypes.iinfo(dtype).min, dtype)


def _min_identity(dtype):
  """The largest value of `dtype` (the identity of min)."""
  dtype = np.dtype(dtype)
  if dtypes.is_inexact(dtype):
    real = np.float32 if dtype.kind == "c" else dtype
    return np.asarray(np.inf if _supports_inf(real) else dtypes.finfo(dtype).max, dtype)
  if dtype == np.bool_:
    return np.asarray(True)
  return np.asarray(dtypes.iinfo(dtype).max, dtype)


# ---- scalar helpers used inside reducer bodies ------------------------------------------------


_cmp = mlir.compare


def _minmax(direction, dtype):
  """max (direction GT) or min (LT); complex values compare lexicographically as pairs."""
  if np.dtype(dtype).kind != "c":
    return hlo.maximum if direction == "GT" else hlo.minimum
  part = np.float32 if np.dtype(dtype) == dtypes.complex64 else np.float64
  return lambda x, y: lax_api.lexicographic_select(x, y, direction, part)


def _logaddexp(dtype):
  """log(exp(x) + exp(y)) without overflow, as a scalar body for reduce_window."""
  dtype = np.dtype(dtype)
  amax_of = _minmax("GT", dtype)
  if dtype.kind != "c":
    def body(x, y):
      amax = amax_of(x, y)
      delta = hlo.subtract(x, y)
      is_nan = _cmp(delta, delta, "NE", dtype)
      tail = hlo.log_plus_one(hlo.exponential(hlo.negate(hlo.abs(delta))))
      return hlo.select(is_nan, hlo.add(x, y), hlo.add(amax, tail))
    return body
  part = np.float32 if dtype == dtypes.complex64 else np.float64

  def body(x, y):
    amax = amax_of(x, y)
    delta = hlo.subtract(hlo.add(x, y), hlo.multiply(amax, _scalar_const(2, dtype)))
    out = hlo.add(amax, hlo.log_plus_one(hlo.exponential(delta)))
    # Bring the imaginary part back into [-pi, pi).
    pi, two_pi = _scalar_const(np.pi, part), _scalar_const(2 * np.pi, part)
    rem = hlo.remainder(hlo.add(hlo.imag(out), pi), two_pi)
    rem = hlo.select(_cmp(rem, _scalar_const(0, part), "LT", part), hlo.add(rem, two_pi), rem)
    return hlo.complex(hlo.real(out), hlo.subtract(rem, pi))
  return body


# ---- monoid reductions over axes --------------------------------------------------------------


def _logical_shape(aval, axes):
  if aval.dtype != np.bool_ and utils.dtype_class(aval.dtype) != utils.INT:
    raise TypeError(f"logical reduction requires operand dtype bool or int, got "
                    f"{aval.dtype.name}.")
  for a in axes:
    if a >= aval.ndim:
      raise IndexError(f"index {a} is out of bounds for axis 0 with size {aval.ndim}")
  if any(a < 0 for a in axes) or len(axes) != len(set(axes)):
    raise ValueError(f"reduction axes {axes} must be distinct non-negative dimensions of "
                     f"{aval}.")
  return tuple(d for i, d in enumerate(aval.shape) if i not in axes)


def _any_dtype(name, aval):
  """No dtype restriction (max, min; the logical reductions check theirs with the shape)."""


reduce_prod_p = _reduction("reduce_prod", _number_check, _reduced_shape, _fixed(hlo.multiply),
                           _one)
reduce_max_p = _reduction("reduce_max", _any_dtype, _reduced_shape,
                          functools.partial(_minmax, "GT"), _max_identity)
reduce_min_p = _reduction("reduce_min", _any_dtype, _reduced_shape,
                          functools.partial(_minmax, "LT"), _min_identity)
reduce_and_p = _reduction("reduce_and", _any_dtype, _logical_shape, _fixed(hlo.and_),
                          _all_ones, keep_weak=False)
reduce_or_p = _reduction("reduce_or", _any_dtype, _logical_shape, _fixed(hlo.or_), _zero,
                         keep_weak=False)
reduce_xor_p = _reduction("reduce_xor", _any_dtype, _logical_shape, _fixed(hlo.xor), _zero,
                          keep_weak=False)


for _p in (reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p,
           reduce_xor_p):
  _p.def_batch(_reducer_batch(_p))


def _reduce_tree_jvp(combine, inits, primals, tangents, axes):
  """JVP of reducing `primals` over `axes` by repeatedly combining halves with `combine`.

  `combine(*xs, *ys)` maps two lists of equally shaped arrays to one list.
  """
  shape = core.get_aval(primals[0]).shape
  rest = tuple(i for i in range(len(shape)) if i not in axes)
  n = math.prod(shape[a] for a in axes)
  perm = tuple(axes) + rest
  new_shape = (n,) + tuple(shape[i] for i in rest)
  primals = [so.reshape(x, new_shape, perm) for x in primals]
  tangents = [t if type(t) is ad.Zero else so.reshape(t, new_shape, perm) for t in tangents]
  tangents = [ad.Zero(ad.tangent_aval(core.get_aval(x))) if type(t) is ad.Zero else t
              for x, t in zip(primals, tangents)]

  def tree(*xs):
    xs = list(xs)
    ndim = core.get_aval(xs[0]).ndim
    while core.get_aval(xs[0]).shape[0] > 1:
      m = core.get_aval(xs[0]).shape[0]
      m1 = (m + 1) // 2
      lo = [so.slice_in_dim(x, 0, m1) for x in xs]
      hi = [so.slice_in_dim(x, m1, None) for x in xs]
      if m - m1 != m1:
        config = [(0, 0, 0)] * ndim
        config[0] = (0, 1, 0)
        hi = [so.pad(x, init, config) for x, init in zip(hi, inits)]
      xs = list(combine(*(lo + hi)))
    if core.get_aval(xs[0]).shape[0] == 0:
      return [so.broadcast(init, new_shape[1:]) for init in inits]
    return [so.squeeze(x, (0,)) for x in xs]

  return ad.jvp_flat(tree, primals, tangents)


def _reduce_prod_jvp(primals, tangents, *, axes):
  x, = primals
  one = lax_api.scalar_literal(1, core.get_aval(x).dtype)
  outs, touts = _reduce_tree_jvp(lambda a, b: [lax_api.mul(a, b)], [one], primals, tangents,
                                 axes)
  return outs[0], touts[0]


reduce_prod_p.def_jvp(_reduce_prod_jvp)


def _reduce_chooser_jvp(g, ans, x, *, axes):
  # Equal-to-the-extremum mask, divided by the number of ties.
  shape = [1 if i in axes else d for i, d in enumerate(core.get_aval(x).shape)]
  where = lax_api.convert_element_type(lax_api.eq(x, so.reshape(ans, shape)),
                                       core.get_aval(g).dtype)
  counts = reduce_sum(where, axes)
  return lax_api.div(reduce_sum(lax_api.mul(g, where), axes), counts)


ad.defjvp2(reduce_max_p, _reduce_chooser_jvp)
ad.defjvp2(reduce_min_p, _reduce_chooser_jvp)


def reduce_prod(operand, axes):
  """Product of `operand` over `axes`."""
  return reduce_prod_p.bind(asarray_operand(operand), axes=_axes(axes))


def reduce_max(operand, axes):
  """Maximum of `operand` over `axes` (NaN-propagating; complex ordered lexicographically)."""
  return reduce_max_p.bind(asarray_operand(operand), axes=_axes(axes))


def reduce_min(operand, axes):
  """Minimum of `operand` over `axes` (NaN-propagating; complex ordered lexicographically)."""
  return reduce_min_p.bind(asarray_operand(operand), axes=_axes(axes))


def reduce_and(operand, axes):
  """Bitwise AND of a bool or integer `operand` over `axes`."""
  return reduce_and_p.bind(asarray_operand(operand), axes=_axes(axes))


def reduce_or(operand, axes):
  """Bitwise OR of a bool or integer `operand` over `axes`."""
  return reduce_or_p.bind(asarray_operand(operand), axes=_axes(axes))


def reduce_xor(operand, axes):
  """Bitwise XOR of a bool or integer `operand` over `axes`."""
  return reduce_xor_p.bind(asarray_operand(operand), axes=_axes(axes))


# ---- argmin / argmax --------------------------------------------------------------------------
def _argminmax(name, direction, identity):
  prim = core.Primitive(name)

  def abstract_eval(aval, *, axes, index_dtype):
    axis, = axes
    if not 0 <= axis < aval.ndim:
      raise ValueError(f"Invalid axis {axis} for operand shape {aval.shape}")
    if aval.shape[axis] < 1:
      raise ValueError("argmin and argmax require non-empty reduced dimension. "
                       f"operand.shape={aval.shape} axis={axis}")
    if np.dtype(index_dtype) == np.bool_ or not dtypes.issubdtype(index_dtype, np.integer):
      raise TypeError(f"index_dtype must be an integer type, but got {np.dtype(index_dtype).name}")
    shape = aval.shape[:axis] + aval.shape[axis + 1:]
    return ShapedArray(shape, index_dtype, False)

  def lowering(ctx, x, *, axes, index_dtype):
    aval, out = ctx.avals_in[0], ctx.avals_out[0]
    if aval.dtype.kind == "c":
      raise TypeError(f"{'gt' if direction == 'GT' else 'lt'} does not accept dtype "
                      f"{aval.dtype.name} at position 0. Accepted dtypes at position 0 are "
                      "subtypes of integer, floating, bool.")
    axis, = axes
    vdt, idt = aval.dtype, np.dtype(index_dtype)
    iota = hlo.iota(mlir.aval_to_ir_type(ShapedArray(aval.shape, idt)), axis)
    op = hlo.ReduceOp(
        [mlir.aval_to_ir_type(ShapedArray(out.shape, vdt)), mlir.aval_to_ir_type(out)],
        [x, iota], [_scalar_const(identity(vdt), vdt), _scalar_const(0, idt)],
        mlir.dense_i64([axis]))
    vt, it = _scalar_type(vdt), _scalar_type(idt)
    block = op.regions[0].blocks.append(vt, it, vt, it)
    with ir.InsertionPoint(block):
      new_v, new_i, acc_v, acc_i = block.arguments
      # Take the new value if it is better or NaN; take its index also on a tie with an
      # earlier position.
      take_v = hlo.or_(_cmp(new_v, acc_v, direction, vdt), _cmp(new_v, new_v, "NE", vdt))
      earlier = hlo.and_(_cmp(new_v, acc_v, "EQ", vdt), _cmp(new_i, acc_i, "LT", idt))
      take_i = hlo.or_(take_v, earlier)
      hlo.return_([hlo.select(take_v, new_v, acc_v), hlo.select(take_i, new_i, acc_i)])
    return [op.results[1]]

  prim.def_abstract_eval(abstract_eval)
  prim.def_lowering(lowering)
  return prim


argmax_p = _argminmax("argmax", "GT", _max_identity)
argmin_p = _argminmax("argmin", "LT", _min_identity)
argmax_p.def_batch(_reducer_batch(argmax_p))
argmin_p.def_batch(_reducer_batch(argmin_p))


for _p in (reduce_and_p, reduce_or_p, reduce_xor_p, argmax_p, argmin_p):
  ad.defjvp_zero(_p)


def argmax(operand, axis, index_dtype):
  """Index of the maximum along `axis` (first occurrence; a NaN counts as the maximum)."""
  index_dtype = dtypes.check_user_dtype(index_dtype, "argmax")
  return argmax_p.bind(asarray_operand(operand), axes=(operator.index(axis),),
                       index_dtype=index_dtype)


def argmin(operand, axis, index_dtype):
  """Index of the minimum along `axis` (first occurrence; a NaN counts as the minimum)."""
  index_dtype = dtypes.check_user_dtype(index_dtype, "argmin")
  return argmin_p.bind(asarray_operand(operand), axes=(operator.index(axis),),
                       index_dtype=index_dtype)


# ---- cumulative reductions --------------------------------------------------------------------
def _cumulative(name, body_for, identity):
  prim = core.Primitive(name)

  def abstract_eval(aval, *, axis, reverse):
    if axis < 0:
      raise ValueError("XLA operations do not allow negative axes")
    if axis >= aval.ndim:
      raise ValueError(f"axis {axis} is out of bounds for array of shape {aval.shape}")
    _number_check(name, aval)
    return aval

  def lowering(ctx, x, *, axis, reverse):
    aval = ctx.avals_in[0]
    n = aval.shape[axis]
    if n == 0:
      return [x]
    window = [1] * aval.ndim
    window[axis] = n
    pads = np.zeros((aval.ndim, 2), np.int64)
    pads[axis] = (0, n - 1) if reverse else (n - 1, 0)
    body = body_for(name, aval.dtype)
    op = hlo.ReduceWindowOp(
        [mlir.aval_to_ir_type(aval)], [x], [_scalar_const(identity(aval.dtype), aval.dtype)],
        mlir.dense_i64(window), window_strides=mlir.dense_i64([1] * aval.ndim),
        base_dilations=mlir.dense_i64([1] * aval.ndim),
        window_dilations=mlir.dense_i64([1] * aval.ndim),
        padding=ir.DenseIntElementsAttr.get(pads))
    mlir.make_reducer_region(op, aval.dtype, lambda acc, xs: [body(acc[0], xs[0])])
    return [op.result]

  prim.def_abstract_eval(abstract_eval)
  prim.def_lowering(lowering)
  return prim


def _logaddexp_body(name, dtype):
  if not dtypes.is_inexact(dtype):
    raise TypeError(f"{name} requires floating-point or complex inputs; got {np.dtype(dtype)}")
  return _logaddexp(dtype)


cumsum_p = _cumulative("cumsum", lambda n, dt: hlo.add, _zero)
cumprod_p = _cumulative("cumprod", lambda n, dt: hlo.multiply, _one)
cummax_p = _cumulative("cummax", lambda n, dt: _minmax("GT", dt), _max_identity)
cummin_p = _cumulative("cummin", lambda n, dt: _minmax("LT", dt), _min_identity)
cumlogsumexp_p = _cumulative("cumlogsumexp", _logaddexp_body,
                             lambda dt: np.asarray(-np.inf).astype(dt))


def _cumulative_batch(prim):
  def rule(args, dims, *, axis, reverse):
    (x,), (bd,) = args, dims
    return prim.bind(x, axis=axis if axis < bd else axis + 1, reverse=reverse), bd
  return rule


for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
  _p.def_batch(_cumulative_batch(_p))


ad.deflinear(cumsum_p, lambda ct, x, *, axis, reverse: [cumsum(ct, axis, not reverse)])


# -- the parallel prefix scan (lax.associative_scan's core), also used to differentiate the
# cumulative ops as JAX does
def _interleave(a, b, axis):
  """a[0], b[0], a[1], b[1], ... along `axis` (a is as long as b or one longer)."""
  aval_a, aval_b = core.get_aval(a), core.get_aval(b)
  same = aval_a.shape[axis] == aval_b.shape[axis]
  a_config = [(0, 0, 0)] * aval_a.ndim
  b_config = [(0, 0, 0)] * aval_b.ndim
  a_config[axis] = (0, 1 if same else 0, 1)
  b_config[axis] = (1, 0 if same else 1, 1)
  op = lax_api.bitwise_or if aval_a.dtype == np.bool_ else lax_api.add
  return op(so.pad(a, lax_api._const(a, 0), a_config), so.pad(b, lax_api._const(b, 0), b_config))


def associative_scan_flat(combine, elems, axis, reverse=False):
  """Inclusive scan of the list of arrays `elems` along `axis` with the associative
  `combine(list, list) -> list`: combine adjacent pairs, recurse on the half-size problem, then
  fill in the even positions (log depth)."""
  if reverse:
    elems = [so.rev(e, (axis,)) for e in elems]

  def sl(e, start, stop, stride=1):
    return so.slice_in_dim(e, start, stop, stride, axis)

  def scan(elems):
    n = core.get_aval(elems[0]).shape[axis]
    if n < 2:
      return elems
    # The scan of the pairs' combinations gives the results at odd positions.
    odd = scan(combine([sl(e, 0, -1, 2) for e in elems], [sl(e, 1, None, 2) for e in elems]))
    # Each even position (after the first) combines the odd result before it with its element.
    if n % 2 == 0:
      even = combine([sl(e, 0, -1) for e in odd], [sl(e, 2, None, 2) for e in elems])
    else:
      even = combine(odd, [sl(e, 2, None, 2) for e in elems])
    even = [so.concatenate([sl(e, 0, 1), r], axis) for e, r in zip(elems, even)]
    return [_interleave(a, b, axis) for a, b in zip(even, odd)]

  out = scan(list(elems))
  if reverse:
    out = [so.rev(e, (axis,)) for e in out]
  return out


def _scan_jvp(binary):
  def rule(primals, tangents, *, axis, reverse):
    def fun(x):
      return associative_scan_flat(lambda a, b: [binary(a[0], b[0])], [x], axis, reverse)
    outs, touts = ad.jvp_flat(fun, list(primals), list(tangents))
    return outs[0], touts[0]
  return rule


cumprod_p.def_jvp(_scan_jvp(lax_api.mul))
cummax_p.def_jvp(_scan_jvp(lax_api.max))
cummin_p.def_jvp(_scan_jvp(lax_api.min))


def _replace_inf(x):
  dt = core.get_aval(x).dtype
  re = lax_api.real(x) if dt.kind == "c" else x
  inf = lax_api.scalar_literal(np.inf, core.get_aval(re).dtype)
  return lax_api.select(lax_api.eq(re, inf), so._full_like(x, 0), x)


def _logaddexp_values(a, b):
  """log(exp(a) + exp(b)) without overflow (JAX's lax logaddexp)."""
  dt = core.get_aval(a).dtype
  amax = lax_api.max(a, b)
  if dt.kind != "c":
    delta = lax_api.sub(a, b)
    return lax_api.select(lax_api.ne(delta, delta), lax_api.add(a, b),
                          lax_api.add(amax, lax_api.log1p(lax_api.exp(lax_api.neg(
                              lax_api.abs(delta))))))
  delta = lax_api.sub(lax_api.add(a, b), lax_api.mul(amax, lax_api.scalar_literal(2, dt)))
  out = lax_api.add(amax, lax_api.log1p(lax_api.exp(delta)))
  im = lax_api.imag(out)
  part = core.get_aval(im).dtype
  pi, two_pi = lax_api.scalar_literal(np.pi, part), lax_api.scalar_literal(2 * np.pi, part)
  rem = lax_api.rem(lax_api.add(im, pi), two_pi)
  rem = lax_api.select(lax_api.lt(rem, lax_api.scalar_literal(0, part)),
                       lax_api.add(rem, two_pi), rem)
  return lax_api.complex(lax_api.real(out), lax_api.sub(rem, pi))


def _logaddexp_pair(a, b):
  """(logaddexp, its tangent) of (value, tangent) pairs, with JAX's derivative formula."""
  (x, tx), (y, ty) = a, b
  out = _logaddexp_values(x, y)
  r_out = _replace_inf(out)
  t = lax_api.add(lax_api.mul(tx, lax_api.exp(lax_api.sub(_replace_inf(x), r_out))),
                  lax_api.mul(ty, lax_api.exp(lax_api.sub(_replace_inf(y), r_out))))
  return [out, t]


def _cumlogsumexp_jvp(primals, tangents, *, axis, reverse):
  (x,), (t,) = primals, tangents
  out, t_out = associative_scan_flat(_logaddexp_pair, [x, ad.instantiate(t)], axis, reverse)
  return out, t_out


cumlogsumexp_p.def_jvp(_cumlogsumexp_jvp)


def _cumulative_fn(prim, what):
  def fn(operand, axis: int = 0, reverse: bool = False):
    return prim.bind(asarray_operand(operand), axis=int(axis), reverse=bool(reverse))
  fn.__name__ = prim.name
  fn.__doc__ = f"Cumulative {what} along `axis` (from the end if `reverse`)."
  return fn


cumsum = _cumulative_fn(cumsum_p, "sum")
cumprod = _cumulative_fn(cumprod_p, "product")
cummax = _cumulative_fn(cummax_p, "maximum")
cummin = _cumulative_fn(cummin_p, "minimum")
cumlogsumexp = _cumulative_fn(cumlogsumexp_p, "log-sum-exp")


# ---- the general reduce -----------------------------------------------------------------------
reduce_p = core.Primitive("reduce")
reduce_p.multiple_results = True


@reduce_p.def_abstract_eval
def _reduce_abstract_eval(*avals, computation, jaxpr, dimensions):
  operands, inits = avals[:len(avals) // 2], avals[len(avals) // 2:]
  if any(a.shape != () for a in inits):
    raise ValueError(f"reduce found non-scalar initial value: {[a.shape for a in inits]}")
  if [a.dtype for a in operands] != [a.dtype for a in inits]:
    raise TypeError("reduce operand dtypes should match corresponding initial value dtypes, "
                    f"got operands={list(operands)} and initial_values={list(inits)}")
  return [ShapedArray(_reduced_shape(op, dimensions), op.dtype, op.weak_type and init.weak_type)
          for op, init in zip(operands, inits)]


@reduce_p.def_lowering
def _reduce_lower(ctx, *args, computation, jaxpr, dimensions):
  n = len(args) // 2
  op = hlo.ReduceOp([mlir.aval_to_ir_type(a) for a in ctx.avals_out], list(args[:n]),
                    list(args[n:]), mlir.dense_i64(dimensions))
  scalar_types = [_scalar_type(a.dtype) for a in ctx.avals_in[n:]]
  block = op.regions[0].blocks.append(*(scalar_types + scalar_types))
  with ir.InsertionPoint(block):
    consts = [mlir.ir_constant(np.asarray(c)) for c in jaxpr.consts]
    outs = mlir.jaxpr_subcomp(ctx.module_context, jaxpr.jaxpr, consts, list(block.arguments))
    hlo.return_(outs)
  return list(op.results)


def _reduce_batch(args, dims, *, computation, jaxpr, dimensions):
  n = len(args) // 2
  if any(d is not None for d in dims[n:]):
    raise NotImplementedError(
        "vmap of lax.reduce with batched init_values is not implemented (as in JAX); pass "
        "init_values that do not depend on the mapped inputs.")
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  operands = [batching.bdim_at_front(x, d, size) for x, d in zip(args[:n], dims[:n])]
  outs = reduce_p.bind(*operands, *args[n:], computation=computation, jaxpr=jaxpr,
                       dimensions=tuple(d + 1 for d in dimensions))
  return outs, [0] * n


reduce_p.def_batch(_reduce_batch)


def _reduce_jvp(primals, tangents, *, computation, jaxpr, dimensions):
  n = len(primals) // 2
  if any(type(t) is not ad.Zero for t in tangents[n:]):
    raise NotImplementedError(
        "Gradient of general lax.reduce with non-zero tangents for initial values to "
        "reduction not implemented")
  ndim = core.get_aval(primals[0]).ndim - len(dimensions) + 1

  def reducer(*args):
    return core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)
  for _ in range(ndim):
    reducer = batching.vmap(reducer)
  return _reduce_tree_jvp(reducer, list(primals[n:]), list(primals[:n]), list(tangents[:n]),
                          dimensions)


reduce_p.def_jvp(_reduce_jvp)


def _monoid_reducer(computation, init_values):
  """The specific reduction primitive's wrapper if (computation, init) is a known monoid."""
  if len(init_values) != 1:
    return None
  val = utils.concrete_scalar(init_values[0])
  if val is None:
    return None
  dtype = core.get_aval(init_values[0]).dtype
  intlike = dtype == np.bool_ or utils.dtype_class(dtype) == utils.INT
  candidates = [
      (lax_api.add, True, _zero, reduce_sum),
      (lax_api.mul, True, _one, reduce_prod),
      (lax_api.bitwise_or, intlike, _zero, reduce_or),
      (lax_api.bitwise_and, intlike, _all_ones, reduce_and),
      (lax_api.bitwise_xor, intlike, _zero, reduce_xor),
      (lax_api.max, True, _max_identity, reduce_max),
      (lax_api.min, True, _min_identity, reduce_min),
  ]
  for fn, ok, identity, reducer in candidates:
    if computation is fn:
      return reducer if ok and bool(np.equal(val, identity(dtype))) else None
  return None


@functools.lru_cache(maxsize=256)
def _reduction_jaxpr(computation, init_avals, tree):

  def flat_comp(*flat):
    xs = tree_util.tree_unflatten(tree, flat[:len(init_avals)])
    ys = tree_util.tree_unflatten(tree, flat[len(init_avals):])
    out_flat, out_tree = tree_util.tree_flatten(computation(xs, ys))
    if out_tree != tree:
      raise TypeError(f"reduce computation must return the structure of its operands "
                      f"{tree}, got {out_tree}")
    return [asarray_operand(o) for o in out_flat]

  jaxpr, consts = tracing.trace_to_jaxpr(flat_comp, list(init_avals) * 2)
  if any(isinstance(c, core.Tracer) for c in consts):
    raise NotImplementedError("Reduction computations can't close over Tracers.")
  return core.ClosedJaxpr(jaxpr, consts)


def reduce(operands, init_values, computation, dimensions, out_sharding=None):
  """Reduce `operands` over `dimensions` with the monoid (`computation`, `init_values`)."""
  flat_ops, op_tree = tree_util.tree_flatten(operands)
  flat_inits, init_tree = tree_util.tree_flatten(init_values)
  if op_tree != init_tree:
    raise ValueError("Operands must have the same tree structure as init_values:"
                     f" {op_tree} vs. {init_tree}")
  if len(flat_ops) != len(flat_inits):
    raise ValueError("Must have same total number of operands as init_values: "
                     f" {len(flat_ops)} vs. {len(flat_inits)}")
  dimensions = _axes(dimensions)
  reducer = _monoid_reducer(computation, flat_inits)
  if reducer is not None:
    weak = core.get_aval(flat_ops[0]).weak_type and core.get_aval(flat_inits[0]).weak_type
    if out_sharding is not None:   # (as JAX: only sums take it; other reductions ignore it)
      if reducer is not reduce_sum:
        raise NotImplementedError
      out = reducer(flat_ops[0], dimensions, out_sharding=out_sharding)
    else:
      out = reducer(flat_ops[0], dimensions)
    return lax_api._convert_element_type(out, weak_type=weak)
  flat_ops = [asarray_operand(x) for x in flat_ops]
  flat_inits = [asarray_operand(x) for x in flat_inits]
  init_avals = tuple(core.get_aval(x) for x in flat_inits)
  closed = _reduction_jaxpr(computation, init_avals, init_tree)
  outs = reduce_p.bind(*flat_ops, *flat_inits, computation=computation, jaxpr=closed,
                       dimensions=dimensions)
  return tree_util.tree_unflatten(op_tree, outs)
