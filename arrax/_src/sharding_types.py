"""Shardings in types: the sharding rules of primitives over Explicit mesh axes.

A value laid out over a mesh with Explicit axes has a type carrying its sharding
(`ShapedArray.sharding`, printed `f32[8@x,4]`). Once such a type exists
(`core.sharding_typing.on`), abstract evaluation calls `_type_outputs` after each primitive's
shape/dtype rule: when an operand is sharded (or the primitive is given an output sharding),
the primitive's sharding rule below gives the results' shardings, or raises JAX's
`ShardingTypeError` when the operands' shardings conflict or the result's would be ambiguous.
Rules are looked up by primitive name, so this module needs no primitive objects; a primitive
without a rule raises as JAX's do (primitives holding jaxprs type their results from them).

`reshard_p` changes a value's type (`jax.sharding.reshard` under a trace).
"""
from __future__ import annotations

import math

from arrax._src import ad, batching, core
from arrax._src.core import ShapedArray, ShardingTypeError
from arrax._src.sharding_impls import (DuplicateSpecError, NamedSharding, PartitionSpec, _names,
                                       get_abstract_mesh)


def _spec(a):
  s = getattr(a, "sharding", None)
  return (None,) * len(a.shape) if s is None else s.spec.partitions


def _mesh(avals):
  mesh = None
  for a in avals:
    s = getattr(a, "sharding", None)
    if s is not None:
      if mesh is not None and mesh != s.mesh:
        raise ShardingTypeError(f"Mesh for all inputs should be equal. Got one mesh: {mesh} and "
                                f"another mesh: {s.mesh}")
      mesh = s.mesh
  return get_abstract_mesh() if mesh is None else mesh


def _spec_size(mesh, p):
  sizes = mesh.shape
  return math.prod(sizes[n] for n in _names(p))


# ---- rules: (*avals, **params) -> spec tuple (or a list of them, or a NamedSharding) -----------
def _broadcasting(name):
  def rule(*avals, **_):
    shaped = [a for a in avals if a.shape]
    if not shaped:
      return ()
    specs = [_spec(a) for a in shaped]
    out = []
    for i, ss in enumerate(zip(*specs)):
      if all(s == ss[0] for s in ss[1:]):
        out.append(ss[0])
        continue
      nontrivial = [s for s, a in zip(ss, shaped) if not (a.shape[i] == 1 and s is None)]
      if not nontrivial:
        out.append(None)
      elif all(s == nontrivial[0] for s in nontrivial[1:]):
        out.append(nontrivial[0])
      else:
        res = None
        for s in ss:
          if res is None and s is not None:
            res = s
          elif res is not None and s is not None and res != s:
            raise ShardingTypeError(f"{name} got incompatible shardings for broadcasting: "
                                    f"{', '.join(str(tuple(sp)) for sp in specs)}.")
        out.append(res)
    return tuple(out)
  return rule


def broadcast_shardings(avals):
  """The type sharding of the common broadcast of `avals` (JAX's lax.broadcast_shardings), or
  None when none of them is sharded."""
  if all(getattr(a, "sharding", None) is None for a in avals):
    return None
  nd = max(len(a.shape) for a in avals)
  mesh = _mesh(avals)
  padded = [ShapedArray((1,) * (nd - len(a.shape)) + tuple(a.shape), a.dtype) for a in avals]
  specs = [(None,) * (nd - len(a.shape)) + tuple(_spec(a)) for a in avals]
  for p, sp in zip(padded, specs):
    p.sharding = None if all(s is None for s in sp) else NamedSharding(mesh, PartitionSpec(*sp))
  spec = _broadcasting("broadcast_shardings")(*padded)
  return NamedSharding(mesh, PartitionSpec(*spec))


def _operand(x, *_, **__):
  return _spec(x)


def _select_n(which, *cases):
  given = [c.sharding for c in cases if c.sharding is not None]
  if not given:
    return _spec(cases[0])
  first = given[0]
  if any(s != first for s in given[1:]):
    raise ShardingTypeError("select cases must have the same shardings, got [{}].".format(
        ", ".join(str(c.sharding) for c in cases)))
  if which.shape and which.sharding is not None and which.sharding.spec != first.spec:
    raise ShardingTypeError(f"select `which` must be scalar or have the same sharding as cases, "
                            f"got `which` sharding {which.sharding} but case sharding {first}.")
  return first.spec.partitions


def _clamp(lo, x, hi):
  return _spec(x)


def _convert(x, *, sharding=None, **_):
  return _spec(x) if sharding is None else sharding


def _reduce(x, *, axes, out_sharding=None, **_):
  if out_sharding is not None:
    return out_sharding
  axes = set(axes)
  return tuple(s for i, s in enumerate(_spec(x)) if i not in axes)


def _reduce_multi(*avals, dimensions=None, axes=None, **_):
  axes = set(dimensions if dimensions is not None else axes)
  n = len(avals) // 2 if dimensions is not None else len(avals)
  return [tuple(s for i, s in enumerate(_spec(a)) if i not in axes) for a in avals[:n]]


def _cumulative(x, *, axis, reverse):
  if _spec(x)[axis] is not None:
    raise ShardingTypeError(f"Input should be unsharded over the axis being reduced. Got input "
                            f"type={x} and axis={axis}")
  return _spec(x)


def _sort(*avals, dimension, **_):
  for a in avals:
    if _spec(a)[dimension] is not None:
      raise ShardingTypeError(f"Arguments to sort must be unsharded over the sorting dimension. "
                              f"Got arg sharding={a.sharding} and sorting dimension={dimension}")
  return [_spec(a) for a in avals]


def _broadcast_in_dim(x, *dyn, shape, broadcast_dimensions, sharding):
  if sharding is not None:
    return sharding
  spec = iter(_spec(x))
  bds = set(broadcast_dimensions)
  return tuple(next(spec) if i in bds else None for i in range(len(shape)))


def _reshape_error(x, new_sizes):
  raise ShardingTypeError(
      f"This reshape is not supported. Please specify the sharding of the output via the "
      f"`out_sharding` argument of jax.lax.reshape. Got operand type: {x}, new sizes: "
      f"{tuple(new_sizes)}")


def _reshape(x, *dyn, new_sizes, dimensions, sharding):
  if sharding is not None:
    return sharding
  spec = _spec(x)
  if all(s is None for s in spec):
    return (None,) * len(new_sizes)
  old = [d for d in x.shape if d != 1]
  new = [d for d in new_sizes if d != 1]
  if old == new:   # only size-1 axes come or go
    it = iter(s for d, s in zip(x.shape, spec) if d != 1)
    return tuple(None if d == 1 else next(it) for d in new_sizes)
  mesh = x.sharding.mesh
  out, i, j = [], 0, 0
  shape, new_sizes = list(x.shape), list(new_sizes)
  while i < len(shape) or j < len(new_sizes):
    if i < len(shape) and j < len(new_sizes) and shape[i] == new_sizes[j]:
      out.append(spec[i])
      i, j = i + 1, j + 1
      continue
    if i < len(shape) and shape[i] == 1 and spec[i] is None:
      i += 1
      continue
    if j < len(new_sizes) and new_sizes[j] == 1:
      out.append(None)
      j += 1
      continue
    if i >= len(shape) or j >= len(new_sizes):
      _reshape_error(x, new_sizes)
    if shape[i] > new_sizes[j]:   # one axis split into several
      total, k = new_sizes[j], j + 1
      while total < shape[i] and k < len(new_sizes):
        total *= new_sizes[k]
        k += 1
      if total != shape[i]:
        _reshape_error(x, new_sizes)
      names = list(_names(spec[i]))
      for d in new_sizes[j:k]:
        taken = []
        while d > 1 and names:
          size = mesh.shape[names[0]]
          if d % size:
            _reshape_error(x, new_sizes)
          d //= size
          taken.append(names.pop(0))
        out.append(None if not taken else taken[0] if len(taken) == 1 else tuple(taken))
      if names:
        _reshape_error(x, new_sizes)
      i, j = i + 1, k
    else:                          # several axes merged into one
      total, k = shape[i], i + 1
      while total < new_sizes[j] and k < len(shape):
        total *= shape[k]
        k += 1
      if total != new_sizes[j]:
        _reshape_error(x, new_sizes)
      names = [n for p in spec[i:k] for n in (_names(p) or (None,))]
      while names and names[-1] is None:
        names.pop()
      if None in names:   # (a split axis after an unsplit one: not a block layout)
        _reshape_error(x, new_sizes)
      d, taken = new_sizes[j], []
      for n in names:
        size = mesh.shape[n]
        if d <= 1 or d % size:
          _reshape_error(x, new_sizes)
        d //= size
        taken.append(n)
      out.append(None if not taken else taken[0] if len(taken) == 1 else tuple(taken))
      i, j = k, j + 1
  return tuple(out)


def _transpose(x, *, permutation):
  spec = _spec(x)
  return tuple(spec[i] for i in permutation)


def _squeeze(x, *, dimensions):
  dims = set(dimensions)
  return tuple(s for i, s in enumerate(_spec(x)) if i not in dims)


def _check_match(a, b, msg):
  for x, y in zip(a, b):
    if x is not None and y is not None and x != y:
      raise ShardingTypeError(msg)


def _dot_general(lhs, rhs, *, dimension_numbers, out_sharding=None, **_):
  if out_sharding is not None:
    return out_sharding
  (lc, rc), (lb, rb) = dimension_numbers
  ls, rs = _spec(lhs), _spec(rhs)
  lcs, rcs = tuple(ls[i] for i in lc), tuple(rs[i] for i in rc)
  lbs, rbs = tuple(ls[i] for i in lb), tuple(rs[i] for i in rb)
  _check_match(lbs, rbs, f"dot_general requires lhs batch dimensions and rhs batch dimensions "
                         f"to have the consistent sharding, got {lbs} and {rbs}.")
  _check_match(lcs, rcs, f"dot_general requires contracting dimensions to have consistent "
                         f"sharding, got {lcs} and {rcs}.")
  for a, b in zip(lcs, rcs):
    if a is not None and b is not None:
      raise ShardingTypeError(
          "Contracting dimensions are sharded and it is ambiguous how the output should be "
          "sharded. Please specify the output sharding via the `out_sharding` parameter. Got "
          f"lhs_contracting_spec={lcs} and rhs_contracting_spec={rcs}")
  lfree = tuple(s for i, s in enumerate(ls) if i not in set(lc) | set(lb))
  rfree = tuple(s for i, s in enumerate(rs) if i not in set(rc) | set(rb))
  return lbs + lfree + rfree


def _stack(*avals, axis):
  spec = list(_concatenate(*avals, dimension=None))
  spec.insert(axis, None)
  return tuple(spec)


def _unstack(x, *, axis):
  spec = list(_spec(x))
  if spec[axis] is not None:
    raise ShardingTypeError(f"unstack operand cannot be sharded on the unstacking axis {axis}. "
                            f"Got operand type={x.str_short(True)}")
  del spec[axis]
  return [tuple(spec)] * x.shape[axis]


def _tile(x, *, reps):
  for i, (r, s) in enumerate(zip(reps, _spec(x))):
    if r != 1 and s is not None:
      raise ShardingTypeError(f"Operand cannot be sharded on dimension {i} when the tiling is "
                              f"non-trivial. Got input type: {x} with reps: {reps}")
  return _spec(x)


def _concatenate(*avals, dimension):
  given = [a.sharding for a in avals if a.sharding is not None]
  if any(s != given[0] for s in given[1:]) or len(given) != len(avals):
    raise ShardingTypeError("All operands should have the same sharding. Got shardings "
                            + ", ".join(str(a.sharding) for a in avals))
  return given[0].spec.partitions


def _varying_shape(name):
  def rule(x, *rest, **params):
    out = _OUT_SHAPES[0]
    mesh = x.sharding.mesh
    for old, new, p in zip(x.shape, out, _spec(x)):
      if old != new and p is not None and new % _spec_size(mesh, p):
        raise ShardingTypeError(
            f"{name} on sharded dims where out dim ({new}) is not divisible by mesh axes "
            f"({_spec_size(mesh, p)}) with spec ({p}) is not implemented. Got input "
            f"type={x.str_short(True)} and output shape={tuple(out)}")
    return _spec(x)
  return rule


_OUT_SHAPES = [(), ()]   # (the results' shapes, for the rules of slicing-like primitives)


def _ragged_dot(lhs, rhs, group_sizes, *, out_sharding=None, **_):
  _mesh((lhs, rhs, group_sizes))
  if out_sharding is None:
    raise NotImplementedError("Explicit sharding inference for ragged_dot_general is not "
                              "currently implemented. Please specify out_sharding.")
  return out_sharding


def _conv(lhs, rhs, *, dimension_numbers, out_sharding=None, **_):
  # (as JAX's: an unsplit kernel and input feature axis keep the input's spec, axis by axis)
  if out_sharding is not None:
    return out_sharding
  if rhs.sharding is None and _spec(lhs)[dimension_numbers.lhs_spec[1]] is None:
    return _varying_shape("conv_general_dilated")(lhs)
  raise ShardingTypeError("Please specify the output sharding via `out_sharding` parameter of "
                          "`conv_general_dilated`")


def _dynamic_update_slice(x, update, *idx):
  if x.sharding != update.sharding:
    raise ShardingTypeError(
        f"dynamic_update_slice operand sharding must be equal to update sharding, got operand "
        f"sharding {x.str_short(mesh_axis_types=True)} and update sharding "
        f"{update.str_short(mesh_axis_types=True)}.")
  return _spec(x)


def _split(x, *, sizes, axis):
  p = _spec(x)[axis]
  if p is not None:
    k = _spec_size(x.sharding.mesh, p)
    for n in sizes:
      if n != x.shape[axis] and n % k:
        out = x.shape[:axis] + (n,) + x.shape[axis + 1:]
        raise ShardingTypeError(
            f"split on sharded dims where out dim ({n}) is not divisible by mesh axes ({k}) "
            f"with spec ({p}) is not implemented. Got input type={x.str_short(True)} and output "
            f"shape={out}")
  return [_spec(x)] * len(sizes)


def _gather(x, indices, *, dimension_numbers, slice_sizes, **_):
  dn = dimension_numbers
  xs, ids = _spec(x), list(_spec(indices))
  batch = list(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
  # Operand axes indexed into must be whole slices or unsplit; batch axes must agree with the
  # indices'; the indices' other axes must be unsplit. Then every output axis takes the split
  # of the operand axis (offset axes) or indices axis (the others) it comes from.
  ok = (all(slice_sizes[i] == x.shape[i] or xs[i] is None for i in dn.start_index_map)
        and all(ids[j] == xs[i] or xs[i] is None or ids[j] is None for i, j in batch)
        and all(s is None for k, s in enumerate(ids) if k not in dn.start_indices_batching_dims))
  if ok:
    for i, j in batch:
      ids[j] = ids[j] or xs[i]
    offsets = iter(i for i in range(x.ndim)
                   if i not in dn.collapsed_slice_dims and i not in dn.operand_batching_dims)
    rest = iter(ids)
    return tuple(xs[next(offsets)] if d in dn.offset_dims else next(rest)
                 for d in range(len(dn.offset_dims) + indices.ndim - 1))
  raise ShardingTypeError(
      "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
      "indexing as out sharding could not be resolved unambiguously (or would require "
      f"collectives on inputs). Got operand={x!r}, indices={indices!r}")


def _scatter(x, indices, updates, *_, dimension_numbers, **__):
  dn = dimension_numbers
  xs, ids, us = list(_spec(x)), _spec(indices), _spec(updates)
  windows = list(dn.update_window_dims)
  query_dims = [d for d in range(updates.ndim) if d not in windows]
  u_batch = [query_dims[i] for i in dn.scatter_indices_batching_dims]
  x_windows = [i for i in range(x.ndim)
               if i not in dn.inserted_window_dims and i not in dn.operand_batching_dims]

  def resolvable(*specs):
    named = {s for s in specs if s is not None}
    return len(named) <= 1

  # (JAX's conditions: batch axes agree; window axes are whole and agree, or are unsplit;
  # inserted axes, the other query axes and the index vector are unsplit)
  ok = (all(resolvable(xs[o], ids[i], us[u]) for o, i, u in
            zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims, u_batch))
        and all((updates.shape[u] == x.shape[o] and us[u] == xs[o])
                or (us[u] is None and xs[o] is None) for u, o in zip(windows, x_windows))
        and all(xs[i] is None for i in dn.inserted_window_dims)
        and all(s is None for k, s in enumerate(us) if k not in u_batch and k not in windows)
        and all(s is None for k, s in enumerate(ids[:-1])
                if k not in dn.scatter_indices_batching_dims)
        and ids[-1] is None)
  if not ok:
    raise ShardingTypeError(
        "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for the "
        "scatter update as out sharding could not be resolved unambiguously (or would require "
        f"collectives on inputs). Got operand={x!r}, indices={indices!r}, updates={updates!r}")
  for o, i, u in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims, u_batch):
    xs[o] = xs[o] or ids[i] or us[u]
  for u, o in zip(windows, x_windows):
    xs[o] = xs[o] or us[u]
  return tuple(xs)


def _creation(*_, sharding=None, out_sharding=None, **__):
  s = sharding if sharding is not None else out_sharding
  return s


_ELEMENTWISE = [
    "abs", "acos", "acosh", "add", "and", "asin", "asinh", "atan", "atan2", "atanh", "cbrt",
    "ceil", "clz", "complex", "conj", "convert_element_type", "cos", "cosh", "digamma", "div",
    "eq", "erf", "erf_inv", "erfc", "exp", "exp2", "expm1", "floor", "ge", "gt", "imag",
    "integer_pow", "is_finite", "le", "lgamma", "log", "log1p", "logistic", "lt", "max", "min",
    "mul", "ne", "neg", "nextafter", "not", "or", "polygamma", "population_count", "pow", "real",
    "reduce_precision", "rem", "round", "rsqrt", "shift_left", "shift_right_arithmetic",
    "shift_right_logical", "sign", "sin", "sinh", "sqrt", "square", "sub", "tan", "tanh", "xor",
    "add_any", "igamma", "igammac", "igamma_grad_a", "random_gamma_grad",
    "regularized_incomplete_beta", "zeta", "bessel_i0e", "bessel_i1e", "copy", "copy_p"]

RULES = {name: _broadcasting(name) for name in _ELEMENTWISE}
RULES.update({
    "convert_element_type": _convert, "stop_gradient": _operand,
    "sharding_constraint": _operand, "device_put": lambda *avals, **_: [_spec(a) for a in avals],
    "name": _operand, "layout_constraint": _operand, "stack": _stack, "unstack": _unstack,
    "tile": _tile, "fft": _operand, "top_k": lambda x, **_: [_spec(x)] * 2,
    "optimization_barrier": lambda *avals, **_: [_spec(a) for a in avals], "rev": _operand,
    "bitcast_convert_type": _operand, "select_n": _select_n, "clamp": _clamp,
    "reduce_sum": _reduce, "reduce_max": _reduce, "reduce_min": _reduce, "reduce_prod": _reduce,
    "reduce_and": _reduce, "reduce_or": _reduce, "reduce_xor": _reduce, "argmax": _reduce,
    "argmin": _reduce, "reduce": _reduce_multi,
    "cumsum": _cumulative, "cumprod": _cumulative, "cummax": _cumulative,
    "cummin": _cumulative, "cumlogsumexp": _cumulative, "sort": _sort,
    "broadcast_in_dim": _broadcast_in_dim, "reshape": _reshape, "transpose": _transpose,
    "squeeze": _squeeze, "dot_general": _dot_general, "concatenate": _concatenate,
    "slice": _varying_shape("slicing"), "dynamic_slice": _varying_shape("dynamic_slice"),
    "pad": _varying_shape("padding"), "dynamic_update_slice": _dynamic_update_slice,
    "split": _split, "gather": _gather, "scatter": _scatter, "scatter-add": _scatter,
    "scatter-mul": _scatter, "scatter-min": _scatter, "scatter-max": _scatter,
    "scatter-sub": _scatter, "iota": _creation, "empty": _creation,
    "conv_general_dilated": _conv, "ragged_dot_general": _ragged_dot,
    "threefry2x32": lambda *avals: [_broadcasting("threefry2x32")(*avals)] * 2,
    "rng_bit_generator": lambda key, *, out_sharding, **_: [_spec(key), out_sharding or
                                                            (None,) * len(_OUT_SHAPES[1])],
})


# Primitives whose abstract evaluation gives their results' types itself (callbacks return the
# result types the user declared, as JAX's).
_TYPED_ELSEWHERE = frozenset(["reshard", "pure_callback", "io_callback", "ffi_call"])


def _holds_jaxpr(params):
  jaxprs = (core.Jaxpr, core.ClosedJaxpr)
  return any(isinstance(v, jaxprs) or (type(v) is tuple and v and isinstance(v[0], jaxprs))
             for v in params.values())


def _as_sharding(mesh, spec):
  if spec is None or isinstance(spec, NamedSharding):
    return spec
  return NamedSharding(mesh, PartitionSpec(*spec))


def _type_outputs(prim, avals, params, out):
  """The results `out` of abstract evaluation with the shardings `prim`'s rule gives them."""
  for a in avals:
    if getattr(a, "sharding", None) is not None:
      sharded = True
      break
  else:
    sharded = False
  given = params.get("sharding", params.get("out_sharding"))
  if not isinstance(given, NamedSharding):
    given = None
  if not sharded and (given is None or prim.name not in RULES):
    return out
  rule = RULES.get(prim.name)
  if rule is None and (prim.name in _TYPED_ELSEWHERE or _holds_jaxpr(params) or (
      prim.multiple_results and not out)):
    return out   # (typed by its own rule or the jaxprs it holds; or no results to type)
  if rule is None:
    raise ShardingTypeError(
        f"sharding rule for {prim.name} is not implemented. Please file an issue at "
        "https://github.com/jax-ml/jax/issues. You can work around this error by dropping that "
        "operation into full auto sharding mode via: "
        "`jax.sharding.auto_axes(fun, out_shardings=...)`")
  outs = list(out) if prim.multiple_results else [out]
  _OUT_SHAPES[:] = [o.shape for o in outs[:2]] + [()] * (2 - len(outs[:2]))
  mesh = _mesh(avals) if sharded or given is None else given.mesh
  specs = rule(*avals, **params)
  specs = specs if prim.multiple_results and isinstance(specs, list) else [specs] * len(outs)
  typed = []
  try:
    for o, sp in zip(outs, specs):
      if type(o) is not ShapedArray:
        typed.append(o)
        continue
      s = _as_sharding(mesh, sp)
      typed.append(o if s == o.sharding else o.update(sharding=s))
  except DuplicateSpecError:
    shown = ", ".join(a.str_short(short_dtypes=True) for a in avals)
    o = outs[len(typed)]
    spec = sp.spec.partitions if isinstance(sp, NamedSharding) else sp
    res = ShapedArray(o.shape, o.dtype).str_short(short_dtypes=True)
    res = res[:res.index("[") + 1] + core._shape_sharding_str(o.shape, spec) + "]"
    raise ShardingTypeError(f"{prim.name} operation with inputs: {shown} produces an illegally "
                            f"sharded result: {res}") from None
  return typed if prim.multiple_results else typed[0]


core.sharding_typing.hook = _type_outputs


# ---- reshard: a value's type changed to another sharding -----------------------------------------
reshard_p = core.Primitive("reshard")


@reshard_p.def_abstract_eval
def _reshard_abstract_eval(x, *, dst_sharding):
  return x.update(sharding=dst_sharding)


@reshard_p.def_lowering
def _reshard_lower(ctx, x, *, dst_sharding):
  return [x]   # (data placement is the partitioner's business: the value is unchanged)


reshard_p.def_pp_params(lambda params: {})


@reshard_p.def_batch_axis
def _reshard_batch(axis_data, args, dims, *, dst_sharding):
  (x,), (d,) = args, dims
  if d is None:
    return reshard_p.bind(x, dst_sharding=dst_sharding), None
  # (the mapped axis stays split over the Explicit mesh axes vmap maps over, as in JAX)
  aval = core.get_aval(x)
  if dst_sharding is None and aval.sharding is not None:
    dst_sharding = NamedSharding(aval.sharding.mesh, PartitionSpec())
  dst_sharding = batching.sharding_for_vmap(axis_data.explicit_mesh_axis, dst_sharding, d,
                                            aval.ndim - 1)
  return reshard_p.bind(x, dst_sharding=dst_sharding), d


ad.deflinear(reshard_p, lambda ct, x, *, dst_sharding: [
    reshard_p.bind(ct, dst_sharding=(x.aval if isinstance(x, ad.UndefinedPrimal)
                                     else core.get_aval(x)).sharding)])


def reshard_value(x, sharding):
  """`x` with the type sharding `sharding` (an aval sharding or None), under a trace."""
  return reshard_p.bind(x, dst_sharding=sharding)

