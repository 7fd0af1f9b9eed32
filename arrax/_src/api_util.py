"""`jax.api_util`: helpers for libraries that trace functions themselves (flattening a
function's pytree arguments and results, debug information)."""
import inspect
from typing import NamedTuple

from arrax._src import core
from arrax._src.linear_util import transformation_with_aux2
from arrax._src.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten


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
