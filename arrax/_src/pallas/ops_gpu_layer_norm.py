"""Fused layer norm as Triton-style Pallas kernels (jax.experimental.pallas.ops.gpu.layer_norm):
a forward kernel per row of a rank-3 input (mean and variance accumulated over column
blocks), and a custom VJP made of a per-row dx kernel and a dw/db kernel reducing over rows
per column block. Off-GPU they run with `interpret=True`."""
from __future__ import annotations

import functools

from arrax._src import ad_api, batching, custom_derivatives, jit
from arrax._src.api import ShapeDtypeStruct
from arrax._src.lax import elementwise as lax
from arrax._src.lax.control_flow import loops
from arrax._src.numpy import creation, lax_numpy, reductions, ufuncs
from arrax._src.pallas import helpers, pallas_call, primitives, triton

_F32 = "float32"


def _row_block(x) -> int:
  """The column block of the per-row kernels: the row length rounded up to a power of two,
  kept within 64KB of `x`'s dtype and within [128, 4096]."""
  fused = 65536 // x.dtype.itemsize
  return min(max(min(fused, helpers.next_power_of_2(x.shape[-1])), 128), 4096)


def _warps(block_size: int) -> int:
  return min(max(block_size // 256, 1), 8)


def _columns(i, block_size, n):
  """Column indices of block `i` and the mask of those inside the row."""
  cols = i * block_size + creation.arange(block_size)
  return cols, cols < n


def _load_f32(ref, cols, mask, eviction_policy=None):
  return triton.load(ref.at[cols], mask=mask, other=0.0,
                     eviction_policy=eviction_policy).astype(_F32)


def layer_norm_forward_kernel(x_ref, weight_ref, bias_ref, o_ref, mean_ref=None, rstd_ref=None,
                              *, eps: float, block_size: int):
  """Normalizes the row `x_ref`: mean and variance in float32 over blocks of `block_size`
  columns, then `(x - mean) * rstd * weight + bias`; writes mean and rstd if given refs."""
  n = x_ref.shape[0]
  steps = helpers.cdiv(n, block_size)

  def add_x(i, acc):
    cols, mask = _columns(i, block_size, n)
    return acc + _load_f32(x_ref, cols, mask, "evict_last")

  mean = loops.fori_loop(0, steps, add_x, creation.zeros(block_size)).sum() / n

  def add_sq(i, acc):
    cols, mask = _columns(i, block_size, n)
    centred = lax_numpy.where(mask, _load_f32(x_ref, cols, mask, "evict_last") - mean, 0.)
    return acc + centred * centred

  var = loops.fori_loop(0, steps, add_sq, creation.zeros(block_size)).sum() / n
  rstd = 1 / ufuncs.sqrt(var + eps)
  if mean_ref is not None:
    mean_ref[...] = mean.astype(mean_ref.dtype)
  if rstd_ref is not None:
    rstd_ref[...] = rstd.astype(rstd_ref.dtype)

  @helpers.loop(0, steps)
  def _(i):
    cols, mask = _columns(i, block_size, n)
    w = triton.load(weight_ref.at[cols], mask=mask)
    b = triton.load(bias_ref.at[cols], mask=mask)
    x = _load_f32(x_ref, cols, mask, "evict_first")
    triton.store(o_ref.at[cols], ((x - mean) * rstd * w + b).astype(o_ref.dtype), mask=mask)


def _per_row(kernel, out_shape, num_warps, interpret, name=None, num_stages=None):
  return pallas_call.pallas_call(
      kernel, out_shape=out_shape, grid=(),
      compiler_params=triton.CompilerParams(num_warps=num_warps, num_stages=num_stages),
      debug=False, interpret=interpret, name=name)


def _forward_rows(kernel, x, weight, bias, eps, interpret, num_stats=0, name=None,
                  num_stages=None):
  """The per-row forward `kernel` over the two leading axes of x (weight and bias shared):
  the output rows, followed by `num_stats` per-row statistics if any."""
  block_size = _row_block(x)
  out_shape = ShapeDtypeStruct((x.shape[-1],), x.dtype)
  if num_stats:
    out_shape = [out_shape, *[ShapeDtypeStruct((), x.dtype)] * num_stats]
  call = _per_row(functools.partial(kernel, eps=eps, block_size=block_size), out_shape,
                  _warps(block_size), interpret, name, num_stages)
  return batching.vmap(batching.vmap(call, in_axes=(0, None, None)),
                       in_axes=(0, None, None))(x, weight, bias)


def layer_norm_forward(x, weight, bias, num_warps: int | None = None,
                       num_stages: int | None = 3, eps: float = 1e-5,
                       backward_pass_impl: str = "triton", interpret: bool = False):
  """The forward pass of `layer_norm`'s VJP: (output, residuals (x, weight, bias, mean,
  rstd))."""
  out, mean, rstd = _forward_rows(layer_norm_forward_kernel, x, weight, bias, eps, interpret,
                                  num_stats=2, name="ln_forward")
  return out, (x, weight, bias, mean, rstd)


def layer_norm_backward_kernel_dx(x_ref, weight_ref, bias_ref, do_ref, mean_ref, rstd_ref,
                                  dx_ref, *, eps: float, block_size: int):
  """dx of one row: `(w * do - (x_hat * mean(x_hat * w * do) + mean(w * do))) * rstd`."""
  n = x_ref.shape[0]
  steps = helpers.cdiv(n, block_size)

  def terms(i):
    cols, mask = _columns(i, block_size, n)
    x_hat = (_load_f32(x_ref, cols, mask, "evict_last") - mean_ref[...]) * rstd_ref[...]
    wdo = (_load_f32(weight_ref, cols, mask, "evict_last")
           * _load_f32(do_ref, cols, mask, "evict_last"))
    return cols, mask, x_hat, wdo

  def accumulate(i, acc):
    _, _, x_hat, wdo = terms(i)
    return acc[0] + x_hat * wdo, acc[1] + wdo

  zeros = creation.zeros(block_size)
  c1, c2 = loops.fori_loop(0, steps, accumulate, (zeros, zeros))
  c1, c2 = c1.sum() / n, c2.sum() / n

  @helpers.loop(0, steps)
  def _(i):
    cols, mask, x_hat, wdo = terms(i)
    dx = (wdo - (x_hat * c1 + c2)) * rstd_ref[...]
    triton.store(dx_ref.at[cols], dx.astype(dx_ref.dtype), mask=mask)


def layer_norm_backward_kernel_dw_db(x_ref, weight_ref, bias_ref, do_ref, mean_ref, rstd_ref,
                                     dw_ref, db_ref, *, eps: float, block_m: int, block_n: int):
  """dw and db of the column block `program_id(0)`: sums over blocks of `block_m` rows."""
  m, n = x_ref.shape
  cols, col_mask = _columns(primitives.program_id(0), block_n, n)

  def accumulate(i, acc):
    rows, row_mask = _columns(i, block_m, m)
    mask = row_mask[:, None] & col_mask[None, :]
    at = (rows[:, None], cols[None])
    x = triton.load(x_ref.at[at], mask=mask, other=0.0).astype(_F32)
    do = triton.load(do_ref.at[at], mask=mask, other=0.0).astype(_F32)
    mean = _load_f32(mean_ref, rows, row_mask)
    rstd = _load_f32(rstd_ref, rows, row_mask)
    x_hat = (x - mean[:, None]) * rstd[:, None]
    return acc[0] + (do * x_hat).sum(axis=0), acc[1] + do.sum(axis=0)

  zeros = creation.zeros(block_n)
  dw, db = loops.fori_loop(0, helpers.cdiv(m, block_m), accumulate, (zeros, zeros))
  triton.store(dw_ref.at[cols], dw.astype(dw_ref.dtype), mask=col_mask)
  triton.store(db_ref.at[cols], db.astype(db_ref.dtype), mask=col_mask)


def layer_norm_backward(num_warps: int | None, num_stages: int | None, eps: float,
                        backward_pass_impl: str, interpret: bool, res, do):
  """The backward pass of `layer_norm`'s VJP: (dx, dweight, dbias), by the kernels or (with
  `backward_pass_impl='xla'`) by differentiating `layer_norm_reference`."""
  x, weight, bias, mean, rstd = res
  if backward_pass_impl == "xla":
    return ad_api.vjp(layer_norm_reference, x, weight, bias)[1](do)
  return _backward_kernels(layer_norm_backward_kernel_dx, layer_norm_backward_kernel_dw_db,
                           eps, interpret, x, weight, bias, do, (mean, rstd))


def _backward_kernels(dx_kernel, dw_db_kernel, eps, interpret, x, weight, bias, do, stats):
  """(dx, dweight, dbias) by the per-row `dx_kernel` and the column-block `dw_db_kernel`,
  given the per-row statistics `stats` of the forward pass."""
  n = x.shape[-1]
  x2, do2 = x.reshape((-1, n)), do.reshape((-1, n))
  stats = [s.reshape((-1,)) for s in stats]
  block_size = _row_block(x)
  dx_call = _per_row(functools.partial(dx_kernel, eps=eps, block_size=block_size),
                     ShapeDtypeStruct((n,), x.dtype), _warps(block_size), interpret,
                     "ln_backward_dx")
  dx = batching.vmap(dx_call, in_axes=(0, None, None, 0, *[0] * len(stats)))(
      x2, weight, bias, do2, *stats)
  block_m, block_n, warps = (32, 128, 4) if n > 10240 else (16, 16, 8)
  dw, db = pallas_call.pallas_call(
      functools.partial(dw_db_kernel, eps=eps, block_m=block_m, block_n=block_n),
      out_shape=[ShapeDtypeStruct(weight.shape, weight.dtype),
                 ShapeDtypeStruct(bias.shape, bias.dtype)],
      grid=(helpers.cdiv(n, block_n),), compiler_params=triton.CompilerParams(num_warps=warps),
      debug=False, interpret=interpret, name="ln_backward_dw_db",
  )(x2, weight, bias, do2, *stats)
  return dx.reshape(x.shape), dw, db


@functools.partial(custom_derivatives.custom_vjp, nondiff_argnums=(3, 4, 5, 6, 7))
@functools.partial(jit.jit, static_argnames=["num_warps", "num_stages", "eps",
                                             "backward_pass_impl", "interpret"])
def layer_norm(x, weight, bias, num_warps: int | None = None, num_stages: int | None = 3,
               eps: float = 1e-5, backward_pass_impl: str = "triton", interpret: bool = False):
  """Layer norm of `x` [a, b, n] over its last axis, scaled by `weight` [n] and shifted by
  `bias` [n], one kernel per row."""
  return _forward_rows(layer_norm_forward_kernel, x, weight, bias, eps, interpret,
                       num_stages=num_stages)


layer_norm.defvjp(layer_norm_forward, layer_norm_backward)


@functools.partial(jit.jit, static_argnames=["eps"])
@functools.partial(batching.vmap, in_axes=(0, None, None))
def layer_norm_reference(x, weight, bias, *, eps: float = 1e-5):
  """Layer norm in plain arrax operations (x [a, b, n]; variance as E[x^2] - E[x]^2).
  Mapped over the leading axis, `eps` included: only the default works, as in JAX."""
  mean = reductions.mean(x, axis=1)
  var = ufuncs.maximum(0., reductions.mean(ufuncs.square(x), axis=1) - ufuncs.square(mean))
  return (x - mean[:, None]) * lax.rsqrt(var + eps)[:, None] * weight[None] + bias[None]
