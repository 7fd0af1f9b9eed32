"""Host callbacks for debugging: `arrax.debug.print`, `arrax.debug.log` and `arrax.debug.callback`.

Under jit the callback is a side-effecting custom call (`xla_ffi_python_cpu_callback`, which jaxlib
registers statically) that hands the operands to Python every time the compiled program runs;
eagerly the callback is simply called. The user's function receives arrax Arrays, as JAX's
receives jax Arrays. Non-array arguments (strings, objects) are kept out of the computation and
passed back as they are.

Two primitives, as in JAX: `debug_callback` (any function) and `debug_print` (a format string
with its arguments, formatted with the NumPy print options current when it was traced). Both
have no results, so nothing drops them; under vmap they run once per example, in order; under
differentiation they see the primal values only.
"""
from __future__ import annotations

import copy
import functools
import logging
import os
import string
import sys

import numpy as np

from arrax._src import core
from arrax._src.tree_util import tree_flatten, tree_unflatten
from arrax._src.array import Array, device_put_value
from arrax._src.lax import shape_ops
from arrax._src.callback import emit_python_callback

logger = logging.getLogger(__name__)


class DebugEffect:
  """The effect of an unordered debug callback (printed `Debug`)."""
  __str__ = __repr__ = lambda self: "Debug"


class OrderedDebugEffect:
  """The effect of an ordered debug callback (printed `OrderedDebug`)."""
  __str__ = __repr__ = lambda self: "OrderedDebug"


debug_effect = DebugEffect()
ordered_debug_effect = OrderedDebugEffect()


def _as_array(x):
  """An operand as the arrax Array the user's callback receives."""
  if isinstance(x, Array):
    return x
  if isinstance(x, core.Literal):
    return device_put_value(x.val, dtype=x.aval.dtype, weak_type=x.aval.weak_type)
  return device_put_value(x)


def _run_callback(callback, args):
  try:
    callback(*args)
  except BaseException:
    logger.exception("jax.debug.callback failed")
    raise


def _lower_debug(ctx, args, flat_callback):
  """Debug callbacks are always chained on the ordered-effects token (see below)."""
  def host_fn(*arrays):
    _run_callback(flat_callback, [device_put_value(a) for a in arrays])
    return ()
  return emit_python_callback(ctx, host_fn, args, ordered=True)


def _debug_batch(prim):
  def rule(args, dims, **params):
    """Under vmap the callback runs once per example, in order."""
    size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
    for i in range(size):
      prim.bind(*[x if d is None else shape_ops.index_in_dim(x, i, d, False)
                  for x, d in zip(args, dims)], **params)
    return [], []
  return rule


# ---- debug_callback -------------------------------------------------------------------------
debug_callback_p = core.Primitive("debug_callback")
debug_callback_p.multiple_results = True
# Unordered debug callbacks are chained too (JAX leaves their order to XLA, which in practice
# keeps program order; chaining makes that certain).
debug_callback_p.ordered_effect = True
debug_callback_p.effects_of = lambda params: {params["effect"]}


@debug_callback_p.def_abstract_eval
def _debug_callback_abstract_eval(*avals, callback, effect, partitioned):
  return []


@debug_callback_p.def_impl
def _debug_callback_impl(*args, callback, effect, partitioned):
  _run_callback(callback, [_as_array(a) for a in args])
  return []


@debug_callback_p.def_lowering
def _debug_callback_lowering(ctx, *args, callback, effect, partitioned):
  return _lower_debug(ctx, args, callback)


debug_callback_p.def_batch(_debug_batch(debug_callback_p))
debug_callback_p.def_jvp(lambda primals, tangents, **params: (
    debug_callback_p.bind(*primals, **params), []))
debug_callback_p.def_transpose(lambda ct, *args, **params: [None] * len(args))


def _split_callback_args(args, kwargs):
  """(in_tree, array leaves, {position: non-array leaf})."""
  flat, in_tree = tree_flatten((args, kwargs))
  dyn, static = [], {}
  for i, a in enumerate(flat):
    if core.valid_jaxtype(a) or isinstance(a, core.Tracer):
      dyn.append(a)
    else:
      static[i] = a
  return in_tree, dyn, static


def _merge_callback_args(in_tree, dyn, static):
  static = dict(static)
  it = iter(dyn)
  flat = [static[i] if i in static else next(it) for i in range(len(static) + len(dyn))]
  return tree_unflatten(in_tree, flat)


def _call_or_configure(name, fn, first, args, kwargs):
  """The two call forms of `debug.print` and `debug.callback`: `fn(first, *args, **kwargs)`
  now, or, when `first` is None, `fn` itself (the options given, the arguments to come)."""
  if first is not None:
    fn(first, *args, **kwargs)
    return None
  if args or kwargs:
    raise TypeError(f"{name} received unexpected arguments in the two-call form:"
                    f" {args=} {kwargs=}")
  return fn


def _make_flat_callback(in_tree, callback, static):
  def flat_callback(*dyn):
    args, kwargs = _merge_callback_args(in_tree, dyn, static)
    callback(*args, **kwargs)
    return ()
  return flat_callback


def debug_callback(callback=None, *args, ordered=False, partitioned=False, **kwargs):
  """Call `callback(*args, **kwargs)` on the host with concrete values, also under jit, vmap
  (once per example) and differentiation (with primal values). With `ordered=True` calls
  happen in program order. Called without a callback, returns a function taking
  `(callback, *args, **kwargs)` with the given options.
  """
  def _debug_callback(cb, *c_args, **c_kwargs):
    if not callable(cb):
      raise TypeError("first argument to jax.debug.callback must be callable, but got an "
                      f"object of type {type(cb)}")
    in_tree, dyn, static = _split_callback_args(c_args, c_kwargs)
    debug_callback_p.bind(*dyn, callback=_make_flat_callback(in_tree, cb, static),
                          effect=ordered_debug_effect if ordered else debug_effect,
                          partitioned=partitioned)

  return _call_or_configure("debug_callback", _debug_callback, callback, args, kwargs)


# ---- debug_print ----------------------------------------------------------------------------
class _FormatChecker(string.Formatter):
  """Parses a format string (formatting nothing) to find unused arguments."""

  def format_field(self, value, format_spec):
    return ""

  def check_unused_args(self, used_args, args, kwargs):
    unused = [a for i, a in enumerate(args) if i not in used_args]
    unused_kw = [k for k in kwargs if k not in used_args]
    if unused:
      raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused}")
    if unused_kw:
      raise ValueError(
          f"Unused keyword arguments to `jax.debug.print`: {unused_kw}. You may be passing an "
          "f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead should pass in a "
          "regular string.")


_format_checker = _FormatChecker()


def _format_and_print(fmt, np_printoptions, has_placeholders, logging_record, *args, **kwargs):
  if has_placeholders:
    with np.printoptions(**np_printoptions):
      msg = fmt.format(*args, **kwargs)
  else:
    msg = " ".join((fmt, *(str(a) for a in args)))
  if logging_record is not None:
    record = copy.copy(logging_record)
    record.msg = msg
    logger.handle(record)
  else:
    sys.stdout.write(msg + "\n")


def _print_callback(fmt, in_tree, static_args, np_printoptions, has_placeholders,
                    logging_record):
  cb = functools.partial(_format_and_print, fmt, dict(np_printoptions), has_placeholders,
                         logging_record)
  return _make_flat_callback(in_tree, cb, static_args)


debug_print_p = core.Primitive("debug_print")
debug_print_p.multiple_results = True
debug_print_p.ordered_effect = True
debug_print_p.effects_of = lambda params: {ordered_debug_effect if params["ordered"]
                                           else debug_effect}


@debug_print_p.def_abstract_eval
def _debug_print_abstract_eval(*avals, **params):
  return []


@debug_print_p.def_impl
def _debug_print_impl(*args, fmt, ordered, partitioned, in_tree, static_args, np_printoptions,
                      has_placeholders, logging_record):
  cb = _print_callback(fmt, in_tree, static_args, np_printoptions, has_placeholders,
                       logging_record)
  _run_callback(cb, [_as_array(a) for a in args])
  return []


@debug_print_p.def_lowering
def _debug_print_lowering(ctx, *args, fmt, ordered, partitioned, in_tree, static_args,
                          np_printoptions, has_placeholders, logging_record):
  cb = _print_callback(fmt, in_tree, static_args, np_printoptions, has_placeholders,
                       logging_record)
  return _lower_debug(ctx, args, cb)


debug_print_p.def_batch(_debug_batch(debug_print_p))
debug_print_p.def_jvp(lambda primals, tangents, **params: (
    debug_print_p.bind(*primals, **params), []))
debug_print_p.def_transpose(lambda ct, *args, **params: [None] * len(args))


_ARRAX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def is_arrax_frame(frame) -> bool:
  """Whether `frame` runs arrax's own code (skipped to find the user's line)."""
  return os.path.abspath(frame.f_code.co_filename).startswith(_ARRAX_DIR)


def _make_logging_record(level):
  """A log record pointing at the user's line that called `debug.log`."""
  frame = sys._getframe(1)
  while frame is not None and is_arrax_frame(frame):
    frame = frame.f_back
  file_name, line_no = ((frame.f_code.co_filename, frame.f_lineno) if frame is not None
                        else ("(unknown file)", 0))
  return logger.makeRecord(logger.name, level, file_name, line_no, "", (), None)


def debug_print(fmt=None, *args, ordered=False, partitioned=False, skip_format_check=False,
                _use_logging=False, **kwargs):
  """Print `fmt.format(*args, **kwargs)` with the runtime values, also inside jit, vmap (once
  per example) and differentiation. `fmt` must be a plain string, not an f-string (values are
  formatted when the program runs). Called without `fmt`, returns a printing function with
  the given options (`jax.debug.print(ordered=True)("x={}", x)`).

  Example:
    >>> jax.jit(lambda x: jax.debug.print("x={x}", x=x))(jnp.arange(3))
    x=[0 1 2]
  """
  def _debug_print(fmt, *c_args, **c_kwargs):
    if not skip_format_check:
      _format_checker.format(fmt, *c_args, **c_kwargs)
    has_placeholders = False
    if fmt:
      _, field_name, *_ = next(iter(string.Formatter().parse(fmt)))
      has_placeholders = field_name is not None
    in_tree, dyn, static = _split_callback_args(c_args, c_kwargs)
    debug_print_p.bind(
        *dyn, fmt=fmt, ordered=ordered, partitioned=partitioned, in_tree=in_tree,
        static_args=tuple(static.items()),
        np_printoptions=tuple(np.get_printoptions().items()),
        has_placeholders=has_placeholders,
        logging_record=_make_logging_record(logging.INFO) if _use_logging else None)

  return _call_or_configure("debug_print", _debug_print, fmt, args, kwargs)


debug_log = functools.partial(debug_print, _use_logging=True)
debug_log.__doc__ = "Like `debug.print`, but the message goes to the `logging` module (INFO)."


def effects_barrier():
  """Wait until every callback of computations already launched has run. Executions are
  synchronous here, so there is nothing to wait for."""
  return None
