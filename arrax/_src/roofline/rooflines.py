"""The roofline rules of arrax's primitives (JAX 0.10.2's cost model).

Every primitive of the lax families (except the collectives), of remat, callbacks, PRNG and
shard_map costs nothing unless a rule below says otherwise: elementwise ops cost one flop per
(broadcast) element and read/write their operands; dot_general and convolutions count 2 flops
per multiply-add; gather/scatter count index checks and their update function; collectives
model ring / all-to-all / permute traffic on the mesh (ICI bytes and latency per axis).
"""
import collections
import importlib
import itertools
import pkgutil
from dataclasses import replace

import numpy as np

from arrax._src import ad, api, callback, checkpoint, core, debugging, prng, random, shard_map
from arrax._src import lax as _lax_pkg
from arrax._src.lax import convolution, dot, elementwise as ew, parallel, reductions, slicing
from arrax._src.lax import special
from arrax._src.roofline.roofline import (RooflineResult, RooflineShape, register_roofline,
                                          register_standard_roofline, roofline)

_FMA_FLOPS = 2   # a multiply-add is two flops


def _lax_modules():
  for info in pkgutil.walk_packages(_lax_pkg.__path__, _lax_pkg.__name__ + "."):
    if info.name != parallel.__name__:   # (JAX gives the collectives no default rule)
      yield importlib.import_module(info.name)


for _mod in itertools.chain(_lax_modules(), [ad, callback, checkpoint, prng, random, shard_map]):
  for _v in list(vars(_mod).values()):
    if isinstance(_v, core.Primitive):
      register_standard_roofline(_v)
register_standard_roofline(parallel.pvary_p)


def _shapes(avals):
  return [RooflineShape.from_aval(a) for a in avals]


def _unary(ctx, *args, **kw):
  (x,), (out,) = _shapes(ctx.avals_in), _shapes(ctx.avals_out)
  return RooflineResult(unfused_flops=x.size, unfused_hbm_bytes=x.bytes + out.bytes)


for _name in ["abs", "acos", "asin", "atan", "cbrt", "ceil", "conj", "cos", "cosh", "exp",
              "expm1", "floor", "imag", "integer_pow", "is_finite", "log", "log1p", "logistic",
              "neg", "not", "real", "round", "rsqrt", "sign", "sin", "sinh", "sqrt", "square",
              "tan"]:
  register_roofline(getattr(ew, f"{_name}_p"))(_unary)
for _name in ["bessel_i0e", "bessel_i1e", "digamma", "erf_inv", "erf", "erfc", "lgamma"]:
  register_roofline(getattr(special, f"{_name}_p", None) or getattr(ew, f"{_name}_p"))(_unary)


def _binary(ctx, *args, **kw):
  lhs, rhs = _shapes(ctx.avals_in)
  (out,) = _shapes(ctx.avals_out)
  # (shapes aligned from the left, as JAX's rule does; lax operands have equal ranks or are
  # scalars)
  flops = int(np.prod([max(a, b) for a, b in itertools.zip_longest(lhs.shape, rhs.shape,
                                                                     fillvalue=1)]))
  return RooflineResult(unfused_flops=flops,
                        unfused_hbm_bytes=lhs.bytes + rhs.bytes + out.bytes)


for _name in ["add", "sub", "mul", "div", "rem", "and", "or", "xor", "gt", "lt", "ge", "le",
              "eq", "ne", "min", "max"]:
  register_roofline(getattr(ew, f"{_name}_p"))(_binary)


def _cumulative(flops_per_step):
  def rule(ctx, *args, axis, **kw):
    (x,), (out,) = _shapes(ctx.avals_in), _shapes(ctx.avals_out)
    return RooflineResult(unfused_flops=x.shape[axis] * flops_per_step,
                          unfused_hbm_bytes=x.bytes + out.bytes)
  return rule


for _p in [reductions.cummax_p, reductions.cummin_p, reductions.cumprod_p, reductions.cumsum_p]:
  register_roofline(_p)(_cumulative(1))
# (one exp and one add per step: 2 flops)
register_roofline(reductions.cumlogsumexp_p)(_cumulative(2))


@register_roofline(dot.dot_general_p)
def _dot_general(ctx, *args, dimension_numbers, **kw):
  lhs, rhs = _shapes(ctx.avals_in)
  (out,) = _shapes(ctx.avals_out)
  (contract, _), (batch, _) = dimension_numbers
  flops = (_FMA_FLOPS * lhs.size * rhs.size / np.prod([lhs.shape[i] for i in contract])
           / np.prod([lhs.shape[i] for i in batch]))
  hbm = 0 if ctx.pin_lhs_in_vmem else lhs.bytes + out.bytes
  hbm += 0 if ctx.pin_rhs_in_vmem else rhs.bytes
  return RooflineResult(flops=int(flops), unfused_flops=int(flops), hbm_bytes=hbm,
                        unfused_hbm_bytes=hbm)


def _valid_positions_1d(stride, base_dilation, window_dilation, kernel, inp, out, padding):
  """How many (kernel position, output position) pairs of one spatial dimension read an input
  element (not padding, not a hole of the base dilation)."""
  lo, hi = padding
  # Two patterns with N valid positions out of N^2, counted directly.
  if (inp == out == kernel == base_dilation and window_dilation == 1
      and stride == max(1, inp - 1) and lo == hi == 0):
    return inp
  if (inp == 1 and kernel == out and window_dilation == base_dilation == stride == 1
      and lo == hi == out - 1):
    return out
  count = 0
  for k in range(kernel):
    if stride == 1 and base_dilation == 1:
      first = lo - k * window_dilation
      count += max(min(inp + first, out) - max(0, first), 0)
      continue
    for o in range(out):
      pos = o * stride - lo + k * window_dilation
      src = int(pos / base_dilation)
      if pos == src * base_dilation and 0 <= src < inp:
        count += 1
  return count


def _conv_flops(lhs, rhs, out, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, batch_group_count):
  dn = convolution.conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
  positions = 1
  for d, (li, ri, oi) in enumerate(zip(dn.lhs_spec[2:], dn.rhs_spec[2:], dn.out_spec[2:])):
    positions *= _valid_positions_1d(window_strides[d], lhs_dilation[d], rhs_dilation[d],
                                     rhs.shape[ri], lhs.shape[li], out.shape[oi], padding[d])
  per_position = (rhs.shape[dn.rhs_spec[1]] * out.shape[dn.out_spec[1]]
                  * (lhs.shape[dn.lhs_spec[0]] / batch_group_count))
  return int(per_position * positions * _FMA_FLOPS)


@register_roofline(convolution.conv_general_dilated_p)
def _conv_general_dilated(ctx, *args, window_strides, padding, lhs_dilation, rhs_dilation,
                          dimension_numbers, batch_group_count, **kw):
  lhs, rhs = _shapes(ctx.avals_in)
  (out,) = _shapes(ctx.avals_out)
  flops = _conv_flops(lhs, rhs, out, window_strides, padding, lhs_dilation, rhs_dilation,
                      dimension_numbers, batch_group_count)
  return RooflineResult(unfused_flops=flops,
                        unfused_hbm_bytes=lhs.bytes + rhs.bytes + out.bytes)


def _trivial_axes(ctx, axes):
  """The zero result when the axes span a single device, else None."""
  if np.prod([ctx.mesh.shape[a] for a in axes]) > 1:
    return None
  return RooflineResult(ici_bytes={a: 0 for a in axes}, ici_latency={a: 0 for a in axes})


def _ring_collective(ctx, *args, axes, is_reduce=True, **kw):
  if (zero := _trivial_axes(ctx, axes)) is not None:
    return zero
  sizes = ctx.mesh.shape
  shard = RooflineShape.total_bytes(ctx.avals_in)
  if is_reduce:
    shard /= np.prod([sizes[a] for a in axes])
  order = sorted(axes, key=lambda a: sizes[a], reverse=True)   # the longest axis first
  shard //= len(order)
  nbytes = 0
  for a in order:
    nbytes += shard * (sizes[a] - 1)
    shard *= sizes[a]
  latency = sizes[order[0]] * len(order)
  return RooflineResult(ici_bytes={a: int(nbytes) for a in order},
                        ici_latency={a: int(latency) for a in order})


register_roofline(parallel.reduce_scatter_p)(
    lambda *args, axis_name, **kw: _ring_collective(*args, axes=axis_name, **kw))
register_roofline(parallel.all_gather_p)(
    lambda *args, axis_name, **kw: _ring_collective(*args, axes=axis_name, is_reduce=False,
                                                    **kw))


def _gather_flops(mode, indices_size, output_size):
  if mode == slicing.GatherScatterMode.FILL_OR_DROP:
    # 4 elementwise checks per index (above lower bound, below upper, and, reduce) and one
    # select per output element.
    return indices_size * 4 + output_size
  return 0


@register_roofline(slicing.gather_p)
def _gather(ctx, *args, mode, **kw):
  _, indices = _shapes(ctx.avals_in)
  (out,) = _shapes(ctx.avals_out)
  return RooflineResult(unfused_flops=_gather_flops(mode, indices.size, out.size),
                        unfused_hbm_bytes=out.bytes * 2 + indices.bytes)


def _scatter(ctx, *args, **kw):
  _, indices, updates = _shapes(ctx.avals_in)
  update_jaxpr = kw.get("update_jaxpr")
  flops = 0
  if update_jaxpr:
    # The update function's flops on scalars, once per update element.
    fn = lambda *xs: core.eval_jaxpr(update_jaxpr, [], *xs)   # noqa: E731
    scalars = [api.ShapeDtypeStruct((), updates.dtype) for _ in update_jaxpr.invars]
    flops = roofline(fn)(*scalars)[1].unfused_flops * updates.size
  return RooflineResult(unfused_flops=flops,
                        unfused_hbm_bytes=3 * updates.bytes + indices.bytes)


for _p in [slicing.scatter_add_p, slicing.scatter_max_p, slicing.scatter_min_p,
           slicing.scatter_mul_p, slicing.scatter_sub_p, slicing.scatter_p]:
  register_roofline(_p)(_scatter)


def _scalar_collective(ctx, *args, axes, **kw):
  ctx = replace(ctx, avals_in=[core.ShapedArray((1,), s.dtype) for s in _shapes(ctx.avals_in)])
  return _ring_collective(ctx, *args, axes=axes, is_reduce=False, **kw)


register_roofline(parallel.pmin_p)(_scalar_collective)
register_roofline(parallel.pmax_p)(_scalar_collective)


@register_roofline(parallel.psum_invariant_p)
def _psum_invariant(ctx, *args, axes, **kw):
  ring = _ring_collective(ctx, *args, axes=axes, **kw)
  return RooflineResult(ici_bytes={k: 2 * v for k, v in ring.ici_bytes.items()},
                        ici_latency={k: 2 * v for k, v in ring.ici_latency.items()})


@register_roofline(parallel.all_to_all_p)
def _all_to_all(ctx, *args, axis_name, **kw):
  if (zero := _trivial_axes(ctx, axis_name)) is not None:
    return zero
  sizes = ctx.mesh.shape
  total = RooflineShape.total_bytes(ctx.avals_in) * np.prod([sizes[a] for a in axis_name])
  smallest = min(sizes[a] for a in axis_name)
  bisection = smallest ** (len(axis_name) - 1) * (2 if smallest > 2 else 1)  # (wraparound)
  nbytes = total / 2 / bisection      # half the data crosses the bisection
  latency = sum(sizes[a] / 2 for a in axis_name)
  return RooflineResult(ici_bytes={a: int(nbytes) for a in axis_name},
                        ici_latency={a: int(latency) for a in axis_name})


@register_roofline(parallel.ppermute_p)
def _ppermute(ctx, *args, axis_name, perm, **kw):
  if (zero := _trivial_axes(ctx, axis_name)) is not None:
    return zero
  dims = [ctx.mesh.shape.get(a, 1) for a in axis_name]
  shard = RooflineShape.total_bytes(ctx.avals_in)
  link_load = collections.defaultdict(float)
  latency = 0
  for src, dst in perm:
    if src == dst:
      continue
    a = tuple(int(i) for i in np.unravel_index(src, dims))
    b = tuple(int(i) for i in np.unravel_index(dst, dims))
    hops = 0
    for i, n in enumerate(dims):
      if a[i] == b[i]:
        continue
      fwd, back = (b[i] - a[i]) % n, (a[i] - b[i]) % n
      step = 1 if fwd <= back else -1
      pos = a[i]
      while pos != b[i]:      # walk the ring (wrapping), loading each link once
        here = a[:i] + (pos,) + a[i + 1:]
        pos = (pos + step) % n
        there = a[:i] + (pos,) + a[i + 1:]
        link_load[tuple(sorted([here, there]))] += 1
      hops += min(fwd, back)
    latency = max(latency, hops)
  nbytes = shard * max(link_load.values(), default=0)
  return RooflineResult(ici_bytes={a: int(nbytes) for a in axis_name},
                        ici_latency={a: int(latency) for a in axis_name})


@register_roofline(reductions.reduce_sum_p)
def _reduce_sum(ctx, *args, axes, **kw):
  (x,) = _shapes(ctx.avals_in)
  reduced = np.prod([x.shape[i] for i in axes])
  kept = np.prod([x.shape[i] for i in set(range(len(x.shape))) - set(axes)])
  # n - 1 adds per result element; the result doubles as the accumulator.
  return RooflineResult(unfused_flops=int((reduced - 1) * kept),
                        unfused_hbm_bytes=int(x.dtype.itemsize * (x.size + kept)))


@register_roofline(ew.select_n_p)
def _select_n(ctx, *args, **kw):
  x = _shapes(ctx.avals_in)[0]
  (out,) = _shapes(ctx.avals_out)
  return RooflineResult(unfused_flops=out.size, unfused_hbm_bytes=x.bytes + out.bytes)


@register_roofline(callback.pure_callback_p)
@register_roofline(callback.io_callback_p)
def _callback_with_results(ctx, *args, **kw):
  # (the host function's flops are unknown: 0)
  return RooflineResult(unfused_hbm_bytes=RooflineShape.total_bytes(ctx.avals_in)
                        + RooflineShape.total_bytes(ctx.avals_out))


@register_roofline(debugging.debug_callback_p)
def _debug_callback(ctx, *args, **kw):
  return RooflineResult(unfused_hbm_bytes=RooflineShape.total_bytes(ctx.avals_in))
