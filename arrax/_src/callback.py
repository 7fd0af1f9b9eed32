"""Calling Python from compiled code: `pure_callback` and `io_callback`.

Both primitives lower to jaxlib's statically registered FFI custom call
`xla_ffi_python_cpu_callback`, whose `index` attribute picks the Python function from the
executable's host-callback list. Eagerly they run through the same one-primitive executable, so
a failing callback raises jaxlib's JaxRuntimeError in both cases, as JAX does.

XLA does not check what the Python function returns, so the host side checks the number,
shapes and dtypes of the results against the declared ones before handing them back.
"""
from __future__ import annotations

import functools
import logging

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import backend, batching, core, dtypes, mlir
from arrax._src.array import device_put_value
from arrax._src.tree_util import tree_flatten, tree_leaves, tree_unflatten
from arrax._src.lax import broadcasting
from arrax._src.lax.control_flow import loops

logger = logging.getLogger(__name__)

_VMAP_METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized", None]


class _FlatCallback:
  """The user's function and the pytree structure of its (args, kwargs): callable with flat
  arguments, returning flat results. Equal for the same function and structure, so that
  executables are shared."""
  __slots__ = ("callback_func", "in_tree", "__weakref__")

  def __init__(self, callback_func, in_tree):
    self.callback_func = callback_func
    self.in_tree = in_tree

  def __call__(self, *flat_args):
    args, kwargs = tree_unflatten(self.in_tree, flat_args)
    return tree_leaves(self.callback_func(*args, **kwargs))

  def __eq__(self, other):
    return (type(other) is _FlatCallback and self.callback_func == other.callback_func
            and self.in_tree == other.in_tree)

  def __hash__(self):
    return hash((self.callback_func, self.in_tree))

  def __repr__(self):
    return f"_FlatCallback(callback_func={self.callback_func!r}, in_tree={self.in_tree!r})"


def _canonical_result(x):
  """A callback result as the NumPy array XLA receives (64-bit types narrowed without x64)."""
  x = np.asarray(x)
  dt = dtypes.canonicalize_dtype(x.dtype) if x.dtype != dtypes.float0 else x.dtype
  return x if dt == x.dtype else x.astype(dt)


def checked_results(outs, result_avals) -> tuple:
  """A callback's results as the NumPy arrays XLA receives, checked against `result_avals`
  (RuntimeError, with JAX's messages, for a wrong number, shape or dtype)."""
  if len(outs) != len(result_avals):
    raise RuntimeError("Mismatched number of outputs from callback. "
                       f"Expected: {len(result_avals)}, Actual: {len(outs)}")
  outs = tuple(_canonical_result(o) for o in outs)
  for i, (o, aval) in enumerate(zip(outs, result_avals)):
    if o.shape != aval.shape:
      raise RuntimeError(f"Incorrect output shape for return value #{i}: "
                         f"Expected: {aval.shape}, Actual: {o.shape}")
    if o.dtype != aval.dtype:
      raise RuntimeError(f"Incorrect output dtype for return value #{i}: "
                         f"Expected: {aval.dtype}, Actual: {o.dtype}")
  return outs


def _host_function(callback, result_avals, what):
  """The function jaxlib calls with NumPy operands: hand arrax Arrays (on the CPU) to the
  user's callback and check what comes back against `result_avals`."""
  def host_fn(*arrays):
    device = backend.default_device()
    args = [device_put_value(a, device) for a in arrays]
    try:
      outs = callback(*args)
    except BaseException:
      logger.exception("arrax.%s failed", what)
      raise
    return checked_results(outs, result_avals)
  return host_fn


def _layout(aval):
  ndim = 0 if aval is core.abstract_token else len(aval.shape)
  return ir.DenseIntElementsAttr.get(np.arange(ndim - 1, -1, -1, dtype=np.int64),
                                     type=ir.IndexType.get())


def emit_python_callback(ctx, host_fn, args, *, ordered=False):
  """A custom call handing `args` to `host_fn` on the host; returns its results' ir.Values.

  An `ordered` call (every effectful callback: io_callback, debug callbacks) is a side effect
  and also takes and gives the block's ordered-effects token, so that XLA runs such callbacks
  in program order; otherwise (pure_callback) XLA may drop or repeat it.
  """
  mctx = ctx.module_context
  token = mlir.current_ordered_token(mctx) if ordered else None
  results, token = emit_host_call(mctx, host_fn, token, args, ctx.avals_in, ctx.avals_out,
                                  has_side_effect=ordered)
  if ordered:
    mctx.ordered_token = token
  return results


def emit_host_call(mctx, host_fn, token, operands, avals_in, avals_out, *, has_side_effect):
  """The custom call running `host_fn(*numpy operands) -> results` on the host: (result
  ir.Values, the token out). With a `token` (an ir.Value) the call also takes and gives it."""
  avals_in, avals_out, operands = list(avals_in), list(avals_out), list(operands)
  if token is not None:
    avals_in, avals_out = [core.abstract_token, *avals_in], [core.abstract_token, *avals_out]
    operands = [token, *operands]
    untokened = host_fn

    def host_fn(token, *arrays):
      return (None, *untokened(*arrays))

  mctx.host_callbacks.append(host_fn)
  op = hlo.CustomCallOp(
      [mlir.aval_to_ir_type(a) for a in avals_out], operands, "xla_ffi_python_cpu_callback",
      has_side_effect=has_side_effect,
      operand_layouts=ir.ArrayAttr.get([_layout(a) for a in avals_in]),
      result_layouts=ir.ArrayAttr.get([_layout(a) for a in avals_out]))
  op.attributes["mhlo.backend_config"] = ir.DictAttr.get({
      "index": ir.IntegerAttr.get(ir.IntegerType.get_unsigned(64),
                                  len(mctx.host_callbacks) - 1)})
  results = list(op.results)
  if token is not None:
    token, *results = results
  return results, token


def _result_avals(result_shape_dtypes):
  leaves, out_tree = tree_flatten(result_shape_dtypes)
  for x in leaves:
    dt = np.dtype(x.dtype)
    if dtypes.canonicalize_dtype(dt) != dt:
      raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                       "`jax_enable_x64` is disabled")
  return tuple(core.ShapedArray(x.shape, x.dtype) for x in leaves), out_tree


def _callback_abstract_eval(*avals, result_avals, **params):
  return list(result_avals)


def _callback_lowering(what, ordered):
  """The lowering rule of `what` (pure_callback / io_callback)."""
  def rule(ctx, *args, callback, result_avals, **params):
    host_fn = _host_function(callback, result_avals, what)
    return emit_python_callback(ctx, host_fn, args, ordered=ordered)
  return rule


# ---- pure_callback ----------------------------------------------------------------------------
pure_callback_p = core.Primitive("pure_callback")
pure_callback_p.multiple_results = True
pure_callback_p.def_abstract_eval(_callback_abstract_eval)
pure_callback_p.def_lowering(_callback_lowering("pure_callback", ordered=False))


@pure_callback_p.def_jvp
def _pure_callback_jvp(primals, tangents, **params):
  raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                   "callbacks while taking gradients.")


@pure_callback_p.def_transpose
def _pure_callback_transpose(ct, *args, **params):
  raise ValueError("Pure callbacks do not support transpose. Please use `jax.custom_vjp` to "
                   "use callbacks while taking gradients.")


def _sequential_map(prim, args, dims, unroll, **params):
  """Call `prim` once per batch element, in order, in a scan over the batched operands."""
  is_batched = [d is not None for d in dims]
  moved = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
  fixed = [x for x, b in zip(moved, is_batched) if not b]
  mapped = [x for x, b in zip(moved, is_batched) if b]

  def body(carry, xs):
    it_fixed, it_xs = iter(fixed), iter(xs)
    merged = [next(it_xs) if b else next(it_fixed) for b in is_batched]
    return carry, prim.bind(*merged, **params)

  _, outs = loops.scan(body, (), mapped, unroll=unroll)
  return list(outs)


def batch_by_vmap_method(prim, args, dims, *, vmap_method, result_avals, **params):
  """The batching rule of host-call primitives (pure_callback, ffi_call, buffer_callback) by
  their `vmap_method`: a loop ("sequential", "sequential_unrolled"), or one call on operands
  moved to a leading batch axis, the unbatched ones broadcast to size 1 ("expand_dims"), to the
  batch size ("broadcast_all") or left as they are ("legacy_vectorized")."""
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  if vmap_method in ("sequential", "sequential_unrolled"):
    outs = _sequential_map(prim, args, dims, vmap_method == "sequential_unrolled",
                           vmap_method=vmap_method, result_avals=result_avals, **params)
  elif vmap_method in ("expand_dims", "broadcast_all", "legacy_vectorized"):
    n = size if vmap_method == "broadcast_all" else 1
    moved = [batching.moveaxis(x, d, 0) if d is not None
             else (broadcasting.broadcast(x, (n,)) if vmap_method != "legacy_vectorized" else x)
             for x, d in zip(args, dims)]
    outs = prim.bind(*moved, vmap_method=vmap_method,
                     result_avals=tuple(core.unmapped_aval(size, 0, a) for a in result_avals),
                     **params)
  else:
    raise NotImplementedError(
        f"vmap is only supported for the {prim.name} primitive when vmap_method is one of "
        "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
        f"'legacy_vectorized'. Got {vmap_method=}.")
  return list(outs), [0] * len(outs)


pure_callback_p.def_batch(functools.partial(batch_by_vmap_method, pure_callback_p))


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  **kwargs):
  """Call the side-effect-free Python function `callback(*args, **kwargs)` on the host, also
  under jit, vmap and control flow.

  `result_shape_dtypes` is a pytree of objects with `shape` and `dtype` (ShapeDtypeStruct)
  describing what `callback` returns. The call may be dropped when its results are unused, or
  repeated. Under vmap, `vmap_method` says how: "sequential" (a loop, once per element),
  "sequential_unrolled", "expand_dims" (one call; unbatched operands get a leading axis of
  size 1), "broadcast_all" (one call with every operand batched); None raises.

  Example:
    >>> jax.pure_callback(np.sin, jax.ShapeDtypeStruct((), jnp.float32), 1.)
    Array(0.84147096, dtype=float32)
  """
  if vmap_method not in _VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {_VMAP_METHODS}, but "
                     f"got: {vmap_method}")
  flat_args, in_tree = tree_flatten((args, kwargs))
  result_avals, out_tree = _result_avals(result_shape_dtypes)
  outs = pure_callback_p.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                              result_avals=result_avals, sharding=sharding,
                              vmap_method=vmap_method)
  return tree_unflatten(out_tree, outs)


# ---- io_callback ------------------------------------------------------------------------------
class IOEffect(core.Effect):
  """The effect of an unordered io_callback (printed `IO`)."""
  __str__ = __repr__ = lambda self: "IO"


class OrderedIOEffect(core.Effect):
  """The effect of an ordered io_callback (printed `OrderedIO`)."""
  __str__ = __repr__ = lambda self: "OrderedIO"


_io_effect, _ordered_io_effect = IOEffect(), OrderedIOEffect()

io_callback_p = core.Primitive("io_callback")
io_callback_p.effects_of = lambda params: {_ordered_io_effect if params["ordered"]
                                           else _io_effect}
io_callback_p.multiple_results = True
io_callback_p.effectful = True    # never dropped, hoisted or merged, even when its results are unused
# Unordered io_callbacks are chained too: JAX leaves their order to XLA, which in practice keeps
# program order; chaining makes that certain.
io_callback_p.ordered_effect = True
io_callback_p.def_abstract_eval(_callback_abstract_eval)
# Always chained, `ordered` or not (see above).
io_callback_p.def_lowering(_callback_lowering("io_callback", ordered=True))


@io_callback_p.def_jvp
def _io_callback_jvp(primals, tangents, **params):
  raise ValueError("IO callbacks do not support JVP.")


@io_callback_p.def_transpose
def _io_callback_transpose(ct, *args, **params):
  raise ValueError("IO callbacks do not support transpose.")


@io_callback_p.def_batch
def _io_callback_batch(args, dims, *, callback, result_avals, sharding, ordered):
  if ordered:
    raise ValueError("Cannot `vmap` ordered IO callback.")
  outs = _sequential_map(io_callback_p, args, dims, 1, callback=callback,
                         result_avals=result_avals, sharding=sharding, ordered=False)
  return outs, [0] * len(outs)


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False, **kwargs):
  """Call the Python function `callback(*args, **kwargs)`, which may have side effects, on the
  host, also under jit and control flow. It is never dropped, even when its results are unused;
  with `ordered=True` calls happen in program order (and cannot be vmapped).

  Example:
    >>> io_callback(lambda x: np.float32(x + 1), jax.ShapeDtypeStruct((), jnp.float32), 1.)
    Array(2., dtype=float32)
  """
  flat_args, in_tree = tree_flatten((args, kwargs))
  result_avals, out_tree = _result_avals(result_shape_dtypes)
  outs = io_callback_p.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                            result_avals=result_avals, sharding=sharding, ordered=bool(ordered))
  return tree_unflatten(out_tree, outs)
