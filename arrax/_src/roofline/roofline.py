"""Roofline estimates from jaxprs (`jax.experimental.roofline`).

`roofline(f)(*args)` traces `f` (inside a shard_map over `mesh` when specs are given, and
through its VJP with `vjp=True`), drops dead code and walks the jaxpr: each equation's rule
(`register_roofline`) gives its flops, HBM bytes and ICI traffic; jaxpr-holding equations
(`jaxpr` / `call_jaxpr` params: jit, scan, remat, shard_map, custom_jvp/vjp) are walked in
turn. The peak HBM estimate follows the live variables' bytes through the program.
"""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import ml_dtypes
import numpy as np

from arrax._src import api, core, prng
from arrax._src.ad_api import vjp as _vjp
from arrax._src.shard_map import shard_map, shard_map_p
from arrax._src.sharding_impls import NamedSharding
from arrax._src.source_info_util import NameStack
from arrax._src.tree_util import _broadcast_prefix, tree_flatten, tree_map, tree_unflatten

logger = logging.getLogger(__name__)

ShapeDtypeStructTree = Any
Specs = Any
ValidRooflineDtype = np.dtype | prng.KeyTy


@dataclass(frozen=True, slots=True, kw_only=True)
class RooflineRuleContext:
  """What a roofline rule sees of its equation besides its operands' shapes."""
  name_stack: NameStack
  primitive: core.Primitive
  avals_in: Sequence[Any]
  avals_out: Sequence[Any]
  jaxpr_eqn_ctx: Any
  mesh: Any
  pin_lhs_in_vmem: bool
  pin_rhs_in_vmem: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RooflineShape:
  """The shape and dtype of one value."""
  shape: tuple[int, ...]
  dtype: ValidRooflineDtype

  @classmethod
  def from_aval(cls, aval) -> RooflineShape:
    if not isinstance(aval, core.ShapedArray):
      raise TypeError(f"Expected ShapedArray, got {type(aval)}.")
    if not isinstance(aval.dtype, ValidRooflineDtype):
      raise TypeError(f"Expected numpy or prng.KeyTy dtype, got {type(aval.dtype)}.")
    return cls(shape=aval.shape, dtype=aval.dtype)

  @property
  def size(self) -> int:
    return int(np.prod(self.shape))

  @property
  def bytes(self) -> int:
    return int(self.size * self.dtype.itemsize)

  @classmethod
  def total_bytes(cls, avals) -> int:
    return sum(cls.from_aval(a).bytes for a in avals)


def _merge(d1, d2):
  return {k: d1.get(k, 0) + d2.get(k, 0) for k in set(d1) | set(d2)}


@dataclass(frozen=True, slots=True, kw_only=True)
class RooflineResult:
  """Costs: flops (fused and unfused), HBM bytes (and the peak live bytes) and ICI bytes and
  latency per mesh axis. Results add up (the peak is a max) and scale by numbers."""
  flops: int = 0
  unfused_flops: int = 0
  ici_bytes: dict[str, int] = field(default_factory=dict)
  ici_latency: dict[str, int] = field(default_factory=dict)
  hbm_bytes: int = 0
  peak_hbm_bytes: int = 0
  unfused_hbm_bytes: int = 0

  @classmethod
  def zeros(cls) -> RooflineResult:
    return cls()

  def __add__(self, other: RooflineResult) -> RooflineResult:
    return RooflineResult(
        flops=self.flops + other.flops,
        unfused_flops=self.unfused_flops + other.unfused_flops,
        ici_bytes=_merge(self.ici_bytes, other.ici_bytes),
        ici_latency=_merge(self.ici_latency, other.ici_latency),
        hbm_bytes=self.hbm_bytes + other.hbm_bytes,
        peak_hbm_bytes=max(self.peak_hbm_bytes, other.peak_hbm_bytes),
        unfused_hbm_bytes=self.unfused_hbm_bytes + other.unfused_hbm_bytes)

  def __mul__(self, constant: int | float) -> RooflineResult:
    scale = lambda v: int(v * constant)   # noqa: E731
    return RooflineResult(
        flops=scale(self.flops), unfused_flops=scale(self.unfused_flops),
        ici_bytes={k: scale(v) for k, v in self.ici_bytes.items()},
        ici_latency={k: scale(v) for k, v in self.ici_latency.items()},
        hbm_bytes=scale(self.hbm_bytes), peak_hbm_bytes=scale(self.peak_hbm_bytes),
        unfused_hbm_bytes=scale(self.unfused_hbm_bytes))

  def __rmul__(self, constant: int | float) -> RooflineResult:
    return self.__mul__(constant)


class _RooflineRule(Protocol):
  def __call__(self, ctx: RooflineRuleContext, *args: RooflineShape, **kw) -> RooflineResult:
    ...


_rooflines: dict[core.Primitive, _RooflineRule] = {}


def _wrap_name(transform, name):
  return f"{transform}({name})"


def _qual_name(f):
  while isinstance(f, functools.partial):
    f = f.func
  return getattr(f, "__qualname__", getattr(f, "__name__", str(f)))


def _aval(v):
  return v.aval


def _last_uses(jaxpr):
  """{var: the last equation reading it (None for the jaxpr's outputs)}."""
  last = {v: None for v in jaxpr.outvars if not isinstance(v, core.Literal)}
  for eqn in reversed(jaxpr.eqns):
    for v in eqn.invars:
      if not isinstance(v, core.Literal) and v not in last:
        last[v] = eqn
  return last


def _roofline_interpreter(f_name, jaxpr, mesh, *, pin_lhs_in_vmem=False,
                          pin_rhs_in_vmem=False) -> RooflineResult:
  name_stack = NameStack((_wrap_name("roofline", f_name),))
  jaxpr = getattr(jaxpr, "jaxpr", jaxpr)     # (a ClosedJaxpr's)
  shape_of = lambda v: RooflineShape.from_aval(_aval(v))   # noqa: E731
  env = {v: shape_of(v) for v in [*jaxpr.constvars, *jaxpr.invars]}
  last = _last_uses(jaxpr)
  live = sum(s.bytes for s in env.values())
  peak = live
  result = RooflineResult.zeros()
  sub = dict(pin_lhs_in_vmem=pin_lhs_in_vmem, pin_rhs_in_vmem=pin_rhs_in_vmem)
  for eqn in jaxpr.eqns:
    params = eqn.params
    inner = params.get("jaxpr", params.get("call_jaxpr"))
    if "jaxpr" in params or "call_jaxpr" in params:
      result += _roofline_interpreter(_wrap_name(eqn.primitive.name, f_name), inner, mesh,
                                      **sub)
    elif eqn.primitive not in _rooflines:
      logger.warning("No roofline rule for %s, skipping...\n%s", eqn.primitive, eqn)
    else:
      ctx = RooflineRuleContext(
          name_stack=name_stack.extend(tuple(eqn.source_info or ())), primitive=eqn.primitive,
          avals_in=[_aval(v) for v in eqn.invars], avals_out=[_aval(v) for v in eqn.outvars],
          jaxpr_eqn_ctx=getattr(eqn, "ctx", None), mesh=mesh, **sub)
      operands = [shape_of(v) if isinstance(v, core.Literal) else env[v] for v in eqn.invars]
      result += _rooflines[eqn.primitive](ctx, *operands, **params)
    outs = [shape_of(v) for v in eqn.outvars]
    live += sum(s.bytes for s in outs)
    env.update(zip(eqn.outvars, outs))
    # (an operand read twice by its last reader counts twice, as in JAX)
    dying = [v for v in eqn.invars if not isinstance(v, core.Literal) and last[v] is eqn]
    live -= sum(env[v].bytes for v in dying)
    for v in dying:
      env.pop(v, None)
    peak = max(peak, live)
  return result + RooflineResult(peak_hbm_bytes=peak)


def _f_with_vjp(f: Callable):
  @functools.wraps(f)
  def wrapped(*args):
    primals, f_vjp = _vjp(f, *args)
    return f_vjp(tree_map(lambda p: p.astype(ml_dtypes.bfloat16), primals))
  return wrapped


def roofline(f: Callable, mesh=None, in_specs: Specs | None = None,
             out_specs: Specs | None = None, *, pin_lhs_in_vmem: bool = False,
             pin_rhs_in_vmem: bool = False, vjp: bool = False,
             print_jaxpr: bool = False) -> Callable[..., tuple[ShapeDtypeStructTree,
                                                                RooflineResult]]:
  """A function returning (output ShapeDtypeStructs, RooflineResult) of `f` at the given
  arguments (arrays or ShapeDtypeStructs). With `mesh` and both specs, `f` is the body of a
  shard_map and the outputs carry NamedShardings; `vjp=True` measures f's VJP (cotangents in
  bfloat16); `pin_lhs/rhs_in_vmem` leave a matmul operand's bytes out."""
  @functools.wraps(f)
  def wrapped(*args):
    g = f
    if in_specs is not None and out_specs is not None and mesh is not None:
      g = shard_map(g, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
    if vjp:
      g = _f_with_vjp(g)
    closed, out_shapes = api.make_jaxpr(g, return_shape=True)(*args)
    if out_specs is not None and mesh is not None:
      leaves, tree = tree_flatten(out_shapes)
      specs = _broadcast_prefix(out_specs, out_shapes)
      out_shapes = tree_unflatten(tree, [
          api.ShapeDtypeStruct(s.shape, s.dtype, sharding=NamedSharding(mesh, spec))
          for s, spec in zip(leaves, specs)])
    jaxpr, _ = core.dce_jaxpr(closed.jaxpr, (True,) * len(closed.jaxpr.outvars))
    shard_maps = [e for e in jaxpr.eqns if e.primitive is shard_map_p]
    if shard_maps:
      if "jaxpr" not in shard_maps[-1].params:
        raise ValueError(f"Missing shard_map jaxpr in {jaxpr}.")
      jaxpr = shard_maps[-1].params["jaxpr"]
    if print_jaxpr:
      print(jaxpr)
    return out_shapes, _roofline_interpreter(_qual_name(f), jaxpr, mesh,
                                             pin_lhs_in_vmem=pin_lhs_in_vmem,
                                             pin_rhs_in_vmem=pin_rhs_in_vmem)
  return wrapped


def register_roofline(prim: core.Primitive):
  """Decorator: `rule(ctx, *operand_shapes, **params) -> RooflineResult` becomes `prim`'s."""
  def register(rule: _RooflineRule):
    _rooflines[prim] = rule
    return rule
  return register


def register_standard_roofline(prim: core.Primitive):
  """Give `prim` the rule that costs nothing."""
  def standard_rule(ctx: RooflineRuleContext, *args, **kwargs):
    return RooflineResult.zeros()
  _rooflines[prim] = standard_rule


def roofline_and_grad(f: Callable, mesh, in_specs: Specs, out_specs: Specs, *,
                      pin_lhs_in_vmem: bool = False, pin_rhs_in_vmem: bool = False,
                      print_jaxpr: bool = False):
  """A function returning (output shapes, forward RooflineResult, VJP RooflineResult); the VJP
  is measured on bfloat16 versions of the (non-int32) arguments."""
  opts = dict(pin_lhs_in_vmem=pin_lhs_in_vmem, pin_rhs_in_vmem=pin_rhs_in_vmem,
              print_jaxpr=print_jaxpr)

  @functools.wraps(f)
  def wrapped(*args):
    shapes, fwd = roofline(f, mesh, in_specs, out_specs, **opts)(*args)
    bf16_args = tree_map(lambda x: api.ShapeDtypeStruct(
        x.shape, np.int32 if x.dtype == np.int32 else ml_dtypes.bfloat16,
        sharding=getattr(x, "sharding", None)), args)
    _, bwd = roofline(f, mesh, in_specs, out_specs, vjp=True, **opts)(*bf16_args)
    return shapes, fwd, bwd
  return wrapped
