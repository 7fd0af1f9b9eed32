"""The core: abstract values, primitives and bind, traces with a current-trace context, the jaxpr IR.

Tracing is "stackless": `bind` hands a primitive to the *current* trace. A trace treats its own
tracers as its inputs and every other value (concrete arrays, tracers of outer traces) as a
constant. Transformations nest by making their trace current for the duration of a call.
"""
from __future__ import annotations

import contextlib
import enum
import gc
import itertools
import threading
import types
import weakref
from typing import Any, NamedTuple

import numpy as np

from arrax._src import dtypes
from arrax._src.config import config, trace_state
from arrax._src.errors import (ConcretizationTypeError, JaxprTypeError,
                               TracerArrayConversionError, TracerBoolConversionError,
                               TracerIntegerConversionError, UnexpectedTracerError)


class Effect:
  """The base of side-effect kinds (`jax.extend.core.Effect`); arrax tracks no effect sets,
  libraries subclass it to name theirs."""


# ---- abstract values -------------------------------------------------------------------------
class AbstractValue:
  """The base of abstract values (ShapedArray, AbstractToken), as `jax.core.AbstractValue`."""
  __slots__ = ()

  def lo_ty(self):
    """The types of the arrays standing for a value of this type (hijax): itself."""
    return [self]


class aval_property(NamedTuple):
  """A class attribute of an abstract value that a tracer of that type answers as a property:
  `tracer.name` is `fget(tracer)` (hijax types forward their values' properties this way)."""
  fget: Any


class aval_method(NamedTuple):
  """A class attribute of an abstract value that a tracer of that type answers as a method
  bound to the tracer."""
  fun: Any


# Abstract values of non-array Python types (hijax values): type -> fn(value) -> aval.
pytype_aval_mappings: dict = {}


class MemorySpace(enum.Enum):
  """Where a buffer lives (jax.memory.Space): device memory, host memory, or either."""
  Device = enum.auto()
  Host = enum.auto()
  Any = enum.auto()

  def __repr__(self):
    return f"MemorySpace.{self.name}"

  __hash__ = object.__hash__   # by identity, as JAX's


def shape_size(shape):
  """The number of elements of `shape` (an int, or a symbolic expression when the shape has
  symbolic dimensions)."""
  n = 1
  for d in shape:
    n = n * d
  return n if getattr(type(n), "_symbolic_dim", False) else int(n)


_interned_mats: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class ManualAxisType:
  """How a value inside shard_map relates to the manual mesh axes: the axes along which it
  varies, and those along which it is an unreduced or reduced partial sum (disjoint from the
  varying ones). Instances are interned, so equal ones are the same object. (An aval's `mat`.)"""
  __slots__ = ("varying", "unreduced", "reduced", "__weakref__")  # noqa: RUF023

  def __new__(cls, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
    if frozenset(varying) & frozenset(unreduced):   # (the message shows them as given)
      raise ValueError("varying and unreduced cannot have common mesh axes. Got "
                       f"varying={varying} and unreduced={unreduced}")
    if frozenset(varying) & frozenset(reduced):
      raise ValueError("varying and reduced cannot have common mesh axes. Got "
                       f"varying={varying} and reduced={reduced}")
    key = (frozenset(varying), frozenset(unreduced), frozenset(reduced))
    obj = _interned_mats.get(key)
    if obj is None:
      obj = object.__new__(cls)
      for name, v in zip(cls.__slots__, key):
        object.__setattr__(obj, name, v)
      _interned_mats[key] = obj
    return obj

  def __setattr__(self, name, value):
    raise AttributeError(f"ManualAxisType is immutable: cannot set {name}")

  def __repr__(self):
    return (f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
            f"reduced={self.reduced})")

  def __reduce__(self):
    return (_make_manual_axis_type, (self.varying, self.unreduced, self.reduced))

  def update(self, **kwargs):
    """A copy with the given fields (varying, unreduced, reduced) replaced."""
    fields = {"varying": self.varying, "unreduced": self.unreduced, "reduced": self.reduced}
    fields.update(kwargs)
    return ManualAxisType(**fields)

  def to_ct_mat(self):
    """The type of a cotangent: unreduced and reduced swapped."""
    return self.update(unreduced=self.reduced, reduced=self.unreduced)

  @property
  def empty(self):
    return self is _EMPTY_MAT

  def invarying(self, mesh) -> frozenset:
    """The manual axes of `mesh` along which the value is the same everywhere."""
    return frozenset(mesh.manual_axes) - self.vur

  @property
  def vur(self) -> frozenset:
    return self.varying | self.unreduced | self.reduced


def _make_manual_axis_type(varying, unreduced, reduced):
  return ManualAxisType(varying=varying, unreduced=unreduced, reduced=reduced)


_EMPTY_MAT = ManualAxisType()


NO_UR = (frozenset(), frozenset())   # (unreduced, reduced) of a value that is neither


# The order in which `{V:...}` names mesh axes (that of the mesh they belong to; shard_map
# records it when it traces a body).
_axis_order: dict = {}


def note_axis_order(names):
  for i, n in enumerate(names):
    _axis_order[n] = i


def order_axes(names):
  """`names` (mesh axis names) as a tuple in mesh order."""
  return tuple(sorted(names, key=lambda n: (_axis_order.get(n, len(_axis_order)), str(n))))


def _vma_str(vma, ur=NO_UR):
  parts = []
  for tag, axes in (("V", vma), ("U", ur[0]), ("R", ur[1])):
    if axes:
      names = order_axes(axes)
      inner = ",".join(str(n) for n in names)
      parts.append(f"{tag}:" + (inner if len(names) == 1 else f"({inner})"))
  return "{" + ", ".join(parts) + "}" if parts else ""


_NO_SHARDING_GIVEN = object()


class ShardingTypeError(Exception):
  """Types that do not fit together over mesh axes (JAX's `core.ShardingTypeError`): operands
  sharded incompatibly over Explicit mesh axes, a result whose sharding is ambiguous, or
  unreduced/reduced manual axes an operation cannot take."""


def _shape_sharding_str(shape, spec):
  out = []
  for d, p in zip(shape, spec):
    if p is None:
      out.append(str(d))
    elif isinstance(p, tuple):
      out.append(f"{d}@({','.join(p)})")
    else:
      out.append(f"{d}@{p}")
  return ",".join(out)


class ShapedArray(AbstractValue):
  """The abstract value of an array: shape, dtype, whether its dtype is weak and, inside a
  shard_map body with check_vma=True, the mesh axes it varies over (`vma`, part of the type
  as in JAX: avals with different vma are different) and those it is unreduced or reduced
  over (`ur`, likewise).

  `sharding` is None unless some array axis is split over Explicit mesh axes: then a
  NamedSharding over the abstract mesh whose spec has one entry per axis (printed
  `f32[8@x,4]`), part of the type as well. (JAX gives a NamedSharding over an empty abstract
  mesh for the unsharded case, which means the same.)"""
  __slots__ = ("shape", "dtype", "weak_type", "vma", "ur", "sharding", "_hash")

  def lower_val(self, val):   # (hijax: an array stands for itself)
    return [val]

  def raise_val(self, val):
    return val
  array_abstraction_level = 1

  def __init__(self, shape, dtype, weak_type=False, *, sharding=None, vma=frozenset(),
               manual_axis_type=None, memory_space=None, ur=NO_UR):
    del memory_space   # JAX's keyword; arrax's avals do not hold it
    self.shape = tuple(shape)
    self.dtype = dtype if isinstance(dtype, dtypes.ExtendedDType) else np.dtype(dtype)
    self.weak_type = bool(weak_type)
    if manual_axis_type is not None:
      vma = manual_axis_type.varying
      ur = (frozenset(manual_axis_type.unreduced), frozenset(manual_axis_type.reduced))
    self.vma = vma if type(vma) is frozenset else frozenset(vma)
    # (unreduced, reduced): the manual axes over which the value is an unreduced or a reduced
    # partial sum (shard_map with check_vma=True; JAX's aval.mat.unreduced/.reduced)
    self.ur = ur if ur[0] or ur[1] else NO_UR
    self.sharding = None if sharding is None else _canon_sharding[0](sharding, self.shape)
    self._hash = None

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: shape_size(self.shape))
  mat = property(lambda self: ManualAxisType(varying=self.vma, unreduced=self.ur[0],
                                             reduced=self.ur[1]))
  manual_axis_type = mat

  def update(self, shape=None, dtype=None, weak_type=None, *, vma=None, manual_axis_type=None,
             ur=None, sharding=_NO_SHARDING_GIVEN):
    if manual_axis_type is not None:
      vma = manual_axis_type.varying
      ur = (manual_axis_type.unreduced, manual_axis_type.reduced)
    if sharding is _NO_SHARDING_GIVEN:   # (kept only while the shape is)
      sharding = self.sharding if shape is None or tuple(shape) == self.shape else None
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type,
                       vma=self.vma if vma is None else vma, ur=self.ur if ur is None else ur,
                       sharding=sharding)

  def update_manual_axis_type(self, mat):
    return self.update(manual_axis_type=mat)

  def to_ct_aval(self):
    """The type of this value's cotangent (unreduced and reduced axes swapped)."""
    dt = self.dtype if dtypes.issubdtype(self.dtype, np.inexact) else dtypes.float0
    return self.update(dtype=dt, ur=(self.ur[1], self.ur[0]))

  def update_weak_type(self, weak_type):
    return self if weak_type == self.weak_type else self.update(weak_type=weak_type)

  def strip_weak_type(self):
    return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False,
                                                       vma=self.vma, ur=self.ur,
                                                       sharding=self.sharding)

  def __eq__(self, other):
    return (type(other) is ShapedArray and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type
            and self.vma == other.vma and self.ur == other.ur
            and self.sharding == other.sharding)

  def __hash__(self):
    if self._hash is None:
      self._hash = hash((self.shape, self.dtype, self.weak_type, self.vma, self.ur,
                         self.sharding))
    return self._hash

  def str_short(self, short_dtypes=False, mesh_axis_types=False):
    if short_dtypes:
      name = dtypes.short_dtype_name(self.dtype)
    else:   # float0 is a NumPy void dtype; JAX prints its own name
      name = "float0" if self.dtype == dtypes.float0 else self.dtype.name
    if self.sharding is None:
      dims = ','.join(str(d) for d in self.shape)
    else:
      dims = _shape_sharding_str(self.shape, self.sharding.spec)
    extra = ""
    if mesh_axis_types and self.sharding is not None:
      by_type: dict = {}
      mesh = self.sharding.mesh
      for n, t in zip(mesh.axis_names, mesh.axis_types):
        by_type.setdefault(t, []).append(n)
      extra = f"({ {t: tuple(v) for t, v in by_type.items()} })"
    return f"{name}[{dims}]{_vma_str(self.vma, self.ur)}{extra}"

  def __str__(self):
    return ("~" if self.weak_type else "") + self.str_short()

  def __repr__(self):
    return f"ShapedArray({self.str_short()}{', weak_type=True' if self.weak_type else ''})"


# ---- shardings in types (Explicit mesh axes) ---------------------------------------------------
# Set by `_src/sharding_types.py`: [canon(sharding, shape) -> aval sharding or None] (keeps
# only Explicit mesh axes, one spec entry per axis; None when nothing is split).
_canon_sharding: list = [lambda sharding, shape: None]


class _ShardingTyping:
  # True once a value's type carries a sharding (or an Explicit mesh is set): abstract
  # evaluation then also applies the primitives' sharding rules (`hook`). Until then no
  # operation does any sharding work.
  on = False
  hook = None   # (prim, in_avals, params, out) -> out, set by `_src/sharding_types.py`


sharding_typing = _ShardingTyping()


def abstract_eval_typed(prim, avals, params):
  """`prim.abstract_eval` plus, once shardings are in types, its sharding rule."""
  out = prim.abstract_eval(*avals, **params)
  if sharding_typing.on:
    out = sharding_typing.hook(prim, avals, params, out)
  return out


# ---- varying manual axes (shard_map's check_vma) -----------------------------------------------
class _VmaState(threading.local):
  def __init__(self):
    # The manual mesh axes of the innermost shard_map body traced with check_vma=True (None
    # outside one): staging then types values with the axes they vary over.
    self.axes = None


vma_state = _VmaState()


@contextlib.contextmanager
def checking_vma(axes):
  """Type values by their varying manual axes (`axes`: the body's manual mesh axes), or stop
  doing so (`axes` None, as shard_map with check_vma=False does)."""
  prev = vma_state.axes
  vma_state.axes = None if axes is None else frozenset(axes)
  try:
    yield
  finally:
    vma_state.axes = prev


# Set by lax/parallel.py while values are typed by their varying manual axes: "bind"
# `(prim, args, params) -> args` casts invariant operands to varying (JAX's implicit pvary)
# when a primitive is bound; "stage" does the same when it is staged into a jaxpr, "type"
# gives the staged outputs their vma, "cast" `(x, axes)` casts one value.
vma_hooks: dict = {}


_interned_avals: dict = {}


def intern_aval(aval):
  """One shared object per distinct ShapedArray (given to executables' outputs and to arrays
  put on a device, kept in jit cache keys): cache lookups then compare avals by identity."""
  if type(aval) is not ShapedArray:
    return aval
  hit = _interned_avals.get(aval)
  if hit is None:
    if len(_interned_avals) > 16384:
      _interned_avals.clear()
    hit = _interned_avals[aval] = aval
  return hit


class AbstractToken(AbstractValue):
  """The abstract value of an XLA token (which orders side effects): printed `Tok`. At run
  time a token is a `Token` holding an empty boolean buffer."""
  __slots__ = ()

  def str_short(self, short_dtypes=False):
    return "Tok"

  __str__ = __repr__ = lambda self: "Tok"

  def strip_weak_type(self):
    return self


abstract_token = AbstractToken()
TOKEN_BUFFER_AVAL = ShapedArray((0,), np.bool_)   # what a token is at run time


class AbstractRef(AbstractValue):
  """The abstract value of a mutable array reference (`jax.ref.AbstractRef`): an inner
  ShapedArray it holds; printed `Ref{f32[3]}`. Refs live in arrax/_src/state/primitives.py,
  which registers the indexing operations of traced refs here (`register_ref_ops`)."""
  __slots__ = ("inner_aval", "memory_space", "kind")

  def __init__(self, inner_aval, memory_space=None, kind=None):
    self.inner_aval = inner_aval
    self.memory_space = memory_space
    self.kind = kind

  shape = property(lambda self: self.inner_aval.shape)
  dtype = property(lambda self: self.inner_aval.dtype)
  weak_type = property(lambda self: self.inner_aval.weak_type)
  ndim = property(lambda self: len(self.inner_aval.shape))
  size = property(lambda self: shape_size(self.inner_aval.shape))

  def update(self, inner_aval=None, memory_space=None, kind=None):
    return AbstractRef(self.inner_aval if inner_aval is None else inner_aval,
                       self.memory_space if memory_space is None else memory_space,
                       self.kind if kind is None else kind)

  def strip_weak_type(self):
    return self

  def _getitem(self, tracer, idx):
    return _ref_ops["get"](tracer, idx)

  def _setitem(self, tracer, idx, value):
    return _ref_ops["set"](tracer, idx, value)

  def _addupdate(self, tracer, idx, value):
    return _ref_ops["addupdate"](tracer, value, idx)

  # the methods of traced refs (`tracer.addupdate(v, idx)`, ...), as JAX's aval methods
  @staticmethod
  def get(tracer, idx=()):
    return _ref_ops["get"](tracer, idx)

  @staticmethod
  def swap(tracer, value, idx=()):
    return _ref_ops["swap"](tracer, idx, value)

  @staticmethod
  def set(tracer, value, idx=()):  # noqa: A003
    return _ref_ops["set"](tracer, idx, value)

  @staticmethod
  def addupdate(tracer, value, idx=()):
    return _ref_ops["addupdate"](tracer, value, idx)

  def str_short(self, short_dtypes=False):
    inner = self.inner_aval.str_short(short_dtypes)
    if self.memory_space is not None:
      return f"Ref<{self.memory_space}>{{{inner}}}"
    return f"Ref{{{inner}}}"

  __str__ = __repr__ = lambda self: self.str_short()

  def __eq__(self, other):
    return (type(other) is AbstractRef and self.inner_aval == other.inner_aval
            and self.memory_space == other.memory_space)

  def __hash__(self):
    return hash((AbstractRef, self.inner_aval, self.memory_space))


_ref_ops: dict = {}


def register_ref_ops(get, swap, set, addupdate):  # noqa: A002
  """The state module's ref_get / ref_swap / ref_set / ref_addupdate(ref, value, idx), used
  by traced refs' indexing and methods."""
  _ref_ops.update(get=get, swap=swap, set=set, addupdate=addupdate)


_REF_METHODS = frozenset(["get", "swap", "set", "addupdate"])


def is_ref_aval(aval) -> bool:
  return type(aval) is AbstractRef


class Token:
  """A concrete token: wraps the (empty) device array XLA passes for it."""
  __slots__ = ("_buf",)
  aval = abstract_token

  def __init__(self, buf):
    self._buf = buf

  def block_until_ready(self):
    self._buf.block_until_ready()
    return self


def get_aval(x) -> ShapedArray:
  """The abstract value of an arrax Array, a tracer, a NumPy array or a Python scalar (or a
  value of a type given by `register_hitype`)."""
  hi = pytype_aval_mappings.get(type(x))
  if hi is not None:
    return hi(x)
  aval = getattr(x, "aval", None)
  if aval is not None:
    return aval
  if type(x) in dtypes.python_scalar_dtypes:
    dtypes.check_python_int(x)
    dt, weak = dtypes.dtype_and_weak_type(x)
    return ShapedArray((), dt, weak)
  if isinstance(x, (np.ndarray, np.generic)):
    return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype), False)
  if pytype_aval_mappings:
    for t in type(x).__mro__:
      fn = pytype_aval_mappings.get(t)
      if fn is not None:
        return fn(x)
  raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type")


def valid_jaxtype(x) -> bool:
  try:
    get_aval(x)
  except TypeError:
    return False
  return True


# ---- primitives --------------------------------------------------------------------------------
# The rule slots every primitive has, with what each transformation calls (the rules themselves
# are written next to the primitive, in its family module, and registered with `def_<slot>`):
RULE_SLOTS = {
    "abstract_eval": "abstract evaluation",     # (*avals, **params) -> aval (list if multiple)
    "lowering": "lowering to StableHLO",         # (ctx, *ir_values, **params) -> [ir values]
    "jvp": "differentiation rule",               # (primals, tangents, **params) -> (out, t_out)
    "transpose": "transpose rule (for reverse-mode differentiation)",  # (ct, *args, **params)
    "batch": "batching rule",                    # (args, dims, **params) -> (out, out_dim)
    # Optional slots; None means the transformation's default handles the primitive.
    "batch_axis": None,     # (axis_data, args, dims, **params): axis-aware batching, called even
                            # when nothing is batched (collectives, primitives holding jaxprs)
    "partial_eval": None,   # (trace, args, params): custom known/unknown split (PartialEvalTrace)
    "linearize": None,      # (trace, primals, tangents, **params): the JVP under linearization
                            # (known primals, unknown tangents), split as JAX's linearize does
    "dce": None,            # (eqn, used_outputs) -> eqn or None: prune a primitive's own work
    "pp_params": None,      # (params) -> params to print
    "pp_eqn": None,         # (eqn, ctx) -> the equation's printed document (ref get/swap print
                            # as `x[i] <- v`, as in JAX)
    "const_fold": None,     # (*literals, **params) -> Literal or None: while staging, the result
                            # for inputs that are all rank-0 literals (JAX's const folding)
}
OPTIONAL_SLOTS = frozenset(k for k, v in RULE_SLOTS.items() if v is None)


class _MissingRule:
  """The value of an unset required slot: calling it says which rule the primitive lacks."""
  __slots__ = ("prim_name", "what")

  def __init__(self, prim_name, what):
    self.prim_name = prim_name
    self.what = what

  def __call__(self, *args, **params):
    raise NotImplementedError(f"{self.what[0].upper()}{self.what[1:]} for '{self.prim_name}' "
                              "not implemented")

  def __bool__(self):
    return False


class Primitive:
  """An operation the system knows: `bind` applies it under the current trace.

  Its rules fill the slots of `RULE_SLOTS`, registered next to the primitive's definition with
  `prim.def_<slot>(rule)` (usable as a decorator). An unset required slot raises
  NotImplementedError naming the primitive and the rule when a transformation needs it;
  `prim.has_rule(slot)` tells whether it is set.
  """
  multiple_results = False
  # True: a side effect even with results (io_callback), never dropped; or a function of an
  # equation's params saying so (ffi_call's has_side_effect).
  effectful = False
  # True: an *ordered* effect (ordered callbacks, debug prints); lowering threads a token
  # through its equations (and the control flow holding them) so XLA keeps program order.
  ordered_effect = False
  # A function of an equation's params giving the effects it reports in `eqn.effects` (debug
  # callbacks, io_callback); None: see `eqn_effects`.
  effects_of = None
  # True: an operation on mutable array references (new_ref, get, swap, ...): JVP always runs
  # its rule, and jit discharges its state before lowering.
  ref_primitive = False

  def __init__(self, name: str):
    self.name = name
    for slot, what in RULE_SLOTS.items():
      setattr(self, slot, None if what is None else _MissingRule(name, what))

  def __repr__(self):
    return self.name

  def bind(self, *args, **params):
    if vma_state.axes is not None:   # (JAX's implicit pvary, before any transformation)
      args = vma_hooks["bind"](self, args, params)
    return current_trace().process_primitive(self, args, params)

  def impl(self, *args, **params):
    """Apply the primitive to concrete values (the eager path registered by dispatch)."""
    return _eager_impl(self, args, params)

  def has_rule(self, slot: str) -> bool:
    return bool(getattr(self, slot))

  def _def(self, slot, fn):
    setattr(self, slot, fn)
    return fn

  def def_impl(self, fn):
    self.impl = fn
    return fn

  def def_abstract_eval(self, fn):
    return self._def("abstract_eval", fn)

  def def_lowering(self, fn):
    return self._def("lowering", fn)

  def def_jvp(self, fn):
    return self._def("jvp", fn)

  def def_transpose(self, fn):
    return self._def("transpose", fn)

  def def_batch(self, fn):
    return self._def("batch", fn)

  def def_batch_axis(self, fn):
    return self._def("batch_axis", fn)

  def def_partial_eval(self, fn):
    return self._def("partial_eval", fn)

  def def_linearize(self, fn):
    return self._def("linearize", fn)

  def def_dce(self, fn):
    return self._def("dce", fn)

  def def_pp_params(self, fn):
    return self._def("pp_params", fn)

  def def_pp_eqn(self, fn):
    return self._def("pp_eqn", fn)

  def def_const_fold(self, fn):
    return self._def("const_fold", fn)

  def def_effectful_abstract_eval(self, fn):
    """JAX's form `fn(*avals, **params) -> (avals, effects)`; arrax tracks no effect sets, so
    only the avals are kept."""
    self._def("abstract_eval", lambda *avals, **params: fn(*avals, **params)[0])
    return fn

  def get_bind_params(self, params):
    return [], params


def _no_eager_impl(prim, args, params):
  raise NotImplementedError(f"Evaluation rule for '{prim.name}' not implemented (arrax's "
                            "dispatch module registers the eager path when arrax is imported)")


_eager_impl = _no_eager_impl


def register_eager_impl(fn):
  """Set how primitives run on concrete values: `fn(prim, args, params)` (dispatch calls this;
  core never imports dispatch)."""
  global _eager_impl
  _eager_impl = fn


# ---- traces ---------------------------------------------------------------------------------
class Trace:
  """A trace interprets primitives applied to its tracers."""
  leak_name = property(lambda self: type(self).__name__)   # its name in leak reports

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
    # The name stack (JAX's): a tuple of scope names (str, from named_scope) and
    # NameTransforms (jvp, vmap, transpose). Staged equations record the part added since their
    # trace began, and lowering turns it into op names ("jit(f)/jvp()/sin").
    self.name_stack = ()
    # The Python traceback new equations record (source_info_util): None while tracing user
    # code (each equation captures the live stack); a replayed equation's own traceback while a
    # transformation re-binds a jaxpr, so transformed equations point at the user's line.
    self.user_tb = None


trace_ctx = _TraceContext()


class NameTransform:
  """A transformation on the name stack: it wraps the names after it, `vmap(jvp(scope))`."""
  __slots__ = ("name",)

  def __init__(self, name):
    self.name = name

  def __eq__(self, other):
    return type(other) is NameTransform and other.name == self.name

  def __hash__(self):
    return hash(("transform", self.name))

  def __repr__(self):
    return f"NameTransform({self.name!r})"


class OpAttributes:
  """A name-stack entry that names nothing: XLA frontend attributes (`mhlo.frontend_attributes`)
  for the ops of the equations staged under it. `kind` is "compute_type" (compute_on: the
  innermost one wins) or "metadata" (set_xla_metadata: merged, inner keys win, a None value
  drops a key); `value` is the compute type or a sorted tuple of (key, value) pairs. As the
  rest of the stack, equations record it (also a trace started under it: JAX's equation
  contexts are absolute), transformations replay it and lowering reads it
  (`mlir.frontend_attributes`)."""
  __slots__ = ("kind", "value")

  def __init__(self, kind, value):
    self.kind, self.value = kind, value

  def __eq__(self, other):
    return type(other) is OpAttributes and (other.kind, other.value) == (self.kind, self.value)

  def __hash__(self):
    return hash((OpAttributes, self.kind, self.value))

  def __repr__(self):
    return f"OpAttributes({self.kind!r}, {self.value!r})"


@contextlib.contextmanager
def op_attributes(entry: OpAttributes):
  """Stage the equations of the `with` block under the OpAttributes `entry`: pushes it on the
  name stack and on the thread's `arrax_op_attributes` flag (part of jit's cache key, so a
  jitted function is traced again under it)."""
  prev = trace_ctx.name_stack
  with config._override("arrax_op_attributes", config.arrax_op_attributes + (entry,)):
    trace_ctx.name_stack = prev + (entry,)
    try:
      yield
    finally:
      trace_ctx.name_stack = prev


_rendered_stacks: dict = {}


def render_name_stack(stack) -> str:
  """The name stack as JAX writes it: scopes joined by '/', each transform wrapping what follows
  it ("a/vmap(b/c)"; "jvp()" when nothing follows)."""
  hit = _rendered_stacks.get(stack)
  if hit is None:
    parts = []
    for e in reversed(stack):
      if type(e) is OpAttributes:
        continue
      if type(e) is NameTransform:
        if parts:
          parts[-1] = f"{e.name}({parts[-1]})"
        else:
          parts.append(f"{e.name}()")
      else:
        parts.append(e)
    hit = "/".join(reversed(parts))
    if len(_rendered_stacks) > 10000:
      _rendered_stacks.clear()
    _rendered_stacks[stack] = hit
  return hit


@contextlib.contextmanager
def extend_name_stack(entry):
  """Push a scope name (str) or a NameTransform on the name stack for the `with` block."""
  prev = trace_ctx.name_stack
  trace_ctx.name_stack = prev + (entry,)
  try:
    yield
  finally:
    trace_ctx.name_stack = prev


TRANSFORM_JVP = NameTransform("jvp")
TRANSFORM_VMAP = NameTransform("vmap")
TRANSFORM_TRANSPOSE = NameTransform("transpose")


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


_check_leaks = config.flag("jax_check_tracer_leaks")


def check_leaks(trace):
  """With jax_check_tracer_leaks set: raise (as JAX, a plain Exception) if a tracer of the
  finished `trace` is still alive, naming what holds it. The caller drops its own references
  to the trace's tracers first."""
  if not _check_leaks.value:
    return
  gc.collect()
  leaked = [r for r in gc.get_referrers(trace) if isinstance(r, Tracer)]
  if not leaked:
    return
  lines = [f"Leaked trace {trace.leak_name}. Leaked tracer(s):", ""]
  for t in leaked:
    lines.append(repr(t))
    for ref in gc.get_referrers(t):
      if ref is leaked or isinstance(ref, Tracer) and ref in leaked:
        continue
      lines.append(f"<{type(t).__name__} {id(t)}> is referred to by <{type(ref).__name__} "
                   f"{id(ref)}>")
    lines.append("")
  raise Exception("\n".join(lines))


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
    # (as JAX: int() is a concretization error, operator.index() an integer-conversion one)
    raise ConcretizationTypeError(self, "The problem arose with the `int` function. If trying "
                                  "to convert the data type of a value, try using "
                                  "`x.astype(int)` or `jnp.array(x, int)` instead.")

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

  def __getattr__(self, name):
    # (only for attributes not found otherwise: a traced ref's methods)
    if name in _REF_METHODS:
      aval = getattr(self, "aval", None)
      if type(aval) is AbstractRef:
        method = getattr(AbstractRef, name)
        return lambda *args, **kwargs: method(self, *args, **kwargs)
    if name != "aval" and not name.startswith("__"):
      # (an attribute its type declares as an aval_property / aval_method)
      aval = getattr(self, "aval", None)
      high = getattr(aval, "is_high", False)   # (a hi type's own attributes too, as in JAX)
      attr = getattr(aval if high else type(aval), name, None)
      if type(attr) is aval_property:
        return attr.fget(self)
      if type(attr) is aval_method:
        return types.MethodType(attr.fun, self)
      if high and attr is not None:
        return attr
    raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

  def __setitem__(self, idx, value):
    if type(self.aval) is AbstractRef:
      return self.aval._setitem(self, idx, value)
    raise TypeError(
        f"'{type(self).__name__}' object does not support item assignment. JAX arrays are "
        "immutable. Instead of ``x[idx] = y``, use ``x = x.at[idx].set(y)`` or another .at[] "
        "method: https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")

  def item(self, *args):
    raise ConcretizationTypeError(self, "The problem arose with the `item` method.")

  def tolist(self):
    raise ConcretizationTypeError(self, "The problem arose with the `tolist` method.")

  # What only a materialized array has: ConcretizationTypeError, as JAX's tracers.
  def _concrete_only(self, what):
    raise ConcretizationTypeError(
        self, f"The {what} was called on traced array with shape {self.aval.str_short()}.")

  on_device_size_in_bytes = lambda self: self._concrete_only("on_device_size_in_bytes() method")
  traceback = property(lambda self: self._concrete_only("traceback property"))
  addressable_data = lambda self, index: self._concrete_only("addressable_data() method")
  delete = lambda self: self._concrete_only("delete() method")
  devices = lambda self: self._concrete_only("devices() method")
  is_deleted = lambda self: self._concrete_only("is_deleted() method")
  unsafe_buffer_pointer = lambda self: self._concrete_only("unsafe_buffer_pointer() method")
  tobytes = lambda self, order="C": self._concrete_only("tobytes() method")
  addressable_shards = property(lambda self: self._concrete_only("addressable_shards property"))
  global_shards = property(lambda self: self._concrete_only("global_shards property"))
  is_fully_addressable = property(
      lambda self: self._concrete_only("is_fully_addressable property"))
  is_fully_replicated = property(
      lambda self: self._concrete_only("is_fully_replicated property"))
  itemsize = property(lambda self: self.aval.dtype.itemsize)
  nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)


def is_concrete(x) -> bool:
  return not isinstance(x, Tracer)


# ---- the jaxpr IR -----------------------------------------------------------------------------
# How jaxprs and equations print; jaxpr_printer registers itself here (core never imports it).
_printer = {"jaxpr": lambda j: object.__repr__(j), "eqn": lambda e: object.__repr__(e)}


def register_printer(pp_jaxpr, pp_eqn):
  _printer["jaxpr"], _printer["eqn"] = pp_jaxpr, pp_eqn


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


class JaxprEqnContext:
  """The context an equation runs in (`eqn.ctx`): compute type, PRNG partitionability, the
  abstract mesh, XLA metadata. arrax records none of it per equation: `eqn.ctx` reports the
  settings in force when it is read."""
  __slots__ = ("compute_type", "threefry_partitionable", "cur_abstract_mesh",
               "remove_size_one_mesh_axis", "xla_metadata")

  def __init__(self, compute_type=None, threefry_partitionable=True, cur_abstract_mesh=None,
               remove_size_one_mesh_axis=False, xla_metadata=None):
    self.compute_type = compute_type
    self.threefry_partitionable = threefry_partitionable
    self.cur_abstract_mesh = cur_abstract_mesh
    self.remove_size_one_mesh_axis = remove_size_one_mesh_axis
    self.xla_metadata = xla_metadata

  def __repr__(self):
    return (f"JaxprEqnContext(compute_type={self.compute_type}, "
            f"threefry_partitionable={self.threefry_partitionable}, "
            f"cur_abstract_mesh={self.cur_abstract_mesh}, "
            f"remove_size_one_mesh_axis={self.remove_size_one_mesh_axis}, "
            f"xla_metadata={self.xla_metadata})")


_abstract_mesh_getter = [lambda: None]


def register_abstract_mesh_getter(fn):
  """sharding_impls (above core) registers how to read the context's abstract mesh."""
  _abstract_mesh_getter[0] = fn


def current_eqn_context() -> JaxprEqnContext:
  return JaxprEqnContext(None, bool(config.jax_threefry_partitionable), _abstract_mesh_getter[0](),
                         bool(config.jax_remove_size_one_mesh_axis_from_type), None)


class PrimitiveEffect(Effect):
  """The side effect of an effectful primitive that names no effect of its own (arrax tracks
  effects per primitive); one per primitive name."""
  _interned: dict = {}

  def __new__(cls, name):
    if name not in cls._interned:
      obj = super().__new__(cls)
      obj.name = name
      cls._interned[name] = obj
    return cls._interned[name]

  def __repr__(self):
    return f"PrimitiveEffect({self.name})"


def eqn_effects(eqn) -> frozenset:
  """The side effects of an equation: those its primitive's `effects_of` names, those of the
  jaxprs in its params, or else a `PrimitiveEffect` when it has a side effect (`has_effects`)."""
  prim = eqn.primitive
  if prim.effects_of is not None:
    return frozenset(prim.effects_of(eqn.params))
  out = set()
  for j in jaxprs_in_params(eqn.params):
    out |= j.effects
  if not out and has_effects(eqn):
    out.add(PrimitiveEffect(prim.name))
  return frozenset(out)


class JaxprEqn:
  """One equation. `source_info` is its name stack relative to its jaxpr (a tuple, or None);
  `traceback` the Python traceback (jaxlib's) of the user code that made it, or None."""
  __slots__ = ("invars", "outvars", "primitive", "params", "source_info", "traceback")

  def __init__(self, invars, outvars, primitive, params, source_info=None, traceback=None):
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.primitive = primitive
    self.params = params
    self.source_info = source_info
    self.traceback = traceback

  def __repr__(self):
    return _printer["eqn"](self)

  effects = property(eqn_effects)
  ctx = property(lambda self: current_eqn_context())

  def replace(self, invars=None, outvars=None, primitive=None, params=None, effects=None,
              source_info=None, ctx=None):
    """A copy with the given fields replaced (arrax derives `effects` and `ctx`)."""
    del effects, ctx
    return JaxprEqn(self.invars if invars is None else invars,
                    self.outvars if outvars is None else outvars,
                    self.primitive if primitive is None else primitive,
                    self.params if params is None else params,
                    self.source_info if source_info is None else source_info, self.traceback)


class Jaxpr:
  """A typed program: constvars and invars in, equations, outvars out."""
  __slots__ = ("constvars", "invars", "outvars", "eqns", "debug_info", "_ordered", "_refs")

  def __init__(self, constvars, invars, outvars, eqns, debug_info=None):
    self.constvars = list(constvars)
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.eqns = list(eqns)
    self.debug_info = debug_info
    self._ordered = None   # jaxpr_has_ordered_effects, computed once
    self._refs = None      # jaxpr_uses_refs, computed once

  @property
  def in_avals(self):
    return [v.aval for v in self.invars]

  @property
  def out_avals(self):
    return [v.aval for v in self.outvars]

  def __str__(self):
    return _printer["jaxpr"](self)

  __repr__ = __str__

  def pretty_print(self, *, source_map=None, **kwargs):
    """The printed jaxpr; a list `source_map` receives each line's (start column, end column,
    traceback) spans of equation text."""
    if source_map is None:
      return str(self)
    return _printer["jaxpr"](self, source_map=source_map)

  @property
  def effects(self) -> set:
    """The side effects of the equations (see `eqn_effects`)."""
    return set().union(*(eqn_effects(e) for e in self.eqns))

  @property
  def in_aval_qdds(self):
    return [v.aval for v in self.invars]

  final_aval_qdds = in_aval_qdds

  @property
  def is_high(self) -> bool:
    """Whether an input, output or intermediate value is of a hi type (hijax)."""
    return any(getattr(v.aval, "is_high", False)
               for vs in (self.constvars, self.invars, self.outvars,
                          *(e.outvars for e in self.eqns)) for v in vs)

  _REPLACEABLE = ("constvars", "invars", "outvars", "eqns", "debug_info")

  def replace(self, **kwargs):
    """A jaxpr with the given fields replaced (`effects` and `is_high` are derived)."""
    unknown = {k: v for k, v in kwargs.items()
               if k not in self._REPLACEABLE and k not in ("effects", "is_high")}
    if unknown:
      raise ValueError(f"Unknown keyword arguments: {unknown}")
    info = self.debug_info
    if info is not None and (kwargs.get("invars", self.invars) != self.invars
                             or kwargs.get("outvars", self.outvars) != self.outvars):
      info = info._replace(arg_names=None, result_paths=None)   # (no longer this jaxpr's)
    kwargs.setdefault("debug_info", info)
    return Jaxpr(*(kwargs.get(k, getattr(self, k)) for k in self._REPLACEABLE))


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
  constvars = property(lambda self: self.jaxpr.constvars)
  invars = property(lambda self: self.jaxpr.invars)
  outvars = property(lambda self: self.jaxpr.outvars)
  effects = property(lambda self: self.jaxpr.effects)
  debug_info = property(lambda self: self.jaxpr.debug_info)
  in_aval_qdds = property(lambda self: self.jaxpr.in_aval_qdds)
  final_aval_qdds = property(lambda self: self.jaxpr.final_aval_qdds)
  is_high = property(lambda self: self.jaxpr.is_high)
  literals = property(lambda self: self.consts)

  def map_jaxpr(self, f):
    """The closed jaxpr of `f(self.jaxpr)` with the same consts."""
    return ClosedJaxpr(f(self.jaxpr), self.consts)

  def replace(self, *, jaxpr=None, consts=None):
    return ClosedJaxpr(self.jaxpr if jaxpr is None else jaxpr,
                       self.consts if consts is None else consts)

  def __str__(self):
    return str(self.jaxpr)

  __repr__ = __str__

  def pretty_print(self, **kwargs):
    return self.jaxpr.pretty_print(**kwargs)


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
  ctx = trace_ctx
  outer_tb, base = ctx.user_tb, ctx.name_stack
  try:
    for eqn in jaxpr.eqns:
      ctx.user_tb = eqn.traceback or outer_tb   # equations made here point at the user's line
      # ... and are staged under its names (scopes, OpAttributes), as JAX's eval_jaxpr does
      ctx.name_stack = base + eqn.source_info if eqn.source_info else base
      # Literals are bound as they are, keeping their dtype (a weak int32 literal read back as
      # a Python int would become int64 under x64).
      ans = eqn.primitive.bind(*[v if type(v) is Literal else env[v] for v in eqn.invars],
                               **eqn.params)
      if eqn.primitive.multiple_results:
        for v, val in zip(eqn.outvars, ans):
          write(v, val)
      else:
        write(eqn.outvars[0], ans)
  finally:
    ctx.user_tb, ctx.name_stack = outer_tb, base
  return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed_jaxpr: ClosedJaxpr):
  return lambda *args: eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)


def _no_vma(aval):
  return (aval.update(vma=frozenset(), ur=NO_UR)
          if type(aval) is ShapedArray and (aval.vma or aval.ur is not NO_UR) else aval)


def check_jaxpr(jaxpr: Jaxpr):
  """Type-check a jaxpr: every var defined once before use and every equation well typed."""
  defined = set()

  def use(v, where):
    if isinstance(v, Literal):
      return
    if v not in defined:
      raise JaxprTypeError(f"Variable {v} used before definition in {where}")

  for v in list(jaxpr.constvars) + list(jaxpr.invars):
    if v in defined:
      raise JaxprTypeError(f"Variable {v} bound twice")
    defined.add(v)
  for eqn in jaxpr.eqns:
    for v in eqn.invars:
      use(v, eqn.primitive.name)
    in_avals = [v.aval for v in eqn.invars]
    out = abstract_eval_typed(eqn.primitive, in_avals, eqn.params)
    outs = out if eqn.primitive.multiple_results else [out]
    for v, aval in zip(eqn.outvars, outs):
      # (varying manual axes are given when staging, not by the rules: not compared here)
      if _no_vma(v.aval.strip_weak_type()) != _no_vma(aval.strip_weak_type()):
        raise JaxprTypeError(f"Equation {eqn.primitive.name} declares output {v.aval} but its "
                             f"rule gives {aval}")
      if not isinstance(v, DropVar):
        defined.add(v)
  for v in jaxpr.outvars:
    use(v, "outvars")


# ---- effects and dead-code elimination -----------------------------------------------------
def jaxprs_in_params(params):
  """The jaxprs (open) held by an equation's params."""
  out = []
  for v in params.values():
    for x in (v if isinstance(v, (tuple, list)) else (v,)):
      if isinstance(x, ClosedJaxpr):
        out.append(x.jaxpr)
      elif isinstance(x, Jaxpr):
        out.append(x)
  return out


def has_effects(eqn) -> bool:
  """Whether `eqn` has a side effect: it has no results (a debug callback, say), its primitive
  is `effectful` (io_callback), or a jaxpr in its params has such an equation. Effects are
  never removed, hoisted or merged."""
  eff = eqn.primitive.effectful
  if not eqn.outvars or (eff if type(eff) is bool else eff(eqn.params)):
    return True
  return any(jaxpr_has_effects(j) for j in jaxprs_in_params(eqn.params))


def jaxpr_has_effects(jaxpr: Jaxpr) -> bool:
  return any(has_effects(eqn) for eqn in jaxpr.eqns)


def jaxpr_has_ordered_effects(jaxpr) -> bool:
  """Whether an equation of `jaxpr` (or of a jaxpr in its params) is an ordered effect;
  computed once per jaxpr, since lowering asks at every nesting level."""
  jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
  if jaxpr._ordered is None:
    jaxpr._ordered = any(
        eqn.primitive.ordered_effect
        or any(jaxpr_has_ordered_effects(j) for j in jaxprs_in_params(eqn.params))
        for eqn in jaxpr.eqns)
  return jaxpr._ordered


def jaxpr_uses_refs(jaxpr) -> bool:
  """Whether `jaxpr` (or a jaxpr in its params) takes, closes over or makes mutable array
  references; computed once per jaxpr."""
  jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
  if jaxpr._refs is None:
    jaxpr._refs = (
        any(type(v.aval) is AbstractRef for v in jaxpr.constvars)
        or any(type(v.aval) is AbstractRef for v in jaxpr.invars)
        or any(eqn.primitive.ref_primitive
               or any(jaxpr_uses_refs(j) for j in jaxprs_in_params(eqn.params))
               for eqn in jaxpr.eqns))
  return jaxpr._refs


def dce_jaxpr(jaxpr: Jaxpr, used_outputs, keep_inputs=False):
  """Drop the work nothing uses: equations whose results are unused (unless they have effects)
  and inputs nothing reads, except where `keep_inputs` (a bool or one per input) says so. A
  primitive with a `dce` rule decides for its own equations, given which outputs are used
  (nested jit, scan prune their inner work; None drops the equation).

  Returns (jaxpr, used_inputs).
  """
  outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
  live = {v for v in outvars if type(v) is Var}
  eqns = []
  for eqn in reversed(jaxpr.eqns):
    used = [v in live for v in eqn.outvars]
    rule = eqn.primitive.dce
    if rule is not None:
      eqn = rule(eqn, used)
    elif eqn.outvars and not any(used) and not has_effects(eqn):
      eqn = None
    if eqn is not None:
      eqns.append(eqn)
      live.update(v for v in eqn.invars if type(v) is Var)
  keep = keep_inputs if isinstance(keep_inputs, (list, tuple)) else [keep_inputs] * len(
      jaxpr.invars)
  used_in = [v in live or k for v, k in zip(jaxpr.invars, keep)]
  invars = [v for v, u in zip(jaxpr.invars, used_in) if u]
  return Jaxpr(jaxpr.constvars, invars, outvars, eqns[::-1], jaxpr.debug_info), used_in


# ---- caches ------------------------------------------------------------------------------------
_caches: list = []


def register_cache(cache):
  """Record `cache` (anything with `.clear()`) so that `clear_caches` empties it; returns it."""
  _caches.append(cache)
  return cache


def clear_caches():
  """Empty every registered cache of traces, jaxprs and compiled executables."""
  for cache in _caches:
    cache.clear()


# ---- memoization keyed on the trace state --------------------------------------------------
_memo_cache: "weakref.WeakKeyDictionary" = register_cache(weakref.WeakKeyDictionary())


def _ref(x):
  try:
    return weakref.ref(x)
  except TypeError:
    return lambda: x


def memo(objs, key, build):
  """`build()`, memoized on the objects it derives from (jaxprs, user functions; held weakly),
  the hashable `key` and the complete trace state (`config.trace_state()`: x64, threefry mode,
  matmul precision, ...; and whether values are typed by their varying manual axes). Falls back to calling `build()` when the first object cannot be held
  weakly or the key is unhashable.

  Rules that rebuild a primitive's jaxprs (JVP, partial evaluation, transpose, batching) and
  the control-flow primitives tracing user functions then return the same objects for the same
  inputs, so repeated eager calls reuse compiled executables.
  """
  first, rest = objs[0], tuple(objs[1:])
  try:
    full_key = (tuple(id(o) for o in rest), key, trace_state(), vma_state.axes)
    per = _memo_cache.get(first)
    hit = None if per is None else per.get(full_key)
  except TypeError:
    return build()
  if hit is not None and all(r() is o for r, o in zip(hit[0], rest)):
    return hit[1]
  result = build()
  if per is None:
    per = _memo_cache[first] = {}
  per[full_key] = (tuple(_ref(o) for o in rest), result)
  return result


# ---- names of JAX's core API (jax.core, jax.extend.core) ---------------------------------------
Atom = Var | Literal
Value = Any
ParamDict = dict


@contextlib.contextmanager
def eval_context():
  """Run the block with the eager trace current."""
  with set_current_trace(eval_trace):
    yield


def max_dim(d1, d2):
  """max(d1, d2) for dimension sizes."""
  return max(d1, d2)


def min_dim(d1, d2):
  """min(d1, d2) for dimension sizes."""
  return min(d1, d2)


def find_top_trace(xs):
  """The trace operations on `xs` would be interpreted by (the current trace, as in JAX)."""
  del xs
  return trace_ctx.trace


class OpaqueTraceState:
  """Identifies the current trace; equal when taken under the same trace."""
  __slots__ = ("_trace_ref",)

  def __init__(self, trace):
    self._trace_ref = weakref.ref(trace)

  def __eq__(self, other):
    return isinstance(other, OpaqueTraceState) and self._trace_ref() is other._trace_ref()

  def __hash__(self):
    return id(self._trace_ref())


def get_opaque_trace_state(convention=None):
  del convention
  return OpaqueTraceState(trace_ctx.trace)


@contextlib.contextmanager
def take_current_trace():
  """Yield the current trace with the eager trace current inside the block."""
  prev = trace_ctx.trace
  with set_current_trace(eval_trace):
    yield prev


def mapped_aval(size, axis, aval):
  """The aval of one slice of `aval` along `axis` (None: unmapped)."""
  if axis is None:
    return aval
  if aval.shape[axis] != size:
    raise ValueError(f"mapped_aval: axis {axis} of {aval} is not of size {size}")
  return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size, axis, aval, explicit_mesh_axis=None):
  """`aval` with a new axis of length `size` at `axis` (None: unchanged)."""
  del explicit_mesh_axis
  if axis is None:
    return aval
  return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=None, source_info=None, ctx=None):
  del effects, ctx
  # (arrax's source info is the equation's name stack, a tuple; of JAX's SourceInfo only the
  # traceback is kept)
  if type(source_info) is tuple or source_info is None:
    return JaxprEqn(invars, outvars, primitive, params, source_info)
  return JaxprEqn(invars, outvars, primitive, params, None,
                  getattr(source_info, "traceback", None))


def subjaxprs(jaxpr):
  """The jaxprs held by the params of `jaxpr`'s equations."""
  for eqn in jaxpr.eqns:
    yield from jaxprs_in_params(eqn.params)


def primal_dtype_to_tangent_dtype(primal_dtype):
  """float0 for integer and boolean primals, the dtype itself for inexact ones."""
  return primal_dtype if dtypes.issubdtype(primal_dtype, np.inexact) else dtypes.float0


def concrete_or_error(force, val, context=""):
  """`force(val)` for a concrete value; ConcretizationTypeError for a tracer."""
  if isinstance(val, Tracer):
    raise ConcretizationTypeError(val, context)
  return val if force is None else force(val)


def unsafe_am_i_under_a_jit_DO_NOT_USE():
  return type(trace_ctx.trace).__name__ == "JaxprTrace"
