"""jax.experimental.pallas.triton in interpret mode: masked `load`/`store` (a masked-off load
gives `other`, or what the ref holds without it; a masked-off store leaves the ref as it
was), the atomics interpret mode can run (`atomic_add/max/min` on slices, `atomic_cas` on
scalars; the others raise NotImplementedError, as JAX's discharge does), `max_contiguous` (a
hint), Triton's `CompilerParams`, and the GPU-only `approx_tanh`, `elementwise_inline_asm`,
`debug_barrier` (which fail to lower on CPU, as in JAX)."""
from __future__ import annotations

import dataclasses
import enum

import numpy as np

from arrax._src import batching, core, dtypes
from arrax._src.lax import broadcasting, elementwise as lax, shape_ops
from arrax._src.numpy import creation, lax_numpy, ufuncs, util
from arrax._src.pallas import primitives
from arrax._src.state import primitives as state

@dataclasses.dataclass(frozen=True)
class CompilerParams:
  """Triton compiler parameters: warps per kernel instance and software pipelining stages
  (interpret mode ignores them)."""
  num_warps: int | None = None
  num_stages: int | None = None


def _view(ref, idx):
  return ref if idx is None else ref.at[idx]


def _check_mask(mask, shape):
  if mask is None:
    return None
  mask = creation.asarray(mask)
  try:
    util.broadcast_shapes(tuple(shape), tuple(mask.shape))
  except ValueError:
    raise ValueError(f"Cannot broadcast mask shape {tuple(mask.shape)} to load shape "
                     f"{tuple(shape)}") from None
  return mask


def load(ref, *, mask=None, other=None, cache_modifier: str | None = None,
         eviction_policy: str | None = None, volatile: bool = False):
  """`ref[...]`, except that where `mask` is False the result is `other` (when given;
  otherwise whatever the ref holds there)."""
  window = _padded_window(ref)
  if window is not None:
    padded, starts, sizes, scalar_dims = window
    out = broadcasting.squeeze(shape_ops.dynamic_slice(padded, starts, sizes), scalar_dims)
  else:
    out = ref[...]
  mask = _check_mask(mask, out.shape)
  if mask is not None and other is not None:
    out = lax_numpy.where(mask, out, other)
  return out


def _padded_window(view):
  """For a view made of slices and scalar indices only, some slice possibly running past the
  ref's end (a traced start, or a static one overrunning): (the whole ref padded at the end
  of every dimension by its slice size, starts, sizes, the scalar-indexed dims), so that
  the overrun reads padding (and writes to it are dropped) instead of XLA shifting the
  start back, as JAX's interpret mode does. Else None."""
  if not isinstance(view, state.RefView) or view.tree is None:
    return None
  shape = tuple(state._ref_aval(view.ref).shape)
  dyn = iter(view.dyn)
  starts, sizes, scalar_dims, overrun = [], [], [], False
  for k, (e, d) in enumerate(zip(view.tree, shape)):
    if e[0] == "s":
      _, start, size, stride = e
      if stride != 1:
        raise NotImplementedError("Unimplemented stride support.")
      if start is None:
        start, overrun = next(dyn), True
      elif start + size > d:
        overrun = True
      starts.append(start)
      sizes.append(size)
    else:
      i = e[1]
      if i is None:
        i = next(dyn)
        if core.get_aval(i).shape:
          return None   # (an array index: a gather, its out-of-bounds indices are clamped)
      starts.append(i)
      sizes.append(1)
      scalar_dims.append(k)
  if not overrun:
    return None
  whole = view.ref[...]
  fill = primitives.uninitialized_value((), whole.dtype)
  padded = shape_ops.pad(whole, fill, [(0, n, 0) for n in sizes])
  starts = [lax.convert_element_type(creation.asarray(s), np.int32) for s in starts]
  return padded, starts, tuple(sizes), tuple(scalar_dims)


def _check_value(ref, val):
  """`val` as an array of the ref's shape and dtype (else JAX's ValueError)."""
  val = creation.asarray(val)
  shape, dtype = tuple(ref.shape), np.dtype(ref.dtype)
  if tuple(val.shape) != shape:
    raise ValueError(f"Invalid shape for `swap`. Ref shape: {shape}. Value shape: "
                     f"{tuple(val.shape)}. ")
  if np.dtype(val.dtype) != dtype:
    raise ValueError(f"Invalid dtype for `swap`. Ref dtype: {dtype}. Value dtype: "
                     f"{np.dtype(val.dtype)}. ")
  return val


def store(ref, val, *, mask=None, eviction_policy: str | None = None) -> None:
  """`ref[...] = val` where `mask` is True (elsewhere the ref keeps its values); `val` must
  have the ref's shape and dtype."""
  val = _check_value(ref, val)
  window = _padded_window(ref)
  if window is not None:
    padded, starts, sizes, scalar_dims = window
    if mask is not None:
      old = broadcasting.squeeze(shape_ops.dynamic_slice(padded, starts, sizes), scalar_dims)
      val = lax_numpy.where(mask, val, old)
    val = broadcasting.expand_dims(val, scalar_dims)
    padded = shape_ops.dynamic_update_slice(padded, val, starts)
    shape = tuple(state._ref_aval(ref.ref).shape)
    ref.ref[...] = shape_ops.slice(padded, (0,) * len(shape), shape)
    return
  if mask is not None:
    val = lax_numpy.where(mask, val, ref[...])
  ref[...] = val


# ---- atomics --------------------------------------------------------------------------------
class AtomicOpType(enum.Enum):
  XCHG = "xchg"
  ADD = "add"
  MAX = "max"
  MIN = "min"
  AND = "and"
  OR = "or"
  XOR = "xor"


_MONOIDS = {AtomicOpType.ADD: ufuncs.add, AtomicOpType.MAX: ufuncs.maximum,
            AtomicOpType.MIN: ufuncs.minimum}
_NO_ATOMICS = (np.dtype(bool), np.dtype(np.int8), np.dtype(np.int16), np.dtype(dtypes.bfloat16))


def _atomic_rmw(ref, idx, val, mask, op: AtomicOpType):
  dtype = np.dtype(ref.dtype)
  if dtype == np.dtype(np.float16) and op != AtomicOpType.ADD:
    raise ValueError(f"`atomic_{op.value}` does not support f16.")
  if dtype in _NO_ATOMICS:
    raise ValueError(f"`atomic_{op.value}` does not support {dtype}.")
  view = _view(ref, idx)
  val = _check_value(view, val)
  if mask is not None:
    raise NotImplementedError()
  if op not in _MONOIDS:
    raise NotImplementedError(str(op))
  old = view[...]
  view[...] = _MONOIDS[op](old, val)
  return old


def atomic_xchg(x_ref_or_view, idx, val, *, mask=None):
  """Swap `val` into `x_ref_or_view[idx]`, returning the old value (not in interpret mode)."""
  return _atomic_rmw(x_ref_or_view, idx, val, mask, AtomicOpType.XCHG)


def atomic_add(x_ref_or_view, idx, val, *, mask=None):
  """`x_ref_or_view[idx] += val` atomically; returns the value before."""
  return _atomic_rmw(x_ref_or_view, idx, val, mask, AtomicOpType.ADD)


def atomic_max(x_ref_or_view, idx, val, *, mask=None):
  """`x_ref_or_view[idx] = max(x_ref_or_view[idx], val)` atomically; returns the value
  before."""
  return _atomic_rmw(x_ref_or_view, idx, val, mask, AtomicOpType.MAX)


def atomic_min(x_ref_or_view, idx, val, *, mask=None):
  """`x_ref_or_view[idx] = min(x_ref_or_view[idx], val)` atomically; returns the value
  before."""
  return _atomic_rmw(x_ref_or_view, idx, val, mask, AtomicOpType.MIN)


def atomic_and(x_ref_or_view, idx, val, *, mask=None):
  """`x_ref_or_view[idx] &= val` atomically (not in interpret mode)."""
  return _atomic_rmw(x_ref_or_view, idx, val, mask, AtomicOpType.AND)


def atomic_or(x_ref_or_view, idx, val, *, mask=None):
  """`x_ref_or_view[idx] |= val` atomically (not in interpret mode)."""
  return _atomic_rmw(x_ref_or_view, idx, val, mask, AtomicOpType.OR)


def atomic_xor(x_ref_or_view, idx, val, *, mask=None):
  """`x_ref_or_view[idx] ^= val` atomically (not in interpret mode)."""
  return _atomic_rmw(x_ref_or_view, idx, val, mask, AtomicOpType.XOR)


def atomic_cas(ref, cmp, val):
  """Compare-and-swap on a scalar ref: store `val` if the ref holds `cmp`; returns the value
  before."""
  cmp, val = creation.asarray(cmp), creation.asarray(val)
  if cmp.dtype != val.dtype or cmp.shape != val.shape:
    raise ValueError("cmp and val must have identical dtypes and shapes")
  if ref.shape:
    raise ValueError("ref must be scalar.")
  if cmp.shape:
    raise ValueError("cmp must be scalar.")
  if val.shape:
    raise ValueError("val must be scalar.")
  old = ref[...]
  ref[...] = lax_numpy.where(old == cmp, val, old).astype(ref.dtype)
  return old


# ---- hints and GPU-only operations ----------------------------------------------------------
max_contiguous_p = core.Primitive("max_contiguous")
max_contiguous_p.def_abstract_eval(lambda aval, *, values: aval)
max_contiguous_p.def_lowering(lambda ctx, x, *, values: [x])
batching.defvectorized(max_contiguous_p)


def max_contiguous(x, values):
  """A compiler hint that the first `values` elements of `x` are contiguous (returns `x`)."""
  values = tuple(values) if isinstance(values, (list, tuple)) else (values,)
  return max_contiguous_p.bind(x, values=values)


def _no_cpu_rule(name):
  raise NotImplementedError(f"MLIR translation rule for primitive '{name}' not found for "
                            "platform cpu")


def elementwise_inline_asm(asm: str, *, args, constraints: str, pack: int,
                           result_shape_dtypes):
  """Inline PTX applied elementwise (needs a GPU; interpret mode on CPU cannot run it)."""
  _no_cpu_rule("elementwise_inline_asm_p")


def approx_tanh(x):
  """An approximate tanh through PTX's `tanh.approx` (float16/bfloat16/float32/float64;
  needs a GPU)."""
  if np.dtype(x.dtype) not in (np.dtype(np.float16), np.dtype(dtypes.bfloat16),
                               np.dtype(np.float32), np.dtype(np.float64)):
    raise TypeError(f"approx_tanh does not accept {np.dtype(x.dtype)} arrays")
  return elementwise_inline_asm("tanh.approx", args=[x], constraints="", pack=1,
                                result_shape_dtypes=[])


def debug_barrier() -> None:
  """Synchronize all kernel instances of the grid (needs a GPU)."""
  _no_cpu_rule("debug_barrier_p")
