"""The remaining pieces of `jax.extend.core` and `jax.extend.backend` on arrax's internals.

- `CallPrimitive`: a JAX call primitive is bound with its function as a parameter,
  `p.bind(*args, subfuns=(wrapped_fun,), **params)`, and each trace processes the call (jaxprs
  get one equation with a `call_jaxpr`; impl, lowering and transpose rules are the user's).
  arrax's call equations are those of `call_p`/`closed_call_p` (`call.py`, with their own
  rules); a user's CallPrimitive's bind runs the function on the current trace instead: values
  are the same eagerly and under vmap, and jit and grad work without user rules, while jaxprs
  show the function's equations inline.
- the axis-environment queries read the named axes bound by vmap (and collectives' axes);
  `unsafe_am_i_under_a_vmap_DO_NOT_USE` looks for a batching trace below the current one.
- the backend cache helpers map onto arrax's cache registry.
"""
from __future__ import annotations

from collections.abc import Set
from typing import Any

import ml_dtypes
import numpy as np

from arrax._src import batching, core, dtypes

# ---- jax.extend.core ------------------------------------------------------------------------
Effects = Set[core.Effect]
no_effects: Effects = frozenset()

# The host types that are arrays: NumPy arrays and the scalar types of NumPy's and ml_dtypes'
# numeric dtypes (JAX's set, less its internal literal class).
_ML_DTYPE_NAMES = ("bfloat16", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
                   "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
                   "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "int1", "int2", "int4",
                   "uint1", "uint2", "uint4")
array_types: set[type] = (
    {np.ndarray, np.longlong}
    | {np.dtype(d).type for d in dtypes.supported_dtypes}
    | {getattr(ml_dtypes, n) for n in _ML_DTYPE_NAMES if hasattr(ml_dtypes, n)})


class TraceTag:
  """An identity-free tag of a transformation's trace (all tags compare equal, as in JAX)."""

  def __hash__(self):
    return hash(TraceTag)

  def __eq__(self, other):
    return isinstance(other, TraceTag)


def gensym(suffix: str = ""):
  """The constructor of fresh jaxpr variables: `gensym()(aval)` is a new Var."""
  del suffix
  return core.Var


def call_impl(f, *args, **params):
  """Run the wrapped function of a call primitive on `args` (the params describe the call)."""
  del params
  return f.call_wrapped(*args) if hasattr(f, "call_wrapped") else f(*args)


class CallPrimitive(core.Primitive):
  """A primitive calling the function given as `subfuns=(fun,)` on its arguments; arrax runs
  the function on the current trace (see the module docstring)."""
  multiple_results = True
  call_primitive = True

  def bind(self, *args, **params):
    params = dict(params)
    fun, = params.pop("subfuns")
    return list(call_impl(fun, *args, **params))


def nonempty_axis_env_DO_NOT_USE() -> bool:
  """Whether any named axis (vmap's axis_name, ...) is bound here."""
  return bool(batching.axis_env_key())


def unsafe_get_axis_names_DO_NOT_USE() -> list[Any]:
  """The named axes bound here, outermost first."""
  return [name for name, _ in batching.axis_env_key()]


def unsafe_am_i_under_a_vmap_DO_NOT_USE() -> bool:
  """Whether a vmap is tracing the code running now (at any depth of transformations)."""
  trace = core.trace_ctx.trace
  seen = 0
  while trace is not None and seen < 1000:
    if isinstance(trace, batching.BatchTrace):
      return True
    trace = getattr(trace, "parent", None)
    seen += 1
  return False


# ---- jax.extend.backend ---------------------------------------------------------------------
def clear_in_memory_compilation_cache() -> None:
  """Forget the compiled executables held in memory (arrax drops its traced jaxprs with them:
  they share one cache registry)."""
  core.clear_caches()


class _ClearableCache:
  __slots__ = ("cache", "for_what")

  def __init__(self, cache, for_what):
    self.cache, self.for_what = cache, for_what

  def clear(self):
    self.cache.cache_clear()


def register_backend_cache(cache: Any, for_what: str):
  """Have `clear_caches` also clear `cache` (an object with `cache_clear()`, such as an
  `functools.lru_cache` function); `for_what` names it."""
  core.register_cache(_ClearableCache(cache, for_what))
