"""TPU SparseCore extensions of Pallas (jax.experimental.pallas.tpu_sc): subcore meshes,
gather/scatter indices, and the SparseCore vector operations. SparseCores exist only on TPUs:
asking for their figures (and so making a subcore mesh) raises ValueError off-TPU and the
SparseCore operations raise NotImplementedError, as JAX's fail on CPU; `parallel_loop` runs
its iterations one after another (JAX has no CPU rule for it)."""
from __future__ import annotations

import collections
import dataclasses
import enum
from typing import Any

from arrax._src import core, tree_util
from arrax._src.lax.control_flow import loops
from arrax._src.pallas import helpers, tpu
from arrax._src.pallas.tpu_info import SparseCoreInfo, get_tpu_info
from arrax._src.state import primitives as state


def get_sparse_core_info() -> SparseCoreInfo:
  """The SparseCore figures of the current TPU (ValueError off-TPU)."""
  info = get_tpu_info().sparse_core
  if info is None:
    raise RuntimeError("The current TPU does not have SparseCores")
  return info


def _check_cores(what, n, have):
  if n > have:
    raise ValueError(f"Mesh has {n} {what}, but the current TPU chip has only {have} "
                     f"{'SparseCores' if what == 'cores' else what}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScalarSubcoreMesh:
  """A mesh over the scalar subcores of the SparseCores (one axis)."""
  axis_name: str
  num_cores: int = dataclasses.field(default_factory=lambda: get_sparse_core_info().num_cores)

  def __post_init__(self):
    _check_cores("cores", self.num_cores, get_sparse_core_info().num_cores)

  @property
  def core_type(self):
    return tpu.CoreType.SC_SCALAR_SUBCORE

  @property
  def default_memory_space(self):
    return tpu.MemorySpace.HBM

  @property
  def shape(self):
    return collections.OrderedDict({self.axis_name: self.num_cores})

  @property
  def size(self) -> int:
    return self.num_cores


@dataclasses.dataclass(frozen=True, kw_only=True)
class VectorSubcoreMesh:
  """A mesh over the vector subcores of the SparseCores (a core and a subcore axis)."""
  core_axis_name: str
  subcore_axis_name: str
  num_cores: int = dataclasses.field(default_factory=lambda: get_sparse_core_info().num_cores)
  num_subcores: int = dataclasses.field(
      default_factory=lambda: get_sparse_core_info().num_subcores)

  def __post_init__(self):
    info = get_sparse_core_info()
    _check_cores("cores", self.num_cores, info.num_cores)
    _check_cores("subcores", self.num_subcores, info.num_subcores)

  @property
  def core_type(self):
    return tpu.CoreType.SC_VECTOR_SUBCORE

  @property
  def default_memory_space(self):
    return tpu.MemorySpace.HBM

  @property
  def shape(self):
    return collections.OrderedDict({self.core_axis_name: self.num_cores,
                                    self.subcore_axis_name: self.num_subcores})

  @property
  def size(self) -> int:
    return self.num_cores * self.num_subcores


@dataclasses.dataclass(frozen=True)
class Indices:
  """Indices of a SparseCore gather or scatter (`ignored_value`: indices to skip)."""
  values: Any
  ignored_value: int | None = dataclasses.field(default=None, metadata=dict(static=True))


tree_util.register_dataclass(Indices)


class PackFormat(enum.Enum):
  """How `pack` lays out two arrays: as pairs ([[a0, a1], [b0, b1]]) or interleaved."""
  COMPRESSED = "compressed"
  INTERLEAVED = "interleaved"


def _sparse_core_only(name):
  raise NotImplementedError(f"{name} is a TPU SparseCore operation: arrax has no SparseCore "
                            "(JAX has no CPU rule for it either)")


def load_gather(ref, indices, *, mask=None):
  """Elements of `ref` at `indices` (SparseCore only)."""
  get_tpu_info()   # (JAX asks for the SparseCore's figures first)
  _sparse_core_only("load_gather")


def store_scatter(ref, indices, x, *, mask=None) -> None:
  """Store `x` into `ref` at `indices` (SparseCore only)."""
  _sparse_core_only("store_scatter")


def addupdate_scatter(ref, indices, x, *, mask=None) -> None:
  """Add `x` into `ref` at `indices` (SparseCore only)."""
  _sparse_core_only("addupdate_scatter")


def load_expanded(ref, *, mask):
  """Consecutive elements of `ref` spread to where `mask` holds (SparseCore only)."""
  _sparse_core_only("load_expanded")


def store_compressed(ref, x, *, mask) -> None:
  """The elements of `x` where `mask` holds, stored consecutively (SparseCore only)."""
  _sparse_core_only("store_compressed")


def addupdate_compressed(ref, x, *, mask) -> None:
  """`store_compressed`, adding (SparseCore only)."""
  _sparse_core_only("addupdate_compressed")


def addupdate(ref, x) -> None:
  """`ref[...] += x` on a SparseCore (SparseCore only)."""
  _sparse_core_only("addupdate")


def all_reduce_ffs(x, *, reduce: int = 1):
  """The index of the first set element, across lanes (SparseCore only)."""
  _sparse_core_only("all_reduce_ffs")


def all_reduce_population_count(x, *, reduce: int = 1):
  """The number of set elements, across lanes (SparseCore only)."""
  _sparse_core_only("all_reduce_population_count")


def bitcast(x, dtype):
  """`x` reinterpreted as `dtype` along its last dimension (SparseCore only)."""
  _sparse_core_only("bitcast")


def cumsum(x, *, mask=None):
  """The running sum of `x` where `mask` holds (SparseCore only)."""
  _sparse_core_only("cumsum")


def cummax(x, *, mask=None):
  """The running maximum of `x` where `mask` holds (SparseCore only)."""
  _sparse_core_only("cummax")


def sort_key_val(keys, values, *, mask=None, descending: bool = False):
  """Keys sorted with their values (SparseCore only)."""
  get_tpu_info()
  _sparse_core_only("sort_key_val")


def scan_count(x, mask=None):
  """Running counts of equal values and the mask of their last occurrences (SparseCore
  only)."""
  _sparse_core_only("scan_count")


def fetch_and_add(x_ref, value, *, subcore_id):
  """Atomically add `value` to a scalar int32 ref of subcore `subcore_id` and return its old
  value (SparseCore only)."""
  if x_ref.size != 1:
    raise ValueError(f"Expected a scalar ref, but got x_ref.shape={tuple(x_ref.shape)}.")
  if str(x_ref.dtype) != "int32":
    raise NotImplementedError(f"Only int32 refs are supported, but got {x_ref.dtype}")
  _sparse_core_only("fetch_and_add")


def pack(a, b, /, *, format: PackFormat, preferred_element_type=None):  # noqa: A002
  """Two arrays packed into one of a narrower type (SparseCore only)."""
  _sparse_core_only("pack")


def unpack(ab, /, *, format: PackFormat, preferred_element_type=None):  # noqa: A002
  """The two arrays packed into `ab` (SparseCore only)."""
  if str(ab.dtype) not in ("bfloat16", "int16"):
    raise NotImplementedError(f"Only unpacking of bloat16 and int16 is supported, got "
                              f"{ab.dtype}")
  _sparse_core_only("unpack")


def subcore_barrier():
  """Synchronize the subcores of a SparseCore (SparseCore only)."""
  _sparse_core_only("barrier")


def parallel_loop(lower, upper, step=1, *, unroll=1, carry=None):
  """Decorator: run the body for each index in range(lower, upper, step) (with a carry when
  `carry` is given; returns the final carry). The iterations must not depend on each other's
  ref writes; arrax runs them in order."""
  flat, carry_tree = tree_util.tree_flatten(carry)
  if any(isinstance(c, state.Ref) or isinstance(core.get_aval(c), core.AbstractRef)
         for c in flat):
    raise TypeError(f"Carried values may not be refs, but got: {flat}")

  def decorator(body):
    def step_fn(k, carries):
      i = lower + k * step
      if carry is None:
        body(i)
        return carries
      out, tree = tree_util.tree_flatten(body(i, tree_util.tree_unflatten(carry_tree,
                                                                          carries)))
      if tree != carry_tree:
        raise ValueError("parallel_loop: body result should have same structure as carry:"
                         f" {tree} != {carry_tree}")
      return out

    out = loops.fori_loop(0, helpers.cdiv(upper - lower, step), step_fn, flat)
    return None if carry is None else tree_util.tree_unflatten(carry_tree, out)

  return decorator
