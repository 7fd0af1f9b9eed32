"""Mutable array references (`jax.Ref`, `jax.new_ref`, `jax.freeze`, `jax.ref`): the `Ref`
type, the primitives `new_ref`, `empty_ref`, `free_ref`, `freeze`, `get`, `swap` and
`addupdate` with their rules, and state discharge.

A concrete `Ref` holds an Array (`_value`) that its operations replace (arrays themselves stay
immutable). Traced, a ref is a tracer whose aval is a `core.AbstractRef`; its operations are
equations printed as JAX prints them (`b[0] <- d`, `c:f32[] <- b[0]`, `b[...] += e`).

Lowering never sees a ref: before a jaxpr using refs is compiled (or transposed), it is
*discharged* (`discharge`): interpreted with each ref held as a value that its writes
replace, which gives the same program on plain arrays. Refs passed to a jitted function or
closed over by it become inputs of the discharged program, and their final values extra
outputs the runner writes back into the Ref objects.

An indexer is kept in the `tree` param, one entry per dimension of the ref:
`("s", start, size, stride)` (start None: a traced operand) or `("i", index)` (index None: a
traced integer operand, scalar or array); `tree=None` is the whole ref (`[...]`).
"""
from __future__ import annotations

import weakref

import numpy as np

from arrax._src import ad, batching, core, dispatch, dtypes, jit, pretty_printer as pp
from arrax._src import jaxpr_printer, tracing
from arrax._src.array import Array
from arrax._src.core import AbstractRef, ShapedArray
from arrax._src.indexing import Slice
from arrax._src.lax import elementwise as lax, shape_ops
from arrax._src.lax.control_flow import conditionals, loops
from arrax._src.lax.control_flow.while_loop import while_p
from arrax._src.numpy import creation, indexing as np_indexing, ufuncs

__all__ = ["Ref", "AbstractRef", "new_ref", "empty_ref", "free_ref", "freeze", "ref_get",
           "ref_set", "ref_swap", "ref_addupdate"]


# ---- the Ref type --------------------------------------------------------------------------
class _RefMeta(type):
  def __instancecheck__(cls, inst):
    # a traced ref is a Ref too, as in JAX
    return super().__instancecheck__(inst) or (
        isinstance(inst, core.Tracer) and type(getattr(inst, "aval", None)) is AbstractRef)


class Ref(metaclass=_RefMeta):
  """A mutable array reference: read with `ref[idx]`, write with `ref[idx] = v` (also
  `ref[idx] += v`); `jax.freeze(ref)` gives its final value. Made by `jax.new_ref`."""
  __slots__ = ("_aval", "_value", "__weakref__")

  def __init__(self, aval, value):
    self._aval = aval
    self._value = value

  aval = property(lambda self: self._aval)
  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)
  ndim = property(lambda self: self._aval.ndim)
  size = property(lambda self: self._aval.size)
  weak_type = property(lambda self: self._aval.weak_type)
  # (tracing makes rank-0 values without a buffer literals: a ref is never one)
  _buf = property(lambda self: self._value._buf)
  sharding = property(lambda self: self._value.sharding)
  committed = _committed = property(lambda self: True)

  def __repr__(self):
    return "Ref" + repr(self._value)[5:]

  def __getitem__(self, idx):
    return ref_get(self, idx)

  def __setitem__(self, idx, value):
    ref_set(self, idx, value)

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def addupdate(self, x, idx=()):
    ref_addupdate(self, idx, x)

  def unsafe_buffer_pointer(self):
    return self._value.unsafe_buffer_pointer()

  @property
  def at(self):
    raise NotImplementedError()   # (as JAX's concrete refs; traced refs have views)


def _ref_aval(x):
  aval = core.get_aval(x)
  return aval if type(aval) is AbstractRef else None


# ---- indexers --------------------------------------------------------------------------------
def _static_int(x):
  if type(x) is bool or isinstance(x, np.bool_):
    return None
  if isinstance(x, (int, np.integer)):
    return int(x)
  return None


def _concrete_scalar(x):
  """The value of a concrete rank-0 integer array index, else None."""
  if isinstance(x, Array) and x.shape == () and dtypes.issubdtype(x.dtype, np.integer):
    return int(x)
  return None


def _parse_indexer(idx, shape):
  """(tree, dynamic operands) for a NumPy-style indexer of a ref of `shape` (JAX's NDIndexer
  rules and errors)."""
  if idx is None or idx is Ellipsis:
    return None, []
  if not isinstance(idx, tuple):
    idx = (idx,)
  if not idx:
    return None, []
  if sum(i is Ellipsis for i in idx) > 1:
    raise ValueError("Only one ellipsis is supported.")
  if Ellipsis in [i if i is Ellipsis else None for i in idx]:
    p = next(k for k, i in enumerate(idx) if i is Ellipsis)
    idx = idx[:p] + (slice(None),) * (len(shape) - len(idx) + 1) + idx[p + 1:]
  if len(idx) > len(shape):
    raise ValueError(f"`indices` must not be longer than `shape`: indices={idx}, "
                     f"shape={shape}")
  idx = idx + (slice(None),) * (len(shape) - len(idx))
  eager = core.current_trace() is core.eval_trace
  tree, dyn = [], []
  for i, d in zip(idx, shape):
    if isinstance(i, slice):
      i = Slice.from_slice(i, d)
    if isinstance(i, Slice):
      size = _static_int(i.size)
      if size is None:
        raise NotImplementedError("refs indexed with a Slice of traced size")
      start = _static_int(i.start)
      if start is None:
        dyn.append(i.start)
      elif start:
        if start >= d:
          raise ValueError(f"Out of bound slice: start={start}, dim={d}.")
        if size and start + (size - 1) * i.stride >= d:
          raise ValueError(f"Out of bound slice: start={start}, size={size}, "
                           f"stride={i.stride}, dim={d}.")
      tree.append(("s", start, size, i.stride))
      continue
    v = _static_int(i)
    if v is None:
      if i is None:
        raise TypeError("None (newaxis) is not supported when indexing a Ref")
      c = _concrete_scalar(i) if eager else None
      if c is not None and c >= d:
        raise ValueError(f"Out of bound indexer: idx={c}, dim={d}.")
      aval = core.get_aval(i)
      if not (dtypes.issubdtype(aval.dtype, np.integer)):
        raise TypeError(f"Ref indices must be integers or slices, got {aval}")
      dyn.append(i)
    elif v >= d and eager:   # (JAX checks integer indices only outside of traces)
      raise ValueError(f"Out of bound indexer: idx={v}, dim={d}.")
    tree.append(("i", v))
  _int_shape(tree, [core.get_aval(x) for x in dyn])   # broadcasting check
  return tuple(tree), dyn


def _int_shape(tree, dyn_avals):
  shapes, it = [], iter(dyn_avals)
  for e in tree:
    if e[0] == "s":
      if e[1] is None:
        next(it)
    elif e[1] is None:
      shapes.append(next(it).shape)
  try:
    return tuple(np.broadcast_shapes(*shapes)) if shapes else ()
  except ValueError:
    raise ValueError("Cannot broadcast shapes for indexing: {indexer_shapes}") from None


def _indexed_shape(tree, shape, dyn_avals):
  """The shape `ref[indexer]` has (NumPy's rule: integer indexers' broadcast shape where the
  first one is when they are adjacent, else in front)."""
  if tree is None:
    return tuple(shape)
  ints = [k for k, e in enumerate(tree) if e[0] == "i"]
  slices = tuple(e[2] for e in tree if e[0] == "s")
  if not ints:
    return slices
  int_shape = _int_shape(tree, dyn_avals)
  if ints != list(range(ints[0], ints[-1] + 1)):
    return int_shape + slices
  return slices[:ints[0]] + int_shape + slices[ints[0]:]


def _window_and_index(x, tree, dyn):
  """(window, starts or None, index): `x[indexer]` is `window[index]` for a NumPy-style
  `index`, where `window` is `x` or (for slices with traced starts) its dynamic slice at
  `starts`."""
  shape = core.get_aval(x).shape
  it = iter(dyn)
  starts, sizes, index, windowed = [0] * len(shape), list(shape), [], False
  for k, e in enumerate(tree):
    if e[0] == "s":
      _, start, size, stride = e
      extent = (size - 1) * stride + 1 if size else 0
      if start is None:
        starts[k], sizes[k], windowed = next(it), extent, True
        index.append(slice(0, extent, stride))
      else:
        index.append(slice(start, start + extent, stride))
    else:   # (a static index out of bounds is clamped, as XLA's dynamic slices do)
      index.append(next(it) if e[1] is None else max(min(e[1], shape[k] - 1), -shape[k]))
  if windowed:
    return shape_ops.dynamic_slice(x, starts, sizes), starts, tuple(index)
  return x, None, tuple(index)


def _trivial(index, shape):
  return all(type(i) is slice and i == slice(0, d, 1) for i, d in zip(index, shape))


def _typed(v, aval):
  """`v` with the weak type of `aval` (a written value may have lost it)."""
  got = core.get_aval(v)
  if type(got) is ShapedArray and got.weak_type != aval.weak_type:
    return lax._convert_element_type(v, aval.dtype, aval.weak_type)
  return v


def _read(x, tree, dyn):
  if tree is None:
    return x
  w, _, index = _window_and_index(x, tree, dyn)
  if _trivial(index, core.get_aval(w).shape):
    return w
  return np_indexing.getitem(w, index)


def _write(x, tree, dyn, v, add):
  """`x` with `v` written (or added) at the indexer."""
  if tree is None:
    return lax.add(x, v) if add else v
  w, starts, index = _window_and_index(x, tree, dyn)
  if _trivial(index, core.get_aval(w).shape):
    new_w = lax.add(w, v) if add else v
  else:
    at = np_indexing.IndexUpdateHelper(w)[index]
    new_w = at.add(v) if add else at.set(v)
  return new_w if starts is None else shape_ops.dynamic_update_slice(x, new_w, starts)


# Eagerly, one compiled program per read or write (static: the indexer, and add or set).
_eager_read = jit.jit(lambda x, tree, dyn: _read(x, tree, dyn), static_argnums=1)
_eager_write = jit.jit(lambda x, tree, dyn, v, add: _write(x, tree, dyn, v, add),
                       static_argnums=(1, 4))


# ---- printing --------------------------------------------------------------------------------
def _pp_slice(ctx, dim, start, size, start_var):
  if start_var is not None:
    s = jaxpr_printer._atom_str(start_var, ctx)
    return f"{s}:{s}+{size}"
  end = start + size
  return f"{start or ''}:{'' if end == dim else end}"


def _pp_index(ctx, ref_var, tree, idx_vars):
  name = jaxpr_printer._atom_str(ref_var, ctx)
  if tree is None:
    return pp.text(f"{name}[...]")
  shape = ref_var.aval.shape
  it = iter(idx_vars)
  parts = []
  for e, d in zip(tree, shape):
    if e[0] == "s":
      parts.append(_pp_slice(ctx, d, e[1], e[2], next(it) if e[1] is None else None))
    elif e[1] is None:
      v = next(it)
      parts.append(jaxpr_printer.literal_str(v, print_dtype=False)
                   if type(v) is core.Literal else ctx.name(v))
    else:
      parts.append(str(e[1]))
  return pp.text(f"{name}[{','.join(parts)}]")


def _lhs(ctx, outvars):
  return jaxpr_printer._pp_vars(outvars, ctx, print_shapes=True)


# ---- new_ref ---------------------------------------------------------------------------------
new_ref_p = core.Primitive("new_ref")
new_ref_p.ref_primitive = True
new_ref_p.effectful = True


@new_ref_p.def_abstract_eval
def _new_ref_abstract_eval(init, *, memory_space, kind):
  if type(init) is AbstractRef:
    raise ValueError("Cannot make a Ref holding a Ref.")
  return AbstractRef(init, memory_space=memory_space, kind=kind)


@new_ref_p.def_impl
def _new_ref_impl(init, *, memory_space, kind):
  if memory_space is not None:
    raise NotImplementedError("array ref with memory space only works inside of a `jit`.")
  if isinstance(init, Ref):
    raise ValueError("Cannot make a Ref holding a Ref.")
  value = init if type(init) is Array else creation.asarray(init)
  return Ref(AbstractRef(core.get_aval(value), kind=kind), value)


@new_ref_p.def_lowering
def _new_ref_lowering(ctx, *args, **params):
  raise NotImplementedError("new_ref reached lowering: jaxprs using refs are discharged first")


@new_ref_p.def_jvp
def _new_ref_jvp(primals, tangents, *, memory_space, kind):
  (x,), (t,) = primals, tangents
  out = new_ref_p.bind(x, memory_space=memory_space, kind=kind)
  t = ad.tangent_zeros(ad.tangent_aval(core.get_aval(x))) if type(t) is ad.Zero else t
  trace = core.current_trace()
  if type(trace) is ad.PartialEvalTrace:
    # the tangent ref belongs to the linear computation even when it starts as zeros
    t_ref = trace.record(new_ref_p, [t], {"memory_space": memory_space, "kind": kind})
  else:
    t_ref = new_ref_p.bind(t, memory_space=memory_space, kind=kind)
  return out, t_ref


@new_ref_p.def_batch
def _new_ref_batch(args, dims, *, memory_space, kind):
  (x,), (d,) = args, dims
  return new_ref_p.bind(batching.moveaxis(x, d, 0), memory_space=memory_space, kind=kind), 0


def new_ref(init_val, *, memory_space=None, kind=None):
  """A mutable array reference holding (a copy of) `init_val`."""
  return new_ref_p.bind(init_val, memory_space=memory_space, kind=kind)


# ---- empty_ref / free_ref --------------------------------------------------------------------
empty_ref_p = core.Primitive("empty_ref")
empty_ref_p.ref_primitive = True
empty_ref_p.effectful = True


@empty_ref_p.def_abstract_eval
def _empty_ref_abstract_eval(*, ty, memory_space):
  return AbstractRef(ty, memory_space=memory_space)


@empty_ref_p.def_impl
def _empty_ref_impl(*, ty, memory_space):
  raise NotImplementedError("Evaluation rule for 'empty_ref' not implemented")


@empty_ref_p.def_lowering
def _empty_ref_lowering(ctx, *, ty, memory_space):
  raise NotImplementedError("empty_ref reached lowering: jaxprs using refs are discharged first")


@empty_ref_p.def_jvp
def _empty_ref_jvp(primals, tangents, *, ty, memory_space):
  return (empty_ref_p.bind(ty=ty, memory_space=memory_space),
          empty_ref_p.bind(ty=ad.tangent_aval(ty), memory_space=memory_space))


empty_ref_p.def_batch(batching.no_batching_rule("empty_ref", "empty_ref has no operands to batch"))


@empty_ref_p.def_pp_params
def _empty_ref_pp_params(params):
  return {"memory_space": params["memory_space"], "ty": params["ty"].str_short()}


def empty_ref(ty, memory_space=None):
  """A mutable array reference of type `ty` (a ShapeDtypeStruct or aval) with undefined
  contents (usable inside `jit`)."""
  aval = ty if isinstance(ty, ShapedArray) else ShapedArray(ty.shape, ty.dtype,
                                                            getattr(ty, "weak_type", False))
  return empty_ref_p.bind(ty=aval, memory_space=memory_space)


free_ref_p = core.Primitive("free_ref")
free_ref_p.multiple_results = True
free_ref_p.ref_primitive = True
free_ref_p.effectful = True
free_ref_p.def_abstract_eval(lambda ref: [])
free_ref_p.def_impl(lambda ref: [])


@free_ref_p.def_lowering
def _free_ref_lowering(ctx, ref):
  raise NotImplementedError("free_ref reached lowering: jaxprs using refs are discharged first")


@free_ref_p.def_jvp
def _free_ref_jvp(primals, tangents):
  free_ref_p.bind(primals[0])
  if type(tangents[0]) is not ad.Zero:
    free_ref_p.bind(tangents[0])
  return [], []


free_ref_p.def_batch(lambda args, dims: (free_ref_p.bind(*args), []))


def free_ref(ref):
  """Invalidate `ref` (it is not used afterwards)."""
  free_ref_p.bind(ref)
  return ()


# ---- freeze ------------------------------------------------------------------------------
freeze_p = core.Primitive("freeze")
freeze_p.ref_primitive = True
freeze_p.effectful = True


@freeze_p.def_abstract_eval
def _freeze_abstract_eval(ref):
  return ref.inner_aval if type(ref) is AbstractRef else ref


@freeze_p.def_impl
def _freeze_impl(ref):
  return ref._value if isinstance(ref, Ref) else ref


@freeze_p.def_lowering
def _freeze_lowering(ctx, ref):
  raise NotImplementedError("freeze reached lowering: jaxprs using refs are discharged first")


@freeze_p.def_jvp
def _freeze_jvp(primals, tangents):
  out = freeze_p.bind(primals[0])
  t = tangents[0]
  return out, (ad.Zero(ad.tangent_aval(core.get_aval(out))) if type(t) is ad.Zero
               else freeze_p.bind(t))


freeze_p.def_batch(lambda args, dims: (freeze_p.bind(*args), dims[0]))


def freeze(ref):
  """The final value of `ref`, which is not used afterwards."""
  return freeze_p.bind(ref)


# ---- get ---------------------------------------------------------------------------------
get_p = core.Primitive("get")
get_p.ref_primitive = True
get_p.effectful = True


@get_p.def_abstract_eval
def _get_abstract_eval(ref, *idx, tree):
  if type(ref) is not AbstractRef:
    raise ValueError(f"`get` must be called on `Ref` types: {ref}.")
  inner = ref.inner_aval
  return ShapedArray(_indexed_shape(tree, inner.shape, idx), inner.dtype, inner.weak_type)


@get_p.def_impl
def _get_impl(ref, *idx, tree):
  return ref._value if tree is None else _eager_read(ref._value, tree, list(idx))


@get_p.def_lowering
def _get_lowering(ctx, *args, tree):
  raise NotImplementedError("get reached lowering: jaxprs using refs are discharged first")


@get_p.def_pp_eqn
def _get_pp_eqn(eqn, ctx):
  lhs = _lhs(ctx, eqn.outvars)
  ref, *idx = eqn.invars
  return pp.concat([lhs, pp.text(" <- "), _pp_index(ctx, ref, eqn.params["tree"], idx)])


@get_p.def_jvp
def _get_jvp(primals, tangents, *, tree):
  ref, *idx = primals
  out = get_p.bind(ref, *idx, tree=tree)
  t = tangents[0]
  if type(t) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(core.get_aval(out)))
  return out, get_p.bind(t, *idx, tree=tree)


# ---- swap --------------------------------------------------------------------------------
swap_p = core.Primitive("swap")
swap_p.ref_primitive = True
swap_p.effectful = True


def _check_update(name, ref, val, idx, tree):
  if type(ref) is not AbstractRef:
    raise ValueError(f"`{name}` must be called on `Ref` types: {ref}.")
  if type(val) is AbstractRef:
    raise ValueError("Cannot store a Ref into another Ref. Did you forget to load from it "
                     "using `[...]`?")
  expected = _indexed_shape(tree, ref.shape, idx)
  if expected != tuple(val.shape):
    raise ValueError(f"Invalid shape for `{name}`. Ref shape: {ref.shape}. Expected shape: "
                     f"{expected}. Value shape: {tuple(val.shape)}. Transforms: "
                     f"{_transforms_str(tree)}. ")
  if val.dtype != ref.dtype:
    if name == "swap":
      raise ValueError(f"Invalid dtype for `swap`. Ref dtype: {ref.dtype}. Value dtype: "
                       f"{val.dtype}. ")
    raise ValueError(f"Invalid dtype for `addupdate`. Ref dtype: {ref.dtype}. Value shape: "
                     f"{val.dtype}. ")
  return expected


def _transforms_str(tree):
  return "()" if tree is None else f"(NDIndexer({tree}),)"


@swap_p.def_abstract_eval
def _swap_abstract_eval(ref, val, *idx, tree):
  shape = _check_update("swap", ref, val, idx, tree)
  inner = ref.inner_aval
  return ShapedArray(shape, inner.dtype, inner.weak_type)


@swap_p.def_impl
def _swap_impl(ref, val, *idx, tree):
  _check_update("swap", ref.aval, core.get_aval(val), [core.get_aval(i) for i in idx], tree)
  old = ref._value if tree is None else _eager_read(ref._value, tree, list(idx))
  ref._value = _typed(_eager_write(ref._value, tree, list(idx), val, False),
                      ref.aval.inner_aval)
  return old


@swap_p.def_lowering
def _swap_lowering(ctx, *args, tree):
  raise NotImplementedError("swap reached lowering: jaxprs using refs are discharged first")


@swap_p.def_pp_eqn
def _swap_pp_eqn(eqn, ctx):
  (y,), (ref, v, *idx) = eqn.outvars, eqn.invars
  x_i = _pp_index(ctx, ref, eqn.params["tree"], idx)
  if isinstance(y, core.DropVar) or ctx.var_names.get(y) == "_":   # a set
    return pp.concat([x_i, pp.text(" <- "), pp.text(jaxpr_printer._atom_str(v, ctx))])
  lhs = _lhs(ctx, [y])
  x_i = _pp_index(ctx, ref, eqn.params["tree"], idx)
  return pp.concat([lhs, pp.text(", "), x_i, pp.text(" <- "), x_i, pp.text(", "),
                    pp.text(jaxpr_printer._atom_str(v, ctx))])


_UNDIFFERENTIATED = ("performing a set/swap operation with a differentiated value on a "
                     "non-differentiated array reference of type {}. Move the array reference "
                     "to be an argument of the differentiated function?")


@swap_p.def_jvp
def _swap_jvp(primals, tangents, *, tree):
  ref, x, *idx = primals
  t_ref, t_x = tangents[0], tangents[1]
  out = swap_p.bind(ref, x, *idx, tree=tree)
  zero_out = ad.Zero(ad.tangent_aval(core.get_aval(out)))
  if type(t_ref) is ad.Zero and type(t_x) is ad.Zero:
    return out, zero_out
  if type(t_ref) is ad.Zero:
    raise Exception(_UNDIFFERENTIATED.format(core.get_aval(ref)))
  return out, swap_p.bind(t_ref, ad.instantiate(t_x), *idx, tree=tree)


# ---- addupdate ---------------------------------------------------------------------------
addupdate_p = core.Primitive("addupdate")
addupdate_p.multiple_results = True
addupdate_p.ref_primitive = True
addupdate_p.effectful = True


@addupdate_p.def_abstract_eval
def _addupdate_abstract_eval(ref, val, *idx, tree):
  _check_update("addupdate", ref, val, idx, tree)
  return []


@addupdate_p.def_impl
def _addupdate_impl(ref, val, *idx, tree):
  _check_update("addupdate", ref.aval, core.get_aval(val), [core.get_aval(i) for i in idx],
                tree)
  ref._value = _typed(_eager_write(ref._value, tree, list(idx), val, True),
                      ref.aval.inner_aval)
  return []


@addupdate_p.def_lowering
def _addupdate_lowering(ctx, *args, tree):
  raise NotImplementedError("addupdate reached lowering: jaxprs using refs are discharged first")


@addupdate_p.def_pp_eqn
def _addupdate_pp_eqn(eqn, ctx):
  ref, v, *idx = eqn.invars
  return pp.concat([_pp_index(ctx, ref, eqn.params["tree"], idx), pp.text(" += "),
                    pp.text(jaxpr_printer._atom_str(v, ctx))])


@addupdate_p.def_jvp
def _addupdate_jvp(primals, tangents, *, tree):
  ref, x, *idx = primals
  t_ref, t_x = tangents[0], tangents[1]
  addupdate_p.bind(ref, x, *idx, tree=tree)
  if type(t_ref) is not ad.Zero:
    addupdate_p.bind(t_ref, ad.instantiate(t_x), *idx, tree=tree)
  elif type(t_x) is not ad.Zero:
    raise Exception(_UNDIFFERENTIATED.format(core.get_aval(ref)))
  return [], []


# ---- batching ------------------------------------------------------------------------------
_UNBATCHED_REF = ("performing {} with vmapped value on an unbatched array reference of type "
                  "{}. Move the array reference to be an argument to the vmapped function?")


def _batched_tree(tree, ref_aval, idx_dims):
  """The indexer of a ref batched along axis 0 (indices unbatched), and where the batch axis
  of the indexed value is."""
  if any(d is not None for d in idx_dims):
    raise NotImplementedError("vmap of a ref indexed with batched indices")
  size = ref_aval.shape[0]
  inner = tuple(ref_aval.shape[1:])
  tree = tuple(("s", 0, d, 1) for d in inner) if tree is None else tree
  new = (("s", 0, size, 1),) + tree
  ints = [k for k, e in enumerate(new) if e[0] == "i"]
  out_dim = 0
  if ints and ints != list(range(ints[0], ints[-1] + 1)):
    out_dim = None   # the integer indexers' shape comes first
  return new, out_dim


def _int_ndim(tree, idx_avals):
  return len(_int_shape(tree, idx_avals))


def _check_ref_batched(what, ref, ref_dim):
  if ref_dim is None:
    raise Exception(_UNBATCHED_REF.format(what, core.get_aval(ref)))
  if ref_dim != 0:
    raise NotImplementedError("vmap of a ref batched along an axis other than 0")


@get_p.def_batch
def _get_batch(args, dims, *, tree):
  ref, *idx = args
  if dims[0] is None:
    raise NotImplementedError("vmap of a read of an unbatched ref at batched indices")
  _check_ref_batched("a get operation", ref, dims[0])
  new, out_dim = _batched_tree(tree, core.get_aval(ref), dims[1:])
  if out_dim is None:
    out_dim = _int_ndim(new, [core.get_aval(i) for i in idx])
  return get_p.bind(ref, *idx, tree=new), out_dim


def _value_at(val, d, out_dim, size):
  return batching.matchaxis(d, out_dim, val, size)


def _write_batch(prim, what, args, dims, tree):
  """vmap of a write into a ref (swap or addupdate): the ref's batch axis leads; the value is
  moved to the axis the batched indexing gives; returns (the bound results, that axis)."""
  ref, val, *idx = args
  _check_ref_batched(what, ref, dims[0])
  aval = core.get_aval(ref)
  new, out_dim = _batched_tree(tree, aval, dims[2:])
  if out_dim is None:
    out_dim = _int_ndim(new, [core.get_aval(i) for i in idx])
  val = _value_at(val, dims[1], out_dim, aval.shape[0])
  return prim.bind(ref, val, *idx, tree=new), out_dim


@swap_p.def_batch
def _swap_batch(args, dims, *, tree):
  return _write_batch(swap_p, "a set/swap operation", args, dims, tree)


@addupdate_p.def_batch
def _addupdate_batch(args, dims, *, tree):
  out, _ = _write_batch(addupdate_p, "an addupdate operation", args, dims, tree)
  return out, []


# ---- the public operations -----------------------------------------------------------------
def _ref_and_indexer(ref, idx, function_name):
  aval = _ref_aval(ref) if isinstance(ref, (Ref, core.Tracer)) else None
  if aval is None:
    raise ValueError(f"Can only call `{function_name}` on a `Ref`: {ref}.")
  tree, dyn = _parse_indexer(idx, aval.shape)
  return tree, dyn


def _maybe_implicit_cast(dtype, value):
  """JAX's implicit cast of written values: weakly typed floats to a floating ref's dtype, and
  integers to an integer ref's dtype."""
  if isinstance(value, Ref):
    return value
  aval = core.get_aval(value)
  if type(aval) is not ShapedArray:
    return value
  if ((aval.weak_type and dtypes.issubdtype(dtype, np.floating)
       and dtypes.issubdtype(aval.dtype, np.floating))
      or (dtypes.issubdtype(dtype, np.integer) and dtypes.issubdtype(aval.dtype, np.integer))):
    return lax.convert_element_type(value, dtype)
  return value


def ref_get(ref, idx=None):
  """`ref[idx]`: read (a slice of) a mutable array reference."""
  tree, dyn = _ref_and_indexer(ref, idx, "ref_get")
  return get_p.bind(ref, *dyn, tree=tree)


def ref_swap(ref, idx, value, _function_name="ref_swap"):
  """Write `value` at `ref[idx]` and return what was there."""
  if hasattr(ref, "dtype"):
    value = _maybe_implicit_cast(ref.dtype, value)
  tree, dyn = _ref_and_indexer(ref, idx, _function_name)
  return swap_p.bind(ref, value, *dyn, tree=tree)


def ref_set(ref, idx, value):
  """`ref[idx] = value`."""
  ref_swap(ref, idx, value, _function_name="ref_set")


def ref_addupdate(ref, idx, x):
  """`ref[idx] += x`, as one operation."""
  tree, dyn = _ref_and_indexer(ref, idx, "ref_addupdate")
  addupdate_p.bind(ref, x, *dyn, tree=tree)


core.register_ref_ops(ref_get, ref_swap, ref_set, lambda r, v, idx: ref_addupdate(r, idx, v))


# ---- views: ref.at[idx] ------------------------------------------------------------------------
def _full_tree(shape):
  return tuple(("s", 0, d, 1) for d in shape)


def _scaled(start, k, stride):
  """start + k * stride, on Python ints when both are static."""
  a, b = _static_int(start), _static_int(k)
  if a is not None and b is not None:
    return a + b * stride
  return ufuncs.add(start, ufuncs.multiply(k, stride) if stride != 1 else k)


class RefView:
  """`ref.at[idx]`: a part of a ref (given by slices and integer indices) that is read and
  written through the ref; `view.at[...]` narrows it further."""
  __slots__ = ("ref", "tree", "dyn", "shape", "dtype")

  def __init__(self, ref, tree, dyn):
    self.ref, self.tree, self.dyn = ref, tree, list(dyn)
    aval = _ref_aval(ref)
    self.shape = _indexed_shape(tree, aval.shape, [core.get_aval(x) for x in self.dyn])
    self.dtype = aval.dtype

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape)))

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __repr__(self):
    return f"RefView(shape={self.shape}, dtype={self.dtype})"

  def _compose(self, idx):
    """(tree, dynamic operands) of `self[idx]` as an indexer of the underlying ref."""
    tree2, dyn2 = _parse_indexer(idx, self.shape)
    tree2 = _full_tree(self.shape) if tree2 is None else tree2
    base = _full_tree(_ref_aval(self.ref).shape) if self.tree is None else self.tree
    it1, it2, e2s = iter(self.dyn), iter(dyn2), iter(zip(tree2, self.shape))
    out, dyn = [], []
    for e in base:
      if e[0] == "i":
        out.append(e)
        if e[1] is None:
          dyn.append(next(it1))
        continue
      _, start, _, stride = e
      start = next(it1) if start is None else start
      e2, d2 = next(e2s)
      if e2[0] == "s":
        _, s2, n2, st2 = e2
        new = _scaled(start, next(it2) if s2 is None else s2, stride)
        static = _static_int(new)
        out.append(("s", static, n2, stride * st2))
      else:
        k = next(it2) if e2[1] is None else (e2[1] + d2 if e2[1] < 0 else e2[1])
        new = _scaled(start, k, stride)
        static = _static_int(new)
        out.append(("i", static))
      if static is None:
        dyn.append(new)
    return tuple(out), dyn

  def __getitem__(self, idx):
    tree, dyn = self._compose(idx)
    return get_p.bind(self.ref, *dyn, tree=tree)

  def __setitem__(self, idx, value):
    tree, dyn = self._compose(idx)
    swap_p.bind(self.ref, _maybe_implicit_cast(self.dtype, value), *dyn, tree=tree)

  def get(self, idx=()):
    return self[idx]

  def set(self, value, idx=()):  # noqa: A003
    self[idx] = value

  def swap(self, value, idx=()):
    tree, dyn = self._compose(idx)
    return swap_p.bind(self.ref, _maybe_implicit_cast(self.dtype, value), *dyn, tree=tree)

  def addupdate(self, value, idx=()):
    tree, dyn = self._compose(idx)
    addupdate_p.bind(self.ref, value, *dyn, tree=tree)

  @property
  def at(self):
    return _RefAt(self)


class _RefAt:
  __slots__ = ("target",)

  def __init__(self, target):
    self.target = target

  def __getitem__(self, idx):
    t = self.target
    if isinstance(t, RefView):
      tree, dyn = t._compose(idx)
      return RefView(t.ref, tree, dyn)
    tree, dyn = _ref_and_indexer(t, idx, "at")
    return RefView(t, tree, dyn)


core._ref_ops["at"] = _RefAt


# ---- state discharge -----------------------------------------------------------------------
class _Cell:
  """A ref while a jaxpr is discharged: its current value. (Written values keep their own
  weak type, as in JAX's discharge: a weakly typed ref written under jit reads strong.)"""
  __slots__ = ("val", "aval")

  def __init__(self, val, aval):
    self.aval = aval
    self.val = val


def _concrete_refs(jaxpr, consts, out, seen):
  """The concrete Refs a closed jaxpr closes over (also in nested jaxprs), once each."""
  for c in consts:
    if isinstance(c, Ref) and id(c) not in seen:
      seen.add(id(c))
      out.append(c)
  for eqn in jaxpr.eqns:
    for v in eqn.params.values():
      for x in (v if isinstance(v, (tuple, list)) else (v,)):
        if isinstance(x, core.ClosedJaxpr):
          _concrete_refs(x.jaxpr, x.consts, out, seen)
  return out


_discharge_rules: dict = {}


def register_discharge_rule(prim, rule):
  """How discharge evaluates an equation of `prim` (a primitive above this module that holds
  refs): `rule(operands, params, cells)` -> outputs, operands that are refs given as `_Cell`s
  (evaluate inner jaxprs with `_interpret`)."""
  _discharge_rules[prim] = rule


def _interpret(jaxpr, consts, args, cells):
  """Evaluate `jaxpr` under the current trace with its refs as `_Cell`s (`cells`: the cell of
  each concrete Ref by id); returns the outputs."""
  env = {}

  def read(v):
    return v if type(v) is core.Literal else env[v]

  for v, c in zip(jaxpr.constvars, consts):
    env[v] = cells[id(c)] if isinstance(c, Ref) else c
  for v, a in zip(jaxpr.invars, args):
    env[v] = a
  for eqn in jaxpr.eqns:
    prim, ins = eqn.primitive, [read(v) for v in eqn.invars]
    params = eqn.params
    if prim is new_ref_p:
      outs = [_Cell(_literal_value(ins[0]), eqn.outvars[0].aval.inner_aval)]
    elif prim is empty_ref_p:
      ty = params["ty"]
      outs = [_Cell(creation.zeros(ty.shape, ty.dtype), ty)]
    elif prim is free_ref_p:
      outs = []
    elif prim is freeze_p:
      outs = [ins[0].val]
    elif prim is get_p:
      outs = [_read(ins[0].val, params["tree"], [_literal_value(i) for i in ins[1:]])]
    elif prim is swap_p:
      cell, v, idx = ins[0], _literal_value(ins[1]), [_literal_value(i) for i in ins[2:]]
      outs = [_read(cell.val, params["tree"], idx)]
      cell.val = _write(cell.val, params["tree"], idx, v, add=False)
    elif prim is addupdate_p:
      cell, v, idx = ins[0], _literal_value(ins[1]), [_literal_value(i) for i in ins[2:]]
      cell.val = _write(cell.val, params["tree"], idx, v, add=True)
      outs = []
    elif prim in _discharge_rules:
      outs = _discharge_rules[prim](ins, params, cells)
    elif prim is jit.jit_p and core.jaxpr_uses_refs(params["jaxpr"].jaxpr):
      inner = params["jaxpr"]
      outs = _interpret(inner.jaxpr, inner.consts, ins, cells)
    elif prim in _LOOPS and _takes_refs(params, ins):
      outs = _LOOPS[prim](ins, params, cells)
    else:
      if any(type(x) is _Cell for x in ins):
        raise NotImplementedError(f"mutable array references used by '{prim.name}' (arrax "
                                  "discharges refs only through jit and ref operations)")
      if any(core.jaxpr_uses_refs(j) for j in core.jaxprs_in_params(params)):
        params = {k: _discharge_param(v) for k, v in params.items()}
      ans = prim.bind(*ins, **params)
      outs = ans if prim.multiple_results else [ans]
    for v, o in zip(eqn.outvars, outs):
      if not isinstance(v, core.DropVar):
        env[v] = o
  return [read(v) for v in jaxpr.outvars]


# ---- control flow holding refs: the refs' values become loop carries / branch results ------
def _takes_refs(params, ins):
  return any(type(x) is _Cell for x in ins) or any(
      _concrete_refs(j.jaxpr, j.consts, [], set()) for j in _closed_in(params))


def _closed_in(params):
  return [x for v in params.values() for x in (v if isinstance(v, (tuple, list)) else (v,))
          if isinstance(x, core.ClosedJaxpr)]


class _Sub:
  """A sub-jaxpr called with operands `ops` (cells among them), discharged: `run(args, rvals)`
  evaluates it on plain `args` (anything at ref positions) with `rvals` the values of the refs
  `refs` (a shared list of cells), returning (outputs, new rvals)."""

  def __init__(self, closed, ops, cells, refs):
    self.lowered, (self.ext, self.ref_args) = _discharge(closed)
    self.n_out = len(closed.jaxpr.outvars)
    mine = [cells[id(r)] for r in self.ext] + [ops[k] for k in self.ref_args]
    for c in mine:
      if all(c is not r for r in refs):
        refs.append(c)
    self.refs = refs
    self.mine = mine

  def run(self, args, rvals):
    pos = [next(i for i, r in enumerate(self.refs) if r is c) for c in self.mine]
    n_ext = len(self.ext)
    args = list(args)
    for k, p in zip(self.ref_args, pos[n_ext:]):
      args[k] = rvals[p]
    outs = core.eval_jaxpr(self.lowered.jaxpr, self.lowered.consts,
                           *[rvals[p] for p in pos[:n_ext]], *args)
    new = list(rvals)
    for p, v in zip(pos, outs[self.n_out:]):
      new[p] = _typed(v, self.refs[p].aval)
    return outs[:self.n_out], new


def _closed(fun, in_avals):
  jaxpr, consts = tracing.trace_to_jaxpr(fun, in_avals)
  closed, outer = tracing.closed_with_host_consts(jaxpr, consts)
  assert not outer
  return closed


def _scan_discharge(ins, params, cells):
  body, nc, nk = params["jaxpr"], params["num_consts"], params["num_carry"]
  refs = []
  sub = _Sub(body, ins, cells, refs)
  if any(k >= nc for k in sub.ref_args):
    raise NotImplementedError("refs carried through a scan")
  avals = body.in_avals
  consts = [x for k, x in enumerate(ins[:nc]) if k not in sub.ref_args]
  c_avals = [a for k, a in enumerate(avals[:nc]) if k not in sub.ref_args]
  nr, npc = len(refs), len(consts)

  def body2(*a):
    pc, rv, rest = a[:npc], a[npc:npc + nr], a[npc + nr:]
    it = iter(pc)
    full = [None if k in sub.ref_args else next(it) for k in range(nc)] + list(rest)
    outs, new = sub.run(full, rv)
    return [*new, *outs]

  closed = _closed(body2, c_avals + [r.aval for r in refs] + list(avals[nc:]))
  outs = loops.scan_p.bind(*consts, *[_typed(r.val, r.aval) for r in refs], *ins[nc:],
                           **dict(params, jaxpr=closed, num_consts=npc, num_carry=nr + nk))
  for r, v in zip(refs, outs[:nr]):
    r.val = v
  return outs[nr:]


def _while_discharge(ins, params, cells):
  cn, bn = params["cond_nconsts"], params["body_nconsts"]
  refs = []
  cond = _Sub(params["cond_jaxpr"], list(ins[:cn]) + list(ins[cn + bn:]), cells, refs)
  body = _Sub(params["body_jaxpr"], list(ins[cn:cn + bn]) + list(ins[cn + bn:]), cells, refs)
  if any(k >= cn for k in cond.ref_args) or any(k >= bn for k in body.ref_args):
    raise NotImplementedError("refs carried through a while loop")
  cc = [x for k, x in enumerate(ins[:cn]) if k not in cond.ref_args]
  bc = [x for k, x in enumerate(ins[cn:cn + bn]) if k not in body.ref_args]
  carry = ins[cn + bn:]
  c_av = params["cond_jaxpr"].in_avals
  b_av = params["body_jaxpr"].in_avals
  nr = len(refs)

  def fill(sub, plain, n):
    it = iter(plain)
    return [None if k in sub.ref_args else next(it) for k in range(n)]

  def cond2(*a):
    pc, rv, c = a[:len(cc)], a[len(cc):len(cc) + nr], a[len(cc) + nr:]
    return cond.run(fill(cond, pc, cn) + list(c), rv)[0]

  def body2(*a):
    pc, rv, c = a[:len(bc)], a[len(bc):len(bc) + nr], a[len(bc) + nr:]
    outs, new = body.run(fill(body, pc, bn) + list(c), rv)
    return [*new, *outs]

  r_av = [r.aval for r in refs]
  cj = _closed(cond2, [a for k, a in enumerate(c_av[:cn]) if k not in cond.ref_args] + r_av
               + list(c_av[cn:]))
  bj = _closed(body2, [a for k, a in enumerate(b_av[:bn]) if k not in body.ref_args] + r_av
               + list(b_av[bn:]))
  outs = while_p.bind(*cc, *bc, *[_typed(r.val, r.aval) for r in refs], *carry,
                                 **dict(params, cond_jaxpr=cj, body_jaxpr=bj,
                                        cond_nconsts=len(cc), body_nconsts=len(bc)))
  for r, v in zip(refs, outs[:nr]):
    r.val = v
  return outs[nr:]


def _cond_discharge(ins, params, cells):
  index, ops = ins[0], ins[1:]
  refs = []
  subs = [_Sub(b, ops, cells, refs) for b in params["branches"]]
  ref_pos = {k for s in subs for k in s.ref_args}
  plain = [x for k, x in enumerate(ops) if k not in ref_pos]
  avals = params["branches"][0].in_avals
  p_av = [a for k, a in enumerate(avals) if k not in ref_pos]
  nr = len(refs)

  def branch(sub):
    def f(*a):
      pc, rv = a[:len(plain)], a[len(plain):]
      it = iter(pc)
      full = [None if k in ref_pos else next(it) for k in range(len(ops))]
      outs, new = sub.run(full, rv)
      return [*new, *outs]
    return _closed(f, p_av + [r.aval for r in refs])

  outs = conditionals.cond_p.bind(index, *plain, *[_typed(r.val, r.aval) for r in refs],
                                  **dict(params, branches=tuple(branch(s) for s in subs)))
  for r, v in zip(refs, outs[:nr]):
    r.val = v
  return outs[nr:]


_LOOPS = {loops.scan_p: _scan_discharge, while_p: _while_discharge,
          conditionals.cond_p: _cond_discharge}


def _literal_value(x):
  return x.val if type(x) is core.Literal else x


def _discharge_param(v):
  if isinstance(v, core.ClosedJaxpr) and core.jaxpr_uses_refs(v.jaxpr):
    return _discharged_same(v)
  if isinstance(v, (tuple, list)):
    return type(v)(_discharge_param(x) for x in v)
  return v


def _discharged_same(closed):
  """A closed jaxpr whose refs are all made inside, discharged: same inputs and outputs."""
  lowered, runner_info = _discharge(closed)
  if runner_info[0] or runner_info[1]:
    raise NotImplementedError("mutable array references closed over or passed into a "
                              "control-flow body")
  return lowered


_discharge_cache: "weakref.WeakKeyDictionary" = core.register_cache(weakref.WeakKeyDictionary())


def _discharge(closed):
  """(discharged closed jaxpr, (closed-over Refs, positions of ref arguments)).

  The discharged jaxpr takes the values of the closed-over Refs, then the arguments (a ref
  argument's value in its place), and returns the outputs, then the final values of the
  closed-over Refs and of the ref arguments."""
  hit = _discharge_cache.get(closed)
  if hit is not None:
    return hit
  jaxpr = closed.jaxpr
  ext = _concrete_refs(jaxpr, closed.consts, [], set())
  ref_args = [k for k, v in enumerate(jaxpr.invars) if type(v.aval) is AbstractRef]
  in_avals = ([r.aval.inner_aval for r in ext]
              + [v.aval.inner_aval if type(v.aval) is AbstractRef else v.aval
                 for v in jaxpr.invars])

  def fun(*vals):
    ext_vals, args = vals[:len(ext)], list(vals[len(ext):])
    cells = {id(r): _Cell(v, r.aval.inner_aval) for r, v in zip(ext, ext_vals)}
    arg_cells = {}
    for k in ref_args:
      args[k] = arg_cells[k] = _Cell(args[k], jaxpr.invars[k].aval.inner_aval)
    outs = _interpret(jaxpr, closed.consts, args, cells)
    for o in outs:
      if type(o) is _Cell:
        raise ValueError("mutable array references cannot be returned")
    return (list(outs) + [cells[id(r)].val for r in ext]
            + [arg_cells[k].val for k in ref_args])

  new_jaxpr, consts = tracing.trace_to_jaxpr(fun, in_avals)
  lowered, outer = tracing.closed_with_host_consts(new_jaxpr, consts)
  assert not outer
  result = (lowered, (ext, ref_args))
  _discharge_cache[closed] = result
  return result


def _jit_discharge(name, closed):
  """jit's hook: the discharged jaxpr, and a runner when refs cross the call boundary."""
  lowered, (ext, ref_args) = _discharge(closed)
  if not ext and not ref_args:
    return lowered, None
  n_out = len(closed.jaxpr.outvars)

  def run(leaves):
    refs = list(ext) + [leaves[k] for k in ref_args]
    ids = [id(r) for r in refs]
    if len(set(ids)) != len(ids):
      raise ValueError("only one reference to a mutable array may be passed as an argument "
                       "to a function")
    vals = [r._value for r in ext] + [x._value if isinstance(x, Ref) else x for x in leaves]
    outs = jit.jit_p.impl(*vals, jaxpr=lowered, name=name)
    for r, v in zip(refs, outs[n_out:]):
      r._value = v
    return list(outs[:n_out])

  return lowered, run


def _transpose_discharge(jaxpr, consts):
  """ad's hook: a linear jaxpr whose refs are all made inside, discharged."""
  if any(type(v.aval) is AbstractRef for v in jaxpr.invars) or any(
      isinstance(c, Ref) for c in consts):
    raise NotImplementedError("transposing a jaxpr that takes mutable array references")
  in_avals = [v.aval for v in jaxpr.constvars] + [v.aval for v in jaxpr.invars]
  n = len(jaxpr.constvars)

  flat = core.Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.outvars, jaxpr.eqns)

  def fun(*vals):
    return _interpret(flat, [], vals, {})

  new, new_consts = tracing.trace_to_jaxpr(fun, in_avals)
  out = core.Jaxpr(list(new.constvars) + new.invars[:n], new.invars[n:], new.outvars, new.eqns)
  return out, list(new_consts) + list(consts)


def _eager_with_refs(prim, args, params):
  """dispatch's hook: a primitive applied eagerly to refs (or whose jaxprs close over refs)
  runs as a discharged one-equation program."""
  # a ref given as several operands (a while loop's predicate and body both use it) is one
  # input of the program
  first, keep = {}, []
  for k, a in enumerate(args):
    if isinstance(a, Ref):
      if id(a) in first:
        continue
      first[id(a)] = k
    keep.append(k)

  def one(*kept):
    given = dict(zip(keep, kept))
    full = [given[k] if k in given else given[first[id(a)]] for k, a in enumerate(args)]
    out = prim.bind(*full, **params)
    return list(out) if prim.multiple_results else [out]
  kept = [args[k] for k in keep]
  closed = _closed(one, [core.get_aval(a) for a in kept])
  lowered, run = _jit_discharge(prim.name, closed)
  outs = run(kept) if run is not None else jit.jit_p.impl(*kept, jaxpr=lowered,
                                                           name=prim.name)
  return outs if prim.multiple_results else outs[0]


dispatch.register_ref_eager(_eager_with_refs)
jit.register_ref_discharge(_jit_discharge)
ad.register_ref_discharge(_transpose_discharge)


