"""arrax.scipy.fft: discrete cosine transforms, as jax.scipy.fft."""
from arrax._src.scipy.fft import (  # noqa: F401
    dct as dct, dctn as dctn, idct as idct, idctn as idctn)
