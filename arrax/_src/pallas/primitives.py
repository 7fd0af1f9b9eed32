"""Operations used inside Pallas kernels: `program_id`, `num_programs`, `multiple_of`,
`reciprocal`, `run_scoped`, `debug_print`, `delay`, and the TPU/GPU-only semaphores and
`get_global` (which raise here, as interpret mode on CPU has no such hardware)."""
from __future__ import annotations

import enum

import ml_dtypes
import numpy as np

from arrax._src import ad, batching, core, debugging, dtypes, tracing, tree_util
from arrax._src.core import ShapedArray
from arrax._src.lax import dot as lax_dot, elementwise as lax
from arrax._src.lax.control_flow import common
from arrax._src.numpy import creation
from arrax._src.pallas import core as pallas_core
from arrax._src.state import primitives as state

# ---- program_id ------------------------------------------------------------------------------
def _grid_query_p(name):
  """A primitive of no operands giving an int32 scalar about grid axis `axis` (program_id,
  num_programs)."""
  p = core.Primitive(name)
  p.def_abstract_eval(lambda *, axis: ShapedArray((), np.dtype(np.int32)))

  def lowering(ctx, *, axis):
    # pallas_call's interpreter replaces these by the grid indices and sizes before lowering;
    # one left here was used outside a kernel
    raise NotImplementedError(f"MLIR translation rule for primitive '{name}' not found for "
                              "platform cpu")

  p.def_lowering(lowering)
  p.def_batch(lambda args, dims, *, axis: (p.bind(axis=axis), None))
  ad.defjvp_zero(p)
  return p


program_id_p = _grid_query_p("program_id")


def program_id(axis: int):
  """The position of the running kernel instance along grid axis `axis` (int32 scalar)."""
  pallas_core.grid_axis_size(axis)   # checks the axis
  return program_id_p.bind(axis=axis)


num_programs_p = _grid_query_p("num_programs")


def num_programs(axis: int):
  """The size of the grid along `axis` (a Python int for a static grid dimension, an int32
  scalar for a dynamic one)."""
  size = pallas_core.grid_axis_size(axis)
  if size is pallas_core.dynamic_grid_dim:
    return num_programs_p.bind(axis=axis)
  return size


# ---- multiple_of ----------------------------------------------------------------------------
multiple_of_p = core.Primitive("multiple_of")
multiple_of_p.def_abstract_eval(lambda aval, *, values: aval)
multiple_of_p.def_lowering(lambda ctx, x, *, values: [x])
batching.defvectorized(multiple_of_p)
ad.deflinear(multiple_of_p, lambda ct, x, *, values: [ct])


def multiple_of(x, values):
  """A compiler hint that `x` is a multiple of `values` (returns `x`)."""
  values = (values,) if isinstance(values, int) else tuple(values)
  return multiple_of_p.bind(x, values=values)


# ---- reciprocal -------------------------------------------------------------------------------
reciprocal_p = core.Primitive("reciprocal")
reciprocal_p.def_abstract_eval(lambda x, *, approx, full_range: x)


def _reciprocal(x, *, approx, full_range):
  if approx:
    b = lax.convert_element_type(x, dtypes.bfloat16)
    return [lax.convert_element_type(lax.div(lax._const(b, 1), b), np.float32)]
  return [lax.div(lax._const(x, 1), x)]


reciprocal_p.def_lowering(common.lower_fun(_reciprocal))
batching.defvectorized(reciprocal_p)


def reciprocal(x, *, approx=False, full_range=True):
  """1 / x (with `approx`, computed in bfloat16 and returned as float32)."""
  return reciprocal_p.bind(x, approx=approx, full_range=full_range)


# ---- dot (deprecated here: moved to pallas.triton) ---------------------------------------------
def _small_to_supported(dtype):
  if dtype == np.dtype(ml_dtypes.int4):
    return np.dtype(np.int8)
  if dtype == np.dtype(ml_dtypes.float8_e4m3b11fnuz):
    return np.dtype(ml_dtypes.bfloat16)
  return dtype


def dot(a, b, trans_a: bool = False, trans_b: bool = False, allow_tf32: bool | None = None,
        precision=None):
  """The matrix product of two 2-d arrays (optionally transposed), accumulated in int32,
  float32 or float64."""
  if a.ndim != 2 or b.ndim != 2:
    raise ValueError("`a` and `b` must be 2D arrays.")
  if allow_tf32 is not None:
    if precision is not None:
      raise ValueError("Only one of allow_tf32 and precision can be specified")
    precision = lax_dot.Precision.HIGH if allow_tf32 else lax_dot.Precision.HIGHEST
  dtype = dtypes.promote_types(_small_to_supported(np.dtype(a.dtype)),
                               _small_to_supported(np.dtype(b.dtype)))
  if dtypes.issubdtype(dtype, np.integer):
    out = np.dtype(np.int32)
  elif dtype == np.dtype(np.float64):
    out = dtype
  else:
    out = np.dtype(np.float32)
  dims = (((0 if trans_a else 1,), (1 if trans_b else 0,)), ((), ()))
  return lax_dot.dot_general(a, b, dims, precision=precision, preferred_element_type=out)


def debug_checks_enabled() -> bool:
  """Whether `enable_debug_checks` is on (deprecated: read `enable_debug_checks.value`)."""
  return pallas_core.enable_debug_checks.value


# ---- uninitialized values ------------------------------------------------------------------
def uninitialized_value(shape, dtype):
  """What interpret mode fills unwritten buffers with: NaN for floats, the smallest value for
  integers, False for booleans."""
  dtype = np.dtype(dtype)
  if dtypes.issubdtype(dtype, np.floating):
    return creation.full(shape, np.nan, dtype)
  if dtype == np.dtype(np.int16):   # (int16 is the semaphores' type: zeros, as JAX's)
    return creation.full(shape, 0, dtype)
  if dtypes.issubdtype(dtype, np.integer):
    return creation.full(shape, np.iinfo(dtype).min, dtype)
  if dtype == np.dtype(bool):
    return creation.full(shape, False, dtype)
  raise NotImplementedError(dtype)


# ---- run_scoped --------------------------------------------------------------------------------
run_scoped_p = core.Primitive("run_scoped")
run_scoped_p.multiple_results = True
run_scoped_p.ref_primitive = True
run_scoped_p.effectful = True


@run_scoped_p.def_abstract_eval
def _run_scoped_abstract_eval(*args, jaxpr, collective_axes, ref_transforms):
  return [v.aval for v in jaxpr.outvars]


@run_scoped_p.def_lowering
def _run_scoped_lowering(ctx, *args, **params):
  raise NotImplementedError("run_scoped reached lowering: jaxprs using refs are discharged "
                            "first")


@run_scoped_p.def_batch
def _run_scoped_batch(args, dims, **params):
  raise NotImplementedError("Batching rule for 'run_scoped' not implemented")


def _run_scoped_discharge(ins, params, cells):
  """The body evaluated with fresh cells of uninitialized values for its scoped refs."""
  jaxpr = params["jaxpr"]
  scoped = [state._Cell(uninitialized_value(v.aval.shape, v.aval.dtype), v.aval.inner_aval)
            for v in jaxpr.invars]
  return state._interpret(jaxpr, ins, scoped, cells)


state.register_discharge_rule(run_scoped_p, _run_scoped_discharge)


def run_scoped(f, *types, collective_axes=(), **kw_types):
  """Call `f` with fresh refs of the given types (MemoryRefs, uninitialized) and return its
  result."""
  if not isinstance(collective_axes, tuple):
    collective_axes = (collective_axes,)
  flat, tree = tree_util.tree_flatten((types, kw_types))
  avals = [t.get_ref_aval() for t in flat]
  out_tree = []

  def flat_fun(*refs):
    args, kwargs = tree_util.tree_unflatten(tree, list(refs))
    out = f(*args, **kwargs)
    leaves, t = tree_util.tree_flatten(out)
    out_tree.append(t)
    return leaves

  jaxpr, consts = tracing.trace_to_jaxpr(flat_fun, avals)
  outs = run_scoped_p.bind(*consts, jaxpr=jaxpr, collective_axes=collective_axes,
                           ref_transforms=((),) * len(avals))
  if collective_axes:
    raise NotImplementedError("run_scoped interpret rule does not support collective axes")
  return tree_util.tree_unflatten(out_tree[0], outs)


# ---- debugging -------------------------------------------------------------------------------
def debug_print(fmt: str, *args):
  """Print values from inside a kernel (`fmt.format(*args)`)."""
  return debugging.debug_print(fmt, *args, skip_format_check=True)


def delay(nanos):
  """Wait `nanos` nanoseconds (TPU only)."""
  raise NotImplementedError("pl.delay needs a TPU; arrax runs Pallas kernels in interpret mode")


# ---- TPU/GPU only ----------------------------------------------------------------------------
class DeviceIdType(enum.Enum):
  """How a device id is given: a mesh position or a logical id."""
  MESH = "mesh"
  LOGICAL = "logical"


def get_global(what):
  """A reference persisting across kernel invocations (not supported in interpret mode)."""
  raise NotImplementedError("get_global discharge is not supported in interpret mode.")


def semaphore_read(sem_or_view):
  """The value of a semaphore (interpret mode: an int16 ref)."""
  return sem_or_view[...]


def semaphore_signal(sem_or_view, inc=1, *, device_id=None, device_id_type=DeviceIdType.MESH,
                     core_index=None):
  """Increment a semaphore by `inc` (remote signals need a TPU/GPU backend)."""
  if device_id is not None or core_index is not None:
    raise NotImplementedError("remote semaphore signals need a TPU/GPU Pallas backend")
  sem_or_view[...] = sem_or_view[...] + lax.convert_element_type(inc, sem_or_view.dtype)


def semaphore_wait(sem_or_view, value=1, *, decrement=True):
  """Wait for a semaphore to reach `value` and (with `decrement`) subtract it; interpret
  mode runs one program at a time, so it never blocks."""
  if decrement:
    sem_or_view[...] = sem_or_view[...] - lax.convert_element_type(value, sem_or_view.dtype)
