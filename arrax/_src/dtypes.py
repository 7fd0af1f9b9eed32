"""Dtypes: canonicalization under jax_enable_x64, weak types, and JAX's promotion lattice."""
import abc
import functools
import warnings

import ml_dtypes
import numpy as np

from arrax._src.config import promotion_key as _promotion_key, x64_enabled
from arrax._src.config_flags import ExplicitX64Mode, explicit_x64_dtypes as _explicit_x64

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
# The tangent dtype of integer and boolean values.
float0 = np.dtype([("float0", np.void, 0)])

_float8_dtypes = tuple(np.dtype(getattr(ml_dtypes, n)) for n in (
    "float8_e4m3fn", "float8_e4m3b11fnuz", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e3m4", "float8_e4m3", "float8_e8m0fnu") if hasattr(ml_dtypes, n))
_custom_float_dtypes = (bfloat16,) + _float8_dtypes
_int4_dtypes = (np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4))
# Sub-byte types arrays can have (XLA's CPU runtime runs them, as in JAX).
_array_subbyte_dtypes = _int4_dtypes + tuple(np.dtype(getattr(ml_dtypes, n)) for n in (
    "int2", "uint2", "float4_e2m1fn") if hasattr(ml_dtypes, n))
# The other ml_dtypes types jax.numpy names (6-bit floats, 1-bit integers) are classified and
# promoted as JAX does but are not array dtypes (XLA's runtime rejects them; JAX fails too).
_more_float_dtypes = tuple(np.dtype(getattr(ml_dtypes, n)) for n in (
    "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
    "float8_e8m0fnu") if hasattr(ml_dtypes, n))
_more_int_dtypes = tuple(np.dtype(getattr(ml_dtypes, n)) for n in (
    "int2", "uint2", "int1", "uint1") if hasattr(ml_dtypes, n))
# Every small float (bfloat16 aside) and every sub-byte integer, as JAX's lattice places them.
_small_float_dtypes = _more_float_dtypes + _float8_dtypes
_all_custom_float_dtypes = (bfloat16,) + _small_float_dtypes
_intn_dtypes = _int4_dtypes + _more_int_dtypes
_unsigned_intn = frozenset(d for d in _intn_dtypes if d.name.startswith("u"))

supported_dtypes = frozenset([bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                              bfloat16, float16, float32, float64, complex64, complex128,
                              *_float8_dtypes, *_array_subbyte_dtypes])

_to_32bit = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}

python_scalar_dtypes = {bool: bool_, int: int64, float: float64, complex: complex128}


def check_python_int(x):
  """OverflowError if a Python int does not fit the default integer type (int32 unless x64).

  JAX refuses such values when it turns them into arrays or jit arguments.
  """
  if type(x) is int:
    dt = canonicalize_dtype(int64)
    info = np.iinfo(dt)
    if not info.min <= x <= info.max:
      raise OverflowError(f"The Python int {x} does not fit in {dt.name}, the default integer "
                          "type.")
  return x


@functools.lru_cache(maxsize=None)
def _canonicalize(x64, dtype):
  return dtype if x64 else _to_32bit.get(dtype, dtype)


def canonicalize_dtype(dtype):
  """The dtype arrax actually uses for `dtype` (64-bit types become 32-bit unless x64 is on)."""
  return _canonicalize(x64_enabled(), np.dtype(dtype))


def check_user_dtype(dtype, fun_name=None):
  """Validate a user-requested dtype and canonicalize it, warning if 64 bits are dropped."""
  if dtype is None:
    raise ValueError("dtype must be specified.")
  if isinstance(dtype, type) and dtype in python_scalar_dtypes:
    return default_dtype(np.dtype(python_scalar_dtypes[dtype]).kind)
  if (not isinstance(dtype, (type, np.dtype, str)) and hasattr(dtype, "shape")
      and hasattr(dtype, "dtype")):
    raise ValueError("Passing an array as a dtype argument is no longer supported; "
                     "instead of dtype=arr use dtype=arr.dtype.")
  try:
    dt = np.dtype(dtype)
  except TypeError as e:
    raise TypeError(f"dtype {dtype!r} not understood") from e
  if dt not in supported_dtypes and dt != float0:
    where = f" in {fun_name}" if fun_name else ""
    if dt in _more_float_dtypes or dt in _more_int_dtypes:
      raise TypeError(f"arrax does not support arrays of dtype {dt}{where}: XLA's runtime "
                      "has no such type (JAX fails on it too). Use float4_e2m1fn, float8_e4m3fn, "
                      "int2, int4 or a wider type.")
    raise TypeError(f"JAX only supports number, bool, and string dtypes, got dtype {dt}{where}")
  canonical = canonicalize_dtype(dt)
  if canonical != dt:
    where = f" requested in {fun_name}" if fun_name else ""
    if _explicit_x64.value == ExplicitX64Mode.ERROR:
      raise ValueError(
          f"Explicitly requested dtype {dt}{where} is not available. To enable more dtypes, set "
          "the jax_enable_x64 or allow_explicit_x64_dtypes configuration options.See "
          "https://github.com/jax-ml/jax#current-gotchas for more.")
    warnings.warn(
        f"Explicitly requested dtype {dt}{where} is not available, and will be truncated to "
        f"dtype {canonical.name}. To enable more dtypes, set the jax_enable_x64 configuration "
        "option or the JAX_ENABLE_X64 shell environment variable.", UserWarning, stacklevel=3)
  return canonical


def default_dtype(kind):
  """Default dtype for a kind: 'b', 'i', 'u', 'f', 'c'."""
  return canonicalize_dtype({"b": bool_, "i": int64, "u": uint64, "f": float64, "c": complex128}[kind])


def default_float_dtype():
  return canonicalize_dtype(float64)


def default_int_dtype():
  return canonicalize_dtype(int64)


_abstract = {np.generic, np.number, np.inexact, np.floating, np.integer,
             np.signedinteger, np.unsignedinteger, np.complexfloating, np.bool_}


# ---- extended dtypes (typed PRNG keys) -----------------------------------------------------------
class extended(np.generic):
  """The scalar class of extended dtypes (never instantiated): `issubdtype(key.dtype,
  extended)` holds for typed PRNG keys."""


class prng_key(extended):
  """The scalar class of PRNG key dtypes (never instantiated), for `issubdtype`."""


extended.__module__ = prng_key.__module__ = "jax.dtypes"


class ExtendedDType(abc.ABC):
  """The base of extended dtypes (such as `key<fry>`): `.type` is their scalar class."""
  __slots__ = ()

  @property
  @abc.abstractmethod
  def type(self) -> type: ...

  _rules = None


DType = np.dtype


def supports_inf(dtype) -> bool:
  """Whether `dtype` has infinities (not the finite-only float8 types, not integers)."""
  typ = np.dtype(dtype).type
  if typ in {ml_dtypes.float8_e4m3b11fnuz, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz,
             ml_dtypes.float8_e5m2fnuz}:
    return False
  return issubdtype(dtype, np.inexact)


def _is_dtype_class(x):
  return isinstance(x, type) and issubclass(x, np.generic)


def issubdtype(a, b):
  """np.issubdtype that also knows bfloat16, float4/6/8 and 1/2/4-bit integer (ml_dtypes)
  types and extended dtypes (typed PRNG keys)."""
  if a is None:
    return False
  if isinstance(a, ExtendedDType) or isinstance(b, ExtendedDType):
    if isinstance(a, ExtendedDType) and _is_dtype_class(b):
      return issubclass(a.type, b)
    return a == b
  if _is_dtype_class(b) and issubclass(b, extended):
    return _is_dtype_class(a) and issubclass(a, b)
  a = np.dtype(a)
  if a in _all_custom_float_dtypes or a in _intn_dtypes:
    if b in _abstract:
      parents = ({np.generic, np.number, np.inexact, np.floating}
                 if a in _all_custom_float_dtypes
                 else {np.generic, np.number, np.integer,
                       np.unsignedinteger if a in _unsigned_intn else np.signedinteger})
      return b in parents
    return a == np.dtype(b)
  return np.issubdtype(a, b)


def is_float(dtype):
  return np.dtype(dtype) in _all_custom_float_dtypes or np.dtype(dtype).kind == "f"


def is_inexact(dtype):
  return is_float(dtype) or np.dtype(dtype).kind == "c"


def finfo(dtype):
  return ml_dtypes.finfo(dtype)


def iinfo(dtype):
  return ml_dtypes.iinfo(dtype)


# ---- the promotion lattice -------------------------------------------------------------
# Nodes are dtypes plus the three weak categories of Python scalars: int, float, complex.
def _strict_lattice():
  """Strict promotion: only weak scalars promote, to a dtype of their kind or a higher weak
  kind (the same with or without x64)."""
  ints = [int8, int16, int32, int64, uint8, uint16, uint32, uint64, *_intn_dtypes]
  floats = [*_small_float_dtypes, bfloat16, float16, float32, float64]
  edges = {int: [float, *ints], float: [complex, *floats], complex: [complex64, complex128]}
  edges.update((t, []) for t in [bool_, *ints, *floats, complex64, complex128])
  return _upper_bounds_of(edges)


def _lattice(x64):
  i_, f_, c_ = int, float, complex
  edges = {
      bool_: [i_],
      i_: [uint8, int8] + list(_intn_dtypes),
      uint8: [int16, uint16], uint16: [int32, uint32], uint32: [int64, uint64] if x64 else [int32, uint64],
      uint64: [f_],
      int8: [int16], int16: [int32], int32: [int64], int64: [f_],
      f_: [*_small_float_dtypes, bfloat16, float16, c_],
      bfloat16: [float32], float16: [float32], float32: [float64, complex64], float64: [complex128],
      c_: [complex64], complex64: [complex128], complex128: [],
  }
  for t in _small_float_dtypes + _intn_dtypes:   # no implicit promotion out of these
    edges[t] = []
  return _upper_bounds_of(edges)


def _upper_bounds_of(edges):
  upper = {}
  for node in edges:
    seen, stack = {node}, [node]
    while stack:
      for nxt in edges[stack.pop()]:
        if nxt not in seen:
          seen.add(nxt)
          stack.append(nxt)
    upper[node] = seen
  return upper


# By promotion key (config.promotion_key): x64 + 2 * strict.
_upper_bounds = {0: _lattice(False), 1: _lattice(True)}
_upper_bounds[2] = _upper_bounds[3] = _strict_lattice()


class TypePromotionError(ValueError):
  """Dtypes with no implicit promotion path between them, under the current promotion mode
  (JAX's class of the same name)."""


def _no_promotion_reason(nodes):
  names = [getattr(n, "name", "") for n in nodes]
  for prefix, what, example in (("float8_", "8-bit floats", "float32"),
                                ("float6_", "6-bit floats", "float32"),
                                ("float4_", "4-bit floats", "float32")):
    if any(name.startswith(prefix) for name in names):
      break
  else:
    if not any(n in _intn_dtypes for n in nodes):
      return " Try explicitly casting inputs to the desired output type."
    what, example = "1-bit, 2-bit and 4-bit integers", "int32"
  return (f" To avoid unintended promotion, {what} do not support implicit promotion. If "
          "you'd like your inputs to be promoted to another type, you can do so explicitly "
          f"using e.g. x.astype('{example}')")


def _least_upper_bound(key, ordered):
  nodes = set(ordered)
  ub = _upper_bounds[key]
  try:
    common = set.intersection(*(ub[n] for n in nodes))
  except KeyError as e:
    raise ValueError(f"dtype={e.args[0]} is not a valid dtype for JAX type promotion.") from None
  lub = (common & nodes) or {c for c in common if common <= ub[c]}
  if len(lub) != 1:
    names = tuple(dict.fromkeys(str(n) for n in ordered))
    if key > 1:
      raise TypePromotionError(
          f"Input dtypes {names} have no available implicit dtype promotion path when "
          "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
          "output type, or set jax_numpy_dtype_promotion=standard.")
    raise TypePromotionError(f"Input dtypes {names} have no available implicit dtype "
                             "promotion path." + _no_promotion_reason(nodes))
  return lub.pop()


def _is_weak_node(node):
  return node is int or node is float or node is complex


def _node_dtype(node):
  if _is_weak_node(node):
    return default_dtype({int: "i", float: "f", complex: "c"}[node])
  return canonicalize_dtype(node)


def _weak_node(dtype):
  if dtype == bool_:
    return bool_
  if dtype in _all_custom_float_dtypes or dtype.kind == "f":
    return float
  if dtype in _intn_dtypes:
    return int
  return {"i": int, "u": int, "c": complex}[dtype.kind]


def dtype_and_weak_type(x):
  """(dtype, weak_type) of an array, tracer, Python scalar or dtype-like."""
  if type(x) in python_scalar_dtypes:
    return canonicalize_dtype(python_scalar_dtypes[type(x)]), type(x) is not bool
  aval = getattr(x, "aval", None)
  if aval is not None:
    return aval.dtype, aval.weak_type
  if isinstance(x, type) and x in python_scalar_dtypes:
    return canonicalize_dtype(python_scalar_dtypes[x]), x is not bool
  if hasattr(x, "dtype") and isinstance(x.dtype, np.dtype):
    return canonicalize_dtype(x.dtype), False
  try:
    dt = np.dtype(x)
  except TypeError:
    dt = np.result_type(x)
  if dt not in supported_dtypes and dt not in _more_float_dtypes + _more_int_dtypes:
    raise TypeError(f"Value '{x}' with dtype {dt} is not a valid JAX array type. "
                    "Only arrays of numeric types are supported by JAX.")
  return canonicalize_dtype(dt), False


@functools.lru_cache(maxsize=4096)
def _result_type_cached(key, pairs):
  if len(pairs) == 1:
    return pairs[0]
  dts = {d for d, _ in pairs}
  weaks = [w for _, w in pairs]
  if len(dts) == 1 and not all(weaks):
    return pairs[0][0], False
  if all(weaks) and key < 2:   # (strict mode joins the weak kinds themselves)
    node = _least_upper_bound(key, dts)
    return _node_dtype(node), True
  node = _least_upper_bound(key, {_weak_node(d) if w else d for d, w in pairs})
  weak = _is_weak_node(node)
  return _node_dtype(node), weak


def result_type(*args, return_weak_type_flag=False):
  """JAX's dtype promotion of arrays, scalars and dtypes."""
  if not args:
    raise ValueError("at least one array or dtype is required")
  pairs = tuple(dtype_and_weak_type(default_float_dtype() if a is None else a) for a in args)
  dt, weak = _result_type_cached(_promotion_key(), pairs)
  weak = weak and dt != bool_
  if weak:
    dt = default_dtype("f" if dt in _all_custom_float_dtypes else
                       "i" if dt in _intn_dtypes else dt.kind)
  return (dt, weak) if return_weak_type_flag else dt


def promote_types(a, b):
  """The join of two dtypes on JAX's promotion lattice, not canonicalized (as
  jnp.promote_types): Python's int, float and complex count as weak types, and a weak result is
  the 64-bit type of its kind."""
  nodes = [t if t is int or t is float or t is complex else np.dtype(t) for t in (a, b)]
  return np.dtype(_least_upper_bound(_promotion_key(), nodes))


def to_inexact_dtype(dtype):
  """The inexact dtype a computation on `dtype` promotes to (JAX's table: bool and integers up
  to 32 bits give float32, 64-bit integers float64; inexact dtypes are kept)."""
  dtype = np.dtype(dtype)
  if is_inexact(dtype):
    return dtype
  if dtype.kind in "iu" and dtype.itemsize == 8:
    return canonicalize_dtype(float64)
  return float32


def short_dtype_name(dtype):
  """`f32`, `i32`, `bool`, `bf16`, ... as jaxprs print them."""
  if isinstance(dtype, ExtendedDType):
    return dtype.name
  dtype = np.dtype(dtype)
  if dtype == float0:
    return "float0"
  if dtype == bool_:
    return "bool"
  name = dtype.name
  return (name.replace("float", "f").replace("uint", "u").replace("int", "i")
          .replace("complex", "c"))


# ---- primal/tangent dtypes (jax.experimental.primal_tangent_dtype) -----------------------------
class primal_tangent_dtype_scalar(extended):
  """The scalar class of primal/tangent dtypes (never instantiated)."""


primal_tangent_dtype_scalar.__module__ = "jax.dtypes"


class PrimalTangentDType(ExtendedDType):
  """An extended dtype stored as `primal_dtype` whose tangents have `tangent_dtype`."""
  __slots__ = ("primal_dtype", "tangent_dtype", "name")
  type = primal_tangent_dtype_scalar

  def __init__(self, primal_dtype, tangent_dtype, name):
    object.__setattr__(self, "primal_dtype", primal_dtype)
    object.__setattr__(self, "tangent_dtype", tangent_dtype)
    object.__setattr__(self, "name", name)

  def __setattr__(self, name, value):
    raise AttributeError(f"cannot assign to field '{name}'")

  def __eq__(self, other):
    return (type(other) is PrimalTangentDType and (self.primal_dtype, self.tangent_dtype,
                                                   self.name)
            == (other.primal_dtype, other.tangent_dtype, other.name))

  def __hash__(self):
    return hash((self.primal_dtype, self.tangent_dtype, self.name))

  def __repr__(self):
    return self.name

  __str__ = __repr__


def _short_dtype_name(dt) -> str:
  if isinstance(dt, ExtendedDType):
    return str(dt)
  return (dt.name.replace("float", "f").replace("uint", "u").replace("int", "i")
          .replace("complex", "c"))


def primal_tangent_dtype(primal_dtype, tangent_dtype, name=None) -> ExtendedDType:
  """A dtype whose values are stored as `primal_dtype` and whose tangents are `tangent_dtype`
  (named `PrimalTangentDType{f32/bf16}` unless `name` is given)."""
  primal_dtype, tangent_dtype = np.dtype(primal_dtype), np.dtype(tangent_dtype)
  name = name or (f"PrimalTangentDType{{{_short_dtype_name(primal_dtype)}"
                  f"/{_short_dtype_name(tangent_dtype)}}}")
  return PrimalTangentDType(primal_dtype, tangent_dtype, name)


class _CanonicalizeValueHandlers:
  """`jax.interpreters.xla.canonicalize_dtype_handlers`: `table[t](x)` is `x` as a NumPy array
  of the canonical dtype (64-bit types narrowed without x64); `table[t] = fn` makes arrax
  convert values of type `t` (exactly) with `fn` when they are passed to operations."""

  def __init__(self):
    self.registered = {}

  def __getitem__(self, key):
    return lambda x: _canonical_array(np.asarray(x))

  def __setitem__(self, key, value):
    self.registered[key] = value

  def __contains__(self, key):
    return True


def _canonical_array(x):
  dt = canonicalize_dtype(x.dtype) if x.dtype != float0 else x.dtype
  return x if dt == x.dtype else x.astype(dt)


canonicalize_value_handlers = _CanonicalizeValueHandlers()
