"""The public differentiation API: jvp, linearize, vjp, grad, value_and_grad, jacobians.

Each function flattens pytrees, runs the machinery of `ad.py` on flat lists, and checks its
inputs with JAX's error classes and messages.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from arrax._src import ad, api_util, batching, core, dtypes, traceback_util
from arrax._src.ad import Zero
from arrax._src.lax import elementwise as _lax
from arrax._src.lax import shape_ops
from arrax._src.lax.control_flow.common import user_value
from arrax._src.lax.elementwise import convert_element_type_p
from arrax._src.numpy import creation, ufuncs
from arrax._src.tracing import trace_to_jaxpr
from arrax._src.lax.utils import scalar_literal
from arrax._src.jit import jit
from arrax._src.tree_util import (Partial, register_dataclass, tree_flatten, tree_map,
                                  tree_structure, tree_transpose, tree_unflatten)


# ---- values crossing the API boundary --------------------------------------------------------
def _tangent_in(primal, tangent, where):
  """Check one tangent against its primal; float0 tangents become symbolic zeros."""
  p_aval = core.get_aval(primal)
  try:
    t_aval = core.get_aval(tangent)
  except TypeError:
    raise TypeError(f"{where} values must be arrays or scalars, got {tangent!r}.") from None
  expected = ad.tangent_dtype(p_aval.dtype)
  if t_aval.dtype != expected:
    raise TypeError(
        f"primal and tangent arguments to jax.jvp do not match; dtypes must be equal, or in "
        f"case of int/bool primal dtype the tangent dtype must be float0. Got primal dtype "
        f"{p_aval.dtype} and so expected tangent dtype {expected}, but got tangent dtype "
        f"{t_aval.dtype} instead.")
  if t_aval.shape != p_aval.shape:
    raise ValueError(f"jvp called with different primal and tangent shapes; Got primal shape "
                     f"{p_aval.shape} and tangent shape as {t_aval.shape}")
  if ad.is_float0(t_aval):
    return Zero(t_aval)
  return tangent


def _flat_fun(fun, in_tree, has_aux=False):
  """Wrap pytree `fun` as flat-in/flat-out; `store` gets the output treedef (and aux)."""
  store = {}

  def flat(*leaves):
    args = tree_unflatten(in_tree, leaves)
    out = fun(*args)
    if has_aux:
      if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError("has_aux=True requires the function to return a pair (output, aux), "
                        f"got {type(out).__name__}.")
      out, aux = out
      store["aux"] = aux
    out_leaves, out_tree = tree_flatten(out)
    store["out_tree"] = out_tree
    return out_leaves
  return flat, store


def _strip_aux(trace, aux):
  """aux values leave the transformation as their primals."""
  def strip(x):
    if isinstance(x, ad.JVPTracer) and x._trace is trace:
      return x.primal
    return x
  return tree_map(strip, aux)


# ---- forward mode ---------------------------------------------------------------------------
@traceback_util.api_boundary
def jvp(fun, primals, tangents, has_aux=False):
  """Evaluate `fun` and its Jacobian-vector product at `primals` along `tangents`.

  Returns (primals_out, tangents_out), plus aux when `has_aux`.
  """
  if not isinstance(primals, (tuple, list)):
    raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; found "
                    f"{type(primals).__name__} and {type(tangents).__name__}.")
  if not isinstance(tangents, (tuple, list)):
    raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; found "
                    f"{type(primals).__name__} and {type(tangents).__name__}.")
  p_leaves, p_tree = tree_flatten(tuple(primals))
  t_leaves, t_tree = tree_flatten(tuple(tangents))
  if p_tree != t_tree:
    raise TypeError("primal and tangent arguments to jax.jvp must have the same tree "
                    f"structure; primals have tree structure {p_tree} whereas tangents have "
                    f"tree structure {t_tree}.")
  t_leaves = [_tangent_in(p, t, "jvp tangent") for p, t in zip(p_leaves, t_leaves)]
  flat, store = _flat_fun(fun, p_tree, has_aux)
  trace_box = []

  def traced(*xs):
    trace_box.append(core.current_trace())
    outs = flat(*xs)
    if has_aux:
      store["aux"] = _strip_aux(trace_box[0], store["aux"])
    return outs
  out_p, out_t = ad.jvp_flat(traced, p_leaves, t_leaves)
  out_tree = store["out_tree"]
  out_p = tree_unflatten(out_tree, [user_value(x) for x in out_p])
  out_t = tree_unflatten(out_tree, [user_value(x) for x in out_t])
  if has_aux:
    return out_p, out_t, store["aux"]
  return out_p, out_t


@traceback_util.api_boundary
def linearize(fun, *primals, has_aux=False):
  """Evaluate `fun` at `primals` and return its linearization `f_jvp(*tangents)` there."""
  p_leaves, p_tree = tree_flatten(primals)
  flat, store = _flat_fun(fun, p_tree, has_aux)
  out_p, lin = _linearize(flat, p_leaves, store, has_aux)
  out_tree = store["out_tree"]

  def f_jvp(*tangents):
    t_leaves, t_tree = tree_flatten(tangents)
    if t_tree != p_tree:
      raise TypeError(f"linearized function called on tangent values inconsistent with the "
                      f"original primal values: got tangent tree {t_tree} for primal tree "
                      f"{p_tree}.")
    ts = [_tangent_in(p, t, "linearize tangent") for p, t in zip(p_leaves, t_leaves)]
    return tree_unflatten(out_tree, [user_value(x) for x in lin.jvp(ts)])

  out = tree_unflatten(out_tree, [user_value(x) for x in out_p])
  if has_aux:
    return out, f_jvp, store["aux"]
  return out, f_jvp


def _linearize(flat, p_leaves, store, has_aux):
  if has_aux:
    def traced(*xs):
      trace = core.current_trace()
      outs = flat(*xs)
      store["aux"] = _strip_aux(trace, store["aux"])
      return outs
    return ad.linearize_flat(traced, p_leaves)
  return ad.linearize_flat(flat, p_leaves)


# ---- reverse mode ---------------------------------------------------------------------------
@traceback_util.api_boundary
def vjp(fun, *primals, has_aux=False, reduce_axes=()):
  """Evaluate `fun` at `primals`; return (out, vjp_fn) with vjp_fn(ct) -> input cotangents.

  As in JAX, `vjp_fn` is a pytree whose leaves are the residuals: first the primal inputs it
  needs (in input order), then the other residuals (so it can be returned from a jit).
  """
  if reduce_axes:
    raise NotImplementedError("reduce_axes argument to vjp is deprecated")
  p_leaves, p_tree = tree_flatten(primals)
  flat, store = _flat_fun(fun, p_tree, has_aux)
  out_p, lin = _linearize(flat, p_leaves, store, has_aux)
  out_tree = store["out_tree"]
  out_avals = [core.get_aval(x) for x in out_p]
  spec, args_res, opaque = _split_residuals(lin.consts, p_leaves, p_tree)
  lin = ad.LinearFunction(lin.jaxpr, None, lin.in_avals, lin.out_avals, lin.out_zeros)
  bwd = functools.partial(_vjp_bwd, fun, lin, spec, p_tree, out_tree, out_avals)
  pullback = Partial(bwd, args_res, opaque)
  out = tree_unflatten(out_tree, [user_value(x) for x in out_p])
  if has_aux:
    return out, pullback, store["aux"]
  return out, pullback


def _split_residuals(residuals, p_leaves, p_tree):
  """Residuals that are primal inputs are kept in a tree like the inputs (None where unused);
  the rest are listed in order. spec[i] = (is_input, index) locates residual i."""
  pos = {id(x): i for i, x in enumerate(p_leaves)}
  used = {pos[id(r)] for r in residuals if id(r) in pos}
  used_rank = {i: k for k, i in enumerate(sorted(used))}
  spec, opaque = [], []
  for r in residuals:
    i = pos.get(id(r))
    if i is None:
      spec.append((False, len(opaque)))
      opaque.append(r)
    else:
      spec.append((True, used_rank[i]))
  args_res = tree_unflatten(p_tree, [x if i in used else None for i, x in enumerate(p_leaves)])
  return spec, args_res, opaque


def _vjp_bwd(fun, lin, spec, p_tree, out_tree, out_avals, args_res, opaque, *cts):
  """The vjp function: `lin` (without residuals) transposed, with the residuals the pytree
  leaves `args_res` and `opaque` hold."""
  if len(cts) != 1:
    raise TypeError(f"The function returned by `jax.vjp` applied to {fun} takes one "
                    f"argument (a pytree like the function's output), got {len(cts)}.")
  ct_leaves, ct_tree = tree_flatten(cts[0])
  if ct_tree != out_tree:
    raise ValueError(f"unexpected tree structure of argument to vjp function: got "
                     f"{ct_tree}, but expected to match {out_tree}")
  checked = [_check_ct(ct, aval) for ct, aval in zip(ct_leaves, out_avals)]
  inputs = tree_flatten(args_res)[0]
  residuals = [inputs[k] if is_input else opaque[k] for is_input, k in spec]
  in_cts = lin.transpose(checked, residuals)
  return tree_unflatten(p_tree, [user_value(ct) for ct in in_cts])


def _check_ct(ct, primal_aval):
  """The cotangent `ct` for an output of type `primal_aval`, checked as JAX does: same shape,
  the tangent dtype (a float0 cotangent's slot takes any dtype, as a zero)."""
  aval = core.get_aval(ct)
  expected = primal_aval.update(dtype=ad.tangent_dtype(primal_aval.dtype), weak_type=False)
  if (aval.shape != expected.shape or aval.vma != expected.vma
      or getattr(aval, "sharding", None) != getattr(expected, "sharding", None)
      or not (aval.dtype == expected.dtype or expected.dtype == dtypes.float0)):
    raise ValueError(
        f"unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got "
        f"{aval.str_short()}, but expected {expected.str_short()} because the corresponding "
        f"output of the differentiated function had JAX type {primal_aval.str_short()}")
  if expected.dtype == dtypes.float0:
    return Zero(expected)
  return ct


def _check_input_dtype(x, holomorphic, allow_int):
  dt = core.get_aval(x).dtype
  if holomorphic and not dtypes.issubdtype(dt, np.complexfloating):
    raise TypeError(f"grad with holomorphic=True requires inputs with complex dtype, but got "
                    f"{dt.name}.")
  if (dtypes.issubdtype(dt, np.integer) or dt == np.bool_ or dt == dtypes.float0):
    if not allow_int:
      raise TypeError(f"grad requires real- or complex-valued inputs (input dtype that is a "
                      f"sub-dtype of np.inexact), but got {dt.name}. If you want to use "
                      "Boolean- or integer-valued inputs, use vjp or set allow_int to True.")
  elif not dtypes.issubdtype(dt, np.inexact):
    raise TypeError(f"grad requires numerical inputs, got {dt.name}.")


def _check_scalar_output(x, holomorphic):
  try:
    aval = core.get_aval(x)
  except TypeError:
    raise TypeError(f"Gradient only defined for scalar-output functions. Output was {x}.") \
        from None
  if aval.shape != ():
    raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: "
                    f"{aval.shape}.")
  dt = aval.dtype
  if holomorphic:
    if not dtypes.issubdtype(dt, np.complexfloating):
      raise TypeError(f"grad with holomorphic=True requires outputs with complex dtype, but "
                      f"got {dt.name}.")
  elif not dtypes.issubdtype(dt, np.floating):
    raise TypeError(
        f"grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
        f"but got {dt.name}. For holomorphic differentiation, pass holomorphic=True. For "
        "differentiation of non-holomorphic functions involving complex outputs, use jax.vjp "
        "directly.")
  return aval


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=()):
  """A function returning (fun(*args), gradient of fun with respect to args[argnums])."""
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  argnums = api_util.ensure_index(argnums)
  nums = (argnums,) if isinstance(argnums, int) else argnums

  @functools.wraps(fun, updated=())
  @traceback_util.api_boundary
  def value_and_grad_f(*args, **kwargs):
    max_num = max(nums) if nums else -1
    if max_num >= len(args) or (nums and min(nums) < -len(args)):
      raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                      f"{max_num + 1} positional arguments to be passed by the caller, but got "
                      f"only {len(args)} positional arguments.")
    norm = [n % len(args) for n in nums]
    dyn = tuple(args[n] for n in norm)
    d_leaves, d_tree = tree_flatten(dyn)
    for x in d_leaves:
      _check_input_dtype(x, holomorphic, allow_int)

    def partial_fun(*dyn_args):
      full = list(args)
      for n, a in zip(norm, dyn_args):
        full[n] = a
      return fun(*full, **kwargs)

    flat, store = _flat_fun(partial_fun, d_tree, has_aux)
    out_p, lin = _linearize(flat, d_leaves, store, has_aux)
    if store["out_tree"].num_leaves != 1 or len(out_p) != 1:
      out = tree_unflatten(store["out_tree"], out_p)
      raise TypeError(f"Gradient only defined for scalar-output functions. Output was {out}.")
    aval = _check_scalar_output(out_p[0], holomorphic)
    seed = scalar_literal(1, aval.dtype, aval.weak_type)
    cts = lin.transpose([seed])
    grads = tree_unflatten(d_tree, [user_value(ct) for ct in cts])
    g = grads[0] if isinstance(argnums, int) else grads
    value = tree_unflatten(store["out_tree"], [user_value(x) for x in out_p])
    if has_aux:
      return (value, store["aux"]), g
    return value, g

  return value_and_grad_f


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
  """The gradient of scalar-valued `fun` with respect to positional argument(s) `argnums`.

  Example:
    >>> grad(lambda x: x ** 4 + 3)(1.0)
    Array(4., dtype=float32, weak_type=True)
  """
  vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes)

  @functools.wraps(fun, updated=())
  @traceback_util.api_boundary
  def grad_f(*args, **kwargs):
    if has_aux:
      (_, aux), g = vg(*args, **kwargs)
      return g, aux
    return vg(*args, **kwargs)[1]

  return grad_f



# ---- Jacobians, Hessians and linear transposition --------------------------------------------
def _vmap(fun, **kwargs):
  return batching.vmap(fun, **kwargs)


def _argnums_partial(fun, argnums, args, kwargs):
  """(f of the dynamic args only, the dynamic args) for positions `argnums` of `args`."""
  nums = api_util.inbounds(len(args), api_util.ensure_index_tuple(argnums))

  def f_dyn(*dyn):
    full = list(args)
    for i, x in zip(nums, dyn):
      full[i] = x
    return fun(*full, **kwargs)
  return f_dyn, tuple(args[i] for i in nums)


def _jac_input_check(name, holomorphic, allow_int, x):
  dt = core.get_aval(x).dtype
  if holomorphic and not dtypes.issubdtype(dt, np.complexfloating):
    raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, but got "
                    f"{dt.name}.")
  if name == "jacfwd":
    if not holomorphic and not dtypes.issubdtype(dt, np.floating):
      raise TypeError(
          "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of np.floating), "
          f"but got {dt.name}. For holomorphic differentiation, pass holomorphic=True. For "
          "differentiation of non-holomorphic functions involving complex inputs or integer "
          "inputs, use jax.jvp directly.")
    return
  if dtypes.issubdtype(dt, np.integer) or dt == np.bool_:
    if not allow_int:
      raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that is a "
                      f"sub-dtype of np.inexact), but got {dt.name}. If you want to use "
                      "Boolean- or integer-valued inputs, use vjp or set allow_int to True.")
  elif not dtypes.issubdtype(dt, np.inexact):
    raise TypeError(f"{name} requires numerical-valued inputs (input dtype that is a sub-dtype "
                    f"of np.bool_ or np.number), but got {dt.name}.")


def _jac_output_check(name, holomorphic, x):
  dt = core.get_aval(x).dtype
  if holomorphic:
    if not dtypes.issubdtype(dt, np.complexfloating):
      raise TypeError(f"{name} with holomorphic=True requires outputs with complex dtype, but "
                      f"got {dt.name}.")
    return
  if name == "jacfwd":
    return
  if dtypes.issubdtype(dt, np.complexfloating):
    raise TypeError(
        f"{name} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
        f"but got {dt.name}. For holomorphic differentiation, pass holomorphic=True. For "
        "differentiation of non-holomorphic functions involving complex outputs, use jax.vjp "
        "directly.")
  if not dtypes.issubdtype(dt, np.floating):
    raise TypeError(
        f"{name} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
        f"but got {dt.name}. For differentiation of functions with integer outputs, use jax.vjp "
        "directly.")


def _cast_like(x, example, force=False):
  """`x` with the dtype and weak type of `example` (dropping an imaginary part if needed).

  `force` stages the conversion even when the type already agrees (JAX does so for the
  constant standard basis, so its jaxprs show it).
  """
  ex = core.get_aval(example)
  aval = core.get_aval(x)
  if (dtypes.issubdtype(aval.dtype, np.complexfloating)
      and not dtypes.issubdtype(ex.dtype, np.complexfloating)):
    x = ufuncs.real(x)
  if force and aval.dtype == ex.dtype:
    return convert_element_type_p.bind(x, new_dtype=ex.dtype, weak_type=ex.weak_type,
                                       sharding=None)
  return _lax._convert_element_type(x, ex.dtype, ex.weak_type)


def _unravel(tree, axis, example, arr, force_cast=False):
  """Split `arr` along `axis` into one piece per leaf of `tree`, each reshaped so that axis
  becomes the leaf's shape and cast like `example` (or like the leaf when `example` is None)."""
  leaves, treedef = tree_flatten(tree)
  shape = tuple(core.get_aval(arr).shape)
  axis = axis % len(shape)
  sizes = [core.get_aval(l).size for l in leaves]
  # NumPy integers, as JAX computes them (its jaxprs print `sizes=(np.int64(3),)`).
  bounds = np.concatenate([[0], np.cumsum(sizes[:-1], dtype=np.int64), [shape[axis]]])
  pieces = shape_ops.split_p.bind(arr, sizes=tuple(np.diff(bounds)), axis=axis)
  parts = []
  for leaf, piece in zip(leaves, pieces):
    new_shape = shape[:axis] + tuple(np.shape(leaf)) + shape[axis + 1:]
    piece = shape_ops.reshape(piece, new_shape)
    parts.append(_cast_like(piece, leaf if example is None else example, force_cast))
  return tree_unflatten(treedef, parts)


def _std_basis(tree):
  """The standard basis of the space of `tree`: each leaf gets a leading axis of size n (the
  total number of elements), together forming the n x n identity."""
  leaves = tree_flatten(tree)[0]
  n = sum(core.get_aval(l).size for l in leaves)
  dtype = dtypes.result_type(*leaves)
  return _unravel(tree, 1, None, creation.eye(n, dtype=dtype), force_cast=True)


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
  """Jacobian of `fun` by forward mode, one column per input element (vmapped `jvp`)."""
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  argnums = api_util.ensure_index(argnums)

  @functools.wraps(fun, updated=())
  @traceback_util.api_boundary
  def jacfun(*args, **kwargs):
    f_dyn, dyn = _argnums_partial(fun, argnums, args, kwargs)
    tree_map(functools.partial(_jac_input_check, "jacfwd", holomorphic, False), dyn)

    def pushfwd(tangents):
      return jvp(f_dyn, dyn, tangents, has_aux=has_aux)
    if has_aux:
      y, jac, aux = _vmap(pushfwd, out_axes=(None, -1, None))(_std_basis(dyn))
    else:
      y, jac = _vmap(pushfwd, out_axes=(None, -1))(_std_basis(dyn))
    tree_map(functools.partial(_jac_output_check, "jacfwd", holomorphic), y)
    example = dyn[0] if isinstance(argnums, int) else dyn
    jac_tree = tree_map(lambda y_leaf, arr: _unravel(example, -1, y_leaf, arr), y, jac)
    return (jac_tree, aux) if has_aux else jac_tree

  return jacfun


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
  """Jacobian of `fun` by reverse mode, one row per output element (vmapped `vjp`)."""
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")

  @functools.wraps(fun, updated=())
  @traceback_util.api_boundary
  def jacfun(*args, **kwargs):
    f_dyn, dyn = _argnums_partial(fun, argnums, args, kwargs)
    tree_map(functools.partial(_jac_input_check, "jacrev", holomorphic, allow_int), dyn)
    if has_aux:
      y, pullback, aux = vjp(f_dyn, *dyn, has_aux=True)
    else:
      y, pullback = vjp(f_dyn, *dyn)
    tree_map(functools.partial(_jac_output_check, "jacrev", holomorphic), y)
    jac = _vmap(pullback)(_std_basis(y))
    jac = jac[0] if isinstance(argnums, int) else jac
    example = dyn[0] if isinstance(argnums, int) else dyn
    jac_tree = tree_map(lambda x_leaf, arr: _unravel(y, 0, x_leaf, arr), example, jac)
    jac_tree = tree_transpose(tree_structure(example), tree_structure(y), jac_tree)
    return (jac_tree, aux) if has_aux else jac_tree

  return jacfun


def jacobian(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
  """Alias of `jacrev`."""
  return jacrev(fun, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic,
                allow_int=allow_int)


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
  """The Hessian of `fun` as a dense array (pytree of blocks): `jacfwd(jacrev(fun))`."""
  return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic),
                argnums, has_aux=has_aux, holomorphic=holomorphic)


def linear_transpose(fun, *primals, reduce_axes=()):
  """Transpose `fun`, promised to be linear, at inputs with the types of `primals` (arrays
  or ShapeDtypeStructs). The result maps output cotangents to a tuple like `primals`."""
  if reduce_axes:
    raise NotImplementedError("reduce_axes argument to transpose is deprecated")
  p_leaves, in_tree = tree_flatten(primals)
  in_avals = [core.ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype),
                               getattr(getattr(x, "aval", None), "weak_type", False))
              if hasattr(x, "dtype") else core.get_aval(x) for x in p_leaves]
  flat, store = _flat_fun(fun, in_tree)
  jaxpr, consts = trace_to_jaxpr(flat, in_avals)
  out_tree = store["out_tree"]
  out_avals = jaxpr.out_avals
  in_dts = [a.dtype for a in in_avals]
  out_dts = [a.dtype for a in out_avals]
  all_dts = in_dts + out_dts
  if not (all(dtypes.issubdtype(d, np.inexact) for d in all_dts)
          or all(dtypes.issubdtype(d, np.integer) for d in all_dts)):
    raise TypeError("linear_transpose only supports [float or complex] -> [float or complex], "
                    f"and integer -> integer functions, but got {in_dts} -> {out_dts}.")

  def transposed_fun(consts, out_cotangent):
    ct_leaves, ct_tree = tree_flatten(out_cotangent)
    if ct_tree != out_tree:
      raise TypeError(f"cotangent tree does not match function output, expected {out_tree} "
                      f"but got {ct_tree}")
    for aval, ct in zip(out_avals, ct_leaves):
      ct_aval = core.get_aval(ct)
      if ct_aval.shape != aval.shape or ct_aval.dtype != aval.dtype:
        raise TypeError(f"cotangent type does not match function output, expected "
                        f"{out_avals} but got {ct_leaves}")
    dummies = [ad.UndefinedPrimal(a) for a in in_avals]
    in_cts = ad.backward_pass(jaxpr, consts, dummies, ct_leaves, transform_stack=True)
    return tree_unflatten(in_tree, [user_value(ct) for ct in in_cts])

  return Partial(transposed_fun, consts)


def fwd_and_bwd(fun, argnums, has_aux: bool = False, jitted: bool = True):
  """`(fwd, bwd)`: `fwd(*args)` is `vjp` of `fun` in the `argnums` arguments, giving
  `(out, residuals)` (or `(out, residuals, aux)`), and `bwd(residuals, ct)` the cotangents of
  those arguments (one value for an int `argnums`). Both are jitted unless `jitted=False`, so
  `bwd` compiles once for repeated forward passes."""
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  argnums = api_util.ensure_index(argnums)

  def fwd(*args, **kwargs):
    # As in JAX, keyword arguments are not passed on to `fun`.
    f_dyn, dyn_args = _argnums_partial(fun, argnums, args, {})
    return vjp(f_dyn, *dyn_args, has_aux=has_aux)

  def bwd(f_vjp, outgrad):
    cts = f_vjp(outgrad)
    return cts[0] if isinstance(argnums, int) else cts

  if jitted:
    return jit(fwd), jit(bwd)
  return fwd, bwd


# Markers of JAX's reference-accumulating VJP interface (jax.ad): which input cotangents are
# wanted, and what came back. arrax's vjp functions do not take them.
@dataclasses.dataclass(frozen=True, slots=True)
class GradValue:
  pass


@register_dataclass
@dataclasses.dataclass(frozen=True, slots=True)
class GradRef:
  pass


@dataclasses.dataclass(frozen=True, slots=True)
class DontWant:
  pass


@register_dataclass
@dataclasses.dataclass(frozen=True, slots=True)
class DidntWant:
  pass
