"""Sharding annotations on one device: `with_sharding_constraint` (the `sharding_constraint`
primitive) and the `device_put` primitive.

arrax runs every computation on a single device, so both primitives are the identity on
values; they exist so that programs using them run and transform as in JAX. A sharding is
accepted when it places an array on one device (a jaxlib Device, or a sharding object over a
single device); anything else raises.
"""
from __future__ import annotations

from arrax._src import ad, batching, core
from arrax._src.lax.utils import asarray_operand
from arrax._src.tree_util import tree_flatten, tree_unflatten

__all__ = ["device_put_p", "sharding_constraint_p", "with_sharding_constraint"]


def _identity_primitive(name):
  prim = core.Primitive(name)
  prim.def_abstract_eval(lambda x, **params: x)
  prim.def_lowering(lambda ctx, x, **params: [x])
  prim.def_batch(lambda args, dims, **params: (prim.bind(*args, **params), dims[0]))
  ad.deflinear(prim, lambda ct, x, **params: [ct if type(ct) is ad.Zero
                                              else prim.bind(ct, **params)])
  return prim


# The identity with JAX's params (sharding, layout, context_mesh, unconstrained_dims).
sharding_constraint_p = _identity_primitive("sharding_constraint")
# The identity on any number of operands, with JAX's params (devices, srcs, copy_semantics:
# one entry per operand).
device_put_p = core.Primitive("device_put")
device_put_p.multiple_results = True
device_put_p.def_abstract_eval(lambda *avals, **params: list(avals))
device_put_p.def_lowering(lambda ctx, *args, **params: list(args))
device_put_p.def_batch(lambda args, dims, **params: (device_put_p.bind(*args, **params),
                                                     list(dims)))
ad.deflinear(device_put_p, lambda cts, *args, **params: device_put_p.bind(
    *[ad.instantiate(ct) for ct in cts], **params))


def _single_device(s):
  """Whether `s` places an array on one device."""
  if hasattr(s, "platform") and hasattr(s, "id"):   # a Device
    return True
  try:
    devices = s._internal_device_list
  except Exception:  # noqa: BLE001  (not a sharding)
    return False
  return len(devices) == 1


def with_sharding_constraint(x, shardings):
  """x (a pytree of arrays) constrained to `shardings` (a tree prefix of x). On arrax's single
  device this is the identity; shardings must place arrays on one device."""
  leaves, tree = tree_flatten(x)
  per_leaf = batching.flatten_axes("with_sharding_constraint shardings", tree, shardings)
  outs = []
  for leaf, s in zip(leaves, per_leaf):
    if s is None:
      raise ValueError(f"One of with_sharding_constraint arguments got sharding {s} which is "
                       "not allowed. Please only pass `jax.sharding.Sharding` instances.")
    if not (hasattr(s, "_internal_device_list") or type(s).__name__ == "PartitionSpec"
            or (hasattr(s, "platform") and hasattr(s, "id"))):
      raise TypeError("shardings leaf specifications are expected to be PartitionSpec "
                      f"instances or None, but got {s}")
    if not _single_device(s):
      raise NotImplementedError(f"with_sharding_constraint: arrax runs on a single device and "
                                f"cannot apply the sharding {s!r}.")
    outs.append(sharding_constraint_p.bind(asarray_operand(leaf), sharding=s, layout=None,
                                           context_mesh=None, unconstrained_dims=frozenset()))
  return tree_unflatten(tree, outs)
