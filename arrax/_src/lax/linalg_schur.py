"""Schur decomposition (gees) and Hessenberg reduction (gehrd): jaxlib's LAPACK FFI kernels.

Like the primitives of lax/linalg.py, they take stacks of matrices [..., n, n] (the kernels
loop over the batch axes) and give NaNs for a batch element whose factorization fails. Neither
has a derivative rule, as in JAX.
"""
from __future__ import annotations

import numpy as np

from arrax._src import core, mlir
from arrax._src.core import ShapedArray
from arrax._src.lax import linalg as _la
from arrax._src.lax.utils import asarray_operand

__all__ = ["hessenberg", "schur"]

# LAPACK's character codes of gees: 'V' computes the Schur vectors, 'N' does not (or: no sort).
_COMPUTE, _NO_COMPUTE, _NO_SORT = ord("V"), ord("N"), ord("N")


# ---- schur ------------------------------------------------------------------------------------
schur_p = core.Primitive("schur")
schur_p.multiple_results = True


@schur_p.def_abstract_eval
def _schur_abstract_eval(aval, *, compute_schur_vectors, sort_eig_vals, select_callable):
  _la._check_inexact("schur", aval)
  _la._check_square("schur", aval)
  out = ShapedArray(aval.shape, aval.dtype)
  return [out, out] if compute_schur_vectors else [out]


@schur_p.def_lowering
def _schur_lower(ctx, x, *, compute_schur_vectors, sort_eig_vals, select_callable):
  if sort_eig_vals:
    raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
  aval, = ctx.avals_in
  batch = aval.shape[:-2]
  real = aval.dtype.kind == "f"
  info_aval = ShapedArray(batch, np.int32)
  w_aval = ShapedArray(aval.shape[:-1], aval.dtype)
  avals_out = [aval, aval] + [w_aval] * (2 if real else 1) + [info_aval, info_aval]
  t, vs, *_, info = _la._lapack_call(
      _la._lapack_target("gees", aval.dtype), [x], [aval], avals_out, aliases={0: 0},
      mode=_la._u8(_COMPUTE if compute_schur_vectors else _NO_COMPUTE),
      sort=_la._u8(_NO_SORT))
  ok = _la._info_ok(info, batch)
  outs = [_la._nan_unless(ok, t, ctx.avals_out[0])]
  if compute_schur_vectors:
    outs.append(_la._nan_unless(ok, vs, ctx.avals_out[1]))
  return outs


schur_p.def_batch(_la._batch_to_front(schur_p))


def schur(x, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
  """Schur decomposition x = q t qᴴ of square x [..., n, n]: (t, q), or (t,).

  t is upper (quasi-)triangular: real inputs give the real Schur form, with 2x2 blocks on the
  diagonal for complex-conjugate eigenvalue pairs.
  """
  return schur_p.bind(asarray_operand(x), compute_schur_vectors=compute_schur_vectors,
                      sort_eig_vals=sort_eig_vals, select_callable=select_callable)


# ---- hessenberg -------------------------------------------------------------------------------
hessenberg_p = core.Primitive("hessenberg")
hessenberg_p.multiple_results = True


@hessenberg_p.def_abstract_eval
def _hessenberg_abstract_eval(aval):
  _la._check_inexact("hessenberg", aval)
  _la._check_rank("hessenberg", aval)
  if aval.shape[-1] != aval.shape[-2]:
    raise ValueError("Argument to Hessenberg reduction must have shape [..., n, n], got "
                     f"shape {aval.shape}")
  return [ShapedArray(aval.shape, aval.dtype),
          ShapedArray(aval.shape[:-2] + (aval.shape[-1] - 1,), aval.dtype)]


@hessenberg_p.def_lowering
def _hessenberg_lower(ctx, x):
  aval, = ctx.avals_in
  batch = aval.shape[:-2]
  n = aval.shape[-1]
  avals_out = [*ctx.avals_out, ShapedArray(batch, np.int32)]
  a, taus, info = _la._lapack_call(
      _la._lapack_target("gehrd", aval.dtype), [x], [aval], avals_out, aliases={0: 0},
      low=mlir.i32_attr(1), high=mlir.i32_attr(n))
  ok = _la._info_ok(info, batch)
  return [_la._nan_unless(ok, a, ctx.avals_out[0]), _la._nan_unless(ok, taus, ctx.avals_out[1])]


hessenberg_p.def_batch(_la._batch_to_front(hessenberg_p))


def hessenberg(a):
  """Reduce square a [..., n, n] to upper Hessenberg form: (a, taus) in LAPACK's packing.

  The upper triangle and first subdiagonal of the result hold the Hessenberg matrix; the
  Householder reflectors are below, with their scalar factors in taus [..., n - 1].
  """
  return hessenberg_p.bind(asarray_operand(a))
