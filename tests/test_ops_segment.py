"""jax.ops segment reductions against JAX: values, dtypes, jaxprs, jit, grad, vmap, errors."""
import inspect

import jax
import numpy as np
import pytest

import arrax
from arrax.test_util import check_grads
from tests.oracle import BF16, check, check_all, check_jaxpr, check_raises, rand

NAMES = ["segment_sum", "segment_prod", "segment_max", "segment_min"]
DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.float16, BF16, np.float32, np.complex64]


def _op(name, **kw):
  return lambda top, data, ids: getattr(top.ops, name)(data, ids, **kw)


def _build(make, lib):
  return lambda *a: make(lib.top, *a)


@pytest.mark.parametrize("name", NAMES)
def test_signature(name):
  assert (inspect.signature(getattr(arrax.ops, name))
          == inspect.signature(getattr(jax.ops, name)).replace(return_annotation=inspect._empty)
          .replace(parameters=[p.replace(annotation=inspect._empty) for p in
                               inspect.signature(getattr(jax.ops, name)).parameters.values()]))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_values_dtypes(name, dtype):
  ids = np.array([0, 2, 2, 1, 0, 4, 2], np.int32)
  tol = 2e-2 if dtype in (np.float16, BF16) else None
  cases = []
  for shape in [(7,), (7, 3), (7, 0, 2)]:
    data = rand(shape, dtype, seed=len(shape))
    for kw in [{}, {"num_segments": 3, "bucket_size": 3}]:
      cases.append((f"{shape} {kw}", lambda d=data, kw=kw: check(
          _op(name, **kw), d, ids, build=_build, tol=tol)))
  check_all(cases)


@pytest.mark.parametrize("name", NAMES)
def test_options(name):
  ids = np.array([0, 2, 2, 1, 0, 4, 2], np.int32)
  data = rand((7, 2), np.float32)
  check_all([(str(kw), lambda kw=kw: check(_op(name, **kw), data, ids, build=_build))
             for kw in [{"num_segments": 6}, {"num_segments": 3}, {"num_segments": 0},
                        {"num_segments": 5, "indices_are_sorted": True},
                        {"num_segments": 5, "unique_indices": True},
                        {"num_segments": 5, "mode": "clip"},
                        {"num_segments": 5, "mode": "promise_in_bounds"},
                        {"num_segments": 5, "bucket_size": 3}, {"bucket_size": 1}]])


@pytest.mark.parametrize("name", NAMES)
def test_edge_ids(name):
  data = rand((6, 2), np.float32)
  cases = []
  for ids in [np.array([-1, 0, 7, 1, 1, 3], np.int32),      # out of range: dropped
              np.array([0, 0, 0, 0, 0, 0], np.int64),       # one segment
              np.array([5, 4, 3, 2, 1, 0], np.uint8),       # unsigned ids, reversed
              np.array([3, 3, 1, 1, 0, 0], np.int16)]:
    cases.append((str(ids), lambda ids=ids: check(_op(name, num_segments=5), data, ids,
                                                  build=_build)))
  nan = np.array([np.nan, 1.0, np.inf, -np.inf, 2.0, 0.0], np.float32)
  cases.append(("nan/inf", lambda: check(_op(name, num_segments=3), nan,
                                         np.array([0, 0, 1, 1, 2, 2]), build=_build)))
  cases.append(("empty", lambda: check(_op(name, num_segments=3), np.zeros((0, 2), np.float32),
                                       np.zeros((0,), np.int32), build=_build)))
  check_all(cases)


@pytest.mark.parametrize("name", NAMES)
def test_jit_jaxpr_vmap(name):
  data, ids = rand((8, 3), np.float32), np.array([0, 1, 1, 3, 2, 0, 3, 3], np.int32)
  check(_op(name, num_segments=4), data, ids, build=_build, eager=False, jit=True)
  check_jaxpr(_op(name, num_segments=4), data, ids, build=_build)
  check_jaxpr(_op(name, num_segments=4, bucket_size=3), data, ids, build=_build)
  batch = rand((2, 8, 3), np.float32, seed=3)
  check(_op(name, num_segments=4), batch, ids, build=_build,
        transform=lambda top, f: top.vmap(f, in_axes=(0, None)))
  bids = np.stack([ids, ids[::-1]])
  check(_op(name, num_segments=4), batch, bids, build=_build,
        transform=lambda top, f: top.vmap(f, in_axes=(0, 0)))


@pytest.mark.parametrize("name", NAMES)
def test_grad(name):
  data = rand((8, 3), np.float32, seed=5)
  ids = np.array([0, 1, 1, 3, 2, 0, 3, 3], np.int32)
  loss = lambda top, d, i: (getattr(top.ops, name)(d, i, 4) ** 2).sum()  # noqa: E731
  check(loss, data, ids, build=_build, transform=lambda top, f: top.grad(f), tol=1e-5)
  if name != "segment_prod":  # JAX and arrax: scatter_mul grads need unique_indices=True
    check_grads(lambda d: getattr(arrax.ops, name)(d, arrax.numpy.asarray(ids), 4),
                (arrax.numpy.asarray(data),), order=1, modes=("fwd", "rev"))


def test_errors():
  data, ids = rand((5,), np.float32), np.array([0, 1, 1, 0, 2], np.int32)
  check_raises(_op("segment_sum"), data, ids, build=_build, jit=True)  # num_segments traced
  check_raises(_op("segment_sum", num_segments=-1), data, ids, build=_build)
  check_raises(lambda top, d, i: top.ops.segment_sum(d.tolist(), i), data, ids, build=_build)
