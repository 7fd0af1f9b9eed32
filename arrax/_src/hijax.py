"""Hijax (`jax.experimental.hijax`): operations and types defined by users in terms of arrax's
own ("lojax") operations.

A `VJPHiPrimitive` subclass describes one operation: its instance carries the input and output
types (`in_avals`, `out_aval`, pytrees of abstract values) and static `params` (also readable as
attributes); `expand(*args)` says what it computes with ordinary operations, and optional
methods give its rules: `jvp` (forward mode), `vjp_fwd` + `vjp_bwd_retval` or `vjp_bwd`
(reverse mode), `batch` or `batch_dim_rule` (vmap). Calling the instance binds one primitive,
`call_hi_primitive`, that holds it: eagerly it runs `expand`, staged it is one equation that
lowers to the traced `expand`.

`HiType` is the base of abstract values of user-defined value types, linked to the value type
by `register_hitype`; `aval_method` / `aval_property` attributes of such a type make a tracer
of it answer the value's methods and properties. Hi-typed values work eagerly and as the
inputs and outputs of hi primitives applied eagerly; arrax does not lower them across a `jit`
boundary (only array-typed primitives are staged).
"""
from __future__ import annotations

import threading

import numpy as np

from arrax._src import ad, core, jit, mlir
from arrax._src.state import primitives as _state_primitives
from arrax._src.ad import Zero, instantiate, is_undefined, tangent_aval
from arrax._src.batching import vmap
from arrax._src.core import AbstractValue, ShapedArray, aval_method, aval_property
from arrax._src.custom_derivatives import SymbolicZero, custom_lin_p
from arrax._src.lax import reductions
from arrax._src.tracing import JaxprTrace, trace_to_jaxpr
from arrax._src.tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["HiPrimitive", "HiType", "VJPHiPrimitive", "register_hitype", "instantiate_zeros",
           "is_undefined_primal", "aval_method", "aval_property", "AbstractValue",
           "ShapedArray", "Zero"]


def instantiate_zeros(tangent):
  """A symbolic zero tangent (`Zero`) made into an array of zeros; other values unchanged."""
  return instantiate(tangent)


def is_undefined_primal(x) -> bool:
  """Whether `x` stands for the linear input of a transpose rule."""
  return is_undefined(x)


def register_hitype(val_cls, typeof_fn) -> None:
  """Make `typeof_fn(value)` the abstract value of instances of `val_cls`."""
  core.pytype_aval_mappings[val_cls] = typeof_fn


class QuasiDynamicData:
  """The base of the type state of a mutable hi value (what may change as it is mutated)."""


class MutableQuasiDynamicData:
  """A mutable hi value's type state while tracing: `init_val` and the current `cur_val`."""

  def __init__(self, val):
    self.init_val = val
    self.cur_val = val

  def update(self, val):
    self.cur_val = val

  def __repr__(self):
    return f"MutableQuasiDynamicData(init_val={self.init_val}, cur_val={self.cur_val})"


class AvalQDD:
  """A mutable hi type (`aval`) with one value of its type state (`qdd`): what a hi primitive's
  `abstract_eval` returns for a new mutable value."""
  __slots__ = ("aval", "qdd")
  is_high = True
  has_qdd = True

  def __init__(self, aval, qdd):
    object.__setattr__(self, "aval", aval)
    object.__setattr__(self, "qdd", qdd)

  def __setattr__(self, name, value):
    raise AttributeError(f"cannot assign to field '{name}'")

  def __eq__(self, other):
    return type(other) is AvalQDD and (self.aval, self.qdd) == (other.aval, other.qdd)

  def __hash__(self):
    return hash((self.aval, self.qdd))

  def __repr__(self):
    return f"AvalQDD(aval={self.aval!r}, qdd={self.qdd!r})"

  is_writer = property(lambda self: self.aval.is_writer)

  def lo_ty(self):
    return self.aval.lo_ty_qdd(self.qdd)

  def read_loval(self, val):
    return self.aval.read_loval(self.qdd, val)

  def new_from_loval(self, *lovals):
    return self.aval.new_from_loval(self.qdd, *lovals)

  def to_tangent_aval(self):
    return AvalQDD(self.aval.to_tangent_aval(), self.qdd and self.qdd.to_tangent_qdd())


class AvalMutableQDD(AbstractValue):
  """A mutable hi type with its changing type state (`mutable_qdd`): the type of a mutable hi
  value while tracing, as hi primitives' `abstract_eval` receive it."""
  is_high = True
  has_qdd = True

  def __init__(self, aval, mutable_qdd):
    self.aval = aval
    self.mutable_qdd = mutable_qdd

  def __eq__(self, other):
    return (type(other) is AvalMutableQDD and self.aval == other.aval
            and self.mutable_qdd is other.mutable_qdd)

  def __hash__(self):
    return hash((self.aval, id(self.mutable_qdd)))

  def __repr__(self):
    return f"AvalMutableQDD(aval={self.aval!r}, mutable_qdd={self.mutable_qdd!r})"

  def __getattr__(self, name):
    if name in ("aval", "mutable_qdd"):
      raise AttributeError(name)
    return getattr(self.aval, name)

  def str_short(self, short_dtypes=False, **kw):
    return self.aval.str_short(short_dtypes, **kw)

  def to_tangent_aval(self):
    return self.aval.to_tangent_aval()


class _LoweringHi(threading.local):
  on = False


_lowering_hi = _LoweringHi()


def cur_qdd(x):
  """The current type state (quasi-dynamic data) of the mutable hi value `x`."""
  while isinstance(x, core.Tracer):
    aval = x.aval
    if isinstance(aval, AvalMutableQDD):
      return aval.mutable_qdd.cur_val
    inner = getattr(x, "primal", None)
    if inner is None:
      inner = getattr(x, "val", None)
    if inner is None:
      raise TypeError(f"cur_qdd: no type state for {x}")
    x = inner
  return x.cur_qdd()


class HiPrimitive(core.Primitive):
  """A primitive defined by a subclass's methods: `abstract_eval(*avals, **params)` returns
  `(out_aval, effects)`, `to_lojax(*args, **params)` computes it with ordinary operations
  (eagerly, and traced when a jit lowers it), `jvp(primals, tangents, **params)` and
  `transpose(ct, *args, **params)` its autodiff rules. A batching rule is registered as for any
  primitive (`def_batch`)."""

  # (staged equations of hi primitives are lowered by running `to_lojax` on the whole jaxpr
  # before it is compiled, as refs are discharged: mutable hi values flow between them)
  ref_primitive = True

  def __init__(self, name):
    super().__init__(name)
    cls = type(self)
    # the subclass's methods fill the primitive's rule slots
    self.def_abstract_eval(self._abstract_eval_slot)
    self.def_jvp(lambda primals, tangents, **params: cls.jvp(self, primals, tangents, **params))
    self.def_transpose(lambda *args, **params: cls.transpose(self, *args, **params))
    self.def_impl(lambda *args, **params: cls.to_lojax(self, *args, **params))
    self.def_lowering(self._lowering_slot)

  def bind(self, *args, **params):
    if _lowering_hi.on:
      return type(self).to_lojax(self, *args, **params)
    return super().bind(*args, **params)

  def _abstract_eval_slot(self, *avals, **params):
    out, _effects = type(self).abstract_eval(self, *avals, **params)
    # a new mutable hi value: its type state is tracked (and updated by later operations)
    # in the aval of its tracer
    fix = lambda a: (AvalMutableQDD(a.aval, MutableQuasiDynamicData(a.qdd))
                     if isinstance(a, AvalQDD) else a)
    return [fix(a) for a in out] if self.multiple_results else fix(out)

  def _lowering_slot(self, ctx, *args, **params):
    fn = lambda *xs: type(self).to_lojax(self, *xs, **params)
    outs = _lower_traced(ctx, self, fn, args, multiple=self.multiple_results)
    return outs

  def is_high(self, *avals, **params) -> bool:
    return True

  def is_effectful(self, params) -> bool:
    return False

  def abstract_eval(self, *arg_avals, **params):
    raise AssertionError("must override")

  def to_lojax(self, *args, **params):
    raise AssertionError(f"must override for {self}")

  def jvp(self, primals, tangents, **params):
    raise AssertionError("must override")

  def transpose(self, *args, **params):
    raise AssertionError("must override")


class HiType(AbstractValue):
  """The base of the abstract values of immutable user-defined types. Subclasses define
  equality and hashing, and for the transformations they take part in: `lo_ty` / `lower_val` /
  `raise_val` (the type as arrays), `to_tangent_aval` (autodiff), `vspace_zero` /
  `vspace_add` (a tangent type), `dec_rank` / `inc_rank` (vmap)."""
  is_high = True
  has_qdd = False

  def __hash__(self):
    raise AssertionError("must override")

  def __eq__(self, other):
    raise AssertionError("must override")

  def lo_ty(self):
    raise AssertionError("must override")

  def lower_val(self, hi_val):
    raise AssertionError("must override")

  def raise_val(self, *lo_vals):
    raise AssertionError("must override")

  def to_tangent_aval(self):
    raise AssertionError("must override")

  def to_ct_aval(self):
    return self.to_tangent_aval()

  def vspace_zero(self):
    raise AssertionError("must override")

  def vspace_add(self, x, y):
    raise AssertionError("must override")

  def dec_rank(self, size, spec):
    raise AssertionError("must override")

  def inc_rank(self, size, spec):
    raise AssertionError("must override")

  def leading_axis_spec(self):
    raise AssertionError("must override")


class MutableHiType(AbstractValue):
  """The base of the abstract values of mutable user-defined types, whose type state (QDD, read
  with `cur_qdd`) may change as they are mutated. Subclasses define equality and hashing,
  `lo_ty_qdd(state)` (the type as arrays), `new_from_loval` / `read_loval` /
  `update_from_loval` (the value as arrays and back), and `to_tangent_aval`."""
  is_high = True
  has_qdd = True
  is_writer = False
  type_state = aval_method(cur_qdd)

  def __hash__(self):
    raise AssertionError("must override")

  def __eq__(self, other):
    raise AssertionError("must override")

  def lo_ty_qdd(self, state, /):
    raise AssertionError("must override")

  def lo_ty(self):
    raise AssertionError("mutable hitypes should use lo_ty_qdd instead")

  def new_from_loval(self, state, /, *vals):
    raise AssertionError("must override")

  def read_loval(self, state, val, /):
    raise AssertionError("must override")

  def read_loval_in(self, state, val, /):
    return self.read_loval(state, val)

  def update_from_loval(self, state, val, /, *lo_vals):
    raise AssertionError("must override")

  def to_tangent_aval(self):
    raise AssertionError("must override")

  def to_ct_aval(self):
    return self.to_tangent_aval()


class MappingSpec:
  """The base of how a hi type is mapped over an axis (vmap, scan)."""


class HiPspec:
  """The base of a hi type's partition spec (shard_map): `to_lo` gives its arrays' specs."""

  def to_lo(self):
    raise AssertionError("must override")

  def to_tangent_spec(self):
    raise AssertionError("must override")

  def to_ct_spec(self):
    raise AssertionError("must override")


class EffectTypeSet:
  """A set of effect classes (`add_type`; `contains(effect)`)."""

  def __init__(self):
    self._types = set()

  def add_type(self, effect_type):
    self._types.add(effect_type)

  def contains(self, eff) -> bool:
    return any(isinstance(eff, t) for t in self._types)

  def filter_in(self, effs):
    return [e for e in effs if self.contains(e)]

  def filter_not_in(self, effs):
    return [e for e in effs if not self.contains(e)]


control_flow_allowed_effects = EffectTypeSet()


def _is_aval(x) -> bool:
  return isinstance(x, AbstractValue)


def _flatten_avals(tree):
  return tree_flatten(tree, is_leaf=_is_aval)


def _leaves_checked(treedef, tree):
  return treedef.flatten_up_to(tree)


class _GradAccum:
  """Collects the cotangent of one input of a hi primitive (`vjp_bwd`'s accumulators)."""
  __slots__ = ("aval", "val")

  def __init__(self, aval):
    self.aval = aval
    self.val = None

  def accum(self, v):
    if v is None or type(v) is Zero:
      return
    self.val = v if self.val is None else self.val + v


class VJPHiPrimitive:
  """An operation defined by a subclass: `__init__` sets `in_avals`, `out_aval`, `params`
  then calls `super().__init__()`; `expand` implements it; the optional rules are methods."""
  effects = frozenset()

  def __init__(self):
    if not hasattr(self, "in_avals"):
      raise AttributeError("subclass __init__ should set `self.in_avals`")
    if not hasattr(self, "out_aval"):
      raise AttributeError("subclass __init__ should set `self.out_aval`")
    if not hasattr(self, "params"):
      raise AttributeError("subclass __init__ should set `self.params`")
    cls = type(self)
    if (cls.vjp_bwd is not VJPHiPrimitive.vjp_bwd
        and cls.vjp_bwd_retval is not VJPHiPrimitive.vjp_bwd_retval):
      raise AttributeError(f"subclass {cls} should not override both `vjp_bwd` and "
                           "`vjp_bwd_retval`")
    self.in_avals_flat, self.in_tree = _flatten_avals(self.in_avals)
    self.out_avals_flat, self.out_tree = _flatten_avals(self.out_aval)
    self.__dict__.update(self.params)
    self.check(*self.in_avals)

  def expand(self, *args):
    raise NotImplementedError(f"subclass {type(self)} must implement `expand`")

  def vjp_fwd(self, nzs_in, /, *args):
    raise NotImplementedError(f"for grad support, subclass {type(self)} must implement "
                              "`vjp_fwd`")

  def vjp_bwd(self, res, outgrad, /, *arg_accums):
    args_grad = self.vjp_bwd_retval(res, outgrad)
    tree_map(lambda acc, v: isinstance(acc, _GradAccum) and acc.accum(v), arg_accums,
             args_grad)

  def vjp_bwd_retval(self, res, outgrad, /):
    raise NotImplementedError(f"for grad support, subclass {type(self)} must implement "
                              "`vjp_bwd` or `vjp_bwd_retval`")

  def jvp(self, primals, tangents):
    raise NotImplementedError(f"for jvp support, subclass {type(self)} must implement `jvp`")

  def transpose(self, out_ct, *maybe_accums):
    raise NotImplementedError(f"for transpose support, subclass {type(self)} must implement "
                              "`transpose`")

  def batch(self, axis_data, args, dims):
    out_dim = self.batch_dim_rule(axis_data, dims)
    return VmapOf(self, axis_data, dims, out_dim)(*args), out_dim

  def batch_dim_rule(self, axis_data, dims, /):
    raise NotImplementedError(f"for vmap support, subclass {type(self)} must implement "
                              "`batch` or `batch_dim_rule`")

  def check(self, *arg_tys):
    return None

  def __call__(self, *args):
    if _lowering_hi.on:
      return self.expand(*args)
    trace = core.current_trace()
    if type(trace) is JaxprTrace:
      return self.staging(trace, None, *args)
    return self._bind(args)

  def staging(self, trace, source_info, *args):
    """How the operation is staged into a jaxpr (an override may refuse to be staged)."""
    del trace, source_info
    return self._bind(args)

  def _bind(self, args):
    outs = call_hi_primitive_p.bind(*_leaves_checked(self.in_tree, args), _prim=self)
    return tree_unflatten(self.out_tree, outs)

  def __repr__(self):
    return f"{type(self).__name__}[{self.params}]"

  def __hash__(self):
    return hash((type(self).__name__, tuple(self.params.items()), self.effects))

  def __eq__(self, other):
    return (type(self) is type(other) and self.params == other.params
            and self.effects == other.effects)


class VmapOf(VJPHiPrimitive):
  """A hi primitive applied to batched operands: `expand` (and `jvp`) vmapped."""

  def __init__(self, prim, axis_data, in_dims, out_dim):
    size = axis_data.size
    unmap = lambda a, d: core.unmapped_aval(size, d, a)
    self.in_avals = tree_map(unmap, prim.in_avals, in_dims, is_leaf=_is_aval)
    self.out_aval = tree_map(unmap, prim.out_aval, out_dim, is_leaf=_is_aval)
    self.params = dict(prim=prim, axis_data=axis_data, in_dims=in_dims, out_dim=out_dim)
    super().__init__()

  def _vmap(self, f, in_axes, out_axes):
    ad_ = self.axis_data
    return vmap(f, in_axes=in_axes, out_axes=out_axes, axis_name=ad_.name, axis_size=ad_.size,
                spmd_axis_name=ad_.spmd_name)

  def expand(self, *args):
    return self._vmap(self.prim.expand, tuple(self.in_dims), self.out_dim)(*args)

  def jvp(self, primals, tangents):
    tangents = tuple(tree_map(instantiate, tangents, is_leaf=lambda t: type(t) is Zero))
    dims = tuple(self.in_dims)
    return self._vmap(self.prim.jvp, (dims, dims), (self.out_dim, self.out_dim))(
        tuple(primals), tangents)

  def vjp_fwd(self, in_nzs, *args):
    # (residuals come out batched along axis 0, whether or not they depend on the batch)
    extra = []

    def fwd(*args):
      out, res, *maybe_nzs = self.prim.vjp_fwd(in_nzs, *args)
      extra[:] = maybe_nzs
      return out, res
    out, res = self._vmap(fwd, tuple(self.in_dims), (self.out_dim, 0))(*args)
    return (out, res, *extra)

  def vjp_bwd_retval(self, res, g):
    none = lambda x: x is None
    g = tree_map(instantiate, g, is_leaf=lambda t: type(t) is Zero)
    ct_dims = tree_map(lambda d: 0 if d is None else d, tuple(self.in_dims), is_leaf=none)
    cts = self._vmap(self.prim.vjp_bwd_retval, (0, self.out_dim), ct_dims)(res, g)
    # (an unbatched input's cotangent is the sum over the batch)
    return tree_map(lambda d, ct: reductions.reduce_sum(ct, (0,)) if d is None and ct is not None
                    else ct, tuple(self.in_dims), tuple(cts), is_leaf=none)

  def batch_dim_rule(self, axis_data, in_dims):
    fix = lambda d, d_: d if (d is None or d_ is None) else d - (d_ < d)
    inner = tree_map(fix, in_dims, self.in_dims, is_leaf=lambda x: x is None)
    out_dim = self.prim.batch_dim_rule(axis_data, inner)
    return tree_map(lambda d, d_: d + (d_ < d), out_dim, self.out_dim)


# ---- the primitive --------------------------------------------------------------------------
call_hi_primitive_p = core.Primitive("call_hi_primitive")
call_hi_primitive_p.multiple_results = True
call_hi_primitive_p.effectful = lambda params: bool(params["_prim"].effects)


def _expand_flat(*args, _prim):
  return _leaves_checked(_prim.out_tree, _prim.expand(*tree_unflatten(_prim.in_tree, args)))


call_hi_primitive_p.def_abstract_eval(lambda *avals, _prim: list(_prim.out_avals_flat))
call_hi_primitive_p.def_impl(_expand_flat)


class _LoVals(tuple):
  """While lowering: the IR values (one per `lo_ty()` type) standing for one hi-typed value."""


def _lo_avals(aval):
  return list(aval.lo_ty()) if isinstance(aval, HiType) else [aval]


def _lower_traced(ctx, prim, fn, args, multiple=True):
  # Lower `fn` (ordinary operations) traced at the equation's types; hi-typed operands and
  # results are carried as their lo values (HiType.lo_ty/raise_val/lower_val), so hi values can
  # flow between hi primitives inside a jit.
  avals_in, avals_out = ctx.avals_in, ctx.avals_out
  for a in [*avals_in, *avals_out]:
    if isinstance(a, core.AbstractRef) or (not isinstance(a, HiType) and getattr(a, "is_high", False)):
      raise NotImplementedError(f"{prim}: arrax does not lower operands of type {a}")
  sizes = [len(_lo_avals(a)) for a in avals_in]

  def lo_fun(*lo):
    hi, i = [], 0
    for a, n in zip(avals_in, sizes):
      hi.append(a.raise_val(*lo[i:i + n]) if isinstance(a, HiType) else lo[i])
      i += n
    outs = fn(*hi)
    outs = list(outs) if multiple else [outs]
    return [v for a, o in zip(avals_out, outs)
            for v in (a.lower_val(o) if isinstance(a, HiType) else [o])]

  lo_in = [t for a in avals_in for t in _lo_avals(a)]
  jaxpr, consts = trace_to_jaxpr(lo_fun, lo_in)
  consts = [mlir.ir_constant(np.asarray(c, v.aval.dtype))
            for v, c in zip(jaxpr.constvars, consts)]
  flat_args = [v for a, x in zip(avals_in, args)
               for v in (x if isinstance(a, HiType) else [x])]
  outs = iter(mlir.jaxpr_subcomp(ctx.module_context, jaxpr, consts, flat_args))
  return [_LoVals(next(outs) for _ in _lo_avals(a)) if isinstance(a, HiType) else next(outs)
          for a in avals_out]


def _call_hi_primitive_lowering(ctx, *args, _prim):
  return _lower_traced(ctx, _prim, lambda *xs: _expand_flat(*xs, _prim=_prim), args)


call_hi_primitive_p.def_lowering(_call_hi_primitive_lowering)


def _call_hi_primitive_jvp(primals, tangents, *, _prim):
  p = tree_unflatten(_prim.in_tree, primals)
  t = tree_unflatten(_prim.in_tree, tangents)
  p_out, t_out = _prim.jvp(p, t)
  return (_leaves_checked(_prim.out_tree, p_out),
          _prim.out_tree.flatten_up_to(t_out))


call_hi_primitive_p.def_jvp(_call_hi_primitive_jvp)


class _HiBwd:
  """The transpose of a hi primitive's linearized tangent map: its `vjp_bwd` (custom_lin's
  `bwd` param, printed as the primitive)."""
  __slots__ = ("prim", "res_tree")

  def __init__(self, prim, res_tree):
    self.prim = prim
    self.res_tree = res_tree

  def __str__(self):
    return repr(self.prim)

  def __call__(self, res, cts):
    prim = self.prim
    cts = [Zero(c.aval) if type(c) is SymbolicZero else c for c in cts]
    accums = [_GradAccum(a) for a in prim.in_avals_flat]
    out = prim.vjp_bwd(tree_unflatten(self.res_tree, res), tree_unflatten(prim.out_tree, cts),
                       *tree_unflatten(prim.in_tree, accums))
    assert out is None
    return [Zero(tangent_aval(a.aval)) if a.val is None else a.val for a in accums]


def _call_hi_primitive_linearize(trace, primals, tangents, *, _prim):
  del trace
  nzs = [type(t) is not Zero for t in tangents]
  ans, res, *maybe_nzs = _prim.vjp_fwd(tree_unflatten(_prim.in_tree, nzs),
                                       *tree_unflatten(_prim.in_tree, primals))
  ans_flat = _leaves_checked(_prim.out_tree, ans)
  res_flat, res_tree = tree_flatten(res)
  out_avals = [tangent_aval(core.get_aval(a)) for a in ans_flat]
  t_out = custom_lin_p.bind(*res_flat, *[t for t in tangents if type(t) is not Zero],
                            num_res=len(res_flat), bwd=_HiBwd(_prim, res_tree),
                            out_avals=tuple(out_avals), symbolic_zeros=True,
                            in_zeros=[not nz for nz in nzs])
  out_nzs = _prim.out_tree.flatten_up_to(maybe_nzs[0]) if maybe_nzs else [True] * len(t_out)
  return ans_flat, [t if nz and not ad.is_float0(a) else Zero(a)
                    for t, a, nz in zip(t_out, out_avals, out_nzs)]


call_hi_primitive_p.def_linearize(_call_hi_primitive_linearize)


def _call_hi_primitive_transpose(cts, *args, _prim):
  # linear operands arrive as accumulators, the others as their values
  accums = [_GradAccum(x.aval) if is_undefined(x) else None for x in args]
  ins = [x if acc is None else acc for x, acc in zip(args, accums)]
  cts = [Zero(c.aval) if type(c) is SymbolicZero else c for c in cts]
  out = _prim.transpose(tree_unflatten(_prim.out_tree, cts),
                        *tree_unflatten(_prim.in_tree, ins))
  assert out is None
  return [None if acc is None or acc.val is None else acc.val for acc in accums]


call_hi_primitive_p.def_transpose(_call_hi_primitive_transpose)


def _call_hi_primitive_batch(axis_data, args, dims, *, _prim):
  if all(d is None for d in dims):
    return call_hi_primitive_p.bind(*args, _prim=_prim), [None] * len(_prim.out_avals_flat)
  out, out_dims = _prim.batch(axis_data, tree_unflatten(_prim.in_tree, args),
                              tree_unflatten(_prim.in_tree, dims))
  return (_leaves_checked(_prim.out_tree, out),
          _prim.out_tree.flatten_up_to(out_dims))


call_hi_primitive_p.def_batch_axis(_call_hi_primitive_batch)
call_hi_primitive_p.def_pp_params(lambda p: {"_prim": p["_prim"]})


# ---- jit: a jaxpr holding hi primitives is lowered by running their `to_lojax` ----------------
class _HiArgAval(AvalQDD):
  """A mutable hi argument's type with its type state at the call: a jit cache key."""
  __slots__ = ()


def _hi_arg_aval(aval, x):
  return _HiArgAval(aval, cur_qdd(x))


def _hi_trace_aval(a):
  return AvalMutableQDD(a.aval, MutableQuasiDynamicData(a.qdd)) if type(a) is _HiArgAval else a




def _is_hi(aval) -> bool:
  return isinstance(aval, (HiType, AvalMutableQDD))


def _lo_of(aval, at_end=False):
  """The lo types of a jaxpr input/output of type `aval` (a mutable one at its type state on
  entry, or at the end)."""
  if isinstance(aval, AvalMutableQDD):
    mq = aval.mutable_qdd
    return list(aval.aval.lo_ty_qdd(mq.cur_val if at_end else mq.init_val))
  return list(aval.lo_ty()) if isinstance(aval, HiType) else [aval]


def _lower_hi_jaxpr(closed):
  """The jaxpr with hi primitives run as their `to_lojax` (and `VJPHiPrimitive`s as their
  `expand`), over lo values: a hi input is taken as its lo values (a mutable one at its type
  state on entry) and a hi output given as them; a mutable hi input's lo values at its final
  type state are returned after the outputs."""
  jaxpr = closed.jaxpr
  in_avals = [v.aval for v in jaxpr.invars]
  sizes = [len(_lo_of(a)) for a in in_avals]

  def run(*lo):
    prev, _lowering_hi.on = _lowering_hi.on, True
    try:
      args, his, i = [], [], 0
      for a, n in zip(in_avals, sizes):
        if isinstance(a, AvalMutableQDD):
          val = a.aval.new_from_loval(a.mutable_qdd.init_val, *lo[i:i + n])
          his.append((a, val))
        elif isinstance(a, HiType):
          val = a.raise_val(*lo[i:i + n])
        else:
          val = lo[i]
        args.append(val)
        i += n
      outs = []
      for v, o in zip(jaxpr.outvars, _eval_lowering(jaxpr, closed.consts, args)):
        outs += list(v.aval.lower_val(o)) if isinstance(v.aval, HiType) else [o]
      for a, val in his:
        outs += list(a.aval.read_loval(a.mutable_qdd.cur_val, val))
      return outs
    finally:
      _lowering_hi.on = prev
  new, consts = trace_to_jaxpr(run, [t for a in in_avals for t in _lo_of(a)])
  return core.ClosedJaxpr(new, consts)


def _hi_boundary(closed) -> bool:
  jaxpr = closed.jaxpr
  return (any(_is_hi(v.aval) for v in jaxpr.invars)
          or any(_is_hi(v.aval) for v in jaxpr.outvars))


def _has_hi_eqn(jaxpr) -> bool:
  jaxpr = jaxpr.jaxpr if isinstance(jaxpr, core.ClosedJaxpr) else jaxpr
  return any(isinstance(e.primitive, HiPrimitive)
             or any(_has_hi_eqn(j) for j in core.jaxprs_in_params(e.params))
             for e in jaxpr.eqns)


def _eqn_avals(eqn):
  return [v.aval for v in [*eqn.invars, *eqn.outvars] if type(v) is not core.Literal]


def _eval_lowering(jaxpr, consts, args):
  """Run `jaxpr` (hi primitives as their `to_lojax`), inlining the jits holding hi primitives
  so hi values flow into them."""
  env = {}

  def read(v):
    return v if type(v) is core.Literal else env[v]

  def write(v, val):
    if not isinstance(v, core.DropVar):
      env[v] = val
  for v, val in zip(jaxpr.constvars, consts):
    write(v, val)
  for v, val in zip(jaxpr.invars, args):
    write(v, val)
  for eqn in jaxpr.eqns:
    ins = [read(v) for v in eqn.invars]
    if eqn.primitive is call_hi_primitive_p:
      outs = _expand_flat(*ins, **eqn.params)
    elif eqn.primitive is jit.jit_p and (_has_hi_eqn(eqn.params["jaxpr"])
                                         or _hi_boundary(eqn.params["jaxpr"])):
      inner = eqn.params["jaxpr"]
      outs = _eval_lowering(inner.jaxpr, inner.consts, ins)
    elif not isinstance(eqn.primitive, HiPrimitive) and any(
        _has_hi_eqn(j) for j in core.jaxprs_in_params(eqn.params)) and any(
            _is_hi(a) for a in _eqn_avals(eqn)):
      raise NotImplementedError(f"arrax does not pass hi values into {eqn.primitive}")
    else:
      outs = eqn.primitive.bind(*ins, **eqn.params)
      outs = outs if eqn.primitive.multiple_results else [outs]
    for v, val in zip(eqn.outvars, outs):
      write(v, val)
  return [v.val if type(v) is core.Literal else env[v] for v in jaxpr.outvars]


_state_discharge = _state_primitives._jit_discharge


def _jit_discharge(name, closed):
  if not (_hi_boundary(closed) or _has_hi_eqn(closed.jaxpr)):
    return _state_discharge(name, closed)
  lowered = _lower_hi_jaxpr(closed)
  if not _hi_boundary(closed):
    if core.jaxpr_uses_refs(lowered.jaxpr):
      return _state_discharge(name, lowered)
    return lowered, None
  if core.jaxpr_uses_refs(lowered.jaxpr):
    raise NotImplementedError("arrax does not pass hi values into or out of a jit that also "
                              "uses refs")
  in_avals = [v.aval for v in closed.jaxpr.invars]
  out_avals = [v.aval for v in closed.jaxpr.outvars]

  def runner(args):
    # hi arguments go in as their lo values (a mutable one is updated from the lo values
    # returned after the outputs); hi results are raised from theirs
    lo = []
    for x, a in zip(args, in_avals):
      if isinstance(a, AvalMutableQDD):
        lo += list(a.aval.read_loval(a.mutable_qdd.init_val, x))
      elif isinstance(a, HiType):
        lo += list(a.lower_val(x))
      else:
        lo.append(x)
    outs = iter(jit.jit_p.impl(*lo, jaxpr=lowered, name=name))
    take = lambda k: [next(outs) for _ in range(k)]
    results = [a.raise_val(*take(len(a.lo_ty()))) if isinstance(a, HiType) else next(outs)
               for a in out_avals]
    for x, a in zip(args, in_avals):
      if isinstance(a, AvalMutableQDD):
        a.aval.update_from_loval(a.mutable_qdd.cur_val, x, *take(len(_lo_of(a, True))))
    return results
  return lowered, runner


jit.register_ref_discharge(_jit_discharge)
jit._hi_hooks[:] = [_hi_arg_aval, _hi_trace_aval, _hi_boundary]
