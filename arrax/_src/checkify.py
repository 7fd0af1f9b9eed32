"""`jax.experimental.checkify`, for concrete values.

`check(pred, msg, *fmt_args, **fmt_kwargs)` fails when `pred` is not all true. Outside
`checkify` a failed check raises JaxRuntimeError at once; inside `checkify(f)` the first failed
check is returned as an `Error`. arrax evaluates checks on concrete values only: a check whose
predicate is traced (under jit, vmap, grad, ...) raises the ValueError JAX gives for a check it
cannot stage, since arrax does not functionalize errors through traced code yet.
"""
import contextlib
import functools
import threading

import numpy as np

from arrax._src import core
from arrax._src.array import ArrayType as Array
from arrax._src.tree_util import tree_leaves


class JaxRuntimeError(ValueError):
  """A failed check."""


class JaxException(Exception):
  """The base of checkify's error categories."""

  def __init__(self, msg):
    super().__init__(msg)
    self.msg = msg

  def get(self):
    return self.msg


class FailedCheckError(JaxException):
  """A failed user `check`."""

  def get(self):
    return f"{self.msg} (`check` failed)"


class NaNError(JaxException):
  pass


class OOBError(JaxException):
  pass


class DivisionByZeroError(JaxException):
  pass


ErrorCategory = type[JaxException]
user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
index_checks = frozenset({OOBError})
div_checks = frozenset({DivisionByZeroError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


class Error:
  """The outcome of a checkified function: no failure, or the first failed check."""
  __slots__ = ("_exc",)

  def __init__(self, exc=None):
    self._exc = exc

  def get(self):
    """The failure message, or None."""
    return None if self._exc is None else self._exc.get()

  def get_exception(self):
    return self._exc

  def throw(self):
    check_error(self)

  def __repr__(self):
    return "Error(" + ("no failure" if self._exc is None else repr(self.get())) + ")"


init_error = Error()


class _State(threading.local):
  def __init__(self):
    self.frames = []   # one [first failure or None, enabled categories] per checkify call


_state = _State()


def _is_scalar_pred(pred):
  return isinstance(pred, bool) or (isinstance(pred, Array) and pred.shape == ()
                                    and pred.dtype == np.dtype(bool))


def _concrete_pred(pred, name):
  if not _is_scalar_pred(pred):
    raise TypeError(f"{name} takes a scalar pred as argument, got {pred}")
  if isinstance(pred, core.Tracer):
    raise ValueError(
        "Cannot abstractly evaluate a checkify.check which was not functionalized. This "
        "probably means you tried to stage (jit/scan/pmap/...) a `check` without "
        "functionalizing it through `checkify.checkify`. (arrax evaluates checks on concrete "
        "values only.)")
  return bool(pred)


def _format(msg, args, kwargs):
  def host(x):
    return np.asarray(x) if not isinstance(x, (int, float, complex, bool, str)) else x
  return msg.format(*[host(a) for a in args], **{k: host(v) for k, v in kwargs.items()})


def check(pred, msg, *fmt_args, **fmt_kwargs):
  """Fail with `msg` (formatted with the arguments) if the scalar boolean `pred` is false."""
  _check(pred, msg, "check", fmt_args, fmt_kwargs)


def _check(pred, msg, name, fmt_args, fmt_kwargs):
  if not isinstance(msg, str):
    raise TypeError(f"Expected error message to be a string, got {msg!r}")
  for x in tree_leaves((fmt_args, fmt_kwargs)):
    if not hasattr(x, "dtype"):
      raise TypeError("Formatting arguments to checkify.check need to be PyTrees of arrays, "
                      f"but got {x!r} of type {type(x)}.")
  if _concrete_pred(pred, name):
    return
  exc = FailedCheckError(_format(msg, fmt_args, fmt_kwargs))
  if _state.frames:
    frame = _state.frames[-1]
    if FailedCheckError in frame[1] and frame[0] is None:
      frame[0] = exc
    return
  raise JaxRuntimeError(exc.get())


def debug_check(pred, msg, *fmt_args, **fmt_kwargs):
  """A check that only fails inside `checkify` (outside it is ignored)."""
  if _state.frames:
    _check(pred, msg, "debug_check", fmt_args, fmt_kwargs)


def check_error(error):
  """Raise JaxRuntimeError if `error` holds a failure."""
  if not isinstance(error, Error):
    raise TypeError(f"check_error takes an Error, got {type(error)}")
  if error._exc is not None:
    raise JaxRuntimeError(error.get())


@contextlib.contextmanager
def _frame(errors):
  frame = [None, frozenset(errors)]
  _state.frames.append(frame)
  try:
    yield frame
  finally:
    _state.frames.pop()


def checkify(f, errors=user_checks):
  """`f` returning `(Error, result)`: the first failed check (of the categories in `errors`)
  is returned instead of raised."""
  @functools.wraps(f)
  def checked(*args, **kwargs):
    with _frame(errors) as frame:
      out = f(*args, **kwargs)
    return Error(frame[0]), out
  return checked
