"""jit: stage a function to a jaxpr, compile it with XLA, and cache the executable.

The cache key is (input pytree structure, input avals incl. weak types, static arguments, the
flags that change tracing (x64, threefry mode, matmul precision), device), as ARCHITECTURE.md
decision 8 says. Under another trace (make_jaxpr, a transformation, an outer jit) a jitted call
becomes one `jit` equation holding its jaxpr.
"""
from __future__ import annotations

import collections
import functools
import inspect
import itertools
import logging
import sys
import threading
import time
import warnings
import weakref
from typing import Union

import numpy as np
from jaxlib import _hlo, _jax

from arrax._src import (ad, api_util, backend, batching, core, dispatch, dtypes, mlir,
                        monitoring, traceback_util)
from arrax._src.array import Array, device_put_value
from arrax._src.layout import Format, Layout
from arrax._src.sharding_impls import SingleDeviceSharding
from arrax._src import config as config_mod
from arrax._src.config import config, trace_state, trace_state_change
from arrax._src.tracing import closed_with_host_consts, stage_literal, trace_to_jaxpr
from arrax._src.tree_util import registry as _registry, tree_flatten, tree_leaves, tree_unflatten
from arrax._src.api import ShapeDtypeStruct, eval_shape
from arrax._src.tree_util import keystr, tree_flatten_with_path

_flatten = _registry.flatten

logger = logging.getLogger(__name__)
_disable_jit = config.flag("jax_disable_jit")
_plain_calls = config_mod.plain_calls
_trace_state = config_mod._trace_state   # (what trace_state() is while no context is open)
_no_execution = dispatch.no_execution
_debug_nans = dispatch.debug_nans
_debug_infs = dispatch.debug_infs
_eval_trace = core.eval_trace
_default_device = backend.default_device
_resolved_default = backend._default_device   # (filled by default_device(); [] until then)


# ---- the jit primitive ------------------------------------------------------------------------
jit_p = core.Primitive("jit")
jit_p.multiple_results = True


def _jit_abstract_eval(*avals, jaxpr, name, donated_invars=None):
  return list(jaxpr.out_avals)


def _jit_lowering(ctx, *args, jaxpr, name, donated_invars=None):
  # Donation applies to a top-level call only: inside a program XLA reuses buffers itself.
  return mlir.call_subjaxpr(ctx, jaxpr, name, args)


_jaxpr_exe_cache: "weakref.WeakKeyDictionary" = core.register_cache(weakref.WeakKeyDictionary())


def _jit_impl(*args, jaxpr, name, donated_invars=None):
  if core.sharding_typing.on:
    typed = _typed_jit_impl(args, jaxpr, name, donated_invars)
    if typed is not None:
      return typed
  device, committed = dispatch._arg_device(args)
  if _needs_discharge(jaxpr):
    lowered, runner = _ref_discharge[0](name, jaxpr)
    if runner is not None:
      return runner(list(args))
    jaxpr = lowered
  if dispatch.debug_nans.value:
    donated_invars = None
  per_jaxpr = _jaxpr_exe_cache.setdefault(jaxpr, {})
  exe = per_jaxpr.get((device, donated_invars))
  if exe is None:
    module = mlir.lower_jaxpr_to_module(name, jaxpr, donated_args=donated_invars)
    exe = dispatch.Executable(dispatch.compile_module(module, device, name), jaxpr.in_avals,
                              jaxpr.out_avals, device, name=f"jit({name})")
    per_jaxpr[(device, donated_invars)] = exe
  bufs = _donatable_buffers(args, donated_invars, device)
  outs = _execute(exe, bufs, args, committed)
  if dispatch.debug_nans.value or dispatch.debug_infs.value:
    _check_special(name, outs, lambda: core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args))
  return outs


def _typed_jit_impl(args, jaxpr, name, donated_invars):
  """With operands whose types carry shardings (an inner jit run eagerly under vmap or grad):
  its program typed by them (retraced when its own types lack them) run as one SPMD program;
  None when no operand's type has one."""
  avals = tuple(core.get_aval(a) for a in args)
  if all(getattr(a, "sharding", None) is None for a in avals):
    return None
  if any(getattr(a, "sharding", None) != getattr(b, "sharding", None)
         for a, b in zip(avals, jaxpr.in_avals)):
    def retype():
      inner, consts = trace_to_jaxpr(
          lambda *xs: core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs), list(avals))
      return closed_with_host_consts(inner, consts)[0]
    jaxpr = core.memo([jaxpr], ("retype", avals), retype)
  return dispatch._typed_eager[0](jit_p, args, dict(jaxpr=jaxpr, name=name,
                                                    donated_invars=donated_invars))


def _check_special(name, outs, deoptimized):
  """With jax_debug_nans/infs: a NaN (inf) among a jitted function's outputs runs
  `deoptimized()` (the function without jit, op by op), so that the error names the operation
  that made it, as JAX does."""
  kind = dispatch.special_value(outs)
  if kind is None:
    return
  # JAX says "nan" for infs too.
  print("Invalid nan value encountered in the output of a jax.jit function. Calling the "
        "de-optimized version.")
  try:
    deoptimized()
  except (FloatingPointError, ZeroDivisionError) as e:
    raise e from None
  raise FloatingPointError(
      f"{(f'jit({name})', kind)}. Because jax_config.debug_nans.value and/or "
      "config.jax_debug_infs is set, the de-optimized function (i.e., the function as if the "
      "`jit` decorator were removed) was called in an attempt to get a more precise error "
      "message. However, the de-optimized function did not produce invalid values during its "
      "execution. This behavior can result from `jit` optimizations causing the invalid value "
      "to be produced. It may also arise from having nan/inf literals as inputs or outputs, "
      "like `jax.jit(lambda ...: jax.numpy.nan)(...)`. \n\nIt may be possible to avoid the "
      "invalid value by removing the `jit` decorator, at the cost of losing optimizations.")


jit_p.def_abstract_eval(_jit_abstract_eval)
jit_p.def_lowering(_jit_lowering)
jit_p.def_impl(lambda *args, **params: _jit_impl(*args, **params))


def _jit_pp_params(p):
  # The nested-jit equation shows its name, its donated inputs (if any) and its jaxpr, in
  # JAX's order.
  if p.get("donated_invars") and any(p["donated_invars"]):
    return {"name": p["name"], "donated_invars": p["donated_invars"], "jaxpr": p["jaxpr"]}
  return {"name": p["name"], "jaxpr": p["jaxpr"]}


jit_p.def_pp_params(_jit_pp_params)


def _prune_unused(closed, names, donated, keep_unused):
  """JAX's keep_unused=False for a top-level jit: the closed jaxpr without dead equations and
  without the inputs nothing reads, with `names` and `donated` cut to match, and the kept
  input positions (None when every input is kept)."""
  if keep_unused:
    return closed, names, donated, None
  jaxpr, used = core.dce_jaxpr(closed.jaxpr, [True] * len(closed.jaxpr.outvars))
  closed = core.ClosedJaxpr(jaxpr, closed.consts)
  if all(used):
    return closed, names, donated, None
  kept = tuple(i for i, u in enumerate(used) if u)
  names = names and [names[i] for i in kept]
  donated = donated and tuple(donated[i] for i in kept)
  return closed, names, donated, kept


def _donatable_buffers(args, donated, device):
  """The buffers of `args` for an executable that may take over the `donated` ones: a donated
  Python scalar gets a buffer of its own (scalars' buffers are shared), and a donated Array
  forgets its cached host copy (reading it must raise once its buffer is gone)."""
  if not donated:
    return [dispatch.to_buffer(a, device)[0] for a in args]
  bufs = []
  for a, d in zip(args, donated):
    if d and type(a) is Array:
      a._npy = None
      bufs.append(a._buf)
    elif d and type(a) in (int, float, complex, bool):
      bufs.append(device_put_value(a, device)._buf)
    else:
      bufs.append(dispatch.to_buffer(a, device)[0])
  return bufs


def _execute(exe, bufs, args, committed=None):
  try:
    return exe.execute(bufs, committed)
  except _jax.JaxRuntimeError:
    dispatch.raise_if_deleted(args)
    raise


_dce_jit_cache: "weakref.WeakKeyDictionary" = core.register_cache(weakref.WeakKeyDictionary())


def _jit_dce(eqn, used):
  """The `jit` equation `eqn` computing only its `used` outputs and taking only the inputs
  they need (none used and no effects: no equation); one pruned jaxpr per (jaxpr, used), so a
  jaxpr used twice stays shared, as JAX does."""
  if not any(used) and not core.has_effects(eqn):
    return None
  closed = eqn.params["jaxpr"]
  per = _dce_jit_cache.setdefault(closed, {})
  hit = per.get(tuple(used))
  if hit is None:
    j, used_in = core.dce_jaxpr(closed.jaxpr, used, [False] * len(closed.jaxpr.invars))
    hit = per[tuple(used)] = (core.ClosedJaxpr(j, closed.consts), used_in)
  new_closed, used_in = hit
  params = dict(eqn.params, jaxpr=new_closed)
  if params.get("donated_invars") is not None:
    params["donated_invars"] = tuple(d for d, u in zip(params["donated_invars"], used_in) if u)
  return core.JaxprEqn([v for v, u in zip(eqn.invars, used_in) if u],
                       [v for v, u in zip(eqn.outvars, used) if u], eqn.primitive,
                       params, eqn.source_info, eqn.traceback)


jit_p.def_dce(_jit_dce)


# Autodiff rules: the JVP of a jit is a jit of the JVP jaxpr; under partial evaluation it splits
# into a known jit (run now) and an unknown one (recorded); its transpose is a jit of the
# transposed jaxpr.
def _donation_params(donated):
  return {} if donated is None or not any(donated) else {"donated_invars": tuple(donated)}


def _jit_jvp(primals, tangents, *, jaxpr, name, donated_invars=None):
  nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
  # memoized like JAX's: calls of one jitted function share one JVP jaxpr (printed once)
  jvp_closed, out_nz = core.memo([jaxpr], ("jvp", nonzeros),
                                 lambda: ad.jvp_jaxpr(jaxpr, nonzeros))
  # a donated primal's tangent is donated too, as in JAX
  donated = donated_invars and (*donated_invars,
                                *[d for d, nz in zip(donated_invars, nonzeros) if nz])
  outs = jit_p.bind(*primals, *[t for t in tangents if type(t) is not ad.Zero],
                    jaxpr=jvp_closed, name=name, **_donation_params(donated))
  n = len(jaxpr.out_avals)
  t_it = iter(outs[n:])
  t_out = [next(t_it) if nz else ad.Zero(ad.tangent_aval(a))
           for a, nz in zip(jaxpr.out_avals, out_nz)]
  return outs[:n], t_out


def _linearize_split(jaxpr, nonzeros):
  primal, tangent, out_nz, res_fwd = ad.linearize_jaxpr(jaxpr, nonzeros)
  primal, out_fwd = ad.forward_inputs(primal, len(jaxpr.out_avals))
  n_kept = sum(f is None for f in out_fwd)
  primal, res_dup = _dedupe_residuals(primal, n_kept)
  return primal, tangent, out_nz, res_fwd, out_fwd, n_kept, res_dup


def _jit_linearize(trace, primals, tangents, *, jaxpr, name, donated_invars=None):
  """JVP of a jit under partial evaluation, done as JAX linearizes a jit: a known jit computing
  the primal outputs and the residuals runs now; a jit of the tangent computation is recorded."""
  nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
  primal, tangent, out_nz, res_fwd, out_fwd, n_kept, res_dup = core.memo(
      [jaxpr], ("linearize", nonzeros), lambda: _linearize_split(jaxpr, nonzeros))
  with core.set_current_trace(trace.parent):
    outs = jit_p.bind(*primals, jaxpr=primal, name=name)
  kept = outs[:n_kept]
  res_it = iter(outs[n_kept:])
  res_new = [next(res_it) if d is None else kept[d] for d in res_dup]
  new_it, fwd_from = iter(res_new), [*jaxpr.consts, *primals]
  residuals = [next(new_it) if f is None else fwd_from[f] for f in res_fwd]
  nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
  t_outs = iter(trace.record(jit_p, residuals + nz_tangents, {"jaxpr": tangent, "name": name}))
  kept_it = iter(kept)
  primal_out = [next(kept_it) if f is None else primals[f] for f in out_fwd]
  t_out = [next(t_outs) if nz else ad.Zero(ad.tangent_aval(a))
           for a, nz in zip(jaxpr.out_avals, out_nz)]
  return primal_out, t_out


def _dedupe_residuals(closed, n_out):
  """Drop residual outputs (after the first `n_out`) that repeat one of the first `n_out`
  outputs: dup[i] is the index of the output residual i repeats, or None if kept."""
  jaxpr = closed.jaxpr
  first = {}
  for i, v in enumerate(jaxpr.outvars[:n_out]):
    if type(v) is core.Var:
      first.setdefault(v, i)
  dup = [first.get(v) if type(v) is core.Var else None for v in jaxpr.outvars[n_out:]]
  if all(d is None for d in dup):
    return closed, dup
  outvars = jaxpr.outvars[:n_out] + [v for v, d in zip(jaxpr.outvars[n_out:], dup) if d is None]
  new = core.Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, jaxpr.eqns, jaxpr.debug_info)
  return core.ClosedJaxpr(new, closed.consts), dup


def _jit_partial_eval(trace, args, params):
  # (donation is dropped here: the known part's inputs may be residuals still needed)
  jaxpr, name = params["jaxpr"], params["name"]
  unknowns = [trace.is_unknown(a) for a in args]
  known, unknown, out_unk, res_fwd = ad.partial_eval_jaxpr(jaxpr, unknowns)
  known, out_fwd = ad.forward_inputs(known, len(out_unk) - sum(out_unk))
  known_args = [a for a, u in zip(args, unknowns) if not u]
  with core.set_current_trace(trace.parent):
    known_outs = jit_p.bind(*known_args, jaxpr=known, name=name)
  n_known = sum(f is None for f in out_fwd)
  res_it = iter(known_outs[n_known:])
  res = [next(res_it) if f is None else known_args[f] for f in res_fwd]
  unk_args = res + [a for a, u in zip(args, unknowns) if u]
  unk_outs = trace.record(jit_p, unk_args,
                                                  {"jaxpr": unknown, "name": name})
  k_it, u_it = iter(known_outs[:n_known]), iter(unk_outs)
  known_vals = [next(k_it) if f is None else known_args[f] for f in out_fwd]
  kv_it = iter(known_vals)
  return [next(u_it) if u else next(kv_it) for u in out_unk]


def _jit_transpose(cts, *args, jaxpr, name, donated_invars=None):
  linear = tuple(ad.is_undefined(a) for a in args)
  ct_nz = tuple(type(ct) is not ad.Zero for ct in cts)
  t_closed = core.memo([jaxpr], ("transpose", linear, ct_nz),
                                lambda: ad.transpose_jaxpr(jaxpr, linear, ct_nz))
  res = [a for a, lin in zip(args, linear) if not lin]
  outs = iter(jit_p.bind(*res, *[ct for ct in cts if type(ct) is not ad.Zero],
                         jaxpr=t_closed, name=name))
  return [next(outs) if lin else None for lin in linear]


jit_p.def_jvp(_jit_jvp)
jit_p.def_linearize(_jit_linearize)
jit_p.def_partial_eval(_jit_partial_eval)
jit_p.def_transpose(_jit_transpose)


# Batching: a jit of the batched jaxpr (an axis-aware rule, so collectives inside see the axis).
def _jit_batch(axis_data, args, dims, *, jaxpr, name, donated_invars=None):
  batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)
  return (jit_p.bind(*args, jaxpr=batched, name=name, **_donation_params(donated_invars)),
          out_dims)


jit_p.def_batch_axis(_jit_batch)


# ---- argument handling --------------------------------------------------------------------------
def _normalize_argnums(argnums, sig, argnames):
  """Resolve static_argnums/static_argnames against each other using the signature."""
  argnums = () if argnums is None else api_util.ensure_index_tuple(argnums)
  argnames = () if argnames is None else api_util.ensure_str_tuple(argnames)
  if sig is not None:
    positional = [p for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    extra_nums = tuple(i for i, p in enumerate(positional) if p.name in argnames)
    extra_names = tuple(positional[i].name for i in argnums
                        if -len(positional) <= i < len(positional)
                        and positional[i].kind == positional[i].POSITIONAL_OR_KEYWORD)
    argnums = tuple(sorted(set(argnums) | set(extra_nums)))
    argnames = tuple(sorted(set(argnames) | set(extra_names)))
    api_util.validate_argnums_argnames(sig, argnums, argnames, "static")
  return argnums, argnames


class _HashableStatic:
  """A static argument in a cache key; an unhashable one is an error as in JAX."""
  __slots__ = ("val", "_hash")

  def __init__(self, val, where):
    # `where`: a position (int) or a quoted keyword name, formatted only for the error.
    try:
      self._hash = hash(val)
    except TypeError as e:
      where = f"at position {where}" if type(where) is int else where
      raise ValueError(
          f"Non-hashable static arguments are not supported. An error occurred while trying to "
          f"hash an object of type {type(val)}, {val}. The error was:\n{e}\n"
          f"(static argument {where}; pass a hashable value such as a tuple, or make this "
          "argument dynamic)") from None
    self.val = val

  def __eq__(self, other):
    return type(other) is _HashableStatic and type(self.val) is type(other.val) and (
        self.val == other.val)

  def __hash__(self):
    return self._hash

  def __repr__(self):
    return repr(self.val)


# (set by `_src/hijax.py`) for a mutable hi argument: (aval, value) -> its aval with its current
# type state (a cache key), and that -> the aval its tracer gets (whose state the trace updates);
# then closed jaxpr -> whether it holds hi values or primitives (run like refs: by the
# `_ref_discharge` hook)
_hi_hooks: list = []


def _needs_discharge(closed) -> bool:
  return bool(_ref_discharge) and (core.jaxpr_uses_refs(closed.jaxpr)
                                   or bool(_hi_hooks) and _hi_hooks[2](closed))


def _arg_aval(x):
  if type(x) is Array:
    return x.aval
  try:
    aval = core.get_aval(x)
  except TypeError:
    raise TypeError(
        f"Argument '{x}' of type {type(x)} is not a valid JAX type. Pass arrays or Python "
        "scalars, or mark the argument static with static_argnums/static_argnames.") from None
  if _hi_hooks and getattr(aval, "has_qdd", False):
    return _hi_hooks[0](aval, x)
  return aval


_PY_SCALARS = frozenset((int, float, bool, complex))
# Static arguments that cannot change while they are the same object.
_IMMUTABLE_STATICS = frozenset((int, float, bool, complex, str, bytes, type(None)))
_scalar_avals: dict = {}   # (type, value, x64) -> the aval of a Python scalar argument


_array_trees: dict = {}   # n -> the structure of ((n leaves), {})


def _array_tree(n):
  tree = _array_trees[n] = _flatten((tuple(range(n)), {}))[1]
  return tree


def _leaf_aval(x, x64):
  """The aval of an argument that is not an Array: Python scalars' from a cache."""
  t = type(x)
  if t in _PY_SCALARS:
    aval = _scalar_avals.get((t, x, x64))
    return _new_scalar_aval(x, t, x64) if aval is None else aval
  return _arg_aval(x)


def _new_scalar_aval(x, t, x64):
  aval = core.intern_aval(_arg_aval(x))   # (an int too big for its dtype raises here)
  if len(_scalar_avals) > 4096:
    _scalar_avals.clear()
  _scalar_avals[(t, x, x64)] = aval
  return aval


def _intern_key(key):
  """`key` with its avals replaced by shared equal ones (the ones executables give their
  outputs), so that looking up outputs fed back compares avals by identity."""
  in_tree, avals, statics, state, device = key
  return (in_tree, tuple(core.intern_aval(a) for a in avals), statics, state, device)


class _CacheEntry:
  __slots__ = ("exe", "out_tree", "closed", "single", "float0", "runner", "donated", "special")

  def __init__(self, exe, out_tree, closed, runner=None, donated=None):
    self.exe = exe
    # exe None: a multi-device program, run by `runner(leaves)` (one SPMD program, see
    # register_multi_device_runner) or, without one, operation by operation.
    self.runner = runner
    self.donated = donated   # one flag per flat argument, or None: nothing donated
    self.out_tree = out_tree
    self.closed = closed
    self.single = out_tree.num_nodes == 1 and out_tree.num_leaves == 1   # a bare array
    # float0 outputs (tangents of integers) are returned as host NumPy zeros, as JAX does.
    self.float0 = () if exe is None else tuple(
        (i, a.shape) for i, a in enumerate(exe.out_avals)
        if getattr(a, "dtype", None) == dtypes.float0)
    # float0 or token outputs: not a plain Array per output
    self.special = bool(self.float0) or (exe is not None and exe.token_outs)


# ---- the stages of jit: Wrapped -> Traced -> Lowered -> Compiled (jax.stages) --------------
CompilerOptions = dict[str, Union[str, bool]]  # noqa: UP007 (prints as JAX's alias does)


class Wrapped:
  """A function transformed by jit: callable, and `trace`/`lower` give its next stages."""

  def trace(self, *args, **kwargs):
    raise NotImplementedError

  def lower(self, *args, **kwargs):
    raise NotImplementedError


class ArgInfo:
  """The abstract value of one argument of a traced/lowered/compiled function."""
  __slots__ = ("_aval", "donated")

  def __init__(self, _aval, donated):
    self._aval = _aval
    self.donated = donated

  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)

  def __eq__(self, other):
    return (type(other) is ArgInfo and self._aval == other._aval
            and self.donated == other.donated)

  def __hash__(self):
    return hash((self._aval, self.donated))

  def __repr__(self):
    aval = self._aval
    short = (f"ShapedArray({aval.str_short()}{', weak_type=True' if aval.weak_type else ''})"
             if isinstance(aval, core.ShapedArray) else repr(aval))
    return f"ArgInfo(_aval={short}, donated={self.donated})"


def _out_info(closed, out_tree):
  return tree_unflatten(out_tree, [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals])


class _StageInfo:
  """What every stage knows: argument and result types."""
  in_tree = out_tree = _closed = None

  @property
  def in_avals(self):
    return tree_unflatten(self.in_tree, list(self._closed.in_avals))

  @property
  def out_info(self):
    return _out_info(self._closed, self.out_tree)

  _donated = None

  @property
  def args_info(self):
    donated = self._donated or [False] * len(self._closed.in_avals)
    return tree_unflatten(self.in_tree, [ArgInfo(a, d)
                                         for a, d in zip(self._closed.in_avals, donated)])

  @property
  def donate_argnums(self):
    """The flat indices of the donated arguments."""
    return tuple(i for i, d in enumerate(self._donated or ()) if d)


class Traced(_StageInfo):
  """A jitted function traced for particular argument types: its jaxpr and result types."""

  def __init__(self, jitted, closed, out_tree, in_tree, arg_names, avals, statics,
               donated=None):
    self._jitted = jitted
    self._closed = closed
    self.out_tree = out_tree
    self.in_tree = in_tree
    self._arg_names = arg_names
    self._signature = (avals, statics)
    self._donated = donated

  fun_name = property(lambda self: self._jitted._name)

  @functools.cached_property
  def jaxpr(self):
    """The traced jaxpr, with its DebugInfo (source, argument names, result paths)."""
    closed = self._closed
    info = api_util.DebugInfo("jit", api_util.fun_sourceinfo(self._jitted._fun),
                              tuple(self._arg_names or ()), api_util.result_paths(self.out_tree))
    return core.ClosedJaxpr(closed.jaxpr.replace(debug_info=info), closed.consts)

  @property
  def out_avals(self):
    return tree_unflatten(self.out_tree, list(self._closed.out_avals))

  def lower(self, *, lowering_platforms=None):
    """Lower to StableHLO."""
    jitted = self._jitted
    closed, names, results = self._closed, self._arg_names, api_util.result_paths(self.out_tree)
    keep_unused = jitted._keep_unused
    if _needs_discharge(closed):
      closed, runner = _ref_discharge[0](jitted._name, closed)
      if runner is not None:   # (refs in and out: the discharged program's own signature)
        names = results = None
        keep_unused = True
    closed, names, donated, kept = _prune_unused(closed, names, self._donated, keep_unused)
    module = mlir.lower_jaxpr_to_module(jitted._name, closed, arg_names=names,
                                        donated_args=donated, result_names=results)
    avals, statics = self._signature
    key = (self.in_tree, avals, statics, trace_state(),
           jitted._device or backend.default_device())
    return Lowered(jitted, key, self._closed, self.out_tree, module, self.in_tree,
                   self._donated, (closed, donated, kept))

  @property
  def lojax(self):
    """The traced program in low-level types only (`LoJax`): the same program unless it uses
    hi types (hijax), whose expansion arrax does not implement here."""
    if self._closed.jaxpr.is_high:
      raise NotImplementedError("Traced.lojax of a jaxpr with hi types is not implemented")
    return LoJax(self)


class LoJax(_StageInfo):
  """A traced program whose types are all low-level arrays: its jaxpr, name, argument and
  result info."""

  def __init__(self, traced):
    self._closed = traced.jaxpr
    self._name = traced.fun_name
    self.out_tree = traced.out_tree
    self.in_tree = traced.in_tree
    self._donated = traced._donated

  jaxpr = property(lambda self: self._closed)
  fun_name = property(lambda self: self._name)


class _HloText:
  """The HLO of a lowered module (what `Lowered.compiler_ir("hlo")` gives)."""

  def __init__(self, computation):
    self._computation = computation

  def as_hlo_text(self):
    return self._computation.as_hlo_text()

  def as_hlo_module(self):
    return self._computation.get_hlo_module()

  def __getattr__(self, name):
    return getattr(self._computation, name)


class Lowered(_StageInfo):
  """The StableHLO module of a jitted function for particular arguments."""

  def __init__(self, jitted, key, closed, out_tree, module, in_tree, donated=None,
               pruned=None):
    self._jitted = jitted
    self._key = key
    self._closed = closed
    self.out_tree = out_tree
    self.in_tree = in_tree
    self._module = module
    self._donated = donated
    # (the jaxpr lowered, its donated flags, the kept argument positions or None: all)
    self._pruned = pruned or (closed, donated, None)

  def as_text(self, dialect=None, *, debug_info=False):
    """The module as text: StableHLO MLIR (default) or, with dialect="hlo", XLA HLO."""
    if dialect == "hlo":
      # (converted with its locations, which name the instructions and give their metadata,
      # printed as JAX prints it)
      opts = _hlo.HloPrintOptions.short_parsable()
      opts.print_metadata = debug_info
      return self._xla_computation().get_hlo_module().to_string(opts)
    return self._module.module.operation.get_asm(enable_debug_info=debug_info)

  def _xla_computation(self):
    """The module converted to an XLA computation with its debug locations (which name the
    HLO instructions as JAX names them)."""
    asm = self._module.module.operation.get_asm(enable_debug_info=True)
    return _jax.mlir.mlir_module_to_xla_computation(asm, use_tuple_args=False,
                                                    return_tuple=False)

  def compiler_ir(self, dialect=None):
    """The MLIR module (dialect None or "stablehlo"), or the XLA HLO computation ("hlo")."""
    if dialect in (None, "stablehlo"):
      return self._module.module
    if dialect == "hlo":
      return _HloText(self._xla_computation())
    raise ValueError(f"Unknown dialect {dialect}")

  def cost_analysis(self):
    """XLA's cost estimates of the unoptimized HLO, as a dict."""
    return _jax.hlo_module_cost_analysis(backend.get_client(),
                                         self.compiler_ir("hlo").as_hlo_module())

  def compile(self, compiler_options=None):
    """Compile with XLA (`compiler_options`: XLA options added to the jit's); the result can
    be called and inspected."""
    device = self._key[-1]
    overrides = self._jitted._compiler_options + _compiler_options_kvs(compiler_options)
    loaded = dispatch.compile_module(self._module, device, self._jitted._name,
                                     overrides=overrides)
    lowered, donated, kept = self._pruned
    exe = dispatch.Executable(loaded, lowered.in_avals, lowered.out_avals, device, kept,
                              name=f"jit({self._jitted._name})")
    compiled = Compiled(exe, self.in_tree, self.out_tree, self._jitted, self._key, self._closed,
                        self._donated)
    # (an executable calling back into Python cannot be serialized with its callbacks)
    compiled._host_callbacks = bool(self._module.host_callbacks)
    return compiled


class Compiled(_StageInfo):
  """A compiled executable of a jitted function (from `jit(f).lower(...).compile()`)."""
  _host_callbacks = False

  def __init__(self, exe, in_tree, out_tree, jitted, key, closed=None, donated=None):
    self._exe = exe
    self.in_tree = in_tree
    self.out_tree = out_tree
    self._jitted = jitted
    self._key = key
    self._closed = closed
    self._donated = donated

  def runtime_executable(self):
    """jaxlib's loaded executable."""
    return self._exe.loaded

  def _shardings(self, avals, kept):
    s = SingleDeviceSharding(self._exe.device)
    return [s if kept is None or i in kept else None for i in range(len(avals))]

  def _formats(self, avals, kept):
    # (row-major: arrax's layouts are XLA's defaults; an unused argument has neither)
    return [Format(None, None) if s is None else Format(Layout(range(a.ndim - 1, -1, -1), ()), s)
            for a, s in zip(avals, self._shardings(avals, kept))]

  @property
  def input_shardings(self):
    """The sharding of each argument ((args, kwargs) as a pytree; None for unused ones)."""
    return tree_unflatten(self.in_tree, self._shardings(self._closed.in_avals, self._exe.kept))

  @property
  def output_shardings(self):
    return tree_unflatten(self.out_tree, self._shardings(self._closed.out_avals, None))

  @property
  def input_formats(self):
    """Each argument's layout and sharding."""
    return tree_unflatten(self.in_tree, self._formats(self._closed.in_avals, self._exe.kept))

  @property
  def output_formats(self):
    return tree_unflatten(self.out_tree, self._formats(self._closed.out_avals, None))

  def as_text(self):
    """The optimized HLO (after XLA's fusion and other passes)."""
    return self._exe.loaded.hlo_modules()[0].to_string()

  def cost_analysis(self):
    """XLA's cost estimates (flops, bytes accessed, ...) as a dict."""
    return _jax.hlo_module_cost_analysis(backend.get_client(), self._exe.loaded.hlo_modules()[0])

  def memory_analysis(self):
    return self._exe.loaded.get_compiled_memory_stats()

  def __call__(self, *args, **kwargs):
    # Called with the dynamic arguments only (static ones were fixed when lowering), as JAX's.
    try:
      leaves, treedef = tree_flatten((args, kwargs))
      if treedef != self.in_tree:
        raise TypeError("Function compiled with input pytree does not match the input pytree it "
                        f"was called with: compiled for {self.in_tree}, called with {treedef}.")
      device = self._exe.device
      pairs = [dispatch.to_buffer(x, device) for x in leaves]
      expected = self._exe.in_avals if self._closed is None else self._closed.in_avals
      mismatches = [f"argument {i}: expected {b.str_short()}, got {a.str_short()}"
                    for i, ((_, a), b) in enumerate(zip(pairs, expected))
                    if a.strip_weak_type() != b.strip_weak_type()]
      if mismatches:
        raise TypeError("Argument types differ from the types for which this computation was "
                        "compiled. The mismatches are: " + ", ".join(mismatches))
      kept = self._exe.kept
      used = leaves if kept is None else [leaves[i] for i in kept]
      if self._donated:
        donated = self._donated if kept is None else [self._donated[i] for i in kept]
        bufs = _donatable_buffers(used, donated, device)
      else:
        bufs = [pairs[i][0] for i in (range(len(leaves)) if kept is None else kept)]
      return tree_unflatten(self.out_tree, _execute(self._exe, bufs, used))
    except Exception as e:
      traceback_util.filter_exception(e, sys._getframe())
      raise

  @staticmethod
  def call(*args, **kwargs):
    """`Compiled.call(compiled, *args, **kwargs)`: the unbound form of calling `compiled`."""
    return Compiled.__call__(*args, **kwargs)


# ---- the jitted function ---------------------------------------------------------------------
# As in JAX, every jit wrapper of one function (with the same static arguments) shares its
# traces and executables: `jit(f)` made twice, or `make_jaxpr` of a jitted function already
# called, does not trace `f` again (so its Python side effects happen once).
_caches_by_fun: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class _ExecutableCache(dict):
  """One jit function's compiled executables by signature (weakly referable); `compiles`
  counts every compilation (evicted ones too), for the recompilation warning; `lock` makes
  threads that miss on the same function at once trace and compile it once."""
  __slots__ = ("__weakref__", "compiles", "last", "fast", "tried", "lock")

  def __init__(self):
    super().__init__()
    self.compiles = 0
    self.lock = threading.RLock()
    # The last call's (in_tree, avals, statics, trace state, device, entry): a call with the
    # same signature (a loop) finds its entry by comparing these, without hashing its avals.
    self.last = None
    # The last plain call's _FastCall, when it took uncommitted arrays and Python scalars
    # positionally.
    self.fast = None
    self.tried = None   # the entry of the last call _record_fast looked at

  def clear(self):
    self.last = self.fast = None
    super().clear()

  def pop(self, *args):
    self.last = self.fast = None
    return super().pop(*args)

  def __delitem__(self, key):
    self.last = self.fast = None
    super().__delitem__(key)

  def popitem(self):
    self.last = self.fast = None
    return super().popitem()


def _same_kwargs(kwargs, kw):
  """Whether `kwargs` holds exactly the objects of the recorded ((name, object), ...)."""
  if len(kwargs) != len(kw):
    return False
  get = kwargs.get
  for k, v in kw:
    if get(k, _same_kwargs) is not v:
      return False
  return True


class _FastCall:
  """What a repeat of a plain call needs when its arguments are uncommitted arrays and Python
  scalars of the same avals (by identity: avals are interned): the trace state, the default
  device and the executable. `Jitted.__call__` checks it before anything else."""
  __slots__ = ("n", "avals", "kw", "state", "device", "exe", "entry")

  def __init__(self, avals, kw, state, device, entry):
    self.n = len(avals)
    self.avals = avals
    self.kw = kw   # ((name, object), ...) of the keyword arguments, matched by identity
    self.state = state
    self.device = device
    self.exe = entry.exe
    self.entry = entry


class RecompileWarning(UserWarning):
  """A jitted function keeps compiling (beyond JAX: arrax_recompile_warning_threshold)."""


_recompile_threshold = config.flag("arrax_recompile_warning_threshold")


# All jit functions together keep at most JIT_CACHE_SIZE executables, the oldest compiled
# going first: each holds memory mappings of machine code, of which a process may have only
# ~65k (vm.max_map_count). A hit does not refresh an entry (nothing added to the call path).
JIT_CACHE_SIZE = 4096
_compiled_order: collections.OrderedDict = collections.OrderedDict()


def _remember_compiled(cache, key):
  _compiled_order[(id(cache), key)] = weakref.ref(cache)
  while len(_compiled_order) > JIT_CACHE_SIZE:
    try:
      (_, old_key), ref = _compiled_order.popitem(last=False)
    except KeyError:   # another thread emptied it meanwhile
      break
    owner = ref()
    if owner is not None:
      owner.pop(old_key, None)


class _AllFunctionCaches:
  """Clears the caches the jit wrappers hold (they keep references to the dicts)."""

  def clear(self):
    for per_fun in list(_caches_by_fun.values()):
      for exe_cache, trace_cache in per_fun.values():
        exe_cache.clear()
        trace_cache.clear()
    _compiled_order.clear()


core.register_cache(_AllFunctionCaches())


def _shared_caches(fun, options):
  """(executable cache, trace cache) shared by the jit wrappers of `fun` with `options`;
  private ones when `fun` cannot be weakly referenced or hashed."""
  try:
    per_fun = _caches_by_fun.get(fun)
    if per_fun is None:
      per_fun = _caches_by_fun[fun] = {}
  except TypeError:
    return _ExecutableCache(), {}
  caches = per_fun.get(options)
  if caches is None:
    caches = per_fun[options] = (_ExecutableCache(), {})
  return caches


def _user_literal(lit):
  staged = stage_literal(lit)
  if type(staged) is core.Literal:
    return device_put_value(lit.val, None, dtype=lit.aval.dtype, weak_type=lit.aval.weak_type)
  return staged


class JitWrapped(Wrapped):
  """A function compiled with XLA on first call for each new input signature."""

  def __init__(self, fun, static_argnums=None, static_argnames=None, keep_unused=False,
               inline=False, device=None, backend=None, donate_argnums=None,
               donate_argnames=None, compiler_options=()):
    if not callable(fun):
      raise TypeError(f"Expected a callable value, got {fun}")
    functools.update_wrapper(self, fun, updated=())   # names and docs, not fun's __dict__
    self._fun = fun
    try:
      self._sig = inspect.signature(fun)
    except (TypeError, ValueError):
      self._sig = None
    self._static_argnums, self._static_argnames = _normalize_argnums(
        static_argnums, self._sig, static_argnames)
    self._has_static = bool(self._static_argnums or self._static_argnames)
    self._donate_argnums, self._donate_argnames = _resolve_donation(
        fun, self._sig, donate_argnums, donate_argnames, self._static_argnames)
    self._inline = inline
    self._keep_unused = bool(keep_unused)   # export drops unused inputs unless set
    self._device = device
    self._name = getattr(fun, "__name__", type(fun).__name__)
    options = (self._static_argnums, self._static_argnames, bool(inline))
    if self._donate_argnums or self._donate_argnames:
      options += (self._donate_argnums, self._donate_argnames)
    # XLA options overriding the process's (XLA_FLAGS) for this function's executables.
    self._compiler_options = compiler_options
    if compiler_options:
      options += (("compiler_options",) + compiler_options,)
    self._cache, self._trace_cache = _shared_caches(fun, options)
    self._plans = {}   # number of positional arguments -> _static_plan
    # (the last lone static argument of an immutable builtin type, and its cache-key tuple)
    self._static_memo = None

  def _donation(self, args, kwargs):
    """One flag per flat dynamic argument of the call `(args, kwargs)`: donated or not (None:
    none donated). Static arguments keep their positions, as in JAX."""
    nums, names = self._donate_argnums, self._donate_argnames
    if not (nums or names) or dispatch.debug_nans.value:
      return None
    n = len(args)
    static = {i + n if i < 0 else i for i in self._static_argnums}
    flags = []
    for i, a in enumerate(args):
      if i not in static:
        flags.extend([i in nums] * len(_flatten(a)[0]))
    for k in sorted(kwargs):
      if k not in self._static_argnames:
        flags.extend([k in names] * len(_flatten(kwargs[k])[0]))
    return tuple(flags) if any(flags) else None

  def __get__(self, obj, objtype=None):
    if obj is None:
      return self
    return functools.partial(self, obj)

  def __repr__(self):
    return f"<JitWrapped({self._fun!r})>"

  def _static_plan(self, n):
    """(static positions, dynamic positions) of a call with `n` positional arguments."""
    plan = self._plans.get(n)
    if plan is None:
      norm = {i + n if i < 0 else i for i in self._static_argnums}
      plan = self._plans[n] = (tuple(i for i in sorted(norm) if i < n),
                               tuple(i for i in range(n) if i not in norm))
    return plan

  def _record_fast(self, args, kwargs, avals, state, device, entry):
    """Record this plain call for `__call__`'s first check when its arguments are arrays and
    Python scalars (matched by aval), static values of immutable builtin types and Nones
    (matched by identity); keyword arguments only static or None."""
    self._cache.tried = entry   # (a signature that cannot be recorded is not tried again)
    expect = list(args)   # (static positions and Nones keep their objects)
    static_pos, dyn_pos = self._static_plan(len(args))
    if any(type(args[i]) not in _IMMUTABLE_STATICS for i in static_pos):
      return
    it = iter(avals)
    for i in dyn_pos:
      x = args[i]
      if x is not None:   # (None: an empty pytree, no leaf)
        if type(x) is not Array and type(x) not in _PY_SCALARS:
          return
        expect[i] = next(it)
    for k, v in kwargs.items():
      if v is not None and (k not in self._static_argnames or
                            type(v) not in _IMMUTABLE_STATICS):
        return
    self._cache.fast = _FastCall(expect, tuple(kwargs.items()), state, device, entry)

  def _split_static(self, args, kwargs):
    statics = []
    if self._static_argnums:
      static_pos, dyn_pos = self._static_plan(len(args))
      for i in static_pos:
        statics.append(_HashableStatic(args[i], i))
      dyn_args = tuple([args[i] for i in dyn_pos])
    else:
      dyn_args = args
    if self._static_argnames and kwargs:
      dyn_kwargs = {}
      for k, v in kwargs.items():
        if k in self._static_argnames:
          statics.append((k, _HashableStatic(v, f"'{k}'")))
        else:
          dyn_kwargs[k] = v
    else:
      dyn_kwargs = kwargs
    return dyn_args, dyn_kwargs, tuple(statics)

  def _merge_static(self, dyn_args, dyn_kwargs, args_len, static_vals):
    """Rebuild the full (args, kwargs) from dynamic values and the original static ones."""
    args, kwargs = static_vals
    it = iter(dyn_args)
    n = len(args)
    norm = {i + n if i < 0 else i for i in self._static_argnums}
    full = [args[i] if i in norm else next(it) for i in range(n)]
    full_kwargs = dict(kwargs)
    full_kwargs.update(dyn_kwargs)
    return full, full_kwargs

  def _trace(self, args, kwargs, dyn_args, dyn_kwargs, in_tree, in_avals):
    out_tree_box = []

    def flat_fun(*flat):
      d_args, d_kwargs = tree_unflatten(in_tree, flat)
      full_args, full_kwargs = self._merge_static(d_args, d_kwargs, len(args), (args, kwargs))
      out = self._fun(*full_args, **full_kwargs)
      out_leaves, out_tree = tree_flatten(out)
      out_tree_box.append(out_tree)
      return out_leaves

    if config.jax_no_tracing:
      code = getattr(self._fun, "__code__", None)
      where = f" at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
      raise RuntimeError(f"re-tracing function {self._name}{where} for `jit`, but "
                         "'no_tracing' is set")
    names = _leaf_names(self._sig, args, kwargs, self._static_argnums, in_tree)
    jaxpr, consts = trace_to_jaxpr(flat_fun, in_avals, names)
    for aval in jaxpr.out_avals:
      if type(aval) is core.AbstractRef:
        code = getattr(self._fun, "__code__", None)
        where = f" at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
        raise ValueError(f"function {self._name}{where} traced for jit returned a mutable "
                         f"array reference of type {aval}, but mutable array references "
                         "cannot be returned.")
    return jaxpr, consts, out_tree_box[0], names

  def __call__(self, *args, **kwargs):
    # The hot path of every training loop and of every eager jnp operation: keep it flat
    # (RUNTIME.md section 2). Each flag is read once; Python scalars' avals and device copies
    # come from caches; key avals are interned so that outputs fed back compare by identity.
    try:
      plain = _plain_calls[0]   # (no call flag set, no config context open: nothing to read)
      fast = self._cache.fast
      if (fast is not None and plain and len(args) == fast.n
          and (_same_kwargs(kwargs, fast.kw) if fast.kw else not kwargs)
          and core.trace_ctx.trace is _eval_trace and _trace_state[0] is fast.state
          and self._device is None and _resolved_default and _resolved_default[0] is fast.device):
        bufs = []
        for x, a in zip(args, fast.avals):
          if x is a:   # a static argument (or None) that is the very object the call had
            continue
          t = type(x)
          if t is Array:
            if x.aval is not a or x._committed:
              break
            bufs.append(x._buf)
          elif t in _PY_SCALARS and _scalar_avals.get((t, x, fast.state[0]), bufs) is a:
            bufs.append(dispatch.to_buffer(x, fast.device)[0])   # (a cached device copy)
          else:
            break
        else:   # the same signature as the call that recorded `fast`: run it
          exe = fast.exe
          try:
            raw = exe.loaded.execute_sharded(bufs).consume_with_handlers(exe.handlers)
          except _jax.JaxRuntimeError:
            dispatch.raise_if_deleted(args)
            raise
          if fast.entry.single:
            return Array(raw[0], exe.out_avals[0], False)
          return fast.entry.out_tree.unflatten(
              list(map(Array, raw, exe.out_avals, itertools.repeat(False))))
      if not plain and _disable_jit.value:
        return self._fun(*args, **kwargs)
      if not self._has_static:
        dyn_args, dyn_kwargs, statics = args, kwargs, ()
      elif kwargs:
        dyn_args, dyn_kwargs, statics = self._split_static(args, kwargs)
      else:   # (static positions by the number of arguments; the static values hashed once)
        static_pos, dyn_pos = self._plans.get(len(args)) or self._static_plan(len(args))
        if len(static_pos) == 1:   # (the common case: one static int, string, ... as last time)
          v = args[static_pos[0]]
          memo = self._static_memo
          if memo is not None and memo[0] is v:
            statics = memo[1]
          else:
            statics = (_HashableStatic(v, static_pos[0]),)
            self._static_memo = (v, statics) if type(v) in _IMMUTABLE_STATICS else None
        else:
          statics = tuple([_HashableStatic(args[i], i) for i in static_pos])
        dyn_args, dyn_kwargs = tuple([args[i] for i in dyn_pos]), kwargs
      for x in dyn_args:
        if type(x) is not Array and type(x) not in _PY_SCALARS:
          leaves, in_tree = _flatten((dyn_args, dyn_kwargs))
          break
      else:   # only arrays and Python scalars, given positionally: leaves, in a flat structure
        if dyn_kwargs:
          leaves, in_tree = _flatten((dyn_args, dyn_kwargs))
        else:
          leaves = dyn_args
          in_tree = _array_trees.get(len(dyn_args)) or _array_tree(len(dyn_args))
      if core.trace_ctx.trace is not _eval_trace:
        return self._call_traced(args, kwargs, dyn_args, dyn_kwargs, statics, leaves, in_tree)
      # (a new tuple while a config context is open: no fast match)
      state = _trace_state[0] if plain else trace_state()
      x64 = state[0]
      avals = [x.aval if type(x) is Array else _leaf_aval(x, x64) for x in leaves]
      default = _resolved_default[0] if plain and _resolved_default else _default_device()
      device = self._device
      committed = device is not None   # results stay on a device asked for, as arguments do
      if device is None:
        for x in leaves:   # the first committed array's device, else the default one
          if type(x) is Array and x._committed:
            device = x.device
            committed = True
            break
        else:
          device = default
      cache = self._cache
      last = cache.last
      if (last is not None and last[1] == avals and (last[0] is in_tree or last[0] == in_tree)
          and last[2] == statics
          and last[3] is state and last[4] is device):
        entry = last[5]
      else:
        key = (in_tree, tuple(avals), statics, state, device)
        entry = cache.get(key)
        if entry is None:
          with cache.lock:   # another thread may have compiled it meanwhile
            entry = cache.get(key)
            if entry is None:
              entry = self._compile(key, args, kwargs, dyn_args, dyn_kwargs, in_tree, statics,
                                    device)
        cache.last = (in_tree, [core.intern_aval(a) for a in avals], statics, state, device,
                      entry)
      exe = entry.exe
      if exe is None:
        if entry.runner is not None:
          return entry.out_tree.unflatten(entry.runner(leaves))
        return entry.out_tree.unflatten(
            core.eval_jaxpr(entry.closed.jaxpr, entry.closed.consts, *leaves))
      if not plain and _no_execution.value:
        dispatch.raise_no_execution(exe.name)
      used = leaves if exe.kept is None else [leaves[i] for i in exe.kept]
      if entry.donated is not None:
        bufs = _donatable_buffers(used, entry.donated, device)
      else:
        bufs = [x._buf if type(x) is Array else dispatch.to_buffer(x, device)[0] for x in used]
      try:
        raw = exe.loaded.execute_sharded(bufs).consume_with_handlers(exe.handlers)
      except _jax.JaxRuntimeError:
        dispatch.raise_if_deleted(leaves)
        raise
      if (plain and not committed and entry.donated is None and exe.kept is None
          and not entry.special and cache.tried is not entry
          and _resolved_default and default is _resolved_default[0]):
        self._record_fast(args, kwargs, cache.last[1], state, device, entry)
      if entry.single and not entry.special:
        out = Array(raw[0], exe.out_avals[0], committed)
        if not plain and (_debug_nans.value or _debug_infs.value):
          _check_special(self._name, [out], lambda: self._fun(*args, **kwargs))
        return out
      outs = list(map(Array, raw, exe.out_avals, itertools.repeat(committed)))
      for i, shape in entry.float0:
        outs[i] = np.zeros(shape, dtypes.float0)
      if exe.token_outs:
        outs = dispatch.wrap_tokens(outs)
      if not plain and (_debug_nans.value or _debug_infs.value):
        _check_special(self._name, outs, lambda: self._fun(*args, **kwargs))
      if entry.single:
        return outs[0]
      return entry.out_tree.unflatten(outs)
    except Exception as e:
      traceback_util.filter_exception(e, sys._getframe())
      raise

  def _call_traced(self, args, kwargs, dyn_args, dyn_kwargs, statics, leaves, in_tree):
    if self._inline:
      out = self._fun(*args, **kwargs)
      # A rank-0 constant result (jnp.isfinite of an integer, say) reaches the caller as a
      # value of the trace (or an Array), never as a bare jaxpr Literal, as in JAX.
      if type(out) is core.Literal:
        return _user_literal(out)
      return out
    # Under another trace: stage one `jit` equation.
    if self._compiler_options:
      raise ValueError("`compiler_options` can only be passed to top-level `jax.jit`. Got "
                       f"compiler_options={dict(self._compiler_options)} specified on a nested "
                       f"jit with name: {self._name}")
    avals = tuple(_arg_aval(x) for x in leaves)
    closed, outer, out_tree, _ = self._staged(args, kwargs, dyn_args, dyn_kwargs, in_tree,
                                              avals, statics)
    donated = self._donation(args, kwargs)
    extra = {} if donated is None else {"donated_invars": (False,) * len(outer) + donated}
    outs = jit_p.bind(*outer, *leaves, jaxpr=closed, name=self._name, **extra)
    return tree_unflatten(out_tree, outs)

  def _staged(self, args, kwargs, dyn_args, dyn_kwargs, in_tree, avals, statics):
    """(closed jaxpr, outer tracers it takes first, out tree, arg names), traced once per
    signature: the eager call, staging under another trace and `lower` share it."""
    # Named axes in scope (vmap axis_name) can be baked into the trace (psum(1, 'i'), ...).
    key = (in_tree, avals, statics, trace_state(), batching.axis_env_key())
    hit = self._trace_cache.get(key)
    if hit is not None:
      return hit
    in_avals = [_hi_hooks[1](a) for a in avals] if _hi_hooks else list(avals)
    jaxpr, consts, out_tree, names = self._trace(args, kwargs, dyn_args, dyn_kwargs, in_tree,
                                                 in_avals)
    closed, outer = closed_with_host_consts(jaxpr, consts)
    result = (closed, outer, out_tree, names)
    if not outer:
      self._trace_cache[key] = result
    return result

  def _staged_closed(self, args, kwargs, dyn_args, dyn_kwargs, in_tree, avals, statics):
    """The trace for a top-level use (eager call, lower): it may not close over tracers."""
    closed, outer, out_tree, names = self._staged(args, kwargs, dyn_args, dyn_kwargs, in_tree,
                                                  avals, statics)
    if outer:
      core._raise_escaped(outer[0])
    return closed, out_tree, names

  def _compile(self, key, args, kwargs, dyn_args, dyn_kwargs, in_tree, statics, device):
    if config.jax_log_compiles or config.jax_explain_cache_misses:
      self._explain_miss(key)
    start = time.perf_counter()
    with monitoring.timed(monitoring.JAXPR_TRACE_EVENT, self._name):
      closed, out_tree, names = self._staged_closed(args, kwargs, dyn_args, dyn_kwargs,
                                                    in_tree, key[1], statics)
    self._cache.compiles += 1
    if (self._cache.compiles == _recompile_threshold.value + 1 > 1
        and not (getattr(self._fun, "__module__", None) or "").startswith("arrax.")):
      self._warn_recompiles(key, names)   # (for the user's functions, not arrax.numpy's)
    logger.log(logging.WARNING if config.jax_log_compiles else logging.DEBUG,
               "Finished tracing + transforming %s in %.3f sec", self._name,
               time.perf_counter() - start)
    donated = self._donation(args, kwargs)
    if _needs_discharge(closed):
      # Mutable refs: their operations become pure ones (state discharge); refs passed in or
      # closed over are read before and written after the call by the runner. (Hi values and
      # primitives likewise: see _src/hijax.py.)
      lowered, runner = _ref_discharge[0](self._name, closed)
      if runner is not None:
        entry = _CacheEntry(None, out_tree, closed, runner)
        self._cache[key] = entry
        return entry
      closed = lowered
    if core.sharding_typing.on and _typed_runner and any(
        getattr(a, "sharding", None) is not None
        for a in itertools.chain(closed.in_avals, closed.out_avals)):
      # Shardings in types (Explicit mesh axes): one SPMD program over their mesh.
      entry = _CacheEntry(None, out_tree, closed, _typed_runner[0](self._name, closed))
      self._cache[key] = entry
      return entry
    pruned, p_names, p_donated, kept = _prune_unused(closed, names, donated,
                                                     self._keep_unused)
    try:
      with monitoring.timed(monitoring.JAXPR_TO_MLIR_MODULE_EVENT, f"jit({self._name})"):
        module = mlir.lower_jaxpr_to_module(self._name, pruned, arg_names=p_names,
                                            donated_args=p_donated,
                                            result_names=api_util.result_paths(out_tree))
    except mlir.MultiDeviceLowering:
      # The program holds a multi-device computation: one SPMD program over its mesh when a
      # registered builder can make one (shard_map), else its jaxpr op by op (pmap).
      runner = None if _multi_device_runner is None else _multi_device_runner(self._name,
                                                                                closed)
      entry = _CacheEntry(None, out_tree, closed, runner)
    else:
      exe = dispatch.Executable(dispatch.compile_module(module, device, f"jit({self._name})",
                                                      overrides=self._compiler_options),
                                pruned.in_avals, pruned.out_avals, device, kept,
                                name=f"jit({self._name})")
      entry = _CacheEntry(exe, out_tree, closed, donated=p_donated)
      if config.jax_distributed_debug:
        fingerprint = getattr(exe.loaded, "fingerprint", None)
        backend.distributed_debug_log(
            ("Running pjit'd function", self._name), ("device", device),
            ("abstract args", list(key[1])),
            ("fingerprint", fingerprint.hex() if fingerprint is not None else None))
    key = _intern_key(key)
    self._cache[key] = entry
    _remember_compiled(self._cache, key)
    return entry

  def _miss_reason(self, key, names=None):
    """Why `key` missed the cache: what differs from the closest compiled signature."""
    in_tree, avals, statics, flags, device = key
    reasons = []
    for old in self._cache:
      o_tree, o_avals, o_statics, o_flags, o_dev = old
      if old == key:
        continue
      if o_tree != in_tree:
        reasons.append(f"the input pytree structure changed from {o_tree} to {in_tree}")
      elif o_statics != statics:
        reasons.append(f"a static argument changed from {o_statics} to {statics}")
      elif o_flags != flags:
        reasons.append(trace_state_change(o_flags, flags))
      elif o_dev != device:
        reasons.append(f"the device changed from {o_dev} to {device}")
      else:
        for i, (a, b) in enumerate(zip(o_avals, avals)):
          if a != b:
            name = f" ({names[i]})" if names and i < len(names) and names[i] else ""
            how = [f"{what} {x} -> {y}" for what, x, y in (
                ("shape", a.shape, b.shape), ("dtype", a.dtype, b.dtype),
                ("weak type", a.weak_type, b.weak_type)) if x != y]
            reasons.append(f"argument {i}{name} changed: {', '.join(how) or f'{a} -> {b}'}")
            break
    return reasons[-1] if reasons else "unknown reason"

  def _explain_miss(self, key):
    if not self._cache:
      logger.warning("Compiling %s for the first time with arguments %s", self._name,
                     ", ".join(str(a) for a in key[1]))
      return
    logger.warning("Compiling %s because of a cache miss: %s", self._name,
                   self._miss_reason(key))

  def _warn_recompiles(self, key, names):
    warnings.warn(
        f"jit({self._name}) has been compiled {self._cache.compiles} times; this time because "
        f"{self._miss_reason(key, names)}. Each new shape, dtype, weak type or static value "
        "compiles the function again: pad or bucket shapes, pass changing Python values as "
        "arrays, or mark truly constant ones static. (arrax_recompile_warning_threshold="
        f"{_recompile_threshold.value}; 0 turns this warning off.)", RecompileWarning,
        stacklevel=4)

  def lower(self, *args, **kwargs):
    """Trace and lower to StableHLO for these arguments (arrays or ShapeDtypeStructs)."""
    return self.trace(*args, **kwargs).lower()

  def trace(self, *args, **kwargs):
    """Trace for these arguments (arrays or ShapeDtypeStructs): a `Traced` with the jaxpr."""
    dyn_args, dyn_kwargs, statics = self._split_static(args, kwargs)
    leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
    avals = tuple(_arg_aval(x) for x in leaves)
    closed, out_tree, names = self._staged_closed(args, kwargs, dyn_args, dyn_kwargs, in_tree,
                                                  avals, statics)
    return Traced(self, closed, out_tree, in_tree, names, avals, statics,
                  self._donation(args, kwargs))

  def eval_shape(self, *args, **kwargs):
    return eval_shape(self, *args, **kwargs)

  def clear_cache(self):
    self._cache.clear()
    self._trace_cache.clear()

  def _cache_size(self):
    return len(self._cache)


def _resolve_donation(fun, sig, argnums, argnames, static_argnames):
  """(donate_argnums, donate_argnames), each completed from the other through the signature
  and checked against it, as JAX's jit does when it is made."""
  if sig is None:
    if argnames is not None:
      raise ValueError(f"Getting the signature of function {fun} failed. Pass donate_argnums "
                       "instead of donate_argnames.")
    return (() if argnums is None else api_util.ensure_index_tuple(argnums)), ()
  if argnums is None and argnames is None:
    return (), ()
  params = list(sig.parameters.items())
  if argnums is not None and argnames is not None:
    argnums = api_util.ensure_index_tuple(argnums)
    argnames = api_util.ensure_str_tuple(argnames)
  elif argnums is None:
    argnames = api_util.ensure_str_tuple(argnames)
    argnums = tuple(i for i, (k, p) in enumerate(params)
                    if p.kind == p.POSITIONAL_OR_KEYWORD and k in argnames)
  else:
    argnums = api_util.ensure_index_tuple(argnums)
    argnames = tuple(k for i, (k, p) in enumerate(params)
                     if p.kind == p.POSITIONAL_OR_KEYWORD and i in argnums)
  api_util.validate_argnums_argnames(sig, argnums, argnames, "donate")
  both = set(static_argnames) & set(argnames)
  if both:
    raise ValueError("static_argnames and donate_argnames cannot intersect. Argument names "
                     f"{both} appear in both static_argnames and donate_argnames")
  return argnums, argnames


def _leaf_names(sig, args, kwargs, static_argnums, in_tree):
  """Readable names of the flat arguments (parameter names, with paths into pytrees)."""
  if sig is None:
    return None
  try:
    bound = sig.bind_partial(*args, **kwargs)
  except TypeError:
    return None
  params = list(sig.parameters)
  var_pos = next((k for k, p in enumerate(sig.parameters.values())
                  if p.kind == p.VAR_POSITIONAL), None)
  n = len(args)
  norm = {i + n if i < 0 else i for i in static_argnums}
  names = []
  for i, a in enumerate(args):
    if i in norm:
      continue
    if var_pos is not None and i >= var_pos:   # *args: its name with the index in it
      pname = f"{params[var_pos]}[{i - var_pos}]"
    else:
      pname = params[i] if i < len(params) else f"args[{i}]"
    names.extend(_names_for(pname, a))
  for k, v in sorted(kwargs.items()):
    names.extend(_names_for(k, v))
  del bound
  return names if len(names) == in_tree.num_leaves else None


def _names_for(base, tree):
  leaves, _ = tree_flatten(tree)
  if len(leaves) == 1 and not isinstance(tree, (tuple, list, dict)):
    return [base]
  return [f"{base}{keystr(path)}" for path, _ in tree_flatten_with_path(tree)[0]]


_sharded_jit_cls = None   # jit with shardings: set by `_src/spmd.py`, a higher layer
# (name, closed jaxpr) -> a runner of flat arguments, or None: builds one SPMD program for a
# How a jaxpr using mutable refs runs (set by `_src/state/primitives.py`, a higher layer):
# `fn(name, closed) -> (discharged closed jaxpr, runner or None)`; without a runner (refs made
# and used only inside) the discharged jaxpr has the same signature and is compiled as usual.
_ref_discharge: list = []


def register_ref_discharge(fn):
  _ref_discharge[:] = [fn]


# jaxpr holding multi-device equations (set by `_src/shard_map.py`, a higher layer).
_multi_device_runner = None


# `(name, closed jaxpr) -> runner(leaves)` for a program whose types carry shardings (set by
# `_src/spmd.py`).
_typed_runner: list = []


def register_typed_runner(fn):
  _typed_runner[:] = [fn]


def register_multi_device_runner(fn):
  global _multi_device_runner
  _multi_device_runner = fn


def register_sharded_jit(cls):
  global _sharded_jit_cls
  _sharded_jit_cls = cls


traceback_util.register_boundary(JitWrapped.__call__)
traceback_util.register_boundary(Compiled.__call__)


class _Unspecified:
  def __repr__(self):
    return "UnspecifiedValue"


_UNSPECIFIED = _Unspecified()


def jit(fun=None, /, *, in_shardings=_UNSPECIFIED, out_shardings=_UNSPECIFIED,
        static_argnums=None, static_argnames=None, donate_argnums=None, donate_argnames=None,
        keep_unused=False, device=None, backend=None, inline=False, compiler_options=None):
  """Compile `fun` with XLA; calls with new shapes/dtypes/static values retrace and recompile.

  JAX's signature; an unknown keyword is a TypeError. in_shardings/out_shardings (pytree
  prefixes of NamedShardings for the dynamic positional arguments) partition the program over
  their mesh (`_src/spmd.py`); compiler_options are XLA option overrides for this function's
  executables; donated arguments' buffers are reused for results of the same shape and dtype
  (the arguments are deleted).

  Example:
    >>> f = jit(lambda x: x * 2)
    >>> f(jnp.arange(3))
    Array([0, 2, 4], dtype=int32)
  """
  if fun is None:
    return lambda f: jit(f, in_shardings=in_shardings, out_shardings=out_shardings,
                         static_argnums=static_argnums, static_argnames=static_argnames,
                         donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                         keep_unused=keep_unused, device=device, backend=backend, inline=inline,
                         compiler_options=compiler_options)
  if device is not None and backend is not None:
    raise ValueError("can't specify both a device and a backend for jit, "
                     f"got {device=} and {backend=}")
  # Shardings that are pytrees of None (flax.nnx passes them) ask for nothing.
  if in_shardings is not _UNSPECIFIED and not tree_leaves(in_shardings):
    in_shardings = _UNSPECIFIED
  if out_shardings is not _UNSPECIFIED and not tree_leaves(out_shardings):
    out_shardings = _UNSPECIFIED
  options = _compiler_options_kvs(compiler_options)
  plain = JitWrapped(fun, static_argnums, static_argnames, keep_unused, inline, device, backend,
                     donate_argnums, donate_argnames, options)
  if in_shardings is _UNSPECIFIED and out_shardings is _UNSPECIFIED:
    return plain
  if device is not None or backend is not None:
    which = "in_shardings" if in_shardings is not _UNSPECIFIED else "out_shardings"
    raise ValueError(f"If backend or device is specified on jit, then {which} should not be "
                     "specified.")
  if isinstance(in_shardings, list):   # (a prefix of the arguments tuple, as JAX reads it)
    in_shardings = tuple(in_shardings)
  return _sharded_jit_cls(fun, in_shardings, out_shardings, plain)


def _compiler_options_kvs(compiler_options):
  """jit's `compiler_options` dict as the hashable ((name, value), ...) the caches key on."""
  if not compiler_options:
    return ()
  return tuple(compiler_options.items())
