"""The parts of jax.experimental.pallas.tpu that interpret mode can run: TPU memory spaces
(VMEM, SMEM, ... as MemoryRef factories for scratch shapes and block specs), semaphores
(int16 refs starting at zero), local DMAs (`make_async_copy`/`async_copy`/`sync_copy`: the
copy happens at `start`, `wait` has nothing left to wait for), the compiler parameters
(accepted and ignored), grid dimension semantics, and `PrefetchScalarGridSpec`
(scalar-prefetch operands: passed whole to the kernel and to every index map as refs)."""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import enum
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from arrax._src import backend, dtypes, tree_util
from arrax._src.core import AbstractRef, ShapedArray
from arrax._src.lax import elementwise as lax, parallel
from arrax._src.numpy import assembly, lax_numpy
from arrax._src.pallas import core as pallas_core
from arrax._src.pallas import helpers, primitives, triton
from arrax._src.pallas.tpu_info import Tiling, get_tpu_info


class GridDimensionSemantics(enum.Enum):
  """How a grid dimension's iterations may run (a hint; interpret mode runs them in order)."""
  PARALLEL = "parallel"
  CORE_PARALLEL = "core_parallel"
  SUBCORE_PARALLEL = "subcore_parallel"
  ARBITRARY = "arbitrary"


PARALLEL = GridDimensionSemantics.PARALLEL
CORE_PARALLEL = GridDimensionSemantics.CORE_PARALLEL
SUBCORE_PARALLEL = GridDimensionSemantics.SUBCORE_PARALLEL
ARBITRARY = GridDimensionSemantics.ARBITRARY


class SideEffectType(enum.Enum):
  """Whether a kernel may be deduplicated or removed by XLA."""
  PURE = "pure"
  DATAFLOW_SIDE_EFFECTING = "dataflow_side_effecting"
  SIDE_EFFECTING = "side_effecting"


class _NamedEnum(enum.Enum):
  """An enum printed by value (str) and by name (repr)."""

  def __str__(self) -> str:
    return self.value

  def __repr__(self) -> str:
    return self.name


class MemorySpace(_NamedEnum):
  """TPU memory spaces; calling one with (shape, dtype) gives a MemoryRef."""
  VMEM = "vmem"
  VMEM_SHARED = "vmem_shared"
  SMEM = "smem"
  CMEM = "cmem"
  SEMAPHORE = "semaphore_mem"
  HBM = "hbm"

  from_type = pallas_core.MemorySpace.from_type
  __call__ = pallas_core.MemorySpace.__call__


@dataclasses.dataclass(frozen=True, init=False)
class CompilerParams:
  """Mosaic TPU compiler parameters (interpret mode ignores them)."""
  dimension_semantics: tuple | None = None
  allow_input_fusion: tuple | None = None
  vmem_limit_bytes: int | None = None
  collective_id: int | None = None
  has_side_effects: Any = False
  flags: Any = None
  internal_scratch_in_bytes: int | None = None
  serialization_format: int = 1
  disable_bounds_checks: bool = False
  disable_semaphore_checks: bool = False
  skip_device_barrier: bool = False
  allow_collective_id_without_custom_barrier: bool = False
  shape_invariant_numerics: bool = True
  use_tc_tiling_on_sc: bool | None = None
  needs_layout_passes: bool = True
  fuse_transposed_lhs_in_matmul: bool = False

  def __init__(self, dimension_semantics: Sequence[Any] | None = None,
               allow_input_fusion: Sequence[bool] | None = None,
               vmem_limit_bytes: int | None = None, collective_id: int | None = None,
               has_side_effects: Any = False, flags: Mapping[str, Any] | None = None,
               internal_scratch_in_bytes: int | None = None, serialization_format: int = 1,
               disable_bounds_checks: bool = False, disable_semaphore_checks: bool = False,
               skip_device_barrier: bool = False,
               allow_collective_id_without_custom_barrier: bool = False,
               shape_invariant_numerics: bool = True, use_tc_tiling_on_sc: bool | None = None,
               needs_layout_passes: bool = True, fuse_transposed_lhs_in_matmul: bool = False):
    values = dict(locals())
    del values["self"]
    if dimension_semantics is not None:
      values["dimension_semantics"] = tuple(dimension_semantics)
    if allow_input_fusion is not None:
      values["allow_input_fusion"] = tuple(allow_input_fusion)
    if flags is not None:
      values["flags"] = tuple(sorted(dict(flags).items()))
    for k, v in values.items():
      object.__setattr__(self, k, v)

  replace = dataclasses.replace


class PrefetchScalarGridSpec(pallas_core.GridSpec):
  """A GridSpec whose first `num_scalar_prefetch` operands are scalar-prefetch operands: the
  kernel and every index map get them (whole, as SMEM refs) before their other arguments."""
  num_scalar_prefetch: int

  def __init__(self, num_scalar_prefetch: int, grid=(), in_specs=pallas_core.no_block_spec,
               out_specs=pallas_core.no_block_spec, scratch_shapes=()):
    super().__init__(grid, in_specs, out_specs, scratch_shapes)
    self.num_scalar_prefetch = num_scalar_prefetch
    self.scratch_shapes = tuple(scratch_shapes)

  def _make_scalar_ref_aval(self, aval):
    return AbstractRef(ShapedArray(aval.shape, aval.dtype), MemorySpace.SMEM)


# ---- semaphores and DMAs -------------------------------------------------------------------------
class dma_semaphore(pallas_core.semaphore_dtype):
  """The dtype class of DMA semaphores."""


def _tpu_only(message):
  """The error of a TPU-only operation: in the kernel of a pallas_call compiled for CPU, its
  lowering's ValueError; otherwise NotImplementedError(message)."""
  if pallas_core.kernel_interpreted() is False:
    return ValueError("Only interpret mode is supported on CPU backend.")
  return NotImplementedError(message)


def get_barrier_semaphore():
  """The barrier semaphore of a kernel's collective (`collective_id`): needs a TPU."""
  raise _tpu_only("Evaluation rule for 'get_barrier_semaphore' not implemented: the "
                  "barrier semaphore exists only in kernels compiled for a TPU")


class SemaphoreType(enum.Enum):
  """Kinds of semaphores; `SemaphoreType.DMA` (or `.DMA(shape)`) as a scratch shape gives a
  semaphore ref (interpret mode: int16, starting at zero)."""
  REGULAR = "regular"
  DMA = "dma"
  BARRIER = "barrier"

  def __call__(self, shape):
    return pallas_core.MemoryRef(ShapedArray(tuple(shape), np.dtype(np.int16)),
                                 MemorySpace.SEMAPHORE)

  def get_array_aval(self):
    return self(()).get_array_aval()

  def get_ref_aval(self):
    return self(()).get_ref_aval()


class _AsyncCopy:
  """A local DMA from `src_ref` to `dst_ref` signalling `dst_sem`."""

  def __init__(self, src_ref, dst_ref, dst_sem):
    if tuple(src_ref.shape) != tuple(dst_ref.shape):
      raise ValueError(f"Cannot copy a ref of shape {tuple(src_ref.shape)} into one of shape "
                       f"{tuple(dst_ref.shape)}")
    self.src_ref, self.dst_ref, self.dst_sem = src_ref, dst_ref, dst_sem

  def start(self, priority: int = 0, *, add: bool = False):
    v = self.src_ref[...]
    self.dst_ref[...] = self.dst_ref[...] + v if add else v

  def wait(self):
    pass   # (the copy completed at `start`)

  wait_recv = wait

  def wait_send(self):
    raise ValueError("Cannot `wait_send` on a local copy.")


def make_async_copy(src_ref, dst_ref, sem):
  """A description of a copy from `src_ref` to `dst_ref` (start it, then wait on it)."""
  return _AsyncCopy(src_ref, dst_ref, sem)


def async_copy(src_ref, dst_ref, sem, *, priority: int = 0, add: bool = False):
  """Start a copy from `src_ref` to `dst_ref` (added to it with `add`); returns its
  descriptor to wait on."""
  copy = make_async_copy(src_ref, dst_ref, sem)
  copy.start(priority=priority, add=add)
  return copy


def sync_copy(src_ref, dst_ref, *, add: bool = False) -> None:
  """Copy a pytree of refs into another (added with `add`)."""
  srcs = tree_util.tree_leaves(src_ref)
  if not srcs:
    return
  dsts = tree_util.tree_leaves(dst_ref)

  def body(sem):
    for s, d in zip(srcs, dsts):
      async_copy(s, d, sem, add=add).wait()

  primitives.run_scoped(body, SemaphoreType.DMA(()))


# ---- vector operations ---------------------------------------------------------------------------
def roll(x, shift, axis: int, *, stride: int | None = None, stride_axis: int | None = None):
  """`jnp.roll(x, shift, axis)` for a non-negative shift; with `stride`/`stride_axis`, slice
  i along `stride_axis` is rolled by `shift + i * stride`."""
  if isinstance(shift, int) and shift < 0:
    raise ValueError("shift must be non-negative.")
  if axis < 0 or axis >= len(x.shape):
    raise ValueError("axis is out of range.")
  if (stride is None) != (stride_axis is None):
    raise ValueError("stride and stride_axis must be both specified or not.")
  if stride is None:
    return assembly.roll(x, shift, axis)
  if stride < 0:
    raise ValueError("stride must be non-negative.")
  if stride_axis < 0 or stride_axis >= len(x.shape):
    raise ValueError("stride_axis is out of range")
  if axis == stride_axis:
    raise ValueError("expected axis and stride_axis are different.")
  parts = assembly.split(x, x.shape[stride_axis], stride_axis)
  return lax_numpy.concatenate(
      [assembly.roll(p, shift + i * stride, axis) for i, p in enumerate(parts)], stride_axis)


def bitcast(x, ty):
  """Reinterpret the bits of a (>= 2-d) array as dtype `ty`; a narrower or wider type packs
  or unpacks along the second-minor dimension (whose size scales by the bit-width ratio)."""
  ty = dtypes.canonicalize_dtype(ty)
  if len(x.shape) < 2:
    raise ValueError("Not implemented: bitcast 1D")
  src, dst = np.dtype(x.dtype).itemsize * 8, np.dtype(ty).itemsize * 8
  if x.shape[-2] * src % dst:
    raise ValueError("Not implemented: the 2nd minor dim can not be perfectly packed or "
                     "unpacked")
  *lead, m, n = x.shape
  if src < dst:
    k = dst // src
    x = lax_numpy.swapaxes(x.reshape(*lead, m // k, k, n), -1, -2)
    return lax.bitcast_convert_type(x, ty)
  y = lax.bitcast_convert_type(x, ty)
  if src > dst:
    return lax_numpy.swapaxes(y, -1, -2).reshape(*lead, m * (src // dst), n)
  return y


def load(ref, *, mask=None):
  """`ref[...]` (where `mask` is False the values are unspecified: interpret mode reads the
  ref anyway)."""
  return triton.load(ref, mask=mask)


def store(ref, val, *, mask=None) -> None:
  """`ref[...] = val` where `mask` is True."""
  triton.store(ref, val, mask=mask)


_EINSHAPE_GROUP = re.compile(r"\(([a-zA-Z]*)\)|([a-zA-Z])")


def _einshape_groups(side):
  groups = []
  pos = 0
  for m in _EINSHAPE_GROUP.finditer(side):
    if side[pos:m.start()].strip():
      raise ValueError(f"Invalid einshape equation side: {side!r}")
    groups.append(list(m.group(1)) if m.group(1) is not None else [m.group(2)])
    pos = m.end()
  if side[pos:].strip():
    raise ValueError(f"Invalid einshape equation side: {side!r}")
  return groups


def einshape(equation: str, x, assert_is_tile_preserving: bool = False, **sizes: int):
  """Reshape and transpose by an equation of single-letter dimensions, where parentheses
  group dimensions merged into one (`"a(bc)->bac"`; sizes of split groups come from
  `sizes`)."""
  lhs, rhs = (s.replace(" ", "") for s in equation.split("->"))
  lg, rg = _einshape_groups(lhs), _einshape_groups(rhs)
  if len(lg) != len(x.shape):
    raise ValueError(f"Equation {equation!r} expects {len(lg)} dimensions, got {x.ndim}")
  size = dict(sizes)
  for group, dim in zip(lg, x.shape):
    unknown = [a for a in group if a not in size]
    known = math.prod(size[a] for a in group if a in size)
    if len(unknown) > 1:
      raise ValueError(f"Cannot infer the sizes of {unknown} in {equation!r}")
    if unknown:
      size[unknown[0]] = dim // known
  atoms_l = [a for g in lg for a in g]
  atoms_r = [a for g in rg for a in g]
  if sorted(atoms_l) != sorted(atoms_r):
    raise ValueError(f"Equation {equation!r} must use the same dimensions on both sides")
  y = x.reshape(*(size[a] for a in atoms_l))
  y = lax_numpy.transpose(y, [atoms_l.index(a) for a in atoms_r])
  return y.reshape(*(math.prod(size[a] for a in g) for g in rg))


def _no_cpu_rule(name):
  raise NotImplementedError(f"MLIR translation rule for primitive '{name}' not found for "
                            "platform cpu")


def prng_seed(*seeds) -> None:
  """Seed the TPU core's hardware PRNG (TPU only: fails to lower on CPU, as in JAX)."""
  _no_cpu_rule("prng_seed")


def prng_random_bits(shape):
  """Random bits of `shape` from the TPU core's hardware PRNG (TPU only)."""
  _no_cpu_rule("prng_random_bits")


def stochastic_round(x, random_bits, *, target_dtype):
  """Round `x` to `target_dtype` stochastically with `random_bits` (TPU only)."""
  _no_cpu_rule("stochastic_round")


def pack_elementwise(xs, *, packed_dtype):
  """Pack several arrays elementwise into one wider integer array (TPU only)."""
  _no_cpu_rule("pack_elementwise")


def unpack_elementwise(x, *, index, packed_dtype, unpacked_dtype):
  """Unpack element `index` of each packed word of `x` (TPU only)."""
  _no_cpu_rule("unpack_elementwise")


# ---- hardware information and interpret mode -----------------------------------------------------
@dataclasses.dataclass(frozen=True)
class TensorCore:
  """One TensorCore of a device (by index)."""
  id: int


@dataclasses.dataclass(frozen=True, init=False)
class TensorCoreMesh:
  """A mesh over the TensorCores of a device, with one named axis."""
  devices: np.ndarray
  axis_names: tuple

  def __init__(self, devices, axis_names):
    devices = np.copy(devices)
    devices.setflags(write=False)
    object.__setattr__(self, "devices", devices)
    object.__setattr__(self, "axis_names", tuple(axis_names))

  def __eq__(self, other):
    return (isinstance(other, TensorCoreMesh) and self.axis_names == other.axis_names
            and self.devices.shape == other.devices.shape
            and list(self.devices.flat) == list(other.devices.flat))

  def __hash__(self):
    return hash((self.devices.shape, tuple(self.devices.flat), self.axis_names))

  @property
  def core_type(self):
    return CoreType.TC

  @property
  def default_memory_space(self):
    return pallas_core.MemorySpace.ANY

  @property
  def shape(self):
    return collections.OrderedDict(zip(self.axis_names, self.devices.shape))

  @property
  def dimension_semantics(self):
    return [GridDimensionSemantics.PARALLEL]


def create_tensorcore_mesh(axis_name: str, devices=None, num_cores: int | None = None):
  """A TensorCoreMesh of `num_cores` cores (default: those of `devices[0]`, or of the
  default device, which on CPU has no TensorCores: AttributeError, as in JAX)."""
  if devices is not None and num_cores is not None:
    raise ValueError("cannot specify both devices and num_cores")
  if num_cores is None:
    if devices is None:
      devices = [backend.devices()[0]]
    num_cores = devices[0].num_cores
  return TensorCoreMesh(np.array([TensorCore(i) for i in range(num_cores)]), [axis_name])


class CoreType(_NamedEnum):
  """The kind of core a kernel runs on: TensorCore or a SparseCore subcore."""
  TC = "tc"
  SC_SCALAR_SUBCORE = "sc_scalar_subcore"
  SC_VECTOR_SUBCORE = "sc_vector_subcore"


class BufferType(enum.Enum):
  """What an emitted pipeline does with a buffer: read it, write it, both, or neither."""
  INPUT = 1
  OUTPUT = 2
  INPUT_OUTPUT = 3
  MANUAL = 4

  @property
  def is_input(self):
    return self in (BufferType.INPUT, BufferType.INPUT_OUTPUT)

  @property
  def is_output(self):
    return self in (BufferType.OUTPUT, BufferType.INPUT_OUTPUT)


@dataclasses.dataclass(frozen=True, kw_only=True)
class InterpretParams:
  """Options of TPU interpret mode; `pallas_call(..., interpret=InterpretParams())` runs a
  TPU kernel interpreted (arrax's interpreter runs it sequentially and ignores the
  options)."""
  detect_races: bool = False
  out_of_bounds_reads: str = "raise"
  skip_floating_point_ops: bool = False
  uninitialized_memory: str = "nan"
  num_cores_or_threads: int = 1
  vector_clock_size: int | None = None
  logging_mode: Any = None
  dma_execution_mode: str = "on_wait"
  random_seed: int | None = None
  grid_point_recorder: Any = None
  allow_hbm_allocation_in_run_scoped: bool = False
  buffer_bounds: str = "logical"


def set_tpu_interpret_mode(params: InterpretParams = InterpretParams()):
  """Run every later pallas_call in TPU interpret mode with `params` (None: stop)."""
  pallas_core.tpu_interpret_mode.set_global(params)


@contextlib.contextmanager
def force_tpu_interpret_mode(params: InterpretParams = InterpretParams()):
  """A context manager under which pallas_calls traced run with `interpret=params`."""
  with pallas_core.tpu_interpret_mode(params):
    yield


def reset_tpu_interpret_mode_state():
  """Clear the state TPU interpret mode keeps between calls (arrax keeps none)."""


def stateful_bits(*args, **kwargs):
  """Random bits from the core's PRNG state (seeded by `prng_seed`; TPU only)."""
  _no_cpu_rule("prng_random_bits")


def stateful_uniform(*args, **kwargs):
  """Uniform samples from the core's PRNG state (TPU only)."""
  _no_cpu_rule("prng_random_bits")


def stateful_normal(*args, **kwargs):
  """Normal samples from the core's PRNG state (TPU only)."""
  _no_cpu_rule("prng_random_bits")


def stateful_bernoulli(*args, **kwargs):
  """Bernoulli samples from the core's PRNG state (TPU only)."""
  _no_cpu_rule("prng_random_bits")


def matmul_push_rhs(rhs, staging_register: int, mxu_index: int, *, transpose: bool = False):
  """Load a right-hand side into an MXU staging register (TPU only)."""
  _no_cpu_rule("matmul_push_rhs")


def matmul_acc_lhs(acc_addr: int, lhs, mxu_index: int, load_staged_rhs: int | None = None):
  """Multiply `lhs` into an MXU accumulator (TPU only)."""
  _no_cpu_rule("matmul_acc_lhs")


def matmul_pop(acc_addr: int, shape, dtype, mxu_index: int):
  """Read an MXU accumulator out (TPU only)."""
  _no_cpu_rule("matmul_pop")


def trace_value(label: str, value) -> None:
  """Record a scalar in the TPU's trace (TPU only)."""
  _no_cpu_rule("trace_value")


def touch(ref) -> None:
  """A fake read and write of `ref` for ordering (interpret mode has no discharge rule for
  it, as in JAX)."""
  raise NotImplementedError("No state discharge rule implemented for primitive: "
                            "add_dependency")


def with_memory_space_constraint(x, memory_space):
  """`x`, constrained to live in `memory_space` (interpret mode: `x` itself)."""
  return x


def core_barrier(sem, *, core_axis_name: str):
  """Synchronize the cores along `core_axis_name` (needs a multi-core TPU)."""
  raise NotImplementedError("core_barrier needs a TPU: interpret mode runs one core")


def _remote_copy(*args, **kwargs):
  raise _tpu_only("remote DMAs between devices need a TPU; arrax's interpret mode "
                  "runs local copies only")


def make_async_remote_copy(src_ref, dst_ref, send_sem, recv_sem, device_id,
                           device_id_type=primitives.DeviceIdType.MESH):
  """A copy from `src_ref` to `dst_ref` on device `device_id` (TPU only)."""
  _remote_copy()


def async_remote_copy(src_ref, dst_ref, send_sem, recv_sem, device_id,
                      device_id_type=primitives.DeviceIdType.MESH):
  """Start a copy to another device (TPU only)."""
  _remote_copy()


class LoweringException(Exception):
  """An error lowering a kernel to Mosaic."""


def _check_pipeline_grid(grid):
  if any(g <= 0 for g in grid if isinstance(g, int)):
    raise ValueError(f"All elements in the grid must be strictly positive, but got {grid=}")


def _tpu_only_pipeline(*args, **kwargs):
  # (JAX's pipeline asks for the TPU's tiling, which fails on CPU)
  get_tpu_info()


def emit_pipeline(body, *, grid, in_specs=(), out_specs=(), tiling: Tiling | None = None,
                  core_axis=None, core_axis_name=None, dimension_semantics=None,
                  trace_scopes: bool = True, no_pipelining: bool = False,
                  _explicit_indices: bool = False):
  """A function that runs `body` over `grid` on blocks of its ref arguments, overlapping the
  copies (needs a TPU: calling it raises on CPU, as in JAX)."""
  _check_pipeline_grid(grid)
  return _tpu_only_pipeline


def emit_pipeline_with_allocations(body, *, grid, in_specs=(), out_specs=()):
  """`emit_pipeline` plus a function making its buffers (both TPU only)."""
  _check_pipeline_grid(grid)
  return _tpu_only_pipeline, _tpu_only_pipeline


def run_on_first_core(core_axis_name: str):
  """A decorator running the decorated function (at once) only on core 0 of
  `core_axis_name`."""
  if parallel.axis_size(core_axis_name) == 1:
    return lambda f: f()

  def run(f):
    @helpers.when(parallel.axis_index(core_axis_name) == 0)
    def _():
      f()

  return run
