"""The fuser's fusions (jax.experimental.pallas.fuser): `fusible` marks a function (typically a
Pallas kernel) that receives its inputs as `Fusion`s, callables computing them, plus fusions of
what is done with its outputs; `fuse` traces a function holding one fusible call and hands the
fusible the computations around the call (the work producing each input, and the work applied
to its outputs), so that the fusible may compute them inside its kernel. Outside `fuse` a
fusible gets trivial fusions (its arguments) and no output fusion.

`evaluate` runs a function equation by equation (as fusions are built from), without control
flow; `custom_fusion` lets a function bring its own block spec and evaluation rules."""
from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any

from arrax._src import core, dtypes, tracing, tree_util
from arrax._src.api import ShapeDtypeStruct
from arrax._src.lax.control_flow import common
from arrax._src.state import primitives as state


@dataclasses.dataclass
class Fusion:
  """A function (`func`) with its input types (`in_type`: (args, kwargs)) and output type."""
  func: Callable
  in_type: tuple
  out_type: Any
  strict_mode: bool = True

  def __call__(self, *args, **kwargs):
    return self.func(*args, **kwargs)

  @property
  def shape(self):
    return tree_util.tree_map(lambda x: x.shape, self.out_type)

  @property
  def dtype(self):
    return tree_util.tree_map(lambda x: x.dtype, self.out_type)

  @property
  def type(self):
    return self.out_type

  @property
  def in_shape(self):
    return tree_util.tree_map(lambda x: x.shape, self.in_type)

  @property
  def in_dtype(self):
    return tree_util.tree_map(lambda x: x.dtype, self.in_type)


def make_jaxpr(f, *args, **kwargs):
  """(jaxpr, consts, in_tree, out_tree) of `f(*args, **kwargs)` (flat in, flat out)."""
  flat, in_tree = tree_util.tree_flatten((args, kwargs))
  out_tree = []

  def flat_fun(*xs):
    a, kw = tree_util.tree_unflatten(in_tree, list(xs))
    leaves, t = tree_util.tree_flatten(f(*a, **kw))
    out_tree.append(t)
    return leaves

  jaxpr, consts = tracing.trace_to_jaxpr(flat_fun, [_abstractify(x) for x in flat])
  return jaxpr, list(consts), in_tree, out_tree[0]


def _abstractify(x):
  """The type of `x`; types (avals, ShapeDtypeStructs) stand for values of that type."""
  if isinstance(x, core.AbstractValue):
    return x
  if isinstance(x, ShapeDtypeStruct):
    return core.ShapedArray(tuple(x.shape), dtypes.canonicalize_dtype(x.dtype))
  return core.get_aval(x)


# ---- fusible -------------------------------------------------------------------------------------
fusible_p = core.Primitive("fusible")
fusible_p.multiple_results = True


def _run_body(*args, jaxpr, num_consts, **_):
  return core.eval_jaxpr(jaxpr, args[:num_consts], *args[num_consts:])


fusible_p.def_impl(_run_body)
fusible_p.def_abstract_eval(lambda *args, jaxpr, **_: [v.aval for v in jaxpr.outvars])
fusible_p.def_lowering(common.lower_fun(_run_body))


@fusible_p.def_batch
def _fusible_batch(args, dims, **params):
  if any(d is not None and core.get_aval(x).shape[d] != 1 for x, d in zip(args, dims)):
    raise NotImplementedError("fusible does not support non-trivial batching")
  args = [x if d is None else x[(slice(None),) * d + (0,)] for x, d in zip(args, dims)]
  outs = fusible_p.bind(*args, **params)
  return [o[None] for o in outs], [0] * len(outs)


def _trivial_fusion(x):
  aval = core.get_aval(x)
  return Fusion(lambda: x, ((), {}), aval)


def fusible(f=None, *, output_fusion_prefix: Any = True):
  """Decorator: `f(*input_fusions, output_fusions)` becomes a function of arrays that `fuse`
  can fuse its producers and consumers into; `output_fusion_prefix` (a pytree prefix of the
  outputs) groups the outputs that share an output fusion."""
  def decorator(f):
    def wrapper(*args):
      prefix_tree = tree_util.tree_structure(output_fusion_prefix)

      def body(*a):
        no_out = tree_util.tree_unflatten(prefix_tree, [None] * prefix_tree.num_leaves)
        return f(*tree_util.tree_map(_trivial_fusion, a), no_out)

      jaxpr, consts, in_tree, out_tree = make_jaxpr(body, *args)
      flat = tree_util.tree_leaves(args)
      outs = fusible_p.bind(*consts, *flat, jaxpr=jaxpr, num_consts=len(consts),
                            in_tree=tree_util.treedef_children(in_tree)[0], out_tree=out_tree,
                            func=f, output_fusion_prefix=output_fusion_prefix)
      return tree_util.tree_unflatten(out_tree, outs)
    return wrapper

  return decorator if f is None else decorator(f)


# ---- fuse ----------------------------------------------------------------------------------------
def _needed(eqns, outvars):
  """The equations (in order) that the values of `outvars` need."""
  live = {v for v in outvars if type(v) is core.Var}
  keep = []
  for eqn in reversed(eqns):
    if any(v in live for v in eqn.outvars):
      keep.append(eqn)
      live.update(v for v in eqn.invars if type(v) is core.Var)
  return keep[::-1]


def _evaluator(eqns, known, outvars):
  """A function evaluating `outvars` from the values of `known` (a dict of Var -> value) and
  the vars it is given."""
  needed = _needed(eqns, outvars)

  def run(in_vars, in_vals):
    env = dict(known)
    env.update(zip(in_vars, in_vals))
    for eqn in needed:
      ins = [v if type(v) is core.Literal else env[v] for v in eqn.invars]
      outs = eqn.primitive.bind(*ins, **eqn.params)
      env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
    return [v.val if type(v) is core.Literal else env[v] for v in outvars]

  return run


def _depends(eqns, sources, outvars):
  """For each of `outvars`, whether it depends on one of the `sources` vars."""
  tainted = set(sources)
  for eqn in eqns:
    if any(v in tainted for v in eqn.invars if type(v) is core.Var):
      tainted.update(eqn.outvars)
  return [type(v) is core.Var and v in tainted for v in outvars]


def _output_fusions(eqns, known, outvars, fus_outvars, fus_out_tree, prefix, strict_mode):
  groups = tree_util.tree_structure(prefix).flatten_up_to(
      tree_util.tree_unflatten(fus_out_tree, fus_outvars))
  masks, claimed = [], set()
  for group in groups:
    mask = _depends(eqns, tree_util.tree_leaves(group), outvars)
    for i, used in enumerate(mask):
      if used:
        if i in claimed:
          raise ValueError("Outputs must be disjoint in order to use separate output fusions")
        claimed.add(i)
    masks.append(mask)
  order = [i for m in masks for i, u in enumerate(m) if u]
  perm = [order.index(i) for i in range(len(order))]
  fusions = []
  for group, mask in zip(groups, masks):
    group_vars = tree_util.tree_leaves(group)
    outs = [v for v, u in zip(outvars, mask) if u]
    if not _needed(eqns, outs) and outs == group_vars:
      fusions.append(None)
      continue
    run = _evaluator(eqns, known, outs)

    def fn(*args, _run=run, _vars=group_vars, **kwargs):
      return tuple(_run(_vars, tree_util.tree_leaves((args, kwargs))))

    in_type = tree_util.tree_map(lambda v: v.aval, group)
    fusions.append(Fusion(fn, (in_type, {}), tuple(v.aval for v in outs),
                          strict_mode=strict_mode))
  return tree_util.tree_unflatten(tree_util.tree_structure(prefix), fusions), perm


def _fuse_jaxpr(jaxpr, consts, args, strict_mode):
  idx = next((i for i, e in enumerate(jaxpr.eqns) if e.primitive is fusible_p), None)
  if idx is None:
    raise ValueError("No fusible eqn found")
  eqn = jaxpr.eqns[idx]
  known = dict(zip(jaxpr.constvars, consts))
  known.update(zip(jaxpr.invars, args))
  rest = jaxpr.eqns[:idx] + jaxpr.eqns[idx + 1:]
  if not any(_depends(rest, eqn.outvars, jaxpr.outvars)):
    return _evaluator(rest, known, jaxpr.outvars)([], [])
  before = jaxpr.eqns[:idx]
  in_fusions = []
  for v in eqn.invars[eqn.params["num_consts"]:]:
    run = _evaluator(before, known, [v])
    in_fusions.append(Fusion(lambda _run=run: _run([], [])[0], ((), {}), v.aval))
  in_fusions = tree_util.tree_unflatten(eqn.params["in_tree"], in_fusions)
  out_fusions, perm = _output_fusions(rest, known, jaxpr.outvars, eqn.outvars,
                                      eqn.params["out_tree"],
                                      eqn.params["output_fusion_prefix"], strict_mode)
  flat = tree_util.tree_leaves(eqn.params["func"](*in_fusions, out_fusions))
  out = [flat[i] for i in perm]
  assert len(out) == len(jaxpr.outvars), (len(out), len(jaxpr.outvars))
  return out


def fuse(f=None, *, resolve_fusion_dtypes: bool = True, debug: bool = False,
         strict_mode: bool = True):
  """Decorator: run `f`, which holds one call of a `fusible`, by calling the fusible with
  fusions of the computations producing its inputs and consuming its outputs."""
  def decorator(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
      flat = tree_util.tree_leaves((args, kwargs))
      ref = next((v for v in flat if isinstance(v, state.Ref)), None)
      if ref is not None:
        raise NotImplementedError(
            f"Fused function {getattr(f, '__name__', f)} was passed an argument of type "
            f"{ref}.  Fused functions cannot take Refs as arguments -- they must close over "
            "such Refs, instead.")
      jaxpr, consts, _, out_tree = make_jaxpr(f, *args, **kwargs)
      if debug:
        print("Jaxpr before fusion:")
        print(jaxpr)
      return tree_util.tree_unflatten(out_tree, _fuse_jaxpr(jaxpr, consts, flat, strict_mode))
    return wrapper

  return decorator if f is None else decorator(f)


# ---- evaluate ------------------------------------------------------------------------------------
_NO_CONTROL_FLOW = ("scan", "while", "cond")


def evaluate(f, *, allow_transpose: bool = True):
  """`f`, run one equation at a time; control flow (scan, while, cond) raises
  NotImplementedError and, without `allow_transpose`, a transpose raises ValueError."""
  def wrapped(*args, **kwargs):
    jaxpr, consts, _, out_tree = make_jaxpr(f, *args, **kwargs)
    env = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, tree_util.tree_leaves(args)))
    for eqn in jaxpr.eqns:
      name = eqn.primitive.name
      if name in _NO_CONTROL_FLOW:
        raise NotImplementedError(f"Primitive {name} not supported.")
      if not allow_transpose and name == "transpose":
        raise ValueError("Transpose not allowed.")
      outs = eqn.primitive.bind(*[v if type(v) is core.Literal else env[v]
                                  for v in eqn.invars], **eqn.params)
      env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
    return tree_util.tree_unflatten(
        out_tree, [v.val if type(v) is core.Literal else env[v] for v in jaxpr.outvars])

  return wrapped


# ---- custom_fusion -------------------------------------------------------------------------------
custom_fusion_p = core.Primitive("custom_fusion")
custom_fusion_p.multiple_results = True


def _custom_fusion_run(*args, jaxpr, num_consts, pallas_num_consts, **_):
  return core.eval_jaxpr(jaxpr, args[:num_consts], *args[num_consts + pallas_num_consts:])


custom_fusion_p.def_impl(_custom_fusion_run)
custom_fusion_p.def_abstract_eval(lambda *args, jaxpr, **_: [v.aval for v in jaxpr.outvars])
custom_fusion_p.def_lowering(common.lower_fun(_custom_fusion_run))


@custom_fusion_p.def_batch
def _custom_fusion_batch(args, dims, **params):
  raise NotImplementedError("Batching rule for 'custom_fusion' not implemented")


@dataclasses.dataclass(frozen=True)
class CustomEvalContext:
  """What a custom fusion's eval rule gets: the output block specs and block indices."""
  out_block_specs: tuple
  out_block_indices: tuple


class custom_fusion:  # noqa: N801
  """Decorator: a function with its own fuser rules (`def_eval_rule`, `def_pull_block_spec`,
  optionally `def_push_block_spec` and `def_pallas_impl`); both required rules must be set
  before it is called."""
  eval_rule = None
  pull_block_spec_rule = None
  push_block_spec_rule = None
  pallas_impl = None

  def __init__(self, fun):
    functools.update_wrapper(self, fun)
    self.fun = fun

  def def_pallas_impl(self, pallas_impl):
    self.pallas_impl = pallas_impl
    return pallas_impl

  def def_pull_block_spec(self, pull_block_spec_rule):
    self.pull_block_spec_rule = pull_block_spec_rule
    return pull_block_spec_rule

  def def_push_block_spec(self, push_block_spec_rule):
    self.push_block_spec_rule = push_block_spec_rule
    return push_block_spec_rule

  def def_eval_rule(self, eval_rule):
    self.eval_rule = eval_rule
    return eval_rule

  def __call__(self, *args, **kwargs):
    assert self.eval_rule is not None
    assert self.pull_block_spec_rule is not None
    if kwargs:
      try:
        bound = inspect.signature(self.fun).bind(*args, **kwargs)
      except TypeError as e:
        raise TypeError("The input arguments to the custom_fusion-decorated function "
                        f"{getattr(self.fun, '__name__', self.fun)} could not be resolved to "
                        f"positional-only arguments. Binding failed with the error:\n{e}") from e
      args = bound.args
    jaxpr, consts, in_tree, out_tree = make_jaxpr(self.fun, *args)
    p_consts, p_jaxpr = [], None
    if self.pallas_impl is not None:
      p_jaxpr, p_consts, _, _ = make_jaxpr(self.pallas_impl, *args)
    outs = custom_fusion_p.bind(
        *consts, *p_consts, *tree_util.tree_leaves(args), jaxpr=jaxpr, num_consts=len(consts),
        eval_rule=self.eval_rule, pull_block_spec_rule=self.pull_block_spec_rule,
        push_block_spec_rule=self.push_block_spec_rule, pallas_jaxpr=p_jaxpr,
        pallas_num_consts=len(p_consts), in_tree=tree_util.treedef_children(in_tree)[0],
        out_tree=out_tree, kernel_out_tree=out_tree)
    return tree_util.tree_unflatten(out_tree, outs)
