"""Format-independent sparse API: `todense` (the `todense` primitive over a flattened sparse
array), `empty` and `eye` in any format."""
from __future__ import annotations

import operator

from arrax._src import ad, core
from arrax._src.batching import vmap
from arrax._src.lax.control_flow import common
from arrax._src.sparse._base import JAXSparse
from arrax._src.sparse.bcoo import BCOO, _bcoo_extract
from arrax._src.sparse.bcsr import BCSR, bcsr_extract
from arrax._src.sparse.coo import COO
from arrax._src.sparse.csr import CSC, CSR
from arrax._src.tree_util import tree_flatten, tree_unflatten

todense_p = core.Primitive("todense")


def _todense_impl(*bufs, tree):
  arr = tree_unflatten(tree, list(bufs))
  return arr.todense() if isinstance(arr, JAXSparse) else arr


@todense_p.def_abstract_eval
def _todense_abstract_eval(*avals, tree):
  arr = tree_unflatten(tree, list(avals))
  if isinstance(arr, core.ShapedArray):
    return arr
  return core.ShapedArray(arr.shape, arr.dtype, avals[0].weak_type)


todense_p.def_lowering(common.lower_fun(lambda *bufs, tree: [_todense_impl(*bufs, tree=tree)]))
todense_p.def_batch(lambda args, dims, *, tree: (
    vmap(lambda *b: _todense_impl(*b, tree=tree), in_axes=tuple(dims))(*args), 0))


@todense_p.def_jvp
def _todense_jvp(primals, tangents, *, tree):
  out = todense_p.bind(*primals, tree=tree)
  if type(tangents[0]) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(core.get_aval(out)))
  return out, todense_p.bind(tangents[0], *primals[1:], tree=tree)


@todense_p.def_transpose
def _todense_transpose(ct, *bufs, tree):
  standin = object()
  obj = tree_unflatten(tree, [standin] * len(bufs))
  ct = ad.instantiate(ct)
  if obj is standin:
    return [ct]
  if isinstance(obj, BCOO):
    return [_bcoo_extract(bufs[1], ct), None]
  if isinstance(obj, BCSR):
    return [bcsr_extract(bufs[1], bufs[2], ct), None, None]
  if isinstance(obj, COO):
    return [ct[bufs[1], bufs[2]], None, None]
  raise NotImplementedError(f"todense_transpose for {type(obj)}")


def todense(arr):
  """The dense array of a sparse array (any format); a dense array passes through."""
  bufs, tree = tree_flatten(arr)
  if not any(isinstance(b, core.Tracer) for b in bufs):
    return _todense_impl(*bufs, tree=tree)   # eagerly, the format's todense (as JAX's impl)
  return todense_p.bind(*bufs, tree=tree)


_FORMATS = {"bcsr": BCSR, "bcoo": BCOO, "coo": COO, "csr": CSR, "csc": CSC}


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
  """A sparse array of `shape` with no stored elements, in `sparse_format`."""
  if sparse_format not in _FORMATS:
    raise ValueError(f"sparse_format={sparse_format!r} not recognized; must be one of "
                     f"{list(_FORMATS.keys())}")
  return _FORMATS[sparse_format]._empty(tuple(shape), dtype=dtype, index_dtype=index_dtype,
                                        **kwds)


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
  """The sparse N x M matrix with ones on its k-th diagonal, in `sparse_format`."""
  formats = {"bcoo": BCOO, "coo": COO, "csr": CSR, "csc": CSC}
  if M is None:
    M = N
  N = core.concrete_or_error(operator.index, N)
  M = core.concrete_or_error(operator.index, M)
  k = core.concrete_or_error(operator.index, k)
  return formats[sparse_format]._eye(M=M, N=N, k=k, dtype=dtype, index_dtype=index_dtype,
                                     **kwds)
