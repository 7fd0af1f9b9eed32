"""`sparsify`: run a function written for dense arrays on sparse (BCOO) arguments.

The function is traced to a jaxpr with each sparse argument standing in as a dense array of
its shape and dtype; the jaxpr is then interpreted with sparse values kept sparse: each
equation with a sparse operand goes through the sparse rule of its primitive (elementwise
multiplication and zero-preserving unary ops act on the stored data, dot_general becomes
bcoo_dot_general, reductions bcoo_reduce_sum, transposes/reshapes/slices their BCOO forms,
...), nested jit and custom_jvp calls are interpreted in place, and equations with dense
operands only are bound as they are. A primitive without a sparse rule raises JAX's
NotImplementedError. (JAX's `sparsify` does this with a trace of `SparseTracer`s by default
and with the same kind of interpreter for `use_tracer=False`; arrax uses the interpreter for
both.) The BCOO operator methods (`+`, `*`, `@`, `.sum()`, indexing, ...) are sparsified
jnp functions, as in JAX.
"""
from __future__ import annotations

import functools

import numpy as np

from arrax._src import core, tracing
from arrax._src.custom_derivatives import custom_jvp_call_p
from arrax._src.jit import jit_p
from arrax._src.lax import (
  broadcasting,
  convolution,
  shape_ops,
  slicing,
  special,
  stacking,
)
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import elementwise as lax
from arrax._src.lax.control_flow import conditionals, loops
from arrax._src.lax.control_flow.while_loop import while_loop, while_p
from arrax._src.numpy import indexing, lax_numpy, ufuncs
from arrax._src.sparse import bcoo
from arrax._src.sparse._base import JAXSparse
from arrax._src.sparse.bcoo import BCOO
from arrax._src.sparse.bcsr import BCSR
from arrax._src.tree_util import tree_flatten, tree_unflatten

sparse_rules_bcoo: dict = {}

_zero_preserving_linear_unary = [lax.conj_p, stacking.copy_p, lax.imag_p, lax.neg_p,
                                 lax.real_p]
_zero_preserving_unary = [lax.abs_p, lax.asin_p, lax.asinh_p, lax.atan_p, lax.atanh_p,
                          special.bessel_i1e_p, lax.expm1_p, lax.log1p_p, lax.sign_p,
                          lax.sin_p, lax.sinh_p, lax.sqrt_p, lax.square_p, lax.tan_p,
                          lax.tanh_p, lax.convert_element_type_p]
_densifying = [lax.acos_p, lax.acosh_p, special.bessel_i0e_p, lax.cos_p, lax.cosh_p, lax.eq_p,
               lax.exp_p, lax.ge_p, lax.gt_p, lax.le_p, lax.lt_p, lax.log_p, lax.ne_p,
               lax.xor_p]


class SparseTracer(core.Tracer):
  """The tracer type of JAX's tracing implementation of sparsify. arrax's sparsify interprets
  the traced jaxpr instead (see the module docstring), so no instance is ever made."""
  __slots__ = ("_spvalue",)


def _unimplemented(prim):
  if prim in _densifying:
    raise NotImplementedError(f"sparse rule for {prim} is not implemented because it would "
                              "result in dense output. If this is your intent, use "
                              "sparse.todense() to convert your arguments to dense matrices.")
  raise NotImplementedError(f"sparse rule for {prim} is not implemented.")


def _is_sparse(x):
  return isinstance(x, JAXSparse)


def _aval(x):
  if isinstance(x, JAXSparse):
    return core.ShapedArray(x.shape, x.dtype, getattr(x.data, "weak_type", False))
  return core.get_aval(x)


def eval_sparse(jaxpr, consts, args):
  """Interpret `jaxpr` on `args`, some of them sparse arrays (see the module docstring)."""
  env = {}

  def read(v):
    if isinstance(v, core.Literal):
      return v.val
    return env[v]

  for v, c in zip(jaxpr.constvars, consts):
    env[v] = c
  for v, a in zip(jaxpr.invars, args):
    env[v] = a
  for eqn in jaxpr.eqns:
    prim = eqn.primitive
    invals = [read(v) for v in eqn.invars]
    if any(_is_sparse(x) for x in invals):
      if any(isinstance(x, BCSR) for x in invals):
        invals = [x.to_bcoo() if isinstance(x, BCSR) else x for x in invals]
      rule = sparse_rules_bcoo.get(prim)
      if rule is None:
        _unimplemented(prim)
      out = rule(*invals, **eqn.params)
    else:
      out = prim.bind(*invals, **eqn.params)
    outs = out if prim.multiple_results else [out]
    for v, o in zip(eqn.outvars, outs):
      if not isinstance(v, core.DropVar):
        env[v] = o
  return [read(v) for v in jaxpr.outvars]


def _sparsify(f):
  @functools.wraps(f)
  def wrapped(*args, **params):
    leaves, in_tree = tree_flatten(args, is_leaf=_is_sparse)
    leaves = [x if _is_sparse(x) else (x if isinstance(x, core.Tracer) else
                                       lax_numpy.asarray(x)) for x in leaves]
    store = {}

    def flat(*xs):
      out = f(*tree_unflatten(in_tree, list(xs)), **params)
      out_leaves, store["tree"] = tree_flatten(out, is_leaf=_is_sparse)
      if any(_is_sparse(o) for o in out_leaves):
        raise NotImplementedError("sparsify: a function returning sparse arrays it was not "
                                  "given")
      return out_leaves
    jaxpr, consts = tracing.trace_to_jaxpr(flat, [_aval(x) for x in leaves])
    outs = eval_sparse(jaxpr, consts, leaves)
    return tree_unflatten(store["tree"], outs)
  return wrapped


def sparsify(f, use_tracer=False):
  """The function `f` (written for dense arrays) taking sparse (BCOO) arguments: operations
  on them stay sparse where a sparse rule exists, and raise NotImplementedError otherwise."""
  del use_tracer
  return _sparsify(f)


# ---- rules ------------------------------------------------------------------------------------
def _unique(x):
  if x.unique_indices:
    return x
  return bcoo.bcoo_sum_duplicates(x, nse=x.nse)


def _with_data(x, data, unique=None):
  return BCOO((data, x.indices), shape=x.shape, indices_sorted=x.indices_sorted,
              unique_indices=x.unique_indices if unique is None else unique)


def _unary(prim, linear):
  def rule(x, **params):
    if not linear:
      x = _unique(x)
    return _with_data(x, prim.bind(x.data, **params))
  return rule


for _p in _zero_preserving_linear_unary:
  sparse_rules_bcoo[_p] = _unary(_p, True)
for _p in _zero_preserving_unary:
  sparse_rules_bcoo[_p] = _unary(_p, False)


def _integer_pow(x, *, y):
  if y <= 0:
    raise NotImplementedError(f"sparse rule for {lax.integer_pow_p} with non-positive exponent "
                              f"{y} is not implemented because it would result in dense "
                              "output. If this is your intent, use sparse.todense() to convert "
                              "your argument to a dense array.")
  return _unary(lax.integer_pow_p, False)(x, y=y)


sparse_rules_bcoo[lax.integer_pow_p] = _integer_pow


def _add(x, y):
  if _is_sparse(x) and _is_sparse(y):
    if x.shape != y.shape:
      raise NotImplementedError("Addition between sparse matrices of different shapes.")
    if x.indices is y.indices:
      return _with_data(x, lax.add(x.data, y.data))
    if x.indices.ndim != y.indices.ndim or x.data.ndim != y.data.ndim:
      raise NotImplementedError("Addition between sparse matrices with different batch/dense "
                                "dimensions.")
    ax = x.indices.ndim - 2
    return BCOO((shape_ops.concatenate([x.data, y.data], ax),
                 shape_ops.concatenate([x.indices, y.indices], ax)), shape=x.shape)
  if _is_sparse(y):
    x, y = y, x
  out_shape = lax_numpy.broadcast_shapes(x.shape, np.shape(y))
  if np.shape(y) != out_shape:
    raise NotImplementedError(
        "Addition between a sparse array X and a dense array Y is not implemented when the "
        "output shape is larger than Y.shape. This is to prevent silent densification of a "
        "large sparse array. If this is your intent, you can explicitly cast the sparse array "
        "to a dense matrix.")
  return lax.add(x.todense(), y)


sparse_rules_bcoo[lax.add_p] = _add


def _sub(x, y):
  if _is_sparse(x) and _is_sparse(y):
    return _add(x, sparse_rules_bcoo[lax.neg_p](y))
  raise NotImplementedError("Subtraction between sparse and dense array.")


sparse_rules_bcoo[lax.sub_p] = _sub


def _mul(x, y):
  if _is_sparse(x) and _is_sparse(y):
    if x.indices is y.indices and x.unique_indices:
      return _with_data(x, lax.mul(x.data, y.data), unique=True)
    return bcoo.bcoo_multiply_sparse(x, y)
  if _is_sparse(y):
    x, y = y, x
  return _with_data(x, bcoo.bcoo_multiply_dense(x, y))


sparse_rules_bcoo[lax.mul_p] = _mul


def _div(x, y):
  if _is_sparse(y):
    raise NotImplementedError("Division by a sparse array is not implemented because it would "
                              "result in dense output. If this is your intent, use "
                              "sparse.todense() to convert your arguments to a dense array.")
  return _with_data(x, bcoo.bcoo_multiply_dense(x, ufuncs.true_divide(1.0, y)))


sparse_rules_bcoo[lax.div_p] = _div


def _reduce_sum(x, *, axes, **_):
  mat = bcoo.bcoo_reduce_sum(x, axes=axes)
  if mat.shape == ():
    return mat.data.sum()
  return mat


sparse_rules_bcoo[broadcasting.reduce_sum_p] = _reduce_sum


def _transpose(x, *, permutation):
  permutation = tuple(permutation)
  nb, ns = x.n_batch, x.n_sparse
  out = bcoo.bcoo_transpose(x, permutation=permutation)
  same = permutation[nb:nb + ns] == tuple(range(nb, nb + ns))
  return BCOO((out.data, out.indices), shape=out.shape,
              indices_sorted=x.indices_sorted and same, unique_indices=x.unique_indices)


sparse_rules_bcoo[broadcasting.transpose_p] = _transpose


def _dot_general(lhs, rhs, *, dimension_numbers, preferred_element_type=None, **_):
  return bcoo.bcoo_dot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                               preferred_element_type=preferred_element_type)


sparse_rules_bcoo[lax_dot.dot_general_p] = _dot_general


def _broadcast_in_dim(x, *, shape, broadcast_dimensions, **_):
  return bcoo.bcoo_broadcast_in_dim(x, shape=shape, broadcast_dimensions=broadcast_dimensions)


sparse_rules_bcoo[broadcasting.broadcast_in_dim_p] = _broadcast_in_dim


def _reshape(x, *, new_sizes, dimensions=None, **_):
  return bcoo.bcoo_reshape(x, new_sizes=new_sizes, dimensions=dimensions)


sparse_rules_bcoo[broadcasting.reshape_p] = _reshape
sparse_rules_bcoo[broadcasting.squeeze_p] = lambda x, *, dimensions: bcoo.bcoo_squeeze(
    x, dimensions=dimensions)
sparse_rules_bcoo[shape_ops.rev_p] = lambda x, *, dimensions: bcoo.bcoo_rev(x, dimensions)
sparse_rules_bcoo[shape_ops.slice_p] = lambda x, *, start_indices, limit_indices, strides: \
    bcoo.bcoo_slice(x, start_indices=start_indices, limit_indices=limit_indices,
                    strides=strides)


def _concatenate(*xs, dimension):
  xs = [x if _is_sparse(x) else bcoo.bcoo_fromdense(x) for x in xs]
  return bcoo.bcoo_concatenate(xs, dimension=dimension)


sparse_rules_bcoo[shape_ops.concatenate_p] = _concatenate


def _dynamic_slice(x, *starts, slice_sizes, **_):
  return bcoo.bcoo_dynamic_slice(x, starts, slice_sizes=slice_sizes)


sparse_rules_bcoo[shape_ops.dynamic_slice_p] = _dynamic_slice


def _stack(*xs, axis):
  xs = [x if _is_sparse(x) else bcoo.bcoo_fromdense(x) for x in xs]
  shape = xs[0].shape
  new_shape = shape[:axis] + (1,) + shape[axis:]
  bdims = [d if d < axis else d + 1 for d in range(len(shape))]
  return bcoo.bcoo_concatenate(
      [bcoo.bcoo_broadcast_in_dim(x, shape=new_shape, broadcast_dimensions=bdims) for x in xs],
      dimension=axis)


sparse_rules_bcoo[stacking.stack_p] = _stack


def _gather(x, idx, *, dimension_numbers, slice_sizes, unique_indices, indices_are_sorted,
            mode, fill_value, **_):
  if _is_sparse(idx):
    _unimplemented(slicing.gather_p)
  return bcoo.bcoo_gather(x, idx, dimension_numbers, slice_sizes,
                          unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                          mode=mode, fill_value=fill_value)


sparse_rules_bcoo[slicing.gather_p] = _gather


def _conv(lhs, rhs, **params):
  return bcoo.bcoo_conv_general_dilated(lhs, rhs, **{
      k: v for k, v in params.items()
      if k in ("window_strides", "padding", "lhs_dilation", "rhs_dilation",
               "dimension_numbers", "feature_group_count", "batch_group_count")})


sparse_rules_bcoo[convolution.conv_general_dilated_p] = _conv


def _call(*args, jaxpr, **_):
  return eval_sparse(jaxpr.jaxpr, jaxpr.consts, list(args))


def _custom_jvp(*args, call_jaxpr, **_):
  return eval_sparse(call_jaxpr.jaxpr, call_jaxpr.consts, list(args))


def _cond(index, *operands, branches, **_):
  if _is_sparse(index):
    _unimplemented(conditionals.cond_p)
  fns = [lambda *ops, b=b: eval_sparse(b.jaxpr, b.consts, list(ops)) for b in branches]
  return conditionals.switch(index, fns, *operands)


sparse_rules_bcoo[conditionals.cond_p] = _cond


def _while(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts, **_):
  cconsts, bconsts = args[:cond_nconsts], args[cond_nconsts:cond_nconsts + body_nconsts]
  init = args[cond_nconsts + body_nconsts:]

  def cond_fun(carry):
    return eval_sparse(cond_jaxpr.jaxpr, cond_jaxpr.consts, [*cconsts, *carry])[0]

  def body_fun(carry):
    return tuple(eval_sparse(body_jaxpr.jaxpr, body_jaxpr.consts, [*bconsts, *carry]))
  return list(while_loop(cond_fun, body_fun, tuple(init)))


sparse_rules_bcoo[while_p] = _while


def _scan(*args, jaxpr, num_consts, num_carry, length, reverse, unroll=1, **_):
  consts, carry, xs = (args[:num_consts], args[num_consts:num_consts + num_carry],
                       args[num_consts + num_carry:])
  if xs:
    raise NotImplementedError("sparse rule for scan with x values.")

  def body(c, _):
    outs = eval_sparse(jaxpr.jaxpr, jaxpr.consts, [*consts, *c])
    return tuple(outs[:num_carry]), tuple(outs[num_carry:])
  c_out, ys = loops.scan(body, tuple(carry), None, length=length, reverse=reverse,
                         unroll=unroll)
  return [*c_out, *ys]


sparse_rules_bcoo[loops.scan_p] = _scan
sparse_rules_bcoo[jit_p] = _call
sparse_rules_bcoo[custom_jvp_call_p] = _custom_jvp


# ---- BCOO / BCSR methods made with sparsify ---------------------------------------------------
def _sum(self, *args, **kwargs):
  """Sum of the array's elements (over `axis`)."""
  return sparsify(lambda x: x.sum(*args, **kwargs))(self)


def _reshape_method(self, *args, **kwargs):
  """The array with a new shape."""
  return sparsify(lambda x: x.reshape(*args, **kwargs))(self)


def _astype(self, *args, **kwargs):
  """The array converted to a dtype."""
  return sparsify(lambda x: x.astype(*args, **kwargs))(self)


def _take(arr, idx, indices_are_sorted=False, unique_indices=False, mode=None,
          fill_value=None):
  result = sparsify(lambda a: indexing.getitem(a, idx))(arr)
  if not isinstance(result, BCOO) and np.size(result) == 0:
    result = bcoo.bcoo_fromdense(result)
  return result


def _iter(arr):
  return iter(arr[i] for i in range(arr.shape[0]))


def _swap(f):
  return lambda a, b: f(b, a)


_bcoo_methods = {
    "astype": _astype, "reshape": _reshape_method, "sum": _sum,
    "__abs__": sparsify(ufuncs.absolute), "__neg__": sparsify(ufuncs.negative),
    "__pos__": sparsify(ufuncs.positive), "__matmul__": sparsify(lax_numpy.matmul),
    "__rmatmul__": sparsify(_swap(lax_numpy.matmul)), "__mul__": sparsify(ufuncs.multiply),
    "__rmul__": sparsify(_swap(ufuncs.multiply)), "__truediv__": sparsify(ufuncs.true_divide),
    "__rtruediv__": sparsify(_swap(ufuncs.true_divide)), "__add__": sparsify(ufuncs.add),
    "__radd__": sparsify(_swap(ufuncs.add)), "__sub__": sparsify(ufuncs.subtract),
    "__rsub__": sparsify(_swap(ufuncs.subtract)),
    "__pow__": lambda x, y: sparsify(lambda x: ufuncs.power(x, y))(x),
    "__rpow__": sparsify(_swap(ufuncs.power)), "__getitem__": _take, "__iter__": _iter,
    "__gt__": sparsify(ufuncs.greater), "__ge__": sparsify(ufuncs.greater_equal),
    "__lt__": sparsify(ufuncs.less), "__le__": sparsify(ufuncs.less_equal),
    "__eq__": sparsify(ufuncs.equal), "__ne__": sparsify(ufuncs.not_equal),
}
for _name, _impl in _bcoo_methods.items():
  setattr(BCOO, _name, _impl)

for _name, _impl in {"__matmul__": sparsify(lax_numpy.matmul),
                     "__rmatmul__": sparsify(_swap(lax_numpy.matmul)),
                     "__getitem__": lambda arr, idx: sparsify(
                         lambda a: indexing.getitem(a, idx))(arr)}.items():
  setattr(BCSR, _name, _impl)

