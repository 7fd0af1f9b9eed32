"""jnp.vectorize: NumPy-style generalized ufuncs built on vmap.

The loop dimensions of the arguments (all but the trailing core dimensions of the signature)
broadcast against each other; each broadcast dimension becomes one vmap, with size-1 dimensions
left unmapped (squeezed away, then restored in the result).
"""
from __future__ import annotations

import functools
import re

from arrax._src import batching
from arrax._src.numpy import lax_numpy
from arrax._src.numpy.creation import asarray

_NAME = r"\w+"
_DIMS = rf"(?:{_NAME}(?:,{_NAME})*)?"
_ARG = rf"\({_DIMS}\)"
_ARGS = rf"{_ARG}(?:,{_ARG})*"
_SIGNATURE = rf"^{_ARGS}->{_ARGS}$"


def _parse_signature(signature):
  """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
  if not re.match(_SIGNATURE, signature):
    raise ValueError(f"not a valid gufunc signature: {signature}")
  ins, outs = signature.split("->")
  return ([tuple(re.findall(_NAME, a)) for a in re.findall(_ARG, ins)],
          [tuple(re.findall(_NAME, a)) for a in re.findall(_ARG, outs)])


def _record_core_sizes(sizes, shape, core, context, is_input):
  """Check `shape`'s trailing core dimensions against (and add them to) `sizes`."""
  n = len(core)
  if is_input and len(shape) < n:
    raise ValueError(f"input with shape {shape!r} does not have enough dimensions for all core "
                     f"dimensions {core!r} {context}")
  if not is_input and len(shape) != n:
    raise ValueError(f"output shape {shape!r} does not match core dimensions {core!r} "
                     f"{context}")
  for name, size in zip(core, shape[len(shape) - n:] if n else ()):
    if sizes.setdefault(name, size) != size:
      raise ValueError(f"inconsistent size for core dimension {name!r}: {size!r} vs "
                       f"{sizes[name]!r} {context}")


def _with_static(func, static_pos, static_kw):
  """`func` with the positional arguments `static_pos` ({index: value}) and keyword arguments
  `static_kw` filled in."""
  if not static_pos and not static_kw:
    return func

  def call(*args, **kwargs):
    args = list(args)
    for i in sorted(static_pos):
      args.insert(i, static_pos[i])
    return func(*args, **kwargs, **static_kw)
  return call


def _checking_outputs(func, sizes, out_cores, context):
  def call(*args):
    out = func(*args)
    outs = out if isinstance(out, tuple) else [out]
    if len(out_cores) > 1 and not isinstance(out, tuple):
      raise TypeError(f"output must be a tuple when multiple outputs are expected, got: "
                      f"{out!r}\n{context}")
    if len(outs) != len(out_cores):
      raise TypeError(f"wrong number of output arguments: expected {len(out_cores)!r}, got "
                      f"{len(outs)!r} {context}")
    known = dict(sizes)
    for o, core in zip(outs, out_cores):
      _record_core_sizes(known, tuple(lax_numpy.shape(o)), core, context, is_input=False)
    return out
  return call


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
  """Vectorize `pyfunc` over leading (loop) dimensions with NumPy broadcasting, using vmap.

  `excluded`: positions or names of arguments passed through unvectorized. `signature`: a
  gufunc signature such as '(m,n),(n)->(m)' giving the core dimensions `pyfunc` works on
  (default: scalars in, any shape out).

  Example:
    >>> mv = vectorize(lambda m, v: m @ v, signature='(n,k),(k)->(n)')
    >>> mv(jnp.ones((4, 2, 3)), jnp.ones(3)).shape
    (4, 2)
  """
  if any(not isinstance(e, (str, int)) for e in excluded):
    raise TypeError("jax.numpy.vectorize can only exclude integer or string arguments, but "
                    f"excluded={excluded!r}")
  if any(isinstance(e, int) and e < 0 for e in excluded):
    raise ValueError(f"excluded={excluded!r} contains negative numbers")

  @functools.wraps(pyfunc, updated=())
  def wrapped(*args, **kwargs):
    context = f"on vectorized function with excluded={excluded!r} and signature={signature!r}"
    static_pos = {i: a for i, a in enumerate(args) if i in excluded}
    static_kw = {k: v for k, v in kwargs.items() if k in excluded}
    func = _with_static(pyfunc, static_pos, static_kw)
    args = [a for i, a in enumerate(args) if i not in excluded]
    kwargs = {k: v for k, v in kwargs.items() if k not in excluded}
    if signature is not None:
      in_cores, out_cores = _parse_signature(signature)
    else:
      in_cores, out_cores = [()] * len(args), None
    nones = {i for i, a in enumerate(args) if a is None}
    if nones:
      if any(in_cores[i] != () for i in nones if i < len(in_cores)):
        raise ValueError(f"Cannot pass None at locations {nones} with signature={signature!r}")
      func = _with_static(func, {i: None for i in nones}, {})
      args = [a for i, a in enumerate(args) if i not in nones]
      in_cores = [c for i, c in enumerate(in_cores) if i not in nones]
    if kwargs:
      func = functools.partial(func, **kwargs)
    args = [asarray(a) for a in args]
    if len(args) != len(in_cores):
      raise TypeError(f"wrong number of positional arguments: expected {len(in_cores)!r}, got "
                      f"{len(args)!r} {context}")
    sizes: dict = {}
    loop_shapes = []
    for a, core in zip(args, in_cores):
      _record_core_sizes(sizes, tuple(a.shape), core, context, is_input=True)
      loop_shapes.append(tuple(a.shape[:a.ndim - len(core)]))
    loop_shape = lax_numpy.broadcast_shapes(*loop_shapes)
    if out_cores is not None:
      func = _checking_outputs(func, sizes, out_cores, context)

    # Squeeze each argument's size-1 loop dimensions; map the others, innermost vmap first.
    squeezed, padded = [], []
    for a, s in zip(args, loop_shapes):
      padded.append((1,) * (len(loop_shape) - len(s)) + s)
      ones = tuple(i for i, d in enumerate(s) if d == 1)
      squeezed.append(lax_numpy.squeeze(a, axis=ones) if ones else a)
    expand = []
    for k in range(len(loop_shape) - 1, -1, -1):
      in_axes = tuple(None if p[k] == 1 else 0 for p in padded)
      if all(ax is None for ax in in_axes):
        expand.append(k)
      else:
        func = batching.vmap(func, in_axes)
    out = func(*squeezed)
    if not expand:
      return out
    expand = tuple(sorted(expand))
    if isinstance(out, tuple):
      return tuple(lax_numpy.expand_dims(o, expand) for o in out)
    return lax_numpy.expand_dims(out, expand)

  return wrapped
