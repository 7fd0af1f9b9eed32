"""Lowering: jaxpr -> StableHLO module (MLIR), built with jaxlib's MLIR bindings.

Each primitive's `lowering(ctx, *operands, **params)` returns a list of ir.Values; `ctx` carries
the input and output avals. Nothing here knows a particular primitive.
"""
from __future__ import annotations

import atexit
import collections
import contextlib
import io
import math
import threading
import warnings

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, func as func_d, mhlo, sdy, stablehlo as hlo
from jaxlib.mlir._mlir_libs import _jax_mlir_ext

from arrax._src import compiler, core, dtypes, source_info_util

_ctx_local = threading.local()


class JaxIrContext(ir.Context):
  """The MLIR context lowering builds modules in (`jax.extend.lowering.JaxIrContext`)."""
  # Skip ir.Context.__init__, which would load every linked dialect eagerly.
  def __init__(self, *args, **kwargs):
    super(ir.Context, self).__init__(*args, **kwargs)


# The dialects of jaxlib's MLIR extension (StableHLO, CHLO, Shardy, func, ...), loaded into
# every lowering context (`jax.extend.lowering.upstream_dialects`).
upstream_dialects = ir.DialectRegistry()
_jax_mlir_ext.register_dialects(upstream_dialects)


def _exit_stale_ir_scopes():
  """Leave the MLIR Context / Location / InsertionPoint scopes still entered on this thread.

  A `with` block's exit is skipped when an exception is raised between its body's end and the
  call to `__exit__` (a KeyboardInterrupt raised by a trace function, say): MLIR's thread-local
  stack then keeps the entry, and its C++ destructor frees the Python objects it holds without
  the GIL when the process exits, which aborts Python ("PyThreadState_Get: the function must be
  called with the GIL held"). Run at exit, when no lowering can be in progress."""
  for _ in range(10000):
    for kind in (ir.InsertionPoint, ir.Location, ir.Context):
      try:
        scope = kind.current
      except (ValueError, RuntimeError):
        continue
      if scope is None:
        continue
      try:
        scope.__exit__(None, None, None)   # (raises unless it is the innermost entry)
      except Exception:  # noqa: BLE001
        continue
      break
    else:
      return


atexit.register(_exit_stale_ir_scopes)


def make_ir_context() -> ir.Context:
  ctx = getattr(_ctx_local, "ctx", None)
  if ctx is None:
    ctx = JaxIrContext()
    ctx.append_dialect_registry(upstream_dialects)
    ctx.load_all_available_dialects()
    sdy.register_dialect(ctx)
    mhlo.register_mhlo_dialect(ctx)
    chlo.register_dialect(ctx)
    hlo.register_dialect(ctx)
    _ctx_local.ctx = ctx
  return ctx


def _code_to_filename(code):
  """The file name an MLIR location gives a frame of `code`, or None to leave it out."""
  if not source_info_util.is_user_filename(code.co_filename):
    return None
  return source_info_util.canonical_filename(code.co_filename)


def _traceback_locations():
  """This thread's converter from jaxlib tracebacks to (cached) MLIR call-site locations."""
  limit = core.config.jax_traceback_in_locations_limit
  key = (limit, core.config.jax_hlo_source_file_canonicalization_regex)
  cached = getattr(_ctx_local, "tb_locations", None)
  if cached is None or cached[0] != key:
    conv = _jax_mlir_ext.TracebackToLocationCache(
        code_to_filename=_code_to_filename, frame_limit=limit if limit >= 0 else 1000,
        context=make_ir_context())
    cached = _ctx_local.tb_locations = (key, conv)
  return cached[1]


# ---- types and constants ----------------------------------------------------------------------
def dtype_to_ir_type(dtype) -> ir.Type:
  dtype = np.dtype(dtype)
  if dtype == dtypes.float0 or dtype == np.bool_:
    return ir.IntegerType.get_signless(1)
  kind = dtype.kind
  if dtype == dtypes.bfloat16:
    return ir.BF16Type.get()
  if dtype in dtypes._float8_dtypes:
    return getattr(ir, {"float8_e4m3fn": "Float8E4M3FNType", "float8_e5m2": "Float8E5M2Type",
                        "float8_e4m3fnuz": "Float8E4M3FNUZType",
                        "float8_e5m2fnuz": "Float8E5M2FNUZType",
                        "float8_e4m3b11fnuz": "Float8E4M3B11FNUZType",
                        "float8_e3m4": "Float8E3M4Type", "float8_e4m3": "Float8E4M3Type",
                        "float8_e8m0fnu": "Float8E8M0FNUType"}[dtype.name]).get()
  if dtype.name == "float4_e2m1fn":
    return ir.Float4E2M1FNType.get()
  if dtype in dtypes._intn_dtypes:
    bits = int(dtype.name.lstrip("uint"))
    return (ir.IntegerType.get_unsigned(bits) if dtype.name.startswith("u")
            else ir.IntegerType.get_signless(bits))
  if kind == "f":
    return {2: ir.F16Type, 4: ir.F32Type, 8: ir.F64Type}[dtype.itemsize].get()
  if kind == "i":
    return ir.IntegerType.get_signless(8 * dtype.itemsize)
  if kind == "u":
    return ir.IntegerType.get_unsigned(8 * dtype.itemsize)
  if kind == "c":
    return ir.ComplexType.get(dtype_to_ir_type(np.float32 if dtype.itemsize == 8 else np.float64))
  raise TypeError(f"No IR type for dtype {dtype}")


def is_symbolic(d) -> bool:
  """Whether the dimension `d` is a symbolic expression (jax.export.symbolic_shape)."""
  return type(d) is not int and getattr(d, "_symbolic_dim", False)


def aval_to_ir_type(aval) -> ir.Type:
  if aval is core.abstract_token:
    return hlo.TokenType.get()
  shape = aval.shape
  if not all(type(d) is int for d in shape):   # symbolic dimensions are dynamic ("?")
    shape = [ir.ShapedType.get_dynamic_size() if is_symbolic(d) else d for d in shape]
  return ir.RankedTensorType.get(shape, dtype_to_ir_type(aval.dtype))


# ---- symbolic dimensions (lowering for jax.export with symbolic shapes) -----------------------
# While a function whose shapes hold dimension variables is lowered, the values of the
# variables (i32 scalars) are here, by name: main computes them from its arguments' dimension
# sizes and passes them to the functions it calls as their first arguments.
_dims_local = threading.local()


def current_dim_values() -> dict:
  return getattr(_dims_local, "values", None) or {}


@contextlib.contextmanager
def dim_values(values):
  """Evaluate symbolic dimensions with `values` ({name: i32 scalar ir.Value}) inside."""
  outer = getattr(_dims_local, "values", None)
  _dims_local.values = values
  try:
    yield
  finally:
    _dims_local.values = outer


class _IrDim:
  """A dimension size as an i32 scalar ir.Value: symbolic expressions evaluate with these."""
  __slots__ = ("v",)

  def __init__(self, v):
    self.v = v

  @staticmethod
  def lift(x):
    return x if isinstance(x, _IrDim) else _IrDim(ir_constant(np.int32(x)))

  def _op(self, other, op, swap=False):
    a, b = self, _IrDim.lift(other)
    return _IrDim(op(b.v, a.v) if swap else op(a.v, b.v))

  def __add__(self, o):
    return self._op(o, hlo.add)

  def __radd__(self, o):
    return self._op(o, hlo.add, True)

  def __sub__(self, o):
    return self._op(o, hlo.subtract)

  def __rsub__(self, o):
    return self._op(o, hlo.subtract, True)

  def __mul__(self, o):
    return self._op(o, hlo.multiply)

  def __rmul__(self, o):
    return self._op(o, hlo.multiply, True)

  def __floordiv__(self, o):   # sizes are >= 0, so truncation is flooring
    return self._op(o, hlo.divide)

  def __mod__(self, o):
    return self._op(o, hlo.remainder)

  def __pow__(self, n):
    out = self
    for _ in range(int(n) - 1):
      out = out * self
    return out


def dim_value(d) -> ir.Value:
  """The size `d` (an int or a symbolic expression) as an i32 scalar ir.Value."""
  if not is_symbolic(d):
    return ir_constant(np.int32(d))
  env = {n: _IrDim(v) for n, v in current_dim_values().items()}
  return _IrDim.lift(d.evaluate(env)).v


def shape_tensor(shape) -> ir.Value:
  """The i32[len(shape)] tensor of the sizes in `shape`."""
  one = ir.RankedTensorType.get([1], ir.IntegerType.get_signless(32))
  parts = [hlo.reshape(one, dim_value(d)) for d in shape]
  if not parts:
    return ir_constant(np.zeros((0,), np.int32))
  return parts[0] if len(parts) == 1 else hlo.concatenate(parts, i64_attr(0))


def reshape(aval_out, x: ir.Value) -> ir.Value:
  """stablehlo.reshape of `x` to `aval_out` (dynamic_reshape when the shape is symbolic)."""
  out_t = aval_to_ir_type(aval_out)
  if any(is_symbolic(d) for d in aval_out.shape):
    return hlo.dynamic_reshape(out_t, x, shape_tensor(aval_out.shape))
  return hlo.reshape(out_t, x)


def broadcast_in_dim(aval_out, x: ir.Value, dims) -> ir.Value:
  """stablehlo.broadcast_in_dim of `x` to `aval_out`'s shape (dynamic_broadcast_in_dim when the
  shape is symbolic)."""
  out_t = aval_to_ir_type(aval_out)
  if any(is_symbolic(d) for d in aval_out.shape):
    out = hlo.dynamic_broadcast_in_dim(out_t, x, shape_tensor(aval_out.shape), dense_i64(dims))
  else:
    out = hlo.broadcast_in_dim(out_t, x, dense_i64(dims))
  if _rule_compute.attrs is not None:   # (under compute_on)
    set_frontend_attributes(out.owner, _rule_compute.attrs)
  return out


# Constants of user types: type -> handler(val, aval) -> ir.Value(s)
# (`jax.interpreters.mlir.register_constant_handler`).
constant_handlers: dict = {}


def ir_constant(val, dtype=None) -> ir.Value:
  """A stablehlo.constant holding a NumPy value (or Python scalar cast to `dtype`)."""
  if constant_handlers:
    handler = constant_handlers.get(type(val))
    if handler is not None:
      return handler(val, None)
  x = np.asarray(val, dtype=dtype)
  if x.dtype == dtypes.float0:
    x = np.zeros(x.shape, np.bool_)
  if x.dtype.kind == "c":   # the bindings build no complex dense attributes from buffers
    return hlo.complex(ir_constant(x.real), ir_constant(x.imag))
  elt = dtype_to_ir_type(x.dtype)
  if x.ndim == 0 or (x.size > 1 and np.all(x == x.flat[0])):
    scalar = ir.DenseElementsAttr.get(np.ascontiguousarray(x.reshape(-1)[:1]),
                                      type=elt).get_splat_value()
    attr = ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get(x.shape, elt), scalar)
  else:
    attr = ir.DenseElementsAttr.get(np.ascontiguousarray(x), type=elt, shape=x.shape)
  return hlo.constant(attr)


def compare(x, y, direction, dtype, total_order=False) -> ir.Value:
  """stablehlo.compare with the comparison type `dtype` calls for (TOTALORDER if asked)."""
  dtype = np.dtype(dtype)
  if dtypes.is_inexact(dtype):
    kind = "TOTALORDER" if total_order else "FLOAT"
  elif dtype.kind == "i" or (dtype in dtypes._intn_dtypes and dtype.name[0] == "i"):
    kind = "SIGNED"
  else:   # unsigned and bool
    kind = "UNSIGNED"
  return hlo.compare(x, y, hlo.ComparisonDirectionAttr.get(direction),
                     compare_type=hlo.ComparisonTypeAttr.get(kind))


def full_like_aval(value, aval) -> ir.Value:
  """A constant of `aval`'s shape and dtype filled with `value` (a splat, cheap for XLA)."""
  scalar = ir_constant(np.asarray(value, aval.dtype))
  if not aval.shape:
    return scalar
  return broadcast_in_dim(aval, scalar, [])


def dense_i64(xs):
  return ir.DenseI64ArrayAttr.get([int(x) for x in xs])


def dense_bool(xs):
  return ir.DenseBoolArrayAttr.get([bool(x) for x in xs])


def i64_attr(i):
  return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(i))


def i32_attr(i):
  return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(i))


class MultiDeviceLowering(NotImplementedError):
  """Raised by a lowering rule whose operation spans several devices (a pmap inside a jit):
  the enclosing single-device program cannot hold it."""


# ---- lowering a jaxpr -----------------------------------------------------------------------
class ModuleContext:
  """State shared by all lowering rules of one module."""

  def __init__(self, module: ir.Module, name: str, axis_env=None, dim_vars=()):
    self.module = module
    # The dimension variables of a lowering with symbolic shapes (sorted names); every
    # function but main takes their values first.
    self.dim_vars = tuple(dim_vars)
    self.name = name
    # Named axes mapped over devices (pmap): name -> size. The program runs as that many
    # replicas, and collectives over these names lower to XLA's cross-replica collectives.
    self.axis_env = axis_env or {}
    self.symbol_table = ir.SymbolTable(module.operation)
    self.host_callbacks = []
    self._func_count = {}
    self._func_names = {"main"}
    # The token chaining the ordered side effects (ordered callbacks) of the block being
    # lowered: each takes it and gives the next, so XLA keeps them in program order.
    self.ordered_token = None
    # The name stack of the equation being lowered (its jaxprs' equations extend it); op
    # locations are named "<stack>/<primitive>", which XLA keeps as op_name metadata.
    self.name_stack = ()
    self._locations = {}
    # The Python traceback of the equation being lowered (of the lowering call at first):
    # the functions lowered for it are located there, as JAX does.
    self.traceback = source_info_util.current_traceback()
    self._tb_locations = None
    # Set by a lowering that calls a module with symbolic shapes (an exported function): the
    # module is then shape-refined once lowered.
    self.needs_shape_refinement = False
    # The mesh a module partitioned by XLA's SPMD partitioner is compiled over (jit with
    # shardings), else None; and Python objects its custom calls refer to until it is compiled.
    self.mesh = None
    self.keepalive = []
    # Lowering rules used instead of the primitives' own ({primitive: rule}; JAX's
    # LoweringParameters.override_lowering_rules).
    self.override_rules = None

  def location(self, stack, prim_name=None, traceback=None):
    """The location of an op of `prim_name` under `stack`, as JAX writes it: named
    "<stack>/<prim_name>", around the call sites of `traceback`'s user frames."""
    key = (stack, prim_name)
    name = self._locations.get(key)
    if name is None:
      name = core.render_name_stack(stack)
      if prim_name is not None:
        name = f"{name}/{prim_name}" if name else prim_name
      self._locations[key] = name
    if traceback is None:
      return ir.Location.name(name) if name else ir.Location.unknown()
    if core.config.jax_include_full_tracebacks_in_locations:
      if self._tb_locations is None:
        self._tb_locations = _traceback_locations()
      loc = self._tb_locations.get(traceback)
    else:
      frame = source_info_util.user_frame(traceback)
      loc = (ir.Location.unknown() if frame is None else ir.Location.file(
          source_info_util.canonical_filename(frame.file_name), frame.start_line,
          frame.start_column))
    return ir.Location.name(name, childLoc=loc) if name else loc

  def fresh_func_name(self, base):
    """`base`, or `base_0`, `base_1`, ... when taken (MLIR's renaming, which JAX's names show)."""
    if base not in self._func_names:
      self._func_names.add(base)
      return base
    while True:
      name = f"{base}_{self._func_count.setdefault(base, 0)}"
      self._func_count[base] += 1
      if name not in self._func_names:
        self._func_names.add(name)
        return name


class LoweringRuleContext:
  __slots__ = ("module_context", "avals_in", "avals_out", "primitive", "name_stack")

  def __init__(self, module_context, primitive, avals_in, avals_out, name_stack=()):
    self.module_context = module_context
    self.primitive = primitive
    self.avals_in = avals_in
    self.avals_out = avals_out
    self.name_stack = name_stack   # the equation's (without the primitive's name)


def jaxpr_subcomp(mctx: ModuleContext, jaxpr: core.Jaxpr, consts, args, name_stack=None):
  """Emit the ops of `jaxpr` at the current insertion point; return the output ir.Values.
  `name_stack`: the stack its equations' names extend (default: the enclosing equation's)."""
  if name_stack is not None:
    outer, mctx.name_stack = mctx.name_stack, name_stack
    try:
      return jaxpr_subcomp(mctx, jaxpr, consts, args)
    finally:
      mctx.name_stack = outer
  env = {}

  def read(v):
    if isinstance(v, core.Literal):
      return ir_constant(np.asarray(v.val, v.aval.dtype))
    return env[v]

  for v, c in zip(jaxpr.constvars, consts):
    env[v] = c
  for v, a in zip(jaxpr.invars, args):
    env[v] = a
  _lower_eqns(mctx, jaxpr, env, read)
  return [read(v) for v in jaxpr.outvars]


def _lower_eqns(mctx, jaxpr, env, read):
  base, outer_tb = mctx.name_stack, mctx.traceback
  try:
    for eqn in jaxpr.eqns:
      prim = eqn.primitive
      stack = base + eqn.source_info if eqn.source_info else base
      tb = mctx.traceback = eqn.traceback or outer_tb
      loc = mctx.location(stack, prim.name, tb)
      mctx.name_stack = stack
      rule_ctx = LoweringRuleContext(mctx, prim, [v.aval for v in eqn.invars],
                                     [v.aval for v in eqn.outvars], stack)
      attrs = frontend_attributes(stack)
      outer_compute = _rule_compute.attrs
      if attrs is not None or outer_compute is not None:
        _rule_compute.attrs = attrs and attrs[1]
      lower = prim.lowering
      if mctx.override_rules is not None:
        lower = mctx.override_rules.get(prim, lower)
      try:
        with loc:
          outs = lower(rule_ctx, *map(read, eqn.invars), **eqn.params)
      finally:
        _rule_compute.attrs = outer_compute
      outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
      if attrs is not None:
        for o in outs:
          if isinstance(o, ir.Value):
            set_frontend_attributes(o.owner, attrs[0])
      if len(outs) != len(eqn.outvars):
        raise RuntimeError(f"Lowering of {prim.name} gave {len(outs)} results, expected "
                           f"{len(eqn.outvars)}")
      for v, o in zip(eqn.outvars, outs):
        env[v] = o
  finally:
    mctx.name_stack, mctx.traceback = base, outer_tb


# ---- frontend attributes (compute_on, set_xla_metadata) ---------------------------------------
_COMPUTE_TYPES = {"device_host": "host", "device": "dense", "tpu_sparsecore": "sparseoffload"}


def compute_type_attributes(compute_type) -> dict:
  """The frontend attributes placing ops on `compute_type` (JAX's names)."""
  if compute_type.startswith("gpu_stream:"):
    return {"_xla_stream_annotation": compute_type.split(":", 1)[1], "inlineable": "false"}
  ctype = _COMPUTE_TYPES.get(compute_type)
  if ctype is None:
    raise ValueError(f"Invalid compute type {compute_type}. Current supported values are "
                     "`device_host`, `device` and `tpu_sparsecore`")
  return {"_xla_compute_type": ctype}


def attribute_string(v) -> str:
  return str(v).lower() if isinstance(v, bool) else str(v)


class _RuleCompute(threading.local):
  attrs = None   # the compute-type attributes of the equation being lowered, if any


# (JAX also marks the broadcasts a lowering rule makes with its equation's compute type)
_rule_compute = _RuleCompute()
_stack_attributes: dict = {}


def frontend_attributes(stack):
  """The frontend attributes the OpAttributes entries of a name stack give the ops of an
  equation, None if there are none, else (all of them, those of the compute type or None):
  the innermost compute type's over the merged metadata (and an op's own attributes win over
  both when they are set, as in JAX)."""
  hit = _stack_attributes.get(stack, _stack_attributes)
  if hit is _stack_attributes:
    compute_type, metadata = None, {}
    for e in stack:
      if type(e) is core.OpAttributes:
        if e.kind == "compute_type":
          compute_type = e.value
        else:
          for k, v in e.value:
            if v is None:
              metadata.pop(k, None)
            else:
              metadata[k] = attribute_string(v)
    compute = None if compute_type is None else compute_type_attributes(compute_type)
    hit = ({**metadata, **compute}, compute) if compute else (metadata, None) if metadata else None
    if len(_stack_attributes) > 10000:
      _stack_attributes.clear()
    _stack_attributes[stack] = hit
  return hit


def set_frontend_attributes(op, attrs: dict, override=False):
  """Add `attrs` (name -> str) to the `mhlo.frontend_attributes` of `op` (an operation; a
  block, the owner of a function argument, is left alone). The op's own attributes win unless
  `override`."""
  if isinstance(op, ir.Block):
    return
  op = op.operation
  merged = {k: ir.StringAttr.get(v) if isinstance(v, str) else v for k, v in attrs.items()}
  if "mhlo.frontend_attributes" in op.attributes:
    own = {a.name: a.attr for a in ir.DictAttr(op.attributes["mhlo.frontend_attributes"])}
    merged = {**own, **merged} if override else {**merged, **own}
  op.attributes["mhlo.frontend_attributes"] = ir.DictAttr.get(merged)


def lower_jaxpr_to_fun(mctx: ModuleContext, name: str, closed: core.ClosedJaxpr, *,
                       public=False, arg_names=None, result_names=None,
                       input_output_aliases=None, buffer_donors=None, with_token=False,
                       name_stack=()):
  """Emit `closed` as a func.func named `name` in the module; consts become constants.
  `with_token`: the function takes the ordered-effects token first and returns it first.
  `input_output_aliases[i]`: the result argument i's buffer is reused for (or None);
  `buffer_donors[i]`: argument i's buffer is given to XLA to reuse as it sees fit."""
  tok = [hlo.TokenType.get()] if with_token else []
  n_dims = 0 if public else len(mctx.dim_vars)
  tok = [ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))] * n_dims + tok
  in_types = tok + [aval_to_ir_type(a) for a in closed.in_avals]
  out_types = tok[n_dims:] + [aval_to_ir_type(a) for a in closed.out_avals]
  with ir.InsertionPoint(mctx.module.body):
    fn = func_d.FuncOp(name, ir.FunctionType.get(in_types, out_types))
  fn.attributes["sym_visibility"] = ir.StringAttr.get("public" if public else "private")
  if input_output_aliases is not None or buffer_donors is not None:
    arg_attrs = []
    for i in range(len(closed.in_avals)):
      attrs = {}
      if input_output_aliases is not None and input_output_aliases[i] is not None:
        attrs["tf.aliasing_output"] = i32_attr(input_output_aliases[i])
      elif buffer_donors is not None and buffer_donors[i]:
        attrs["jax.buffer_donor"] = ir.BoolAttr.get(True)
      arg_attrs.append(ir.DictAttr.get(attrs))
    fn.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get({})] * len(tok) + arg_attrs)
  if public and result_names is not None:
    fn.result_attrs = ir.ArrayAttr.get([
        ir.DictAttr.get({"jax.result_info": ir.StringAttr.get(n)}) for n in result_names])
  locs = [ir.Location.name(n) if n else ir.Location.unknown()
          for n in (arg_names or [None] * len(closed.in_avals))]
  locs = [ir.Location.unknown()] * len(tok) + locs
  block = fn.add_entry_block(arg_locs=locs)
  if n_dims:
    fn.arg_attrs = ir.ArrayAttr.get(
        [ir.DictAttr.get({"jax.global_constant": ir.StringAttr.get(n)}) for n in mctx.dim_vars]
        + [ir.DictAttr.get({})] * (len(in_types) - n_dims))
  outer_token, mctx.ordered_token = mctx.ordered_token, None   # a function chains its own
  outer_stack, mctx.name_stack = mctx.name_stack, name_stack   # and names ops from `name_stack`
  outer_dims = getattr(_dims_local, "values", None)
  try:
    with ir.InsertionPoint(block), mctx.location(name_stack, None, mctx.traceback):
      consts = [ir_constant(np.asarray(c, v.aval.dtype))
                for v, c in zip(closed.jaxpr.constvars, closed.consts)]
      args = list(block.arguments)
      if n_dims:
        _dims_local.values = dict(zip(mctx.dim_vars, args[:n_dims]))
        args = args[n_dims:]
      elif public and mctx.dim_vars:
        _dims_local.values = {n: hlo.get_dimension_size(args[i], d)
                              for n, (i, d) in mctx.dim_var_sources.items()}
      if with_token:
        mctx.ordered_token, *args = args
      outs = jaxpr_subcomp(mctx, closed.jaxpr, consts, args)
      func_d.ReturnOp(([current_ordered_token(mctx)] if with_token else []) + outs)
  finally:
    mctx.ordered_token = outer_token
    mctx.name_stack = outer_stack
    _dims_local.values = outer_dims
  return fn


def current_ordered_token(mctx) -> ir.Value:
  """The token ordering the next ordered effect (made at the first one)."""
  if mctx.ordered_token is None:
    mctx.ordered_token = hlo.create_token()
  return mctx.ordered_token


class LoweredModule:
  """A StableHLO module plus the Python host callbacks its custom calls refer to by index."""
  __slots__ = ("module", "host_callbacks", "keepalive")

  def __init__(self, module, host_callbacks, keepalive=()):
    self.module = module
    self.host_callbacks = host_callbacks
    self.keepalive = keepalive   # (objects the compiler calls back into: kept until compiled)

  def __str__(self):
    return str(self.module)


def donation_plan(in_avals, out_avals, donated):
  """Which donated arguments XLA may reuse, as JAX decides it: (aliases, donors, unusable).

  A donated argument is aliased to the first result of the same shape and dtype not yet
  taken (`aliases[i]` = result index: XLA writes that result into its buffer); a remaining
  one is still handed to XLA as a buffer donor when some unaliased result has as many
  elements; the others (`unusable`, their avals) are warned about."""
  aliases = [None] * len(in_avals)
  donors = [False] * len(in_avals)
  waiting = collections.defaultdict(collections.deque)
  for i, (aval, d) in enumerate(zip(in_avals, donated)):
    if d:
      waiting[(aval.shape, aval.dtype)].append(i)
  aliased_outs = set()
  for o, aval in enumerate(out_avals):
    q = waiting.get((getattr(aval, "shape", None), getattr(aval, "dtype", None)))
    if q and aval is not core.abstract_token:
      aliases[q.popleft()] = o
      aliased_outs.add(o)
  by_size = collections.defaultdict(collections.deque)
  for o, aval in enumerate(out_avals):
    if o not in aliased_outs and aval is not core.abstract_token:
      by_size[aval.size].append(o)
  unusable = []
  for i, (aval, d) in enumerate(zip(in_avals, donated)):
    if not d or aliases[i] is not None or aval is core.abstract_token:
      continue
    if by_size.get(aval.size):
      by_size[aval.size].popleft()
      donors[i] = True
    else:
      unusable.append(aval)
  return aliases, donors, unusable


def lower_jaxpr_to_module(name: str, closed: core.ClosedJaxpr, *, arg_names=None,
                          result_names=None, num_partitions=1,
                          num_replicas=1, axis_env=None, donated_args=None,
                          dim_var_sources=None, mesh=None,
                          override_rules=None) -> LoweredModule:
  """A StableHLO module `jit_<name>` whose public `main` computes `closed`. `donated_args`
  (one flag per argument): arguments whose buffers the computation may reuse; those it
  cannot are warned about, as JAX does.

  `dim_var_sources` ({name: (argument index, axis)}): the dimension variables of symbolic
  shapes in `closed` and where main reads each one's value. `override_rules` ({primitive:
  rule}): lowering rules used instead of those primitives' own."""
  check_jaxpr_constants(closed)
  compiler.dump_jaxpr(name, closed.jaxpr)
  aliases = donors = None
  if donated_args is not None and any(donated_args):
    aliases, donors, unusable = donation_plan(closed.in_avals, closed.out_avals, donated_args)
    if unusable:
      warnings.warn("Some donated buffers were not usable: "
                    f"{', '.join(str(a) for a in unusable)}.\nSee an explanation at "
                    "https://docs.jax.dev/en/latest/faq.html#buffer-donation.", stacklevel=2)
  ctx = make_ir_context()
  with ctx, ir.Location.unknown(ctx):
    module = ir.Module.create()
    module.operation.attributes["sym_name"] = ir.StringAttr.get(
        _sanitize(f"jit_{name}").rstrip("_"))
    module.operation.attributes["mhlo.num_partitions"] = i32_attr(num_partitions)
    module.operation.attributes["mhlo.num_replicas"] = i32_attr(num_replicas)
    mctx = ModuleContext(module, name, axis_env, sorted(dim_var_sources or {}))
    mctx.dim_var_sources = dim_var_sources or {}
    mctx.mesh = mesh
    mctx.override_rules = override_rules
    if result_names is None:
      n_out = len(closed.out_avals)
      result_names = ["result"] if n_out == 1 else [f"result[{i}]" for i in range(n_out)]
    lower_jaxpr_to_fun(mctx, "main", closed, public=True, arg_names=arg_names,
                       result_names=result_names, input_output_aliases=aliases,
                       buffer_donors=donors, name_stack=(f"jit({name})",))
    if mctx.needs_shape_refinement:
      module = refine_shapes(module)
  return LoweredModule(module, mctx.host_callbacks, tuple(mctx.keepalive))


def _pprint_bytes(n):
  if n <= 0:
    return "0.00B"
  exponent = min(int(math.floor(math.log(n, 1000))), 4)
  return f"{n / 1000 ** exponent:.2f}{('', 'K', 'M', 'G', 'T')[exponent]}B"


def check_jaxpr_constants(closed: core.ClosedJaxpr):
  """Warn (as JAX does) when the constants `closed` captured add up to at least
  jax_captured_constants_warn_bytes (-1: never), naming where the largest are used when
  jax_captured_constants_report_frames is not 0."""
  threshold = core.config.jax_captured_constants_warn_bytes
  if threshold == -1 or not closed.consts:
    return
  sizes = [getattr(c, "nbytes", 0) for c in closed.consts]
  total = sum(sizes)
  if total < threshold:
    return
  msg = ("A large amount of constants were captured during lowering "
         f"({_pprint_bytes(total)} total). If this is intentional, disable this warning by "
         "setting JAX_CAPTURED_CONSTANTS_WARN_BYTES=-1. ")
  frames = core.config.jax_captured_constants_report_frames
  if not frames:
    warnings.warn(msg + "To obtain a report of where these constants were encountered, set "
                  "JAX_CAPTURED_CONSTANTS_REPORT_FRAMES=-1.")
    return
  msg += ("The subsequent report may be disabled by setting "
          f"JAX_CAPTURED_CONSTANTS_REPORT_FRAMES=0.\n\nLargest "
          f"{min(frames, len(closed.consts))} allocation(s):\n")
  largest = sorted(zip(sizes, closed.jaxpr.constvars, closed.consts), key=lambda t: -t[0])[:5]
  for nbytes, var, const in largest:
    msg += (f"  Constant {type(const)}, {var.aval.str_short()}, {_pprint_bytes(nbytes)} "
            "captured at:\n")
    for eqn in closed.jaxpr.eqns:
      if any(v is var for v in eqn.invars):
        where = source_info_util.summarize(eqn.source_info,
                                           frames if frames > 0 else 10 ** 6)
        msg += "    " + where.replace("\n", "\n    ") + "\n\n"
  warnings.warn(msg)


def refine_shapes(module: ir.Module) -> ir.Module:
  """`module` with the dynamic shapes inside it made static from its main's static argument
  shapes (jaxlib's shape refinement; shape assertions are checked)."""
  bytecode = io.BytesIO()
  module.operation.write_bytecode(bytecode)
  refined = _jax.mlir.refine_polymorphic_shapes(bytecode.getvalue(), enable_shape_assertions=True,
                                                validate_static_shapes=True)
  return ir.Module.parse(refined)


def _sanitize(name):
  return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def call_subjaxpr(ctx: LoweringRuleContext, closed: core.ClosedJaxpr, name: str, args,
                  attributes=None):
  """Emit `closed` as a private function and a func.call to it (used by nested jit), with
  the frontend `attributes` (name -> str) on the call if given."""
  mctx = ctx.module_context
  fn_name = mctx.fresh_func_name(name)
  ordered = core.jaxpr_has_ordered_effects(closed)
  fn = lower_jaxpr_to_fun(mctx, fn_name, closed, with_token=ordered)
  dims = [current_dim_values()[n] for n in mctx.dim_vars]
  # The call is named "<stack>/jit(name)"; XLA prefixes the callee's op names with it when it
  # inlines the call (the callee's ops are named relative to it), as with JAX.
  with mctx.location(ctx.name_stack + (f"jit({name})",), None, mctx.traceback):
    call = func_d.CallOp(fn, dims + ([current_ordered_token(mctx)] if ordered else [])
                         + list(args))
  if attributes:
    set_frontend_attributes(call, attributes, override=True)
  results = list(call.results)
  if ordered:
    mctx.ordered_token, *results = results
  return results


def make_reducer_region(op, scalar_dtype, body_fn, n=1):
  """Fill the body region of a reduce-like op: `body_fn(acc_values, x_values) -> values`."""
  scalar_t = ir.RankedTensorType.get([], dtype_to_ir_type(scalar_dtype))
  block = op.regions[0].blocks.append(*([scalar_t] * (2 * n)))
  with ir.InsertionPoint(block):
    args = list(block.arguments)
    hlo.return_(list(body_fn(args[:n], args[n:])))


# ---- attributes and custom calls -------------------------------------------------------------
def _numpy_attribute(x):
  x = np.asarray(x)
  if x.dtype == dtypes.float0:
    x = np.zeros(x.shape, np.bool_)
  elt = dtype_to_ir_type(x.dtype)
  if x.ndim == 0 and isinstance(x[()], np.generic) and not isinstance(elt, ir.ComplexType):
    if isinstance(elt, ir.IntegerType):
      return ir.IntegerAttr.get(elt, int(x))
    return ir.FloatAttr.get(elt, float(x))
  if x.ndim == 0:
    raise TypeError(f"Unsupported scalar attribute type: {type(x)}")
  if 0 in x.strides and x.size > 0:
    raise ValueError("NumPy arrays with zero strides are not supported as MLIR attributes")
  return ir.DenseElementsAttr.get(np.ascontiguousarray(x), type=elt, shape=x.shape)


def ir_attribute(val) -> ir.Attribute:
  """The MLIR attribute for a Python value, as JAX's `mlir.ir_attribute`: Python scalars are
  64-bit (i64, f64; bools i1), NumPy scalars keep their type, arrays become dense elements,
  strings string attributes, sequences arrays and dicts dictionaries."""
  if isinstance(val, (ir.Attribute, ir.Type)):
    return val
  if isinstance(val, bool):
    return ir.BoolAttr.get(val)
  if isinstance(val, int):
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), val)
  if isinstance(val, float):
    return ir.FloatAttr.get(ir.F64Type.get(), val)
  if isinstance(val, (str, bytes)):
    return ir.StringAttr.get(val)
  if isinstance(val, np.dtype):
    return ir.TypeAttr.get(dtype_to_ir_type(val))
  if isinstance(val, np.bool_):
    return ir.BoolAttr.get(bool(val))
  if isinstance(val, np.ndarray):
    if val.ndim == 0:
      return _numpy_attribute(val[()])
    return _numpy_attribute(val)
  if isinstance(val, np.generic):
    return _numpy_attribute(val)
  if isinstance(val, dict):
    return ir.DictAttr.get({k: ir_attribute(v) for k, v in val.items()})
  if isinstance(val, (list, tuple)):
    return ir.ArrayAttr.get([ir_attribute(v) for v in val])
  inner = getattr(val, "__jax_array__", None)
  if inner is not None:
    return ir_attribute(np.asarray(inner()))
  hashed = getattr(val, "_arrax_attribute_value", None)   # wrappers of unhashable params
  if hashed is not None:
    return ir_attribute(hashed())
  raise TypeError(f"No attribute handler defined for type: {type(val)}")


def _layouts_attr(layouts):
  return ir.ArrayAttr.get([
      ir.DenseIntElementsAttr.get(np.atleast_1d(np.asarray(lay, np.int64)),
                                  type=ir.IndexType.get()) for lay in layouts])


def custom_call(call_target_name, *, result_types, operands, backend_config="",
                has_side_effect=False, api_version=2, operand_output_aliases=None,
                operand_layouts=None, result_layouts=None, called_computations=(),
                extra_attributes=None):
  """A stablehlo.custom_call as JAX writes it. A dict `backend_config` (the typed FFI's
  attributes) goes into `mhlo.backend_config` with api_version 1, the form XLA reads typed-FFI
  attributes from; a string one is the opaque backend_config of older custom calls."""
  if backend_config is None:
    backend_config = ""
  typed = isinstance(backend_config, dict)
  if not typed and not isinstance(backend_config, (str, bytes)):
    raise ValueError(f"custom_call backend_config unexpected type: {backend_config}")
  attrs = {
      "call_target_name": ir.StringAttr.get(call_target_name),
      "has_side_effect": ir.BoolAttr.get(bool(has_side_effect)),
      "backend_config": ir.StringAttr.get("" if typed else backend_config),
      "api_version": i32_attr(1 if typed else api_version),
      "called_computations": ir.ArrayAttr.get(
          [ir.FlatSymbolRefAttr.get(n) for n in called_computations]),
  }
  if operand_output_aliases is not None:
    attrs["output_operand_aliases"] = ir.ArrayAttr.get([
        hlo.OutputOperandAlias.get(output_tuple_indices=[o] if len(result_types) > 1 else [],
                                   operand_index=i, operand_tuple_indices=[])
        for i, o in operand_output_aliases.items()])
  if extra_attributes:
    attrs.update(extra_attributes)
  if operand_layouts is not None:
    attrs["operand_layouts"] = _layouts_attr(operand_layouts)
  if result_layouts is not None:
    attrs["result_layouts"] = _layouts_attr(result_layouts)
  op = hlo.CustomCallOp.build_generic(results=list(result_types), operands=list(operands),
                                      attributes=attrs)
  if typed:
    op.operation.attributes["mhlo.backend_config"] = ir.DictAttr.get(
        {k: ir_attribute(v) for k, v in backend_config.items()})
  return op
