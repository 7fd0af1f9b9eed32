"""arrax.scipy.cluster.vq, arrax.scipy.ndimage.map_coordinates and
arrax.scipy.interpolate.RegularGridInterpolator against JAX 0.10.2: values, dtypes, modes,
gradients, jit (the interpolator is a pytree) and vmap, errors."""
import jax
import jax.scipy.cluster.vq as jvq
import jax.scipy.interpolate as jinterp
import jax.scipy.ndimage as jnd
import numpy as np
import pytest

import arrax
import arrax.scipy.cluster.vq as avq
import arrax.scipy.interpolate as ainterp
import arrax.scipy.ndimage as and_
from arrax.test_util import check_grads
from oracle import assert_raises_like, assert_same, rand


# ---- vq ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((10, 3), (4, 3)), ((7,), (3,)), ((0, 2), (3, 2))])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_vq(shapes, dtype):
  obs, book = rand(shapes[0], dtype, 0), rand(shapes[1], dtype, 1)
  assert_same(avq.vq(obs, book), jvq.vq(obs, book), tol=(1e-5, 1e-6))
  assert_same(arrax.jit(avq.vq)(obs, book), jax.jit(jvq.vq)(obs, book), tol=(1e-5, 1e-6))


def test_vq_errors_and_grad():
  for call in (lambda m: m.vq(np.ones((2, 2)), np.ones(2)),
               lambda m: m.vq(np.ones((2, 2, 2)), np.ones((2, 2, 2)))):
    with pytest.raises(ValueError):
      call(jvq)
    with pytest.raises(ValueError):
      call(avq)
  obs, book = rand((5, 2), np.float32, 2), rand((3, 2), np.float32, 3)
  check_grads(lambda o: avq.vq(o, book)[1], (obs,), order=1, modes=("fwd", "rev"),
              atol=5e-2, rtol=5e-2)


# ---- map_coordinates ---------------------------------------------------------------------------
MODES = ["constant", "nearest", "wrap", "mirror", "reflect"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.complex64])
def test_map_coordinates(mode, order, dtype):
  img = rand((5, 6), dtype, 4)
  coords = [np.float32([-1.5, 0., 0.5, 2.3, 4.5, 7.2]), np.float32([0.2, -0.7, 5.5, 3., 1.49, 9.])]
  assert_same(and_.map_coordinates(img, coords, order, mode=mode, cval=2.),
              jnd.map_coordinates(img, coords, order, mode=mode, cval=2.), tol=(1e-5, 1e-5))
  c3 = [np.float32([[0.5, 1.2], [2., -3.]])] * 3
  vol = rand((3, 4, 2), dtype, 5)
  assert_same(and_.map_coordinates(vol, c3, order, mode=mode),
              jnd.map_coordinates(vol, c3, order, mode=mode), tol=(1e-5, 1e-5))


def test_map_coordinates_errors_grads_jit():
  img = rand((4, 4), np.float32, 6)
  for call in (lambda m: m.map_coordinates(img, [np.zeros(2)], 1),
               lambda m: m.map_coordinates(img, [np.zeros(2)] * 2, 3),
               lambda m: m.map_coordinates(img, [np.zeros(2)] * 2, 1, mode="grid-wrap")):
    assert_raises_like(lambda: call(jnd), lambda: call(and_))
  coords = np.float32([[0.3, 1.7, 2.2], [1.1, 0.4, 2.9]])
  check_grads(lambda im, c: and_.map_coordinates(im, [c[0], c[1]], 1), (img, coords), order=1,
              modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)
  f = arrax.jit(lambda im, c: and_.map_coordinates(im, [c[0], c[1]], 1, mode="wrap"))
  g = jax.jit(lambda im, c: jnd.map_coordinates(im, [c[0], c[1]], 1, mode="wrap"))
  assert_same(f(img, coords), g(img, coords), tol=(1e-5, 1e-6))
  assert_same(arrax.vmap(lambda c: and_.map_coordinates(img, [c, c], 1))(coords),
              jax.vmap(lambda c: jnd.map_coordinates(img, [c, c], 1))(coords), tol=(1e-5, 1e-6))


# ---- RegularGridInterpolator ---------------------------------------------------------------------
GRID = (np.float32([0., 1., 2.5, 4.]), np.float32([-1., 0., 1.]))
VALUES = rand((4, 3), np.float32, 7)
XI = np.float32([[0.5, 0.], [3.9, -0.9], [-1., 0.], [2.5, 1.], [5., 2.], [1.2, 0.49]])


@pytest.mark.parametrize("method", ["linear", "nearest"])
@pytest.mark.parametrize("fill_value", [np.nan, None, 0.5])
def test_regular_grid(method, fill_value):
  a = ainterp.RegularGridInterpolator(GRID, VALUES, method=method, fill_value=fill_value)
  j = jinterp.RegularGridInterpolator(GRID, VALUES, method=method, fill_value=fill_value)
  assert_same(a(XI), j(XI), tol=(1e-5, 1e-6))
  assert_same(a((XI[:, 0], XI[:, 1])), j((XI[:, 0], XI[:, 1])), tol=(1e-5, 1e-6))
  other = "nearest" if method == "linear" else "linear"
  assert_same(a(XI, method=other), j(XI, method=other), tol=(1e-5, 1e-6))


def test_regular_grid_trailing_axes_and_1d():
  vals = rand((4, 3, 2), np.float32, 8)
  a = ainterp.RegularGridInterpolator(GRID, vals)
  j = jinterp.RegularGridInterpolator(GRID, vals)
  assert_same(a(XI), j(XI), tol=(1e-5, 1e-6))
  a1 = ainterp.RegularGridInterpolator(GRID[:1], VALUES[:, 0])
  j1 = jinterp.RegularGridInterpolator(GRID[:1], VALUES[:, 0])
  assert_same(a1(np.float32([0.3, 2., 3.])), j1(np.float32([0.3, 2., 3.])), tol=(1e-5, 1e-6))


def test_regular_grid_pytree_jit_grad_errors():
  a = ainterp.RegularGridInterpolator(GRID, VALUES)
  j = jinterp.RegularGridInterpolator(GRID, VALUES)
  assert_same(arrax.jit(lambda f, x: f(x))(a, XI), jax.jit(lambda f, x: f(x))(j, XI),
              tol=(1e-5, 1e-6))
  assert len(arrax.tree_util.tree_leaves(a)) == len(jax.tree_util.tree_leaves(j))
  check_grads(lambda v: ainterp.RegularGridInterpolator(GRID, v)(XI[:2]), (VALUES,), order=1,
              modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)
  for call in (lambda m: m.RegularGridInterpolator(GRID, VALUES, method="cubic"),
               lambda m: m.RegularGridInterpolator(GRID, VALUES, bounds_error=True),
               lambda m: m.RegularGridInterpolator(GRID * 3, VALUES),
               lambda m: m.RegularGridInterpolator(GRID, VALUES, fill_value=1j),
               lambda m: m.RegularGridInterpolator(GRID, VALUES)(np.ones((2, 3), np.float32))):
    assert_raises_like(lambda: call(jinterp), lambda: call(ainterp))
