"""Pallas helpers: `when`, `loop`, `empty`/`empty_like`/`empty_ref_like`, `with_scoped`,
`select_ref`, `kernel`, the integer utilities (`cdiv`, `align_to`, `next_power_of_2`,
`strides_from_shape`) and `estimate_cost`."""
from __future__ import annotations

import dataclasses
import functools
import math

import ml_dtypes
import numpy as np

from arrax._src import core, dtypes, environment, tracing, tree_util
from arrax._src.api import ShapeDtypeStruct
from arrax._src.core import ShapedArray
from arrax._src.lax import creation as lax_creation, elementwise as lax
from arrax._src.lax.control_flow import conditionals, loops
from arrax._src.pallas import core as pallas_core
from arrax._src.pallas import pallas_call as pallas_call_mod, primitives
from arrax._src.state import primitives as state

empty = environment.named_call(lax_creation.empty)


@environment.named_call
def empty_like(x: object):
  """A pytree like `x` of arrays with its leaves' shapes and dtypes and undefined values."""
  return tree_util.tree_map(lambda leaf: empty(leaf.shape, leaf.dtype), x)


def empty_ref_like(x: object):
  """A new ref with the shape, dtype (and memory space) of `x` and undefined contents."""
  if isinstance(x, pallas_core.MemoryRef):
    memory_space = x.memory_space
  elif isinstance(x, ShapeDtypeStruct):
    memory_space = pallas_core.MemorySpace.ANY
  else:
    raise ValueError(f"empty_ref_like does not support {type(x)}")
  return state.new_ref(empty_like(x), memory_space=memory_space)


def when(condition, /):
  """Decorator: call the function if `condition` holds (a Python bool: at trace time; an
  array: as a `lax.cond` with an empty false branch)."""
  def _wrapped(f):
    if isinstance(condition, bool):
      if condition:
        f()
    else:
      conditionals.cond(condition, f, lambda: None)
  return _wrapped


def cdiv(a, b):
  """Ceiling division: the smallest integer >= a / b."""
  if _is_int(a) and _is_int(b):
    return (a + b - 1) // b
  return lax.div(lax.add(a, b - 1) if _is_int(b) else lax.add(a, lax.sub(b, 1)), b)


def _is_int(x):
  return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def align_to(a, alignment):
  """`a` rounded up to a multiple of `alignment`."""
  return cdiv(a, alignment) * alignment


def _check_paged_kv(q_heads, head_dim, k_pages, v_pages):
  """The checks the GPU and TPU paged attentions share on q's heads and head_dim against
  k/v pages [kv_heads, total_pages, page_size, head_dim] (ValueError)."""
  kv_heads, _, _, head_dim_k = k_pages.shape
  if k_pages.shape != v_pages.shape:
    raise ValueError("k_pages and v_pages must have the same shape. Got "
                     f"{k_pages.shape} and {v_pages.shape}")
  if q_heads % kv_heads:
    raise ValueError("Number of Q heads must be divisible by number of KV heads. Got "
                     f"{q_heads} and {kv_heads}.")
  if head_dim_k != head_dim:
    raise ValueError("head_dim of Q must be the same as that of K/V. Got "
                     f"{head_dim} and {head_dim_k}.")


def strides_from_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
  """Row-major strides, in elements, of an array of `shape`."""
  size = int(np.prod(shape))
  strides = []
  for s in shape:
    size = size // s
    strides.append(int(size))
  return tuple(strides)


def next_power_of_2(x: int) -> int:
  """The smallest power of two >= `x`."""
  if x < 0:
    raise ValueError("`next_power_of_2` requires a non-negative integer.")
  return 1 if x == 0 else 2 ** (x - 1).bit_length()


def dtype_bits(dtype) -> int:
  """The width of `dtype` in bits (sub-byte types included)."""
  dt = np.dtype(dtype)
  if dt.itemsize > 1 or dt == np.bool_:
    return dt.itemsize * 8
  try:
    return ml_dtypes.iinfo(dt).bits
  except ValueError:
    return ml_dtypes.finfo(dt).bits


def loop(lower, upper, *, init_carry=None, step=1, unroll=None):
  """Decorator: run the function for each index in range(lower, upper, step) (with a carry
  when `init_carry` is given) as a `fori_loop`; returns the final carry."""
  if any(isinstance(v, core.Tracer) for v in (lower, upper, step)):
    idx_type = dtypes.result_type(lower, upper, step)
    lower = lax.convert_element_type(lower, idx_type)
    upper = lax.convert_element_type(upper, idx_type)
    step = lax.convert_element_type(step, idx_type)
    zero = np.zeros((), idx_type)
  else:   # concrete bounds stay Python values (the loop can be unrolled)
    zero = 0

  def decorator(body):
    if init_carry is None:
      body_fn = lambda idx, _: body(lower + idx * step)  # noqa: E731
    else:
      body_fn = lambda idx, carry: body(lower + idx * step, carry)  # noqa: E731
    return loops.fori_loop(zero, cdiv(upper - lower, step), body_fn, init_val=init_carry,
                           unroll=unroll)

  return decorator


def with_scoped(*types, collective_axes=(), **kw_types):
  """Decorator: the function is called with fresh scoped refs of `types` after its own
  arguments (see `run_scoped`)."""
  def decorator(f):
    def inner(*args):
      return primitives.run_scoped(functools.partial(f, *args), *types,
                                   collective_axes=collective_axes, **kw_types)
    return inner
  return decorator


def select_ref(idx, *refs):
  """One of `refs` chosen by a runtime index (for TPU DMAs; not supported in interpret mode)."""
  if len(refs) <= 1:
    raise ValueError("At least two refs are required for pl.select_ref.")
  raise NotImplementedError("pl.select_ref needs a TPU Pallas backend")


def run_state(f):
  """`f` on refs as a function of values: the returned function makes refs holding its
  arguments (a pytree), calls `f` on them and returns their final values."""
  def wrapped(args):
    refs = tree_util.tree_map(state.new_ref, args)
    f(refs)
    return tree_util.tree_map(state.freeze, refs, is_leaf=lambda x: isinstance(x, state.Ref))
  return wrapped


def kernel(body=None, out_type=(), *, mesh, scratch_types=(), compiler_params=None,
           interpret=False, cost_estimate=None, debug=False, name=None, metadata=None):
  """A function of arrays running `body(*input_refs, *output_refs, *scratch_refs)` on a core
  mesh and returning the outputs (of `out_type`). arrax runs TensorCore and Mosaic GPU meshes in
  interpret mode, the body traced once and seeing whole arrays; other meshes need a TPU/GPU."""
  if body is None:
    return functools.partial(kernel, out_type=out_type, mesh=mesh, scratch_types=scratch_types,
                             compiler_params=compiler_params, interpret=interpret,
                             cost_estimate=cost_estimate, debug=debug, name=name,
                             metadata=metadata)
  if str(getattr(mesh, "core_type", "")) not in ("tc", "gpu"):
    raise NotImplementedError("pl.kernel needs a TPU/GPU core mesh; arrax runs only "
                              "TensorCore meshes (pltpu.create_tensorcore_mesh), in interpret "
                              "mode")
  return pallas_call_mod.pallas_call(
      body, out_shape=out_type, scratch_shapes=tuple(scratch_types), debug=debug,
      interpret=interpret, name=name, compiler_params=compiler_params,
      cost_estimate=cost_estimate, metadata=metadata)


# ---- cost estimates ----------------------------------------------------------------------------
_BINARY = {"add", "mul", "sub", "div", "min", "max", "or", "and", "xor"}
_UNARY = {"neg", "floor", "ceil", "round", "not"}
_TRANSCENDENTAL = {"cos", "sin", "tan", "sinh", "cosh", "tanh", "acos", "asin", "atan", "exp",
                   "log", "logistic", "sqrt"}


@dataclasses.dataclass
class _Cost:
  flops: int = 0
  transcendentals: int = 0


def _jaxpr_cost(jaxpr, cost):
  for eqn in jaxpr.eqns:
    name = eqn.primitive.name
    if name in _BINARY:
      cost.flops += math.prod(eqn.outvars[0].aval.shape)
    elif name in _UNARY:
      cost.flops += math.prod(eqn.invars[0].aval.shape)
    elif name in _TRANSCENDENTAL:
      cost.transcendentals += math.prod(eqn.invars[0].aval.shape)
    elif name == "integer_pow":
      y = eqn.params["y"]
      n = math.prod(eqn.invars[0].aval.shape)
      per = 0 if y in (0, 1) else math.floor(math.log(y, 2)) + y.bit_count()
      cost.flops += n * per
    elif name == "dot_general":
      (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
      xs, ys = eqn.invars[0].aval.shape, eqn.invars[1].aval.shape
      flops = 2 * math.prod(xs[d] for d in lc)
      flops *= math.prod(d for k, d in enumerate(xs) if k not in lc)
      flops *= math.prod(d for k, d in enumerate(ys) if k not in rc and k not in rb)
      cost.flops += flops
    elif name in ("jit", "custom_vjp_call"):
      inner = eqn.params.get("jaxpr", eqn.params.get("call_jaxpr"))
      if inner is not None:
        _jaxpr_cost(inner.jaxpr if isinstance(inner, core.ClosedJaxpr) else inner, cost)
  return cost


def estimate_cost(fun, *args, **kwargs) -> pallas_core.CostEstimate:
  """A cost estimate of `fun` on arguments of these shapes and dtypes (flops of its
  arithmetic and matmuls, transcendental operations, bytes of its inputs and outputs)."""
  flat, tree = tree_util.tree_flatten(args)
  avals = [ShapedArray(tuple(a.shape), dtypes.canonicalize_dtype(a.dtype)) for a in flat]

  def flat_fun(*xs):
    out = fun(*tree_util.tree_unflatten(tree, list(xs)), **kwargs)
    return tree_util.tree_leaves(out)

  jaxpr, _ = tracing.trace_to_jaxpr(flat_fun, avals)
  cost = _jaxpr_cost(jaxpr, _Cost())
  in_bytes = sum(math.prod(a.shape) * a.dtype.itemsize for a in avals)
  out_bytes = sum(math.prod(v.aval.shape) * v.aval.dtype.itemsize for v in jaxpr.outvars)
  return pallas_core.CostEstimate(flops=int(cost.flops),
                                  transcendentals=int(cost.transcendentals),
                                  bytes_accessed=int(in_bytes + out_bytes))
