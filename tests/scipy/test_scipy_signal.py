"""arrax.scipy.signal against jax.scipy.signal 0.10.2: convolutions in every mode (float32,
complex64, integers, float64 under x64), detrend, the Welch/STFT family and istft; gradients,
jit and vmap; the errors for bad inputs."""
import jax
import jax.scipy.signal as jss
import numpy as np
import pytest

import arrax
import arrax.scipy.signal as ass
from arrax.test_util import check_grads
from oracle import assert_raises_like, assert_same, rand


def both(name, *args, tol=(1e-4, 1e-4), **kw):
  got = getattr(ass, name)(*args, **kw)
  want = getattr(jss, name)(*args, **kw)
  assert_same(got, want, tol=tol, strict_tree=True)
  return got


MODES = ["full", "same", "valid"]
PAIRS = [((12,), (4,)), ((4,), (12,)), ((5,), (5,)), ((1,), (3,)), ((6, 7), (3, 2)),
         ((3, 2), (6, 7)), ((4, 5, 6), (2, 3, 1))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", PAIRS)
@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32])
def test_convolve_correlate(mode, shapes, dtype):
  a, b = rand(shapes[0], dtype, 0), rand(shapes[1], dtype, 1)
  for name in ("convolve", "correlate"):
    both(name, a, b, mode=mode)
  both("convolve", a, b, mode=mode, method="fft")
  both("fftconvolve", a, b, mode=mode)
  if len(shapes[0]) == 2:
    both("convolve2d", a, b, mode=mode)
    both("correlate2d", a, b, mode=mode)


def test_fftconvolve_axes():
  a, b = rand((3, 20), np.float32, 2), rand((3, 5), np.float32, 3)
  for mode in MODES:
    both("fftconvolve", a, b, mode=mode, axes=1)
    both("fftconvolve", a, b, mode=mode, axes=-1)
  c = rand((4, 3, 6), np.complex64, 4)
  both("fftconvolve", c, c[:2], axes=(0,))


def test_float64(x64):
  a, b = rand((30,), np.float64, 5), rand((7,), np.float64, 6)
  for mode in MODES:
    both("convolve", a, b, mode=mode, tol=(1e-10, 1e-10))
    both("fftconvolve", a, b, mode=mode, tol=(1e-10, 1e-10))
  both("welch", rand((2, 128), np.float64, 7), nperseg=32, tol=(1e-10, 1e-12))
  both("detrend", a, tol=(1e-10, 1e-10))


@pytest.mark.parametrize("kw", [{}, {"type": "constant"}, {"axis": 0}, {"bp": [5, 11]},
                                {"bp": 7, "axis": 0}])
def test_detrend(kw):
  both("detrend", rand((16, 3), np.float32, 8).T if "axis" not in kw else
       rand((16, 3), np.float32, 8), **kw)
  both("detrend", np.arange(16, dtype=np.int32) ** 2, **{k: v for k, v in kw.items()
                                                          if k != "axis"})


X = rand((3, 100), np.float32, 9)


@pytest.mark.parametrize("kw", [
    {"nperseg": 16}, {"nperseg": 16, "noverlap": 4}, {"nperseg": 20, "nfft": 32},
    {"nperseg": 16, "average": "median"}, {"nperseg": 16, "scaling": "spectrum"},
    {"nperseg": 16, "return_onesided": False}, {"nperseg": 16, "detrend": "linear"},
    {"nperseg": 16, "detrend": False}, {"nperseg": 16, "fs": 10.0},
    {"nperseg": 8, "window": np.hanning(8).astype(np.float32)}, {"nperseg": 17},
    {"window": "hann"}, {"nperseg": 16, "axis": 0},
])
def test_welch_csd(kw):
  x = X.T if kw.get("axis") == 0 else X
  both("welch", x, **kw)
  both("csd", x, x[::-1] * 2, **kw)


@pytest.mark.parametrize("kw", [
    {"nperseg": 16}, {"nperseg": 16, "noverlap": 12}, {"nperseg": 15, "nfft": 20},
    {"nperseg": 16, "boundary": "even"}, {"nperseg": 16, "boundary": "odd"},
    {"nperseg": 16, "boundary": "constant"}, {"nperseg": 16, "boundary": None, "padded": False},
    {"nperseg": 16, "return_onesided": False}, {"nperseg": 16, "detrend": "constant"},
])
def test_stft_istft(kw):
  both("stft", X, **kw)
  both("stft", X.astype(np.complex64), **{k: v for k, v in kw.items()
                                          if k != "return_onesided"}, return_onesided=False)
  _, _, z = jss.stft(X, **kw)
  inv = {k: v for k, v in kw.items() if k in ("nperseg", "noverlap", "nfft")}
  if kw.get("return_onesided") is False:
    inv["input_onesided"] = False
  if "boundary" in kw:
    inv["boundary"] = kw["boundary"] is not None
  both("istft", np.asarray(z), **inv)


def test_istft_axes():
  _, _, z = jss.stft(X, nperseg=16)
  z = np.asarray(z)
  both("istft", np.moveaxis(z, 0, -1), nperseg=16, time_axis=1, freq_axis=0)
  both("istft", z, nperseg=16, window=np.hanning(16).astype(np.float32))


def test_empty_and_complex_warning():
  both("welch", np.zeros((2, 0), np.float32))
  with pytest.warns(UserWarning):
    got = ass.welch(X.astype(np.complex64), nperseg=16)
  with pytest.warns(UserWarning):
    want = jss.welch(X.astype(np.complex64), nperseg=16)
  assert_same(got, want, tol=(1e-4, 1e-4))


@pytest.mark.parametrize("call", [
    lambda m: m.convolve(np.ones(3), np.ones((2, 2))),
    lambda m: m.convolve(np.ones(3), np.ones(2), mode="bad"),
    lambda m: m.convolve(np.ones(3), np.ones(2), method="bad"),
    lambda m: m.convolve(np.ones((2, 3)), np.ones((3, 2))),
    lambda m: m.convolve(np.ones(0), np.ones(2)),
    lambda m: m.fftconvolve(np.ones((2, 3)), np.ones((3, 2)), mode="valid"),
    lambda m: m.fftconvolve(np.ones((2, 3)), np.ones((3, 2)), axes=1),
    lambda m: m.convolve2d(np.ones(3), np.ones(3)),
    lambda m: m.convolve2d(np.ones((3, 3)), np.ones((2, 2)), boundary="wrap"),
    lambda m: m.detrend(np.ones(5), type="quadratic"),
    lambda m: m.detrend(np.ones(5), bp=9),
    lambda m: m.welch(np.ones(50), nperseg=8, noverlap=8),
    lambda m: m.welch(np.ones(50), nperseg=8, nfft=4),
    lambda m: m.welch(np.ones(50), nperseg=8, scaling="bad"),
    lambda m: m.welch(np.ones(50), nperseg=8, average="bad"),
    lambda m: m.stft(np.ones(50), nperseg=8, boundary="bad"),
    lambda m: m.istft(np.ones(5)),
    lambda m: m.istft(np.ones((5, 4)), time_axis=0, freq_axis=0),
])
def test_errors(call):
  assert_raises_like(lambda: call(jss), lambda: call(ass))


def test_grads_jit_vmap():
  a, b = rand((10,), np.float32, 10), rand((3,), np.float32, 11)
  for fn in (lambda x, y: ass.convolve(x, y), lambda x, y: ass.fftconvolve(x, y, mode="same"),
             lambda x, y: ass.correlate(x, y, mode="valid")):
    check_grads(fn, (a, b), order=1, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)
  check_grads(lambda x: ass.welch(x, nperseg=8)[1], (rand((32,), np.float32, 12),), order=1,
              modes=("rev",), atol=5e-2, rtol=5e-2)
  got = arrax.grad(lambda x: ass.stft(x, nperseg=8)[2].real.sum())(X[0])
  want = jax.grad(lambda x: jss.stft(x, nperseg=8)[2].real.sum())(X[0])
  assert_same(got, want, tol=(1e-4, 1e-4))
  assert_same(arrax.jit(ass.convolve)(a, b), jax.jit(jss.convolve)(a, b), tol=(1e-5, 1e-5))
  batch = rand((4, 10), np.float32, 13)
  assert_same(arrax.vmap(ass.fftconvolve, (0, None))(batch, b),
              jax.vmap(jss.fftconvolve, (0, None))(batch, b), tol=(1e-4, 1e-5))
  assert_same(arrax.vmap(lambda x: ass.welch(x, nperseg=4)[1])(batch),
              jax.vmap(lambda x: jss.welch(x, nperseg=4)[1])(batch), tol=(1e-4, 1e-5))
