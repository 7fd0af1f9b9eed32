"""`jax.api_util`: helpers for libraries that trace functions themselves (flattening a
function's pytree arguments and results, debug information)."""
import functools
import inspect
import operator
from typing import NamedTuple

from jaxlib.utils import safe_map  # noqa: F401  (jaxlib's length-checking map, as JAX's)

from arrax._src import batching, core
from arrax._src.linear_util import transformation_with_aux2
from arrax._src.tree_util import (keystr, tree_flatten, tree_flatten_with_path, tree_unflatten,
                                 treedef_children)


def _flatten_fun(f, store, in_tree, *args_flat):
  py_args, py_kwargs = tree_unflatten(in_tree, args_flat)
  out, out_tree = tree_flatten(f(*py_args, **py_kwargs))
  store.store(out_tree)
  return out


def flatten_fun(f, in_tree):
  """A flat-in/flat-out version of WrappedFun `f` whose inputs are the leaves of
  `(args, kwargs)` with treedef `in_tree`; returns it with a thunk giving the output treedef."""
  return transformation_with_aux2(_flatten_fun, f, in_tree)


def _flatten_fun_nokwargs(f, store, in_tree, *args_flat):
  out, out_tree = tree_flatten(f(*tree_unflatten(in_tree, args_flat)))
  store.store(out_tree)
  return out


def flatten_fun_nokwargs(f, in_tree):
  """Like `flatten_fun`, for a treedef of the positional arguments only."""
  return transformation_with_aux2(_flatten_fun_nokwargs, f, in_tree)


class DebugInfo(NamedTuple):
  """What a traced function was: why it was traced, where it is defined, its argument names."""
  traced_for: str
  func_src_info: str | None
  arg_names: tuple
  result_paths: tuple | None = None


def fun_sourceinfo(fun) -> str:
  """`name at file:line` of the function `fun` wraps (through partials and `__wrapped__`), or
  `<unknown>`."""
  while isinstance(fun, functools.partial):
    fun = fun.func
  fun = inspect.unwrap(fun)
  code = getattr(fun, "__code__", None)
  if code is None:
    return "<unknown>"
  return f"{getattr(fun, '__name__', '<unknown>')} at {code.co_filename}:{code.co_firstlineno}"


def result_paths(out_tree) -> tuple[str, ...] | None:
  """The results' names as JAX writes them (`result`, `result[0]`, `result[1]['c']`, ...);
  None for a pytree node that cannot hold placeholders."""
  n = out_tree.num_leaves
  try:
    paths = tree_flatten_with_path(tree_unflatten(out_tree, list(range(n))))[0]
  except Exception:   # noqa: BLE001
    return None
  if len(paths) != n:
    return None
  return tuple(f"result{keystr(p)}" for p, _ in paths)


def fun_signature(fun):
  try:
    return inspect.signature(fun)
  except (ValueError, TypeError):
    return None


def debug_info(traced_for, fun, args, kwargs, *, static_argnums=(), static_argnames=(),
               result_paths_thunk=None, sourceinfo=None, signature=None):
  """DebugInfo for tracing `fun` on example `args` and `kwargs` (static ones included and
  named by `static_argnums` / `static_argnames`)."""
  del result_paths_thunk
  if sourceinfo is None:
    code = getattr(getattr(fun, "__wrapped__", fun), "__code__", None)
    name = getattr(fun, "__name__", type(fun).__name__)
    sourceinfo = f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name
  names = _arg_names(signature or fun_signature(fun), args, kwargs, static_argnums,
                     static_argnames)
  return DebugInfo(traced_for, sourceinfo, names, None)


def _arg_names(sig, args, kwargs, static_argnums, static_argnames):
  """The names of the non-static argument leaves in jit's order (positional arguments, then
  keyword arguments sorted), with their pytree paths: `x`, `y['a']`; `args[0]`,
  `kwargs['k']` when the arguments do not bind to the signature."""
  static = object()
  n = len(args)
  nums = {i % n for i in static_argnums if -n <= i < n}
  args = [static if i in nums else x for i, x in enumerate(args)]
  kwargs = {k: static if k in static_argnames else x for k, x in kwargs.items()}
  try:
    bound = sig.bind(*args, **kwargs) if sig is not None else None
  except (TypeError, ValueError):
    bound = None
  if bound is None:
    ordered = [("args", args)] + [(f"kwargs['{k}']", kwargs[k]) for k in sorted(kwargs)]
  else:
    var_kw = next((p.name for p in sig.parameters.values() if p.kind == p.VAR_KEYWORD), None)
    ordered = [(k, x) for k, x in bound.arguments.items() if k not in kwargs and k != var_kw]
    ordered += [(k if k in bound.arguments else f"{var_kw}['{k}']", kwargs[k])
                for k in sorted(kwargs)]
  return tuple(name + keystr(path) for name, x in ordered
               for path, leaf in tree_flatten_with_path(x)[0] if leaf is not static)


def shaped_abstractify(x):
  """The abstract value of `x` (an array, a scalar, or anything with shape and dtype)."""
  try:
    return core.get_aval(x)
  except TypeError:
    return core.ShapedArray(x.shape, x.dtype, getattr(x, "weak_type", False))


# ---- static and donated arguments -----------------------------------------------------------
def ensure_index(x) -> int | tuple[int, ...]:
  """An index as an int, or a sequence of indices as a tuple (grad's `argnums`)."""
  x = core.concrete_or_error(None, x, "expected a static index or sequence of indices.")
  try:
    return operator.index(x)
  except TypeError:
    return tuple(map(operator.index, x))


def ensure_index_tuple(x) -> tuple[int, ...]:
  """An index or a sequence of indices (static_argnums, donate_argnums, ...) as a tuple."""
  x = core.concrete_or_error(None, x, "expected a static index or sequence of indices.")
  try:
    return (operator.index(x),)
  except TypeError:
    return tuple(map(operator.index, x))


def ensure_str_tuple(x) -> tuple[str, ...]:
  """A name or a sequence of names (static_argnames, donate_argnames) as a tuple."""
  return (x,) if isinstance(x, str) else tuple(x)


def validate_argnums_argnames(sig, argnums, argnames, kind):
  """ValueError, as JAX's jit raises when it is made, unless `{kind}_argnums` (`kind` is
  "static" or "donate") are positions and `{kind}_argnames` keyword names of `sig`."""
  params = sig.parameters.values()
  kinds = {p.kind for p in params}
  if argnums and inspect.Parameter.VAR_POSITIONAL not in kinds:
    n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    if -min(argnums) > n or max(argnums) >= n:
      raise ValueError(f"Jitted function has {kind}_argnums={argnums}, but only accepts {n} "
                       "positional arguments.")
  pos_only = {p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL)}
  if bad := pos_only & set(argnames):
    raise ValueError(f"Jitted function has invalid argnames {bad} in {kind}_argnames. These "
                     "are positional-only")
  if inspect.Parameter.VAR_KEYWORD in kinds:
    return
  keywords = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
  if bad := set(argnames) - keywords:
    raise ValueError(f"Jitted function has invalid argnames {bad} in {kind}_argnames. Function "
                     "does not take these args.")


def inbounds(num_args, argnums) -> tuple[int, ...]:
  """`argnums` made nonnegative; ValueError for one out of range of `num_args` arguments."""
  out = []
  for i in argnums:
    if not -num_args <= i < num_args:
      raise ValueError(
          "Positional argument indices, e.g. for `static_argnums`, must have value greater "
          "than or equal to -len(args) and less than len(args), but got value "
          f"{i} for len(args) == {num_args}.")
    out.append(i % num_args)
  return tuple(out)


class _Static:
  """A fixed argument as part of a cache key: equal only to a value of the very same type."""
  __slots__ = ("val",)

  def __init__(self, val):
    self.val = val

  def __hash__(self):
    return hash(self.val)

  def __eq__(self, other):
    return type(self.val) is type(other.val) and self.val == other.val


class _Unhashable:
  """A fixed argument kept by identity."""
  __slots__ = ("val",)

  def __init__(self, val):
    self.val = val


def _is_hashable(x):
  try:
    hash(x)
  except TypeError:
    return False
  return True


def _call_with_fixed(f, dyn_argnums, fixed, *dyn_args, **kwargs):
  args, fixed_it, dyn_it = [], iter(fixed), iter(dyn_args)
  for i in range(len(fixed) + len(dyn_args)):
    args.append(next(dyn_it) if i in dyn_argnums else next(fixed_it).val)
  return f(*args, **kwargs)


def argnums_partial(f, dyn_argnums, args, require_static_args_hashable=True):
  """(WrappedFun taking only the arguments at `dyn_argnums`, those arguments): the others are
  fixed to their values in `args` (and must be hashable unless told otherwise)."""
  dyn_argnums = inbounds(len(args), ensure_index_tuple(dyn_argnums))
  fixed = []
  for i, arg in enumerate(args):
    if i in dyn_argnums:
      continue
    if not require_static_args_hashable:
      fixed.append(_Unhashable(arg))
    elif not _is_hashable(arg):
      raise ValueError(
          "Non-hashable static arguments are not supported, as this can lead to unexpected "
          f"cache-misses. Static argument (index {i}) of type {type(arg)} for function "
          f"{f.__name__} is non-hashable.")
    else:
      fixed.append(_Static(arg))
  return (f.wrap(_call_with_fixed, dyn_argnums, tuple(fixed)),
          tuple(args[i] for i in dyn_argnums))


def donation_vector(donate_argnums, donate_argnames, in_tree, kws: bool = True
                    ) -> tuple[bool, ...]:
  """One flag per leaf of `in_tree` ((args, kwargs) if `kws`, else args): whether the
  positional argument (by index) or keyword argument (by name) it belongs to is donated."""
  if kws:
    args_tree, kwargs_tree = treedef_children(in_tree)
  else:
    args_tree, kwargs_tree = in_tree, None
  flags: list[bool] = []
  for i, sub in enumerate(treedef_children(args_tree)):
    flags += [i in donate_argnums] * sub.num_leaves
  if kwargs_tree is not None:
    names = kwargs_tree.node_data()[1]
    for name, sub in zip(names, treedef_children(kwargs_tree)):
      flags += [name in donate_argnames] * sub.num_leaves
  return tuple(flags)


def rebase_donate_argnums(donate_argnums, static_argnums) -> tuple[int, ...]:
  """Donated argument indices counted among the non-static arguments (sorted, unique)."""
  if not (static_argnums or donate_argnums):
    return tuple(sorted(donate_argnums))
  static = sorted(set(static_argnums))
  donated = sorted(set(donate_argnums))
  if set(static) & set(donated):
    raise ValueError(f"`static_argnums` {static} and `donate_argnums` {donated} cannot "
                     "intersect.")
  return tuple(d - sum(1 for s in static if s < d) for d in donated)


def flatten_axes(name, treedef, axis_tree, *, kws=False, tupled_args=False):
  """One axis spec per leaf of `treedef` from `axis_tree`, a tree prefix of it whose leaves
  are ints or None (vmap's in_axes rule); ValueError describing the mismatch otherwise."""
  try:
    return batching.flatten_axes(name, treedef, axis_tree, kws=kws)
  except ValueError as e:
    if not tupled_args:
      raise
    hint = (f" Note that {name} that are non-trivial pytrees should always be wrapped in a "
            "tuple representing the argument list.")
    msg = str(e)
    marker = "corresponding value; "
    raise ValueError(msg.replace(marker, marker + hint, 1)) from None
