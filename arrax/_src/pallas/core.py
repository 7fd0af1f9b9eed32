"""Pallas's data types (jax.experimental.pallas): block specs and their block dimensions, grid
specs, memory spaces and memory refs, cost estimates, and the grid mappings `pallas_call`
holds (block specs with their index maps traced to jaxprs).

While a kernel or an index map is traced, a thread-local grid context names the grid, so
`program_id`/`num_programs` can check axes and give static sizes."""
from __future__ import annotations

import contextlib
import dataclasses
import enum
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from arrax._src import config, config_flags, core, dtypes, jit, tracing, tree_util
from arrax._src.api import ShapeDtypeStruct
from arrax._src.core import AbstractRef, ShapedArray
from arrax._src.export import _export
from arrax._src.indexing import Slice

# ---- flags -----------------------------------------------------------------------------------
enable_debug_checks = config_flags.pallas_enable_debug_checks
enable_poison_buffers = config_flags.pallas_poison_buffers


@runtime_checkable
class CompilerParams(Protocol):
  """Base of the backends' compiler parameter dataclasses."""
  __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


# Lowering rules for kernels whose compiler params are of a given class, by platform
# (`jax.extend.pallas.register_lowering_rule`). JAX consults them when lowering for TPU or GPU;
# arrax lowers for the CPU, where (as in JAX) only interpret mode runs, so they are kept only.
_backend_lowering_rules: dict = {}


def register_lowering_rule(params_cls, rule, platform: str):
  """Lower pallas_calls whose `compiler_params` are a `params_cls` with `rule` on `platform`."""
  _backend_lowering_rules[params_cls] = (rule, platform)


def get_lowering_rule(params_cls, expected_platform: str):
  """The rule registered for `params_cls` (None if none); ValueError if it is for another
  platform."""
  found = _backend_lowering_rules.get(params_cls)
  if found is None:
    return None
  rule, platform = found
  if platform != expected_platform:
    raise ValueError(f"Compiler params for platform {platform} cannot be used for "
                     f"{expected_platform} lowering.")
  return rule


@enum.unique
class RevisitMode(enum.Enum):
  """Whether an output block may be revisited at any later iteration (ANY) or only at the
  next one (IMMEDIATE)."""
  IMMEDIATE = "immediate"
  ANY = "any"


@dataclasses.dataclass(frozen=True)
class Buffered:
  """How many buffers a pipelined block uses (a hint: interpret mode ignores it)."""
  buffer_count: int
  use_lookahead: bool = False
  revisit: RevisitMode | None = None


@runtime_checkable
class MemoryRefBase(Protocol):
  def get_array_aval(self) -> ShapedArray:
    ...

  def get_ref_aval(self) -> AbstractRef:
    ...


@dataclasses.dataclass(frozen=True)
class MemoryRef(MemoryRefBase):
  """A shape and dtype in a memory space (a ShapeDtypeStruct for refs)."""
  inner_aval: Any
  memory_space: Any

  def get_array_aval(self) -> ShapedArray:
    if not isinstance(self.inner_aval, ShapedArray):
      raise ValueError(f"MemoryRef type must be a ShapedArray, got {type(self.inner_aval)}")
    return self.inner_aval

  def get_ref_aval(self) -> AbstractRef:
    return AbstractRef(self.inner_aval, self.memory_space)

  @property
  def dtype(self):
    return self.inner_aval.dtype

  @property
  def shape(self):
    return self.inner_aval.shape

  def __lt__(self, other):
    return (self.shape, self.dtype, self.memory_space) < (
        other.shape, other.dtype, other.memory_space)


class MemorySpace(enum.Enum):
  """Backend-independent memory spaces; calling one with (shape, dtype) gives a MemoryRef."""
  ANY = "any"
  DEFAULT = "default"
  ERROR = "error"
  INDEX = "index"
  KEY = "key"
  HOST = "host"

  def from_type(self, type):  # noqa: A002
    return MemoryRef(type, memory_space=self)

  def __call__(self, shape, dtype):
    return self.from_type(ShapedArray(tuple(shape), dtypes.canonicalize_dtype(dtype)))

  def __str__(self) -> str:
    return self.value


# ---- block dimensions --------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Element:
  """A block dimension indexed by element offset (the index map returns a start element),
  optionally padded."""
  block_size: int
  padding: tuple[int, int] = (0, 0)

  def __str__(self):
    if self.padding == (0, 0):
      return f"Element({self.block_size})"
    return f"Element({self.block_size}, padding={self.padding})"


@dataclasses.dataclass(frozen=True)
class Squeezed:
  """A block dimension of size one, removed from the kernel's ref."""


squeezed = Squeezed()

# the InterpretParams of `pltpu.set_tpu_interpret_mode`/`force_tpu_interpret_mode` (or None);
# part of jit's cache key, as JAX's config state is
tpu_interpret_mode = config.make_user_context(None)


@dataclasses.dataclass(frozen=True)
class Blocked:
  """The default block dimension: the index map returns a block index."""
  block_size: int

  def __str__(self):
    return f"Blocked({self.block_size})"


@dataclasses.dataclass(frozen=True)
class BoundedSlice:
  """A block dimension the index map gives as a `pl.ds` of at most `block_size` elements."""
  block_size: int

  def __repr__(self):
    return f"BoundedSlice({self.block_size})"


@dataclasses.dataclass(frozen=True)
class Indirect:
  """A block dimension indexed by an array of indices (a gather/scatter)."""
  block_size: int

  def __repr__(self):
    return f"Indirect({self.block_size})"


BlockDim = Element | Squeezed | Blocked | BoundedSlice | Indirect


def _canonicalize_block_dim(dim):
  if dim is None:
    return squeezed
  if isinstance(dim, (Squeezed, Blocked, Element, BoundedSlice, Indirect)):
    return dim
  if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
    return Blocked(int(dim))
  try:
    return Blocked(int(dim))
  except Exception as e:
    raise ValueError(
        f"Unsupported block dimension type: {type(dim)}. Allowed types: `pl.Squeezed`, "
        "`pl.Blocked`, `pl.Element`, `int`, `None`.") from e


def block_dim_size(dim) -> int:
  return 1 if isinstance(dim, Squeezed) else dim.block_size


def ref_block_shape(block_shape) -> tuple[int, ...]:
  return tuple(block_dim_size(d) for d in block_shape if not isinstance(d, Squeezed))


class DynamicGridDim:
  """A grid dimension whose size is an operand of the call (a traced value)."""

  def __repr__(self):
    return "DynamicGridDim"


dynamic_grid_dim = DynamicGridDim()


# ---- grid context ------------------------------------------------------------------------------
class _GridContext(threading.local):
  def __init__(self):
    self.grid = None        # the grid of the kernel being traced
    self.mapped = ()        # its dimensions added by vmap (invisible to the kernel)
    # whether its pallas_call runs interpreted (None: unknown or no kernel): TPU-only
    # operations in a kernel compiled for CPU fail as its lowering would (ValueError)
    self.interpreted = None


_grid_ctx = _GridContext()


@contextlib.contextmanager
def tracing_grid_env(grid, mapped_dims=(), interpreted=None):
  old = (_grid_ctx.grid, _grid_ctx.mapped, _grid_ctx.interpreted)
  _grid_ctx.grid, _grid_ctx.mapped = tuple(grid), tuple(mapped_dims)
  if interpreted is not None:   # (else the enclosing kernel's)
    _grid_ctx.interpreted = interpreted
  try:
    yield
  finally:
    _grid_ctx.grid, _grid_ctx.mapped, _grid_ctx.interpreted = old


def kernel_interpreted():
  """Whether the kernel being traced runs interpreted (None: unknown, or no kernel)."""
  return _grid_ctx.interpreted


def kernel_grid():
  """The grid the kernel sees (vmapped dimensions removed), or None outside a kernel."""
  if _grid_ctx.grid is None:
    return None
  return tuple(g for k, g in enumerate(_grid_ctx.grid) if k not in _grid_ctx.mapped)


def grid_axis_size(axis):
  grid = kernel_grid()
  if grid is None:
    raise ValueError("program_id and num_programs can only be used inside a Pallas kernel")
  try:
    return grid[axis]
  except (IndexError, TypeError):
    raise ValueError(f"Axis {axis} is out of bounds for grid {grid}") from None


# ---- block specs -------------------------------------------------------------------------------
class _IndexMapFunc:
  """An index map compared by the function it wraps; always returns a tuple."""

  def __init__(self, index_map):
    self.index_map = index_map

  def __eq__(self, other):
    if not isinstance(other, _IndexMapFunc):
      return NotImplemented
    return self.index_map == other.index_map

  def __hash__(self):
    return hash(self.index_map)

  def __call__(self, *args, **kwargs):
    out = self.index_map(*args, **kwargs)
    if isinstance(out, list):
      out = tuple(out)
    if not isinstance(out, tuple):
      out = (out,)
    return out

  def __repr__(self):
    return f"_IndexMapFunc({self.index_map!r})"


@dataclasses.dataclass
class BlockSpec:
  """How an operand is cut into blocks: `block_shape` (ints, None for a squeezed dimension,
  or block dimension types) and `index_map`, mapping the grid indices to the block's
  position (block indices for Blocked dimensions, element offsets for Element ones)."""
  block_shape: Sequence[Any] | None = None
  index_map: Callable[..., Any] | None = None
  memory_space: Any | None = dataclasses.field(kw_only=True, default=None)
  pipeline_mode: Buffered | None = None

  def __post_init__(self):
    if self.index_map is not None:
      self.index_map = _IndexMapFunc(self.index_map)

  replace = dataclasses.replace


class NoBlockSpec:
  def __repr__(self):
    return "NoBlockSpec"


no_block_spec = NoBlockSpec()


@dataclasses.dataclass(frozen=True, eq=False)
class BlockMapping:
  """A BlockSpec resolved for one operand: canonical block dims, the index map as a closed
  jaxpr of the grid indices, the whole array's aval and the kernel ref's aval."""
  block_shape: tuple
  ref_aval: AbstractRef
  index_map_jaxpr: Any
  array_aval: ShapedArray
  origin: str

  def __repr__(self):
    return f"BlockMapping(block_shape={self.block_shape})"


@dataclasses.dataclass(frozen=True, eq=False)
class GridMapping:
  """A GridSpec resolved for a call: the grid (vmap's added dimensions in `vmapped_dims`),
  the block mappings of the inputs then the outputs, and the scratch refs' avals."""
  grid: tuple
  grid_names: tuple | None
  block_mappings: tuple
  vmapped_dims: tuple
  scratch_avals: tuple
  num_inputs: int
  num_outputs: int
  num_index_operands: int = 0
  index_avals: tuple = ()   # the scalar-prefetch operands' ref avals (index maps get them)

  def replace(self, **kw):
    return dataclasses.replace(self, **kw)

  @property
  def block_mappings_output(self):
    return self.block_mappings[self.num_inputs:self.num_inputs + self.num_outputs]

  @property
  def num_dynamic_grid_bounds(self):
    return sum(g is dynamic_grid_dim for g in self.grid)

  @property
  def num_scratch_operands(self):
    return len(self.scratch_avals)

  def __repr__(self):
    return f"GridMapping(grid={self.grid}, block_mappings={self.block_mappings})"


def _index_map_aval():
  return ShapedArray((), np.dtype(np.int32))


def _trace_index_map(fn, n_grid, origin, block_shape, grid, index_avals=(), index_tree=None):
  kinds = []

  def flat(*idx):
    scalars = () if index_tree is None else tree_util.tree_unflatten(index_tree,
                                                                     list(idx[n_grid:]))
    out = fn(*idx[:n_grid], *scalars)
    kinds[:] = [type(o) for o in out]
    return tree_util.tree_leaves(out)

  with tracing_grid_env(grid):
    jaxpr, consts = tracing.trace_to_jaxpr(flat, [_index_map_aval()] * n_grid
                                           + list(index_avals))
  closed, outer = tracing.closed_with_host_consts(jaxpr, consts)
  if outer:
    raise ValueError(f"Index map function for {origin} must not capture traced values.")
  outs = closed.out_avals
  name = src_info(getattr(fn, "index_map", fn))
  if len(kinds) != len(block_shape):
    raise ValueError(
        f"Index map function {name} for {origin} must return {len(block_shape)} values to "
        f"match block_shape={block_shape}. Currently returning {len(kinds)} values:")
  for i, (kind, bd) in enumerate(zip(kinds, block_shape)):
    if isinstance(bd, BoundedSlice) and kind is not Slice:
      raise ValueError(f"index_map returned a value of type {ShapedArray} at position {i} "
                       f"with block dimension {bd} when it should be pl.Slice")
  for i, ov in enumerate(outs):
    if ov.shape or ov.dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
      raise ValueError(f"Index map function {name} for {origin} must return integer "
                       f"scalars. Output[{i}] has type {ov}.")
  if closed.consts:
    raise ValueError(f"Index map function {name} for {origin} must not capture constants: "
                     f"{closed.consts}")
  return closed


def block_mapping(spec, origin, array_aval, grid, index_avals=(), index_tree=None):
  """The BlockMapping of `spec` (a BlockSpec or no_block_spec) for an operand."""
  if spec is no_block_spec:
    spec = BlockSpec(None, None)
  if spec.block_shape is None:
    block_shape = tuple(_canonicalize_block_dim(d) for d in array_aval.shape)
  else:
    block_shape = tuple(_canonicalize_block_dim(d) for d in spec.block_shape)
    if len(array_aval.shape) != len(block_shape):
      raise ValueError(f"Block shape for {origin} (= {block_shape}) must have the same number "
                       f"of dimensions as the array shape {array_aval.shape}.")
  if spec.index_map is None:
    ndim = len(array_aval.shape)
    index_map = lambda *args: (0,) * ndim  # noqa: E731
  else:
    index_map = spec.index_map
  memory_space = spec.memory_space if spec.memory_space is not None else MemorySpace.DEFAULT
  ref_aval = AbstractRef(ShapedArray(ref_block_shape(block_shape), array_aval.dtype,
                                     array_aval.weak_type),
                         memory_space)
  closed = _trace_index_map(index_map, len(grid), origin, block_shape, grid, index_avals,
                            index_tree)
  return BlockMapping(block_shape, ref_aval, closed, array_aval, origin)


Grid = Any


@dataclasses.dataclass(init=False, kw_only=True)
class GridSpec:
  """The grid of a `pallas_call` with its inputs' and outputs' block specs and scratch
  shapes."""
  grid: Any
  grid_names: tuple | None
  in_specs: Any
  out_specs: Any
  scratch_shapes: Any = ()

  def __init__(self, grid=(), in_specs=no_block_spec, out_specs=no_block_spec,
               scratch_shapes=()):
    if isinstance(in_specs, list):
      in_specs = tuple(in_specs)
    elif in_specs is not no_block_spec and not isinstance(in_specs, Sequence):
      raise ValueError(f"`in_specs` must be a tuple or a list. Found: {in_specs}")
    if isinstance(out_specs, list):
      out_specs = tuple(out_specs)
    self.in_specs = in_specs
    self.out_specs = out_specs
    self.scratch_shapes = tuple(scratch_shapes)
    grid_names = None
    if isinstance(grid, (int, np.integer)):
      grid = (int(grid),)
    elif grid and isinstance(grid[0], tuple):
      grid_names, grid = tuple(g[0] for g in grid), tuple(g[1] for g in grid)
    if not all(_is_valid_grid_dim(g) for g in grid):
      raise ValueError(f"Grid must be a tuple of integers or jax.Array, got {grid}")
    self.grid = tuple(grid)
    self.grid_names = grid_names


def _is_valid_grid_dim(g):
  if isinstance(g, bool):
    return False
  if isinstance(g, (int, np.integer)):
    return True
  return isinstance(g, core.Tracer) or hasattr(g, "aval") or hasattr(g, "__array__")


def src_info(fn):
  """`name at file:line` of a Python function (as JAX names kernels and index maps)."""
  code = getattr(fn, "__code__", None)
  name = getattr(fn, "__name__", repr(fn))
  if code is None:
    return name
  return f"{name} at {code.co_filename}:{code.co_firstlineno}"


def _kind(x):
  if isinstance(x, tuple):
    return "tuple"
  if isinstance(x, list):
    return "list"
  if isinstance(x, dict):
    return "dict"
  return None


def _tree_errors(t1, t2, path=""):
  """(path, thing1, thing2, explanation) for the places two containers' structures differ."""
  k1, k2 = _kind(t1), _kind(t2)
  if k1 is None and k2 is None:
    return []
  if k1 is None or k2 is None or k1 != k2:
    what = lambda k, t: "a pytree leaf" if k is None else f"a {type(t)}"  # noqa: E731
    return [(path, what(k1, t1), what(k2, t2), "their Python types differ")]
  if len(t1) != len(t2):
    return [(path, f"a {k1} of length {len(t1)}", f"a {k2} of length {len(t2)}",
             "the lengths do not match")]
  if k1 == "dict":
    if sorted(t1) != sorted(t2):
      return [(path, f"a dict with keys {sorted(t1)}", f"a dict with keys {sorted(t2)}",
               "the keys do not match")]
    pairs = [(f"{path}[{k!r}]", t1[k], t2[k]) for k in sorted(t1)]
  else:
    pairs = [(f"{path}[{k}]", a, b) for k, (a, b) in enumerate(zip(t1, t2))]
  return [e for p, a, b in pairs for e in _tree_errors(a, b, p)]


def pytreedef_mismatch_err_msg(what1, tree1, what2, tree2):
  skel1 = tree1.unflatten([0] * tree1.num_leaves)
  skel2 = tree2.unflatten([0] * tree2.num_leaves)
  errs = _tree_errors(skel1, skel2)
  msg = [f"Pytree for {what1} and {what2} do not match. There are {len(errs)} mismatches, "
         "including:"]
  for path, thing1, thing2, why in errs:
    where = f"at {path}, " if path else ""
    msg.append(f"    * {where}{what1} is {thing1} but {what2} is {thing2}, so {why}")
  return "\n".join(msg)


@dataclasses.dataclass(frozen=True)
class CostEstimate:
  """A kernel's cost (a hint to XLA's scheduler): flops, transcendental operations, bytes
  read and written."""
  flops: int
  transcendentals: int
  bytes_accessed: int
  remote_bytes_transferred: int = 0

  def __post_init__(self):
    for k, v in dataclasses.asdict(self).items():
      if not isinstance(v, int):
        raise ValueError("All fields in CostEstimate must be ints. "
                         f"{k} is not an int: {type(v)}({v})")

  def to_json(self) -> bytes:
    return (f'{{"flops": {self.flops}, "transcendentals": {self.transcendentals},'
            f' "bytes_accessed": {self.bytes_accessed},'
            f' "remote_bytes_transferred": {self.remote_bytes_transferred}}}').encode("ascii")


def out_shape_to_aval(out_shape):
  if isinstance(out_shape, MemoryRef):
    return out_shape.get_array_aval()
  if isinstance(out_shape, ShapedArray):
    return out_shape
  if not (hasattr(out_shape, "shape") and hasattr(out_shape, "dtype")):
    raise ValueError(f"Invalid out_shape type: {type(out_shape)}")
  return ShapedArray(tuple(out_shape.shape), dtypes.canonicalize_dtype(out_shape.dtype))


def scratch_ref_aval(s):
  if hasattr(s, "get_ref_aval"):
    return s.get_ref_aval()
  if isinstance(s, ShapeDtypeStruct):
    return AbstractRef(ShapedArray(tuple(s.shape), dtypes.canonicalize_dtype(s.dtype)),
                       MemorySpace.ANY)
  raise ValueError(f"Unsupported scratch shape: {s}")


# ---- pieces of the API that need a TPU/GPU ---------------------------------------------------
@contextlib.contextmanager
def pallas_export_experimental(dynamic_shapes: bool):
  """Context manager for exporting kernels with dynamic shapes (arrax: only static shapes)."""
  if dynamic_shapes:
    raise NotImplementedError("Pallas kernels with dynamic shapes")
  yield


def lower_as_mlir(f, *args, dynamic_shapes=False, device=None, static_argnames=(),
                  platforms=None, **kwargs):
  """The StableHLO module text of `f` on these arguments, exported (without stability
  guarantees) for `platforms` (default TPU)."""
  with pallas_export_experimental(dynamic_shapes):
    f = jit.jit(f, device=device, static_argnames=static_argnames)
    exported = _export.export(f, platforms=["tpu"] if platforms is None else platforms)(
        *args, **kwargs)
    return exported.mlir_module()


def core_map(mesh, *, compiler_params=None, interpret=False, debug=False, cost_estimate=None,
             name=None, metadata=None, scratch_shapes=()):
  """Run a function once per core of a backend mesh (needs a TPU/GPU mesh: not in arrax)."""
  raise NotImplementedError("core_map needs a TPU/GPU core mesh, which arrax does not have")


class semaphore_dtype(dtypes.extended):
  """The dtype class of Pallas semaphores."""


class semaphore(semaphore_dtype):
  """A Pallas semaphore (TPU/GPU kernels only)."""
