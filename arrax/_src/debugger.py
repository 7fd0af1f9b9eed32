"""`arrax.debug.breakpoint`: an interactive debugger (text, on stdin/stdout) entered when the
program reaches the breakpoint, also inside jit, with the values of the enclosing Python frames.

The frames' local variables that are tracers travel through a debug callback (so the debugger
sees their runtime values); all other locals are kept as they are.
"""
from __future__ import annotations

import cmd
import inspect
import pprint
import sys
import threading
import traceback

from arrax._src import core
from arrax._src.tree_util import register_pytree_node, tree_flatten, tree_leaves, tree_unflatten
from arrax._src.debugging import debug_callback, is_arrax_frame
from arrax._src.callback import pure_callback
from arrax._src.lax import elementwise

class _DictWrapper:
  """A dict flattened in insertion order (keys need not be comparable)."""

  def __init__(self, keys, values):
    self.keys, self.values = keys, values

  def to_dict(self):
    return dict(zip(self.keys, self.values))


register_pytree_node(_DictWrapper, lambda d: (d.values, d.keys),
                     lambda keys, values: _DictWrapper(keys, list(values)))


class _CantFlatten:
  __repr__ = lambda self: "<cant_flatten>"


_cant_flatten = _CantFlatten()


def _flatten_dict(d):
  keys, values = [], []
  for k, v in d.items():
    try:
      tree_leaves(v)
    except Exception:  # noqa: BLE001
      v = _cant_flatten
    keys.append(k)
    values.append(v)
  return tree_flatten(_DictWrapper(keys, values))


class DebuggerFrame:
  """One Python frame as the debugger shows it."""
  __slots__ = ("filename", "locals", "globals", "code_context", "source", "lineno", "offset")

  def __init__(self, filename, locals, globals, code_context, source, lineno, offset):  # noqa: A002
    self.filename, self.locals, self.globals = filename, locals, globals
    self.code_context, self.source, self.lineno, self.offset = (code_context, source, lineno,
                                                                offset)

  @classmethod
  def from_frameinfo(cls, info):
    try:
      _, start = inspect.getsourcelines(info.frame)
      source = inspect.getsource(info.frame).split("\n")
      offset = info.lineno - max(start, 1)
      if offset >= len(source):
        source, offset = [], None
    except (OSError, TypeError):
      source, offset = [], None
    return cls(info.filename, info.frame.f_locals, {}, info.code_context, source, info.lineno,
               offset)


def _frame_flatten(f):
  flat_l, tree_l = _flatten_dict(f.locals)
  flat_g, tree_g = _flatten_dict(f.globals)
  flat = flat_l + flat_g
  traced = [isinstance(x, core.Tracer) for x in flat]
  kept = [x for x, t in zip(flat, traced) if not t]
  children = [x for x, t in zip(flat, traced) if t]
  return children, _Aux((traced, kept, tree_l, tree_g, len(flat_l), f.filename,
                         f.code_context, f.source, f.lineno, f.offset))


def _frame_unflatten(aux, children):
  traced, kept, tree_l, tree_g, n_locals, filename, context, source, lineno, offset = aux.data
  it_k, it_c = iter(kept), iter(children)
  flat = [next(it_c) if t else next(it_k) for t in traced]
  locals_ = tree_unflatten(tree_l, flat[:n_locals]).to_dict()
  globals_ = tree_unflatten(tree_g, flat[n_locals:]).to_dict()
  return DebuggerFrame(filename, locals_, globals_, context, source, lineno, offset)


class _Aux:
  """Auxiliary data compared by identity (frames hold unhashable values)."""
  __slots__ = ("data",)

  def __init__(self, data):
    self.data = data


register_pytree_node(DebuggerFrame, _frame_flatten, _frame_unflatten)


class CliDebugger(cmd.Cmd):
  """The text debugger: `p expr`, `pp expr`, `u`/`d`, `l`, `w`/`bt`, `c`, `q`, or any
  expression, evaluated in the selected frame."""
  prompt = "(jdb) "

  def __init__(self, frames, thread_id, stdin=None, stdout=None, completekey="tab"):
    super().__init__(stdin=stdin, stdout=stdout, completekey=completekey)
    self.use_rawinput = stdin is None
    self.frames = frames
    self.frame_index = 0
    self.thread_id = thread_id
    self.intro = "Entering jdb:"

  def current_frame(self):
    return self.frames[self.frame_index]

  def evaluate(self, expr):
    frame = self.frames[self.frame_index]
    return eval(expr, {}, {**frame.globals, **frame.locals})  # noqa: S307 (a debugger)

  def _error_message(self):
    exc = sys.exc_info()[:2]
    print("***", traceback.format_exception_only(*exc)[-1].strip(), file=self.stdout)

  def default(self, line):
    self.do_p(line)

  def print_backtrace(self):
    out = ["Traceback:"]
    for frame in self.frames[::-1]:
      out.append(f'  File "{frame.filename}", line {frame.lineno}')
      out.append("    <no source>" if frame.offset is None
                 else f"    {frame.source[frame.offset].strip()}")
    print("\n".join(out), file=self.stdout)

  def print_context(self, num_lines=2):
    frame = self.frames[self.frame_index]
    out = [f"> {frame.filename}({frame.lineno})"]
    for i, line in enumerate(frame.source):
      if frame.offset - 1 - num_lines <= i <= frame.offset + num_lines:
        out.append(f"->  {line}" if i == frame.offset else f"    {line}")
    print("\n".join(out), file=self.stdout)

  def do_p(self, arg):
    """p expression: print the value of the expression."""
    try:
      print(repr(self.evaluate(arg)), file=self.stdout)
    except BaseException:  # noqa: BLE001
      self._error_message()

  def do_pp(self, arg):
    """pp expression: pretty-print the value of the expression."""
    try:
      print(pprint.pformat(self.evaluate(arg)), file=self.stdout)
    except BaseException:  # noqa: BLE001
      self._error_message()

  def do_up(self, arg, /):
    """u(p): move up a stack frame."""
    if self.frame_index == len(self.frames) - 1:
      print("At topmost frame.", file=self.stdout)
    else:
      self.frame_index += 1
    self.print_context()
  do_u = do_up

  def do_down(self, arg, /):
    """d(own): move down a stack frame."""
    if self.frame_index == 0:
      print("At bottommost frame.", file=self.stdout)
    else:
      self.frame_index -= 1
    self.print_context()
  do_d = do_down

  def do_list(self, _):
    """l(ist): show the source around the current line."""
    self.print_context(num_lines=5)
  do_l = do_list

  def do_continue(self, _):
    """c(ont(inue)): continue the program."""
    return True
  do_c = do_cont = do_continue

  def do_quit(self, _):
    """q(uit), exit: exit the program."""
    sys.exit(0)
  do_q = do_EOF = do_exit = do_quit

  def do_where(self, _):
    """w(here), bt: print the stack, most recent frame last."""
    self.print_backtrace()
  do_w = do_bt = do_where

  def run(self):
    while True:
      try:
        self.cmdloop()
        break
      except KeyboardInterrupt:
        print("--KeyboardInterrupt--", file=sys.stdout)


_debug_lock = threading.Lock()


def breakpoint(*, backend=None, filter_frames=True, num_frames=None, ordered=False,  # noqa: A001
               token=None, **kwargs):
  """Stop the program here and open the debugger (reading commands from stdin, or from the
  `stdin` keyword), with the values of the enclosing frames, also inside jit and vmap.

  `ordered` orders it with other ordered callbacks; `token` (a pytree of arrays, returned
  unchanged) runs it once that value is computed instead. `backend` picks among registered
  debuggers in JAX; arrax has only the text one, used whatever it says.
  """
  del backend
  if token is not None and ordered:
    raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
  infos = inspect.stack()[1:]
  if filter_frames:
    infos = [i for i in infos if not is_arrax_frame(i.frame)]
  frames = [DebuggerFrame.from_frameinfo(i) for i in infos]
  if num_frames is not None:
    frames = frames[:num_frames]
  flat, frames_tree = tree_flatten(frames)

  def _callback(*flat_args):
    frames = tree_unflatten(frames_tree, flat_args)
    thread_id = (None if threading.current_thread() is threading.main_thread()
                 else threading.get_ident())
    with _debug_lock:
      CliDebugger(frames, thread_id, **kwargs).run()

  if token is None:
    debug_callback(_callback, *flat, ordered=ordered)
    return None

  def _with_token(x, *flat_args):
    _callback(*flat_args)
    return x

  token, flat = elementwise.stop_gradient((token, flat))
  return pure_callback(_with_token, token, token, *flat)
