"""The Python array API surface of arrax.numpy compared with jax.numpy 0.10.2.

What the external conformance suite (`make array-api`) found missing or different: the standard's
metadata (`__array_api_version__`, `__array_namespace_info__`, `Array.__array_namespace__`),
`Array.to_device`, DLPack export of device buffers (`__dlpack__` with `max_version`, `dl_device`
and `copy`; `__dlpack_device__`) and `from_dlpack` of arrays, `permute_dims`' errors, and how
JAX_ENABLE_X64 (and the other boolean flags) are read from the environment.
"""
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import config as jax_config
from oracle import BF16, check, rand

import arrax
import arrax.numpy as anp
from arrax._src import config as arrax_config

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.float16, BF16, np.float32, np.complex64]
SHAPES = [(), (0,), (3,), (2, 3), (2, 0, 1)]


# ---- metadata ---------------------------------------------------------------------------------
def test_array_api_version():
  assert anp.__array_api_version__ == jnp.__array_api_version__


def _info_summary(np_):
  info = np_.__array_namespace_info__()
  kinds = [None, "bool", "signed integer", "unsigned integer", "integral", "real floating",
           "complex floating", "numeric", ("bool", "real floating"),
           ("signed integer", "complex floating")]
  return (info.capabilities(), info.default_device(), info.default_dtypes(),
          info.default_dtypes(device=None),
          [sorted(info.dtypes(kind=k).items()) for k in kinds],
          sorted(info.dtypes(device=None).items()),
          [None if d is None else (d.platform, d.id) for d in info.devices()])


def test_namespace_info():
  assert _info_summary(anp) == _info_summary(jnp)


def test_namespace_info_x64(x64):
  assert _info_summary(anp) == _info_summary(jnp)
  assert anp.__array_namespace_info__().default_dtypes()["indexing"] == np.int64


def test_namespace_info_unknown_kind():
  check(lambda: anp.__array_namespace_info__().dtypes(kind="string"),
        lambda: jnp.__array_namespace_info__().dtypes(kind="string"))


@pytest.mark.parametrize("api_version", [None, "2024.12", "2023.12", "2021.12"])
def test_array_namespace(api_version):
  kw = {} if api_version is None else {"api_version": api_version}
  # The namespace of an array (or a tracer) is the numpy module itself; other versions raise.
  check(lambda: anp.ones(2).__array_namespace__(**kw) is anp,
        lambda: jnp.ones(2).__array_namespace__(**kw) is jnp)
  check(lambda: arrax.jit(lambda x: x * 2 if x.__array_namespace__(**kw) is anp else x)(
      anp.ones(2)),
        lambda: jax.jit(lambda x: x * 2 if x.__array_namespace__(**kw) is jnp else x)(
      jnp.ones(2)))


def test_array_namespace_is_keyword_only():
  check(lambda: anp.ones(2).__array_namespace__("2024.12"),
        lambda: jnp.ones(2).__array_namespace__("2024.12"))


# ---- to_device --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_to_device(dtype):
  x = rand((2, 3), dtype)
  check(lambda a: a.to_device(arrax.devices()[0]), lambda a: a.to_device(jax.devices()[0]), x)
  check(lambda a: a.to_device(None), lambda a: a.to_device(None), x)


def test_to_device_committed_and_stream():
  a = anp.arange(3).to_device(arrax.devices()[0])
  j = jnp.arange(3).to_device(jax.devices()[0])
  assert a.committed == j.committed and a.device == arrax.devices()[0]
  check(lambda: anp.ones(2).to_device(arrax.devices()[0], stream=1),
        lambda: jnp.ones(2).to_device(jax.devices()[0], stream=1))


# ---- DLPack -----------------------------------------------------------------------------------
def test_dlpack_device():
  a, j = anp.ones(2).__dlpack_device__(), jnp.ones(2).__dlpack_device__()
  assert a == j and type(a[0]).__name__ == type(j[0]).__name__ == "DLDeviceType"
  assert a[0].name == j[0].name == "kDLCPU"


DLPACK_KW = [{}, {"max_version": (1, 0)}, {"max_version": (2, 0)}, {"max_version": (0, 5)},
             {"max_version": (0, 0)}, {"max_version": (0, 4)}, {"dl_device": (1, 0)},
             {"dl_device": (7, 0)}, {"copy": True}, {"copy": False}, {"copy": None},
             {"max_version": (1, 0), "dl_device": (1, 0), "copy": True}]


@pytest.mark.parametrize("kw", DLPACK_KW, ids=str)
def test_dunder_dlpack(kw):
  # A capsule (the same kind) or the same exception class; NumPy reads the capsule back.
  def run(np_):
    cap = np_.arange(6.0).reshape(2, 3).__dlpack__(**kw)
    return type(cap).__name__
  check(lambda: run(anp), lambda: run(jnp))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.float16,
                                   np.float32, np.complex64], ids=lambda d: np.dtype(d).name)
def test_numpy_reads_dlpack(dtype, shape):
  x = rand(shape, dtype)
  for copy in (None, True):
    got = np.from_dlpack(anp.asarray(x), copy=copy)
    want = np.from_dlpack(jnp.asarray(x), copy=copy)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("copy", [None, True, False])
@pytest.mark.parametrize("to_device", [False, True])
def test_from_dlpack_of_arrays(dtype, copy, to_device):
  x = rand((2, 2), dtype)
  akw = {"copy": copy, **({"device": arrax.devices()[0]} if to_device else {})}
  jkw = {"copy": copy, **({"device": jax.devices()[0]} if to_device else {})}
  check(lambda a: anp.from_dlpack(a, **akw), lambda a: jnp.from_dlpack(a, **jkw), x)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_from_dlpack_of_numpy(shape):
  x = rand(shape, np.float32)
  check(lambda: anp.from_dlpack(x), lambda: jnp.from_dlpack(x))
  check(lambda: anp.from_dlpack(x, device=arrax.devices()[0], copy=True),
        lambda: jnp.from_dlpack(x, device=jax.devices()[0], copy=True))


def test_from_dlpack_errors():
  check(lambda: anp.from_dlpack([1, 2]), lambda: jnp.from_dlpack([1, 2]))
  check(lambda: anp.from_dlpack(np.array(["a"])), lambda: jnp.from_dlpack(np.array(["a"])))


def test_from_dlpack_of_jax_array():
  # Another producer's device array (through the host, bfloat16 included).
  for dtype in (np.float32, BF16, np.bool_):
    x = rand((2, 3), dtype)
    got = anp.from_dlpack(jnp.asarray(x))
    assert isinstance(got, arrax.Array) and got.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(jnp.from_dlpack(jnp.asarray(x))))


def test_from_dlpack_x64(x64):
  for dtype in (np.int64, np.float64, np.complex128, np.uint32):
    x = rand((3,), dtype)
    check(lambda a: anp.from_dlpack(a, device=arrax.devices()[0]),
          lambda a: jnp.from_dlpack(a, device=jax.devices()[0]), x)


# ---- permute_dims -----------------------------------------------------------------------------
PERMS = [((2, 3), (1, 0)), ((2, 3), (0, 1)), ((2, 3, 4), (2, 0, 1)), ((), ()), ((0,), (0,)),
         ((2, 3), (0, 0)), ((2, 3), (0,)), ((2, 3), (2, 0)), ((2, 3), (0, 1, 2)),
         ((2, 3), (-3, 0)), ((2, 3), (0, -3))]


@pytest.mark.parametrize("shape,axes", PERMS, ids=str)
def test_permute_dims(shape, axes):
  x = rand(shape, np.float32)
  check(lambda a: anp.permute_dims(a, axes), lambda a: jnp.permute_dims(a, axes), x)
  check(lambda a: anp.permute_dims(a, axes=axes), lambda a: jnp.permute_dims(a, axes=axes), x,
        jit=True, eager=False)


def test_permute_dims_not_an_array():
  check(lambda: anp.permute_dims([[1, 2]], (1, 0)), lambda: jnp.permute_dims([[1, 2]], (1, 0)))


@pytest.mark.parametrize("shape,axes", [((2, 3), (-1, 0)), ((2, 3), (-1, -2)), ((0,), (-1,)),
                                        ((2, 3, 4), (-1, 0, -2))], ids=str)
def test_permute_dims_negative_axes(shape, axes):
  # Beyond JAX: jnp.permute_dims rejects negative axes (lax.transpose's TypeError), arrax counts
  # them from the end as jnp.transpose does (the array API suite draws them).
  x = rand(shape, np.float32)
  with pytest.raises(TypeError):
    jnp.permute_dims(jnp.asarray(x), axes)
  check(lambda a: anp.permute_dims(a, axes), lambda a: jnp.transpose(a, axes), x)


# ---- boolean flags from the environment -------------------------------------------------------
@pytest.mark.parametrize("value", ["1", "0", "true", "False", "YES", "no", "t", "F", "y", "N",
                                   "on", "OFF", "", "2", "maybe", None])
@pytest.mark.parametrize("default", [False, True])
def test_env_bool_reads_as_jax(monkeypatch, value, default):
  if value is None:
    monkeypatch.delenv("JAX_ENABLE_X64", raising=False)
  else:
    monkeypatch.setenv("JAX_ENABLE_X64", value)
  check(lambda: arrax_config._env_bool("jax_enable_x64", default),
        lambda: jax_config.bool_env("JAX_ENABLE_X64", default))


X64_PROGRAM = textwrap.dedent("""
    import sys
    import {lib}.numpy as np_
    print(np_.arange(2).dtype, np_.asarray(1.5).dtype, np_.zeros(1, complex).dtype)
""")


@pytest.mark.parametrize("value", ["true", "t", "0"])
def test_jax_enable_x64_environment(value):
  env = dict(os.environ, JAX_ENABLE_X64=value, JAX_PLATFORMS="cpu")
  outs = [subprocess.run([sys.executable, "-c", X64_PROGRAM.format(lib=lib)], env=env,
                         capture_output=True, text=True, timeout=300)
          for lib in ("arrax", "jax")]
  assert outs[0].returncode == outs[1].returncode == 0, (outs[0].stderr, outs[1].stderr)
  assert outs[0].stdout == outs[1].stdout
