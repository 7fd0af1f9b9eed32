"""grad, value_and_grad, jacfwd, jacrev (jacobian) with sparse arguments: each sparse
argument is differentiated through its `data` only, and its gradient is the sparse array with
the same indices holding the data's gradient."""
from __future__ import annotations

import functools
import operator

from arrax._src import ad_api, core
from arrax._src.batching import vmap
from arrax._src.sparse._base import JAXSparse
from arrax._src.tree_util import tree_flatten, tree_unflatten


def _is_sparse(x):
  return isinstance(x, JAXSparse)


def _argnums(argnums):
  if isinstance(argnums, int) or not hasattr(argnums, "__iter__"):
    return (operator.index(argnums),), True
  return tuple(map(operator.index, argnums)), False


def _flatten_for_sparse_ad(fun, argnums, args):
  nums, single = _argnums(argnums)
  info = {}
  new_args = list(args)
  for i in nums:
    leaves, tree = tree_flatten(args[i], is_leaf=_is_sparse)
    info[i] = (tree, leaves)
    new_args[i] = [x.data if _is_sparse(x) else x for x in leaves]

  def rebuild(leaf, g):
    bufs, t = tree_flatten(leaf)
    f = lambda g: tree_unflatten(t, [g, *bufs[1:]])
    for _ in range(g.ndim - bufs[0].ndim):
      f = vmap(f)
    return f(g)

  def fun_flat(*a, **kw):
    full = list(a)
    for i in nums:
      tree, leaves = info[i]
      full[i] = tree_unflatten(tree, [rebuild(x, d) if _is_sparse(x) else d
                                      for x, d in zip(leaves, a[i])])
    return fun(*full, **kw)

  def post(grads):
    grads = (grads,) if single else grads
    out = []
    for i, g in zip(nums, grads):
      tree, leaves = info[i]
      out.append(tree_unflatten(tree, [rebuild(x, d) if _is_sparse(x) else d
                                       for x, d in zip(leaves, g)]))
    return out[0] if single else tuple(out)
  return fun_flat, new_args, post


def _make(transform, fun, argnums, has_aux, kwargs, *, value=False):
  argnums = core.concrete_or_error(lambda a: _argnums(a) and a, argnums)

  @functools.wraps(fun)
  def wrapped(*args, **kw):
    fun_flat, flat_args, post = _flatten_for_sparse_ad(fun, argnums, args)
    out = transform(fun_flat, argnums=argnums, has_aux=has_aux, **kwargs)(*flat_args, **kw)
    if value:
      (val, g) = out
      return val, post(g)
    if has_aux:
      return post(out[0]), out[1]
    return post(out)
  return wrapped


def grad(fun, argnums=0, has_aux=False, **kwargs):
  """`grad` of `fun`; gradients of sparse arguments are sparse (their data's gradient)."""
  return _make(ad_api.grad, fun, argnums, has_aux, kwargs)


def value_and_grad(fun, argnums=0, has_aux=False, **kwargs):
  """`value_and_grad` of `fun`; gradients of sparse arguments are sparse."""
  return _make(ad_api.value_and_grad, fun, argnums, has_aux, kwargs, value=True)


def jacfwd(fun, argnums=0, has_aux=False, **kwargs):
  """`jacfwd` of `fun`; Jacobians with respect to sparse arguments are sparse."""
  return _make(ad_api.jacfwd, fun, argnums, has_aux, kwargs)


def jacrev(fun, argnums=0, has_aux=False, **kwargs):
  """`jacrev` of `fun`; Jacobians with respect to sparse arguments are sparse."""
  return _make(ad_api.jacrev, fun, argnums, has_aux, kwargs)


jacobian = jacrev
