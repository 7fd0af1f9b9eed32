"""Linear algebra primitives, computed on CPU by jaxlib's LAPACK FFI kernels.

Every primitive takes a stack of matrices: the last two axes are the matrix, any leading axes
are batch axes, which the LAPACK kernels loop over (`num_batch_dims`). Matrices are passed to
LAPACK in column-major layout; XLA transposes for us. A factorization that fails (LAPACK's
`info` code) gives NaNs for that batch element, as in JAX.
"""
from __future__ import annotations

import enum
import math
import threading

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo as hlo

from arrax._src import ad, core, mlir
from arrax._src.core import ShapedArray
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import elementwise as lax, reductions, shape_ops, slicing, solvers, utils
from arrax._src.lax import sort as sort_ops
from arrax._src.jit import jit
from arrax._src.lax.utils import asarray_operand
from arrax._src import batching
from arrax._src import tracing
from arrax._src.lax.control_flow import fori_loop

__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm", "cholesky", "eig", "eigh",
           "geqp3", "geqrf", "householder_product", "lu", "lu_pivots_to_permutation", "qr",
           "svd", "triangular_solve"]


class EigImplementation(enum.Enum):
  """Which library computes a nonsymmetric eigendecomposition (only LAPACK exists on CPU)."""
  LAPACK = "lapack"
  MAGMA = "magma"
  CUSOLVER = "cusolver"


# ---- LAPACK custom calls ----------------------------------------------------------------------
_lapack_lock = threading.Lock()
_lapack_ready = []


def _ensure_lapack():
  """Register jaxlib's LAPACK kernels with XLA and bind them to SciPy's LAPACK, once.

  Registering a target jax registered too is harmless (same name, same handler); and
  `initialize` must run before any kernel executes, or the kernel calls a null pointer.
  """
  if _lapack_ready:
    return
  with _lapack_lock:
    if _lapack_ready:
      return
    from jaxlib import xla_client
    from jaxlib.cpu import _lapack
    for name, capsule in _lapack.registrations().items():
      xla_client.register_custom_call_target(name, capsule, platform="cpu",
                                             api_version=int(name.endswith("_ffi")))
    _lapack.initialize()
    _lapack_ready.append(True)


_LAPACK_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
                  np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


def _lapack_target(fn_base, dtype):
  _ensure_lapack()
  return f"lapack_{_LAPACK_PREFIX[np.dtype(dtype)]}{fn_base}_ffi"


def _u8(value):
  return ir.IntegerAttr.get(ir.IntegerType.get_unsigned(8), value)


def _char(c):
  return _u8(ord(c))


def _layout(ndim, column_major):
  if column_major:   # the two matrix axes minor-most, Fortran order; then the batch axes
    return (ndim - 2, ndim - 1) + tuple(range(ndim - 3, -1, -1))
  return tuple(range(ndim - 1, -1, -1))


def _layouts_attr(layouts):
  return ir.ArrayAttr.get([
      ir.DenseIntElementsAttr.get(np.asarray(lay, np.int64).reshape(len(lay)),
                                  type=ir.IndexType.get()) for lay in layouts])


def _lapack_call(target, operands, avals_in, avals_out, aliases=None, **config):
  """A typed-FFI custom call to `target`; `config` becomes the kernel's attributes.

  Arrays of the largest rank are matrices (column-major); lower-rank ones are vectors and
  info codes over the same batch axes (row-major).
  """
  top = max(a.ndim for a in avals_in)
  attrs = {
      "call_target_name": ir.StringAttr.get(target),
      "has_side_effect": ir.BoolAttr.get(False),
      "backend_config": ir.StringAttr.get(""),
      "api_version": mlir.i32_attr(1),
      "called_computations": ir.ArrayAttr.get([]),
      "operand_layouts": _layouts_attr([_layout(a.ndim, a.ndim == top) for a in avals_in]),
      "result_layouts": _layouts_attr([_layout(a.ndim, a.ndim == top) for a in avals_out]),
      "mhlo.frontend_attributes": ir.DictAttr.get(
          {"num_batch_dims": ir.StringAttr.get(str(top - 2))}),
  }
  if aliases:
    attrs["output_operand_aliases"] = ir.ArrayAttr.get([
        hlo.OutputOperandAlias.get(output_tuple_indices=[o] if len(avals_out) > 1 else [],
                                   operand_index=i, operand_tuple_indices=[])
        for i, o in aliases.items()])
  op = hlo.CustomCallOp.build_generic(
      results=[mlir.aval_to_ir_type(a) for a in avals_out], operands=list(operands),
      attributes=attrs)
  op.operation.attributes["mhlo.backend_config"] = ir.DictAttr.get(config)
  return list(op.results)


def _info_ok(info, batch_dims, direction="EQ"):
  zero = mlir.full_like_aval(0, ShapedArray(batch_dims, np.int32))
  return mlir.compare(info, zero, direction, np.int32)


def _nan_unless(ok, x, aval):
  """x where `ok` (one flag per batch element), NaN elsewhere (nan+nanj for complex, as JAX)."""
  flags_t = ir.RankedTensorType.get(aval.shape, ir.IntegerType.get_signless(1))
  flags = hlo.broadcast_in_dim(flags_t, ok, mlir.dense_i64(range(len(ok.type.shape))))
  nan = complex(np.nan, np.nan) if np.dtype(aval.dtype).kind == "c" else np.nan
  return hlo.select(flags, x, mlir.full_like_aval(nan, aval))


def _lower_fun(ctx, fun, avals_in, args):
  """Emit the ops of arrax function `fun` (traced at `avals_in`) inside a lowering."""
  jaxpr, consts = tracing.trace_to_jaxpr(fun, avals_in)
  const_vals = [mlir.ir_constant(np.asarray(c, v.aval.dtype))
                for v, c in zip(jaxpr.constvars, consts)]
  return mlir.jaxpr_subcomp(ctx.module_context, jaxpr, const_vals, list(args))


# ---- shape and dtype rules shared by the primitives -------------------------------------------
def _check_inexact(name, aval, position=None):
  if utils.dtype_class(aval.dtype) not in (utils.FLOAT, utils.COMPLEX):
    where = f" at position {position}" if position is not None else ""
    raise TypeError(f"{name} does not accept dtype {aval.dtype.name}{where}. Accepted dtypes "
                    "are subtypes of floating, complexfloating. Convert the input with "
                    "astype(float) first.")
  if aval.dtype not in _LAPACK_PREFIX:
    raise NotImplementedError(f"{name} on CPU supports float32, float64, complex64 and "
                              f"complex128 inputs, got {aval.dtype.name}; cast the input to "
                              "one of those.")


def _check_rank(name, aval, i=0):
  if aval.ndim < 2:
    raise TypeError(f"Input {i} to {name} must have rank at least 2, but got "
                    f"shape={aval.shape}")


def _check_square(name, aval):
  _check_rank(name, aval)
  if aval.shape[-1] != aval.shape[-2]:
    raise ValueError(f"The input to {name} must be a square matrix. Got shape "
                     f"{aval.shape[-2:]}.")


def _complex_dtype(dtype):
  return np.dtype(np.complex64 if np.dtype(dtype).itemsize <= 4 or dtype == np.complex64
                  else np.complex128)


# ---- small array helpers for the rules (on the last two axes, any leading batch axes) ----------
def _ndim(x):
  return core.get_aval(x).ndim


def _shape(x):
  return core.get_aval(x).shape


def _dtype(x):
  return core.get_aval(x).dtype


def _T(x):
  n = _ndim(x)
  return shape_ops.transpose(x, (*range(n - 2), n - 1, n - 2))


def _conj(x):
  return lax.conj(x) if _dtype(x).kind == "c" else x


def _H(x):
  return _conj(_T(x))


def _mm(a, b):
  """Matrix product over the last two axes; the leading axes of a and b must be equal."""
  nb = _ndim(a) - 2
  batch = tuple(range(nb))
  return lax_dot.dot_general(a, b, (((nb + 1,), (nb,)), (batch, batch)),
                             precision=lax_dot.Precision.HIGHEST)


def _tri_mask(shape, k, lower):
  rows = shape_ops.broadcasted_iota(np.int32, shape, len(shape) - 2)
  cols = shape_ops.broadcasted_iota(np.int32, shape, len(shape) - 1)
  if k:
    rows = lax.add(rows, lax.scalar_literal(k, np.int32))
  return lax.ge(rows, cols) if lower else lax.le(rows, cols)


def _tril(x, k=0):
  """The lower triangle of the matrices of x (on and below diagonal k), zeros above."""
  mask = _tri_mask(_shape(x), k, lower=True)
  return lax.select(mask, x, _zeros_like(x))


def _triu(x, k=0):
  mask = _tri_mask(_shape(x), k, lower=False)
  return lax.select(mask, x, _zeros_like(x))


def _zeros_like(x):
  aval = core.get_aval(x)
  return shape_ops.broadcast_in_dim(lax.scalar_literal(0, aval.dtype), aval.shape, ())


def _full(shape, value, dtype):
  return shape_ops.broadcast_in_dim(lax.scalar_literal(value, dtype), tuple(shape), ())


def _eye(n, m, dtype, batch=()):
  shape = (*batch, n, m)
  eq = lax.eq(shape_ops.broadcasted_iota(np.int32, shape, len(batch)),
              shape_ops.broadcasted_iota(np.int32, shape, len(batch) + 1))
  return lax.convert_element_type(eq, dtype)


def _diagonal(x):
  """The main diagonals of square matrices x, shape [..., n]."""
  eye = _eye(_shape(x)[-1], _shape(x)[-1], np.bool_, _shape(x)[:-2])
  return reductions.reduce_sum(lax.select(eye, x, _zeros_like(x)), (_ndim(x) - 1,))


def _astype(x, dtype):
  return x if _dtype(x) == np.dtype(dtype) else lax.convert_element_type(x, dtype)


def _batch_to_front(prim):
  """A batching rule for single-operand primitives whose leading axes are batch axes."""
  def rule(args, dims, **params):
    (x,), (bd,) = args, dims
    outs = prim.bind(batching.moveaxis(x, bd, 0), **params)
    if prim.multiple_results:
      return outs, [0] * len(outs)
    return outs, 0
  return rule


# ---- eig: nonsymmetric eigendecomposition (geev) ------------------------------------------------
eig_p = core.Primitive("eig")
eig_p.multiple_results = True


@eig_p.def_abstract_eval
def _eig_abstract_eval(aval, *, compute_left_eigenvectors, compute_right_eigenvectors,
                       enable_eigvec_derivs, implementation):
  _check_inexact("eig", aval)
  _check_square("eig", aval)
  dtype = _complex_dtype(aval.dtype)
  count = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
  return [ShapedArray(aval.shape[:-1], dtype)] + [ShapedArray(aval.shape, dtype)] * count


@eig_p.def_lowering
def _eig_lower(ctx, x, *, compute_left_eigenvectors, compute_right_eigenvectors,
               enable_eigvec_derivs, implementation):
  if implementation not in (None, EigImplementation.LAPACK):
    raise ValueError("Only the lapack implementation is supported on CPU.")
  aval, = ctx.avals_in
  batch = aval.shape[:-2]
  real = aval.dtype.kind == "f"
  w_aval = ShapedArray(aval.shape[:-1], aval.dtype)
  v_aval = ShapedArray(aval.shape, _complex_dtype(aval.dtype))
  avals_out = [w_aval] * (2 if real else 1) + [v_aval, v_aval, ShapedArray(batch, np.int32)]
  *w, vl, vr, info = _lapack_call(
      _lapack_target("geev", aval.dtype), [x], [aval], avals_out,
      compute_left=_char("V" if compute_left_eigenvectors else "N"),
      compute_right=_char("V" if compute_right_eigenvectors else "N"))
  w = hlo.complex(w[0], w[1]) if real else w[0]
  ok = _info_ok(info, batch)
  outs = [_nan_unless(ok, w, ctx.avals_out[0])]
  if compute_left_eigenvectors:
    outs.append(_nan_unless(ok, vl, v_aval))
  if compute_right_eigenvectors:
    outs.append(_nan_unless(ok, vr, v_aval))
  return outs


eig_p.def_batch(_batch_to_front(eig_p))


def eig(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
        enable_eigvec_derivs=False, implementation=None, use_magma=None):
  """Eigendecomposition of general square matrices `x` of shape [..., n, n].

  Returns `[w]` followed by the left eigenvectors `vl` and the right eigenvectors `vr` if
  asked for (columns, unit 2-norm). Failed decompositions give NaNs.
  """
  if use_magma is not None:
    implementation = EigImplementation.MAGMA if use_magma else EigImplementation.LAPACK
  return eig_p.bind(asarray_operand(x),
                    compute_left_eigenvectors=bool(compute_left_eigenvectors),
                    compute_right_eigenvectors=bool(compute_right_eigenvectors),
                    enable_eigvec_derivs=bool(enable_eigvec_derivs),
                    implementation=implementation)


def _eigvec_jvp(w, v, da):
  """Tangents of eigenvalues w and eigenvectors v (geev's normalisation) along da.

  First-order perturbation theory for distinct eigenvalues: with P = v⁻¹ da v, dw = diag(P)
  and dv = v (F ∘ P) + v diag(c), where F_ij = 1 / (w_j - w_i) off the diagonal and c fixes
  the free scale of each vector: unit norm and a real largest-magnitude component.
  """
  n = _shape(w)[-1]
  batch = _shape(w)[:-1]
  eye = _eye(n, n, _dtype(w), batch)
  nb = len(batch)
  wj = shape_ops.broadcast_in_dim(w, (*batch, n, n), (*range(nb), nb + 1))
  wi = shape_ops.broadcast_in_dim(w, (*batch, n, n), tuple(range(nb + 1)))
  f = lax.sub(lax.div(_full((*batch, n, n), 1, _dtype(w)), lax.add(eye, lax.sub(wj, wi))),
              eye)
  p = _mm(_solve(v, da), v)
  dw = _diagonal(p)
  u = _mm(v, lax.mul(f, p))
  k = reductions.argmax(lax.abs(v), _ndim(v) - 2, np.int32)
  at_k = lax.eq(shape_ops.broadcasted_iota(np.int32, _shape(v), _ndim(v) - 2),
                shape_ops.expand_dims(k, (_ndim(v) - 2,)))
  pick = lambda m: reductions.reduce_sum(  # noqa: E731
      lax.select(at_k, m, _zeros_like(m)), (_ndim(v) - 2,))
  axis = (_ndim(v) - 2,)
  c = lax.complex(lax.neg(lax.real(reductions.reduce_sum(lax.mul(lax.conj(v), u), axis))),
                  lax.neg(lax.div(lax.imag(pick(u)), lax.real(pick(v)))))
  dv = lax.add(u, lax.mul(v, shape_ops.broadcast_in_dim(
      c, _shape(v), (*range(nb), nb + 1))))
  return dw, dv


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs, implementation):
  (a,), (da,) = primals, tangents
  if (compute_left_eigenvectors or compute_right_eigenvectors) and not enable_eigvec_derivs:
    raise NotImplementedError(
        "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the "
        "input that JAX cannot check (see the enable_eigvec_derivs argument to "
        "jax.lax.linalg.eig). Pass enable_eigvec_derivs=True to jax.lax.linalg.eig to opt "
        "in. See https://github.com/jax-ml/jax/issues/2748 for discussion.")
  outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors,
                    compute_right_eigenvectors=True,
                    enable_eigvec_derivs=enable_eigvec_derivs,
                    implementation=implementation)
  w, vr = outs[0], outs[-1]
  da = _astype(ad.instantiate(da), _dtype(vr))
  if not (compute_left_eigenvectors or compute_right_eigenvectors):
    # dw_i = (v⁻¹ da v)_ii, without forming the product.
    dw = reductions.reduce_sum(lax.mul(_solve(vr, da), _T(vr)), (_ndim(vr) - 1,))
    return [w], [dw]
  dw, dvr = _eigvec_jvp(w, vr, da)
  primal_out, tangent_out = [w], [dw]
  if compute_left_eigenvectors:
    _, dvl = _eigvec_jvp(lax.conj(w), outs[1], _H(da))
    primal_out.append(outs[1])
    tangent_out.append(dvl)
  if compute_right_eigenvectors:
    primal_out.append(vr)
    tangent_out.append(dvr)
  return primal_out, tangent_out


eig_p.def_jvp(_eig_jvp)


# ---- cholesky (potrf) ---------------------------------------------------------------------------
cholesky_p = core.Primitive("cholesky")


@cholesky_p.def_abstract_eval
def _cholesky_abstract_eval(aval):
  _check_inexact("cholesky", aval)
  _check_square("cholesky", aval)
  return aval.strip_weak_type()


@cholesky_p.def_lowering
def _cholesky_lower(ctx, x):
  aval, = ctx.avals_in
  batch = aval.shape[:-2]
  factor, info = _lapack_call(_lapack_target("potrf", aval.dtype), [x], [aval],
                              [aval, ShapedArray(batch, np.int32)], aliases={0: 0},
                              uplo=_char("L"))
  return [_nan_unless(_info_ok(info, batch), factor, ctx.avals_out[0])]


def _cholesky_jvp(primals, tangents):
  (x,), (sigma_dot,) = primals, tangents
  factor = _tril(cholesky_p.bind(x))
  sigma_dot = ad.instantiate(sigma_dot)
  # L̇ = L Φ(L⁻¹ Σ̇ L⁻ᴴ), where Φ takes the lower triangle and halves the diagonal.
  tmp = triangular_solve(factor, sigma_dot, left_side=False, transpose_a=True,
                         conjugate_a=True, lower=True)
  inner = triangular_solve(factor, tmp, left_side=True, transpose_a=False, lower=True)
  n = _shape(x)[-1]
  halve = lax.add(_full(_shape(x), 1, _dtype(x)), _eye(n, n, _dtype(x), _shape(x)[:-2]))
  return factor, _mm(factor, lax.div(_tril(inner), halve))


cholesky_p.def_jvp(_cholesky_jvp)
cholesky_p.def_batch(_batch_to_front(cholesky_p))


def _symmetrize(x):
  return lax.div(lax.add(x, _H(x)), lax.scalar_literal(2, _dtype(x)))


def cholesky(x, *, symmetrize_input=True):
  """Lower-triangular L with L Lᴴ = x, for Hermitian positive-definite x of shape [..., n, n].

  With `symmetrize_input`, (x + xᴴ)/2 is factored; otherwise only the lower triangle is read.
  Failure (x not positive definite) gives NaNs.
  """
  x = asarray_operand(x)
  shape = core.get_aval(x).shape
  if symmetrize_input and (len(shape) < 2 or shape[-1] != shape[-2]):
    # JAX fails here in the symmetrizing addition, with a TypeError: keep the class.
    raise TypeError(f"The input to cholesky must be a square matrix, got shape {shape}.")
  if symmetrize_input:
    x = _symmetrize(x)
  return _tril(cholesky_p.bind(x))


# ---- triangular_solve (trsm) ---------------------------------------------------------------------
triangular_solve_p = core.Primitive("triangular_solve")


@triangular_solve_p.def_abstract_eval
def _triangular_solve_abstract_eval(a, b, *, left_side, lower, transpose_a, conjugate_a,
                                    unit_diagonal):
  _check_inexact("triangular_solve", a, 0)
  _check_inexact("triangular_solve", b, 1)
  _check_rank("triangular_solve", a, 0)
  _check_rank("triangular_solve", b, 1)
  if a.ndim != b.ndim:
    raise TypeError("All inputs to triangular_solve must have the same number of batch "
                    f"dimensions, but got {[a.ndim - 2, b.ndim - 2]} batch dimensions for "
                    "the inputs.")
  if a.dtype != b.dtype:
    raise TypeError("triangular_solve requires arguments to have the same dtypes, got "
                    f"{a.dtype.name}, {b.dtype.name}.")
  if a.shape[-1] != a.shape[-2]:
    raise ValueError("The first input to triangular_solve must be a square matrix. Got "
                     f"shape {a.shape[-2:]}.")
  if a.shape[-1] != b.shape[-2 if left_side else -1]:
    raise ValueError(f"Incompatible shapes for arguments to triangular_solve: "
                     f"{a.shape[-2:]} and {b.shape[-2:]}.")
  if a.shape[:-2] != b.shape[:-2]:
    raise ValueError("triangular_solve needs equal batch dimensions, got "
                     f"{a.shape} and {b.shape}.")
  return b.strip_weak_type()


@triangular_solve_p.def_lowering
def _triangular_solve_lower(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
  a_aval, b_aval = ctx.avals_in
  if conjugate_a and not transpose_a:
    a = chlo.conj(a)
    conjugate_a = False
  trans = ("C" if conjugate_a else "T") if transpose_a else "N"
  out, = _lapack_call(_lapack_target("trsm", a_aval.dtype), [a, b], [a_aval, b_aval],
                      [b_aval], aliases={1: 0}, side=_char("L" if left_side else "R"),
                      uplo=_char("L" if lower else "U"), trans_x=_char(trans),
                      diag=_char("U" if unit_diagonal else "N"))
  return [out]


def _triangular_solve_jvp(primals, tangents, *, left_side, lower, transpose_a, conjugate_a,
                          unit_diagonal):
  (a, b), (da, db) = primals, tangents
  params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
  out = triangular_solve_p.bind(a, b, **params)
  t_out = ad.Zero(ad.tangent_aval(core.get_aval(out)))
  if type(db) is not ad.Zero:
    t_out = ad.add_tangents(t_out, triangular_solve_p.bind(a, db, **params))
  if type(da) is not ad.Zero:
    # d(A⁻¹ B) = -A⁻¹ dA A⁻¹ B, with dA restricted to the triangle the solve reads.
    k = 1 if unit_diagonal else 0
    g = _tril(da, -k) if lower else _triu(da, k)
    g = lax.neg(g)
    g = _T(g) if transpose_a else g
    g = _conj(g) if conjugate_a else g
    if left_side:
      contrib = triangular_solve_p.bind(a, _mm(g, out), **params)
    else:
      contrib = triangular_solve_p.bind(a, _mm(out, g), **params)
    t_out = ad.add_tangents(t_out, contrib)
  return out, t_out


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
  # Linear in b only (like div in its numerator).
  assert not ad.is_undefined(a) and ad.is_undefined(b)
  if type(ct) is ad.Zero:
    return [None, ad.Zero(b.aval)]
  ct_b = triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                 transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                 unit_diagonal=unit_diagonal)
  return [None, ct_b]


def _triangular_solve_batch(args, dims, **params):
  (a, b), (da, db) = args, dims
  if da is None:
    # One matrix for the whole batch: the batch of right-hand sides becomes extra columns
    # (left side) or rows (right side) of a single solve.
    if params["left_side"]:
      b = batching.moveaxis(b, db, -1)
      *lead, m, k, n = _shape(b)
      flat = (*lead, m, k * n)
      out_dim = _ndim(b) - 1
    else:
      b = batching.moveaxis(b, db, -2)
      *lead, m, n, k = _shape(b)
      flat = (*lead, m * n, k)
      out_dim = _ndim(b) - 2
    out = triangular_solve_p.bind(a, shape_ops.reshape(b, flat), **params)
    return shape_ops.reshape(out, _shape(b)), out_dim
  size = _shape(a)[da] if da is not None else _shape(b)[db]
  a = batching.bdim_at_front(a, da, size)
  b = batching.bdim_at_front(b, db, size)
  return triangular_solve_p.bind(a, b, **params), 0


triangular_solve_p.def_jvp(_triangular_solve_jvp)
triangular_solve_p.def_transpose(_triangular_solve_transpose)
triangular_solve_p.def_batch(_triangular_solve_batch)


def triangular_solve(a, b, *, left_side=False, lower=False, transpose_a=False,
                     conjugate_a=False, unit_diagonal=False):
  """Solve op(a) x = b (left side) or x op(a) = b for x, with a triangular.

  op(a) is a, aᵀ or aᴴ per `transpose_a`/`conjugate_a`; only the triangle named by `lower` is
  read, and its diagonal is taken as ones if `unit_diagonal`.
  """
  a, b = asarray_operand(a), asarray_operand(b)
  conjugate_a = conjugate_a and _dtype(a).kind == "c"
  singleton = _ndim(b) == _ndim(a) - 1
  if singleton:   # b given as a vector (or a batch of them)
    b = shape_ops.expand_dims(b, (_ndim(b) if left_side else _ndim(b) - 1,))
  out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                transpose_a=bool(transpose_a), conjugate_a=bool(conjugate_a),
                                unit_diagonal=bool(unit_diagonal))
  if singleton:
    out = shape_ops.squeeze(out, (_ndim(out) - 1 if left_side else _ndim(out) - 2,))
  return out


# ---- lu (getrf) ----------------------------------------------------------------------------------
lu_p = core.Primitive("lu")
lu_p.multiple_results = True


@lu_p.def_abstract_eval
def _lu_abstract_eval(aval):
  _check_inexact("lu", aval)
  _check_rank("lu", aval)
  *batch, m, n = aval.shape
  return [aval.strip_weak_type(), ShapedArray((*batch, min(m, n)), np.int32),
          ShapedArray((*batch, m), np.int32)]


def _pivots_to_permutation(pivots, m):
  """The row permutation that the row swaps i <-> pivots[i] (in order) make of range(m)."""
  shape = (*_shape(pivots)[:-1], m)
  axis = len(shape) - 1
  iota = shape_ops.broadcasted_iota(np.int32, shape, axis)
  zeros = _full(shape, 0, np.int32)

  def body(i, perm):
    i = _astype(i, np.int32)
    p = shape_ops.dynamic_index_in_dim(pivots, i, axis, keepdims=True)
    # As JAX's indexing: a negative pivot counts from the end; the swap reads the clamped
    # position and drops the write to an out-of-range one.
    p = lax.select(lax.lt(p, _full(_shape(p), 0, np.int32)),
                   lax.add(p, _full(_shape(p), m, np.int32)), p)
    p_read = lax.clamp(_full(_shape(p), 0, np.int32), p, _full(_shape(p), m - 1, np.int32))
    bcast_p = lambda q: shape_ops.broadcast_in_dim(q, shape, tuple(range(len(shape))))  # noqa
    at_i = lax.eq(iota, shape_ops.broadcast_in_dim(i, shape, ()))
    at_p = lax.eq(iota, bcast_p(p))
    v_i = reductions.reduce_sum(lax.select(at_i, perm, zeros), (axis,))
    v_p = reductions.reduce_sum(lax.select(lax.eq(iota, bcast_p(p_read)), perm, zeros), (axis,))
    bcast = lambda v: shape_ops.broadcast_in_dim(v, shape, tuple(range(axis)))  # noqa: E731
    return lax.select(at_i, bcast(v_p), lax.select(at_p, bcast(v_i), perm))

  k = _shape(pivots)[-1]
  return fori_loop(0, k, body, iota) if k else iota


@lu_p.def_lowering
def _lu_lower(ctx, x):
  aval, = ctx.avals_in
  out_aval, pivot_aval, perm_aval = ctx.avals_out
  batch = aval.shape[:-2]
  factors, pivots, info = _lapack_call(
      _lapack_target("getrf", aval.dtype), [x], [aval],
      [out_aval, pivot_aval, ShapedArray(batch, np.int32)], aliases={0: 0})
  pivots = hlo.subtract(pivots, mlir.full_like_aval(1, pivot_aval))   # 1-based -> 0-based
  # info > 0 means an exactly singular U, which is still a valid factorization.
  factors = _nan_unless(_info_ok(info, batch, "GE"), factors, out_aval)
  m = aval.shape[-2]
  perm, = _lower_fun(ctx, lambda p: [_pivots_to_permutation(p, m)], [pivot_aval], [pivots])
  return [factors, pivots, perm]


def _permutation_matrix(perm, dtype):
  """P with P[..., i, j] = (perm[..., i] == j): P @ a gathers the rows of a."""
  m = _shape(perm)[-1]
  shape = (*_shape(perm), m)
  nb = len(shape) - 1
  rows = shape_ops.broadcast_in_dim(perm, shape, tuple(range(nb)))
  return lax.convert_element_type(
      lax.eq(rows, shape_ops.broadcasted_iota(np.int32, shape, nb)), dtype)


def _lu_jvp(primals, tangents):
  (a,), (a_dot,) = primals, tangents
  factors, pivots, perm = lu_p.bind(a)
  a_dot = ad.instantiate(a_dot)
  *batch, m, n = _shape(a)
  k = min(m, n)
  dtype = _dtype(a)
  nb = len(batch)
  zero = lax.scalar_literal(0, dtype)
  no_pad = [(0, 0, 0)] * nb
  # L (m x m, unit diagonal) and U (n x n, identity below the k x k block) from the factors.
  l_part = shape_ops.slice_in_dim(factors, 0, k, axis=nb + 1)
  l = shape_ops.pad(_tril(l_part, -1), zero, no_pad + [(0, 0, 0), (0, m - k, 0)])
  l = lax.add(l, _eye(m, m, dtype, batch))
  u_part = shape_ops.slice_in_dim(factors, 0, k, axis=nb)
  u = shape_ops.pad(_triu(u_part), zero, no_pad + [(0, n - k, 0), (0, 0, 0)])
  u_eye = shape_ops.pad(_eye(n - k, n - k, dtype, batch), zero,
                        no_pad + [(k, 0, 0), (k, 0, 0)])
  u = lax.add(u, u_eye)
  # L⁻¹ P dA U⁻¹ = L⁻¹ L̇ + U̇ U⁻¹: split it into its strict lower and upper parts.
  la = triangular_solve(l, _mm(_permutation_matrix(perm, dtype), a_dot), left_side=True,
                        lower=True, unit_diagonal=True)
  lau = triangular_solve(u, la, left_side=False, lower=False)
  l_dot = _mm(l, _tril(lau, -1))
  u_dot = _mm(_triu(lau), u)
  int_zero = lambda x: ad.Zero(ad.tangent_aval(core.get_aval(x)))  # noqa: E731
  return [factors, pivots, perm], [lax.add(l_dot, u_dot), int_zero(pivots), int_zero(perm)]


lu_p.def_jvp(_lu_jvp)
lu_p.def_batch(_batch_to_front(lu_p))


def lu(x):
  """LU decomposition with partial pivoting of x [..., m, n]: (lu, pivots, permutation).

  `lu` holds L (unit diagonal, below) and U (on and above the diagonal); rows of x were
  swapped i <-> pivots[i] in order, and x[permutation] = L @ U.
  """
  return tuple(lu_p.bind(asarray_operand(x)))


lu_pivots_to_permutation_p = core.Primitive("lu_pivots_to_permutation")


@lu_pivots_to_permutation_p.def_abstract_eval
def _lu_pivots_to_permutation_abstract_eval(aval, *, permutation_size):
  if aval.dtype != np.int32:
    raise TypeError(f"lu_pivots_to_permutation does not accept dtype {aval.dtype.name} at "
                    "position 0. Accepted dtypes at position 0 are subtypes of int32.")
  if aval.ndim < 1:
    raise TypeError("Input 0 to lu_pivots_to_permutation must have rank at least 1, but got "
                    f"shape={aval.shape}")
  if not permutation_size >= aval.shape[-1]:
    raise ValueError(f"Output permutation size {permutation_size} has to exceed the trailing "
                     f"dimension of the pivots. Got pivots size {aval.shape[-1]}")
  return ShapedArray((*aval.shape[:-1], permutation_size), np.int32)


@lu_pivots_to_permutation_p.def_lowering
def _lu_pivots_to_permutation_lower(ctx, pivots, *, permutation_size):
  return _lower_fun(ctx, lambda p: [_pivots_to_permutation(p, permutation_size)],
                    ctx.avals_in, [pivots])


lu_pivots_to_permutation_p.def_batch(_batch_to_front(lu_pivots_to_permutation_p))


def lu_pivots_to_permutation(pivots, permutation_size):
  """The permutation made by applying the row swaps `pivots` to range(permutation_size)."""
  if isinstance(permutation_size, core.Tracer):
    raise TypeError("As of JAX v0.7, parameters to jaxpr equations must have __hash__ and "
                    "__eq__ methods. In a call to primitive lu_pivots_to_permutation, the value "
                    "of parameter permutation_size was not hashable: "
                    f"{permutation_size}")
  return lu_pivots_to_permutation_p.bind(asarray_operand(pivots),
                                         permutation_size=permutation_size)


# ---- solving with an LU factorization ------------------------------------------------------------
def _lu_solve_perm(factors, perm, b, trans=0):
  """Solve a x = b (trans 0), aᵀ x = b (1) or aᴴ x = b (2) from a's LU factors; b [..., m, k].

  Rows are permuted by a permutation-matrix product (used inside derivative rules)."""
  if trans == 0:
    x = _mm(_permutation_matrix(perm, _dtype(b)), b)
    x = triangular_solve(factors, x, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(factors, x, left_side=True, lower=False)
  conj = trans == 2
  x = triangular_solve(factors, b, left_side=True, lower=False, transpose_a=True,
                       conjugate_a=conj)
  x = triangular_solve(factors, x, left_side=True, lower=True, transpose_a=True,
                       conjugate_a=conj, unit_diagonal=True)
  return _mm(_T(_permutation_matrix(perm, _dtype(b))), x)


def _broadcast_to(x, shape):
  """x with leading axes added/broadcast to `shape` (NumPy-style, trailing axes aligned)."""
  nd = len(shape)
  return shape_ops.broadcast_in_dim(x, tuple(shape), tuple(range(nd - _ndim(x), nd)))


def _take_rows(x, rows):
  """x[rows, :] for a matrix x [m, k] and int32 row indices (negative ones count from the end),
  as the gather NumPy-style indexing builds."""
  m, k = _shape(x)
  rows = lax.select(lax.lt(rows, lax.scalar_literal(0, np.int32)),
                    lax.add(rows, lax.scalar_literal(m, np.int32)), rows)
  idx = shape_ops.broadcast_in_dim(rows, (*_shape(rows), 1), (0,))
  dnums = slicing.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                         start_index_map=(0,), operand_batching_dims=(),
                                         start_indices_batching_dims=())
  return slicing.gather(x, idx, dnums, (1, k), mode=slicing.GatherScatterMode.PROMISE_IN_BOUNDS)


def _lu_solve_one(factors, perm, b, trans):
  """The solve for one factorization [m, m] and a right-hand side b [m, ...]."""
  m = _shape(factors)[0]
  x = shape_ops.reshape(b, (m, math.prod(_shape(b)[1:])))
  if trans == 0:
    x = _take_rows(x, perm)
    x = triangular_solve(factors, x, left_side=True, lower=True, unit_diagonal=True)
    x = triangular_solve(factors, x, left_side=True, lower=False)
  elif trans in (1, 2):
    conj = trans == 2
    x = triangular_solve(factors, x, left_side=True, lower=False, transpose_a=True,
                         conjugate_a=conj)
    x = triangular_solve(factors, x, left_side=True, lower=True, unit_diagonal=True,
                         transpose_a=True, conjugate_a=conj)
    _, inverse = sort_ops.sort_key_val(perm, shape_ops.iota(np.int32, _shape(perm)[0]))
    x = _take_rows(x, inverse)
  else:
    raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
  return shape_ops.reshape(x, _shape(b))


@jit(static_argnums=(3,))
def _lu_solve(factors, perm, b, trans):
  """a x = b (trans 0), aᵀ x = b (1) or aᴴ x = b (2) from a's LU factors and row permutation;
  b is [..., m] (a vector per matrix) or [..., m, k], with batch axes broadcast."""
  f_shape, b_shape = _shape(factors), _shape(b)
  if len(f_shape) < 2 or f_shape[-1] != f_shape[-2]:
    raise ValueError(f"last two dimensions of LU decomposition must be equal, got shape "
                     f"{f_shape}")
  if len(b_shape) < 1:
    raise ValueError(f"b matrix must have rank >= 1, got shape {b_shape}")
  vector = len(f_shape) == len(b_shape) + 1
  if vector:
    if b_shape[-1] != f_shape[-1]:
      raise ValueError(f"When LU decomposition matrix and b have the same number of "
                       f"dimensions, last axis of LU decomposition matrix (shape {f_shape}) "
                       f"and b array (shape {b_shape}) must match")
    b = shape_ops.broadcast_in_dim(b, (*b_shape, 1), tuple(range(len(b_shape))))
  elif b_shape[-2] != f_shape[-1]:
    raise ValueError(f"When LU decomposition matrix and b different numbers of dimensions, "
                     f"last axis of LU decomposition matrix (shape {f_shape}) and second to "
                     f"last axis of b array (shape {b_shape}) must match")
  batch = tuple(np.broadcast_shapes(f_shape[:-2], _shape(perm)[:-1], _shape(b)[:-2]))
  factors = _broadcast_to(factors, (*batch, *f_shape[-2:]))
  perm = _broadcast_to(perm, (*batch, _shape(perm)[-1]))
  b = _broadcast_to(b, (*batch, *_shape(b)[-2:]))
  fn = _lu_solve_one
  for _ in batch:
    fn = batching.vmap(fn, in_axes=(0, 0, 0, None))
  x = fn(factors, perm, b, trans)
  return shape_ops.squeeze(x, (_ndim(x) - 1,)) if vector else x


def lu_solve(factors, permutation, b, trans=0):
  """Solve with an LU factorization (lu, permutation) of a, batch axes broadcast."""
  return _lu_solve(factors, permutation, b, trans)


def _broadcasted_matvec(a, x):
  """a @ x for matrices a [..., n, m] and vectors x [..., m], batch axes broadcast."""
  batch = tuple(np.broadcast_shapes(_shape(a)[:-2], _shape(x)[:-1]))
  nb = len(batch)
  a = _broadcast_to(a, (*batch, *_shape(a)[-2:]))
  x = _broadcast_to(x, (*batch, _shape(x)[-1]))
  dnums = ([_ndim(a) - 1], [_ndim(x) - 1]), (list(range(nb)), list(range(nb)))
  return lax_dot.dot_general(a, x, dnums, precision=lax_dot.Precision.HIGHEST)


def _solve(a, b):
  """a⁻¹ b for square a [..., m, m] and b [..., m] or [..., m, k]: one LU factorization, reused
  by the derivatives through custom_linear_solve."""
  a_shape, b_shape = _shape(a), _shape(b)
  if not (len(a_shape) >= 2 and len(b_shape) in (len(a_shape), len(a_shape) - 1)
          and a_shape[-1] == a_shape[-2] == b_shape[len(a_shape) - 2]):
    raise ValueError(f"The arguments to solve must have shapes a=[..., m, m] and b=[..., m, k] "
                     f"or b=[..., m]; got a={a_shape} and b={b_shape}")
  out_shape = tuple(da if db == 1 else db for da, db in zip((*a_shape[:-1], 1), b_shape))
  b = shape_ops.broadcast_in_dim(b, out_shape, tuple(range(len(b_shape))))
  factors, _, perm = lu(lax.stop_gradient(a))

  def custom_solve(rhs):
    return solvers.custom_linear_solve(
        lambda x: _broadcasted_matvec(a, x), rhs,
        solve=lambda _, x: lu_solve(factors, perm, x, trans=0),
        transpose_solve=lambda _, x: lu_solve(factors, perm, x, trans=1))
  if len(a_shape) == len(b_shape) + 1:
    return custom_solve(b)
  return batching.vmap(custom_solve, len(b_shape) - 1, max(len(a_shape), len(b_shape)) - 1)(b)


def _real_dtype(dtype):
  return np.dtype(np.float32 if np.dtype(dtype) == np.complex64 else
                  np.float64 if np.dtype(dtype) == np.complex128 else dtype)


def _diag_matrix(d, dtype=None):
  """Square matrices [..., n, n] with the vectors d [..., n] on their diagonals."""
  dtype = dtype or _dtype(d)
  *batch, n = _shape(d)
  full = shape_ops.broadcast_in_dim(_astype(d, dtype), (*batch, n, n), (*range(len(batch)),
                                                                      len(batch) + 1))
  return lax.select(_eye(n, n, np.bool_, tuple(batch)), full, _zeros_like(full))


def _row(v):
  """Vectors [..., n] as rows [..., 1, n], to broadcast over the rows of a matrix."""
  return shape_ops.expand_dims(v, (_ndim(v) - 1,))


# ---- eigh: Hermitian eigendecomposition (syevd / heevd) -----------------------------------------
class EighImplementation(enum.Enum):
  """Which algorithm computes a Hermitian eigendecomposition (CPU has only QR)."""
  QR = "qr"
  JACOBI = "jacobi"
  QDWH = "qdwh"


eigh_p = core.Primitive("eigh")
eigh_p.multiple_results = True


@eigh_p.def_abstract_eval
def _eigh_abstract_eval(aval, *, lower, sort_eigenvalues, subset_by_index, algorithm):
  _check_inexact("eigh", aval)
  _check_rank("eigh", aval)
  if aval.shape[-1] != aval.shape[-2]:
    raise ValueError("Argument to symmetric eigendecomposition must have shape [..., n, n], "
                     f"got shape {aval.shape}")
  n = aval.shape[-1]
  d = n if subset_by_index is None else subset_by_index[1] - subset_by_index[0]
  batch = aval.shape[:-2]
  return [ShapedArray((*batch, n, d), aval.dtype),
          ShapedArray((*batch, d), _real_dtype(aval.dtype))]


@eigh_p.def_lowering
def _eigh_lower(ctx, x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
  aval, = ctx.avals_in
  v_aval, w_aval = ctx.avals_out
  n = aval.shape[-1]
  if not (subset_by_index is None or tuple(subset_by_index) == (0, n)):
    raise NotImplementedError("subset_by_index not supported on CPU and GPU")
  if algorithm == EighImplementation.QDWH:
    raise NotImplementedError("QDWH implementation is only supported on TPU")
  if algorithm == EighImplementation.JACOBI:
    raise NotImplementedError("Jacobi implementation is not supported on CPU")
  batch = aval.shape[:-2]
  fn = "heevd" if aval.dtype.kind == "c" else "syevd"
  v, w, info = _lapack_call(_lapack_target(fn, aval.dtype), [x], [aval],
                            [v_aval, w_aval, ShapedArray(batch, np.int32)], aliases={0: 0},
                            mode=_char("V"), uplo=_char("L" if lower else "U"))
  ok = _info_ok(info, batch)
  return [_nan_unless(ok, v, v_aval), _nan_unless(ok, w, w_aval)]


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index, algorithm):
  (a,), (a_dot,) = primals, tangents
  n = _shape(a)[-1]
  if not (subset_by_index is None or tuple(subset_by_index) == (0, n)):
    raise NotImplementedError("Derivatives not defined for partial eigen decomposition.")
  v, w_real = eigh_p.bind(_symmetrize(a), lower=lower, sort_eigenvalues=sort_eigenvalues,
                          subset_by_index=subset_by_index, algorithm=algorithm)
  # Nondegenerate perturbation theory: with P = vᴴ ȧ v, ẇ = diag(P) and v̇ = v (F ∘ P),
  # F_ij = 1 / (w_j - w_i) off the diagonal (the identity keeps the diagonal finite).
  dtype = _dtype(a)
  batch = _shape(a)[:-2]
  w = _astype(w_real, dtype)
  eye = _eye(n, n, dtype, batch)
  nb = len(batch)
  wj = shape_ops.broadcast_in_dim(w, (*batch, n, n), (*range(nb), nb + 1))
  wi = shape_ops.broadcast_in_dim(w, (*batch, n, n), tuple(range(nb + 1)))
  f = lax.sub(lax.integer_pow(lax.sub(lax.add(eye, wj), wi), -1), eye)
  p = _mm(_mm(_H(v), ad.instantiate(a_dot)), v)
  dv = _mm(v, lax.mul(f, p))
  dw = _diagonal(lax.real(p) if dtype.kind == "c" else p)
  return [v, w_real], [dv, dw]


eigh_p.def_jvp(_eigh_jvp)
eigh_p.def_batch(_batch_to_front(eigh_p))


def eigh(x, *, lower=True, symmetrize_input=True, sort_eigenvalues=True,
         subset_by_index=None, implementation=None):
  """Eigendecomposition (v, w) of Hermitian matrices x [..., n, n]: x v = v diag(w).

  w is real and ascending; the columns of v are orthonormal. With `symmetrize_input`,
  (x + xᴴ)/2 is decomposed; otherwise only the triangle named by `lower` is read.
  """
  x = asarray_operand(x)
  if symmetrize_input:
    shape = _shape(x)
    if len(shape) < 2 or shape[-1] != shape[-2]:
      # JAX fails here in the symmetrizing addition, with a TypeError: keep the class.
      raise TypeError(f"The input to eigh must be a square matrix, got shape {shape}.")
    x = _symmetrize(x)
  if subset_by_index is not None:
    subset_by_index = tuple(int(i) for i in subset_by_index)
  v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                     subset_by_index=subset_by_index, algorithm=implementation)
  return v, w


# ---- qr: geqrf / geqp3 + householder_product (orgqr / ungqr) -----------------------------------
def _batch_all_to_front(prim):
  """A batching rule for primitives whose operands all share the same leading batch axes."""
  def rule(args, dims, **params):
    size = next(_shape(x)[d] for x, d in zip(args, dims) if d is not batching.not_mapped)
    args = [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
    outs = prim.bind(*args, **params)
    if prim.multiple_results:
      return outs, [0] * len(outs)
    return outs, 0
  return rule


def _check_batch(name, *avals):
  if len({a.ndim - r for a, r in zip(avals, (2, 1))}) > 1:
    raise TypeError(f"All inputs to {name} must have the same number of batch dimensions, but "
                    f"got {[a.ndim - r for a, r in zip(avals, (2, 1))]} batch dimensions for "
                    "the inputs.")


geqrf_p = core.Primitive("geqrf")
geqrf_p.multiple_results = True


@geqrf_p.def_abstract_eval
def _geqrf_abstract_eval(aval):
  _check_inexact("geqrf", aval)
  _check_rank("geqrf", aval)
  *batch, m, n = aval.shape
  return [aval.strip_weak_type(), ShapedArray((*batch, min(m, n)), aval.dtype)]


@geqrf_p.def_lowering
def _geqrf_lower(ctx, x):
  aval, = ctx.avals_in
  return _lapack_call(_lapack_target("geqrf", aval.dtype), [x], [aval], ctx.avals_out,
                      aliases={0: 0})


geqrf_p.def_batch(_batch_to_front(geqrf_p))


def geqrf(a):
  """QR factors of a [..., m, n] in LAPACK's form: (r with reflectors below, taus)."""
  return tuple(geqrf_p.bind(asarray_operand(a)))


geqp3_p = core.Primitive("geqp3")
geqp3_p.multiple_results = True


@geqp3_p.def_abstract_eval
def _geqp3_abstract_eval(aval, jpvt, *, use_magma):
  _check_inexact("geqp3", aval, 0)
  _check_rank("geqp3", aval)
  if utils.dtype_class(jpvt.dtype) != utils.INT:
    raise TypeError(f"geqp3 does not accept dtype {jpvt.dtype.name} at position 1. Accepted "
                    "dtypes at position 1 are subtypes of integer.")
  _check_batch("geqp3", aval, jpvt)
  *batch, m, n = aval.shape
  return [aval.strip_weak_type(), jpvt.strip_weak_type(),
          ShapedArray((*batch, min(m, n)), aval.dtype)]


@geqp3_p.def_lowering
def _geqp3_lower(ctx, a, jpvt, *, use_magma):
  a_aval, _ = ctx.avals_in
  return _lapack_call(_lapack_target("geqp3", a_aval.dtype), [a, jpvt], ctx.avals_in,
                      ctx.avals_out, aliases={0: 0, 1: 1})


geqp3_p.def_batch(_batch_all_to_front(geqp3_p))


def geqp3(a, jpvt, *, use_magma=None):
  """Column-pivoted QR factors of a: (r with reflectors below, pivots (1-based), taus)."""
  return tuple(geqp3_p.bind(asarray_operand(a), asarray_operand(jpvt), use_magma=use_magma))


householder_product_p = core.Primitive("householder_product")


@householder_product_p.def_abstract_eval
def _householder_product_abstract_eval(a, taus):
  _check_inexact("householder_product", a, 0)
  _check_inexact("householder_product", taus, 1)
  _check_rank("householder_product", a, 0)
  if taus.ndim < 1:
    raise TypeError(f"Input 1 to householder_product must have rank at least 1, but got "
                    f"shape={taus.shape}")
  _check_batch("householder_product", a, taus)
  if a.dtype != taus.dtype:
    raise TypeError("householder_product requires arguments to have the same dtypes, got "
                    f"{a.dtype.name}, {taus.dtype.name}.")
  m, n = a.shape[-2:]
  if m < n:
    raise ValueError("The first argument to householder_product must have at least as many "
                     f"rows as columns, got shape {a.shape[-2:]}")
  if taus.shape[-1] > min(m, n):
    raise ValueError("The second argument to householder_product must not have more rows "
                     "than the minimum of the first argument's rows and columns.")
  return a.strip_weak_type()


@householder_product_p.def_lowering
def _householder_product_lower(ctx, a, taus):
  a_aval, _ = ctx.avals_in
  fn = "ungqr" if a_aval.dtype.kind == "c" else "orgqr"
  return _lapack_call(_lapack_target(fn, a_aval.dtype), [a, taus], ctx.avals_in,
                      ctx.avals_out, aliases={0: 0})


householder_product_p.def_batch(_batch_all_to_front(householder_product_p))


def householder_product(a, taus):
  """The unitary matrix [..., m, n] made by the Householder reflectors below a's diagonal."""
  return householder_product_p.bind(asarray_operand(a), asarray_operand(taus))


qr_p = core.Primitive("qr")
qr_p.multiple_results = True


@qr_p.def_abstract_eval
def _qr_abstract_eval(aval, *, pivoting, full_matrices, use_magma):
  _check_inexact("qr", aval)
  _check_rank("qr", aval)
  *batch, m, n = aval.shape
  k = m if full_matrices else min(m, n)
  outs = [ShapedArray((*batch, m, k), aval.dtype), ShapedArray((*batch, k, n), aval.dtype)]
  if pivoting:
    outs.append(ShapedArray((*batch, n), np.int32))
  return outs


def _qr_impl(a, *, pivoting, full_matrices):
  """QR from geqrf (or geqp3) and householder_product: the function qr_p lowers to."""
  *batch, m, n = _shape(a)
  dtype = _dtype(a)
  nb = len(batch)
  if m == 0 or n == 0:
    k = m if full_matrices else min(m, n)
    q = _eye(m, k, dtype, tuple(batch))
    r = _full((*batch, k, n), 0, dtype)
    return [q, r] + ([_full((*batch, n), 0, np.int32)] if pivoting else [])
  p = None
  if pivoting:
    r, p, taus = geqp3_p.bind(a, _full((*batch, n), 0, np.int32), use_magma=None)
    p = lax.sub(p, _full((*batch, n), 1, np.int32))   # 1-based -> 0-based
  else:
    r, taus = geqrf_p.bind(a)
  if m < n:
    q = householder_product_p.bind(shape_ops.slice_in_dim(r, 0, m, axis=nb + 1), taus)
  elif full_matrices:
    pads = [(0, 0, 0)] * (nb + 1) + [(0, m - n, 0)]
    q = householder_product_p.bind(shape_ops.pad(r, lax.scalar_literal(0, dtype), pads),
                                    taus)
  else:
    q = householder_product_p.bind(r, taus)
    r = shape_ops.slice_in_dim(r, 0, n, axis=nb)
  r = _triu(r)
  return [q, r] + ([p] if pivoting else [])


@qr_p.def_lowering
def _qr_lower(ctx, a, *, pivoting, full_matrices, use_magma):
  return _lower_fun(ctx, lambda x: _qr_impl(x, pivoting=pivoting, full_matrices=full_matrices),
                    ctx.avals_in, [a])


def _thin_qr_jvp(q, r, dx):
  """Tangents (dq, dr) of a thin QR x = q r, x [..., m, n] with m >= n, along dx."""
  dx_rinv = triangular_solve(r, dx)            # dx r⁻¹ (a right-side solve)
  qt_dx_rinv = _mm(_H(q), dx_rinv)
  lower = _tril(qt_dx_rinv, -1)
  do = lax.sub(lower, _H(lower))               # skew-Hermitian part
  if _dtype(q).kind == "c":                    # the free imaginary diagonal of a complex QR
    n = _shape(r)[-1]
    eye = _eye(n, n, _dtype(q), _shape(q)[:-2])
    imag = lax.sub(qt_dx_rinv, _astype(lax.real(qt_dx_rinv), _dtype(q)))
    do = lax.add(do, lax.mul(eye, imag))
  dq = lax.add(_mm(q, lax.sub(do, qt_dx_rinv)), dx_rinv)
  dr = _mm(lax.sub(qt_dx_rinv, do), r)
  return dq, dr


def _slice_last2(x, rows=None, cols=None):
  nb = _ndim(x) - 2
  if rows is not None:
    x = shape_ops.slice_in_dim(x, rows[0], rows[1], axis=nb)
  if cols is not None:
    x = shape_ops.slice_in_dim(x, cols[0], cols[1], axis=nb + 1)
  return x


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma):
  (x,), (dx,) = primals, tangents
  outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
  q, r = outs[:2]
  dx = ad.instantiate(dx)
  *batch, m, n = _shape(x)
  nb = len(batch)
  perm_zero = [ad.Zero(ad.tangent_aval(core.get_aval(outs[2])))] if pivoting else []
  if pivoting:   # x[..., p] = q r: differentiate with the same column permutation
    dx = _mm(dx, _T(_permutation_matrix(outs[2], _dtype(x))))
  if m < n:
    # x = [x1 x2] = q [r1 r2]: x1 = q r1 is a square QR and r2 = qᴴ x2.
    dq, dr1 = _thin_qr_jvp(q, _slice_last2(r, cols=(0, m)), _slice_last2(dx, cols=(0, m)))
    x2 = _slice_last2(x, cols=(m, n))
    if pivoting:
      x2 = _slice_last2(_mm(x, _T(_permutation_matrix(outs[2], _dtype(x)))), cols=(m, n))
    dr2 = lax.add(_mm(_H(dq), x2), _mm(_H(q), _slice_last2(dx, cols=(m, n))))
    return outs, [dq, shape_ops.concatenate([dr1, dr2], nb + 1)] + perm_zero
  q_mn = _slice_last2(q, cols=(0, n)) if full_matrices else q
  r_nn = _slice_last2(r, rows=(0, n)) if full_matrices else r
  dq_mn, dr_nn = _thin_qr_jvp(q_mn, r_nn, dx)
  if not full_matrices or m == n:
    return outs, [dq_mn, dr_nn] + perm_zero
  # The extra columns q_mp of a full Q (Roberts & Roberts, arXiv:2409.13374, eqs. 32-33):
  # z = q_pn (q_nn - I)⁻¹, dq_mp = dq_mn zᴴ - (q_mn + q_mp z)(dq_pn - z dq_nn)ᴴ.
  q_nn, q_pn = _slice_last2(q_mn, rows=(0, n)), _slice_last2(q_mn, rows=(n, m))
  q_mp = _slice_last2(q, cols=(n, m))
  dq_nn, dq_pn = _slice_last2(dq_mn, rows=(0, n)), _slice_last2(dq_mn, rows=(n, m))
  factors, _, perm = lu_p.bind(lax.sub(q_nn, _eye(n, n, _dtype(x), tuple(batch))))
  z_h = _lu_solve_perm(factors, perm, _H(q_pn), trans=2)
  z = _H(z_h)
  dq_mp = lax.sub(_mm(dq_mn, z_h), _mm(lax.add(q_mn, _mm(q_mp, z)),
                                      _H(lax.sub(dq_pn, _mm(z, dq_nn)))))
  dq = shape_ops.concatenate([dq_mn, dq_mp], nb + 1)
  dr = shape_ops.concatenate([dr_nn, _full((*batch, m - n, n), 0, _dtype(x))], nb)
  return outs, [dq, dr] + perm_zero


qr_p.def_jvp(_qr_jvp)
qr_p.def_batch(_batch_to_front(qr_p))


def qr(x, *, pivoting=False, full_matrices=True, use_magma=None):
  """QR decomposition x = q r of x [..., m, n]: (q, r), or (q, r, p) with x[..., p] = q r.

  q is [..., m, m] and r [..., m, n] with `full_matrices`, else [..., m, k] and [..., k, n]
  with k = min(m, n).
  """
  outs = qr_p.bind(asarray_operand(x), pivoting=bool(pivoting),
                   full_matrices=bool(full_matrices), use_magma=use_magma)
  return tuple(outs)


# ---- svd (gesdd / gesvd) ------------------------------------------------------------------------
class SvdAlgorithm(enum.Enum):
  """Which algorithm computes an SVD: on CPU, DEFAULT and DIVIDE_AND_CONQUER (gesdd) or QR."""
  DEFAULT = "default"
  QR = "QR"
  JACOBI = "Jacobi"
  POLAR = "polar"
  DIVIDE_AND_CONQUER = "divide_and_conquer"


svd_p = core.Primitive("svd")
svd_p.multiple_results = True


def _svd_shapes(shape, full_matrices, subset_by_index):
  *batch, m, n = shape
  rank = min(m, n)
  if subset_by_index is not None:
    if full_matrices and tuple(subset_by_index) != (0, rank):
      raise ValueError("full_matrices and subset_by_index cannot both be set")
    rank = min(rank, subset_by_index[1] - subset_by_index[0])
  return ((*batch, rank), (*batch, m, m if full_matrices else rank),
          (*batch, n if full_matrices else rank, n))


@svd_p.def_abstract_eval
def _svd_abstract_eval(aval, *, full_matrices, compute_uv, subset_by_index, algorithm):
  _check_inexact("svd", aval)
  _check_rank("svd", aval)
  s, u, vt = _svd_shapes(aval.shape, full_matrices, subset_by_index)
  outs = [ShapedArray(s, _real_dtype(aval.dtype))]
  if compute_uv:
    outs += [ShapedArray(u, aval.dtype), ShapedArray(vt, aval.dtype)]
  return outs


def _empty_svd(a, *, full_matrices, compute_uv):
  """The SVD of matrices with no rows or no columns (LAPACK is not called)."""
  *batch, m, n = _shape(a)
  batch = tuple(batch)
  s = _full((*batch, 0), 0, _real_dtype(_dtype(a)))
  if not compute_uv:
    return [s]
  if full_matrices:
    size = max(m, n)
    u = _eye(size, size, _dtype(a), batch)
  else:
    u = _full((*batch, m, n), 0, _dtype(a))
  v = _full((*batch, 0, 0), 0, _dtype(a))
  return [s, v, u] if m < n else [s, u, v]


@svd_p.def_lowering
def _svd_lower(ctx, x, *, full_matrices, compute_uv, subset_by_index, algorithm):
  aval, = ctx.avals_in
  *batch, m, n = aval.shape
  batch = tuple(batch)
  if not (subset_by_index is None or tuple(subset_by_index) == (0, min(m, n))):
    raise NotImplementedError("subset_by_index not implemented for CPU and GPU")
  if m == 0 or n == 0:
    return _lower_fun(ctx, lambda a: _empty_svd(a, full_matrices=full_matrices,
                                                compute_uv=compute_uv), [aval], [x])
  if algorithm in (None, SvdAlgorithm.DEFAULT, SvdAlgorithm.DIVIDE_AND_CONQUER):
    fn = "gesdd"
  elif algorithm == SvdAlgorithm.QR:
    fn = "gesvd"
  else:
    raise NotImplementedError("The SVD Jacobi and Polar algorithms are not implemented on CPU.")
  mode = "N" if not compute_uv else "A" if full_matrices else "S"
  _, u_shape, vt_shape = _svd_shapes(aval.shape, full_matrices, None)
  s_aval = ctx.avals_out[0]
  u_aval, vt_aval = ShapedArray(u_shape, aval.dtype), ShapedArray(vt_shape, aval.dtype)
  _, s, u, vt, info = _lapack_call(
      _lapack_target(fn, aval.dtype), [x], [aval],
      [aval, s_aval, u_aval, vt_aval, ShapedArray(batch, np.int32)], aliases={0: 0},
      mode=_char(mode))
  ok = _info_ok(info, batch)
  outs = [_nan_unless(ok, s, s_aval)]
  if compute_uv:
    outs += [_nan_unless(ok, u, u_aval), _nan_unless(ok, vt, vt_aval)]
  return outs


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm):
  (a,), (da,) = primals, tangents
  s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True,
                        subset_by_index=subset_by_index, algorithm=algorithm)
  *batch, m, n = _shape(a)
  batch = tuple(batch)
  if compute_uv and full_matrices and m != n:
    raise NotImplementedError(
        "Singular value decomposition JVP not implemented for full matrices: pass "
        "full_matrices=False (or compute_uv=False) to differentiate a non-square SVD.")
  dtype = _dtype(a)
  da = ad.instantiate(da)
  ut, v = _H(u), _H(vt)
  ds_mat = _mm(_mm(ut, da), v)                       # uᴴ da v
  k = _shape(s)[-1]
  ds = _diagonal(lax.real(ds_mat) if dtype.kind == "c" else ds_mat)
  if not compute_uv:
    return [s], [ds]
  # First-order perturbation of distinct singular values (Townsend's / Giles' formulas).
  s_row = _row(s)
  s_col = _T(s_row)
  eye_s = _eye(k, k, _dtype(s), batch)
  diffs = lax.mul(lax.add(s_row, s_col), lax.sub(s_row, s_col))   # s_j² - s_i²
  f = lax.sub(lax.div(_full(_shape(diffs), 1, _dtype(s)), lax.add(diffs, eye_s)), eye_s)
  f = _astype(f, dtype)
  s_c = _astype(s_row, dtype)
  dss = lax.mul(s_c, ds_mat)                          # dS diag(s)
  sds = lax.mul(_T(s_c), ds_mat)                      # diag(s) dS
  zeros = _astype(lax.eq(s, _full(_shape(s), 0, _dtype(s))), _dtype(s))
  s_inv = lax.sub(lax.div(_full(_shape(s), 1, _dtype(s)), lax.add(s, zeros)), zeros)
  half = lax.scalar_literal(0.5, dtype)
  du_dv_diag = lax.mul(lax.mul(half, lax.sub(ds_mat, _H(ds_mat))),
                       _diag_matrix(s_inv, dtype))
  du = _mm(u, lax.add(lax.mul(f, lax.add(dss, _H(dss))), du_dv_diag))
  dv = _mm(v, lax.mul(f, lax.add(sds, _H(sds))))
  if m > n:
    dav = _mm(da, v)
    du = lax.add(du, lax.div(lax.sub(dav, _mm(u, _mm(ut, dav))), s_c))
  if n > m:
    dahu = _mm(_H(da), u)
    dv = lax.add(dv, lax.div(lax.sub(dahu, _mm(v, _mm(vt, dahu))), s_c))
  return [s, u, vt], [ds, du, _H(dv)]


svd_p.def_jvp(_svd_jvp)
svd_p.def_batch(_batch_to_front(svd_p))


def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
  """Singular value decomposition of x [..., m, n]: (u, s, vh) with x = u diag(s) vh, or s.

  s is real and descending. u is [..., m, m] and vh [..., n, n] with `full_matrices`, else
  [..., m, k] and [..., k, n] with k = min(m, n).
  """
  if subset_by_index is not None:
    subset_by_index = tuple(int(i) for i in subset_by_index)
  outs = svd_p.bind(asarray_operand(x), full_matrices=bool(full_matrices),
                    compute_uv=bool(compute_uv), subset_by_index=subset_by_index,
                    algorithm=algorithm)
  if compute_uv:
    s, u, vt = outs
    return u, s, vt
  return outs[0]
