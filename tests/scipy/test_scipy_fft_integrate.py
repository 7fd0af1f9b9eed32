"""arrax.scipy.fft (dct, dctn, idct, idctn) and arrax.scipy.integrate.trapezoid against JAX
0.10.2: shapes, sizes, axes and norms; float32, complex64, integers and float64 (x64); grads,
jit, vmap and the errors."""
import jax
import jax.scipy.fft as jsf
import jax.scipy.integrate as jsi
import numpy as np
import pytest

import arrax
import arrax.scipy.fft as asf
import arrax.scipy.integrate as asi
from arrax.test_util import check_grads
from oracle import assert_raises_like, assert_same, rand

X = rand((3, 8, 5), np.float32, 0)


def both(mod_a, mod_j, name, *args, tol=(1e-4, 1e-4), **kw):
  assert_same(getattr(mod_a, name)(*args, **kw), getattr(mod_j, name)(*args, **kw), tol=tol)


@pytest.mark.parametrize("name", ["dct", "idct"])
@pytest.mark.parametrize("kw", [{}, {"norm": "ortho"}, {"norm": "backward"}, {"n": 6},
                                {"n": 11, "axis": 1}, {"axis": 0}, {"axis": -2, "norm": "ortho"}])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32])
def test_dct(name, kw, dtype):
  both(asf, jsf, name, rand((3, 8, 5), dtype, 1), **kw)


@pytest.mark.parametrize("name", ["dctn", "idctn"])
@pytest.mark.parametrize("kw", [{}, {"norm": "ortho"}, {"s": (6, 4)}, {"axes": (0, 2)},
                                {"axes": [1]}, {"s": [7], "axes": [-1]}, {"axes": (0, 1, 2)},
                                {"s": (2, 9, 3)}])
def test_dctn(name, kw):
  both(asf, jsf, name, X, **kw)
  both(asf, jsf, name, X.astype(np.complex64), **kw)


def test_float64_and_small(x64):
  x = rand((4, 7), np.float64, 2)
  for name in ("dct", "idct", "dctn", "idctn"):
    both(asf, jsf, name, x, tol=(1e-10, 1e-12))
    both(asf, jsf, name, x, norm="ortho", tol=(1e-10, 1e-12))
  both(asf, jsf, "dct", np.float32([3.]))


@pytest.mark.parametrize("call", [
    lambda m: m.dct(np.ones(4), type=3), lambda m: m.dct(np.ones(4), norm="forward"),
    lambda m: m.idctn(np.ones((2, 2)), type=1), lambda m: m.dctn(np.ones(4), s=(2, 2)),
    lambda m: m.dctn(np.ones((3, 3)), axes=(0, 0)), lambda m: m.idct(np.ones(4), axis=2),
])
def test_errors(call):
  assert_raises_like(lambda: call(jsf), lambda: call(asf))


def test_transforms():
  x = rand((6,), np.float32, 3)
  for fn in (asf.dct, asf.idct, lambda v: asf.dctn(v.reshape(2, 3), norm="ortho")):
    check_grads(fn, (x,), order=1, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)
  assert_same(arrax.jit(asf.dctn)(X), jax.jit(jsf.dctn)(X), tol=(1e-4, 1e-4))
  assert_same(arrax.vmap(asf.idct)(X), jax.vmap(jsf.idct)(X), tol=(1e-4, 1e-4))
  y = asf.idct(asf.dct(x, norm="ortho"), norm="ortho")
  np.testing.assert_allclose(np.asarray(y), x, atol=1e-5)


@pytest.mark.parametrize("args,kw", [
    ((X,), {}), ((X,), {"dx": 0.5, "axis": 0}), ((X, np.arange(5.) ** 2), {}),
    ((X, np.arange(8.), ), {"axis": 1}), ((np.arange(6, dtype=np.int32),), {}),
    ((rand((4,), np.complex64, 4),), {"dx": 2}),
])
def test_trapezoid(args, kw):
  both(asi, jsi, "trapezoid", *args, **kw)


def test_trapezoid_grad_jit():
  check_grads(lambda y, x: asi.trapezoid(y, x), (rand((5,), np.float32, 5),
                                                 np.float32([0., .5, 1.5, 2., 4.])),
              order=1, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)
  assert_same(arrax.jit(asi.trapezoid)(X), jax.jit(jsi.trapezoid)(X), tol=(1e-5, 1e-5))


def test_trapezoid_empty_raises():
  for mod in (jsi, asi):
    with pytest.raises(IndexError):
      mod.trapezoid(np.zeros((0,), np.float32))
