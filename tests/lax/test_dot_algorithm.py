"""Dot algorithms (lax.DotAlgorithm, lax.DotAlgorithmPreset) as the `precision` of dot_general,
dot, jnp.matmul/dot/einsum/tensordot and conv_general_dilated, against JAX 0.10.2: printed
jaxprs, the lowered StableHLO of the dot (operand conversions, the `algorithm` attribute, the
accumulation type and the conversion of the result), result dtypes, values where XLA:CPU
computes the algorithm, and JAX's ValueError where it does not.
"""
import functools
import re

import jax
import numpy as np
import pytest
from jax import lax as jlax

import arrax
import oracle
from oracle import ARRAX, BF16, JAX, check_all, rand

PRESETS = [p.name for p in jlax.DotAlgorithmPreset]
# Small integers: exact in every dtype the algorithms round to (float16, bfloat16, tf32).
_vals = functools.partial(rand, ints=(-3, 4), step=1)


def _op_lines(text):
  """The StableHLO lines of `text` that compute (no locations)."""
  ops = ("stablehlo.dot_general", "stablehlo.convert", "stablehlo.compare",
         "stablehlo.convolution")
  return [re.sub(r" loc\(.*\)$", "", ln.strip()) for ln in text.splitlines()
          if any(op in ln for op in ops)]


def _lowered(lib, fn, args):
  try:
    return _op_lines(lib.top.jit(functools.partial(fn, lib)).lower(*args).as_text())
  except Exception as e:  # noqa: BLE001
    return type(e).__name__


def check_lowered(fn, *args):
  """jit(fn(lib, *args)).lower(...) gives the same dot lines in both (or the same error)."""
  ours = _lowered(ARRAX, fn, [oracle.to_arrax(a) for a in args])
  theirs = _lowered(JAX, fn, [oracle.to_jax(a) for a in args])
  assert ours == theirs, f"arrax:\n{ours}\njax:\n{theirs}"


def check_case(fn, *args, jit=False, lowered=True):
  """Values (eagerly, or with `jit` under jit only), jaxpr text and, with `lowered`, the lowered
  dot lines of fn(lib, *args) agree with JAX."""
  build = lambda f, lib: functools.partial(f, lib)  # noqa: E731
  oracle.check(fn, *args, build=build, eager=not jit, jit=jit, exact=True)
  oracle.check_jaxpr(fn, *args, build=build)
  if lowered:
    check_lowered(fn, *args)


def _preset(lib, name):
  return getattr(lib.lax.DotAlgorithmPreset, name)


@pytest.mark.parametrize("name", PRESETS)
def test_presets_dot(name):
  """Each preset over the input dtypes: JAX's conversions and accumulation type, or its
  ValueError on CPU for the presets XLA:CPU does not compute."""
  cases = []
  extra = [BF16, np.int32] if name == "BF16_BF16_F32" else []
  for dt in [np.float32, np.float16] + extra:
    a, b = _vals((2, 3), dt), _vals((3, 4), dt, seed=1)
    fn = lambda lib, x, y: lib.lax.dot(x, y, precision=_preset(lib, name))  # noqa: E731
    cases.append((np.dtype(dt).name, lambda fn=fn, a=a, b=b: check_case(fn, a, b)))
  check_all(cases)


def test_presets_bool_complex_and_names():
  """bool and complex operands (converted back with x != 0 / the real part), preset names as
  strings, presets in lax.dot_general, batch_matmul and ragged_dot, DEFAULT on mixed dtypes."""
  a, b = _vals((2, 3), np.float32), _vals((3, 4), np.float32, seed=1)
  cases = []
  for name in ["F32_F32_F32", "BF16_BF16_F32", "F16_F16_F16"]:
    for dt in [np.bool_, np.complex64]:
      fn = lambda lib, x, y, name=name: lib.lax.dot(x, y, precision=_preset(lib, name))
      cases.append((f"{name}-{np.dtype(dt).name}",
                    lambda fn=fn, dt=dt: check_lowered(fn, a.astype(dt), b.astype(dt))))
  cases += [
      ("string", lambda: check_case(lambda lib, x, y: lib.lax.dot(x, y, precision="F32_F32_F32"),
                                    a, b, jit=True)),
      ("dot_general", lambda: check_case(
          lambda lib, x, y: lib.lax.dot_general(x[None], y[None], (((2,), (1,)), ((0,), (0,))),
                                                precision="BF16_BF16_F32_X3"), a, b)),
      ("batch_matmul", lambda: check_case(
          lambda lib, x, y: lib.lax.batch_matmul(x[None], y[None], precision="BF16_BF16_F32"),
          a, b, lowered=False)),
      ("ragged_dot", lambda: check_case(
          lambda lib, x, y: lib.lax.ragged_dot(x.T, y.reshape(2, 2, 3), np.array([1, 2], np.int32),
                                               precision="F32_F32_F32"), a, b, lowered=False)),
      ("DEFAULT_mixed", lambda: check_case(
          lambda lib, x, y: lib.lax.dot(x.astype(np.float16), y, precision="DEFAULT"), a, b)),
  ]
  check_all(cases)


def test_preferred_element_type():
  """The result dtype follows preferred_element_type; with an algorithm a narrower integer
  result is allowed (JAX skips its width check), without one it is a TypeError."""
  a, b = _vals((2, 3), np.float32), _vals((3, 4), np.float32, seed=1)
  ai, bi = a.astype(np.int32), b.astype(np.int32)
  ah, bh = a.astype(BF16), b.astype(BF16)
  dot = lambda p, pet: lambda lib, x, y: lib.lax.dot(  # noqa: E731
      x, y, precision=p, preferred_element_type=pet)
  check_all([
      ("f32->f16", lambda: check_case(dot("F32_F32_F32", np.float16), a, b)),
      ("bf16->f32", lambda: check_case(dot("BF16_BF16_F32", np.float32), ah, bh)),
      ("f16 algo, f32 out", lambda: check_case(dot("F16_F16_F16", np.float32), a, b)),
      ("i32->i8 algo", lambda: check_case(dot("F32_F32_F32", np.int8), ai, bi)),
      ("i32->i8", lambda: check_case(dot(None, np.int8), ai, bi)),
      ("i32->f32 unsupported", lambda: check_case(dot("TF32_TF32_F32", np.float32), ai, bi)),
  ])


def test_dot_algorithm_tuples():
  """A DotAlgorithm prints as JAX's tuple in jaxprs; XLA:CPU supports none of them (JAX's
  ValueError when lowered or run)."""
  a, b = _vals((2, 3), np.float32), _vals((3, 4), np.float32, seed=1)
  cases = []
  for types in [(np.float32, np.float32, np.float32), (np.float16, np.float16, np.float32)]:
    fn = lambda lib, x, y, t=types: lib.lax.dot(x, y, precision=lib.lax.DotAlgorithm(*t))
    cases.append((str(types), lambda fn=fn: check_case(fn, a, b)))
  fn = lambda lib, x, y: lib.lax.dot(x, y, precision=lib.lax.DotAlgorithm(  # noqa: E731
      np.float32, np.float32, np.float32, 1, 1, 3, True))
  cases.append(("fields", lambda: check_case(fn, a, b)))
  check_all(cases)


def test_errors():
  """Unknown names and a pair of preset names raise as in JAX."""
  a, b = _vals((2, 3), np.float32), _vals((3, 4), np.float32, seed=1)
  cases = []
  for p in ["BF16", "f32_f32_f32", ("F32_F32_F32", "F32_F32_F32"), ("highest", "BF16_BF16_F32"),
            3]:
    fn = lambda lib, x, y, p=p: lib.lax.dot(x, y, precision=p)
    cases.append((repr(p), lambda fn=fn: oracle.check_raises(
        fn, a, b, build=lambda f, lib: functools.partial(f, lib))))
  check_all(cases)


def test_numpy_functions():
  """jnp.matmul, jnp.dot, jnp.einsum (two and three operands) and jnp.tensordot pass the
  algorithm to their dot_generals."""
  a, b = _vals((2, 3), np.float32), _vals((3, 4), np.float32, seed=1)
  F32 = "F32_F32_F32"
  check_all([
      ("matmul", lambda: check_case(lambda lib, x, y: lib.np.matmul(
          x, y, precision=lib.lax.DotAlgorithmPreset.BF16_BF16_F32_X3), a, b)),
      ("dot", lambda: check_case(lambda lib, x, y: lib.np.dot(x, y, precision="F16_F16_F16"),
                                 a, b)),
      ("einsum", lambda: check_case(lambda lib, x, y: lib.np.einsum(
          "ij,jk->ik", x, y, precision=lib.lax.DotAlgorithmPreset.F32_F32_F32), a, b)),
      ("einsum3", lambda: check_case(lambda lib, x, y: lib.np.einsum(
          "ij,jk,kl->il", x, y, y.T, precision="BF16_BF16_F32"), a, b)),
      ("tensordot", lambda: check_case(lambda lib, x, y: lib.np.tensordot(x, y, 1, precision=F32),
                                       a, b)),
      ("matmul unsupported", lambda: check_case(
          lambda lib, x, y: lib.np.matmul(x, y, precision="TF32_TF32_F32"), a, b)),
  ])


def test_transformations():
  """grad, jvp and vmap keep the algorithm on every dot_general they make."""
  a, b = _vals((2, 3), np.float32), _vals((3, 4), np.float32, seed=1)
  P = "BF16_BF16_F32"
  check_all([
      ("grad", lambda: check_case(lambda lib, x, y: lib.top.grad(
          lambda x: lib.lax.dot(x, y, precision=P).sum())(x), a, b, lowered=False, jit=True)),
      ("grad f16", lambda: check_case(lambda lib, x, y: lib.top.grad(
          lambda y: lib.lax.dot(x.astype(np.float16), y, precision="F16_F16_F16").sum())(
              y.astype(np.float16)), a, b, lowered=False, jit=True)),
      ("jvp", lambda: check_case(lambda lib, x, y: lib.top.jvp(
          lambda x: lib.lax.dot(x, y, precision=P), (x,), (x,)), a, b, jit=True)),
      ("vmap", lambda: check_case(lambda lib, x, y: lib.top.vmap(
          lambda r: lib.lax.dot(r, y, precision="F32_F32_F32"))(x), a, b, jit=True)),
      ("vmap both", lambda: check_case(lambda lib, x, y: lib.top.vmap(
          lambda r, c: lib.lax.dot(r, c, precision="F32_F32_F32"), in_axes=(0, 1))(
              x, y[:, :2]), a, b, jit=True)),
  ])


def test_x64_f64(x64):
  """F64_F64_F64 on float64 operands, and on float32 ones (converted to f64 and back)."""
  a, b = _vals((2, 3), np.float64), _vals((3, 4), np.float64, seed=1)
  fn = lambda lib, x, y: lib.lax.dot(x, y, precision="F64_F64_F64")  # noqa: E731
  check_all([("f64", lambda: check_case(fn, a, b)),
             ("f32", lambda: check_case(fn, a.astype(np.float32), b.astype(np.float32))),
             ("bf16_x6", lambda: check_case(
                 lambda lib, x, y: lib.lax.dot(x, y, precision="BF16_BF16_F32_X6"), a, b))])


def test_default_matmul_precision_preset():
  """jax_default_matmul_precision may name a preset; jnp.matmul then uses it."""
  a, b = _vals((2, 3), np.float32), _vals((3, 4), np.float32, seed=1)
  for name, expect in [("BF16_BF16_F32", "precision=BF16_BF16_F32"),
                       ("F16_F16_F16", "precision=F16_F16_F16")]:
    with arrax.default_matmul_precision(name), jax.default_matmul_precision(name):
      check_case(lambda lib, x, y: lib.np.matmul(x, y), a, b)
      assert expect in str(arrax.make_jaxpr(arrax.numpy.matmul)(a, b))


def test_convolution():
  """conv_general_dilated takes a preset (printed in its jaxpr) and lowers with DEFAULT
  precision and no algorithm, as JAX does (also for presets dot_general rejects on CPU)."""
  x, w = _vals((1, 2, 5), np.float32), _vals((3, 2, 2), np.float32, seed=1)
  conv = lambda p, pet=None: lambda lib, x, w: lib.lax.conv_general_dilated(  # noqa: E731
      x, w, (1,), "VALID", precision=p, preferred_element_type=pet)
  xi, wi = x.astype(np.int32), w.astype(np.int32)
  check_all([
      ("BF16_BF16_F32", lambda: check_case(conv("BF16_BF16_F32"), x, w)),
      ("preset", lambda: check_case(
          lambda lib, x, w: conv(lib.lax.DotAlgorithmPreset.F16_F16_F32)(lib, x, w), x, w)),
      ("TF32 on CPU", lambda: check_case(conv("TF32_TF32_F32"), x, w)),
      ("int8 pet", lambda: check_case(conv("F32_F32_F32", np.int8), xi, wi)),
  ])
