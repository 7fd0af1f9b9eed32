"""`jax.experimental.custom_partitioning`: functions with user-defined SPMD partitioning.

JAX lowers a `custom_partitioning` call to an XLA custom call whose partitioning callbacks
(`partition`, `infer_sharding_from_operands`, `propagate_user_sharding`, or a Shardy
`sharding_rule`) run inside XLA's SPMD partitioner. arrax records the same primitive and the
same parameters (so jaxprs read alike) but always lowers the traced body inline: on one device
this is what JAX does too; on several devices XLA partitions the plain body with its own
propagation, so results are the same while the user's partition callbacks (the per-shard
`lower_fn`, its chosen shardings and collectives) are not consulted. Like JAX's, the primitive
has no differentiation or batching rule.

The Shardy rule classes (`SdyShardingRule`, `ArrayMapping`, `CompoundFactor`, `BATCHING`) and
the einsum-like rule strings are parsed and validated as in JAX.
"""
from __future__ import annotations

import functools
import inspect

from arrax._src import batching, core, tracing
from arrax._src.errors import UnexpectedTracerError
from arrax._src.lax.control_flow import common
from arrax._src.tracing import trace_to_jaxpr
from arrax._src.tree_util import tree_flatten, tree_leaves, tree_unflatten

# ---- Shardy sharding rules -------------------------------------------------------------------
BATCHING: str = "\u2026"   # stands for leading batching dimensions ("..." in rule strings)
_BATCHING_FACTOR_PREFIX = "?"


def _check_factor(factor: str):
  """A factor name starts with a letter; then letters, digits or underscores."""
  if not factor[0].isalpha():
    raise ValueError(f"Factor names have to start with a letter, but got '{factor[0]}'")
  for ch in factor[1:]:
    if not (ch == "_" or ch.isdigit() or ch.isalpha()):
      raise ValueError(f"Unknown character '{ch}'")


def _is_batching(factor: str) -> bool:
  """BATCHING alone or followed by a group number (BATCHING means group 0)."""
  return bool(factor) and factor[0] == BATCHING and (len(factor) == 1 or factor[1:].isdigit())


class CompoundFactor(tuple):
  """Several factors sharing one dimension, e.g. CompoundFactor('b', 'c') (at least two)."""

  def __new__(cls, *factors):
    return tuple.__new__(CompoundFactor, factors)

  def __init__(self, *factors):
    if len(factors) < 2:
      raise ValueError("A compound factor should contain at least two factors")
    for f in factors:
      if not isinstance(f, str):
        raise ValueError(f"Each element of CompoundFactor must be a str, but got {type(f)}")
      if _is_batching(f):
        raise ValueError("Ellipsis can't be used in a compound factor")
      _check_factor(f)


class ArrayMapping(tuple):
  """The factors of one operand or result, one per dimension: a factor name or a
  CompoundFactor; the first may be BATCHING (any number of leading batch dimensions)."""

  def __new__(cls, *dim_mappings):
    return tuple.__new__(ArrayMapping, dim_mappings)

  def __init__(self, *dim_mappings):
    for i, d in enumerate(dim_mappings):
      if isinstance(d, CompoundFactor):
        continue
      if not isinstance(d, str):
        raise ValueError("Each element of ArrayMapping must be a str or CompoundFactor, but"
                         f" got {type(d)}")
      if _is_batching(d):
        if i != 0:
          raise ValueError("Ellipsis can only be used at the beginning of a dimension")
      else:
        _check_factor(d)


class SdyShardingRule:
  """A Shardy sharding rule: the ArrayMappings of the operands and results, the kinds of the
  special factors (all others pass through) and the sizes of factors that appear only inside
  compound factors."""
  operand_mappings: tuple[ArrayMapping, ...]
  result_mappings: tuple[ArrayMapping, ...]
  factor_sizes: dict[str, int]
  reduction_factors: tuple[str, ...]
  need_replication_factors: tuple[str, ...]
  permutation_factors: tuple[str, ...]

  def __init__(self, operand_mappings: tuple[ArrayMapping, ...],
               result_mappings: tuple[ArrayMapping, ...],
               *, reduction_factors: tuple[str, ...] = (),
               need_replication_factors: tuple[str, ...] = (),
               permutation_factors: tuple[str, ...] = (),
               **factor_sizes: int):
    whole = {}   # factor -> whether it spans a whole dimension somewhere (size inferable)
    for mapping in operand_mappings + result_mappings:
      for d in mapping:
        if isinstance(d, str):
          whole[d] = True
        else:
          for f in d:
            whole.setdefault(f, False)
    for f in factor_sizes:
      if f not in whole:
        raise ValueError(f"Factor {f} is not used in the rule, but size is provided")
    for f, inferable in whole.items():
      if not inferable and f not in factor_sizes:
        raise ValueError(f"Factor {f} is only used in compound factors; must specify its size")
      if inferable and f in factor_sizes:
        raise ValueError(f"Factor {f} represents a whole dimension; do not specify its size")
    seen = set()
    for kind, factors in [("reduction_factors", reduction_factors),
                          ("need_replication_factors", need_replication_factors),
                          ("permutation_factors", permutation_factors)]:
      if not isinstance(factors, tuple):
        raise ValueError(f"{kind} must be a tuple of factors")
      if len(set(factors)) != len(factors):
        raise ValueError(f"{kind} contains duplicated factors")
      for f in factors:
        if f not in whole:
          raise ValueError(f"Factor {f} in {kind} is not used in the rule")
        if f in seen:
          raise ValueError(f"Factor {f} can only be in one of the reduction, need replication,"
                           " or permutation factor sets.")
        seen.add(f)
    self.operand_mappings = operand_mappings
    self.result_mappings = result_mappings
    self.factor_sizes = factor_sizes
    self.reduction_factors = reduction_factors
    self.need_replication_factors = need_replication_factors
    self.permutation_factors = permutation_factors

  def __str__(self):
    extra = "".join(f" {k}={v}" for k, v in [
        ("reduction_factors", self.reduction_factors),
        ("need_replication_factors", self.need_replication_factors),
        ("permutation_factors", self.permutation_factors)] if v)
    return (f"SdyShardingRule({self.operand_mappings}, {self.result_mappings}, "
            f"{self.factor_sizes}{extra})")


def _parse_values(text: str) -> tuple[ArrayMapping, ...]:
  """One side of a rule string ("i j, (a b) k") as ArrayMappings; empty means one scalar."""
  text = " ".join(text.split())
  if not text:
    return (ArrayMapping(),)
  values, dims = [], []
  name = None        # the factor name being read
  compound = None    # the factors of the bracket being read, or None outside brackets

  def emit(f):
    (dims if compound is None else compound).append(f)

  i = 0
  while i < len(text):
    ch = text[i]
    i += 1
    if ch == BATCHING:
      if name is not None or compound is not None or dims:
        raise ValueError("Ellipsis can only be used at the beginning of a dimension")
      j = i
      while j < len(text) and text[j].isdigit():
        j += 1
      emit(BATCHING + (str(int(text[i:j])) if j > i else "0"))
      i = j
      continue
    if ch in "(), ":
      if name is not None:
        emit(name)
        name = None
      if ch == "(":
        if compound is not None:
          raise ValueError("Compound factors should be one level, nested brackets are not"
                           " allowed")
        compound = []
      elif ch == ")":
        if compound is None:
          raise ValueError("Brackets are not balanced")
        if len(compound) <= 1:
          raise ValueError("Brackets should contain at least two factors")
        dims.append(CompoundFactor(*compound))
        compound = None
      elif ch == ",":
        values.append(ArrayMapping(*dims))
        dims = []
    elif ch == "_" or ch.isdigit() or ch.isalpha():
      if name is None and ch.isdigit():
        raise ValueError(f"Factor names have to start with a letter, but got '{ch}'")
      name = ch if name is None else name + ch
    else:
      raise ValueError(f"Unknown character '{ch}'")
  if compound is not None:
    raise ValueError(f"Brackets are not balanced in rule: '{text}'")
  if name is not None:
    emit(name)
  values.append(ArrayMapping(*dims))
  return tuple(values)


def str_to_sdy_sharding_rule(rule: str, *, reduction_factors=(), need_replication_factors=(),
                             permutation_factors=(), **factor_sizes) -> SdyShardingRule:
  """An SdyShardingRule from an einsum-like string such as "... i j, j k -> ... i k"."""
  if not isinstance(rule, str):
    raise TypeError(f"rule must be a str, but got {type(rule)}")
  if not all(isinstance(s, int) for s in factor_sizes.values()):
    raise TypeError(f"factor_sizes must be a dict of str to int, but got {factor_sizes}")
  if BATCHING in rule:
    raise ValueError(f"Unknown character '{BATCHING}'")
  rule = rule.replace("...", BATCHING)
  if "." in rule:
    raise ValueError("Character '.' must be used inside ellipsis '...'")
  sides = rule.split("->")
  if len(sides) != 2:
    raise ValueError(f"There is no -> in rule: '{rule}'")
  return SdyShardingRule(_parse_values(sides[0]), _parse_values(sides[1]),
                         reduction_factors=reduction_factors,
                         need_replication_factors=need_replication_factors,
                         permutation_factors=permutation_factors, **factor_sizes)


# ---- the primitive ---------------------------------------------------------------------------
custom_partitioning_p = core.Primitive("custom_partitioning")
custom_partitioning_p.multiple_results = True


def _cp_abstract_eval(*avals, call, **_):
  return list(call.out_avals)


def _cp_impl(*args, call, **_):
  return core.eval_jaxpr(call.jaxpr, call.consts, *args)


def _cp_lowering(ctx, *args, call, **_):
  # The body inline; XLA's partitioner sees ordinary operations (see the module docstring).
  return common.lower_closed(ctx.module_context, call, args)


custom_partitioning_p.def_abstract_eval(_cp_abstract_eval)
custom_partitioning_p.def_impl(_cp_impl)
custom_partitioning_p.def_lowering(_cp_lowering)
# JAX has no batching rule for it (a partitioned custom call cannot be vmapped).
custom_partitioning_p.def_batch(batching.no_batching_rule("custom_partitioning"))


# ---- the decorator ---------------------------------------------------------------------------
def _positional(fun, args, kwargs):
  bound = inspect.signature(fun).bind(*args, **kwargs)
  bound.apply_defaults()
  if bound.kwargs:
    raise TypeError("keyword arguments could not be resolved to positions")
  return bound.args


class custom_partitioning:
  """Wraps `fun` so that its SPMD partitioning may be given by `def_partition`.

  arrax runs and lowers `fun` itself (the partition callbacks are kept but not called; see
  the module docstring). Arguments at `static_argnums` are passed through untraced.
  """

  def __init__(self, fun, static_argnums=()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.partition = None
    self.static_argnums = static_argnums
    self.propagate_user_sharding = None
    self.infer_sharding_from_operands = None
    self.sharding_rule = None
    self.decode_shardings = True

  def __getattr__(self, name):
    if name == "fun":
      raise AttributeError(name)
    return getattr(self.fun, name)

  def __get__(self, instance, owner=None):
    return self if instance is None else functools.partial(self, instance)

  def def_partition(self, partition, infer_sharding_from_operands=None,
                    propagate_user_sharding=None, decode_shardings=True,
                    sharding_rule=None, *, reduction_factors=(),
                    need_replication_factors=(), permutation_factors=(),
                    **factor_sizes):
    """Record the partitioning callbacks and the sharding rule (a string is parsed into an
    SdyShardingRule; the keyword factor options apply only to a string). Returns
    `partition`."""
    self.partition = partition
    self.propagate_user_sharding = propagate_user_sharding
    self.infer_sharding_from_operands = infer_sharding_from_operands
    self.decode_shardings = decode_shardings
    if sharding_rule is None or callable(sharding_rule) or isinstance(sharding_rule,
                                                                      SdyShardingRule):
      unknown = dict(factor_sizes)
      for k, v in [("reduction_factors", reduction_factors),
                   ("need_replication_factors", need_replication_factors),
                   ("permutation_factors", permutation_factors)]:
        if v:
          unknown[k] = v
      if unknown:
        raise ValueError(f"Unknown keyword arguments: {unknown}")
      self.sharding_rule = sharding_rule
    else:
      self.sharding_rule = str_to_sdy_sharding_rule(
          sharding_rule, reduction_factors=reduction_factors,
          need_replication_factors=need_replication_factors,
          permutation_factors=permutation_factors, **factor_sizes)
    return partition

  def __call__(self, *args, **kwargs):
    args = _positional(self.fun, args, kwargs)
    if self.sharding_rule is None and (self.propagate_user_sharding is not None or
                                       self.infer_sharding_from_operands is not None):
      # arrax partitions as JAX does with Shardy (its default): the callbacks are refused.
      raise NotImplementedError(
          "Shardy is used, but sharding propagation callbacks instead of sharding_rule are "
          "provided. Need to provide sharding_rule to migrate to Shardy.")
    static = set(self.static_argnums)
    static_args = tuple(args[i] for i in self.static_argnums)
    if any(isinstance(x, core.Tracer) for x in tree_leaves(static_args)):
      raise UnexpectedTracerError(
          "Found a JAX Tracer object passed as an argument to a custom_partitioning function "
          "in a position indicated as static by static_argnums.")
    dyn_pos = [i for i in range(len(args)) if i not in static]
    leaves, in_tree = tree_flatten(tuple(args[i] for i in dyn_pos))
    out_box = []

    def flat(*xs):
      full = list(args)
      for i, x in zip(dyn_pos, tree_unflatten(in_tree, xs)):
        full[i] = x
      out_leaves, out_tree = tree_flatten(self.fun(*full))
      out_box.append(out_tree)
      return out_leaves

    jaxpr, consts = trace_to_jaxpr(flat, [core.get_aval(x) for x in leaves])
    out_flat = custom_partitioning_p.bind(
        *consts, *leaves, call=core.ClosedJaxpr(tracing.consts_as_inputs(jaxpr), []),
        decode_shardings=self.decode_shardings, in_tree=in_tree,
        infer_sharding_from_operands=None,
        out_tree=out_box[0], partition=self.partition,
        propagate_user_sharding=None,
        sharding_rule=self.sharding_rule, static_args=static_args)
    return tree_unflatten(out_box[0], out_flat)

