"""`scaled_dot`: (lhs * lhs_scale) . (rhs * rhs_scale), the scales given per block of the
contracting dimensions (microscaling formats).

A scale has the rank of its operand, the operand's sizes along non-contracting axes and, along
each contracting axis, a size dividing the operand's (each scale entry covering at least two
elements). Missing scales are ones (float8_e8m0fnu, as JAX makes them). The `scaled_dot`
primitive lowers, as JAX's does off accelerators, to the scales repeated over their blocks,
bfloat16 products and a `dot_general` accumulating in `preferred_element_type` (bfloat16 by
default). It has no derivative (as in JAX); it batches by adding a leading batch dimension.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from arrax._src import batching, core, dtypes
from arrax._src.core import ShapedArray
from arrax._src.lax import broadcasting, creation
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import elementwise as lax
from arrax._src.lax.control_flow import common
from arrax._src.lax.utils import asarray_operand

__all__ = ["scaled_dot"]

scaled_dot_p = core.Primitive("scaled_dot")


def _check_scale(side, operand, scale, contracting):
  for i, size in enumerate(operand.shape):
    if i in contracting:
      if size % scale.shape[i] != 0:
        raise TypeError(f"{side} contracting dim {i} of size {size} must be divisible by its "
                        f"scale's dim size {scale.shape[i]}.")
      block = size // scale.shape[i]
      if block < 2:
        raise TypeError(f"The ratio of {side} contracting dim {i} to its scale's dim size "
                        f"({block}) must be at least 2.")
    elif scale.shape[i] != size:
      raise TypeError(f"{side} dim {i} of size {size} does not match scale dim size "
                      f"{scale.shape[i]}.")


@scaled_dot_p.def_abstract_eval
def _scaled_dot_abstract_eval(lhs, rhs, lhs_scale, rhs_scale, *, dimension_numbers,
                              preferred_element_type=None):
  (lc, rc), (lb, rb) = dimension_numbers
  ranks = [lhs.ndim, rhs.ndim, lhs_scale.ndim, rhs_scale.ndim]
  if max(ranks) != min(ranks):
    raise TypeError(f"All input tensors must have the same rank. Got lhs rank: {lhs.ndim} rhs "
                    f"rank: {rhs.ndim} lhs_scale rank: {lhs_scale.ndim} rhs_scale rank: "
                    f"{rhs_scale.ndim}.")
  if len(lb) != len(rb):
    raise TypeError(f"LHS and RHS must have the same number of batch dimensions, got "
                    f"{len(lb)} and {len(rb)}.")
  if len(lc) != len(rc):
    raise TypeError(f"LHS and RHS must have the same number of contracting dimensions, got "
                    f"{len(lc)} and {len(rc)}.")
  for i, j in zip(lb, rb):
    sizes = {lhs.shape[i], rhs.shape[j], lhs_scale.shape[i], rhs_scale.shape[j]}
    if len(sizes) != 1:
      raise TypeError(f"All input tensors must have the same batch dimension size for batch "
                      f"dims ({i}, {j}).")
  for i, j in zip(lc, rc):
    if lhs.shape[i] != rhs.shape[j]:
      raise TypeError(f"LHS contracting dim {i} of size {lhs.shape[i]} does not match RHS "
                      f"contracting dim {j} of size {rhs.shape[j]}.")
  _check_scale("LHS", lhs, lhs_scale, lc)
  _check_scale("RHS", rhs, rhs_scale, rc)
  lhs_kept = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
  rhs_kept = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
  shape = tuple([lhs.shape[i] for i in lb] + [lhs.shape[i] for i in lhs_kept]
                + [rhs.shape[i] for i in rhs_kept])
  dt = dtypes.bfloat16 if preferred_element_type is None else preferred_element_type
  return ShapedArray(shape, dt)


def _repeat_blocks(scale, operand_shape, contracting):
  """`scale` with each entry repeated over its block along the contracting axes."""
  for i in contracting:
    shape = core.get_aval(scale).shape
    if shape[i] == operand_shape[i]:
      continue
    block = operand_shape[i] // shape[i]
    spread = shape[:i + 1] + (block,) + shape[i + 1:]
    dims = tuple(d for d in range(len(spread)) if d != i + 1)
    scale = broadcasting.broadcast_in_dim(scale, spread, dims)
    scale = broadcasting.reshape(scale, shape[:i] + (shape[i] * block,) + shape[i + 1:])
  return scale


def _scaled_dot_dense(lhs, rhs, lhs_scale, rhs_scale, *, dimension_numbers,
                      preferred_element_type=None):
  (lc, rc), _ = dimension_numbers
  bf16 = dtypes.bfloat16
  operands = []
  for x, scale, contracting in ((lhs, lhs_scale, lc), (rhs, rhs_scale, rc)):
    scale = _repeat_blocks(scale, core.get_aval(x).shape, contracting)
    operands.append(lax.mul(lax.convert_element_type(x, bf16),
                            lax.convert_element_type(scale, bf16)))
  return lax_dot.dot_general(*operands, dimension_numbers,
                             preferred_element_type=preferred_element_type)


scaled_dot_p.def_lowering(common.lower_fun(lambda *args, **params: [
    _scaled_dot_dense(*args, **params)]))


@scaled_dot_p.def_batch
def _scaled_dot_batch(args, dims, *, dimension_numbers, preferred_element_type):
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  args = [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  (lc, rc), (lb, rb) = dimension_numbers
  up = lambda ds: tuple(d + 1 for d in ds)  # noqa: E731
  dnums = ((up(lc), up(rc)), ((0,) + up(lb), (0,) + up(rb)))
  return scaled_dot_p.bind(*args, dimension_numbers=dnums,
                           preferred_element_type=preferred_element_type), 0


def _ones_scale(operand, contracting):
  shape = list(core.get_aval(operand).shape)
  for d in contracting:
    shape[d] = 1
  ones = creation.full(shape, 1.0, dtypes.bfloat16)
  return lax.convert_element_type(ones, np.dtype(ml_dtypes.float8_e8m0fnu))


def scaled_dot(lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None,
               preferred_element_type=None):
  """(lhs * lhs_scale) . (rhs * rhs_scale) contracted as `dimension_numbers` say (default: the
  last axis of lhs with the second to last of rhs, leading axes batched), computed in
  bfloat16 and accumulated in `preferred_element_type` (default bfloat16). Scales are given
  per block of the contracting axes (see the module docstring)."""
  lhs, rhs = asarray_operand(lhs), asarray_operand(rhs)
  if dimension_numbers is None:
    n = core.get_aval(lhs).ndim
    if n in (0, 1):
      raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
    dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
  (lc, rc), _ = dimension_numbers
  if lhs_scale is None:
    lhs_scale = _ones_scale(lhs, lc)
  if rhs_scale is None:
    rhs_scale = _ones_scale(rhs, rc)
  dt = dtypes.check_user_dtype(
      dtypes.bfloat16 if preferred_element_type is None else preferred_element_type,
      "scaled_dot")
  return scaled_dot_p.bind(lhs, rhs, lhs_scale, rhs_scale, dimension_numbers=dimension_numbers,
                           preferred_element_type=dt)
