"""`jax.experimental.EArray`: an array of an extended dtype (its `aval`) held as an array of
its physical type (`_data`). A value container: it is not an operand of arrax's operations or a
jit argument (neither is it in JAX 0.10.2 for user-defined extended dtypes)."""
from __future__ import annotations

import math


class EArray:
  """An array of extended dtype `aval.dtype` whose contents are the array `data`."""
  __slots__ = ("_aval", "_data")
  __hash__ = None
  __array_priority__ = 100

  def __init__(self, aval, data):
    self._aval = aval
    self._data = data

  @property
  def aval(self):
    return self._aval

  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)
  ndim = property(lambda self: len(self._aval.shape))
  size = property(lambda self: math.prod(self._aval.shape))
  itemsize = property(lambda self: self._aval.dtype.itemsize)

  def __len__(self):
    if self.ndim == 0:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if self.ndim == 0:
      raise TypeError("iteration over a 0-d array")
    raise NotImplementedError

  def __repr__(self):
    return "E" + repr(self._data)

  def block_until_ready(self):
    self._data.block_until_ready()
    return self

  def copy_to_host_async(self):
    self._data.copy_to_host_async()

  def copy(self):
    return EArray(self._aval, self._data.copy())

  devices = property(lambda self: self._data.devices)
  is_fully_addressable = property(lambda self: self._data.is_fully_addressable)
  is_fully_replicated = property(lambda self: self._data.is_fully_replicated)
  delete = property(lambda self: self._data.delete)
  is_deleted = property(lambda self: self._data.is_deleted)
  on_device_size_in_bytes = property(lambda self: self._data.on_device_size_in_bytes)
  committed = property(lambda self: self._data.committed)

  @property
  def device(self):
    return self._data.device

  def addressable_data(self, index):
    raise NotImplementedError

  @property
  def addressable_shards(self):
    raise NotImplementedError

  @property
  def global_shards(self):
    raise NotImplementedError
