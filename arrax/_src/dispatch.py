"""Compiling and running XLA executables: eager one-primitive executables and jitted programs."""
from __future__ import annotations

import collections
import logging
import math
import time

import numpy as np
from jaxlib import _jax, xla_client as xc

from arrax._src import backend, compilation_cache, compiler, core, dtypes, mlir, monitoring
from arrax._src.array import Array, device_put_value
from arrax._src.config import check_transfer, config, trace_state, x64_enabled

_h2d_guard = config.flag("jax_transfer_guard_host_to_device")
_any_guard = config.flag("jax_transfer_guard")
debug_nans = config.flag("jax_debug_nans")
no_execution = config.flag("jax_no_execution")


def raise_no_execution(name):
  """The error for running a computation while jax_no_execution is set (JAX's message)."""
  raise RuntimeError(f"JAX tried to execute function {name}, but the no_execution config "
                     "option is set")
debug_infs = config.flag("jax_debug_infs")

_PY_SCALARS = frozenset((int, float, bool, complex))

logger = logging.getLogger(__name__)


class Executable:
  """A loaded XLA executable with the handlers that wrap its outputs as Arrays."""
  __slots__ = ("loaded", "in_avals", "out_avals", "device", "handlers", "kept", "token_outs",
               "name")

  def __init__(self, loaded, in_avals, out_avals, device, kept=None, name="computation"):
    self.loaded = loaded
    self.name = name
    self.in_avals = in_avals
    self.out_avals = [core.intern_aval(a) for a in out_avals]
    self.device = device
    self.kept = kept
    sharding = backend.device_sharding(device)
    # (a token result is an empty boolean buffer, wrapped as a Token by `wrap_tokens`)
    self.handlers = [_jax.array_result_handler(_physical(a), sharding, False, _skip_checks=True)
                     for a in out_avals]
    self.token_outs = any(a is core.abstract_token for a in out_avals)

  def execute(self, bufs, committed=None):
    """Run on `bufs`; the results are committed to the device if `committed` (None: if it is
    not the default one)."""
    if no_execution.value:
      raise_no_execution(self.name)
    outs = self.loaded.execute_sharded(bufs).consume_with_handlers(self.handlers)
    if committed is None:
      committed = self.device is not backend.default_device()
    outs = [Array(b, a, committed) for b, a in zip(outs, self.out_avals)]
    return wrap_tokens(outs) if self.token_outs else outs


class _TypedExecutable(Executable):
  """An eager executable with results whose types carry shardings (Explicit mesh axes): they
  are laid out over their mesh as their types say."""
  __slots__ = ()

  def execute(self, bufs, committed=None):
    outs = Executable.execute(self, bufs, committed)
    place = _typed_placement[0]
    return [place(o) if type(o) is Array and o.aval.sharding is not None else o for o in outs]


# How an Array whose type carries a sharding is laid out over its mesh (set by `_src/spmd.py`).
_typed_placement: list = [lambda x: x]


def register_typed_placement(fn):
  _typed_placement[0] = fn


def _physical(aval):
  return core.TOKEN_BUFFER_AVAL if aval is core.abstract_token else aval


def wrap_tokens(outs):
  """Results of token type (made as Arrays of the token aval) become Tokens."""
  return [core.Token(Array(x._buf, core.TOKEN_BUFFER_AVAL, x._committed))
          if x.aval is core.abstract_token else x for x in outs]


def _single_device_options(device):
  options = xc.CompileOptions()
  options.device_assignment = xc.DeviceAssignment.create(np.array([[device.id]]))
  return options


def load_serialized(blob, device, client=None):
  """The executable serialized as `blob` (by `loaded.serialize()`), loaded for one device."""
  client = client or device.client
  return client.deserialize_executable(blob, xc.DeviceList((device,)),
                                       _single_device_options(device))


def compile_module(lowered, device, name="", persistent=True, overrides=()):
  """Compile a LoweredModule for one device with XLA (or, if `persistent`, load it from the
  persistent compilation cache); `overrides`: ((XLA option, value), ...) for this
  compilation (jit's compiler_options)."""
  client = backend.get_client(device.platform if device.platform != "cpu" else "cpu")
  options = compiler.apply_config_options(_single_device_options(device), lowered.module)
  if overrides:
    compiler.apply_overrides(options, overrides)
  compiler.dump_module(lowered.module)
  devices = xc.DeviceList((device,))
  # Executables calling back into Python cannot be serialized with their callbacks.
  directory = (compilation_cache.cache_dir()
               if persistent and not lowered.host_callbacks else None)
  verify = False
  if directory:
    monitoring.record_event("/jax/compilation_cache/compile_requests_use_cache")
    text = (lowered.module.operation.get_asm(enable_debug_info=True)
            if config.jax_compilation_cache_include_metadata_in_key else str(lowered.module))
    key = compilation_cache.cache_key(text, client, device, options.SerializeAsString())
    blob = compilation_cache.get(directory, key)
    # jax_compilation_cache_check_contents: the first time a key is met in this process, compile
    # anyway and check that the stored executable is the same.
    verify = (config.jax_compilation_cache_check_contents
              and key not in compilation_cache.verified_keys)
    if blob is not None and not verify:
      try:
        loaded = load_serialized(blob, device, client)
      except Exception as e:  # noqa: BLE001  (a stale or damaged entry: compile instead)
        if config.jax_raise_persistent_cache_errors:
          raise
        logger.warning("arrax: could not load %s from the compilation cache: %s", name, e)
      else:
        monitoring.record_event("/jax/compilation_cache/cache_hits")
        return loaded
    monitoring.record_event("/jax/compilation_cache/cache_misses")
  start = time.perf_counter()
  with monitoring.timed(monitoring.BACKEND_COMPILE_EVENT,
                        name if name.startswith("jit(") else f"jit({name})"):
    loaded = compiler.backend_compile_and_load(client, lowered.module, devices, options,
                                               lowered.host_callbacks)
  elapsed = time.perf_counter() - start
  logger.log(logging.WARNING if config.jax_log_compiles else logging.DEBUG,
             "Finished XLA compilation of %s in %.3f sec", name, elapsed)
  if verify:
    compilation_cache.verify(key, blob, loaded.serialize())
  if directory and elapsed >= config.jax_persistent_cache_min_compile_time_secs:
    compilation_cache.put(directory, key, loaded.serialize())
  return loaded


_scalar_buffers: dict = {}


def _python_scalar_buffer(x, device):
  # Arrays are immutable, so device copies of small Python scalars can be shared; this makes
  # `x + 1` in a loop as cheap as `x + y`. -0.0 and 0.0 compare equal, hence the sign.
  t = type(x)
  key = (t, x, device, x64_enabled(), t is float and x == 0.0 and math.copysign(1.0, x) < 0)
  hit = _scalar_buffers.get(key)
  if hit is None:
    if len(_scalar_buffers) > 4096:
      _scalar_buffers.clear()
    arr = device_put_value(x, device)
    hit = _scalar_buffers[key] = (arr._buf, arr.aval)
  return hit


def _literal_buffer(lit, device):
  # Literals are rank-0 constants (1.0 seeds of grad, constants in JVP rules): share their
  # device copies like Python scalars'.
  val, aval = lit.val, lit.aval
  key = (type(val), val, aval.dtype, aval.weak_type, device,
         bool(np.signbit(val)) if np.isrealobj(val) else False)
  hit = _scalar_buffers.get(key)
  if hit is None:
    if len(_scalar_buffers) > 4096:
      _scalar_buffers.clear()
    arr = device_put_value(val, device, dtype=aval.dtype, weak_type=aval.weak_type)
    hit = _scalar_buffers[key] = (arr._buf, arr.aval)
  return hit


def _guard_host_to_device(x, device):
  if _h2d_guard.value is not None or _any_guard.value is not None:
    check_transfer("host_to_device", lambda: f"aval={core.get_aval(x)!r}, dst_device={device}")


def to_buffer(x, device):
  """The device buffer and aval of an argument (copying host values to `device`)."""
  if type(x) is Array:
    buf = x._buf
    return buf, x.aval
  if type(x) in _PY_SCALARS:
    if _h2d_guard.value is not None or _any_guard.value is not None:
      _guard_host_to_device(x, device)
    return _python_scalar_buffer(x, device)
  if type(x) is not core.Literal and not isinstance(x, (core.Tracer, core.Token)):
    _guard_host_to_device(x, device)
  if isinstance(x, core.Tracer):
    core._raise_escaped(x)
  if isinstance(x, core.Literal):
    return _literal_buffer(x, device)
  if type(x) is core.Token:
    return x._buf._buf, core.abstract_token
  if isinstance(x, Array):   # a multi-device array, gathered on one device
    if x.aval.sharding is not None and _typed_eager:
      raise _TypedOperand()   # (its type carries a sharding: run over its mesh)
    return x._buf, x.aval
  elif type(getattr(x, "aval", None)) is core.AbstractRef:
    raise _RefOperand()
  else:
    handler = dtypes.canonicalize_value_handlers.registered.get(type(x))
    arr = device_put_value(x if handler is None else handler(x), device)
  return arr._buf, arr.aval


# ---- eager execution of single primitives ---------------------------------------------------
# Bounded (least recently used out first): every XLA executable holds a few memory mappings
# of machine code, and a process may have only ~65k of them (vm.max_map_count), so a program
# that runs ops on ever new shapes must not keep all its executables.
PRIM_CACHE_SIZE = 4096
_prim_cache: collections.OrderedDict = core.register_cache(collections.OrderedDict())


def _arg_device(args):
  """The device of the first committed array among `args` and True (results stay there, as in
  JAX), else the default device and False."""
  for a in args:
    if type(a) is Array and a._committed:
      return a.device, True
  return backend.default_device(), False


class _TypedOperand(Exception):
  """An operand whose type carries a sharding (Explicit mesh axes)."""


# How a primitive with such operands runs eagerly (set by `_src/spmd.py`): one SPMD program
# over their mesh, `fn(prim, args, params) -> result`.
_typed_eager: list = []


def register_typed_eager(fn):
  _typed_eager[:] = [fn]


class _RefOperand(Exception):
  """A mutable array reference among a primitive's operands (or closed over by its jaxprs)."""


# How a primitive taking refs runs eagerly (set by `_src/state/primitives.py`, a higher layer):
# `fn(prim, args, params) -> result`, through state discharge.
_ref_eager: list = []


def register_ref_eager(fn):
  _ref_eager[:] = [fn]


def apply_primitive(prim, args, params):
  """Run one primitive eagerly through a cached one-primitive executable."""
  device, committed = _arg_device(args)
  bufs, avals = [], []
  try:
    for a in args:
      buf, aval = to_buffer(a, device)
      bufs.append(buf)
      avals.append(aval)
  except _RefOperand:
    return _ref_eager[0](prim, args, params)
  except _TypedOperand:
    return _typed_eager[0](prim, args, params)
  # (the trace flags too: allow_f16_reductions changes what a rule accepts, ...)
  key = (prim, tuple(params.items()), tuple(avals), device, trace_state())
  exe = _prim_cache.get(key)
  if exe is None:
    if _ref_eager and any(core.jaxpr_uses_refs(j) for j in core.jaxprs_in_params(params)):
      return _ref_eager[0](prim, args, params)   # (its jaxprs close over refs)
    exe = _compile_primitive(prim, avals, params, device)
    _prim_cache[key] = exe
    while len(_prim_cache) > PRIM_CACHE_SIZE:
      try:
        _prim_cache.popitem(last=False)
      except KeyError:   # another thread emptied it meanwhile
        break
  else:
    try:
      _prim_cache.move_to_end(key)
    except KeyError:     # evicted by another thread since the lookup
      pass
  try:
    outs = exe.execute(bufs, committed)
  except _jax.JaxRuntimeError:
    raise_if_deleted(args)
    raise
  if debug_nans.value or debug_infs.value:
    check_special(prim.name, outs)
  return outs if prim.multiple_results else outs[0]


def raise_if_deleted(args):
  """JAX's RuntimeError when one of `args` is an Array whose buffer was deleted or donated."""
  for a in args:
    if isinstance(a, Array) and a.is_deleted():
      raise RuntimeError(f"Array has been deleted with shape={a.aval.str_short()}.")


core.register_eager_impl(apply_primitive)


def primitive_jaxpr(prim, avals, params) -> core.ClosedJaxpr:
  """The one-equation program applying `prim` to arguments of types `avals`."""
  out = core.abstract_eval_typed(prim, avals, params)
  out_avals = list(out) if prim.multiple_results else [out]
  invars = [core.Var(a) for a in avals]
  outvars = [core.Var(a) for a in out_avals]
  # (under compute_on / set_xla_metadata the equation carries their attributes, as in JAX;
  # they are part of the eager cache key through the trace state)
  eqn = core.JaxprEqn(invars, outvars, prim, params, config.arrax_op_attributes or None)
  return core.ClosedJaxpr(core.Jaxpr([], invars, outvars, [eqn]), [])


def _compile_primitive(prim, avals, params, device):
  closed = primitive_jaxpr(prim, avals, params)
  out_avals = closed.out_avals
  module = mlir.lower_jaxpr_to_module(prim.name, closed)
  # One primitive compiles in milliseconds, faster than the persistent cache's key and lookup;
  # a control-flow primitive's program (a jaxpr parameter) may be big enough to be worth them.
  persistent = any(isinstance(v, (core.Jaxpr, core.ClosedJaxpr)) for v in params.values())
  cls = (_TypedExecutable if core.sharding_typing.on and
         any(getattr(a, "sharding", None) is not None for a in out_avals) else Executable)
  return cls(compile_module(module, device, prim.name, persistent), avals, out_avals,
             device, name=f"jit({prim.name})")


def special_value(outs):
  """'nan' or 'inf' if an output holds one that jax_debug_nans / jax_debug_infs looks for."""
  for o in outs:
    if isinstance(o, Array) and np.issubdtype(o.dtype, np.inexact):
      v = np.asarray(o._value, np.complex128)
      if debug_nans.value and np.isnan(v).any():
        return "nan"
      if debug_infs.value and np.isinf(v).any():
        return "inf"
  return None


def check_special(name, outs):
  """FloatingPointError naming `name` when an output holds a NaN (inf) and jax_debug_nans
  (jax_debug_infs) is on."""
  kind = special_value(outs)
  if kind is not None:
    raise FloatingPointError(f"invalid value ({kind}) encountered in {name}")


def wait_for_tokens():
  """Wait for pending side effects (`jax._src.dispatch.wait_for_tokens`): arrax runs effects in
  program order, so there is nothing to wait for."""
