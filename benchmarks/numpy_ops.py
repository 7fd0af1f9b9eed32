"""jax.numpy function benchmarks (issues 11 and 12): einsum, unique, quantile/median, FFT.

Each has a jitted steady-state version and, where it is a common way to call it, an eager one
(`*_eager`: the function called on arrays directly)."""
from __future__ import annotations

import numpy as np

from harness import benchmark, rng


# ---- einsum -------------------------------------------------------------------------------------
def _bmm_data(L):
  r = rng(10)
  return (L.asarray(r.standard_normal((64, 128, 128), np.float32)),
          L.asarray(r.standard_normal((64, 128, 128), np.float32)))


def _bmm(L):
  if L.is_numpy:
    return np.matmul   # np.einsum does not batch through BLAS (it is 100x slower here)
  return lambda a, b: L.numpy.einsum("bij,bjk->bik", a, b)


@benchmark(numpy=True)
def einsum_bmm(L):
  """einsum('bij,bjk->bik') batched matmul of 64 128x128 float32 pairs, jitted (NumPy:
  np.matmul)."""
  a, b = _bmm_data(L)
  f = L.jit(_bmm(L))
  return lambda: L.block(f(a, b))


@benchmark(numpy=True)
def einsum_bmm_eager(L):
  """einsum_bmm called eagerly."""
  a, b = _bmm_data(L)
  f = _bmm(L)
  return lambda: L.block(f(a, b))


def _chain3_data(L):
  r = rng(11)
  return (L.asarray(r.standard_normal((2048, 128), np.float32)),
          L.asarray(r.standard_normal((128, 2048), np.float32)),
          L.asarray(r.standard_normal((2048, 128), np.float32)))


def _chain3(L):
  jnp = L.numpy
  return lambda a, b, c: jnp.einsum("ij,jk,kl->il", a, b, c, optimize="optimal")


@benchmark(numpy=True)
def einsum_3operand(L):
  """einsum('ij,jk,kl->il', optimize='optimal') of 2048x128, 128x2048, 2048x128 float32: the
  contraction order (b.c first) makes it 16x cheaper than left to right; jitted."""
  args = _chain3_data(L)
  f = L.jit(_chain3(L))
  return lambda: L.block(f(*args))


@benchmark(numpy=True)
def einsum_3operand_eager(L):
  """einsum_3operand called eagerly (the path is found on every call)."""
  args = _chain3_data(L)
  f = _chain3(L)
  return lambda: L.block(f(*args))


# ---- unique -------------------------------------------------------------------------------------
def _unique_data(L):
  return L.asarray(rng(12).integers(0, 1000, 100_000).astype(np.int32))


@benchmark(numpy=True)
def unique_size(L):
  """jit(unique(x, size=1000)) of 100_000 int32 in [0, 1000) (NumPy: np.unique(x))."""
  x = _unique_data(L)
  if L.is_numpy:
    return lambda: np.unique(x)
  f = L.jit(lambda x: L.numpy.unique(x, size=1000))
  return lambda: L.block(f(x))


@benchmark(numpy=True)
def unique_size_counts(L):
  """jit(unique(x, return_counts=True, return_inverse=True, size=1000)) of the unique_size data
  (NumPy: np.unique with the same flags)."""
  x = _unique_data(L)
  if L.is_numpy:
    return lambda: np.unique(x, return_counts=True, return_inverse=True)
  f = L.jit(lambda x: L.numpy.unique(x, return_counts=True, return_inverse=True, size=1000))
  return lambda: L.block(f(x))


@benchmark(numpy=True)
def unique_size_eager(L):
  """unique(x, size=1000) of the unique_size data called eagerly."""
  x = _unique_data(L)
  if L.is_numpy:
    return lambda: np.unique(x)
  return lambda: L.block(L.numpy.unique(x, size=1000))


# ---- quantile, median ---------------------------------------------------------------------------
def _quantile_data(L):
  return L.asarray(rng(13).standard_normal(1_000_000).astype(np.float32))


def _quantile(L):
  q = L.asarray(np.array([0.05, 0.25, 0.5, 0.75, 0.95], np.float32))
  return lambda x: L.numpy.quantile(x, q)


@benchmark(numpy=True)
def quantile(L):
  """jit(quantile(x, 5 quantiles)) of 1e6 float32 (linear interpolation)."""
  x = _quantile_data(L)
  f = _quantile(L)
  f = L.jit(f)
  return lambda: L.block(f(x))


@benchmark(numpy=True)
def quantile_eager(L):
  """quantile called eagerly."""
  x = _quantile_data(L)
  f = _quantile(L)
  return lambda: L.block(f(x))


def _median_data(L):
  return L.asarray(rng(14).standard_normal((1000, 1000)).astype(np.float32))


@benchmark(numpy=True)
def median_axis(L):
  """jit(median(x, axis=-1)) of a 1000x1000 float32 (1000 medians of 1000)."""
  x = _median_data(L)
  f = L.jit(lambda x: L.numpy.median(x, axis=-1))
  return lambda: L.block(f(x))


@benchmark(numpy=True)
def median_eager(L):
  """median(x) of the whole 1000x1000 float32 called eagerly."""
  x = _median_data(L)
  return lambda: L.block(L.numpy.median(x))


# ---- FFT ----------------------------------------------------------------------------------------
def _fft_data(L, complex_=True):
  r = rng(15)
  x = r.standard_normal(1 << 20).astype(np.float32)
  if complex_:
    x = (x + 1j * r.standard_normal(1 << 20).astype(np.float32)).astype(np.complex64)
  return L.asarray(x)


@benchmark(numpy=True)
def fft_2p20(L):
  """jit(fft.fft) of 2^20 complex64 points (NumPy's pocketfft computes in complex128)."""
  x = _fft_data(L)
  f = L.jit(L.numpy.fft.fft)
  return lambda: L.block(f(x))


@benchmark(numpy=True)
def fft_2p20_eager(L):
  """fft.fft of 2^20 complex64 points called eagerly."""
  x = _fft_data(L)
  return lambda: L.block(L.numpy.fft.fft(x))


@benchmark(numpy=True)
def rfft_2p20(L):
  """jit(fft.rfft) of 2^20 float32 points."""
  x = _fft_data(L, complex_=False)
  f = L.jit(L.numpy.fft.rfft)
  return lambda: L.block(f(x))


@benchmark(numpy=True)
def fft_roundtrip_2p20(L):
  """jit(irfft(rfft(x) * filter)): a frequency-domain filter over 2^20 float32 points."""
  x = _fft_data(L, complex_=False)
  jnp = L.numpy
  filt = L.asarray((np.arange((1 << 19) + 1) < 1000).astype(np.float32))
  f = L.jit(lambda x: jnp.fft.irfft(jnp.fft.rfft(x) * filt, n=x.shape[0]))
  return lambda: L.block(f(x))
