"""lax.fft (the fft primitive) against JAX 0.10.2: every FftType over 1 to 3 transformed axes,
odd and even lengths, input dtype conversion, complex128 under x64; JVP and VJP (against
jax.jvp / jax.vjp and by finite differences); vmap over each axis; jit; printed jaxprs; and
the errors of bad types, lengths and dtypes.
"""
import jax as real_jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from oracle import assert_tree_same
from oracle import rand as _oracle_rand


def _rand(rng, shape, dtype):
  return _oracle_rand(shape, dtype, rng)
from jax import lax as jlax
from oracle import check, check_all

import arrax
from arrax import lax as alax
from arrax import test_util as atu

BF16 = np.dtype(ml_dtypes.bfloat16)
FFT, IFFT, RFFT, IRFFT = "fft", "ifft", "rfft", "irfft"


def _in_shape(fft_type, batch, lengths):
  """The operand shape an fft of `lengths` takes (IRFFT: the half spectrum innermost)."""
  lengths = tuple(lengths)
  if fft_type in (IRFFT, alax.FftType.IRFFT):
    return tuple(batch) + lengths[:-1] + (lengths[-1] // 2 + 1,)
  return tuple(batch) + lengths


def _operand(rng, fft_type, batch, lengths, dtype=None):
  real = fft_type in (RFFT, alax.FftType.RFFT)
  dtype = dtype or (np.float32 if real else np.complex64)
  return _rand(rng, _in_shape(fft_type, batch, lengths), dtype)


def _tol(dtype):
  return 1e-10 if np.dtype(dtype) in (np.float64, np.complex128) else 2e-5


LENGTHS = [(1,), (5,), (8,), (3, 4), (4, 7), (2, 3, 5), (3, 3, 4)]


# ---- values -----------------------------------------------------------------------------------
@pytest.mark.parametrize("fft_type", [FFT, IFFT, RFFT, IRFFT])
def test_values_all_lengths(fft_type):
  rng = np.random.default_rng(0)
  cases = []
  for lengths in LENGTHS:
    for batch in [(), (2,)]:
      x = _operand(rng, fft_type, batch, lengths)
      cases.append((f"{lengths} batch={batch}",
                    lambda x=x, n=lengths: check(lambda v: alax.fft(v, fft_type, n),
                                                 lambda v: jlax.fft(v, fft_type, n), x,
                                                 tol=1e-4)))
  check_all(cases)


def test_values_match_numpy():
  rng = np.random.default_rng(1)
  x = _rand(rng, (3, 4, 5), np.complex64)
  np.testing.assert_allclose(alax.fft(x, FFT, (4, 5)), np.fft.fftn(x, axes=(1, 2)), atol=1e-4)
  np.testing.assert_allclose(alax.fft(x, IFFT, (3, 4, 5)), np.fft.ifftn(x), atol=1e-5)
  r = _rand(rng, (2, 7), np.float32)
  np.testing.assert_allclose(alax.fft(r, RFFT, (7,)), np.fft.rfft(r), atol=1e-4)
  h = _rand(rng, (2, 6, 4), np.complex64)
  np.testing.assert_allclose(alax.fft(h, IRFFT, (6, 7)), np.fft.irfftn(h, (6, 7), axes=(1, 2)),
                             atol=1e-5)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.float16, BF16,
                                   np.float32, np.complex64])
def test_input_dtypes_convert(dtype):
  # FFT/IFFT cast to complex, RFFT to floating (float16 is then rejected), IRFFT to complex.
  rng = np.random.default_rng(2)
  x = _rand(rng, (3, 4), dtype)
  check_all([(t, lambda t=t: check(lambda v: alax.fft(v, t, (4,)),
                                   lambda v: jlax.fft(v, t, (4,)), x))
             for t in (FFT, IFFT, RFFT)]
            + [(IRFFT, lambda: check(lambda v: alax.fft(v, IRFFT, (6,)),
                                     lambda v: jlax.fft(v, IRFFT, (6,)), x))])


def test_fft_type_spellings():
  x = _rand(np.random.default_rng(3), (2, 4), np.complex64)
  expected = jlax.fft(x, jlax.FftType.IFFT, (4,))
  for t in ("ifft", "IFFT", alax.FftType.IFFT):
    assert_tree_same(alax.fft(x, t, (4,)), expected)
  assert [m.name for m in alax.FftType] == [m.name for m in jlax.FftType]
  assert [int(m) for m in alax.FftType] == [int(m) for m in jlax.FftType]
  assert isinstance(alax.FftType.RFFT, int) and alax.FftType(3) is alax.FftType.IRFFT


def test_empty_lengths_and_empty_arrays():
  rng = np.random.default_rng(4)
  x = _rand(rng, (2, 3), np.float32)
  check_all([
      ("no lengths fft", lambda: check(lambda v: alax.fft(v, FFT, ()),
                                       lambda v: jlax.fft(v, FFT, ()), x)),
      ("no lengths rfft", lambda: check(lambda v: alax.fft(v, RFFT, ()),
                                        lambda v: jlax.fft(v, RFFT, ()), x)),
      ("scalar", lambda: check(lambda v: alax.fft(v, IFFT, ()),
                               lambda v: jlax.fft(v, IFFT, ()), 2.0)),
      ("empty batch", lambda: check(lambda v: alax.fft(v, FFT, (3,)),
                                    lambda v: jlax.fft(v, FFT, (3,)),
                                    np.zeros((0, 3), np.complex64))),
      ("zero length", lambda: check(lambda v: alax.fft(v, FFT, (0,)),
                                    lambda v: jlax.fft(v, FFT, (0,)),
                                    np.zeros((2, 0), np.complex64))),
  ])


def test_x64_dtypes(x64):
  rng = np.random.default_rng(5)
  cases = []
  for t in (FFT, IFFT, RFFT, IRFFT):
    for dtype in ((np.float64, np.int64) if t == RFFT else (np.complex128, np.float64)):
      for lengths in [(6,), (3, 5)]:
        x = _operand(rng, t, (2,), lengths, dtype)
        cases.append((f"{t} {dtype.__name__} {lengths}",
                      lambda t=t, x=x, n=lengths: check(lambda v: alax.fft(v, t, n),
                                                        lambda v: jlax.fft(v, t, n), x,
                                                        tol=1e-10)))
  check_all(cases)


# ---- jit and vmap -----------------------------------------------------------------------------
@pytest.mark.parametrize("fft_type", [FFT, IFFT, RFFT, IRFFT])
def test_jit(fft_type):
  x = _operand(np.random.default_rng(6), fft_type, (2,), (3, 5))
  out = arrax.jit(lambda v: alax.fft(v, fft_type, (3, 5)))(x)
  ref = real_jax.jit(lambda v: jlax.fft(v, fft_type, (3, 5)))(x)
  assert_tree_same(out, ref, 1e-4)
  # The lax wrapper is itself a jit with static fft_type and fft_lengths.
  assert_tree_same(arrax.jit(alax.fft, static_argnums=(1, 2))(x, fft_type, (3, 5)), ref, 1e-4)


@pytest.mark.parametrize("fft_type", [FFT, IFFT, RFFT, IRFFT])
@pytest.mark.parametrize("in_axis", [0, 1, 2, -1])
def test_vmap_axes(fft_type, in_axis):
  # The batch axis may sit among, or after, the transformed axes: the rule moves it in front.
  rng = np.random.default_rng(7)
  lengths = (3, 4)
  x = _operand(rng, fft_type, (), lengths)
  x = np.stack([x, 2 * x, -x], axis=in_axis)
  f = lambda lax_mod: lambda v: lax_mod.fft(v, fft_type, lengths)
  out = arrax.vmap(f(alax), in_axes=in_axis)(x)
  ref = real_jax.vmap(f(jlax), in_axes=in_axis)(x)
  assert_tree_same(out, ref, 1e-4)


def test_vmap_out_axes_and_nested():
  x = _rand(np.random.default_rng(8), (2, 3, 4, 5), np.complex64)
  f = lambda lax_mod: lambda v: lax_mod.fft(v, IFFT, (5,))
  out = arrax.vmap(arrax.vmap(f(alax), in_axes=1), in_axes=2, out_axes=1)(x)
  ref = real_jax.vmap(real_jax.vmap(f(jlax), in_axes=1), in_axes=2, out_axes=1)(x)
  assert_tree_same(out, ref, 1e-4)


# ---- differentiation --------------------------------------------------------------------------
@pytest.mark.parametrize("fft_type", [FFT, IFFT, RFFT, IRFFT])
@pytest.mark.parametrize("lengths", [(5,), (6,), (3, 4), (2, 3, 5)])
def test_jvp_vjp_match_jax(fft_type, lengths):
  rng = np.random.default_rng(9)
  x = _operand(rng, fft_type, (2,), lengths)
  t = _operand(rng, fft_type, (2,), lengths)
  f = lambda lax_mod: lambda v: lax_mod.fft(v, fft_type, lengths)

  def jvp_vjp(lib, lax_mod):
    def run(x, t):
      y, ty = lib.jvp(f(lax_mod), (x,), (t,))
      y2, pullback = lib.vjp(f(lax_mod), x)
      return y, ty, pullback(ty)[0], pullback(y2)[0]
    return lib.jit(run)

  assert_tree_same(jvp_vjp(arrax, alax)(x, t), jvp_vjp(real_jax, jlax)(x, t), 1e-4)


@pytest.mark.parametrize("fft_type", [FFT, IFFT, RFFT, IRFFT])
@pytest.mark.parametrize("lengths", [(5,), (4,), (3, 4), (2, 2, 3)])
def test_grads_numerically(x64, fft_type, lengths):
  x = _operand(np.random.default_rng(10), fft_type, (2,), lengths,
               np.float64 if fft_type == RFFT else np.complex128)
  atu.check_grads(lambda v: alax.fft(v, fft_type, lengths), (x,), order=2,
                  modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


def test_grad_of_real_loss_matches_jax():
  rng = np.random.default_rng(11)
  x = _rand(rng, (3, 6), np.float32)

  def loss(lax_mod, lib_np):
    def f(v):
      spec = lax_mod.fft(v, RFFT, (6,))
      back = lax_mod.fft(spec * spec, IRFFT, (6,))
      full = lax_mod.fft(v.astype(np.complex64), FFT, (3, 6))
      return (back ** 2).sum() + lib_np.abs(full).sum()
    return f

  g = arrax.grad(loss(alax, arrax.numpy))(x)
  ref = real_jax.grad(loss(jlax, jnp))(x)
  assert_tree_same(g, ref, 1e-3)


def test_linearity_and_symbolic_zero_tangents():
  x = _rand(np.random.default_rng(12), (4,), np.complex64)
  ts = [top.jvp(lambda v, lax=lax: lax.fft(v, FFT, (4,)) * 0 + lax.fft(x, FFT, (4,)), (x,),
                 (x,))[1] for top, lax in ((arrax, alax), (real_jax, jlax))]
  assert_tree_same(ts[0], ts[1])
  assert not np.asarray(ts[0]).any()
  # A function whose FFT input does not depend on the argument has a zero derivative.
  g = arrax.grad(lambda s: (alax.fft(x, FFT, (4,)).real.sum() + s))(1.0)
  assert float(g) == 1.0


# ---- printed jaxprs ---------------------------------------------------------------------------
def _jaxprs_equal(make, *args):
  a = str(arrax.make_jaxpr(make(arrax, alax))(*args))
  j = str(real_jax.make_jaxpr(make(real_jax, jlax))(*args))
  assert a == j, f"arrax:\n{a}\nJAX:\n{j}"


def test_jaxprs_print_like_jax():
  rng = np.random.default_rng(13)
  c = _rand(rng, (3, 4), np.complex64)
  r = _rand(rng, (3, 4), np.float32)
  t = _rand(rng, (3, 6), np.float32)
  _jaxprs_equal(lambda lib, lax_mod: lambda v: lax_mod.fft(v, "fft", (4,)), c)
  _jaxprs_equal(lambda lib, lax_mod: lambda v: lax_mod.fft(v, lax_mod.FftType.IFFT, (3, 4)), r)
  _jaxprs_equal(lambda lib, lax_mod: lambda v: lax_mod.fft(v, "irfft", (3, 6)), c)
  _jaxprs_equal(lambda lib, lax_mod: lib.grad(
      lambda v: lax_mod.fft(v, "rfft", (4,)).real.sum()), r)
  _jaxprs_equal(lambda lib, lax_mod: lambda v, ct: lib.vjp(
      lambda u: lax_mod.fft(u, "irfft", (6,)), v)[1](ct), c, t)
  _jaxprs_equal(lambda lib, lax_mod: lambda v, ct: lib.vjp(
      lambda u: lax_mod.fft(u, "ifft", (3, 4)), v)[1](ct), c, c)
  _jaxprs_equal(lambda lib, lax_mod: lambda v, tv: lib.jvp(
      lambda u: lax_mod.fft(u, "fft", (4,)), (v,), (tv,)), c, c)
  _jaxprs_equal(lambda lib, lax_mod: lib.vmap(lambda v: lax_mod.fft(v, "fft", (3,)),
                                              in_axes=1), c)


# ---- errors -----------------------------------------------------------------------------------
def test_errors_match_jax():
  rng = np.random.default_rng(14)
  c = _rand(rng, (3, 4), np.complex64)
  r = _rand(rng, (3, 4), np.float32)
  bad = [
      (c, "fft", [4]),            # unhashable static fft_lengths (ValueError)
      (c, "fft", (5,)),           # lengths differ from the minor dimensions
      (c, "fft", (3, 3, 4)),      # more lengths than dimensions
      (c, "bad", (4,)),           # unknown name (ValueError)
      (c, "Fft", (4,)),           # names are lower or upper case only
      (c, 3, (4,)),               # neither a name nor an FftType (TypeError)
      (c, "rfft", (4,)),          # complex input to RFFT
      (r.astype(np.float16), "rfft", (4,)),    # RFFT needs float32/float64
      (c, "irfft", (2, 6)),       # IRFFT outer lengths differ
      (c, "irfft", (4,)),         # IRFFT innermost is not n // 2 + 1 (XLA's MLIRError)
      # Non-integer lengths fail to lower (a shape no other test uses: jit caches of both
      # libraries take (9.0,) for (9,)).
      (np.ones((7, 9), np.complex64), "fft", (9.0,)),
      (np.ones((2, 3, 4, 5), np.complex64), "fft", (2, 3, 4, 5)),   # XLA: at most 3 axes
      (r, "fft", (3, 0)),
      (np.zeros((3, 0), np.float32), "rfft", (0,)),   # XLA's result has no terms: no module
  ]
  check_all([(f"{args[1]!r} {args[2]!r}",
              lambda args=args: check(lambda v: alax.fft(v, *args[1:]),
                                      lambda v: jlax.fft(v, *args[1:]), args[0]))
             for args in bad])
  # Every case above raises in JAX (so each check compared error classes).
  for x, t, n in bad:
    with pytest.raises(Exception):  # noqa: B017  (classes vary; check() compared them)
      jlax.fft(jnp.asarray(x), t, n)


def test_primitive_abstract_eval_errors():
  x = np.ones((3, 4), np.float32)
  with pytest.raises(ValueError, match="complex64 or complex128"):
    alax.fft_p.bind(arrax.numpy.asarray(x), fft_type=alax.FftType.FFT, fft_lengths=(4,))
  with pytest.raises(ValueError, match="complex64 or complex128"):
    alax.fft_p.bind(arrax.numpy.asarray(x), fft_type=alax.FftType.IRFFT, fft_lengths=(6,))
  with pytest.raises(ValueError, match="float32 or float64"):
    alax.fft_p.bind(arrax.numpy.asarray(x.astype(np.complex64)), fft_type=alax.FftType.RFFT,
                    fft_lengths=(4,))
