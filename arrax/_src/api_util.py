"""`jax.api_util`: helpers for libraries that trace functions themselves (flattening a
function's pytree arguments and results, debug information)."""
import inspect
from typing import NamedTuple

from arrax._src import core
from arrax._src.linear_util import transformation_with_aux2
from arrax._src.tree_util import tree_flatten, tree_unflatten


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
  """DebugInfo for tracing `fun` on example `args` and `kwargs`."""
  del result_paths_thunk
  if sourceinfo is None:
    code = getattr(getattr(fun, "__wrapped__", fun), "__code__", None)
    name = getattr(fun, "__name__", type(fun).__name__)
    sourceinfo = f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name
  signature = signature or fun_signature(fun)
  names = []
  try:
    bound = signature.bind(*args, **kwargs) if signature else None
  except TypeError:
    bound = None
  if bound is not None:
    for i, (k, v) in enumerate(bound.arguments.items()):
      if i in static_argnums or k in static_argnames:
        continue
      leaves = tree_flatten(v)[0]
      names.extend([k] * len(leaves))
  return DebugInfo(traced_for, sourceinfo, tuple(names), None)


def shaped_abstractify(x):
  """The abstract value of `x` (an array, a scalar, or anything with shape and dtype)."""
  try:
    return core.get_aval(x)
  except TypeError:
    return core.ShapedArray(x.shape, x.dtype, getattr(x, "weak_type", False))
