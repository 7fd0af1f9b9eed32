"""Fused RMS norm as Triton-style Pallas kernels (jax.experimental.pallas.ops.gpu.rms_norm):
`x * rsqrt(mean(x^2) + eps) * weight + bias` per row of a rank-3 input, with a custom VJP
made of a per-row dx kernel and a dw/db kernel reducing over rows per column block. Off-GPU
they run with `interpret=True`."""
from __future__ import annotations

import functools

from arrax._src import ad_api, batching, custom_derivatives, jit
from arrax._src.lax import elementwise as lax
from arrax._src.lax.control_flow import loops
from arrax._src.numpy import creation, lax_numpy, reductions, ufuncs
from arrax._src.pallas import helpers, primitives, triton
from arrax._src.pallas.ops_gpu_layer_norm import (_F32, _backward_kernels, _columns,
                                                  _forward_rows, _load_f32)


def rms_norm_forward_kernel(x_ref, weight_ref, bias_ref, o_ref, rstd_ref=None, *, eps: float,
                            block_size: int):
  """Normalizes the row `x_ref`: its mean square in float32 over blocks of `block_size`
  columns, then `x * rstd * weight + bias`; writes rstd if given a ref."""
  n = x_ref.shape[0]
  steps = helpers.cdiv(n, block_size)

  def add_sq(i, acc):
    cols, mask = _columns(i, block_size, n)
    x = lax_numpy.where(mask, _load_f32(x_ref, cols, mask, "evict_last"), 0.)
    return acc + x * x

  var = loops.fori_loop(0, steps, add_sq, creation.zeros(block_size)).sum() / n
  rstd = 1 / ufuncs.sqrt(var + eps)
  if rstd_ref is not None:
    rstd_ref[...] = rstd.astype(rstd_ref.dtype)

  @helpers.loop(0, steps)
  def _(i):
    cols, mask = _columns(i, block_size, n)
    w = triton.load(weight_ref.at[cols], mask=mask)
    b = triton.load(bias_ref.at[cols], mask=mask)
    x = _load_f32(x_ref, cols, mask, "evict_first")
    triton.store(o_ref.at[cols], (x * rstd * w + b).astype(o_ref.dtype), mask=mask)


def rms_norm_forward(x, weight, bias, num_warps: int | None = None,
                     num_stages: int | None = 3, eps: float = 1e-5,
                     backward_pass_impl: str = "triton", interpret: bool = False):
  """The forward pass of `rms_norm`'s VJP: (output, residuals (x, weight, bias, rstd))."""
  out, rstd = _forward_rows(rms_norm_forward_kernel, x, weight, bias, eps, interpret,
                            num_stats=1, name="rms_forward")
  return out, (x, weight, bias, rstd)


def rms_norm_backward_kernel_dx(x_ref, weight_ref, bias_ref, do_ref, rstd_ref, dx_ref, *,
                                eps: float, block_size: int):
  """dx of one row: `(w * do - x_hat * mean(x_hat * w * do)) * rstd`."""
  n = x_ref.shape[0]
  steps = helpers.cdiv(n, block_size)

  def terms(i):
    cols, mask = _columns(i, block_size, n)
    x_hat = _load_f32(x_ref, cols, mask, "evict_last") * rstd_ref[...]
    wdo = (_load_f32(weight_ref, cols, mask, "evict_last")
           * _load_f32(do_ref, cols, mask, "evict_last"))
    return cols, mask, x_hat, wdo

  def accumulate(i, acc):
    _, _, x_hat, wdo = terms(i)
    return acc + x_hat * wdo

  c1 = loops.fori_loop(0, steps, accumulate, creation.zeros(block_size)).sum() / n

  @helpers.loop(0, steps)
  def _(i):
    cols, mask, x_hat, wdo = terms(i)
    triton.store(dx_ref.at[cols], ((wdo - x_hat * c1) * rstd_ref[...]).astype(dx_ref.dtype),
                 mask=mask)


def rms_norm_backward_kernel_dw_db(x_ref, weight_ref, bias_ref, do_ref, rstd_ref, dw_ref,
                                   db_ref, *, eps: float, block_m: int, block_n: int):
  """dw and db of the column block `program_id(0)`: sums over blocks of `block_m` rows."""
  m, n = x_ref.shape
  cols, col_mask = _columns(primitives.program_id(0), block_n, n)

  def accumulate(i, acc):
    rows, row_mask = _columns(i, block_m, m)
    mask = row_mask[:, None] & col_mask[None, :]
    at = (rows[:, None], cols[None])
    x = triton.load(x_ref.at[at], mask=mask, other=0.0).astype(_F32)
    do = triton.load(do_ref.at[at], mask=mask, other=0.0).astype(_F32)
    x_hat = x * _load_f32(rstd_ref, rows, row_mask)[:, None]
    return acc[0] + (do * x_hat).sum(axis=0), acc[1] + do.sum(axis=0)

  zeros = creation.zeros(block_n)
  dw, db = loops.fori_loop(0, helpers.cdiv(m, block_m), accumulate, (zeros, zeros))
  triton.store(dw_ref.at[cols], dw.astype(dw_ref.dtype), mask=col_mask)
  triton.store(db_ref.at[cols], db.astype(db_ref.dtype), mask=col_mask)


def rms_norm_backward(num_warps: int | None, num_stages: int | None, eps: float,
                      backward_pass_impl: str, interpret: bool, res, do):
  """The backward pass of `rms_norm`'s VJP: (dx, dweight, dbias), by the kernels or (with
  `backward_pass_impl='xla'`) by differentiating `rms_norm_reference`."""
  x, weight, bias, rstd = res
  if backward_pass_impl == "xla":
    return ad_api.vjp(rms_norm_reference, x, weight, bias)[1](do)
  return _backward_kernels(rms_norm_backward_kernel_dx, rms_norm_backward_kernel_dw_db, eps,
                           interpret, x, weight, bias, do, (rstd,))


@functools.partial(custom_derivatives.custom_vjp, nondiff_argnums=(3, 4, 5, 6, 7))
@functools.partial(jit.jit, static_argnames=["num_warps", "num_stages", "eps",
                                             "backward_pass_impl", "interpret"])
def rms_norm(x, weight, bias, num_warps: int | None = None, num_stages: int | None = 3,
             eps: float = 1e-5, backward_pass_impl: str = "triton", interpret: bool = False):
  """RMS norm of `x` [a, b, n] over its last axis, scaled by `weight` [n] and shifted by
  `bias` [n], one kernel per row."""
  return _forward_rows(rms_norm_forward_kernel, x, weight, bias, eps, interpret,
                       num_stages=num_stages)


rms_norm.defvjp(rms_norm_forward, rms_norm_backward)


@functools.partial(jit.jit, static_argnames=["eps"])
@functools.partial(batching.vmap, in_axes=(0, None, None))
def rms_norm_reference(x, weight, bias, *, eps: float = 1e-5):
  """RMS norm in plain arrax operations (x [a, b, n]). Mapped over the leading axis, `eps`
  included: only the default works, as in JAX."""
  rstd = lax.rsqrt(reductions.mean(ufuncs.square(x), axis=1) + eps)
  return x * rstd[:, None] * weight[None] + bias[None]
