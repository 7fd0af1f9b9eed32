"""The core: abstract values, primitives and bind, traces with a current-trace context, the jaxpr IR.

Tracing is "stackless": `bind` hands a primitive to the *current* trace. A trace treats its own
tracers as its inputs and every other value (concrete arrays, tracers of outer traces) as a
constant. Transformations nest by making their trace current for the duration of a call.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from typing import Any, Callable

import numpy as np

from arrax._src import dtypes
from arrax._src.config import trace_state
from arrax._src.errors import (ConcretizationTypeError, TracerArrayConversionError,
                               TracerBoolConversionError, TracerIntegerConversionError,
                               UnexpectedTracerError)


# ---- abstract values -------------------------------------------------------------------------
class ShapedArray:
  """The abstract value of an array: shape, dtype and whether its dtype is weak."""
  __slots__ = ("shape", "dtype", "weak_type", "_hash")
  array_abstraction_level = 1

  def __init__(self, shape, dtype, weak_type=False):
    self.shape = tuple(shape)
    self.dtype = np.dtype(dtype)
    self.weak_type = bool(weak_type)
    self._hash = None

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  def update(self, shape=None, dtype=None, weak_type=None):
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type)

  def strip_weak_type(self):
    return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False)

  def __eq__(self, other):
    return (type(other) is ShapedArray and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __hash__(self):
    if self._hash is None:
      self._hash = hash((self.shape, self.dtype, self.weak_type))
    return self._hash

  def str_short(self, short_dtypes=False):
    name = dtypes.short_dtype_name(self.dtype) if short_dtypes else self.dtype.name
    return f"{name}[{','.join(str(d) for d in self.shape)}]"

  def __str__(self):
    return ("~" if self.weak_type else "") + self.str_short()

  def __repr__(self):
    return f"ShapedArray({self.str_short()}{', weak_type=True' if self.weak_type else ''})"


def get_aval(x) -> ShapedArray:
  """The abstract value of an arrax Array, a tracer, a NumPy array or a Python scalar."""
  aval = getattr(x, "aval", None)
  if aval is not None:
    return aval
  if type(x) in dtypes.python_scalar_dtypes:
    dtypes.check_python_int(x)
    dt, weak = dtypes.dtype_and_weak_type(x)
    return ShapedArray((), dt, weak)
  if isinstance(x, (np.ndarray, np.generic)):
    return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype), False)
  raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type")


def valid_jaxtype(x) -> bool:
  try:
    get_aval(x)
  except TypeError:
    return False
  return True


# ---- primitives --------------------------------------------------------------------------------
class Primitive:
  """An operation the system knows: `bind` applies it under the current trace.

  Its rules are attributes set next to its definition: `abstract_eval(*avals, **params)`,
  `lowering(ctx, *operands, **params)`, and (added by later transformations' modules'
  users) `jvp`, `transpose`, `batch`.
  """
  multiple_results = False
  # An axis-aware batching rule `(axis_data, args, dims, **params) -> (out, out_dim)` that
  # replaces `batch` (collectives, primitives holding jaxprs); see batching.py.
  batch_collective: Callable | None = None

  def __init__(self, name: str):
    self.name = name
    self.abstract_eval: Callable | None = None
    self.lowering: Callable | None = None
    self.jvp: Callable | None = None
    self.transpose: Callable | None = None
    self.batch: Callable | None = None
    self.pp_params: Callable | None = None   # optional filter of params for printing

  def __repr__(self):
    return self.name

  def bind(self, *args, **params):
    return current_trace().process_primitive(self, args, params)

  def impl(self, *args, **params):
    from arrax._src import dispatch
    return dispatch.apply_primitive(self, args, params)

  # Decorator helpers so rules sit right under the primitive in their module.
  def def_abstract_eval(self, fn):
    self.abstract_eval = fn
    return fn

  def def_lowering(self, fn):
    self.lowering = fn
    return fn


# ---- traces ---------------------------------------------------------------------------------
class Trace:
  """A trace interprets primitives applied to its tracers."""

  def __init__(self):
    self.valid = True

  def process_primitive(self, prim, args, params):
    raise NotImplementedError

  def invalidate(self):
    self.valid = False


class EvalTrace(Trace):
  """The top-level trace: apply primitives to concrete values now."""

  def process_primitive(self, prim, args, params):
    for a in args:
      if isinstance(a, Tracer):
        _raise_escaped(a, prim)
    return prim.impl(*args, **params)

  def __repr__(self):
    return "EvalTrace"


eval_trace = EvalTrace()


class _TraceContext(threading.local):
  def __init__(self):
    self.trace = eval_trace


trace_ctx = _TraceContext()


def current_trace() -> Trace:
  return trace_ctx.trace


@contextlib.contextmanager
def set_current_trace(trace: Trace):
  prev = trace_ctx.trace
  trace_ctx.trace = trace
  try:
    yield
  finally:
    trace_ctx.trace = prev


def _raise_escaped(tracer, prim=None):
  where = f" to primitive {prim.name}" if prim is not None else ""
  raise UnexpectedTracerError(
      f"Encountered an unexpected tracer{where}. A function transformed by JAX had a side "
      "effect that allowed one of its intermediate values to escape the transformation "
      f"(for example by storing it in a global or a closure). The escaped value: {tracer!r}. "
      "Return the value from the transformed function instead of leaking it.")


class Tracer:
  """A stand-in for an array while a function is traced. Operators come from arrax.numpy."""
  __array_priority__ = 1000
  __slots__ = ("_trace", "__weakref__")

  aval: ShapedArray

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: self.aval.ndim)
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)

  def __len__(self):
    if not self.aval.shape:
      raise TypeError("len() of unsized object")
    return self.aval.shape[0]

  def __iter__(self):
    if not self.aval.shape:
      raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.aval.shape[0]))

  def _short_repr(self):
    return f"{type(self).__name__}<{self.aval}>"

  def __repr__(self):
    return self._short_repr()

  def __bool__(self):
    raise TracerBoolConversionError(self)

  def __int__(self):
    raise TracerIntegerConversionError(self, "__int__")

  def __index__(self):
    raise TracerIntegerConversionError(self, "__index__")

  def __float__(self):
    raise ConcretizationTypeError(self, "The problem arose with the `float` function.")

  def __complex__(self):
    raise ConcretizationTypeError(self, "The problem arose with the `complex` function.")

  def __array__(self, *args, **kwargs):
    raise TracerArrayConversionError(self)

  def __hash__(self):
    raise TypeError(f"unhashable type: {type(self).__name__}")

  def __setitem__(self, idx, value):
    raise TypeError(
        f"'{type(self).__name__}' object does not support item assignment. JAX arrays are "
        "immutable. Instead of ``x[idx] = y``, use ``x = x.at[idx].set(y)`` or another .at[] "
        "method: https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")

  def item(self, *args):
    raise ConcretizationTypeError(self, "The problem arose with the `item` method.")

  def tolist(self):
    raise ConcretizationTypeError(self, "The problem arose with the `tolist` method.")


def is_concrete(x) -> bool:
  return not isinstance(x, Tracer)


# ---- the jaxpr IR -----------------------------------------------------------------------------
_var_ids = itertools.count()


class Var:
  """A variable of a jaxpr, typed by an abstract value."""
  __slots__ = ("aval", "id")

  def __init__(self, aval: ShapedArray):
    self.aval = aval
    self.id = next(_var_ids)

  def __repr__(self):
    return f"Var(id={self.id}):{self.aval.str_short(True)}"


class DropVar(Var):
  """An unused output, printed as `_`."""
  __slots__ = ()

  def __repr__(self):
    return "_"


class Literal:
  """A scalar constant inlined in a jaxpr (printed as `2.0:f32[]`)."""
  __slots__ = ("val", "aval")

  def __init__(self, val, aval: ShapedArray):
    self.val = val
    self.aval = aval

  def __repr__(self):
    return f"Literal({self.val})"


class JaxprEqn:
  __slots__ = ("invars", "outvars", "primitive", "params", "source_info")

  def __init__(self, invars, outvars, primitive, params, source_info=None):
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.primitive = primitive
    self.params = params
    self.source_info = source_info

  def __repr__(self):
    from arrax._src.jaxpr_printer import pp_eqn
    return pp_eqn(self)


class Jaxpr:
  """A typed program: constvars and invars in, equations, outvars out."""
  __slots__ = ("constvars", "invars", "outvars", "eqns", "debug_info")

  def __init__(self, constvars, invars, outvars, eqns, debug_info=None):
    self.constvars = list(constvars)
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.eqns = list(eqns)
    self.debug_info = debug_info

  @property
  def in_avals(self):
    return [v.aval for v in self.invars]

  @property
  def out_avals(self):
    return [v.aval for v in self.outvars]

  def __str__(self):
    from arrax._src.jaxpr_printer import pp_jaxpr
    return pp_jaxpr(self)

  __repr__ = __str__

  def pretty_print(self, **kwargs):
    return str(self)


class ClosedJaxpr:
  """A jaxpr together with the values of its constvars."""
  __slots__ = ("jaxpr", "consts", "__weakref__")

  def __init__(self, jaxpr: Jaxpr, consts):
    assert len(consts) == len(jaxpr.constvars)
    self.jaxpr = jaxpr
    self.consts = list(consts)

  in_avals = property(lambda self: self.jaxpr.in_avals)
  out_avals = property(lambda self: self.jaxpr.out_avals)
  eqns = property(lambda self: self.jaxpr.eqns)

  def __str__(self):
    return str(self.jaxpr)

  __repr__ = __str__

  def pretty_print(self, **kwargs):
    return str(self.jaxpr)


def eval_jaxpr(jaxpr: Jaxpr, consts, *args):
  """Run a jaxpr by binding each equation's primitive under the current trace."""
  env: dict[Var, Any] = {}

  def read(v):
    return v.val if isinstance(v, Literal) else env[v]

  def write(v, val):
    if not isinstance(v, DropVar):
      env[v] = val

  if len(args) != len(jaxpr.invars):
    raise TypeError(f"eval_jaxpr: expected {len(jaxpr.invars)} arguments, got {len(args)}")
  for v, val in zip(jaxpr.constvars, consts):
    write(v, val)
  for v, val in zip(jaxpr.invars, args):
    write(v, val)
  for eqn in jaxpr.eqns:
    ans = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
    if eqn.primitive.multiple_results:
      for v, val in zip(eqn.outvars, ans):
        write(v, val)
    else:
      write(eqn.outvars[0], ans)
  return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed_jaxpr: ClosedJaxpr):
  return lambda *args: eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)


def check_jaxpr(jaxpr: Jaxpr):
  """Type-check a jaxpr: every var defined once before use and every equation well typed."""
  defined = set()

  def use(v, where):
    if isinstance(v, Literal):
      return
    if v not in defined:
      raise TypeError(f"Variable {v} used before definition in {where}")

  for v in list(jaxpr.constvars) + list(jaxpr.invars):
    if v in defined:
      raise TypeError(f"Variable {v} bound twice")
    defined.add(v)
  for eqn in jaxpr.eqns:
    for v in eqn.invars:
      use(v, eqn.primitive.name)
    in_avals = [v.aval for v in eqn.invars]
    out = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
    outs = out if eqn.primitive.multiple_results else [out]
    for v, aval in zip(eqn.outvars, outs):
      if v.aval.strip_weak_type() != aval.strip_weak_type():
        raise TypeError(f"Equation {eqn.primitive.name} declares output {v.aval} but its rule "
                        f"gives {aval}")
      if not isinstance(v, DropVar):
        defined.add(v)
  for v in jaxpr.outvars:
    use(v, "outvars")


# ---- memoized derived jaxprs ----------------------------------------------------------------
_derived_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def memo_derived(jaxprs, key, build):
  """`build()`, memoized on the jaxprs it derives from (held weakly), the hashable `key` and the
  trace-affecting flags.

  Rules that rebuild a primitive's jaxprs (JVP, partial evaluation, transpose) then return the
  same jaxpr objects for the same inputs, so repeated eager calls reuse executables.
  """
  first, rest = jaxprs[0], tuple(jaxprs[1:])
  full_key = (tuple(id(j) for j in rest), key, trace_state())
  per = _derived_cache.get(first)
  if per is None:
    per = _derived_cache[first] = {}
  hit = per.get(full_key)
  if hit is not None and all(r() is j for r, j in zip(hit[0], rest)):
    return hit[1]
  result = build()
  per[full_key] = (tuple(weakref.ref(j) for j in rest), result)
  return result
