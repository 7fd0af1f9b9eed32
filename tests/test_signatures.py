"""Every public function of the main modules has JAX 0.10.2's parameters (names, kinds and
order), and the parameters added to match behave as in JAX."""
import importlib
import inspect
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp

MODULES = ["", "numpy", "numpy.linalg", "numpy.fft", "lax", "lax.linalg", "nn", "nn.initializers",
           "random", "scipy.special", "scipy.linalg", "scipy.signal", "scipy.ndimage",
           "scipy.optimize", "scipy.fft", "scipy.integrate", "scipy.interpolate",
           "scipy.sparse.linalg", "scipy.stats.norm", "tree_util", "tree", "image", "ops",
           "dlpack", "sharding", "debug", "export", "ffi", "dtypes", "custom_derivatives",
           "ad_checkpoint", "distributed", "experimental.multihost_utils", "profiler"]

# Differences that cannot be observed: positional-only parameters under other names, and
# a function JAX declares as (*args) that takes two arrays.
POSITIONAL_NAMES_ONLY = {"random_gamma_grad"}


def _params(fn):
  try:
    sig = inspect.signature(fn)
  except (TypeError, ValueError):
    return None
  return [(p.name if p.kind is not p.POSITIONAL_ONLY else "/", p.kind)
          for p in sig.parameters.values()]


def _pairs():
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for m in MODULES:
      jm = importlib.import_module("jax" + ("." + m if m else ""))
      am = importlib.import_module("arrax" + ("." + m if m else ""))
      for name in sorted(dir(jm)):
        if name.startswith("_") or name in POSITIONAL_NAMES_ONLY:
          continue
        jf, af = getattr(jm, name, None), getattr(am, name, None)
        if af is None or not callable(jf) or isinstance(jf, type):
          continue
        yield f"{m}.{name}", jf, af


def test_public_functions_take_jax_parameters():
  diffs = []
  for where, jf, af in _pairs():
    jp, ap = _params(jf), _params(af)
    if jp is not None and ap is not None and jp != ap:
      diffs.append(f"{where}: jax {jp} arrax {ap}")
  assert not diffs, "\n".join(diffs)


def test_vmap_sum_match_sums_batched_outputs_with_out_axes_none():
  for lib, np_ in ((jax, jnp), (arrax, anp)):
    f = lib.vmap(lambda x, y: (x * 2, x > 1, y), in_axes=(0, None), out_axes=(None, None, None),
                 sum_match=True)
    a, b, c = f(np_.arange(3.0), np_.ones(2))
    assert (float(a), int(b), str(b.dtype), c.tolist()) == (6.0, 1, "int32", [1.0, 1.0]), lib
    with pytest.raises(ValueError):
      lib.vmap(lambda x: x, out_axes=None)(np_.arange(3.0))


@pytest.mark.parametrize("dtype", [None, np.int16, np.uint8, np.float32])
def test_argsort_index_dtype(dtype):
  x = np.array([3, 1, 2, 1])
  want = jnp.argsort(x, dtype=dtype, descending=True)
  got = anp.argsort(x, dtype=dtype, descending=True)
  assert got.dtype == want.dtype and got.tolist() == want.tolist()


@pytest.mark.parametrize("kw", [{"kind": "stable"}, {"order": "x"}, {"dtype": bool}])
def test_argsort_rejects_what_jax_rejects(kw):
  for np_ in (jnp, anp):
    with pytest.raises(TypeError):
      np_.argsort(np.array([2, 1]), **kw)


def test_array_positional_copy_order_ndmin_warn_as_in_jax():
  for np_ in (jnp, anp):
    with pytest.warns(DeprecationWarning, match="positionally is deprecated"):
      out = np_.array([1, 2], None, True, "K", 2)
    assert out.shape == (1, 2)
    with pytest.raises(TypeError, match="multiple values for argument 'copy'"):
      np_.array([1], None, True, copy=False)
    with pytest.raises(TypeError, match="at most 5 positional"):
      np_.array([1], None, True, "K", 0, 1)


def test_concat_axis_is_keyword_only_and_reduce_axes_is_deprecated():
  for lib, np_ in ((jax, jnp), (arrax, anp)):
    assert np_.concat([np_.ones(2), np_.zeros(1)], axis=0).tolist() == [1, 1, 0]
    with pytest.raises(TypeError):
      np_.concat([np_.ones(2)], 0)
    with pytest.raises(NotImplementedError, match="reduce_axes"):
      lib.vjp(lambda x: x, 1.0, reduce_axes=("i",))
    assert np_.issubdtype(arg1=np.float32, arg2=np.floating)
