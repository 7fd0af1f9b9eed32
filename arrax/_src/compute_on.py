"""jax.experimental.compute_on: run operations on another kind of compute (the host, ...).

`compute_on(t)` is a context: equations staged in it carry an OpAttributes entry that
lowering turns into `_xla_compute_type` frontend attributes on their ops. `compute_on2` wraps
a function into one `compute_on` equation, lowered to a call carrying them. On CPU, XLA runs
host-annotated ops as any others."""
from __future__ import annotations

import contextlib
import json

from arrax._src import core, mlir, tree_util
from arrax._src.api_util import flatten_axes
from arrax._src.call_primitives import def_call_rules, trace_call

_VALID = ("device_host", "device", "tpu_sparsecore")


def _check_type(compute_type):
  if not isinstance(compute_type, str):
    raise TypeError("`compute_on`'s compute_type argument must be a string.")
  if compute_type not in _VALID and not compute_type.startswith("gpu_stream:"):
    raise ValueError(f"Invalid compute type {compute_type}. Current supported values are "
                     "`device_host`, `device`, `tpu_sparsecore`, and `gpu_stream:#`.")


@contextlib.contextmanager
def compute_on(compute_type: str):
  """Operations staged in this context run on `compute_type` ("device_host", "device",
  "tpu_sparsecore" or "gpu_stream:<n>"); the innermost context wins."""
  _check_type(compute_type)
  with core.op_attributes(core.OpAttributes("compute_type", compute_type)):
    yield


def compute_on2(f=None, *, compute_type, out_memory_spaces, compiler_options=None):
  """`f` as one `compute_on` call running on `compute_type`, its outputs placed in
  `out_memory_spaces` (a prefix of its output tree); a decorator when `f` is None."""
  kwargs = dict(compute_type=compute_type, out_memory_spaces=out_memory_spaces,
                compiler_options=compiler_options)
  if f is None:
    return lambda g: _compute_on2(g, **kwargs)
  return _compute_on2(f, **kwargs)


def _compute_on2(f, *, compute_type, out_memory_spaces, compiler_options):
  _check_type(compute_type)

  def wrapped(*args):
    with compute_on(compute_type):
      closed, outer, leaves, out_tree = trace_call(f, args)
    spaces = tuple(flatten_axes("compute_on out_memory_spaces", out_tree, out_memory_spaces))
    for s in spaces:
      if s is None:   # (JAX fails on an assertion)
        raise AssertionError("compute_on2: out_memory_spaces must give a MemorySpace per output")
      if s is not core.MemorySpace.Device:
        # (arrax's avals hold no memory space, and a None space fails in JAX's rules)
        raise NotImplementedError(f"compute_on2 with out_memory_spaces {s}: only "
                                  "MemorySpace.Device is supported")
    outs = compute_on_p.bind(
        *outer, *leaves, jaxpr=closed, compute_type=compute_type, out_memory_spaces=spaces,
        compiler_options_json=None if compiler_options is None else json.dumps(compiler_options))
    return tree_util.tree_unflatten(out_tree, outs)
  return wrapped


compute_on_p = core.Primitive("compute_on")
def_call_rules(compute_on_p, per_output="out_memory_spaces", new_entry=core.MemorySpace.Device,
               partial_eval=True)


def _contains_compute_on(jaxpr) -> bool:
  return (any(eqn.primitive is compute_on_p for eqn in jaxpr.eqns)
          or any(_contains_compute_on(sub) for sub in core.subjaxprs(jaxpr)))


@compute_on_p.def_lowering
def _compute_on_lowering(ctx, *args, jaxpr, compute_type, out_memory_spaces,
                         compiler_options_json):
  if _contains_compute_on(jaxpr.jaxpr):
    raise ValueError("Nesting `compute_on` with different compute types is not allowed.")
  attrs = mlir.compute_type_attributes(compute_type)
  if compiler_options_json is not None:
    attrs["backend_config"] = compiler_options_json
  elif compute_type == "device":
    attrs["inlineable"] = "false"
  outs = mlir.call_subjaxpr(ctx, jaxpr, "compute_on", args, attributes=attrs)
  return [_place(o, a, "device") for o, a in zip(outs, ctx.avals_out)]


def _place(x, aval, memory_kind):
  """`x` annotated as living in `memory_kind` (JAX's annotate_device_placement call)."""
  op = mlir.custom_call("annotate_device_placement", result_types=[mlir.aval_to_ir_type(aval)],
                        operands=[x], has_side_effect=True, api_version=1)
  mlir.set_frontend_attributes(op, {"_xla_buffer_placement": memory_kind})
  return op.results[0]
