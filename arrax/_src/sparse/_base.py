"""JAXSparse: the abstract base class of arrax's sparse array formats."""
from __future__ import annotations

import abc
import math
import operator

from arrax._src import core


class JAXSparse(abc.ABC):
  """Base class of the sparse array classes (BCOO, BCSR, COO, CSR, CSC): a shape, a dtype,
  the number of stored elements, pytree flattening, transpose and todense."""
  __hash__ = None

  @property
  @abc.abstractmethod
  def dtype(self):
    ...

  @property
  @abc.abstractmethod
  def nse(self):
    ...

  def __len__(self):
    return self.shape[0]

  @property
  def size(self):
    return math.prod(self.shape)

  @property
  def ndim(self):
    return len(self.shape)

  def __init__(self, args, *, shape):
    self.shape = tuple(operator.index(d) for d in shape)

  def __repr__(self):
    name = type(self).__name__
    try:
      extra = f", nse={self.nse}"
      for field in ("n_batch", "n_dense"):   # (batched formats, when they have such axes)
        if getattr(self, field, 0):
          extra += f", {field}={getattr(self, field)}"
      out = f"{name}({self.dtype}{list(self.shape)}{extra})"
    except Exception:  # noqa: BLE001
      out = f"{name}(<invalid>)"
    if isinstance(self.data, core.Tracer):
      out = f"{type(self.data).__name__}[{out}]"
    return out

  @abc.abstractmethod
  def tree_flatten(self):
    ...

  @classmethod
  @abc.abstractmethod
  def tree_unflatten(cls, aux_data, children):
    ...

  @abc.abstractmethod
  def transpose(self, axes=None):
    ...

  @abc.abstractmethod
  def todense(self):
    ...

  @property
  def T(self):
    return self.transpose()

  def block_until_ready(self):
    for arg in self.tree_flatten()[0]:
      arg.block_until_ready()
    return self

  # Operators a format may define; the base class raises.
  def sum(self, *args, **kwargs):
    raise NotImplementedError(f"{self.__class__}.sum")

  def __neg__(self):
    raise NotImplementedError(f"{self.__class__}.__neg__")

  def __pos__(self):
    raise NotImplementedError(f"{self.__class__}.__pos__")

  def __matmul__(self, other):
    raise NotImplementedError(f"{self.__class__}.__matmul__")

  def __rmatmul__(self, other):
    raise NotImplementedError(f"{self.__class__}.__rmatmul__")

  def __mul__(self, other):
    raise NotImplementedError(f"{self.__class__}.__mul__")

  def __rmul__(self, other):
    raise NotImplementedError(f"{self.__class__}.__rmul__")

  def __add__(self, other):
    raise NotImplementedError(f"{self.__class__}.__add__")

  def __radd__(self, other):
    raise NotImplementedError(f"{self.__class__}.__radd__")

  def __sub__(self, other):
    raise NotImplementedError(f"{self.__class__}.__sub__")

  def __rsub__(self, other):
    raise NotImplementedError(f"{self.__class__}.__rsub__")

  def __getitem__(self, item):
    raise NotImplementedError(f"{self.__class__}.__getitem__")
