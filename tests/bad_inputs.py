"""Bad input everywhere: the public functions of arrax.numpy, arrax.lax, arrax.nn and arrax.random
called with wrong arguments, compared with JAX 0.10.2.

Cases are made by introspection: for every function name both libraries export, JAX's signature
gives the parameters; each required parameter gets a valid default chosen by its name (an array,
a shape, a dtype, a key, a callable), and the cases replace one argument at a time by a bad
value (a string, None, a mixed list, a dict, a complex/integer/bool array, a 0-d or rank-3
array, an empty array), give a keyword a bad value (axis out of range or not an integer, an
unknown dtype, a negative size), add an unknown keyword, or pass a tracer where a concrete value
is needed (`jit(lambda n: f(..., n))(3)`). Both libraries run each case; the outcome must be the
same: both succeed with the same result (values, dtype, shape, weak type) or both raise an
exception of the same class (compared by name).

`python -m tests.bad_inputs [numpy lax nn random]` runs the whole sweep and prints every
difference; tests/test_bad_input.py runs it in CI, one test per namespace slice.
"""
from __future__ import annotations

import collections
import dataclasses
import inspect
import sys
import warnings
from typing import Any, Callable

import numpy as np

from tests.oracle import ARRAX, JAX, assert_same

NAMESPACES = ("numpy", "lax", "nn", "random")

# Functions not called: they read or write files, change global state, block, print or
# take minutes on bad input; each with the reason.
SKIP = {
    ("numpy", "load"): "reads a file",
    ("numpy", "save"): "writes a file",
    ("numpy", "savez"): "writes a file",
    ("numpy", "fromfile"): "reads a file",
    ("numpy", "set_printoptions"): "changes global state",
    ("numpy", "printoptions"): "changes global state",
    ("numpy", "get_printoptions"): "reads global state",
    ("numpy", "printoptions"): "changes global state",
    ("lax", "infeed"): "blocks waiting for host data",
    ("lax", "outfeed"): "needs a host consumer",
}


# ---- argument values ----------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Key:
  """A legacy uint32 PRNG key, built in each library."""


@dataclasses.dataclass(frozen=True)
class Arr:
  """An array built in each library from NumPy values."""
  value: Any

  def __repr__(self):
    v = np.asarray(self.value)
    return f"Arr({v.dtype}{list(v.shape)})"


def _f32(shape=(3,)):
  return Arr(np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape) / 4)


def _identity(*args, **kw):
  return args[0] if args else None


CALLABLE_NAMES = {"fun", "f", "func", "pyfunc", "body_fun", "cond_fun", "true_fun", "false_fun",
                  "computation", "comparator", "callback", "function", "branch", "matvec",
                  "solve", "transpose_solve", "tangent_solve", "fn", "jvp", "fwd", "bwd",
                  "reducer", "combine_fn", "ufunc", "op", "init", "kernel_init"}
SHAPE_NAMES = {"shape", "newshape", "new_sizes", "sizes", "dimensions", "out_shape", "reps",
               "broadcast_shape", "tile_shape"}
INT_NAMES = {"n", "N", "k", "num", "size", "M", "length", "num_segments", "dimension", "kth",
             "repeats", "num_classes", "degree", "deg", "bits", "precision_config", "iterations",
             "upper", "lower", "start", "stop", "step", "num_samples", "window_size"}
INDEX_NAMES = {"indices", "index", "idx", "start_indices", "segment_ids", "i", "indexes",
               "choices", "ind", "sorter", "permutation", "mask"}


def default_value(ns, fname, pname):
  """A valid-looking value for parameter `pname` of `ns`.`fname`, chosen by its name."""
  if ns == "random" and pname == "key":
    return Key()
  if pname in CALLABLE_NAMES:
    return _identity
  if pname == "axis_name":
    return "i"
  if pname in ("new_dtype", "preferred_element_type"):
    return np.float32
  if pname in SHAPE_NAMES:
    return (3,)
  if pname == "dtype":
    return np.float32
  if pname in ("axis", "dimension", "axis1"):
    return 0
  if pname == "axis2":
    return 1
  if pname in ("axes", "dims", "permutation"):
    return (0,)
  if pname in INT_NAMES:
    return 3
  if pname in INDEX_NAMES:
    return Arr(np.array([0, 1, 2], np.int32))
  return _f32()


BAD_VALUES: dict[str, Callable[[], Any]] = {
    "str": lambda: "abc",
    "None": lambda: None,
    "mixed_list": lambda: [1.0, "a"],
    "dict": lambda: {"a": 1},
    "object": lambda: object(),
    "complex": lambda: Arr(np.array([1 + 2j, 3, -1j], np.complex64)),
    "int": lambda: Arr(np.array([1, -2, 3], np.int32)),
    "bool": lambda: Arr(np.array([True, False, True])),
    "float": lambda: _f32(),
    "rank0": lambda: Arr(np.float32(1.5)),
    "rank3": lambda: _f32((2, 3, 2)),
    "empty": lambda: Arr(np.zeros((0,), np.float32)),
    "float_scalar": lambda: 2.5,
    "neg_int": lambda: -1,
}

# Keyword parameters and bad values for them (used when the signature has the parameter).
BAD_KEYWORDS: dict[str, list[Any]] = {
    "axis": [5, -7, "a", 1.5, (0, 0)],
    "dtype": ["notadtype", np.complex64, np.int32, object],
    "shape": [(-1,), (2.5,), "abc"],
    "n": [-1, 2.5],
    "num": [-1],
    "size": [-1],
    "k": [2.5],
    "keepdims": ["yes"],
    "ord": ["bad"],
    "mode": ["bogus"],
    "method": ["bogus"],
    "side": ["middle"],
    "precision": ["bogus"],
    "out": [_f32()],
    "where": [Arr(np.array([True, False]))],
    "axes": [(5,), (0, 0)],
}

# Parameters that must be concrete (static); a tracer is passed for them under jit.
CONCRETE = {"shape", "newshape", "axis", "axes", "n", "num", "size", "k", "N", "M", "length",
            "num_segments", "dimension", "repeats", "total_repeat_length", "kth", "num_classes",
            "new_sizes", "sizes", "reps", "deg", "bits", "dimensions", "keepdims"}


# ---- building each library's call -------------------------------------------------------------
def build(value, lib):
  """`value` with Arr/Key markers made into `lib`'s arrays, through lists, tuples and dicts."""
  if isinstance(value, Arr):
    return lib.np.asarray(value.value)
  if isinstance(value, Key):
    return lib.np.asarray(np.array([0, 42], np.uint32))
  if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
    return type(value)(build(v, lib) for v in value)
  if isinstance(value, dict):
    return {k: build(v, lib) for k, v in value.items()}
  return value


def lookup(lib, ns, name):
  return getattr(getattr(lib.top, ns), name)


@dataclasses.dataclass
class Case:
  ns: str
  name: str
  label: str
  args: tuple
  kwargs: dict
  traced: str | None = None   # a keyword passed as a jit argument (a tracer)

  def __str__(self):
    return f"{self.ns}.{self.name}[{self.label}]"

  def thunk(self, lib, abstract=False):
    """The call in `lib`; `abstract`: under eval_shape (traced, nothing compiled or run)."""
    run = self._thunk(lib)
    if abstract:
      return lambda: lib.top.eval_shape(run)
    return run

  def _thunk(self, lib):
    fn = lookup(lib, self.ns, self.name)
    args = [build(a, lib) for a in self.args]
    kwargs = {k: build(v, lib) for k, v in self.kwargs.items()}
    if self.traced is None:
      return lambda: fn(*args, **kwargs)
    value = kwargs.pop(self.traced)

    def traced(t):
      return fn(*args, **{self.traced: t}, **kwargs)
    return lambda: lib.top.jit(traced)(value)


def _signature(ns, name):
  try:
    return inspect.signature(lookup(JAX, ns, name))
  except (TypeError, ValueError):
    return None


def names(ns):
  """Callable public names both libraries export in namespace `ns` (classes excluded)."""
  jm, am = getattr(JAX.top, ns), getattr(ARRAX.top, ns)
  out = []
  for n in sorted(dir(jm)):
    if n.startswith("_") or not hasattr(am, n) or (ns, n) in SKIP:
      continue
    obj = getattr(jm, n)
    if inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj):
      continue
    if type(obj).__name__ in ("_ScalarMeta",):
      continue
    out.append(n)
  return out


def cases(ns, name):
  """The bad-input cases of `ns`.`name` (empty when JAX's signature is unknown)."""
  sig = _signature(ns, name)
  if sig is None:
    return []
  params = list(sig.parameters.values())
  pos = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
         and p.default is p.empty]
  var = any(p.kind == p.VAR_POSITIONAL for p in params)
  kw_required = {p.name: default_value(ns, name, p.name) for p in params
                 if p.kind == p.KEYWORD_ONLY and p.default is p.empty}
  base = [default_value(ns, name, p.name) for p in pos]
  names_ = [p.name for p in pos]
  if var and not base:
    base, names_ = [_f32(), _f32()], ["*0", "*1"]
  out = [Case(ns, name, "valid", tuple(base), dict(kw_required))]
  for i, pname in enumerate(names_[:2]):
    for label, make in BAD_VALUES.items():
      if i > 0 and label not in ("str", "None", "complex", "rank3", "int"):
        continue
      args = list(base)
      args[i] = make()
      out.append(Case(ns, name, f"{pname}={label}", tuple(args), dict(kw_required)))
  has_kwargs = any(p.kind == p.VAR_KEYWORD for p in params)
  by_name = {p.name: p for p in params}
  for kw, bads in BAD_KEYWORDS.items():
    p = by_name.get(kw)
    if p is None or p.kind == p.POSITIONAL_ONLY:
      continue
    for j, bad in enumerate(bads):
      if p in pos:
        args = list(base)
        args[names_.index(kw)] = bad
        out.append(Case(ns, name, f"{kw}=bad{j}", tuple(args), dict(kw_required)))
      else:
        out.append(Case(ns, name, f"{kw}=bad{j}", tuple(base), dict(kw_required, **{kw: bad})))
  if not has_kwargs:
    out.append(Case(ns, name, "unknown_kw", tuple(base), dict(kw_required, bogus_keyword=1)))
  for kw in CONCRETE:
    p = by_name.get(kw)
    if p is None or p.kind == p.POSITIONAL_ONLY:
      continue
    value = default_value(ns, name, kw) if p.default is p.empty or p.default is None else (
        p.default)
    if not isinstance(value, (int, tuple)) or isinstance(value, bool) and kw != "keepdims":
      continue
    kwargs = dict(kw_required)
    args = list(base)
    if p in pos:
      idx = names_.index(kw)
      args, rest = args[:idx], [(n, a) for n, a in zip(names_[idx + 1:], base[idx + 1:])]
      kwargs.update(rest)
    kwargs[kw] = value
    out.append(Case(ns, name, f"traced_{kw}", tuple(args), kwargs, traced=kw))
  return out


# ---- accepted differences ----------------------------------------------------------------------
# Where the two libraries raise different classes, the difference is accepted only by one of these
# rules (each counted and reported by the tests, which bound the counts):
JAX_INTERNAL = {"AttributeError", "AssertionError", "MLIRError", "KeyError", "UFuncTypeError",
                "OverflowError", "ZeroDivisionError"}
RULES = {
    "jax-internal": "JAX lets an internal exception through (AttributeError from a missing "
                    ".shape, an AssertionError, an MLIR verifier error, ...) where arrax raises "
                    "a TypeError/ValueError/IndexError naming the argument.",
    "more-specific": "arrax raises a JAX error subclass of the builtin class JAX raises "
                     "(TracerIntegerConversionError where JAX raises TypeError): `except "
                     "TypeError` catches both.",
    "garbage-first": "a non-array value (str, None, dict, object, mixed list) where an array is "
                     "expected: arrax rejects it with TypeError ('not a valid JAX type') before "
                     "checking the other arguments, JAX checks another argument first (a "
                     "ValueError/IndexError about shapes or axes).",
}
_GARBAGE = ("str", "None", "dict", "object", "mixed_list")
_BUILTIN = {"TypeError": TypeError, "ValueError": ValueError, "IndexError": IndexError}


def accepted(case, arrax_exc, jax_exc):
  """The RULES entry that accepts this pair of different exceptions, or None."""
  a, j = type(arrax_exc).__name__, type(jax_exc).__name__
  public = isinstance(arrax_exc, (TypeError, ValueError, IndexError))
  if j in JAX_INTERNAL and public and a not in JAX_INTERNAL:
    return "jax-internal"
  if j in _BUILTIN and isinstance(arrax_exc, _BUILTIN[j]):
    return "more-specific"
  if (a == "TypeError" and j in ("ValueError", "IndexError")
      and case.label.split("=")[-1] in _GARBAGE):
    return "garbage-first"
  return None


# ---- running and comparing -------------------------------------------------------------------
def _outcome(thunk):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try:
      return True, thunk()
    except Exception as e:  # noqa: BLE001
      return False, e


def _is_key(x):
  dt = getattr(x, "dtype", None)
  return dt is not None and "key<" in str(dt)


def _same_results(a, e):
  try:
    return _compare_results(a, e)
  except Exception as err:  # noqa: BLE001
    return f"results not comparable: {type(err).__name__}: {err}"


def _compare_results(a, e):
  import jax
  import arrax
  a_leaves, a_tree = arrax.tree_util.tree_flatten(a)
  e_leaves, e_tree = jax.tree_util.tree_flatten(e)
  if str(a_tree).replace("arrax", "jax") != str(e_tree):
    return f"trees differ: {a_tree} vs {e_tree}"
  for al, el in zip(a_leaves, e_leaves):
    if type(el).__name__ == "ShapeDtypeStruct" and _is_key(el):
      if str(getattr(al, "dtype", None)) != str(el.dtype) or al.shape != el.shape:
        return f"results differ: {al} vs {el}"
      continue
    if _is_key(el) or _is_key(al):
      if _is_key(el) != _is_key(al):
        return "typed key vs array"
      al, el = arrax.random.key_data(al), jax.random.key_data(el)
    if type(el).__name__ == "ShapeDtypeStruct":
      same = (type(al).__name__ == "ShapeDtypeStruct" and al.shape == el.shape
              and al.dtype == el.dtype and al.weak_type == el.weak_type)
      if not same:
        return f"results differ: {al} vs {el}"
    elif isinstance(el, (jax.Array, np.ndarray, np.generic)):
      try:
        assert_same(al, el, tol=(1e-4, 1e-5), check_type=False, signbits=None)
      except AssertionError as err:
        return f"results differ: {str(err)[:300]}"
    elif callable(el) or hasattr(el, "__dict__"):
      if type(al).__name__ != type(el).__name__:
        return f"result types differ: {type(al).__name__} vs {type(el).__name__}"
    elif al != el and not (al is el):
      try:
        if np.dtype(al) == np.dtype(el):
          continue
      except TypeError:
        pass
      return f"results differ: {al!r} vs {el!r}"
  return None


def compare(case, abstract=False, rules=None):
  """None when arrax and JAX give the same outcome on `case`, else a description.
  `abstract`: both run under eval_shape first (shapes, dtypes and errors; nothing compiles);
  where the outcomes differ the case runs again eagerly, which decides (under eval_shape the
  closed-over arrays are staged, so a library may fail a value check there, or pass one that
  only lowering makes, where it would not eagerly).
  `rules`: a Counter; differences a RULES entry accepts count there instead."""
  d = _compare(case, abstract, rules)
  if d is not None and abstract:
    d = _compare(case, False, rules)
  return d


def _compare(case, abstract, rules):
  try:
    jthunk = case.thunk(JAX, abstract)
  except Exception as e:  # noqa: BLE001
    return f"case build failed for JAX: {type(e).__name__}: {e}"
  ok_j, rj = _outcome(jthunk)
  ok_a, ra = _outcome(case.thunk(ARRAX, abstract))
  if not ok_j and not ok_a:
    if type(ra).__name__ == type(rj).__name__:
      return None
    rule = None if rules is None else accepted(case, ra, rj)
    if rule is not None:
      rules[rule] += 1
      return None
    return (f"arrax raised {type(ra).__name__}: {str(ra)[:300]}\n"
            f"  JAX raised {type(rj).__name__}: {str(rj)[:300]}")
  if not ok_j:
    return f"JAX raised {type(rj).__name__}: {str(rj)[:300]}\n  arrax returned {ra!r:.200}"
  if not ok_a:
    return f"arrax raised {type(ra).__name__}: {str(ra)[:300]}\n  JAX returned {rj!r:.200}"
  return _same_results(ra, rj)


def sweep(namespaces=NAMESPACES, select=None, verbose=False, abstract=False, labels=None,
          rules=None):
  """Run every case; returns {case string: difference}. `select(ns, name)` filters functions,
  `labels(label)` cases; `rules` (a Counter) counts the differences RULES accept."""
  diffs = {}
  for ns in namespaces:
    for name in names(ns):
      if select is not None and not select(ns, name):
        continue
      for case in cases(ns, name):
        if labels is not None and not labels(case.label):
          continue
        if verbose:
          print(case, file=sys.stderr, flush=True)
        d = compare(case, abstract, rules)
        if d is not None:
          diffs[str(case)] = d
  return diffs


if __name__ == "__main__":
  flags = {a for a in sys.argv[1:] if a.startswith("-")}
  todo = [a for a in sys.argv[1:] if not a.startswith("-")] or NAMESPACES
  rules = None if "--strict" in flags else collections.Counter()
  diffs = sweep(todo, verbose="-v" in flags, abstract="--abstract" in flags, rules=rules)
  for k, v in diffs.items():
    print(f"{k}: {v}")
  print(f"{len(diffs)} differences; accepted by rule: {dict(rules or {})}")


# ---- the transformations' own arguments ------------------------------------------------------
def _sq(x):
  return x * x


def _vec(lib):
  return lib.np.arange(3.0)


TRANSFORM_CASES = {
    # jit
    "jit_not_callable": lambda lib: lib.top.jit(3),
    "jit_string": lambda lib: lib.top.jit("f"),
    "jit_unknown_kw": lambda lib: lib.top.jit(_sq, bogus=1),
    "jit_static_argnums_str": lambda lib: lib.top.jit(_sq, static_argnums="a")(2.0),
    "jit_static_argnums_out_of_range": lambda lib: lib.top.jit(_sq, static_argnums=3)(2.0),
    "jit_static_argnames_unknown": lambda lib: lib.top.jit(_sq, static_argnames="y")(2.0),
    "jit_unhashable_static": lambda lib: lib.top.jit(lambda x, n: x * len(n),
                                                     static_argnums=1)(2.0, [1, 2]),
    "jit_dict_static": lambda lib: lib.top.jit(lambda x, n: x, static_argnums=1)(2.0, {"a": 1}),
    "jit_array_static": lambda lib: lib.top.jit(lambda x, n: x, static_argnums=1)(2.0, _vec(lib)),
    "jit_str_arg": lambda lib: lib.top.jit(_sq)("abc"),
    "jit_none_arg": lambda lib: lib.top.jit(lambda x: x)(None),
    "jit_object_arg": lambda lib: lib.top.jit(lambda x: x)(object()),
    "jit_returns_str": lambda lib: lib.top.jit(lambda x: "s")(1.0),
    "jit_returns_object": lambda lib: lib.top.jit(lambda x: object())(1.0),
    "jit_too_many_args": lambda lib: lib.top.jit(_sq)(1.0, 2.0),
    "jit_missing_arg": lambda lib: lib.top.jit(_sq)(),
    "jit_donate_bad": lambda lib: lib.top.jit(_sq, donate_argnums="x"),
    "jit_zeros_traced_shape": lambda lib: lib.top.jit(lambda n: lib.np.zeros(n))(3),
    "jit_zeros_traced_tuple": lambda lib: lib.top.jit(lambda n: lib.np.zeros((n, 2)))(3),
    "jit_arange_traced": lambda lib: lib.top.jit(lambda n: lib.np.arange(n))(3),
    "jit_reshape_traced": lambda lib: lib.top.jit(lambda x, n: x.reshape(n))(_vec(lib), 3),
    "jit_int_tracer": lambda lib: lib.top.jit(lambda x: int(x))(1.0),
    "jit_float_tracer": lambda lib: lib.top.jit(lambda x: float(x))(1.0),
    "jit_bool_tracer": lambda lib: lib.top.jit(lambda x: 1 if x > 0 else 0)(1.0),
    "jit_index_tracer": lambda lib: lib.top.jit(lambda n: list(range(n)))(3),
    "jit_numpy_of_tracer": lambda lib: lib.top.jit(lambda x: np.asarray(x))(1.0),
    "jit_hex_tracer": lambda lib: lib.top.jit(lambda n: hex(n))(3),
    "jit_nonzero_no_size": lambda lib: lib.top.jit(lambda x: lib.np.nonzero(x))(_vec(lib)),
    "jit_bool_index": lambda lib: lib.top.jit(lambda x: x[x > 1])(_vec(lib)),
    # grad
    "grad_not_callable": lambda lib: lib.top.grad(3)(1.0),
    "grad_int_input": lambda lib: lib.top.grad(_sq)(3),
    "grad_int_array_input": lambda lib: lib.top.grad(lambda x: x.sum())(lib.np.arange(3)),
    "grad_complex_input": lambda lib: lib.top.grad(lambda x: x.real)(1j + 1.0),
    "grad_vector_output": lambda lib: lib.top.grad(_sq)(_vec(lib)),
    "grad_str_output": lambda lib: lib.top.grad(lambda x: "s")(1.0),
    "grad_argnums_out_of_range": lambda lib: lib.top.grad(_sq, argnums=3)(1.0),
    "grad_argnums_str": lambda lib: lib.top.grad(_sq, argnums="a")(1.0),
    "grad_argnums_float": lambda lib: lib.top.grad(_sq, argnums=0.5)(1.0),
    "grad_has_aux_not_pair": lambda lib: lib.top.grad(_sq, has_aux=True)(1.0),
    "grad_str_input": lambda lib: lib.top.grad(_sq)("abc"),
    "grad_none_input": lambda lib: lib.top.grad(lambda x: 1.0)(None),
    "grad_unknown_kw": lambda lib: lib.top.grad(_sq, bogus=1),
    "value_and_grad_vector": lambda lib: lib.top.value_and_grad(_sq)(_vec(lib)),
    "grad_bool_tracer": lambda lib: lib.top.grad(lambda x: x if x > 0 else -x)(1.0),
    # vmap
    "vmap_not_callable": lambda lib: lib.top.vmap(3)(_vec(lib)),
    "vmap_axis_out_of_range": lambda lib: lib.top.vmap(_sq, in_axes=2)(_vec(lib)),
    "vmap_negative_axis_out_of_range": lambda lib: lib.top.vmap(_sq, in_axes=-3)(_vec(lib)),
    "vmap_in_axes_str": lambda lib: lib.top.vmap(_sq, in_axes="a")(_vec(lib)),
    "vmap_in_axes_float": lambda lib: lib.top.vmap(_sq, in_axes=0.5)(_vec(lib)),
    "vmap_in_axes_list": lambda lib: lib.top.vmap(_sq, in_axes=[0])(_vec(lib)),
    "vmap_in_axes_wrong_tree": lambda lib: lib.top.vmap(lambda a, b: a + b, in_axes=(0, 0, 0))(
        _vec(lib), _vec(lib)),
    "vmap_sizes_differ": lambda lib: lib.top.vmap(lambda a, b: a + b)(
        _vec(lib), lib.np.ones(4)),
    "vmap_scalar_input": lambda lib: lib.top.vmap(_sq)(1.0),
    "vmap_all_none": lambda lib: lib.top.vmap(_sq, in_axes=None)(_vec(lib)),
    "vmap_out_axes_out_of_range": lambda lib: lib.top.vmap(_sq, out_axes=3)(_vec(lib)),
    "vmap_axis_size_mismatch": lambda lib: lib.top.vmap(_sq, axis_size=5)(_vec(lib)),
    "vmap_str_arg": lambda lib: lib.top.vmap(_sq)("abc"),
    "vmap_none_arg": lambda lib: lib.top.vmap(lambda x: x, in_axes=0)(None),
    "vmap_empty_args": lambda lib: lib.top.vmap(lambda: 1.0)(),
    "vmap_unknown_kw": lambda lib: lib.top.vmap(_sq, bogus=1),
    "vmap_axis_name_unhashable": lambda lib: lib.top.vmap(_sq, axis_name=["i"])(_vec(lib)),
    # jvp / vjp / linearize
    "jvp_primals_not_tuple": lambda lib: lib.top.jvp(_sq, 1.0, 1.0),
    "jvp_tangent_dtype": lambda lib: lib.top.jvp(_sq, (1.0,), (lib.np.float16(1.0),)),
    "jvp_tangent_shape": lambda lib: lib.top.jvp(_sq, (_vec(lib),), (lib.np.ones(4),)),
    "jvp_length_mismatch": lambda lib: lib.top.jvp(_sq, (1.0,), (1.0, 2.0)),
    "jvp_int_primal_float_tangent": lambda lib: lib.top.jvp(_sq, (3,), (1.0,)),
    "jvp_str_primal": lambda lib: lib.top.jvp(_sq, ("a",), ("a",)),
    "jvp_list_primals": lambda lib: lib.top.jvp(_sq, [1.0], [1.0]),
    "vjp_cotangent_shape": lambda lib: lib.top.vjp(_sq, _vec(lib))[1](lib.np.ones(4)),
    "vjp_cotangent_dtype": lambda lib: lib.top.vjp(_sq, _vec(lib))[1](lib.np.ones(3, "float16")),
    "vjp_cotangent_tree": lambda lib: lib.top.vjp(_sq, _vec(lib))[1]((_vec(lib), _vec(lib))),
    "vjp_not_callable": lambda lib: lib.top.vjp(3, 1.0),
    "vjp_str_primal": lambda lib: lib.top.vjp(_sq, "abc"),
    "linearize_str": lambda lib: lib.top.linearize(_sq, "abc"),
    "jacfwd_int": lambda lib: lib.top.jacfwd(_sq)(3),
    "jacrev_int": lambda lib: lib.top.jacrev(_sq)(3),
    "hessian_vector_out": lambda lib: lib.top.hessian(_sq)(_vec(lib)).shape,
    # pmap
    "pmap_too_many": lambda lib: lib.top.pmap(_sq)(lib.np.ones((5, 2))),
    "pmap_scalar": lambda lib: lib.top.pmap(_sq)(1.0),
    "pmap_axis_out_of_range": lambda lib: lib.top.pmap(_sq, in_axes=3)(lib.np.ones((1, 2))),
    "pmap_not_callable": lambda lib: lib.top.pmap(3),
    "pmap_static_unhashable": lambda lib: lib.top.pmap(lambda x, n: x, static_broadcasted_argnums=1)(
        lib.np.ones((1, 2)), [1]),
    # others
    "make_jaxpr_not_callable": lambda lib: lib.top.make_jaxpr(3)(1.0),
    "make_jaxpr_str_arg": lambda lib: lib.top.make_jaxpr(_sq)("abc"),
    "eval_shape_str": lambda lib: lib.top.eval_shape(_sq, "abc"),
    "device_put_str": lambda lib: lib.top.device_put("abc"),
    "device_put_object": lambda lib: lib.top.device_put(object()),
    "checkpoint_not_callable": lambda lib: lib.top.checkpoint(3)(1.0),
    "custom_jvp_not_callable": lambda lib: lib.top.custom_jvp(3)(1.0),
    "tree_map_not_callable": lambda lib: lib.top.tree_util.tree_map(3, [1.0]),
    "block_until_ready_str": lambda lib: lib.top.block_until_ready("abc"),
    "cond_non_scalar_pred": lambda lib: lib.top.lax.cond(_vec(lib), _sq, _sq, 1.0),
    "cond_branch_mismatch": lambda lib: lib.top.lax.cond(True, lambda x: x, lambda x: (x, x), 1.0),
    "while_non_bool_cond": lambda lib: lib.top.lax.while_loop(lambda c: c, lambda c: c - 1, 3.0),
    "scan_carry_mismatch": lambda lib: lib.top.lax.scan(lambda c, x: (c * 1.5, x), 1, _vec(lib)),
    "scan_length_mismatch": lambda lib: lib.top.lax.scan(lambda c, x: (c, x), 0.0, _vec(lib),
                                                         length=5),
    "fori_float_bounds": lambda lib: lib.top.lax.fori_loop(0.0, 3.0, lambda i, c: c, 1.0),
    "switch_float_index": lambda lib: lib.top.lax.switch(1.5, [_sq, _sq], 1.0),
}


# Cases where the difference is accepted, with the reason.
TRANSFORM_ALLOWED = {
    "vjp_str_primal": "JAX raises its internal InvalidInputException (a TypeError subclass not "
                      "exported in jax.errors); arrax raises TypeError with the same message.",
    "pmap_axis_out_of_range": "JAX lets IndexError('tuple index out of range') through; arrax "
                              "raises vmap's ValueError naming the axis and the rank.",
}


def compare_transform(name):
  """None when TRANSFORM_CASES[name] has the same outcome in both libraries, else why."""
  make = TRANSFORM_CASES[name]
  ok_j, rj = _outcome(lambda: make(JAX))
  ok_a, ra = _outcome(lambda: make(ARRAX))
  if not ok_j and not ok_a:
    if type(ra).__name__ == type(rj).__name__:
      return None
    return (f"arrax raised {type(ra).__name__}: {str(ra)[:300]}\n"
            f"  JAX raised {type(rj).__name__}: {str(rj)[:300]}")
  if ok_j != ok_a:
    return (f"JAX {'returned ' + repr(rj)[:100] if ok_j else 'raised ' + type(rj).__name__}: "
            f"{'' if ok_j else str(rj)[:300]}\n  arrax "
            f"{'returned ' + repr(ra)[:100] if ok_a else 'raised ' + type(ra).__name__}: "
            f"{'' if ok_a else str(ra)[:300]}")
  if callable(rj) or callable(ra):
    return None if callable(rj) == callable(ra) else "one returned a function"
  return _same_results(ra, rj)
