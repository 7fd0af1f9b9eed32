"""`jax.experimental.shard_alike`: ask the partitioner to lay two values out alike.

One primitive, `shard_alike` (two operands of equal shape, both returned unchanged). Its only
effect is a layout hint for XLA's partitioner: JAX lowers it to a Shardy sharding group.
arrax compiles sharded programs with GSPMD and lowers it to its operands, so the values are
right everywhere but the hint is not passed on (XLA propagates layouts on its own). Linear:
the JVP applies it to the tangents, the transpose to the cotangents; a batch axis is matched
between the two operands.
"""
from __future__ import annotations

from arrax._src import ad, batching, core
from arrax._src.tree_util import tree_flatten, tree_unflatten

shard_alike_p = core.Primitive("shard_alike")
shard_alike_p.multiple_results = True
shard_alike_p.def_abstract_eval(lambda x, y: [x, y])
shard_alike_p.def_lowering(lambda ctx, x, y: [x, y])


def _transpose(cts, x, y):
  x_ct, y_ct = cts
  if type(x_ct) is ad.Zero or type(y_ct) is ad.Zero:
    return [x_ct, y_ct]
  return shard_alike_p.bind(x_ct, y_ct)


ad.deflinear(shard_alike_p, _transpose)


def _batch(args, dims):
  (x, y), (xd, yd) = args, dims
  if xd is None:
    x, xd = batching.broadcast(x, core.get_aval(y).shape[yd], yd), yd
  elif yd is None:
    y, yd = batching.broadcast(y, core.get_aval(x).shape[xd], xd), xd
  elif xd != yd:
    y, yd = batching.moveaxis(y, yd, xd), xd
  return shard_alike_p.bind(x, y), [xd, yd]


shard_alike_p.def_batch(_batch)


def shard_alike(x, y):
  """`(x, y)` unchanged, with the request that XLA lay them out alike (pytrees of one
  structure whose leaves pair up with equal shapes)."""
  x_flat, x_tree = tree_flatten(x)
  y_flat, y_tree = tree_flatten(y)
  if x_tree != y_tree:
    raise ValueError(f"Trees should be equal. Got x_tree: {x_tree}, y_tree: {y_tree}")
  for a, b in zip(x_flat, y_flat):
    a_shape, b_shape = core.get_aval(a).shape, core.get_aval(b).shape
    if a_shape != b_shape:
      raise ValueError(
          f"The leaves shapes of `x` and `y` should match. Got `x` leaf shape: {a_shape} and "
          f"`y` leaf shape: {b_shape}. (arrax, like JAX, pairs leaves of one shape only.)")
  outs = [shard_alike_p.bind(a, b) for a, b in zip(x_flat, y_flat)]
  return (tree_unflatten(x_tree, [o[0] for o in outs]),
          tree_unflatten(y_tree, [o[1] for o in outs]))
