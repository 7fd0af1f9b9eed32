"""jax_debug_nans / jax_debug_infs: eager ops and jitted functions (re-run without jit)."""
import jax
import numpy as np
import pytest

import arrax


def _run(lib, flag, fn, *args):
  """(printed lines, error class, error message) of fn(lib)(*args) with `flag` on."""
  import contextlib
  import io
  out = io.StringIO()
  with contextlib.redirect_stdout(out), getattr(lib, flag)(True):
    try:
      result = fn(lib)(*args)
      np.asarray(result)
      err = (None, None)
    except Exception as e:  # noqa: BLE001
      err = (type(e).__name__, str(e).split(". Because")[0])
  # The set of printed lines: JAX's jnp functions are jitted themselves, so it prints the
  # "de-optimized" line once per enclosing jit that saw the NaN, arrax once per user jit.
  return set(out.getvalue().splitlines()), err


CASES = {
    "jit_log": ("debug_nans", lambda lib: lib.jit(lambda x: lib.numpy.log(x * 2) + 1),
                np.float32(-1.0)),
    "jit_nested": ("debug_nans", lambda lib: lib.jit(lambda x: lib.jit(lib.numpy.sqrt)(x) * 2),
                   np.float32(-4.0)),
    "eager_sqrt": ("debug_nans", lambda lib: lib.numpy.sqrt, np.array([-1.0, 4.0], np.float32)),
    "eager_lax": ("debug_nans", lambda lib: lambda x: lib.lax.acos(x),
                  np.array([2.0], np.float32)),
    "no_nan": ("debug_nans", lambda lib: lib.jit(lambda x: x * 2), np.float32(3.0)),
    "int_ok": ("debug_nans", lambda lib: lib.jit(lambda x: x // 2), np.int32(3)),
    "jit_inf_numpy_arg": ("debug_infs", lambda lib: lib.jit(lambda x: 1.0 / x), np.float32(0.0)),
    "jit_inf_array_arg": ("debug_infs", lambda lib: lib.jit(lambda x: 1.0 / x),
                          np.array([0.0, 1.0], np.float32)),
    "eager_inf": ("debug_infs", lambda lib: lib.numpy.exp, np.array([1000.0], np.float32)),
    "grad_nan": ("debug_nans", lambda lib: lib.grad(lambda x: lib.numpy.sqrt(x)),
                 np.float32(0.0)),
    "vmap_jit_nan": ("debug_nans", lambda lib: lib.vmap(lib.jit(lambda x: lib.numpy.log(x) * 2)),
                     np.array([-1.0, 1.0], np.float32)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_like_jax(name):
  flag, fn, x = CASES[name]
  if "array_arg" in name:
    got = _run(arrax, flag, fn, arrax.numpy.asarray(x))
    want = _run(jax, flag, fn, jax.numpy.asarray(x))
  else:
    got, want = _run(arrax, flag, fn, x), _run(jax, flag, fn, x)
  assert got == want


def test_flags_are_config_options():
  for lib in (arrax, jax):
    assert lib.config.jax_debug_infs is False
    lib.config.update("jax_debug_infs", True)
    assert lib.config.jax_debug_infs is True
    lib.config.update("jax_debug_infs", False)
