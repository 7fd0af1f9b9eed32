"""Sparse testing helpers (`jax.experimental.sparse.test_util`): random BCOO/BCSR and
sparse-valued dense generators, layout iterators, and `SparseTestCase`, whose checks compare
a sparse operation with its dense counterpart (values, jit, gradients, batching)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
import functools
import itertools
import math
from typing import Any, NamedTuple

import numpy as np

from arrax._src import test_util as tu
from arrax._src.ad_api import jacfwd, jacrev
from arrax._src.batching import vmap
from arrax._src.jit import jit
from arrax._src.lax.broadcasting import expand_dims
from arrax._src.lax.precision import DotDimensionNumbers
from arrax._src.lax.shape_ops import concatenate
from arrax._src.numpy.creation import array
from arrax._src.numpy.lax_numpy import sort
from arrax._src.sparse._base import JAXSparse
from arrax._src.sparse.api import todense
from arrax._src.sparse.bcoo import BCOO
from arrax._src.sparse.bcsr import BCSR
from arrax._src.sparse.transform import sparsify
from arrax._src.tree_util import tree_flatten, tree_map, tree_unflatten

MATMUL_TOL = {
    np.float32: 1e-5,
    np.float64: 1e-10,
    np.complex64: 1e-5,
    np.complex128: 1e-10,
}


def is_sparse(x):
  return isinstance(x, JAXSparse)


class BatchedDotGeneralProperties(NamedTuple):
  lhs_shape: tuple[int, ...]
  rhs_shape: tuple[int, ...]
  n_batch: int
  n_dense: int
  dimension_numbers: DotDimensionNumbers


class SparseLayout(NamedTuple):
  n_batch: int
  n_dense: int
  n_sparse: int


def _densify(tree):
  return tree_map(todense, tree, is_leaf=is_sparse)


class SparseTestCase(tu.JaxTestCase):
  """A test case with checks of sparse operations against their dense counterparts."""

  def assertSparseArraysEquivalent(self, x, y, *, check_dtypes=True, atol=None, rtol=None,
                                   canonicalize_dtypes=True, err_msg=""):
    """Same pytree structure (sparse format, shape, layout) and close buffers."""
    x_bufs, x_tree = tree_flatten(x)
    y_bufs, y_tree = tree_flatten(y)
    self.assertEqual(x_tree, y_tree)
    self.assertAllClose(x_bufs, y_bufs, check_dtypes=check_dtypes, atol=atol, rtol=rtol,
                        canonicalize_dtypes=canonicalize_dtypes, err_msg=err_msg)

  def _CheckAgainstDense(self, dense_op, sparse_op, args_maker, check_jit=True,
                         check_dtypes=True, tol=None, atol=None, rtol=None,
                         canonicalize_dtypes=True):
    """Asserts that `sparse_op` gives what `dense_op` gives on the densified arguments."""
    sparse_args = args_maker()
    expected = dense_op(*_densify(sparse_args))
    sparse_ans = sparse_op(*sparse_args)
    self.assertAllClose(expected, _densify(sparse_ans), check_dtypes=check_dtypes,
                        atol=atol or tol, rtol=rtol or tol,
                        canonicalize_dtypes=canonicalize_dtypes)
    if check_jit:
      self.assertSparseArraysEquivalent(sparse_ans, jit(sparse_op)(*sparse_args),
                                        atol=atol or tol, rtol=rtol or tol)

  def _CheckGradsSparse(self, dense_fun, sparse_fun, args_maker, *, argnums=None,
                        modes=("fwd", "rev"), atol=None, rtol=None):
    assert all(mode in ("fwd", "rev") for mode in modes)
    args = args_maker()
    args_flat, tree = tree_flatten(args)
    # (each argument's first buffer: a sparse array's data)
    sizes = [len(tree_flatten(a)[0]) for a in args]
    argnums_flat = np.cumsum([0, *sizes[:-1]]).tolist()
    if argnums is not None:
      argnums_flat = [argnums_flat[n] for n in argnums]

    def dense_flat(*xs):
      return dense_fun(*_densify(tree_unflatten(tree, xs)))

    def sparse_flat(*xs):
      return _densify(sparse_fun(*tree_unflatten(tree, xs)))

    for mode, jac in (("rev", jacrev), ("fwd", jacfwd)):
      if mode in modes:
        self.assertAllClose(jac(dense_flat, argnums=argnums_flat)(*args_flat),
                            jac(sparse_flat, argnums=argnums_flat)(*args_flat),
                            atol=atol, rtol=rtol)

  def _random_bdims(self, *args):
    rng = self.rng()
    return [rng.randint(0, arg + 1) for arg in args]

  def _CheckBatchingSparse(self, dense_fun, sparse_fun, args_maker, *, batch_size=3,
                           bdims=None, check_jit=False, check_dtypes=True, tol=None, atol=None,
                           rtol=None, canonicalize_dtypes=True):
    if bdims is None:
      bdims = self._random_bdims(*(a.n_batch if is_sparse(a) else a.ndim
                                   for a in args_maker()))

    def concat(xs, bdim):
      return sparsify(functools.partial(concatenate, dimension=bdim))(xs)

    def expand(x, bdim):
      return sparsify(functools.partial(expand_dims, dimensions=[bdim]))(x)

    def batched_args_maker():
      per_arg = list(zip(*(args_maker() for _ in range(batch_size))))
      if len(per_arg) != len(bdims):
        raise ValueError(f"{len(per_arg)} arguments but {len(bdims)} batch dimensions")
      return [xs[0] if bdim is None else concat([expand(x, bdim) for x in xs], bdim)
              for xs, bdim in zip(per_arg, bdims)]

    self._CheckAgainstDense(vmap(dense_fun, bdims), vmap(sparse_fun, bdims), batched_args_maker,
                            check_dtypes=check_dtypes, tol=tol, atol=atol, rtol=rtol,
                            check_jit=check_jit, canonicalize_dtypes=canonicalize_dtypes)


def _rand_sparse(shape: Sequence[int], dtype, *, rng: np.random.RandomState,
                 rand_method: Callable[..., Any], nse: int | float, n_batch: int, n_dense: int,
                 sparse_format: str) -> BCOO | BCSR:
  if sparse_format not in ("bcoo", "bcsr"):
    raise ValueError(f"Sparse format {sparse_format} not supported.")
  n_sparse = len(shape) - n_batch - n_dense
  if n_sparse < 0 or n_batch < 0 or n_dense < 0:
    raise ValueError(f"Invalid parameters: {shape=} {n_batch=} {n_sparse=}")
  if sparse_format == "bcsr" and n_sparse != 2:
    raise ValueError(f"bcsr array must have 2 sparse dimensions; {n_sparse} is given.")
  batch_shape = list(shape[:n_batch])
  sparse_shape = list(shape[n_batch:n_batch + n_sparse])
  dense_shape = list(shape[n_batch + n_sparse:])
  if 0 <= nse < 1:   # a fraction of the sparse elements
    nse = int(np.ceil(nse * np.prod(sparse_shape)))
  nse = int(nse)
  # (host draws in JAX's order: data, then indices, then indptr)
  data = array(rand_method(rng)((*batch_shape, nse, *dense_shape), dtype))
  i32 = np.dtype("int32")
  if sparse_format == "bcoo":
    indices = rng.randint(0, sparse_shape, size=(*batch_shape, nse, n_sparse), dtype=i32)
    return BCOO((data, array(indices)), shape=shape)
  indices = rng.randint(0, sparse_shape[1], size=(*batch_shape, nse), dtype=i32)
  indptr = sort(array(rng.randint(0, nse + 1, size=(*batch_shape, sparse_shape[0] + 1),
                                  dtype=i32)), axis=-1)
  indptr = indptr.at[..., 0].set(0)
  return BCSR((data, array(indices), indptr), shape=shape)


def rand_bcoo(rng: np.random.RandomState, rand_method: Callable[..., Any] = tu.rand_default,
              nse: int | float = 0.5, n_batch: int = 0, n_dense: int = 0):
  """Generates a random BCOO array."""
  return functools.partial(_rand_sparse, rng=rng, rand_method=rand_method, nse=nse,
                           n_batch=n_batch, n_dense=n_dense, sparse_format="bcoo")


def rand_bcsr(rng: np.random.RandomState, rand_method: Callable[..., Any] = tu.rand_default,
              nse: int | float = 0.5, n_batch: int = 0, n_dense: int = 0):
  """Generates a random BCSR array."""
  return functools.partial(_rand_sparse, rng=rng, rand_method=rand_method, nse=nse,
                           n_batch=n_batch, n_dense=n_dense, sparse_format="bcsr")


def iter_subsets(s: Sequence) -> Iterable[tuple]:
  """Every subset of `s`, as tuples in order of size (the empty one first)."""
  return itertools.chain.from_iterable(itertools.combinations(s, n) for n in range(len(s) + 1))


def iter_sparse_layouts(shape: Sequence[int], min_n_batch=0) -> Iterator[SparseLayout]:
  """Every (n_batch >= min_n_batch, n_dense, n_sparse) split of `shape`."""
  for n_batch in range(min_n_batch, len(shape) + 1):
    for n_dense in range(len(shape) + 1 - n_batch):
      yield SparseLayout(n_batch=n_batch, n_sparse=len(shape) - n_batch - n_dense,
                         n_dense=n_dense)


def iter_bcsr_layouts(shape: Sequence[int], min_n_batch=0) -> Iterator[SparseLayout]:
  """The splits of `shape` with two sparse dimensions (BCSR's)."""
  for n_batch in range(min_n_batch, len(shape) - 1):
    yield SparseLayout(n_batch=n_batch, n_sparse=2, n_dense=len(shape) - 2 - n_batch)


def rand_sparse(rng, nse=0.5, post=lambda x: x, rand_method=tu.rand_default):
  """A generator of dense NumPy arrays with at most `nse` nonzeros (a fraction if < 1)."""
  def _rand_sparse(shape, dtype, nse=nse):
    rand = rand_method(rng)
    size = math.prod(shape)
    if 0 <= nse < 1:
      nse = nse * size
    nse = min(size, int(nse))
    M = rand(shape, dtype)
    M.flat[rng.choice(size, size - nse, replace=False)] = 0
    return post(M)
  return _rand_sparse
