"""`jax.ffi`: call C/C++ functions registered with XLA's foreign function interface (FFI).

`register_ffi_target` hands a handler (a PyCapsule around an `XLA_FFI_Handler*`) to XLA;
`ffi_call(target, result_shape_dtypes, ...)` returns a function binding the `ffi_call`
primitive, which lowers to a `stablehlo.custom_call` of that target with the keyword arguments
as the handler's attributes (the typed FFI, custom call API version 4). Eagerly it runs as a
one-primitive executable, like every other primitive.
"""
from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence

import jaxlib
import numpy as np
from jaxlib import xla_client

from arrax._src import core, mlir
from arrax._src.callback import batch_by_vmap_method
from arrax._src.layout import Layout

# ---- registration -----------------------------------------------------------------------------


def register_ffi_target(name: str, fn, platform: str = "cpu", api_version: int = 1,
                        **kwargs) -> None:
  """Register `fn` (a PyCapsule holding the handler, or a dict of them by FFI stage:
  "instantiate", "prepare", "initialize", "execute") as custom call target `name` on
  `platform`. api_version 1 is the typed FFI, 0 the older custom call ABI; other keywords go to
  jaxlib's `register_custom_call_target`."""
  return xla_client.register_custom_call_target(name, fn, platform, api_version, **kwargs)


def register_ffi_type_id(name: str, obj, platform: str = "cpu") -> None:
  """Removed in this jaxlib: use `register_ffi_type`."""
  raise ValueError("register_ffi_type_id is not supported after jaxlib version 381.")


def register_ffi_type(name: str, type_registration, platform: str = "cpu") -> None:
  """Register a user type for FFI handlers: `type_registration` is a dict with a "type_id"
  PyCapsule (and optionally "type_info")."""
  return xla_client.register_custom_type(name, type_registration, platform=platform)


def register_ffi_target_as_batch_partitionable(name: str) -> None:
  """Let XLA's SPMD partitioner split calls of target `name` along their leading axes."""
  xla_client.register_custom_call_as_batch_partitionable(name)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.py_object)
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR)


def pycapsule(funcptr):
  """A PyCapsule (unnamed, no destructor) around the ctypes function pointer `funcptr`, as
  `register_ffi_target` takes it.

  Example:
    >>> lib = ctypes.cdll.LoadLibrary("./libfoo.so")
    >>> jax.ffi.register_ffi_target("foo", jax.ffi.pycapsule(lib.Foo))
  """
  return _capsule_new(ctypes.cast(funcptr, ctypes.c_void_p), None, _CAPSULE_DESTRUCTOR(0))


def include_dir() -> str:
  """The directory of the C++ headers jaxlib ships (`xla/ffi/api/ffi.h` for FFI handlers)."""
  base = jaxlib.__file__
  root = os.path.dirname(os.path.abspath(base)) if base is not None else list(jaxlib.__path__)[0]
  return os.path.join(root, "include")


# ---- layouts and lowering ---------------------------------------------------------------------
def _aval_shape(aval):
  return () if aval is core.abstract_token else aval.shape


def _minor_to_major(aval, layout=None):
  """XLA's minor-to-major dimension order for `layout` (None: row-major)."""
  if layout is None:
    return tuple(range(len(_aval_shape(aval)) - 1, -1, -1))
  if isinstance(layout, Layout):
    if layout.tiling is not None:
      raise ValueError("The FFI does not support layouts with tiling")
    return tuple(layout.major_to_minor[::-1])
  return tuple(layout)


def build_ffi_lowering_function(call_target_name: str, *, operand_layouts=None,
                                result_layouts=None, backend_config=None,
                                skip_ffi_layout_processing: bool = False, **lowering_args):
  """A function `(ctx, *operands, **attrs) -> custom call op` calling `call_target_name`.
  Layouts here are minor-to-major (XLA's order); `attrs` join `backend_config` as the
  handler's attributes (api_version >= 4); other keywords go to `mlir.custom_call`."""
  def build(ctx, *operands, **params):
    kwargs = dict(lowering_args)
    kwargs.setdefault("api_version", 4)
    if kwargs["api_version"] >= 4:
      if backend_config is not None and not isinstance(backend_config, dict):
        raise ValueError("When api_version > 4, backend_config must be a dictionary.")
      kwargs["backend_config"] = dict(backend_config or {}, **{
          k: mlir.ir_attribute(v) for k, v in params.items()})
    else:
      if params:
        raise ValueError("The use of ffi_call attributes requires a custom call API version "
                         f"of at least 4; got api_version={kwargs['api_version']}.")
      kwargs["backend_config"] = backend_config
    kwargs.setdefault("result_types", [mlir.aval_to_ir_type(a) for a in ctx.avals_out])
    if not skip_ffi_layout_processing:
      kwargs["operand_layouts"] = (
          [_minor_to_major(a) for a in ctx.avals_in] if operand_layouts is None else
          [_minor_to_major(a, lay) for a, lay in zip(ctx.avals_in, operand_layouts)])
      kwargs["result_layouts"] = (
          [_minor_to_major(a) for a in ctx.avals_out] if result_layouts is None else
          [_minor_to_major(a, lay) for a, lay in zip(ctx.avals_out, result_layouts)])
    return mlir.custom_call(call_target_name, operands=operands, **kwargs)
  return build


def ffi_lowering(call_target_name: str, *, operand_layouts=None, result_layouts=None,
                 backend_config=None, skip_ffi_layout_processing: bool = False,
                 **lowering_args):
  """A lowering rule (`(ctx, *operands, **params) -> results`) calling the FFI target
  `call_target_name` with the params as attributes; see `build_ffi_lowering_function`."""
  build = build_ffi_lowering_function(
      call_target_name, operand_layouts=operand_layouts, result_layouts=result_layouts,
      backend_config=backend_config, skip_ffi_layout_processing=skip_ffi_layout_processing,
      **lowering_args)

  def rule(ctx, *operands, **params):
    return list(build(ctx, *operands, **params).results)
  return rule


# ---- the ffi_call primitive -------------------------------------------------------------------
class _HashableArray:
  """A NumPy array attribute as a hashable (by value) param."""
  __slots__ = ("val",)

  def __init__(self, val):
    self.val = np.array(val, copy=True)

  def __hash__(self):
    return hash((self.val.shape, self.val.dtype, self.val.tobytes()))

  def __eq__(self, other):
    return (type(other) is _HashableArray and self.val.shape == other.val.shape
            and self.val.dtype == other.val.dtype and np.array_equal(self.val, other.val))

  def __repr__(self):
    return repr(self.val)

  def _arrax_attribute_value(self):
    return self.val


class _FrozenDict:
  """A dict attribute as a hashable param."""
  __slots__ = ("_d", "_items")

  def __init__(self, d):
    self._d = dict(d)
    self._items = tuple(sorted(self._d.items()))

  def __hash__(self):
    return hash(self._items)

  def __eq__(self, other):
    return type(other) is _FrozenDict and self._items == other._items

  def __repr__(self):
    return f"FrozenDict({self._d!r})"

  def _arrax_attribute_value(self):
    return self._d


def _hashable_attributes(kwargs):
  out = []
  for k, v in sorted(kwargs.items()):
    if isinstance(v, np.ndarray):
      v = _HashableArray(v)
    elif isinstance(v, dict):
      v = _FrozenDict(v)
    else:
      try:
        hash(v)
      except TypeError as e:
        raise TypeError(f"Non-hashable keyword argument to ffi_call {k}: {v}") from e
    out.append((k, v))
  return tuple(out)


def _unwrap_attribute(v):
  return v._arrax_attribute_value() if isinstance(v, (_HashableArray, _FrozenDict)) else v


ffi_call_p = core.Primitive("ffi_call")
ffi_call_p.multiple_results = True


@ffi_call_p.def_abstract_eval
def _ffi_call_abstract_eval(*avals_in, result_avals, **params):
  return list(result_avals)


def _ffi_not_differentiable(*args, target_name, **params):
  raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. You can use "
                   "`jax.custom_jvp` or `jax.custom_jvp` to add support.")


ffi_call_p.def_jvp(lambda primals, tangents, **params: _ffi_not_differentiable(**params))
ffi_call_p.def_transpose(lambda cts, *args, **params: _ffi_not_differentiable(**params))
# has_side_effect=True: never dropped, even with unused results (XLA keeps it too).
ffi_call_p.effectful = lambda params: params["has_side_effect"]


@ffi_call_p.def_lowering
def _ffi_call_lowering(ctx, *operands, target_name, has_side_effect, input_layouts,
                       output_layouts, input_output_aliases, custom_call_api_version,
                       legacy_backend_config, attributes, **params):
  rule = ffi_lowering(target_name, has_side_effect=has_side_effect,
                      operand_layouts=input_layouts, result_layouts=output_layouts,
                      operand_output_aliases=dict(input_output_aliases),
                      api_version=custom_call_api_version, backend_config=legacy_backend_config)
  return rule(ctx, *operands, **{k: _unwrap_attribute(v) for k, v in attributes})


def _shift_layouts(layouts):
  """Layouts (minor-to-major) of the same operands with a new leading (major-most) axis."""
  return tuple(None if lay is None else tuple(n + 1 for n in lay) + (0,) for lay in layouts)


@ffi_call_p.def_batch
def _ffi_call_batch(args, dims, *, vmap_method, **params):
  if vmap_method in ("expand_dims", "broadcast_all", "legacy_vectorized"):
    # The results and the operands called with a batch axis gain it as their major-most one.
    params["output_layouts"] = _shift_layouts(params["output_layouts"])
    params["input_layouts"] = tuple(
        lay if d is None and vmap_method == "legacy_vectorized" else _shift_layouts([lay])[0]
        for lay, d in zip(params["input_layouts"], dims))
  return batch_by_vmap_method(ffi_call_p, args, dims, vmap_method=vmap_method, **params)


def _result_avals(results):
  avals = []
  for i, r in enumerate(results):
    if r is core.abstract_token:
      avals.append(r)
      continue
    if not hasattr(r, "shape") or not hasattr(r, "dtype"):
      raise ValueError("All elements of result_shape_dtypes must have 'shape' and 'dtype' "
                       f"attributes. Got {r} at position {i}.")
    avals.append(core.ShapedArray(tuple(r.shape), np.dtype(r.dtype)))
  return tuple(avals)


def _same_type(a, b):
  if a is core.abstract_token and b is core.abstract_token:
    return True
  return (getattr(a, "shape", ()) == getattr(b, "shape", ())
          and getattr(a, "dtype", ()) == getattr(b, "dtype", ()))


def _checked_aliases(input_output_aliases, n_args, in_avals, result_avals, in_lay=None,
                     out_lay=None):
  """`input_output_aliases` ({input index: output index}) as sorted pairs, each checked: an
  input among the first `n_args`, an output, and the same type (and layout, when given)."""
  aliases = []
  for i, o in sorted((input_output_aliases or {}).items()):
    i, o = int(i), int(o)
    where = f"input_output_aliases contains the mapping '{i}:{o}'"
    if i >= n_args:
      raise ValueError(f"{where} with input index {i} outside the range [0, {n_args}).")
    if o >= len(result_avals):
      raise ValueError(f"{where} with output index {o} outside the range [0, "
                       f"{len(result_avals)}).")
    if not _same_type(in_avals[i], result_avals[o]):
      raise ValueError(f"{where} referring to an input with abstract value {in_avals[i]} "
                       f"and an output with a different abstract value {result_avals[o]}.")
    if in_lay is not None and in_lay[i] != out_lay[o]:
      raise ValueError(f"{where} referring to an input with layout {in_lay[i]} and an "
                       f"output with a different layout {out_lay[o]}.")
    aliases.append((i, o))
  return tuple(aliases)


def _layouts_for(avals, layouts, what, of):
  """Minor-to-major layouts of `avals`: the default (row-major) ones, or the user's checked."""
  if layouts is None:
    return tuple(_minor_to_major(a) for a in avals)
  if len(layouts) != len(avals):
    raise ValueError(f"The number of {what} ({len(avals)}) must equal the number of {of} "
                     f"({len(layouts)}).")
  return _static_layouts(avals, layouts)


def _static_layouts(avals, layouts):
  """Minor-to-major layouts of `avals` from the user's major-to-minor ones."""
  return tuple(_minor_to_major(a, lay if lay is None or isinstance(lay, Layout) else lay[::-1])
               for a, lay in zip(avals, layouts))


_VMAP_METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized", None]


def ffi_call(target_name: str, result_shape_dtypes, *, has_side_effect: bool = False,
             vmap_method: str | None = None, input_layouts=None, output_layouts=None,
             input_output_aliases: dict[int, int] | None = None,
             custom_call_api_version: int = 4, legacy_backend_config: str | None = None):
  """A function calling the registered FFI target `target_name` on its positional array
  arguments, with its keyword arguments as the handler's attributes.

  `result_shape_dtypes`: one ShapeDtypeStruct-like object (one result) or a sequence of them.
  Layouts are major-to-minor per operand/result (None: row-major); `input_output_aliases`
  maps input indices to the outputs that reuse their buffers; `vmap_method` says how vmap
  calls it ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all").
  The call cannot be differentiated (use custom_jvp/custom_vjp).

  Example:
    >>> f = jax.ffi.ffi_call("scale", jax.ShapeDtypeStruct(x.shape, x.dtype))
    >>> y = f(x, factor=np.float32(2))
  """
  if vmap_method not in _VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {_VMAP_METHODS}, but "
                     f"got: {vmap_method}")
  multiple = isinstance(result_shape_dtypes, Sequence)
  result_avals = _result_avals(result_shape_dtypes if multiple else [result_shape_dtypes])
  out_layouts = output_layouts if multiple else (output_layouts,)
  if custom_call_api_version >= 4 and legacy_backend_config is not None:
    raise ValueError("The use of the legacy_backend_config parameter requires "
                     f"custom_call_api_version < 4; got {custom_call_api_version}.")

  def call(*args, **kwargs):
    in_avals = [core.get_aval(x) for x in args]
    in_lay = _layouts_for(in_avals, input_layouts, "input arguments", "input layouts")
    out_lay = _layouts_for(result_avals, out_layouts, "outputs", "output layouts")
    aliases = _checked_aliases(input_output_aliases, len(args), in_avals, result_avals,
                               in_lay, out_lay)
    results = ffi_call_p.bind(
        *args, result_avals=result_avals, vmap_method=vmap_method, target_name=target_name,
        has_side_effect=has_side_effect, input_layouts=in_lay, output_layouts=out_lay,
        input_output_aliases=aliases, custom_call_api_version=custom_call_api_version,
        legacy_backend_config=legacy_backend_config, attributes=_hashable_attributes(kwargs))
    if multiple:
      return tuple(results) if isinstance(result_shape_dtypes, tuple) else results
    return results[0]
  return call
