"""jax.scipy benchmarks (issue 15): expm and fftconvolve, jitted and eager."""
from __future__ import annotations

import importlib

import numpy as np

from harness import benchmark, rng


def _scipy(L, sub):
  return importlib.import_module(f"{L.name}.scipy.{sub}")


def _expm_data(L):
  return L.asarray((rng(40).standard_normal((64, 32, 32)) / 4).astype(np.float32))


@benchmark()
def expm_batched(L):
  """scipy.linalg.expm of 64 32x32 float32 matrices (Pade scaling and squaring), jitted."""
  a = _expm_data(L)
  f = L.jit(_scipy(L, "linalg").expm)
  return lambda: L.block(f(a))


@benchmark()
def expm_eager(L):
  """scipy.linalg.expm of one 32x32 float32 matrix, called eagerly."""
  a = _expm_data(L)[0]
  f = _scipy(L, "linalg").expm
  return lambda: L.block(f(a))


@benchmark()
def expm_64(L):
  """scipy.linalg.expm of one 64x64 float32 matrix, jitted (the issue's measure)."""
  a = L.asarray((rng(43).standard_normal((64, 64)) / 8).astype(np.float32))
  f = L.jit(_scipy(L, "linalg").expm)
  return lambda: L.block(f(a))


def _conv_data(L):
  r = rng(41)
  return (L.asarray(r.standard_normal((256, 256), np.float32)),
          L.asarray(r.standard_normal((31, 31), np.float32)))


@benchmark()
def fftconvolve_2d(L):
  """scipy.signal.fftconvolve of a 256x256 float32 image with a 31x31 kernel ('same'),
  jitted."""
  a, k = _conv_data(L)
  f = L.jit(lambda x, y: _scipy(L, "signal").fftconvolve(x, y, mode="same"))
  return lambda: L.block(f(a, k))


@benchmark()
def fftconvolve_eager(L):
  """fftconvolve_2d called eagerly."""
  a, k = _conv_data(L)
  f = _scipy(L, "signal").fftconvolve
  return lambda: L.block(f(a, k, mode="same"))


@benchmark()
def special_expi_hyp1f1(L):
  """scipy.special.expi and hyp1f1 of 4096 float32 points, jitted (per-element rational
  approximations, and series in a vectorized while loop)."""
  x = L.asarray(rng(42).uniform(-20, 60, 4096).astype(np.float32))
  sp = _scipy(L, "special")
  f = L.jit(lambda t: sp.expi(t) + sp.hyp1f1(0.5, 1.5, t / 4))
  return lambda: L.block(f(x))
