"""`jax.experimental.random`: a stateful generator (`stateful_rng`, `StatefulPRNG`) in the
style of `numpy.random.default_rng`, built on a typed key and a counter held in a Ref. Each
draw folds the counter into the key and increments it, so it works eagerly and under jit (the
Ref is updated in place), and `split` makes a batch of generators for vmap.
"""
from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence

import numpy as np

from arrax._src import core, prng, random
from arrax._src.numpy import creation
from arrax._src.state import primitives as ref_ops
from arrax._src.tree_util import register_dataclass


def _size(size, *args):
  if size is None:
    return np.broadcast_shapes(*(np.shape(a) for a in args))
  if isinstance(size, (int, np.integer)):
    return (operator.index(size),)
  return tuple(map(operator.index, size))


def _is_ref(x):
  return isinstance(x, ref_ops.Ref) or (isinstance(x, core.Tracer)
                                        and type(x.aval) is core.AbstractRef)


@register_dataclass
@dataclasses.dataclass(frozen=True, slots=True)
class StatefulPRNG:
  """A random generator whose state (a typed key and a counter Ref) updates itself. Make one
  with `stateful_rng(seed)`."""
  _base_key: object
  _counter: object

  def __post_init__(self):
    if not prng.is_key_array(self._base_key):
      raise ValueError(f"Expected base_key to be a typed PRNG key; got {self._base_key}")
    if not _is_ref(self._counter):
      raise ValueError(f"Expected counter to be a scalar integer ref; got {self._counter}")

  def key(self, shape: int | Sequence[int] = ()):
    """A new independent key (or `shape` of them); advances the generator."""
    if self._base_key.shape:
      raise ValueError("cannot operate on split stateful generator")
    k = random.fold_in(self._base_key, ref_ops.ref_get(self._counter))
    ref_ops.ref_addupdate(self._counter, ..., 1)
    shape = _size(shape)
    return random.split(k, shape) if shape else k

  def random(self, size=None, dtype=float):
    """Floats uniform in [0, 1)."""
    return random.uniform(self.key(), shape=_size(size), dtype=dtype)

  def uniform(self, low=0, high=1, size=None, *, dtype=float):
    """Floats uniform in [low, high)."""
    return random.uniform(self.key(), _size(size, low, high), minval=low, maxval=high,
                          dtype=dtype)

  def normal(self, loc=0, scale=1, size=None, *, dtype=float):
    """Normally distributed floats with mean `loc` and standard deviation `scale`."""
    norm = random.normal(self.key(), _size(size, loc, scale), dtype)
    return (creation.asarray(loc) + creation.asarray(scale) * norm).astype(dtype)

  def integers(self, low, high=None, size=None, *, dtype=int):
    """Integers in [low, high) (or [0, low) when `high` is None)."""
    if high is None:
      low, high = 0, low
    return random.randint(self.key(), _size(size, low, high), minval=low, maxval=high,
                          dtype=dtype)

  def split(self, num: int | Sequence[int]) -> StatefulPRNG:
    """A generator of `num` independent children (one per mapped element, for vmap)."""
    return StatefulPRNG(self.key(num), ref_ops.new_ref(creation.zeros(num, dtype=int)))

  def spawn(self, n_children: int) -> list[StatefulPRNG]:
    """A list of `n_children` independent generators."""
    return [type(self)(k, ref_ops.new_ref(0)) for k in self.key(n_children)]


def stateful_rng(seed=None, *, impl=None) -> StatefulPRNG:
  """A stateful generator seeded with `seed` (at top level it may be omitted: NumPy's entropy
  then seeds it). Draws update it in place, eagerly and under jit; it cannot be returned from
  a transformed function or carried through control flow (it holds a Ref)."""
  if seed is None:
    if core.trace_ctx.trace is not core.eval_trace:
      raise TypeError("When used within transformed code, jax.experimental.random.stateful_rng()"
                      " requires an explicit seed to be set.")
    seed = np.int64(np.random.SeedSequence().entropy & np.iinfo(np.int64).max)
  return StatefulPRNG(random.key(seed, impl=impl), ref_ops.new_ref(0))
