"""Host-side file I/O of jax.numpy: `load` (NumPy's formats, arrays back as arrax Arrays),
and `fromfile`, which JAX leaves unimplemented on purpose. `save`/`savez` are NumPy's own
(arrax Arrays convert to NumPy arrays when saved)."""
from __future__ import annotations

import numpy as np

from arrax._src import dtypes
from arrax._src.numpy.creation import asarray


def load(file, *args, **kwargs):
  """numpy.load, with a .npy array returned as an arrax Array (bfloat16 arrays, which NumPy
  writes as 2-byte voids, get their dtype back). .npz files give NumPy's lazy mapping of NumPy
  arrays, and arrays of dtypes arrax cannot hold stay NumPy arrays. Not traceable: this reads a
  file on the host.

  Example:
    >>> import io
    >>> f = io.BytesIO()
    >>> jnp.save(f, jnp.arange(3.0, dtype=jnp.bfloat16)); _ = f.seek(0)
    >>> jnp.load(f)
    Array([0, 1, 2], dtype=bfloat16)
  """
  out = np.load(file, *args, **kwargs)
  if isinstance(out, np.ndarray):
    if out.dtype == "V2":   # how numpy.save writes bfloat16
      out = out.view(dtypes.bfloat16)
    try:
      out = asarray(out)
    except (TypeError, AssertionError):   # a dtype arrax does not support: keep NumPy's array
      pass
  return out


def fromfile(*args, **kwargs):
  """Not implemented, as in JAX: reading a file is a side effect that traced (jit, vmap, grad)
  code would not repeat. Use `jnp.asarray(np.fromfile(...))` outside of transformations."""
  raise NotImplementedError(
      "jnp.fromfile() is not implemented: it reads a file, a side effect that jit and the other "
      "transformations would not repeat. Use jnp.asarray(np.fromfile(...)) instead, outside "
      "transformed functions (see https://docs.jax.dev/en/latest/notebooks/"
      "Common_Gotchas_in_JAX.html#pure-functions).")
