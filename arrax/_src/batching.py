"""Vectorization: the batching trace, the rule utilities and `vmap`.

A `BatchTracer` holds a value of the parent trace together with the position of its batch
axis (`batch_dim`), or `not_mapped` when the value is the same for every example; its `aval` is
the type of one example. `BatchTrace.process_primitive` hands the unpacked values and batch
dims to the primitive's `batch` rule, which works on the parent trace:

  prim.batch(args, dims, **params) -> (out, out_dim)            (lists for multiple results)

Rules are never called when no operand is batched (the primitive is then bound on the parent
as it is). Axis-aware rules (collectives, primitives holding jaxprs that may contain
collectives) set `prim.batch_axis(axis_data, args, dims, **params)` instead; that one is
always called, with the trace's `AxisData`, and binds the primitive on the parent itself when
the named axis is not this trace's.
"""
from __future__ import annotations

import collections
import functools
import inspect
import threading

import numpy as np

from arrax._src import core, dtypes, traceback_util, tree_util
from arrax._src.array import Array, device_put_value
from arrax._src.core import ShapedArray, Tracer
from arrax._src.sharding_impls import NamedSharding, PartitionSpec, get_abstract_mesh
from arrax._src.sharding_impls import _names as _spec_names
from arrax._src.tracing import trace_to_jaxpr

not_mapped = None


class AxisData:
  """The mapped axis of one vmap: its name (or None), size, spmd_axis_name, and the Explicit
  mesh axes the mapped axis of the arguments is split over (a tuple, or None)."""
  __slots__ = ("name", "size", "spmd_name", "explicit_mesh_axis")

  def __init__(self, name, size, spmd_name=None, explicit_mesh_axis=None):
    self.name = name
    self.size = size
    self.spmd_name = spmd_name
    self.explicit_mesh_axis = explicit_mesh_axis

  def _key(self):
    return (self.name, self.size, self.spmd_name, self.explicit_mesh_axis)

  def __eq__(self, other):
    return type(other) is AxisData and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return f"AxisData(name={self.name!r}, size={self.size}, spmd_name={self.spmd_name!r})"


# ---- the named-axis environment ----------------------------------------------------------------
# Named axes in scope (innermost last) while a vmap'd function runs, so that collectives can
# check their axis names and read axis sizes when they are bound (also under an inner jit).
class _AxisEnv(threading.local):
  def __init__(self):
    self.frames: list[tuple] = []   # (name, size)


_axis_env = _AxisEnv()


def axis_env_key() -> tuple:
  """The named axes in scope, as a hashable key (for caches of traced jaxprs)."""
  return tuple(_axis_env.frames)


def axis_size(name):
  """The size of the named axis `name` in scope; NameError if no vmap binds it."""
  for n, size in reversed(_axis_env.frames):
    if n == name:
      return size
  raise NameError(f"unbound axis name: {name}. The following axis names (e.g. defined by "
                  f"vmap's axis_name) are available to collective operations: "
                  f"{[n for n, _ in _axis_env.frames]}")


def axis_exists(name) -> bool:
  return any(n == name for n, _ in _axis_env.frames)


class extend_axis_env:
  """Context manager binding the named axis `name` of `size` (nothing when name is None)."""
  __slots__ = ("frame",)

  def __init__(self, name, size):
    self.frame = None if name is None else (name, size)

  def __enter__(self):
    if self.frame is not None:
      _axis_env.frames.append(self.frame)

  def __exit__(self, *exc):
    if self.frame is not None:
      _axis_env.frames.pop()


# ---- the batching trace ------------------------------------------------------------------------
class BatchTracer(Tracer):
  """A value of the parent trace whose axis `batch_dim` (or none) is the mapped axis."""
  __slots__ = ("val", "batch_dim", "aval")

  def __init__(self, trace, val, batch_dim):
    self._trace = trace
    self.val = val
    self.batch_dim = batch_dim
    aval = core.get_aval(val)
    if batch_dim is None:
      self.aval = aval
    else:
      shape = aval.shape
      s = getattr(aval, "sharding", None)
      if s is not None:   # (the other axes keep their splits)
        parts = s.spec.partitions
        s = NamedSharding(s.mesh, PartitionSpec(*parts[:batch_dim], *parts[batch_dim + 1:]))
      inner = ShapedArray(shape[:batch_dim] + shape[batch_dim + 1:], aval.dtype,
                          aval.weak_type, vma=getattr(aval, "vma", frozenset()), sharding=s)
      self.aval = aval.update(inner_aval=inner) if type(aval) is core.AbstractRef else inner

  def _short_repr(self):
    return f"BatchTracer({self.aval}, batch_dim={self.batch_dim})"

  def __repr__(self):
    return f"Traced<{self.aval}>with<BatchTrace> with\n  val = {self.val!r}\n  " \
           f"batch_dim = {self.batch_dim}"


class BatchTrace(core.Trace):
  """Runs each primitive's batching rule on the parent trace."""

  def __init__(self, parent, axis_data: AxisData):
    super().__init__()
    self.parent = parent
    self.axis_data = axis_data

  def to_batch_info(self, x):
    if isinstance(x, BatchTracer) and x._trace is self:
      return x.val, x.batch_dim
    return x, not_mapped

  def process_primitive(self, prim, args, params):
    vals, dims = [], []
    mapped = False
    for x in args:
      if type(x) is BatchTracer and x._trace is self:
        vals.append(x.val)
        d = x.batch_dim
        dims.append(d)
        if d is not None:
          mapped = True
      else:
        vals.append(x)
        dims.append(None)
    ctx = core.trace_ctx
    prev = ctx.trace
    axis_rule = prim.batch_axis
    ctx.trace = self.parent
    try:
      if axis_rule is not None:
        out, out_dim = axis_rule(self.axis_data, vals, dims, **params)
      elif not mapped:
        return prim.bind(*vals, **params)
      else:
        out, out_dim = prim.batch(vals, dims, **params)
    finally:
      ctx.trace = prev
    if prim.multiple_results:
      return [o if d is None else BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
    return out if out_dim is None else BatchTracer(self, out, out_dim)

  def __repr__(self):
    return f"BatchTrace(axis_name={self.axis_data.name!r}, size={self.axis_data.size})"


# ---- utilities for rules -----------------------------------------------------------------------
class _ShapeOps:
  """The primitives the rule utilities move axes with: lax registers `transpose_p` and
  `broadcast_in_dim_p` here when it defines them (batching sits below lax, never imports it)."""
  transpose_p = None
  broadcast_in_dim_p = None


_ops = _ShapeOps()


def register_shape_ops(transpose_p, broadcast_in_dim_p):
  _ops.transpose_p, _ops.broadcast_in_dim_p = transpose_p, broadcast_in_dim_p


def _ndim(x) -> int:
  return core.get_aval(x).ndim


def moveaxis(x, src, dst):
  """Move axis `src` of `x` to position `dst` (a transpose; `x` itself when src == dst)."""
  if src == dst:
    return x
  nd = _ndim(x)
  src, dst = src % nd, dst % nd
  if src == dst:
    return x
  perm = [i for i in range(nd) if i != src]
  perm.insert(dst, src)
  return _ops.transpose_p.bind(x, permutation=tuple(perm))


def broadcast(x, size, axis, mesh_axis=None):
  """Insert a new axis of `size` at position `axis` of `x` (split over the mesh axes
  `mesh_axis`, a tuple, when given: the Explicit ones a vmap maps over)."""
  aval = core.get_aval(x)
  shape = list(aval.shape)
  shape.insert(axis, size)
  if isinstance(x, np.ndarray) and x.dtype == dtypes.float0:   # host float0 zeros stay on host
    return np.zeros(shape, x.dtype)
  # NumPy integers, as JAX computes them here (so jaxprs print `np.int64(1)` like JAX's).
  dims = tuple(np.delete(np.arange(len(shape), dtype=np.int64), axis))
  s = getattr(aval, "sharding", None)
  if s is not None or mesh_axis is not None:
    s = sharding_for_vmap(mesh_axis, s, axis, aval.ndim)
  return _ops.broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=dims,
                                      sharding=s)


def sharding_for_vmap(mesh_axis, sharding, axis, ndim):
  """The type sharding of a per-example value of rank `ndim` typed `sharding` once the mapped
  axis is inserted at `axis`, split over `mesh_axis` (the vmapped Explicit mesh axes, or None;
  JAX's `get_sharding_for_vmap`). None when neither names a mesh split."""
  if sharding is None:
    if mesh_axis is None:
      return None
    mesh = get_abstract_mesh()
    if mesh.empty:
      return None
    parts = [None] * ndim
  else:
    mesh = sharding.mesh
    parts = list(sharding.spec.partitions) + [None] * (ndim - len(sharding.spec.partitions))
  parts.insert(axis, None if mesh_axis is None else
               mesh_axis[0] if len(mesh_axis) == 1 else tuple(mesh_axis))
  return NamedSharding(mesh, PartitionSpec(*parts))


def bdim_at_front(x, bdim, size):
  """`x` with its batch axis first; an unbatched `x` is broadcast to a leading axis of `size`."""
  if bdim is None:
    return broadcast(x, size, 0)
  return moveaxis(x, bdim, 0)


def matchaxis(src_dim, dst_dim, x, size):
  """`x` (batched at `src_dim`, or unbatched when None) with its batch axis at `dst_dim`."""
  if src_dim == dst_dim:
    return x
  if src_dim is None:
    return broadcast(x, size, dst_dim % (_ndim(x) + 1))
  if dst_dim is None:
    raise ValueError(f"cannot make a value batched at axis {src_dim} unbatched")
  return moveaxis(x, src_dim, dst_dim)


def expand_trailing(x, ndim):
  """`x` with trailing axes of size 1 added until it has `ndim` axes."""
  shape = core.get_aval(x).shape
  if len(shape) >= ndim:
    return x
  new_shape = tuple(shape) + (1,) * (ndim - len(shape))
  return _ops.broadcast_in_dim_p.bind(x, shape=new_shape,
                                      broadcast_dimensions=tuple(range(len(shape))),
                                      sharding=None)


def _vectorized_rule(prim):
  def rule(args, dims, **params):
    return prim.bind(*args, **params), dims[0]
  return rule


def defvectorized(prim):
  """A unary elementwise primitive: the output is batched where the input is."""
  prim.def_batch(_vectorized_rule(prim))
  return prim.batch


def _broadcasting_rule(prim):
  multiple = prim.multiple_results

  def rule(args, dims, **params):
    avals = [core.get_aval(x) for x in args]
    shape = dim = None
    for a, d in zip(avals, dims):
      if d is not None:
        shape, dim = a.shape, d
        break
    if all((a.shape == shape and d == dim) for a, d in zip(avals, dims) if a.shape):
      # Only batched operands that agree and scalars: the primitive broadcasts them itself.
      out = prim.bind(*args, **params)
      return (out, [dim] * len(out)) if multiple else (out, dim)
    # Batch axes to the front; unbatched non-scalar operands get a leading axis of size 1 and
    # batched ones of a lower rank get trailing size-1 axes, so the primitive broadcasts.
    moved = [bdim_at_front(x, d, 1) if a.shape else x for x, d, a in zip(args, dims, avals)]
    nd = max(_ndim(x) for x in moved)
    moved = [x if d is None else expand_trailing(x, nd) for x, d in zip(moved, dims)]
    out = prim.bind(*moved, **params)
    return (out, [0] * len(out)) if multiple else (out, 0)
  return rule


def defbroadcasting(prim):
  """An n-ary elementwise primitive whose operands broadcast (rank 0, or size-1 axes)."""
  prim.def_batch(_broadcasting_rule(prim))
  return prim.batch


def no_batching_rule(name, why=None, error=NotImplementedError):
  """The rule (for `def_batch` or `def_batch_axis`) of a primitive vmap cannot batch, as in
  JAX: it raises `error(why)`, by default "Batching rule for '<name>' not implemented";
  `why=""` raises the error with no message."""
  msg = f"Batching rule for '{name}' not implemented" if why is None else why

  def rule(*args, **params):
    raise error(msg) if msg else error
  return rule


# ---- batching jaxprs (for primitives holding jaxprs) ------------------------------------------
def _normalize_instantiate(out_dims_instantiate, n):
  if isinstance(out_dims_instantiate, (list, tuple)):
    return tuple(out_dims_instantiate)
  return (out_dims_instantiate,) * n


def batch_jaxpr(closed_jaxpr: core.ClosedJaxpr, axis_data: AxisData, in_dims,
                out_dims_instantiate=None):
  """Vectorize a closed jaxpr.

  `in_dims[i]` is the batch axis of input i (None: unbatched). `out_dims_instantiate` (one
  entry, or one per output) says where each output's batch axis goes: None keeps it where the
  rules put it (outputs that do not depend on batched inputs stay unbatched); False moves
  batched outputs to axis 0 and leaves unbatched ones unbatched; True puts every output's batch
  axis at 0 (broadcasting unbatched ones); an int d puts it at d.

  Returns (batched_closed_jaxpr, out_dims), out_dims[i] an int or None.
  """
  in_dims = tuple(in_dims)
  inst = _normalize_instantiate(out_dims_instantiate, len(closed_jaxpr.out_avals))
  return core.memo([closed_jaxpr], ("batch", axis_data, in_dims, inst),
                           lambda: _batch_jaxpr(closed_jaxpr, axis_data, in_dims, inst))


def _batch_jaxpr(closed, axis_data, in_dims, inst):
  size = axis_data.size
  in_avals = []
  for a, d in zip(closed.in_avals, in_dims):
    if d is None:
      in_avals.append(a)
    else:
      shape = list(a.shape)
      shape.insert(d, size)
      s = getattr(a, "sharding", None)
      if s is not None or axis_data.explicit_mesh_axis is not None:
        s = sharding_for_vmap(axis_data.explicit_mesh_axis, s, d, a.ndim)
      in_avals.append(ShapedArray(shape, a.dtype, a.weak_type, vma=a.vma, sharding=s))
  box = []

  def fun(*args):
    trace = BatchTrace(core.current_trace(), axis_data)
    tracers = [a if d is None else BatchTracer(trace, a, d) for a, d in zip(args, in_dims)]
    try:
      with extend_axis_env(axis_data.name, size), core.set_current_trace(trace):
        outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *tracers)
      outs = [trace.to_batch_info(o) for o in outs]
    finally:
      trace.invalidate()
    vals, dims = [], []
    for (v, d), want in zip(outs, inst):
      if want is None:
        pass
      elif want is False:
        if d is not None:
          v, d = moveaxis(v, d, 0), 0
      else:
        target = 0 if want is True else want
        v, d = matchaxis(d, target, v, size), target
      vals.append(v)
      dims.append(d)
    box.append(dims)
    return vals

  jaxpr, consts = trace_to_jaxpr(fun, in_avals)
  assert not any(isinstance(c, Tracer) for c in consts), "unexpected outer tracer"
  return core.ClosedJaxpr(jaxpr, consts), box[0]


# ---- vmap --------------------------------------------------------------------------------------
class _Leaf:
  def __repr__(self):
    return "pytree leaf"


def _is_none(x):
  return x is None


def flatten_axes(name, treedef, axis_tree, *, kws=False):
  """One axis spec per leaf of `treedef` from `axis_tree`, a tree prefix of it (None = leaf)."""
  tu = tree_util
  dummy = tu.tree_unflatten(treedef, [_Leaf()] * treedef.num_leaves)
  axis_def = tu.tree_structure(axis_tree, is_leaf=_is_none)
  axis_leaves = tu.tree_leaves(axis_tree, is_leaf=_is_none)
  try:
    subtrees = axis_def.flatten_up_to(dummy)
  except (ValueError, TypeError):
    prefix, full = axis_tree, dummy
    if kws:   # explain the mismatch in terms of the positional arguments only
      prefix, full = axis_tree[0], dummy[0]
    err = tu._structure_mismatch((), prefix, full, _is_none)
    details = err(name).args[0] if err is not None else (
        f"{name} does not match the structure {treedef}")
    raise ValueError(f"{name} specification must be a tree prefix of the corresponding "
                     f"value; \n  Mismatch details (1 found):\n  {details}") from None
  axes = []
  for ax, sub in zip(axis_leaves, subtrees):
    axes.extend([ax] * tu.tree_structure(sub).num_leaves)
  return axes


def _valid_axis_spec(x) -> bool:
  return x is None or type(x) is int or type(x) in spec_types


# ---- user types vmap maps over (`jax.interpreters.batching.register_vmappable`) -------------
vmappables: dict = {}            # data type -> (spec type, axis size type)
spec_types: set = set()          # the types of in_axes/out_axes entries besides int and None
to_elt_handlers: dict = {}       # data type -> to_elt(cont, get_idx, x, spec) -> element
from_elt_handlers: dict = {}     # data type -> from_elt(cont, axis_size, elt, spec) -> data
make_iota_handlers: dict = {}    # axis size type -> make_iota(axis_size) -> int32[size]


def register_vmappable(data_type, spec_type, axis_size_type, to_elt, from_elt, make_iota):
  """Let vmap map over values of `data_type` (leaves of the argument trees): `in_axes` entries
  for them are `spec_type` instances, `to_elt(cont, get_idx, x, spec)` gives what the
  function sees (`cont(value, axis)` maps a part of `x` as vmap maps arrays; `get_idx()` is
  the batched index of the example), and `from_elt(cont, axis_size, elt, spec)` rebuilds
  the batched value from a result of that type (`cont(axis_size, value, axis)`).
  `make_iota(axis_size)` makes the index for axis sizes of `axis_size_type`."""
  vmappables[data_type] = (spec_type, axis_size_type)
  spec_types.add(spec_type)
  to_elt_handlers[data_type] = to_elt
  from_elt_handlers[data_type] = from_elt
  if make_iota:
    make_iota_handlers[axis_size_type] = make_iota


def unregister_vmappable(data_type) -> None:
  """Forget `data_type`'s registration (JAX keeps its handlers; arrax drops them)."""
  spec_type, axis_size_type = vmappables.pop(data_type)
  to_elt_handlers.pop(data_type, None)
  from_elt_handlers.pop(data_type, None)
  if not any(s is spec_type for s, _ in vmappables.values()):
    spec_types.discard(spec_type)
  if not any(a is axis_size_type for _, a in vmappables.values()):
    make_iota_handlers.pop(axis_size_type, None)


def is_vmappable(x) -> bool:
  return type(x) in vmappables


def _make_iota(size):
  handler = make_iota_handlers.get(type(size))
  if handler is not None:
    return handler(size)
  return device_put_value(np.arange(int(size), dtype=np.int32))


def _to_elt(trace, get_idx, x, spec):
  handler = to_elt_handlers.get(type(x))
  if handler is not None:
    return handler(functools.partial(_to_elt, trace, get_idx), get_idx, x, spec)
  if spec is None:
    return x
  x = _to_array(x)
  return BatchTracer(trace, x, spec % _ndim(x))


def _from_elt(trace, axis_data, x, spec, leaf_path, sum_match=False):
  handler = from_elt_handlers.get(type(x))
  if handler is not None:
    cont = lambda size, elt, axis: _from_elt(trace, axis_data, elt, axis, leaf_path, sum_match)
    return handler(cont, axis_data.size, x, spec)
  return _out_value(trace, axis_data, x, spec, leaf_path, sum_match)


def check_axis_leaves(name, axes):
  """TypeError unless every leaf of the axis tree `axes` is an int or None (`name`: "vmap
  in_axes", "pmap out_axes", ...)."""
  if not all(_valid_axis_spec(a) for a in tree_util.tree_leaves(axes, is_leaf=_is_none)):
    raise TypeError(f"{name} must be an int, None, or (nested) container with those types as "
                    f"leaves, but got {axes}.")


def _mapped_axis_size(fun, in_tree, vals, dims, axis_size):
  if not vals:
    if axis_size is not None:
      return axis_size
    args, kwargs = tree_util.tree_unflatten(in_tree, vals)
    raise ValueError("vmap wrapped function must be passed at least one argument containing "
                     f"an array or axis_size must be specified, got empty *args={args} and "
                     f"**kwargs={kwargs}")

  def size_of(x, d):
    if type(d) is not int:   # (a user type's spec: its size comes from the other arguments)
      return None
    try:
      shape = core.get_aval(x).shape
    except TypeError:
      raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type: vmap maps "
                      "arrays; pass in_axes=None for this argument to leave it unmapped.") from None
    try:
      return shape[d]
    except IndexError:
      min_rank = d + 1 if d >= 0 else -d
      raise ValueError(f"vmap was requested to map its argument along axis {d}, which implies "
                       f"that its rank should be at least {min_rank}, but is only "
                       f"{len(shape)} (its shape is {shape})") from None

  mapped = [None if d is None else size_of(x, d) for x, d in zip(vals, dims)]
  sizes = [s for s in mapped if s is not None]
  if axis_size is not None:
    sizes.append(axis_size)
  distinct = set(sizes)
  if len(distinct) == 1:
    return sizes[0]
  if not distinct:
    raise ValueError("vmap must have at least one non-None value in in_axes or axis_size must "
                     "be specified")
  raise ValueError(_inconsistent_sizes_message(fun, in_tree, vals, dims, mapped, axis_size))


def _inconsistent_sizes_message(fun, in_tree, vals, dims, mapped, axis_size):
  tu = tree_util
  args, kwargs = tu.tree_unflatten(in_tree, vals)
  try:
    params = list(inspect.signature(fun).bind(*args, **kwargs).signature.parameters)
  except (TypeError, ValueError):
    params = None

  def type_str(x):
    try:
      return core.get_aval(x).str_short()
    except TypeError:
      return "unknown"

  def arg_name(path):
    i = path[0].idx
    if params is None or i >= len(params):
      return f"args{tu.keystr(path)}"
    return f"argument {params[i]}{tu.keystr(path[1:])}"

  names = [f"{arg_name(p)} of type {type_str(x)}"
           for p, x in tu.tree_flatten_with_path(args)[0]]
  names += [f"kwargs{tu.keystr(p)} of type {type_str(x)}"
            for p, x in tu.tree_flatten_with_path(kwargs)[0]]
  counts = collections.Counter(s for s in mapped if s is not None).most_common()

  def first(sz):
    return next(i for i, s in enumerate(mapped) if s == sz)

  lines = ["vmap got inconsistent sizes for array axes to be mapped:\n"]
  if axis_size is not None:
    lines.append(f"  * the `axis_size` argument was {axis_size};\n")
  for k, (sz, ct) in enumerate(counts):
    i = first(sz)
    if ct == 1:
      lines.append(f"  * one axis had size {sz}: axis {dims[i]} of {names[i]};\n")
    elif k == 0:
      lines.append(f"  * most axes ({ct} of them) had size {sz}, e.g. axis {dims[i]} of "
                   f"{names[i]};\n")
    else:
      lines.append(f"  * some axes ({ct} of them) had size {sz}, e.g. axis {dims[i]} of "
                   f"{names[i]};\n")
  return "".join(lines)[:-2]


def _to_array(x):
  """A mapped host value (NumPy array) as an arrax Array."""
  if isinstance(x, (Tracer, Array)) or not isinstance(x, (np.ndarray, np.generic)):
    return x
  return device_put_value(x)


def _user_value(x):
  if type(x) is core.Literal:
    return device_put_value(x.val, None, dtype=x.aval.dtype, weak_type=x.aval.weak_type)
  return x


def _out_value(trace, axis_data, x, dst, leaf_path, sum_match=False):
  if not (isinstance(x, Tracer) or core.valid_jaxtype(x)):
    raise TypeError(f"Output from batched function {x!r} with type {type(x)} is not a valid "
                    "JAX type")
  val, src = trace.to_batch_info(x)
  if src == dst:
    return _user_value(val)
  if src is None:
    nd = _ndim(val)
    if not -(nd + 1) <= dst <= nd:
      raise ValueError(f"axis {dst} is out of bounds for array of dimension {nd + 1}")
    return broadcast(val, axis_data.size, dst % (nd + 1), axis_data.explicit_mesh_axis)
  if dst is None:
    if sum_match:   # (a batched output where out_axes says None: summed over the batch)
      return val.sum(src)
    if axis_data.name is not None:
      raise ValueError(f"vmap has mapped output (axis_name={axis_data.name}) but out_axes is "
                       f"{dst}")
    raise ValueError(f"at vmap out_axes{leaf_path()}, got axis spec {dst} but output was "
                     f"batched on axis {src}")
  nd = _ndim(val)
  if not -nd <= dst < nd:
    raise ValueError(f"axis {dst} is out of bounds for array of dimension {nd}")
  return moveaxis(val, src, dst)


def _mapped_mesh_axis(leaves, in_flat):
  """The Explicit mesh axes the mapped axis of every mapped argument is split over (a tuple,
  or None), as JAX's vmap requires them to agree; unmapped arguments must not be split over
  them."""
  def sharding(x):   # (None also for values of no array type: register_vmappable's)
    try:
      return getattr(core.get_aval(x), "sharding", None)
    except TypeError:
      return None
  out, seen = None, False
  for x, d in zip(leaves, in_flat):
    if d is not None:
      s = sharding(x)
      try:
        p = None if s is None else s.spec.partitions[d]
      except (IndexError, TypeError):
        p = None
      if seen and p != out:
        raise ValueError(f"Mapped away dimension of inputs passed to vmap should be sharded the "
                         f"same. Got inconsistent axis specs: {out} vs {p}")
      out, seen = p, True
  if out is None:
    return None
  out = out if isinstance(out, tuple) else (out,)
  for x, d in zip(leaves, in_flat):
    s = None if d is not None else sharding(x)
    if s is not None and {n for p in s.spec.partitions for n in _spec_names(p)} & set(out):
      raise ValueError(f"Unmapped values passed to vmap cannot be sharded along the mesh "
                       f"axis you are vmapping over. Got type: "
                       f"{core.get_aval(x).str_short(True)}, in_axes: {d} and vmapped mesh "
                       f"axis: {out}")
  return out


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None,
         sum_match=False):
  """Vectorize `fun` over a new leading (or `in_axes`-given) axis of its arguments.

  `in_axes`/`out_axes` are an int, None, or pytree prefixes of the positional arguments /
  outputs; keyword arguments are mapped over axis 0. `axis_name` names the mapped axis for
  collectives (`lax.psum`, ...). `axis_size` is needed when no argument is mapped.
  `sum_match`: a batched output whose out_axes entry is None is summed over the batch axis
  (instead of an error).

  Example:
    >>> vmap(lambda x, y: x @ y, in_axes=(0, None))(jnp.ones((5, 3)), jnp.ones(3)).shape
    (5,)
  """
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)
  tu = tree_util
  if not (in_axes is None or type(in_axes) in (int, tuple) or type(in_axes) in spec_types):
    raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding to "
                    f"the positional arguments passed to the function, but got {in_axes}.")
  check_axis_leaves("vmap in_axes", in_axes)
  check_axis_leaves("vmap out_axes", out_axes)
  if spmd_axis_name is not None and not isinstance(spmd_axis_name, tuple):
    spmd_axis_name = (spmd_axis_name,)
  simple_out = type(out_axes) is int or out_axes is None

  @functools.wraps(fun, updated=())
  @traceback_util.api_boundary
  def vmap_f(*args, **kwargs):
    if axis_name is not None:
      hash(axis_name)   # an unhashable name (a list) is a TypeError, as in JAX
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
      raise ValueError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                       "to the positional arguments passed to the function, but got "
                       f"len(in_axes)={len(in_axes)}, len(args)={len(args)}")
    user_types = is_vmappable if vmappables else None
    leaves, in_tree = tu.tree_flatten((args, kwargs), is_leaf=user_types)
    if type(in_axes) is int and not kwargs:
      in_flat = [in_axes] * len(leaves)
    else:
      in_flat = flatten_axes("vmap in_axes", in_tree, (in_axes, 0), kws=True)
    size = _mapped_axis_size(fun, in_tree, leaves, in_flat, axis_size)
    spmd, mesh_axis = spmd_axis_name, None
    if core.sharding_typing.on:
      mesh_axis = _mapped_mesh_axis(leaves, in_flat)
      if spmd is not None and mesh_axis is not None:
        if spmd != mesh_axis:
          raise ValueError(f"Only one of spmd_axis_name or arrays sharded on `Explicit` mesh "
                           f"axis type is allowed. Got spmd_axis_name={spmd} and arrays "
                           f"sharded on explicit_mesh_axis={mesh_axis}")
        spmd = None
    axis_data = AxisData(axis_name, size, spmd, mesh_axis)
    trace = BatchTrace(core.trace_ctx.trace, axis_data)
    idx = []   # (the batched example index, made when a user type's to_elt asks for it)
    if user_types is None:
      in_vals = []
      for x, d in zip(leaves, in_flat):
        if d is None:
          in_vals.append(x)
        else:
          x = _to_array(x)
          in_vals.append(BatchTracer(trace, x, d % _ndim(x)))
    else:
      def get_idx():
        if not idx:
          idx.append(BatchTracer(trace, _make_iota(size), 0))
        return idx[0]
      in_vals = [_to_elt(trace, get_idx, x, d) for x, d in zip(leaves, in_flat)]
    try:
      f_args, f_kwargs = tu.tree_unflatten(in_tree, in_vals)
      with extend_axis_env(axis_name, size), core.set_current_trace(trace), \
          core.extend_name_stack(core.TRANSFORM_VMAP):
        out = fun(*f_args, **f_kwargs)
      out_leaves, out_tree = tu.tree_flatten(out, is_leaf=user_types)
      if simple_out:
        out_flat = [out_axes] * len(out_leaves)
      else:
        out_flat = flatten_axes("vmap out_axes", out_tree, out_axes)

      def path_of(i):
        return lambda: tu.keystr(tu.tree_flatten_with_path(
            tu.tree_unflatten(out_tree, out_flat), is_leaf=_is_none)[0][i][0])
      out_value = _out_value if user_types is None else _from_elt
      results = [out_value(trace, axis_data, x, d, path_of(i), sum_match)
                 for i, (x, d) in enumerate(zip(out_leaves, out_flat))]
    finally:
      trace.invalidate()
    del in_vals, f_args, f_kwargs, out, out_leaves
    idx.clear()
    core.check_leaks(trace)
    return tu.tree_unflatten(out_tree, results)

  name = getattr(fun, "__name__", repr(fun))
  doc = (f"Vectorized version of {name}. Takes similar arguments as {name} but with "
         f"additional array axes over which {name} is mapped.")
  if fun.__doc__:
    doc += "\n\nOriginal documentation:\n\n" + fun.__doc__
  vmap_f.__doc__ = doc
  return vmap_f
