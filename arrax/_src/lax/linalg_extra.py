"""More linear algebra primitives: tridiagonal reduction (sytrd/hetrd), tridiagonal solve
(gtsv), multiplication by Householder Q (ormqr/unmqr), the symmetric product and the rank-1
Cholesky update.

The first three are jaxlib's LAPACK FFI kernels, through lax/linalg.py's `_lapack_call` (stacks
of matrices, batch axes looped over by the kernel); the last two lower arrax-level algorithms,
as JAX does on CPU.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir

from arrax._src import ad, batching, core
from arrax._src.core import ShapedArray
from arrax._src.lax import elementwise as lax, shape_ops, utils
from arrax._src.lax import linalg as _la
from arrax._src.lax.utils import asarray_operand

__all__ = ["cholesky_update", "ormqr", "symmetric_product", "tridiagonal", "tridiagonal_solve"]

_INEXACT = (utils.FLOAT, utils.COMPLEX)
_FLOAT = (utils.FLOAT,)


def _check_args(name, avals, ranks, kinds, batched=True):
  """JAX's checks of a linalg primitive's operands: dtypes, equal dtypes, ranks, batch ranks.

  Returns the core (non-batch) shapes and the batch shape of the first operand.
  """
  for i, aval in enumerate(avals):
    if utils.dtype_class(aval.dtype) not in kinds:
      accepted = ", ".join("floating" if k == utils.FLOAT else "complexfloating" for k in kinds)
      raise TypeError(f"{name} does not accept dtype {aval.dtype.name} at position {i}. "
                      f"Accepted dtypes at position {i} are subtypes of {accepted}.")
  if len({a.dtype for a in avals}) > 1:
    raise TypeError(f"{name} requires arguments to have the same dtypes, got "
                    f"{', '.join(a.dtype.name for a in avals)}.")
  if avals[0].dtype not in _la._LAPACK_PREFIX:
    raise NotImplementedError(f"{name} on CPU supports float32, float64, complex64 and "
                              f"complex128 inputs, got {avals[0].dtype.name}.")
  cores = []
  for i, (aval, rank) in enumerate(zip(avals, ranks)):
    if aval.ndim < rank:
      raise TypeError(f"Input {i} to {name} must have rank at least {rank}, but got "
                      f"shape={aval.shape}")
    if not batched and aval.ndim != rank:
      raise TypeError(f"Input {i} to {name} must have a rank of exactly {rank}, but got "
                      f"shape={aval.shape}")
    cores.append(aval.shape[aval.ndim - rank:])
  nbatch = [a.ndim - r for a, r in zip(avals, ranks)]
  if len(set(nbatch)) > 1:
    raise TypeError(f"All inputs to {name} must have the same number of batch dimensions, but "
                    f"got {nbatch} batch dimensions for the inputs.")
  return cores, avals[0].shape[:nbatch[0]]


# ---- tridiagonal: Householder reduction of a Hermitian matrix (sytrd / hetrd) ------------------
tridiagonal_p = core.Primitive("tridiagonal")
tridiagonal_p.multiple_results = True


@tridiagonal_p.def_abstract_eval
def _tridiagonal_abstract_eval(aval, *, lower):
  (shape,), batch = _check_args("tridiagonal", [aval], (2,), _INEXACT)
  if shape[0] != shape[1] or shape[1] == 0:
    raise ValueError(f"The input to tridiagonal must be a square matrix. Got shape {shape}.")
  n = shape[0]
  real = _la._real_dtype(aval.dtype)
  return [ShapedArray(aval.shape, aval.dtype), ShapedArray((*batch, n), real),
          ShapedArray((*batch, n - 1), real), ShapedArray((*batch, n - 1), aval.dtype)]


@tridiagonal_p.def_lowering
def _tridiagonal_lower(ctx, a, *, lower):
  aval, = ctx.avals_in
  batch = aval.shape[:-2]
  fn = "hetrd" if aval.dtype.kind == "c" else "sytrd"
  outs = _la._lapack_call(_la._lapack_target(fn, aval.dtype), [a], [aval],
                          [*ctx.avals_out, ShapedArray(batch, np.int32)], aliases={0: 0},
                          uplo=_la._char("L" if lower else "U"))
  *outs, info = outs
  ok = _la._info_ok(info, batch)
  return [_la._nan_unless(ok, x, av) for x, av in zip(outs, ctx.avals_out)]


tridiagonal_p.def_batch(_la._batch_to_front(tridiagonal_p))


def tridiagonal(a, *, lower=True):
  """Householder reduction of Hermitian a [..., n, n] to tridiagonal form: (a, d, e, taus).

  d is the (real) diagonal and e the (real) off-diagonal of the tridiagonal matrix; the
  reflectors are stored in a below the subdiagonal (`lower`) or above the superdiagonal, in
  LAPACK's packing, with their scalar factors in taus. Only the `lower` (or upper) triangle of
  a is read.
  """
  return tridiagonal_p.bind(asarray_operand(a), lower=lower)


# ---- tridiagonal_solve (gtsv) -------------------------------------------------------------------
tridiagonal_solve_p = core.Primitive("tridiagonal_solve")


@tridiagonal_solve_p.def_abstract_eval
def _tridiagonal_solve_abstract_eval(dl, d, du, b, *, perturb_singular):
  _check_args("tridiagonal_solve", [dl, d, du, b], (1, 1, 1, 2), _INEXACT)
  if dl.shape != d.shape or dl.shape != du.shape:
    raise TypeError("tridiagonal_solve requires that all diagonal arguments have the same "
                    "shape.")
  if dl.shape != b.shape[:-1]:
    raise TypeError("tridiagonal_solve requires that the leading ndim-1 dimensions of b equal "
                    "the dimensions of the diagonal arguments.")
  return b.strip_weak_type()


@tridiagonal_solve_p.def_lowering
def _tridiagonal_solve_lower(ctx, dl, d, du, b, *, perturb_singular):
  b_aval = ctx.avals_in[3]
  if perturb_singular:
    # jaxlib's kernel of LAPACK's gttrf + gttrs with tiny pivots perturbed (no info output).
    _la._ensure_lapack()
    return _la._lapack_call("tridiagonal_solve_perturbed_ffi", [dl, d, du, b], ctx.avals_in,
                            [b_aval])
  batch = b_aval.shape[:-2]
  *_, x, info = _la._lapack_call(
      _la._lapack_target("gtsv", b_aval.dtype), [dl, d, du, b], ctx.avals_in,
      [*ctx.avals_in, ShapedArray(batch, np.int32)], aliases={0: 0, 1: 1, 2: 2, 3: 3})
  return [_la._nan_unless(_la._info_ok(info, batch), x, b_aval)]


def _pad_last(x, before, after):
  """x with `before` zeros prepended and `after` zeros appended on its last axis."""
  shape = _la._shape(x)
  parts = []
  if before:
    parts.append(_la._full((*shape[:-1], before), 0, _la._dtype(x)))
  parts.append(x)
  if after:
    parts.append(_la._full((*shape[:-1], after), 0, _la._dtype(x)))
  return shape_ops.concatenate(parts, len(shape) - 1) if len(parts) > 1 else x


def _tridiagonal_matmul(dl, d, du, x):
  """The tridiagonal matrix (dl, d, du) [..., m] times x [..., m, k]."""
  col = lambda v: shape_ops.expand_dims(v, (_la._ndim(v),))  # noqa: E731
  m = _la._shape(d)[-1]
  y = lax.mul(col(d), x)
  if m > 1:
    nd = _la._ndim(x)
    lo = lambda v, s, e: shape_ops.slice_in_dim(v, s, e, axis=nd - 2)  # noqa: E731
    below = lax.mul(col(shape_ops.slice_in_dim(dl, 1, m, axis=nd - 2)), lo(x, 0, m - 1))
    above = lax.mul(col(shape_ops.slice_in_dim(du, 0, m - 1, axis=nd - 2)), lo(x, 1, m))
    zero_row = _la._full((*_la._shape(x)[:-2], 1, _la._shape(x)[-1]), 0, _la._dtype(x))
    y = lax.add(y, shape_ops.concatenate([zero_row, below], nd - 2))
    y = lax.add(y, shape_ops.concatenate([above, zero_row], nd - 2))
  return y


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
  dl, d, du, b = primals
  *diag_dots, b_dot = tangents
  out = tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)
  if all(type(t) is ad.Zero for t in diag_dots):
    rhs = b_dot
  else:
    prod = _tridiagonal_matmul(*[ad.instantiate(t) for t in diag_dots], out)
    rhs = ad.add_tangents(b_dot, lax.neg(prod))
  if type(rhs) is ad.Zero:
    return out, rhs
  return out, tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
  # Linear in b only; the transposed matrix has diagonals (du shifted right, d, dl shifted left).
  assert not any(ad.is_undefined(x) for x in (dl, d, du)) and ad.is_undefined(b)
  if type(ct) is ad.Zero:
    return [None, None, None, ad.Zero(b.aval)]
  m = _la._shape(d)[-1]
  axis = _la._ndim(d) - 1
  dl_t = _pad_last(shape_ops.slice_in_dim(du, 0, max(m - 1, 0), axis=axis), 1, 0)
  du_t = _pad_last(shape_ops.slice_in_dim(dl, min(1, m), m, axis=axis), 0, 1)
  if m == 0:
    dl_t, du_t = du, dl
  return [None, None, None,
          tridiagonal_solve_p.bind(dl_t, d, du_t, ct, perturb_singular=perturb_singular)]


def _tridiagonal_solve_batch(args, dims, *, perturb_singular):
  dl, d, du, b = args
  ddl, dd, ddu, db = dims
  nm = batching.not_mapped
  if ddl is nm and dd is nm and ddu is nm:
    # One system for the whole batch: the batched right-hand sides become extra columns.
    b = batching.moveaxis(b, db, _la._ndim(b) - 2)
    shape = _la._shape(b)
    flat = shape_ops.reshape(b, (*shape[:-2], shape[-2] * shape[-1]))
    out = tridiagonal_solve_p.bind(dl, d, du, flat, perturb_singular=perturb_singular)
    return shape_ops.reshape(out, shape), len(shape) - 2
  size = next(_la._shape(x)[i] for x, i in zip(args, dims) if i is not nm)
  args = [batching.bdim_at_front(x, i, size) for x, i in zip(args, dims)]
  return tridiagonal_solve_p.bind(*args, perturb_singular=perturb_singular), 0


tridiagonal_solve_p.def_jvp(_tridiagonal_solve_jvp)
tridiagonal_solve_p.def_transpose(_tridiagonal_solve_transpose)
tridiagonal_solve_p.def_batch(_tridiagonal_solve_batch)


def tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
  """Solve the tridiagonal systems A x = b, A given by its diagonals dl, d, du [..., m].

  dl[..., i] = A[i, i-1] (dl[..., 0] unused), d the main diagonal, du[..., i] = A[i, i+1]
  (du[..., m-1] unused); b has shape [..., m, k]. A singular system gives NaNs, unless
  `perturb_singular`: then tiny pivots are perturbed and the result stays finite.
  """
  return tridiagonal_solve_p.bind(asarray_operand(dl), asarray_operand(d), asarray_operand(du),
                                  asarray_operand(b), perturb_singular=perturb_singular)


# ---- ormqr: multiply by Q of a QR factorization (ormqr / unmqr) ------------------------------
ormqr_p = core.Primitive("ormqr")


@ormqr_p.def_abstract_eval
def _ormqr_abstract_eval(a, taus, c, *, left, transpose):
  (a_shape, _, c_shape), _ = _check_args("ormqr", [a, taus, c], (2, 1, 2), _INEXACT)
  m = a_shape[0]
  if left and c_shape[0] != m:
    raise ValueError("ormqr with left=True expects c to have the same number of rows as the "
                     f"Householder matrix a. Got a shape {a_shape} and c shape {c_shape}.")
  if not left and c_shape[1] != m:
    raise ValueError("ormqr with left=False expects c to have the same number of columns as "
                     f"the Householder matrix a has rows. Got a shape {a_shape} and c shape "
                     f"{c_shape}.")
  return c.strip_weak_type()


@ormqr_p.def_lowering
def _ormqr_lower(ctx, a, taus, c, *, left, transpose):
  a_aval = ctx.avals_in[0]
  fn = "unmqr" if a_aval.dtype.kind == "c" else "ormqr"
  out, = _la._lapack_call(_la._lapack_target(fn, a_aval.dtype), [a, taus, c], ctx.avals_in,
                          ctx.avals_out, aliases={2: 0}, left=_bool_attr(left),
                          transpose=_bool_attr(transpose))
  return [out]


def _bool_attr(v):
  return ir.BoolAttr.get(bool(v))


ormqr_p.def_batch(_la._batch_all_to_front(ormqr_p))


def ormqr(a, taus, c, *, left=True, transpose=False):
  """Q c (`left`) or c Q, with Q (Qᴴ if `transpose`) given by geqrf's reflectors a and taus.

  a [..., m, n] holds the reflectors below its diagonal, taus [..., k] their scalar factors;
  Q is never formed.
  """
  return ormqr_p.bind(asarray_operand(a), asarray_operand(taus), asarray_operand(c),
                      left=left, transpose=transpose)


# ---- symmetric_product: alpha a aᵀ + beta c ----------------------------------------------------
symmetric_product_p = core.Primitive("symmetric_product")


@symmetric_product_p.def_abstract_eval
def _symmetric_product_abstract_eval(a, c, *, alpha, beta):
  (a_shape, c_shape), _ = _check_args("symmetric_product", [a, c], (2, 2), _FLOAT)
  if a_shape[0] != c_shape[1] or c_shape[0] != c_shape[1]:
    raise ValueError("symmetric_update expects a rectangular matrix of shape (m, n) and a "
                     f"square matrix of shape (n, n). Got shapes {a_shape} and {c_shape}.")
  return c.strip_weak_type()


def _symmetric_product_impl(a, c, *, alpha, beta):
  dtype = _la._dtype(c)
  prod = _la._mm(a, _la._T(a))
  return lax.add(lax.mul(lax.scalar_literal(alpha, dtype), prod),
                 lax.mul(lax.scalar_literal(beta, dtype), c))


@symmetric_product_p.def_lowering
def _symmetric_product_lower(ctx, a, c, *, alpha, beta):
  return _la._lower_fun(ctx, lambda a, c: [_symmetric_product_impl(a, c, alpha=alpha,
                                                                   beta=beta)],
                        ctx.avals_in, [a, c])


symmetric_product_p.def_batch(_la._batch_all_to_front(symmetric_product_p))


def symmetric_product(a_matrix, c_matrix, *, alpha=1., beta=0., symmetrize_output=False):
  """alpha a aᵀ + beta c for a [..., m, n] and symmetric c [..., m, m].

  Only the lower triangle of the result is promised on every platform; `symmetrize_output`
  mirrors it into the upper triangle.
  """
  out = symmetric_product_p.bind(asarray_operand(a_matrix), asarray_operand(c_matrix),
                                 alpha=alpha, beta=beta)
  if symmetrize_output:
    out = lax.add(_la._tril(out), _la._T(_la._tril(out, -1)))
  return out


# ---- cholesky_update: rank-1 update of an upper Cholesky factor (Givens rotations) ----------
cholesky_update_p = core.Primitive("cholesky_update")


@cholesky_update_p.def_abstract_eval
def _cholesky_update_abstract_eval(r, w):
  (r_shape, w_shape), _ = _check_args("cholesky_update", [r, w], (2, 1), _FLOAT,
                                      batched=False)
  if r_shape[0] != r_shape[1] or w_shape[0] != r_shape[1]:
    raise ValueError("Rank-1 update to Cholesky decomposition takes a square matrix and a "
                     f"vector of the same size as input. Got shapes {r_shape} and {w_shape} "
                     "instead")
  return r.strip_weak_type()


def _cholesky_update_impl(r, z):
  """Zero z into r's rows one at a time with Givens rotations: r'ᵀ r' = rᵀ r + z zᵀ."""
  dtype = _la._dtype(r)
  n = _la._shape(r)[0]
  s = lambda v: lax.scalar_literal(v, dtype)  # noqa: E731
  rows = [shape_ops.reshape(shape_ops.slice_in_dim(r, k, k + 1, axis=0), (n,))
          for k in range(n)]
  for k in range(n):
    x = shape_ops.reshape(shape_ops.slice_in_dim(rows[k], k, k + 1), ())
    y = shape_ops.reshape(shape_ops.slice_in_dim(z, k, k + 1), ())
    ax, ay = lax.abs(x), lax.abs(y)
    scale = lax.select(lax.gt(ax, ay), ax, ay)
    y_zero = lax.eq(y, s(0))
    scale = lax.select(y_zero, s(1), scale)
    xs, ys = lax.div(x, scale), lax.div(y, scale)
    rh = lax.rsqrt(lax.add(lax.mul(xs, xs), lax.mul(ys, ys)))
    c = lax.select(y_zero, s(1), lax.mul(xs, rh))
    sn = lax.select(y_zero, s(0), lax.neg(lax.mul(ys, rh)))
    cb = shape_ops.broadcast_in_dim(c, (n,), ())
    sb = shape_ops.broadcast_in_dim(sn, (n,), ())
    rows[k], z = (lax.sub(lax.mul(cb, rows[k]), lax.mul(sb, z)),
                  lax.add(lax.mul(cb, z), lax.mul(sb, rows[k])))
  if not rows:
    return r
  return shape_ops.concatenate([shape_ops.reshape(v, (1, n)) for v in rows], 0)


@cholesky_update_p.def_lowering
def _cholesky_update_lower(ctx, r, w):
  return _la._lower_fun(ctx, lambda r, w: [_cholesky_update_impl(r, w)], ctx.avals_in, [r, w])


# JAX has no batching rule for it either (a single [n, n] factor only).
cholesky_update_p.def_batch(batching.no_batching_rule("cholesky_update"))


def cholesky_update(r_matrix, w_vector):
  """The upper Cholesky factor of rᵀ r + w wᵀ, from the upper factor r [n, n] and w [n]."""
  return cholesky_update_p.bind(asarray_operand(r_matrix), asarray_operand(w_vector))

