"""jax.experimental.pallas.mosaic_gpu (`plgpu`) on CPU. What JAX's interpret mode
(`interpret=True`) can evaluate runs here the same way: plain kernels with Mosaic GPU compiler
params, memory spaces and block specs, `kernel` (its body traced once), `nd_loop`,
`emit_pipeline` without operands, and the host-side helpers (`find_swizzle`, `planar_snake`,
`format_tcgen05_sparse_metadata`). The operations that need the hardware (TMA copies,
barriers, WGMMA/tcgen05, TMEM, layouts, atomics, semaphores, clusters, ...) raise, as JAX's
interpret mode does on CPU, saying that they need an NVIDIA GPU with Mosaic GPU."""
from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import importlib.util
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import ml_dtypes
import numpy as np

from arrax._src import dtypes, tree_util
from arrax._src.core import AbstractRef, ShapedArray
from arrax._src.lax import broadcasting, elementwise as lax, parallel
from arrax._src.lax.control_flow import loops
from arrax._src.numpy import lax_numpy
from arrax._src.pallas import core as pallas_core, helpers
from arrax._src.pallas import pallas_call as pallas_call_mod, primitives

SMEM_ALIGNMENT = 1024
TMEM_COL_ALIGNMENT = 4


def _needs_gpu(what: str, cls=NotImplementedError):
  """The error of an operation JAX cannot evaluate on CPU: in a kernel compiled (not
  interpreted) for the CPU, the lowering's ValueError; otherwise `cls`."""
  if pallas_core.kernel_interpreted() is False:
    return ValueError("Only interpret mode is supported on CPU backend.")
  return cls(f"{what} needs an NVIDIA GPU with Mosaic GPU (Hopper/Blackwell); Pallas "
             "interpret mode on CPU cannot evaluate it")


# ---- enums ------------------------------------------------------------------------------------
class TraceScope(enum.Enum):
  """The scope at which profiler traces are collected."""
  WARP = "warp"
  WARPGROUP = "warpgroup"


class LoweringSemantics(enum.Enum):
  """Whether Mosaic GPU lowers per lane or per warpgroup."""
  Lane = enum.auto()
  Warpgroup = enum.auto()


class OOBFillMode(enum.Enum):
  """What TMA loads read out of bounds."""
  UNDEFINED = 0
  PROMISE_IN_BOUNDS = 1
  ZEROS = 2


class PipelinePipeline(enum.IntEnum):
  """Which part of a warp-specialized pipeline to emit."""
  START = 0
  STEADY = 1
  STOP = 2


@dataclasses.dataclass(frozen=True)
class _ParameterizedLayout:
  layout: Any
  args: tuple
  kwargs: tuple


class Layout(enum.Enum):
  """Register layouts of Mosaic GPU arrays (some take parameters: `Layout.X(*args)`)."""
  WGMMA = enum.auto()
  WGMMA_8BIT = enum.auto()
  WGMMA_UPCAST_2X = enum.auto()
  WGMMA_UPCAST_4X = enum.auto()
  WGMMA_TRANSPOSED = enum.auto()
  WG_SPLAT = enum.auto()
  WG_STRIDED = enum.auto()
  TILED = enum.auto()
  TCGEN05 = enum.auto()
  TCGEN05_TRANSPOSED = enum.auto()
  TCGEN05_M64_COLLECTIVE = enum.auto()
  TCGEN05_TMEM_NATIVE = enum.auto()
  TCGEN05_M64_COLLECTIVE_NATIVE = enum.auto()
  SMEM_GMEM_COPY = enum.auto()
  TMA_INDICES = enum.auto()
  TMA_INDICES_4 = enum.auto()
  _WGMMA_ACC_32BIT = enum.auto()

  def __call__(self, *args, **kwargs):
    return _ParameterizedLayout(self, args, tuple(sorted(kwargs.items())))


class TMEMLayout(enum.Enum):
  """Special tensor-memory layouts (scales, sparse metadata, M=64 collective)."""
  SCALES_LAYOUT = enum.auto()
  SPARSE_METADATA_LAYOUT = enum.auto()
  M64_COLLECTIVE_LAYOUT = enum.auto()
  SCALES_M64_COLLECTIVE_LAYOUT = enum.auto()


@dataclasses.dataclass(frozen=True)
class Tiling:
  """A tiling of an nd-array: a sequence of tiles, each applied to the trailing dims."""
  tiles: tuple


@dataclasses.dataclass(frozen=True)
class Replicated:
  """A layout dimension replicated `times` times."""
  times: int


class CopyPartition:
  """How a collective copy is split: `PARTITIONED(axis)` or `REPLICATED`."""
  PARTITIONED: ClassVar[type]
  REPLICATED: ClassVar[Any]


@dataclasses.dataclass(frozen=True)
class _Partitioned(CopyPartition):
  axis: int


@dataclasses.dataclass(frozen=True)
class _Replicated(CopyPartition):
  pass


CopyPartition.PARTITIONED = _Partitioned
CopyPartition.REPLICATED = _Replicated()


# ---- compiler params and memory ---------------------------------------------------------------
@dataclasses.dataclass(frozen=True, kw_only=True)
class CompilerParams:
  """Mosaic GPU compiler parameters (interpret mode ignores them)."""
  approx_math: bool = False
  dimension_semantics: Sequence[str] | None = None
  max_concurrent_steps: int = 1
  unsafe_no_auto_barriers: bool = False
  reduction_scratch_bytes: int = 128 * 4 * 4
  profile_space: int = 0
  profile_dir: str = ""
  profile_trace_scope: TraceScope = TraceScope.WARPGROUP
  lowering_semantics: LoweringSemantics = LoweringSemantics.Lane

  def __post_init__(self):
    if self.dimension_semantics is not None:
      object.__setattr__(self, "dimension_semantics", tuple(self.dimension_semantics))
    if bool(self.profile_space) != bool(self.profile_dir):
      raise ValueError("Either both profile_space and profile_dir must be set, or neither.")

  replace = dataclasses.replace


class Transform:
  """Base of the ref transforms (`ref.at[...]`-like views given by a rule on types)."""

  def transform_type(self, x):
    raise NotImplementedError

  def undo(self, x):
    raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class TilingTransform(Transform):
  """Tile the trailing dims: (M, N) tiled by (X, Y) is viewed as (M // X, N // Y, X, Y)."""
  tiling: tuple

  def transform_type(self, x):
    if isinstance(x, AbstractRef):
      return AbstractRef(self.transform_type(x.inner_aval), x.memory_space)
    if not isinstance(x, ShapedArray):
      raise TypeError(f"Cannot transform type: {x}")
    n = len(self.tiling)
    lead, tiled = x.shape[:-n], x.shape[-n:]
    assert all(d % t == 0 for d, t in zip(tiled, self.tiling))
    return ShapedArray((*lead, *(d // t for d, t in zip(tiled, self.tiling)), *self.tiling),
                       x.dtype)


@dataclasses.dataclass(frozen=True)
class SwizzleTransform(Transform):
  """Swizzle (32, 64 or 128 bytes) of a ref whose minor dim spans exactly the swizzle."""
  swizzle: int

  def __post_init__(self):
    if self.swizzle not in {32, 64, 128}:
      raise ValueError(f"Swizzle {self.swizzle} is not supported. Only 32, 64 and 128 are "
                       "accepted.")

  def transform_type(self, x):
    if isinstance(x, AbstractRef):
      return AbstractRef(self.transform_type(x.inner_aval), x.memory_space)
    if not isinstance(x, ShapedArray):
      raise NotImplementedError(f"Unsupported type: {x}")
    elems = self.swizzle * 8 // helpers.dtype_bits(x.dtype)
    if elems != x.shape[-1]:
      raise ValueError(f"Swizzle {self.swizzle} requires the trailing dimension to be of size "
                       f"{elems}, but got shape: {x.shape}")
    return x


@dataclasses.dataclass
class PeerMemRef(Transform):
  """A view of a ref on another device (`remote_ref`)."""
  device_id: Any
  device_id_type: Any


class MemorySpace(enum.Enum):
  """GPU memory spaces; calling one with (shape, dtype) gives a GPU MemoryRef."""
  GMEM = "gmem"
  SMEM = "smem"
  TMEM = "tmem"
  REGS = "regs"

  def __str__(self) -> str:
    return self.value

  def __call__(self, shape, dtype, *, transforms=(), packed: bool | None = None,
               collective: bool | None = None, layout: TMEMLayout | None = None):
    shape = tuple(shape)
    if self == MemorySpace.TMEM:
      if transforms:
        raise ValueError("transforms are not supported for TMEM")
      if collective is None:
        collective = False
      if layout is None:
        if packed is None and helpers.dtype_bits(np.dtype(dtype)) != 32:
          raise ValueError("dtypes narrower than 32-bit require either the packed argument "
                           "or an explicit TMEM layout")
      elif packed is not None:
        raise ValueError("packed cannot be specified if layout is specified.")
    elif packed is not None or collective is not None or layout is not None:
      raise ValueError("packed, collective and layout arguments are only supported for TMEM.")
    return GPUMemoryRef(ShapedArray(shape, dtypes.canonicalize_dtype(dtype)), self,
                        transforms=tuple(transforms), layout=layout, collective=collective)

  def like(self, shape_dtype_like):
    return self(shape_dtype_like.shape, shape_dtype_like.dtype)


GMEM = MemorySpace.GMEM
SMEM = MemorySpace.SMEM
TMEM = MemorySpace.TMEM
REGS = MemorySpace.REGS


@dataclasses.dataclass(frozen=True)
class GPUMemoryRef(pallas_core.MemoryRef):
  """A shape and dtype in a GPU memory space, with optional ref transforms (tiling,
  swizzling) and, for TMEM, a layout."""
  transforms: Sequence[Transform] = ()
  layout: Any = dataclasses.field(default=None, kw_only=True)
  collective: bool | None = dataclasses.field(default=None, kw_only=True)

  def get_ref_aval(self):
    if self.transforms:
      raise _needs_gpu(f"A ref with transforms {tuple(self.transforms)}")
    return AbstractRef(self.inner_aval, self.memory_space)


def _ref_group_size(refs) -> int:
  size = 0
  for ref in tree_util.tree_leaves(refs):
    size = -(-size // SMEM_ALIGNMENT) * SMEM_ALIGNMENT
    dt = np.dtype(ref.dtype)
    if not (np.issubdtype(dt, np.integer) or np.issubdtype(dt, np.floating)):
      raise NotImplementedError(f"Unsupported dtype: {ref.dtype}")
    bits = math.prod(ref.shape) * helpers.dtype_bits(dt)
    if bits % 8:
      raise ValueError(f"Only byte-aligned shapes are supported. Got shape: "
                       f"{ref.dtype}{ref.shape}")
    size += bits // 8
  return size


@dataclasses.dataclass(frozen=True, init=False)
class RefUnion(GPUMemoryRef):
  """Groups of SMEM refs sharing one buffer (their lifetimes must not overlap)."""
  refs: Sequence[Any] = ()

  def __init__(self, *refs):
    leaves = tree_util.tree_leaves(refs)
    if not all(r.memory_space == SMEM for r in leaves):
      if all(r.memory_space == TMEM for r in leaves):
        raise _needs_gpu("A RefUnion of TMEM refs")
      raise NotImplementedError("All aliased Refs must have the same memory space (SMEM or "
                                "TMEM).")
    object.__setattr__(self, "refs", refs)
    object.__setattr__(self, "inner_aval",
                       ShapedArray((max(map(_ref_group_size, refs)),), np.dtype(np.int8)))
    object.__setattr__(self, "memory_space", SMEM)
    object.__setattr__(self, "transforms", ())
    object.__setattr__(self, "layout", None)
    object.__setattr__(self, "collective", None)


class SemaphoreType(enum.Enum):
  """GPU semaphores (in GMEM); `.REGULAR(shape)` gives a scratch MemoryRef."""
  REGULAR = "regular"
  BARRIER = "barrier"

  def __call__(self, shape):
    return pallas_core.MemoryRef(ShapedArray(tuple(shape), np.dtype(np.int16)),
                                 MemorySpace.GMEM)

  def get_array_aval(self):
    return self(()).get_array_aval()

  def get_ref_aval(self):
    return self(()).get_ref_aval()


def _check_barrier(self):
  """Check a barrier's arrival count and make its `num_barriers` a shape."""
  if self.num_arrivals < 1:
    raise ValueError(f"Num arrivals must be at least 1, but got {self.num_arrivals}")
  n = self.num_barriers
  object.__setattr__(self, "num_barriers", (n,) if isinstance(n, int) else tuple(n))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Barrier:
  """An SMEM mbarrier (or an array of `num_barriers` of them) as a scratch shape."""
  num_arrivals: int = 1
  num_barriers: Any = 1
  orders_tensor_core: bool = False

  __post_init__ = _check_barrier

  def get_array_aval(self):
    raise ValueError("Barriers are not arrays")

  def get_ref_aval(self):
    raise _needs_gpu("An SMEM barrier")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClusterBarrier:
  """A barrier shared by the blocks of a cluster along `collective_axes`."""
  collective_axes: tuple
  num_barriers: Any = 1
  num_arrivals: int = 1
  orders_tensor_core: bool = False
  leader_tracked: bool = False

  __post_init__ = _check_barrier

  def get_array_aval(self):
    raise ValueError("Cluster barriers are not arrays")

  def get_ref_aval(self):
    raise _needs_gpu("A cluster barrier")


class _Uninitialized:
  def __repr__(self):
    return "uninitialized"


_uninitialized = _Uninitialized()


@dataclasses.dataclass(frozen=True)
class WGMMAAccumulatorRef:
  """A WGMMA accumulator in registers, as a scratch shape (`ACC`)."""
  shape: tuple
  dtype: Any = np.dtype(np.float32)
  _init: Any = _uninitialized

  def get_ref_aval(self):
    if self._init is not _uninitialized:
      raise ValueError("Preinitialized WGMMAAccumulatorRef only supported in pl.run_state.")
    return AbstractRef(ShapedArray(tuple(self.shape), np.dtype(self.dtype)), MemorySpace.REGS)

  @staticmethod
  def init(array):
    return WGMMAAccumulatorRef(array.shape, array.dtype, _init=array)


ACC = WGMMAAccumulatorRef


def TryClusterCancelResult(num_buffers: int | None = None):  # noqa: N802
  """SMEM for cluster launch control results: 16 bytes (per buffer)."""
  if num_buffers is None:
    return SMEM((16,), np.int8)
  return SMEM((num_buffers, 16), np.int8)


@dataclasses.dataclass
class BlockSpec(pallas_core.BlockSpec):
  """A BlockSpec with GPU extras: ref `transforms` (need the GPU), `delay_release` and
  `collective_axes` (pipelining hints)."""
  transforms: Sequence[Transform] = ()
  delay_release: int = 0
  collective_axes: tuple = ()

  def __post_init__(self):
    super().__post_init__()
    if self.transforms and self.index_map is not None:
      transforms = tuple(self.transforms)

      def unsupported(*args):
        raise _needs_gpu(f"A block with transforms {transforms}")
      self.index_map = pallas_core._IndexMapFunc(unsupported)


@dataclasses.dataclass(frozen=True)
class ShapeDtypeStruct:
  """A shape and dtype with a register layout (for `inline_mgpu`)."""
  shape: tuple
  dtype: Any
  layout: Any


@dataclasses.dataclass(frozen=True)
class RefType:
  """The type of a ref argument of `inline_mgpu` (with its transforms)."""
  transforms: tuple = ()


@dataclasses.dataclass(frozen=True)
class SemaphoreSignal:
  """One signal of `semaphore_signal_parallel`."""
  ref: Any
  _: dataclasses.KW_ONLY
  device_id: Any
  inc: Any = 1


# ---- meshes and kernels -----------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, kw_only=True)
class Mesh:
  """The launch shape of a Mosaic GPU kernel: grid, cluster and (warpgroup) threads."""
  grid: Sequence[int] = ()
  grid_names: Sequence[str] = ()
  cluster: Sequence[int] = ()
  cluster_names: Sequence[str] = ()
  num_threads: int | None = None
  thread_name: str | None = None
  kernel_name: str | None = None

  def __post_init__(self):
    if len(self.cluster) > 3:
      raise ValueError(f"cluster= must be at most 3D, got {self}.")
    if len(self.grid_names) != len(self.grid):
      raise ValueError(f"grid_names must have the same length as grid, got {self}.")
    if len(self.cluster_names) != len(self.cluster):
      raise ValueError(f"cluster_names must have the same length as cluster, got {self}.")
    if (self.thread_name is None) != (self.num_threads is None):
      raise ValueError("num_threads and thread_name must be either both set or both None, "
                       f"got {self}")
    if self.num_threads is not None and self.num_threads > 2048 // 128:
      raise ValueError("Requested too many CUDA threads per block. Each Mosaic thread "
                       f"corresponds to 128 CUDA threads. At most {2048 // 128} are "
                       f"supported, got {self}")
    for name in ("grid", "grid_names", "cluster", "cluster_names"):
      object.__setattr__(self, name, tuple(getattr(self, name)))

  @property
  def default_memory_space(self):
    return MemorySpace.GMEM

  @property
  def shape(self):
    names = (*self.grid_names, *self.cluster_names)
    sizes = (*self.grid, *self.cluster)
    if self.num_threads is not None:
      names, sizes = (*names, self.thread_name), (*sizes, self.num_threads)
    return collections.OrderedDict(zip(names, sizes))

  @property
  def core_type(self):
    return "gpu"

  @property
  def supported_memory_spaces(self):
    return list(MemorySpace)

  def check_is_compatible_with(self, other_mesh):
    raise NotImplementedError()


@dataclasses.dataclass(frozen=True, kw_only=True)
class WarpMesh:
  """The four warps of a warpgroup, as a mesh axis named `axis_name`."""
  _NUM_WARPS_PER_WARPGROUP: ClassVar[int] = 4
  axis_name: Any

  @property
  def shape(self):
    return collections.OrderedDict([(self.axis_name, self._NUM_WARPS_PER_WARPGROUP)])

  @property
  def default_memory_space(self):
    raise NotImplementedError

  @property
  def core_type(self):
    return "gpu_warp"


class _NotSpecified:
  def __repr__(self):
    return "<not-specified>"


_NOT_SPECIFIED = _NotSpecified()


def kernel(body=_NOT_SPECIFIED, out_shape=_NOT_SPECIFIED, *, out_type=_NOT_SPECIFIED,
           scratch_types=_NOT_SPECIFIED, scratch_shapes=_NOT_SPECIFIED, compiler_params=None,
           grid=(), grid_names=(), cluster=(), cluster_names=(), num_threads=None,
           thread_name=None, interpret=None, **mesh_kwargs):
  """A function of arrays running `body(*input_refs, *output_refs, *scratch_refs)` as a
  Mosaic GPU kernel; without `body`, a decorator. On CPU it runs in interpret mode, where
  (as in JAX) the body is traced once: querying grid or thread axes, or running several
  warpgroup threads, needs the GPU."""
  if body is _NOT_SPECIFIED:
    return lambda fun: kernel(
        fun, out_shape, out_type=out_type, scratch_shapes=scratch_shapes,
        scratch_types=scratch_types, compiler_params=compiler_params, grid=grid,
        grid_names=grid_names, cluster=cluster, cluster_names=cluster_names,
        num_threads=num_threads, thread_name=thread_name, interpret=interpret, **mesh_kwargs)
  if out_shape is not _NOT_SPECIFIED:
    if out_type is not _NOT_SPECIFIED:
      raise ValueError("Cannot specify both out_shape and out_type. Use out_type.")
    out_type = out_shape
  elif out_type is _NOT_SPECIFIED:
    out_type = ()
  if scratch_shapes is not _NOT_SPECIFIED:
    if scratch_types is not _NOT_SPECIFIED:
      raise ValueError("Cannot specify both scratch_shapes and scratch_types. Use "
                       "scratch_types.")
    scratch_types = scratch_shapes
  elif scratch_types is _NOT_SPECIFIED:
    scratch_types = ()
  unwrap = not isinstance(out_type, (tuple, list))
  if unwrap:
    out_type = (out_type,)
  mesh = Mesh(grid=grid, grid_names=grid_names, cluster=cluster, cluster_names=cluster_names,
              num_threads=num_threads, thread_name=thread_name, **mesh_kwargs)
  name = getattr(body, "__name__", "anonymous") if mesh.kernel_name is None else \
      mesh.kernel_name

  def kernel_body(*refs):
    if mesh.thread_name is not None:
      raise _needs_gpu(f"A kernel with {mesh.num_threads} warpgroup threads")
    seq = scratch_types if isinstance(scratch_types, Sequence) else ()
    kw = scratch_types if isinstance(scratch_types, Mapping) else {}
    primitives.run_scoped(functools.partial(body, *refs), *seq, **kw)

  def wrapper(*operands):
    outs = pallas_call_mod.pallas_call(
        kernel_body, out_shape=tuple(out_type), interpret=bool(interpret), name=name,
        compiler_params=compiler_params)(*operands)
    return outs[0] if unwrap else outs
  return wrapper


# ---- helpers ----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, eq=False)
class NDLoopInfo:
  """One step of `nd_loop`: grid `index`, the step's `local_index` and `num_local_steps`."""
  index: tuple
  local_index: Any
  num_local_steps: Any


def _unravel(step, grid):
  """The row-major index into `grid` of the linear index `step`."""
  index = []
  for dim in reversed(grid):
    dim = lax.convert_element_type(dim, step.dtype)
    index.append(lax.rem(step, dim))
    step = lax.div(step, dim)
  return index[::-1]


def nd_loop(grid, *, collective_axes, tiling=None, init_carry=None):
  """Decorator: a loop over the points of `grid`, shared round-robin among the devices of
  `collective_axes` (optionally in tiles of `tiling`); the body takes an NDLoopInfo (and,
  with `init_carry`, `carry=` returning the next carry)."""
  axis_index = lax_numpy.asarray(parallel.axis_index(collective_axes), np.int32)
  axis_size = parallel.axis_size(collective_axes)
  grid = tuple(grid)
  if tiling:
    if len(grid) != len(tiling):
      raise ValueError(f"tiling={tiling!r} and grid={grid!r} must have same length.")
    for d, t in zip(grid, tiling):
      if isinstance(d, (int, np.integer)) and d % t:
        raise ValueError(f"Tiling {tiling} does not divide grid {grid}.")
    grid = (*(d // t for d, t in zip(grid, tiling)), *tiling)
  idx_dtype = axis_index.dtype
  total = lax_numpy.astype(math.prod(grid) if all(isinstance(g, int) for g in grid)
                           else functools.reduce(lambda a, b: a * b, grid), idx_dtype)
  size = lax_numpy.astype(axis_size, idx_dtype)
  upper = lax.add(lax.div(total, size),
                  lax.convert_element_type(axis_index < lax.rem(total, size), idx_dtype))

  def decorator(body):
    def step_fn(local, carry):
      index = _unravel(local * size + axis_index, grid)
      if tiling:
        n = len(tiling)
        index = [s + t * w for t, s, w in zip(index[:n], index[n:], tiling)]
      info = NDLoopInfo(index=tuple(index), local_index=local, num_local_steps=upper)
      if init_carry is None:
        body(info)
        return None
      return body(info, carry=carry)
    return loops.fori_loop(0, upper, step_fn, init_carry)
  return decorator


def find_swizzle(minor_dim_bits: int, what: str = ""):
  """The largest swizzle (128, 64, 32 or 16 bytes) dividing a minor dimension of
  `minor_dim_bits` bits."""
  for swizzle in (128, 64, 32, 16):
    if minor_dim_bits % (swizzle * 8) == 0:
      return swizzle
  what = f" for {what}" if what else ""
  raise ValueError(f"No valid out swizzle{what}: minor dimension has {minor_dim_bits} bits, "
                   "which is not a multiple of 128 (16 bytes)")


def planar_snake(lin_idx, shape, minor_dim: int, tile_width: int):
  """The 2D index of step `lin_idx` of a snaking walk over `shape`: tiles `tile_width` wide
  along `minor_dim`, every other one walked backwards along the major dim."""
  i32 = np.dtype(np.int32)
  lin_idx = lax_numpy.asarray(lin_idx)
  width = lax_numpy.asarray(tile_width, i32)
  major = lax_numpy.asarray(shape[1 - minor_dim], i32)
  minor_size = lax_numpy.asarray(shape[minor_dim], i32)
  tile = lax.div(lin_idx, width * major)

  def coords(lin, w):
    minor_in = lax.rem(lin, w)
    major_in = lax.rem(lax.div(lin, w), major)
    mn = tile * width + minor_in
    mj = lax.select(lax.rem(tile, lax_numpy.asarray(2, i32)) == 0, major_in,
                    major - 1 - major_in)
    return (mn, mj) if minor_dim == 0 else (mj, mn)

  full_tiles = minor_size // width
  full_elems = full_tiles * width * major
  is_full = lin_idx < full_elems
  a = coords(lin_idx, width)
  b = coords(lin_idx - full_elems, minor_size - full_tiles * width)
  return tuple(lax.select(is_full, x, y) for x, y in zip(a, b))


def format_tcgen05_sparse_metadata(meta, operand_dtype):
  """Rearrange (M, K // 4, 2) uint2 sparse metadata into the tiled (M // 128, K // 64, 128,
  64) order tcgen05's sparse MMA reads (for 8- or 16-bit operands)."""
  if np.dtype(meta.dtype) != np.dtype(ml_dtypes.uint2):
    raise ValueError(f"Expected metadata dtype to be uint2, got: {meta.dtype}")
  if meta.ndim != 3:
    raise ValueError("Expected metadata to be 3-dimensional (M, K // 4, 2), but it is "
                     f"{meta.ndim}D")
  m, k, two = meta.shape
  if two != 2:
    raise ValueError(f"Expected the trailing dimension of the metadata to be 2, got: "
                     f"{meta.shape[-1]}")
  k *= 2
  bits = helpers.dtype_bits(np.dtype(operand_dtype))
  if bits == 8:
    tiled = lax_numpy.transpose(meta.reshape(m // 128, 128, k // 64, 64), (0, 2, 1, 3))
  elif bits == 16:
    tiled = lax_numpy.transpose(meta.reshape(m // 128, 8, 2, 8, k // 64, 4, 2, 8),
                                (0, 4, 1, 6, 3, 5, 2, 7))
  else:
    raise NotImplementedError(
        f"Sparse metadata format not implemented for operand_dtype={operand_dtype!r}")
  return tiled.reshape(m // 128, k // 64, 128, 64)


def dynamic_scheduling_loop(grid_names, thread_axis=None, cluster_axes=(), init_carry=None):
  """Decorator: a loop over grid points scheduled dynamically by cluster launch control
  (needs the GPU)."""
  def decorator(body):
    raise _needs_gpu("plgpu.dynamic_scheduling_loop (cluster launch control)")
  return decorator


def warp_map(f, /):
  """Run `f(warp_id)` with single-warp semantics on each warp of the warpgroup (needs the
  GPU)."""
  raise _needs_gpu("plgpu.warp_map (a core_map over a WarpMesh)")


# ---- pipelines --------------------------------------------------------------------------------
def emit_pipeline(body, *, grid, in_specs=(), out_specs=(), max_concurrent_steps: int = 1,
                  init_carry=None):
  """A function of GMEM refs running `body(indices, *in_smem, *out_smem[, carry])` over
  `grid`, copying blocks through SMEM with TMA. On CPU only the operand-free form runs (the
  TMA copies need the GPU)."""
  if any(g <= 0 for g in grid if isinstance(g, int)):
    raise ValueError(f"All elements in the grid must be strictly positive, but got "
                     f"grid={grid!r}")
  grid = tuple(grid)

  def pipeline(*gmem_refs):
    if tree_util.tree_leaves((in_specs, out_specs)) or gmem_refs:
      raise _needs_gpu("plgpu.emit_pipeline's TMA copies (copy_gmem_to_smem)")

    def step_fn(step, carry):
      idx = tuple(_unravel(step, grid))
      if init_carry is None:
        body(idx)
        return None
      return body(idx, carry)
    return loops.fori_loop(0, math.prod(grid), step_fn, init_carry)
  return pipeline


def emit_pipeline_warp_specialized(body, *, grid, memory_registers: int, in_specs=(),
                                   out_specs=(), max_concurrent_steps: int = 2, wg_axis: str,
                                   num_compute_wgs: int, pipeline_state=None,
                                   manual_consumed_barriers: bool = False,
                                   compute_context=None, memory_thread_idx: int | None = None):
  """A pipeline with a memory warpgroup issuing TMA copies for `num_compute_wgs` compute
  warpgroups (needs the GPU)."""
  def pipeline(*gmem_refs, allocations=None):
    raise _needs_gpu("plgpu.emit_pipeline_warp_specialized")
  pipeline.get_allocations = lambda *gmem_refs: pipeline()
  return pipeline


# ---- GPU-only operations ----------------------------------------------------------------------
def _def(name, signature_doc, cls=NotImplementedError):
  def op(*args, **kwargs):
    raise _needs_gpu(f"plgpu.{name}", cls)
  op.__name__ = op.__qualname__ = name
  op.__doc__ = f"{signature_doc} (needs an NVIDIA GPU with Mosaic GPU)."
  return op


def copy_gmem_to_smem(src, dst, barrier, *, collective_axes=None, leader_tracked=None,
                      oob_mode: OOBFillMode = OOBFillMode.ZEROS) -> None:
  """Asynchronous TMA copy from GMEM to SMEM, arriving on `barrier` (needs the GPU)."""
  raise _needs_gpu("plgpu.copy_gmem_to_smem (a TMA copy)")


def copy_smem_to_gmem(src, dst, predicate=None, *, commit_group: bool = True,
                      reduction_op=None) -> None:
  """Asynchronous TMA copy from SMEM to GMEM (needs the GPU)."""
  raise _needs_gpu("plgpu.copy_smem_to_gmem (a TMA copy)")


def wait_smem_to_gmem(n: int, wait_read_only: bool = False) -> None:
  """Wait until at most `n` SMEM-to-GMEM copy groups are in flight (needs the GPU)."""
  raise _needs_gpu("plgpu.wait_smem_to_gmem")


def broadcasted_iota(dtype, shape, dimension: int, *, layout=None):
  """`lax.broadcasted_iota` in a register `layout` (a layout needs the GPU)."""
  out = broadcasting.broadcasted_iota(dtype, tuple(shape), dimension)
  if layout is not None:
    return layout_cast(out, layout)
  return out


def layout_cast(x, new_layout):
  """`x` in register layout `new_layout` (needs the GPU)."""
  raise _needs_gpu("plgpu.layout_cast (register layouts)")


def load(src, idx, *, layout=None, optimized: bool = True):
  """Load `src[idx]` into registers with `layout` (needs the GPU)."""
  raise _needs_gpu("plgpu.load")


def inline_mgpu(*, arg_types=(), return_type=None):
  """Decorator: inline Mosaic GPU (MLIR) code in a kernel (needs the GPU)."""
  def decorator(f):
    @functools.wraps(f)
    def wrapper(*args):
      raise _needs_gpu("plgpu.inline_mgpu")
    return wrapper
  return decorator


def async_prefetch(ref, *, collective_axes=None, leader_tracked=None) -> None:
  """Prefetch `ref` into L2 (a hint; JAX's interpret mode drops it too)."""
  del ref, collective_axes, leader_tracked


def transform_ref(ref, transform):
  """`ref` seen through a GPU transform (needs the GPU)."""
  raise _needs_gpu(f"plgpu.transform_ref ({transform})")


def transpose_ref(ref, permutation):
  """`ref` with its dimensions permuted (needs the GPU)."""
  raise _needs_gpu("plgpu.transpose_ref")


def as_torch_kernel(fn):
  """Wrap a Mosaic GPU kernel to be called on PyTorch tensors (needs torch and a GPU)."""
  @functools.wraps(fn)
  def wrapper(*args):
    if importlib.util.find_spec("torch") is None:
      raise RuntimeError("Can't compile for PyTorch: import torch failed")
    raise _needs_gpu("plgpu.as_torch_kernel")
  return wrapper


barrier_arrive = _def("barrier_arrive", "Arrive on an SMEM barrier")
barrier_wait = _def("barrier_wait", "Wait on an SMEM barrier")
barrier_test = _def("barrier_test", "Whether an SMEM barrier's phase completed")
commit_smem = _def("commit_smem", "Make SMEM writes visible to TMA")
commit_smem_to_gmem_group = _def("commit_smem_to_gmem_group",
                                 "Commit the pending SMEM-to-GMEM copies as a group")
commit_tmem = _def("commit_tmem", "Make TMEM stores visible to tcgen05")
async_copy_scales_to_tmem = _def("async_copy_scales_to_tmem", "Copy MMA scales SMEM->TMEM")
async_copy_smem_to_tmem = _def("async_copy_smem_to_tmem", "Copy SMEM to TMEM")
async_copy_sparse_metadata_to_tmem = _def("async_copy_sparse_metadata_to_tmem",
                                          "Copy sparse MMA metadata SMEM->TMEM")
async_load_tmem = _def("async_load_tmem", "Start a load of a TMEM ref into registers")
async_store_tmem = _def("async_store_tmem", "Start a store of registers into TMEM")
async_store_smem = _def("async_store_smem", "Store into another block's SMEM in the cluster")
wait_load_tmem = _def("wait_load_tmem", "Wait for pending TMEM loads")
atomic_add = _def("atomic_add", "Atomic GMEM/SMEM add", ValueError)
atomic_and = _def("atomic_and", "Atomic GMEM/SMEM and", ValueError)
atomic_max = _def("atomic_max", "Atomic GMEM/SMEM max", ValueError)
atomic_min = _def("atomic_min", "Atomic GMEM/SMEM min", ValueError)
atomic_or = _def("atomic_or", "Atomic GMEM/SMEM or", ValueError)
atomic_xor = _def("atomic_xor", "Atomic GMEM/SMEM xor", ValueError)
griddepcontrol_launch_dependents = _def("griddepcontrol_launch_dependents",
                                        "Allow dependent grids to launch")
griddepcontrol_wait = _def("griddepcontrol_wait", "Wait for the grids this one depends on")
multimem_load_reduce = _def("multimem_load_reduce", "Load and reduce over multicast memory")
multimem_store = _def("multimem_store", "Store to multicast memory")
print_layout = _def("print_layout", "Print an array's register layout")
query_cluster_cancel = _def("query_cluster_cancel", "Read a cluster launch control result")
try_cluster_cancel = _def("try_cluster_cancel", "Cancel a not yet launched cluster")
semaphore_signal = _def("semaphore_signal", "Signal a GPU semaphore")
semaphore_signal_multicast = _def("semaphore_signal_multicast",
                                  "Signal a semaphore on every device of some axes")
semaphore_signal_parallel = _def("semaphore_signal_parallel", "Signal several semaphores")
semaphore_wait = _def("semaphore_wait", "Wait on a GPU semaphore")
set_max_registers = _def("set_max_registers", "Raise or lower the warpgroup's register limit")
tcgen05_commit_arrive = _def("tcgen05_commit_arrive",
                             "Arrive on a barrier when the pending tcgen05 ops complete")
tcgen05_mma = _def("tcgen05_mma", "Blackwell tensor-core MMA into TMEM")
wgmma = _def("wgmma", "Hopper warpgroup MMA into an accumulator")
wgmma_accumulator_load = _def("wgmma_accumulator_load", "Read a WGMMA accumulator")
wgmma_wait = _def("wgmma_wait", "Wait until at most n WGMMAs are pending")
cluster_ref = _def("cluster_ref", "A ref of another block of the cluster")
multicast_ref = _def("multicast_ref", "A multicast view of a ref over some axes")
remote_ref = _def("remote_ref", "A ref on another device")
