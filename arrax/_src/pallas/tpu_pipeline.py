"""Buffered refs of TPU pipelines (jax.experimental.pallas.tpu): `BufferedRef` holds the
multiple buffers (and DMA semaphores) through which blocks of an HBM ref are copied in and out,
with the slot counters saying which buffer is current. A BufferedRef is a pytree whose buffers
are MemoryRefs until `pl.run_scoped` allocates them; its copies are local DMAs, which interpret
mode runs at `start`.

The block slices are cut at the memory tiling of the buffers: for TensorCore's (8, 128) tiling
that needs the TPU generation, so off-TPU only `tiling=Tiling.SPARSE_CORE` copies (as in
JAX)."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from arrax._src import core
from arrax._src.core import ShapedArray
from arrax._src.indexing import Slice, ds
from arrax._src.lax import elementwise as lax
from arrax._src.numpy import creation, lax_numpy
from arrax._src.pallas import core as pallas_core
from arrax._src.pallas import helpers
from arrax._src.pallas import tpu
from arrax._src.pallas.tpu_info import Tiling, get_tpu_info
from arrax._src.tree_util import register_dataclass

BufferType = tpu.BufferType


def _block_dims(spec):
  """The sizes of the block's non-squeezed dimensions."""
  if spec.block_shape is None:
    raise ValueError("Block shape must be specified.")
  sizes = []
  for bd in spec.block_shape:
    if bd is None or isinstance(bd, pallas_core.Squeezed):
      continue
    if isinstance(bd, (int, np.integer)):
      sizes.append(int(bd))
    elif isinstance(bd, (pallas_core.Blocked, pallas_core.Element, pallas_core.BoundedSlice,
                         pallas_core.Indirect)):
      sizes.append(bd.block_size)
    else:
      raise ValueError(f"Unsupported block dimension type: {bd}")
  return tuple(sizes)


def _tiling_of(aval, tiling):
  """The tile size of each dimension of a buffer of `aval` (leading dimensions: 1)."""
  shape = aval.shape
  packing = 8 if np.dtype(aval.dtype).name == "int4" else 4 // np.dtype(aval.dtype).itemsize
  tiling = Tiling.COMPACT if tiling is None else tiling
  if tiling is Tiling.COMPACT:
    get_tpu_info()   # (the tile height depends on the TPU generation: raises off-TPU)
  rank = len(tiling.shape)
  if len(shape) < rank:
    raise ValueError(f"Shape must have at least {rank} dimensions: shape={shape}")
  return (1,) * (len(shape) - 1) + (tiling.shape[0] * packing,)


def _aligned_size(rem, tile):
  return helpers.cdiv(rem, tile) * tile


def _blocked_slice(index, size, dim, tile):
  """`ds(index * size, size)`, shortened to the tiles the last partial block covers."""
  start = size * index
  rem = dim % size
  if rem == 0:
    return ds(start, size)
  if tile is None:
    raise ValueError("If tiling is None, block_size must divide dim_size.")
  if size % tile:
    raise ValueError(f"Block size must divide tiling: block_size={size}, tiling={tile}")
  last = index == helpers.cdiv(dim, size) - 1
  return ds(index * size, lax_numpy.where(last, _aligned_size(rem % size, tile), size))


def _bounded_slice(start, size, dim, block, tile):
  if tile is not None and block % tile:
    raise ValueError(f"Block size must divide tiling: block_size={block}, tiling={tile}")
  if tile is None:
    return ds(start, size)
  over = start + size > dim
  return ds(start, lax_numpy.where(over, _aligned_size(dim - start, tile), size))


def _block_slice(index, bd, dim, tile):
  if isinstance(bd, pallas_core.Blocked):
    return _blocked_slice(index, bd.block_size, dim, tile)
  if isinstance(bd, (int, np.integer)):
    return _blocked_slice(index, int(bd), dim, tile)
  if isinstance(bd, pallas_core.Element):
    return _bounded_slice(index, bd.block_size, dim, bd.block_size, tile)
  if isinstance(bd, pallas_core.BoundedSlice):
    if not isinstance(index, Slice):
      raise ValueError("Must return a ds from the index_map for a BoundedSlice dimension.")
    return _bounded_slice(index.start, index.size, dim, bd.block_size, tile)
  if bd is None or isinstance(bd, (pallas_core.Squeezed, pallas_core.Indirect)):
    return index
  raise ValueError(f"Unsupported block dimension type: {bd}")


def _value_aval(ref):
  return ShapedArray(tuple(ref.shape), ref.dtype)


class BufferedRefBase:
  """The interface of a pipeline's buffered refs (subclasses define the buffering)."""

  @property
  def spec(self) -> pallas_core.BlockSpec:
    raise NotImplementedError()

  @property
  def buffer_type(self) -> BufferType:
    raise NotImplementedError()

  @property
  def is_buffered(self) -> bool:
    return False

  @property
  def is_input(self):
    return self.buffer_type.is_input

  @property
  def is_output(self):
    return self.buffer_type.is_output

  @property
  def is_input_output(self):
    return self.buffer_type == BufferType.INPUT_OUTPUT

  @property
  def is_manual(self):
    return self.buffer_type == BufferType.MANUAL

  @property
  def is_trivial_windowing(self) -> bool:
    """Whether the block is the whole array (no pipelining: plain copies in and out)."""
    return False

  def initialize_slots(self):
    """The ref with its slot counters at zero."""
    raise NotImplementedError()

  def advance_copy_in_slot(self, predicate: bool = True) -> BufferedRefBase:
    raise NotImplementedError()

  def advance_wait_in_slot(self, predicate: bool = True) -> BufferedRefBase:
    raise NotImplementedError()

  def advance_copy_out_slot(self, predicate: bool = True) -> BufferedRefBase:
    raise NotImplementedError()

  def advance_wait_out_slot(self, predicate: bool = True) -> BufferedRefBase:
    raise NotImplementedError()

  @property
  def block_shape(self):
    return self.spec.block_shape

  @property
  def has_indirect(self) -> bool:
    """Whether a block dimension is indexed indirectly."""
    if self.block_shape is None:
      return False
    return any(isinstance(bd, pallas_core.Indirect) for bd in self.block_shape)

  @property
  def has_allocated_buffer(self) -> bool:
    raise NotImplementedError()

  @property
  def compute_index(self):
    return self.spec.index_map

  def get_dma_slice(self, src_ty, grid_indices):
    """The slice of the source array (of type `src_ty`) the block at `grid_indices` copies."""
    shape = getattr(src_ty, "shape", None)
    if shape is None:
      raise ValueError(f"Type {src_ty} does not have a shape")
    if not shape:
      return ()
    tiles = _tiling_of(src_ty, getattr(self, "tiling", None))
    index = self.compute_index(*grid_indices)
    return tuple(_block_slice(i, bd, d, t)
                 for i, bd, d, t in zip(index, self.block_shape, shape, tiles, strict=True))

  def _to_window_slice(self, dma_slice):
    return tuple(ds(0, s.size) for s, bd in zip(dma_slice, self.block_shape)
                 if not (bd is None or isinstance(bd, pallas_core.Squeezed)))

  def bind_existing_ref(self, window_ref, indices):
    """The buffered ref using `window_ref` as its buffer (when it needs none of its own)."""
    return self

  def unbind_refs(self):
    return self

  def with_spec(self, spec: pallas_core.BlockSpec) -> BufferedRefBase:
    raise NotImplementedError()


def _uint32(v):
  return creation.asarray(v, np.uint32)


@dataclasses.dataclass(frozen=True)
class BufferedRef(BufferedRefBase):
  """A multiple-buffered window on a ref for a pipeline: `window_ref` holds `buffer_count`
  blocks (or is the source ref itself when that is already in the buffers' memory space),
  the slot fields count the copies started and waited for, `sem_recvs`/`sem_sends` are the
  DMA semaphores of its input and output copies."""
  _spec: pallas_core.BlockSpec = dataclasses.field(metadata=dict(static=True))
  _buffer_type: BufferType = dataclasses.field(metadata=dict(static=True))
  _buffer_count: int = dataclasses.field(metadata=dict(static=True))
  _grid_rank: int | None = dataclasses.field(metadata=dict(static=True))
  window_ref: Any
  copy_in_slot: Any
  wait_in_slot: Any
  copy_out_slot: Any
  wait_out_slot: Any
  next_fetch: Any
  sem_recvs: Any
  sem_sends: Any
  tiling: Tiling | None = dataclasses.field(metadata=dict(static=True))
  is_trivial_windowing: bool = dataclasses.field(default=False, metadata=dict(static=True))
  has_allocated_buffer: bool = dataclasses.field(default=False, metadata=dict(static=True))

  def __post_init__(self):
    if self.is_buffered and self.buffer_count < 1:
      raise ValueError(f"buffer_count must be at least 1, got {self.buffer_count}")
    if self.is_output and self.is_buffered and self.buffer_count > 2:
      raise NotImplementedError("Buffer count >2 not supported for output buffered refs.")

  @property
  def spec(self):
    return self._spec

  @property
  def buffer_type(self):
    return self._buffer_type

  @property
  def is_buffered(self) -> bool:
    """Whether the ref has buffers of its own."""
    return self._buffer_count > 0

  @property
  def use_lookahead(self) -> bool:
    """Whether blocks may be fetched ahead (tracked in `next_fetch`)."""
    return self._grid_rank is not None

  @property
  def buffer_count(self) -> int:
    """The number of buffers."""
    if not self.is_buffered:
      raise ValueError("buffer count is undefined")
    return self._buffer_count

  @classmethod
  def create(cls, spec, dtype_or_type, buffer_type, buffer_count, grid_rank=None,
             use_lookahead=False, source_memory_space=pallas_core.MemorySpace.ANY,
             tiling: Tiling | None = None, is_trivial_windowing: bool = False) -> BufferedRef:
    """A BufferedRef for blocks of `spec` of `dtype_or_type` (a dtype, or an aval whose
    shape is ignored unless `is_trivial_windowing`); its buffers live in the spec's memory
    space (VMEM by default) and are none when the source already lives there."""
    if isinstance(dtype_or_type, core.AbstractValue):
      ty = dtype_or_type
    else:
      ty = ShapedArray((123, 456), np.dtype(dtype_or_type))
    space = spec.memory_space
    if space is None or space is pallas_core.MemorySpace.DEFAULT:
      space = tpu.MemorySpace.VMEM
    if space not in (tpu.MemorySpace.SMEM, tpu.MemorySpace.VMEM, tpu.MemorySpace.HBM):
      raise ValueError(f"Unsupported buffer memory space: {space}")
    if source_memory_space is space:
      return cls(_spec=spec, _buffer_type=buffer_type, _buffer_count=0, _grid_rank=None,
                 window_ref=None, copy_in_slot=None, wait_in_slot=None, copy_out_slot=None,
                 wait_out_slot=None, next_fetch=None, sem_recvs=None, sem_sends=None,
                 tiling=None, is_trivial_windowing=is_trivial_windowing,
                 has_allocated_buffer=False)
    if use_lookahead and grid_rank is None:
      raise ValueError("grid_rank must be specified when use_lookahead is True.")
    if is_trivial_windowing:
      buffer_ty = ty
    else:
      block = _block_dims(spec)
      if len(block) == 1 and tiling is not Tiling.SPARSE_CORE:
        buffer_ty = ty.update(shape=(buffer_count * block[0],))
      else:
        buffer_ty = ty.update(shape=(buffer_count, *block))
    sems = lambda skip: None if skip else tpu.SemaphoreType.DMA((buffer_count,))  # noqa: E731
    return cls(_spec=spec, _buffer_type=buffer_type, _buffer_count=buffer_count,
               _grid_rank=grid_rank if use_lookahead else None,
               window_ref=space.from_type(buffer_ty), copy_in_slot=None, wait_in_slot=None,
               copy_out_slot=None, wait_out_slot=None, next_fetch=None,
               sem_recvs=sems(buffer_type is BufferType.OUTPUT or is_trivial_windowing),
               sem_sends=sems(buffer_type is BufferType.INPUT or is_trivial_windowing),
               tiling=tiling, is_trivial_windowing=is_trivial_windowing,
               has_allocated_buffer=True)

  @classmethod
  def input(cls, spec, dtype_or_type, buffer_count=2, **kwargs):
    """An input BufferedRef (see `create`)."""
    return cls.create(spec, dtype_or_type, BufferType.INPUT, buffer_count, **kwargs)

  @classmethod
  def output(cls, spec, dtype_or_type, buffer_count=2, **kwargs):
    """An output BufferedRef (see `create`)."""
    return cls.create(spec, dtype_or_type, BufferType.OUTPUT, buffer_count, **kwargs)

  @classmethod
  def input_output(cls, spec, dtype_or_type, buffer_count=2, **kwargs):
    """A BufferedRef read and written (see `create`)."""
    return cls.create(spec, dtype_or_type, BufferType.INPUT_OUTPUT, buffer_count, **kwargs)

  def with_spec(self, spec):
    return dataclasses.replace(self, _spec=spec)

  def with_next_fetch(self, next_fetch=None):
    return dataclasses.replace(self, next_fetch=next_fetch)

  def with_slot_index(self, copy_in_slot=None, copy_out_slot=None, wait_in_slot=None,
                      wait_out_slot=None) -> BufferedRef:
    """The ref with the given slot counters replaced."""
    new = {k: v for k, v in dict(copy_in_slot=copy_in_slot, copy_out_slot=copy_out_slot,
                                 wait_in_slot=wait_in_slot, wait_out_slot=wait_out_slot).items()
           if v is not None}
    return dataclasses.replace(self, **new)

  @property
  def current_ref(self):
    """The buffer the kernel works on now."""
    assert self.window_ref is not None and not isinstance(self.window_ref, core.AbstractValue)
    if not self.is_buffered or self.is_trivial_windowing:
      return self.window_ref
    slot = self.current_copy_out_slot if self.is_output else self.current_wait_in_slot
    return self._window_ref_at(slot)

  def _count(self, value):
    assert value is not None
    return value

  def _slot(self, value):
    return lax.rem(self._count(value), _uint32(self.buffer_count))

  cumulative_copy_in = property(lambda self: self._count(self.copy_in_slot))
  cumulative_copy_out = property(lambda self: self._count(self.copy_out_slot))
  cumulative_wait_in = property(lambda self: self._count(self.wait_in_slot))
  cumulative_wait_out = property(lambda self: self._count(self.wait_out_slot))
  current_copy_in_slot = property(lambda self: self._slot(self.copy_in_slot))
  current_copy_out_slot = property(lambda self: self._slot(self.copy_out_slot))
  current_wait_in_slot = property(lambda self: self._slot(self.wait_in_slot))
  current_wait_out_slot = property(lambda self: self._slot(self.wait_out_slot))

  @property
  def next_fetch_indices(self):
    """The grid indices of the next block to fetch (with lookahead)."""
    if not self.use_lookahead:
      raise ValueError("Can only get fetch indices if using lookahead.")
    assert self.next_fetch is not None
    return self.next_fetch

  def bind_existing_ref(self, window_ref, indices):
    if not self.is_buffered and not self.has_allocated_buffer:
      if self.is_trivial_windowing:
        return dataclasses.replace(self, window_ref=window_ref)
      return dataclasses.replace(self, window_ref=window_ref.at[self.compute_slice(indices)])
    return self

  def unbind_refs(self):
    if not self.is_buffered and not self.has_allocated_buffer:
      return dataclasses.replace(self, window_ref=None)
    return self

  def compute_slice(self, grid_indices):
    """The indexer of the block at `grid_indices` (Blocked and squeezed dimensions only)."""
    index = self.compute_index(*grid_indices)
    assert self.block_shape is not None and len(self.block_shape) == len(index)
    out = []
    for bd, i in zip(self.block_shape, index, strict=True):
      if bd is None or isinstance(bd, pallas_core.Squeezed):
        out.append(i)
      elif isinstance(bd, pallas_core.Element):
        raise ValueError("Element block dimensions are not supported.")
      elif isinstance(bd, pallas_core.BoundedSlice):
        raise ValueError("BoundedSlice block dimensions are not supported.")
      elif isinstance(bd, (pallas_core.Blocked, int, np.integer)):
        size = bd.block_size if isinstance(bd, pallas_core.Blocked) else int(bd)
        out.append(ds(i * size, size))
      else:
        raise ValueError(f"Unsupported block dimension type: {type(bd)}")
    return tuple(out)

  def initialize_slots(self) -> BufferedRef:
    """The ref with its copy counters at zero (and `next_fetch` at the grid's origin)."""
    zero = lambda used: _uint32(0) if used else None  # noqa: E731
    t = self.buffer_type
    return dataclasses.replace(
        self, copy_in_slot=zero(t.is_input), wait_in_slot=zero(t.is_input),
        copy_out_slot=zero(t.is_output), wait_out_slot=zero(t.is_output),
        next_fetch=(None if self._grid_rank is None else
                    tuple(creation.asarray(0, np.int32)
                          for _ in range(self._grid_rank))))

  def _advance(self, name, predicate, used):
    if not self.is_buffered or not used:
      return self
    old = getattr(self, name)
    assert old is not None
    return self.with_slot_index(**{name: lax_numpy.where(predicate, old + 1, old)})

  def advance_copy_in_slot(self, predicate=True) -> BufferedRef:
    return self._advance("copy_in_slot", predicate, self.is_input)

  def advance_wait_in_slot(self, predicate=True) -> BufferedRef:
    return self._advance("wait_in_slot", predicate, self.is_input)

  def advance_copy_out_slot(self, predicate=True) -> BufferedRef:
    return self._advance("copy_out_slot", predicate, self.is_output)

  def advance_wait_out_slot(self, predicate=True) -> BufferedRef:
    return self._advance("wait_out_slot", predicate, self.is_output)

  def _window_ref_at(self, slot, window_slice=None):
    assert self.window_ref is not None
    if self.window_ref.ndim > 1:
      return self.window_ref.at[(slot, *(window_slice or ()))]
    n = self.window_ref.shape[0] // self.buffer_count   # (1-d buffers lie end to end)
    if window_slice is None:
      return self.window_ref.at[ds(slot * n, n)]
    assert len(window_slice) == 1
    return self.window_ref.at[ds(slot * n + window_slice[0].start, window_slice[0].size)]

  def _check_allocated(self):
    assert self.window_ref is not None and not isinstance(self.window_ref, core.AbstractValue)

  def _block_and_window(self, ref, grid_indices, slot):
    """(the block at `grid_indices` of `ref`, its place in window slot `slot`)."""
    self._check_allocated()
    block = self.get_dma_slice(_value_aval(ref), grid_indices)
    return ref.at[block], self._window_ref_at(slot, self._to_window_slice(block))

  def copy_in(self, src_ref, grid_indices):
    """Start copying the block at `grid_indices` of `src_ref` into the copy-in slot."""
    assert self.is_input
    if not self.is_buffered:
      return
    slot = self.current_copy_in_slot
    src, window = self._block_and_window(src_ref, grid_indices, slot)
    tpu.make_async_copy(src, window, self.sem_recvs.at[slot]).start()

  def copy_out(self, dst_ref, grid_indices):
    """Start copying the copy-out slot to the block at `grid_indices` of `dst_ref`."""
    assert self.is_output
    if not self.is_buffered:
      return
    slot = self.current_copy_out_slot
    dst, window = self._block_and_window(dst_ref, grid_indices, slot)
    if self.buffer_count == 1:
      tpu.sync_copy(window, dst)
    else:
      tpu.make_async_copy(window, dst, self.sem_sends.at[slot]).start()

  def wait_in(self, src_ref, grid_indices):
    """Wait for the copy into the wait-in slot."""
    assert self.is_input
    if not self.is_buffered:
      return
    slot = self.current_wait_in_slot
    src, window = self._block_and_window(src_ref, grid_indices, slot)
    tpu.make_async_copy(src, window, self.sem_recvs.at[slot]).wait()

  def wait_out(self, dst_ref, grid_indices):
    """Wait for the copy out of the wait-out slot."""
    assert self.is_output
    if not self.is_buffered:
      return
    slot = self.current_wait_out_slot
    dst, window = self._block_and_window(dst_ref, grid_indices, slot)
    if self.buffer_count > 1:
      tpu.make_async_copy(window, dst, self.sem_sends.at[slot]).wait()


register_dataclass(BufferedRef)
