"""`jax.extend.linear_util` compatibility: a function wrapped for flat tracing.

arrax traces plain Python callables, so a `WrappedFun` is only the function (plus the
transformations stacked on it with `transformation`/`transformation_with_aux`), called with
`call_wrapped`."""
import functools


class StoreException(Exception):
  pass


class Store:
  """A value set once by a wrapped function and read after it ran (an output treedef, say)."""
  __slots__ = ("_val",)
  _EMPTY = object()

  def __init__(self):
    self._val = Store._EMPTY

  def store(self, val):
    if self._val is not Store._EMPTY:
      raise StoreException("Store occupied")
    self._val = val

  @property
  def val(self):
    if self._val is Store._EMPTY:
      raise StoreException("Store empty")
    return self._val

  def __call__(self):
    return self.val


class WrappedFun:
  """`f` with keyword `params`; `call_wrapped(*args)` runs it."""

  def __init__(self, f, params=(), debug_info=None):
    self.f = f
    self.params = tuple(params)
    self.debug_info = debug_info

  @property
  def __name__(self):
    return getattr(self.f, "__name__", "<unnamed wrapped function>")

  def call_wrapped(self, *args, **kwargs):
    return self.f(*args, **dict(self.params), **kwargs)

  __call__ = call_wrapped

  def wrap(self, gen, *gen_static_args):
    return WrappedFun(functools.partial(gen, self.call_wrapped, *gen_static_args),
                      debug_info=self.debug_info)

  def __repr__(self):
    return f"Wrapped function: {self.f!r}"


def wrap_init(f, params=None, *, debug_info=None):
  """Wrap `f` (called with `params` as keywords)."""
  return WrappedFun(f, tuple((params or {}).items()), debug_info)


def transformation2(gen, fun: WrappedFun, *gen_static_args):
  """Stack `gen(f, *static_args, *args)` on `fun` (`gen` receives the inner function first)."""
  return fun.wrap(gen, *gen_static_args)


def transformation_with_aux2(gen, fun: WrappedFun, *gen_static_args, use_eq_store=False):
  """Like `transformation2`, with a `Store` handed to `gen` after `f` for an auxiliary output,
  returned as a thunk."""
  del use_eq_store
  store = Store()
  return fun.wrap(gen, store, *gen_static_args), store


def _generator_transformation(gen, fun, *gen_static_args, aux):
  store = Store()

  def run(*args, **kwargs):
    g = gen(*gen_static_args, *args, **kwargs)
    fun_args, fun_kwargs = next(g)
    ans = fun.call_wrapped(*fun_args, **fun_kwargs)
    try:
      g.send(ans)
    except StopIteration as e:
      out = e.value
    else:
      raise RuntimeError("transformation generator yielded twice")
    if aux:
      out, aux_val = out
      store.store(aux_val)
    return out
  wrapped = WrappedFun(run, debug_info=fun.debug_info)
  return (wrapped, store) if aux else wrapped


def transformation(gen, fun, *gen_static_args):
  """JAX's older generator form: `gen` yields `(args, kwargs)` for `fun` and receives its
  result, then yields (returns) the transformed result."""
  return _generator_transformation(gen, fun, *gen_static_args, aux=False)


def transformation_with_aux(gen, fun, *gen_static_args):
  return _generator_transformation(gen, fun, *gen_static_args, aux=True)


def merge_linear_aux(aux1, aux2):
  try:
    out1 = aux1()
  except StoreException:
    return True, aux2()
  return False, out1


def cache(call, *, explain=None):
  """Memoize `call(fun, *args)` on the function and the arguments."""
  memo = {}

  @functools.wraps(call)
  def cached(fun, *args):
    key = (fun.f, fun.params, args)
    try:
      return memo[key]
    except (KeyError, TypeError):
      pass
    ans = call(fun, *args)
    try:
      memo[key] = ans
    except TypeError:
      pass
    return ans
  return cached
