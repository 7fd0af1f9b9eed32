"""arrax.scipy.signal: convolutions and spectral estimates, as jax.scipy.signal."""
from arrax._src.scipy.signal import (  # noqa: F401
    convolve as convolve, convolve2d as convolve2d, correlate as correlate,
    correlate2d as correlate2d, csd as csd, detrend as detrend, fftconvolve as fftconvolve,
    istft as istft, stft as stft, welch as welch)
