"""jnp.einsum and jnp.einsum_path: Einstein summation as a chain of lax contractions.

The order in which operands are contracted is chosen by the opt_einsum package, called as JAX
calls it, so that the same chain of dot_general / reduce_sum / transpose / diagonal-mask ops is
emitted and jaxprs print alike. Each step of the chain contracts one or two operands:
  * a label that occurs once and is summed away: one reduce_sum over those axes;
  * a label repeated within one operand: a Kronecker-delta mask (iota == iota) selects the
    diagonal, then the repeated axes are summed (all of them, or all but one if the label is
    still needed);
  * two operands: one dot_general (batch labels shared by both and kept, contracting labels
    shared and summed), then a transpose into the order the next step expects.
"""
from __future__ import annotations

import collections
import functools
import itertools

import numpy as np
import opt_einsum

from arrax._src import core, dtypes
from arrax._src.jit import jit
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import elementwise as lax_ew
from arrax._src.lax import reductions as lax_reductions
from arrax._src.lax import shape_ops
from arrax._src.lax import utils as lax_utils
from arrax._src.numpy import lax_numpy, util


class _InOrder(opt_einsum.paths.PathOptimizer):
  """The unoptimized path (optimize=False): always contract the first two operands."""

  def __call__(self, inputs, output, size_dict, memory_limit=None):
    return [(0, 1)] * (len(inputs) - 1)


def _path_optimizer(optimize):
  if optimize is True:
    return "optimal"
  if optimize is False:
    return _InOrder()
  return optimize


def _unwrap(x):
  """Objects defining __jax_array__ are replaced by the array they stand for."""
  m = getattr(x, "__jax_array__", None)
  return m() if m is not None and not isinstance(x, str) else x


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=lax_dot.dot_general, out_sharding=None):
  """Einstein summation over the operands, as numpy.einsum.

  Called as ``einsum('ij,jk->ik', a, b)`` (explicit output), ``einsum('ij,jk', a, b)``
  (implicit: the labels used once, alphabetically) or in the interleaved form
  ``einsum(a, [0, 1], b, [1, 2], [0, 2])``; ``...`` stands for broadcast leading axes.

  Args:
    subscripts: the comma-separated labels of each operand (or the first operand of the
      interleaved form).
    *operands: the arrays (and, in the interleaved form, their label lists).
    out: not supported (must be None).
    optimize: how opt_einsum orders the pairwise contractions: ``'auto'`` (default),
      ``True`` (``'optimal'``), ``False`` (left to right), any opt_einsum strategy name
      (``'greedy'``, ``'optimal'``, ...) or an explicit path as returned by ``einsum_path``.
    precision: the ``lax.Precision`` of the dot_general contractions.
    preferred_element_type: the accumulation and result dtype (default: the promoted dtype
      of the operands).

  Returns:
    The contracted array.

  >>> jnp.einsum('ij,j->i', jnp.ones((2, 3)), jnp.arange(3.))
  Array([3., 3.], dtype=float32)
  >>> jnp.einsum('ii', jnp.eye(3))
  Array(3., dtype=float32)
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.einsum is not supported.")
  out_sharding = lax_utils._out_sharding(out_sharding)
  args = tuple(_unwrap(x) for x in (subscripts, *operands))
  # opt_einsum parses the subscripts (both call forms) and orders the contractions; with
  # einsum_call=True it hands back the operands and one tuple per contraction step.
  arrays, steps = opt_einsum.contract_path(*args, einsum_call=True, use_blas=True,
                                           optimize=_path_optimizer(optimize))
  contractions = tuple((tuple(inds), frozenset(removed), spec)
                       for inds, removed, spec, *_ in steps)
  util.check_arraylike("einsum", *arrays)
  arrays = [util.ensure_arraylike("einsum", x) for x in arrays]
  if out_sharding is not None and len(contractions) > 1:
    # (as JAX: the contractions run with the mesh axes Auto, the result is then resharded)
    def contract(arrs):
      return _einsum_jit(arrs, contractions, precision, preferred_element_type, _dot_general,
                         None)
    return util.auto_axes_hook[0](contract, out_sharding=out_sharding)(arrays)
  return _einsum_jit(arrays, contractions, precision, preferred_element_type, _dot_general,
                     out_sharding)


def einsum_path(subscripts, /, *operands, optimize="auto"):
  """The contraction order einsum would use, without computing anything.

  Returns (path, info): ``path`` is a list of operand-position tuples that can be passed as
  ``einsum(..., optimize=path)``; ``info`` prints opt_einsum's report (scaling, FLOP counts
  and each step's contraction).

  >>> path, info = jnp.einsum_path('ij,jk,kl', jnp.ones((2, 3)), jnp.ones((3, 50)),
  ...                              jnp.ones((50, 4)), optimize='optimal')
  >>> path
  [(1, 2), (0, 1)]
  """
  return opt_einsum.contract_path(subscripts, *operands, optimize=_path_optimizer(optimize))


def _drop(names, chars):
  return "".join(c for c in names if c not in chars)


def _sum(x, axes, pet):
  """Sum x over axes (OR for booleans), first widening x to `pet` if that is wider."""
  if dtypes.result_type(x, pet) != core.get_aval(x).dtype:
    x = lax_numpy.astype(x, pet)
  dtype = core.get_aval(x).dtype
  monoid = lax_ew.bitwise_or if dtype == np.bool_ else lax_ew.add
  return lax_reductions.reduce(x, np.array(0, dtype), monoid, axes)


def _sum_uniques(x, names, uniques, pet):
  if not uniques:
    return x, names
  x = _sum(x, [names.index(n) for n in uniques], pet)
  return x, _drop(names, uniques)


def _delta(shape, axes):
  """Boolean mask of `shape` that is True where the coordinates on `axes` are all equal."""
  axes = [int(a) for a in axes]
  sub = tuple(shape[a] for a in axes)
  iotas = [shape_ops.broadcasted_iota(np.uint32, sub, i) for i in range(len(sub))]
  same = functools.reduce(lax_ew.bitwise_and,
                          [lax_ew.eq(i, j) for i, j in itertools.pairwise(iotas)])
  if sub == tuple(shape):   # the mask already has the operand's shape (axes are all of them)
    return same
  return shape_ops.broadcast_in_dim(same, tuple(shape), tuple(axes))


def _sum_repeats(x, names, counts, keep, pet):
  """Reduce every label repeated in `names` to its diagonal (kept once if it is in `keep`)."""
  for name, count in counts.items():
    if count < 2:
      continue
    axes = [i for i, n in enumerate(names) if n == name]
    aval = core.get_aval(x)
    mask = _delta(aval.shape, axes)
    zero = shape_ops.broadcast_in_dim(lax_ew.scalar_literal(0, aval.dtype, aval.weak_type),
                                      aval.shape, ())
    x = lax_ew.select(mask, x, zero)
    if name in keep:
      x = _sum(x, axes[:-1], pet)
      names = names.replace(name, "", count - 1)
    else:
      x = _sum(x, axes, pet)
      names = names.replace(name, "")
  return x, names


def _squeeze_unmatched_ones(x, names, other_shape, other_names):
  """Drop size-1 axes whose label has a size other than 1 in the other operand."""
  shape = core.get_aval(x).shape
  drop, kept = [], []
  for i, n in enumerate(names):
    j = other_names.find(n)
    if shape[i] == 1 and j != -1 and other_shape[j] != 1:
      drop.append(i)
    else:
      kept.append(i)
  if not drop:
    return x, names
  return shape_ops.squeeze(x, drop), "".join(names[i] for i in kept)


def _contract_one(x, names, contracted, result_names, pet):
  counts = collections.Counter(names)
  x, names = _sum_uniques(x, names, [n for n in contracted if counts[n] == 1], pet)
  return _sum_repeats(x, names, counts, result_names, pet)


def _contract_two(lhs, rhs, lhs_names, rhs_names, contracted, result_names, precision, pet,
                  dot_general, out_sharding=None):
  lhs, lhs_names = _squeeze_unmatched_ones(lhs, lhs_names, core.get_aval(rhs).shape, rhs_names)
  rhs, rhs_names = _squeeze_unmatched_ones(rhs, rhs_names, core.get_aval(lhs).shape, lhs_names)
  lcount, rcount = collections.Counter(lhs_names), collections.Counter(rhs_names)
  lhs, lhs_names = _sum_uniques(
      lhs, lhs_names, [n for n in contracted if lcount[n] == 1 and rcount[n] == 0], pet)
  rhs, rhs_names = _sum_uniques(
      rhs, rhs_names, [n for n in contracted if rcount[n] == 1 and lcount[n] == 0], pet)
  lhs, lhs_names = _sum_repeats(lhs, lhs_names, lcount, result_names + rhs_names, pet)
  rhs, rhs_names = _sum_repeats(rhs, rhs_names, rcount, result_names + lhs_names, pet)

  present = set(lhs_names) | set(rhs_names)
  contracted = [n for n in contracted if n in present]
  shared = set(lhs_names) & set(rhs_names)
  batch = "".join(n for n in result_names if n in shared)
  lhs_batch = tuple(lhs_names.find(n) for n in batch)
  rhs_batch = tuple(rhs_names.find(n) for n in batch)
  lshape, rshape = core.get_aval(lhs).shape, core.get_aval(rhs).shape
  for n in contracted:
    if (n not in lhs_names or n not in rhs_names
        or lshape[lhs_names.index(n)] != rshape[rhs_names.index(n)]):
      raise ValueError(f"einsum: incompatible contraction of label {n!r}: lhs shape {lshape} "
                       f"labels {lhs_names!r}, rhs shape {rshape} labels {rhs_names!r}")
  lhs_cont = tuple(lhs_names.index(n) for n in contracted)
  rhs_cont = tuple(rhs_names.index(n) for n in contracted)
  gone = batch + "".join(contracted)
  lhs_rest, rhs_rest = _drop(lhs_names, gone), _drop(rhs_names, gone)
  # opt_einsum tends to order labels as (rhs, lhs); dotting in that order first can spare the
  # final transpose.
  names = batch + rhs_rest + lhs_rest
  extra = {} if out_sharding is None else {"out_sharding": out_sharding}
  if names == result_names:
    return dot_general(rhs, lhs, ((rhs_cont, lhs_cont), (rhs_batch, lhs_batch)), precision,
                       preferred_element_type=pet, **extra), names
  names = batch + lhs_rest + rhs_rest
  if out_sharding is not None and names != result_names:   # (as the result's axes come out)
    spec = tuple(out_sharding.spec.partitions) + (None,) * (
        len(result_names) - len(out_sharding.spec))
    extra = {"out_sharding": out_sharding.update(
        spec=type(out_sharding.spec)(*(spec[result_names.index(n)] for n in names)))}
  return dot_general(lhs, rhs, ((lhs_cont, rhs_cont), (lhs_batch, rhs_batch)), precision,
                     preferred_element_type=pet, **extra), names


def _einsum(operands, contractions, precision, preferred_element_type, dot_general,
            out_sharding=None):
  if preferred_element_type is None:
    pet, weak = dtypes.result_type(*operands, return_weak_type_flag=True)
  else:
    pet, weak = dtypes.check_user_dtype(preferred_element_type, "einsum"), False
  operands = list(operands)
  for positions, removed, spec in contractions:
    contracted = sorted(removed)
    inputs, result_names = spec.split("->")
    input_names = inputs.split(",")
    if len(positions) == 1:
      x = operands.pop(positions[0])
      x, names = _contract_one(x, input_names[0], contracted, result_names, pet)
    elif len(positions) == 2:
      lhs, rhs = (operands.pop(p) for p in positions)
      x, names = _contract_two(lhs, rhs, *input_names, contracted, result_names, precision,
                               pet, dot_general, out_sharding)
    else:
      raise NotImplementedError(
          "jnp.einsum contracts at most two operands per step; a path step naming "
          f"{len(positions)} operands ({positions}) was given in `optimize`.")
    if names != result_names:
      x = shape_ops.transpose(x, tuple(names.index(n) for n in result_names))
    operands.append(x)
  return lax_ew._convert_element_type(operands[0], pet, weak)


_einsum_jit = jit(_einsum, static_argnums=(1, 2, 3, 4, 5), inline=True)
