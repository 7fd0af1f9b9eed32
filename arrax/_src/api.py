"""Staging-level APIs: make_jaxpr, eval_shape, ShapeDtypeStruct, device_put/get."""
from __future__ import annotations

import functools

import numpy as np

# jaxpr_printer registers how jaxprs print with core when imported.
from arrax._src import backend, core, dtypes, jaxpr_printer  # noqa: F401
from arrax._src.array import Array, device_put_value
from arrax._src.tracing import trace_to_jaxpr
from arrax._src.tree_util import tree_flatten, tree_map, tree_unflatten


class ShapeDtypeStruct:
  """A shape, dtype (and weak type) standing in for an array: eval_shape's results, lower()'s inputs."""
  __slots__ = ("shape", "dtype", "sharding", "weak_type")

  def __init__(self, shape, dtype, sharding=None, weak_type=False):
    self.shape = tuple(shape)
    self.dtype = dtype if isinstance(dtype, dtypes.ExtendedDType) else np.dtype(dtype)
    self.sharding = sharding
    self.weak_type = weak_type

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  @property
  def aval(self):
    return core.ShapedArray(self.shape, self.dtype, self.weak_type)

  def __repr__(self):
    wt = ", weak_type=True" if self.weak_type else ""
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{wt})"

  def __eq__(self, other):
    return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __hash__(self):
    return hash((self.shape, self.dtype, self.weak_type))


def _abstractify(x):
  try:
    return core.get_aval(x)
  except TypeError:
    raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type") from None


def _trace_flat(fun, args, kwargs, static_argnums=()):
  static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
  n = len(args)
  norm = {i + n if i < 0 else i for i in static_argnums}
  dyn = [a for i, a in enumerate(args) if i not in norm]
  leaves, in_tree = tree_flatten((dyn, kwargs))
  avals = [_abstractify(x) for x in leaves]
  out_tree_box = []

  def flat_fun(*flat):
    d_args, d_kwargs = tree_unflatten(in_tree, flat)
    it = iter(d_args)
    full = [args[i] if i in norm else next(it) for i in range(n)]
    out = fun(*full, **d_kwargs)
    out_leaves, out_tree = tree_flatten(out)
    out_tree_box.append((out_tree, out))
    return out_leaves

  jaxpr, consts = trace_to_jaxpr(flat_fun, avals)
  return jaxpr, consts, out_tree_box[0][0]


def clear_caches():
  """Clear all compilation and staging caches (traces, jaxprs and compiled executables)."""
  core.clear_caches()


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False,
               abstracted_axes=None):
  """A function that returns the jaxpr of `fun` for given example arguments.

  Example:
    >>> print(make_jaxpr(lambda x: 2 + jnp.sin(x))(jnp.array(1.0)))
    { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = add 2.0:f32[] b in (c,) }
  """
  @functools.wraps(fun)
  def make_jaxpr_f(*args, **kwargs):
    jaxpr, consts, out_tree = _trace_flat(fun, args, kwargs, static_argnums)
    closed = core.ClosedJaxpr(jaxpr, consts)
    if return_shape:
      shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                for a in closed.out_avals]
      return closed, tree_unflatten(out_tree, shapes)
    return closed

  make_jaxpr_f.__name__ = f"make_jaxpr({getattr(fun, '__name__', 'fun')})"
  return make_jaxpr_f


def eval_shape(fun, *args, **kwargs):
  """The shapes and dtypes `fun` would return, as ShapeDtypeStructs, without computing anything."""
  jaxpr, _, out_tree = _trace_flat(fun, args, kwargs)
  out = tree_unflatten(out_tree, [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                                  for a in jaxpr.out_avals])
  # Typed PRNG keys (pytree nodes over their key data) are one struct of their key dtype.
  is_key = lambda x: isinstance(getattr(x, "dtype", None), dtypes.ExtendedDType)
  return tree_map(lambda x: ShapeDtypeStruct(x.shape, x.dtype) if is_key(x) else x, out,
                  is_leaf=is_key)


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Transfer a pytree of arrays to `device` (committed) or the default device."""
  def put(v):
    if isinstance(v, core.Tracer):
      return v
    if type(v) is Array:
      if device is None or v.device == device:
        return v if device is None else Array(v._buf, v.aval, committed=True)
      return device_put_value(v._value, device, dtype=v.dtype, weak_type=v.weak_type,
                              committed=True)
    return device_put_value(v, device, committed=device is not None)
  return tree_map(put, x)


def device_get(x):
  """Fetch a pytree of arrays to host NumPy values."""
  def get(v):
    if type(v) is Array:
      return v._value
    return v
  return tree_map(get, x)


def block_until_ready(x):
  """Wait for every array in a pytree to be computed; returns the pytree."""
  for leaf in tree_flatten(x)[0]:
    if type(leaf) is Array:
      leaf.block_until_ready()
  return x


def typeof(x):
  """The abstract value (type) of `x`: shape, dtype and weak type; typed PRNG keys have their
  extended dtype (`key<fry>[]`)."""
  dt = getattr(x, "dtype", None)
  if isinstance(dt, dtypes.ExtendedDType) and not isinstance(x, core.Tracer):
    return core.ShapedArray(x.shape, dt)
  return core.get_aval(x)


def named_call(fun, *, name=None):
  """`fun` with its computations named `name` (default: `fun.__name__`). arrax keeps no name
  stacks in its programs, so the result computes and stages exactly what `fun` does."""
  if name is None:
    name = fun.__name__

  @functools.wraps(fun)
  def named(*args, **kwargs):
    return fun(*args, **kwargs)
  return named
