"""jnp.fft against JAX 0.10.2: the 18 functions over lengths (n / s), axes, the norm modes and
input dtypes (booleans and integers compute in float32/complex64, float64 only under x64);
the frequency helpers and shifts; errors; jit, vmap and grad of real losses; printed jaxprs.
"""
import inspect

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from oracle import rand
from oracle import Raw, assert_tree_same, check, check_all

import arrax
import arrax.numpy as anp
from arrax.test_util import check_grads

BF16 = np.dtype(ml_dtypes.bfloat16)
NAMES = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
         "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
TWO_D = ["fft2", "ifft2", "rfft2", "irfft2"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn"]
NORMS = [None, "backward", "ortho", "forward"]
TOL = 1e-4


def _fns(name):
  return getattr(anp.fft, name), getattr(jnp.fft, name)


def jcheck(a, j, x, **kw):
  """check() of both functions under jit (one compilation per case instead of one per op)."""
  check(arrax.jit(lambda v: a(v, **kw)), jax.jit(lambda v: j(v, **kw)), x, tol=TOL)


def _input(rng, name, shape, dtype):
  # The real-input transforms reject complex values; give them real ones.
  if name in ("rfft", "rfft2", "rfftn", "ihfft") and np.dtype(dtype).kind == "c":
    dtype = np.float32
  return rand(shape, dtype, rng)


def test_public_names_and_signatures():
  assert sorted(n for n in dir(jnp.fft) if not n.startswith("_")) == sorted(NAMES)
  for name in NAMES:
    a, j = _fns(name)
    sa, sj = inspect.signature(a), inspect.signature(j)
    assert [(p.name, p.kind, p.default) for p in sa.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in sj.parameters.values()], name
    assert a.__doc__
  assert anp.fft is arrax.numpy.fft


# ---- one-dimensional transforms ----------------------------------------------------------------
@pytest.mark.parametrize("name", ONE_D)
def test_1d_lengths_axes_norms(name):
  rng = np.random.default_rng(0)
  a, j = _fns(name)
  cases = []
  k = 0
  for shape in [(5,), (4, 6), (2, 3, 5)]:
    x = _input(rng, name, shape, np.complex64)
    for n in ([None, 1, 4, 9] if len(shape) == 1 else [None, 4, 9]):
      for axis in sorted({-1, 0}):
        norm = NORMS[k % 4]   # every norm meets every shape, several lengths and axes
        k += 1
        cases.append((f"{shape} n={n} axis={axis} norm={norm}",
                      lambda x=x, n=n, axis=axis, norm=norm: jcheck(
                          a, j, x, n=n, axis=axis, norm=norm)))
  check_all(cases)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.float16, BF16,
                                   np.float32, np.complex64])
def test_1d_input_dtypes(dtype):
  rng = np.random.default_rng(1)
  cases = []
  for k, name in enumerate(ONE_D):
    a, j = _fns(name)
    x = _input(rng, name, (3, 6), dtype)
    cases.append((name, lambda a=a, j=j, x=x: check(a, j, x, tol=TOL)))
    if k % 2:
      cases.append((f"{name} n=4 axis=0", lambda a=a, j=j, x=x: check(a, j, x, 4, 0, tol=TOL)))
    else:
      cases.append((f"{name} list", lambda a=a, j=j, x=x: check(a, j, Raw(x.tolist()),
                                                                 tol=TOL)))
  check_all(cases)


@pytest.mark.parametrize("name", ONE_D)
def test_1d_special_values_and_scalars(name):
  a, j = _fns(name)
  x = np.array([1.0, np.nan, 2.0, np.inf, -1.0, 0.0], np.float32)
  cases = [("nan/inf", lambda: check(a, j, x, tol=TOL)),
           ("scalar", lambda: check(a, j, 2.0, tol=TOL)),
           ("0-d", lambda: check(a, j, np.float32(3.0), tol=TOL)),
           ("axis None", lambda: check(a, j, np.ones((2, 3), np.float32), axis=None, tol=TOL)),
           ("axis None n", lambda: check(a, j, np.ones((2, 3), np.float32), 4, None, tol=TOL)),
           ("empty batch", lambda: check(a, j, np.zeros((0, 4), np.float32), tol=TOL))]
  check_all(cases)


def test_1d_errors():
  x = np.ones((3, 4), np.float32)
  c = np.ones((3, 4), np.complex64)
  cases = []
  for name in ONE_D:
    a, j = _fns(name)
    cases += [
        (f"{name} axis list", lambda a=a, j=j: check(a, j, x, axis=[0])),
        (f"{name} axis tuple", lambda a=a, j=j: check(a, j, x, axis=(0, 1))),
        (f"{name} axis out of range", lambda a=a, j=j: check(a, j, x, axis=2)),
        (f"{name} n=0", lambda a=a, j=j: check(a, j, x, n=0)),
        (f"{name} n=-2", lambda a=a, j=j: check(a, j, x, n=-2)),
        (f"{name} n float", lambda a=a, j=j: check(a, j, x, n=2.5)),
        (f"{name} bad norm", lambda a=a, j=j: check(a, j, x, norm="bad")),
        (f"{name} string", lambda a=a, j=j: check(a, j, Raw("abc"))),
    ]
  for name in ("rfft", "ihfft", "rfftn", "rfft2"):
    a, j = _fns(name)
    cases.append((f"{name} complex", lambda a=a, j=j: check(a, j, c)))
    # A real transform of an empty signal: JAX's module fails to verify (ValueError).
    cases.append((f"{name} empty", lambda a=a, j=j: check(a, j, np.zeros((2, 0), np.float32))))
  check_all(cases)


# ---- two- and N-dimensional transforms ---------------------------------------------------------
@pytest.mark.parametrize("name", N_D + TWO_D)
def test_nd_shapes_axes_norms(name):
  rng = np.random.default_rng(2)
  a, j = _fns(name)
  x = _input(rng, name, (2, 3, 4, 5), np.complex64)
  two = name in TWO_D
  combos = [(None, None), ((3, 4), None), ((2, 6), (0, 2)), (None, (1, -1)), ((5, 2), (2, 0))]
  if not two:
    combos += [((6,), (1,)), (None, (0, 1, 3)), (None, (3, 1, 0, 2)), ((3, 2, 4, 6), None),
               ((), ())]
  cases = []
  for k, (s, axes) in enumerate(combos):
    kw = {} if axes is None and two else {"axes": axes}
    for norm in (NORMS[k % 4],):
      cases.append((f"s={s} axes={axes} norm={norm}",
                     lambda s=s, kw=kw, norm=norm: jcheck(a, j, x, s=s, norm=norm, **kw)))
  check_all(cases)


@pytest.mark.parametrize("name", N_D + TWO_D)
def test_nd_dtypes_and_small_inputs(name):
  rng = np.random.default_rng(3)
  a, j = _fns(name)
  cases = []
  k = (N_D + TWO_D).index(name)
  for dtype in [[np.bool_, np.int32, np.uint8, BF16, np.float32, np.complex64][i % 6]
                for i in (k, k + 2, k + 4)]:   # every dtype meets several functions
    x = _input(rng, name, (3, 5), dtype)
    cases.append((str(dtype), lambda x=x: check(a, j, x, tol=TOL)))
  cases += [("2-d list", lambda: check(a, j, Raw([[1, 2, 3], [4, 5, 6]]), tol=TOL)),
            ("1x1", lambda: check(a, j, np.ones((1, 1), np.float32), tol=TOL)),
            ("nan", lambda: check(a, j, np.array([[np.nan, 1.0], [2.0, 3.0]], np.float32),
                                  tol=TOL)),
            ("1-d", lambda: check(a, j, np.arange(4.0, dtype=np.float32), tol=TOL)),
            ("0-d", lambda: check(a, j, np.float32(1.5), tol=TOL))]
  check_all(cases)


def test_nd_errors():
  x = np.ones((2, 3, 4), np.float32)
  cases = []
  for name in N_D + TWO_D:
    a, j = _fns(name)
    cases += [
        (f"{name} repeated axes", lambda a=a, j=j: check(a, j, x, axes=(1, 1))),
        (f"{name} aliased axes", lambda a=a, j=j: check(a, j, x, axes=(2, -1))),
        (f"{name} s/axes lengths", lambda a=a, j=j: check(a, j, x, s=(2, 3, 4), axes=(0, 1))),
        (f"{name} s zero", lambda a=a, j=j: check(a, j, x, s=(0, 3))),
        (f"{name} s negative", lambda a=a, j=j: check(a, j, x, s=(2, -3))),
        (f"{name} axis out of range", lambda a=a, j=j: check(a, j, x, axes=(0, 3))),
        (f"{name} bad norm", lambda a=a, j=j: check(a, j, x, norm="ortho2")),
        (f"{name} list", lambda a=a, j=j: check(a, j, Raw([1.0, 2.0]))),
    ]
  for name in TWO_D:
    a, j = _fns(name)
    cases += [(f"{name} three axes", lambda a=a, j=j: check(a, j, x, axes=(0, 1, 2))),
              (f"{name} one axis", lambda a=a, j=j: check(a, j, x, axes=(0,))),
              (f"{name} 1-d input", lambda a=a, j=j: check(a, j, np.ones(4, np.float32)))]
  check_all(cases)


def test_roundtrips():
  rng = np.random.default_rng(4)
  x = rand((3, 4, 5), np.float32, rng)
  np.testing.assert_allclose(anp.fft.irfftn(anp.fft.rfftn(x), s=x.shape), x, atol=1e-5)
  np.testing.assert_allclose(anp.fft.irfft(anp.fft.rfft(x, axis=1), 4, axis=1), x, atol=1e-5)
  np.testing.assert_allclose(anp.fft.ifft2(anp.fft.fft2(x, norm="ortho"), norm="ortho").real,
                             x, atol=1e-5)
  np.testing.assert_allclose(anp.fft.hfft(anp.fft.ihfft(x), 5), x, atol=1e-5)
  np.testing.assert_allclose(anp.fft.fftn(x), np.fft.fftn(x), rtol=1e-4, atol=1e-4)


def test_x64(x64):
  rng = np.random.default_rng(5)
  cases = []
  for dtype in [np.float64, np.int64, np.complex128]:
    for name in ["fft", "rfft", "irfft", "fftn"]:
      a, j = _fns(name)
      x = _input(rng, name, (3, 4), dtype)
      if name in ("rfft", "ihfft") and dtype == np.complex128:
        x = rand((3, 4), np.float64, rng)
      cases.append((f"{name} {np.dtype(dtype)}",
                    lambda a=a, j=j, x=x: check(a, j, x, norm="ortho", tol=1e-10)))
  cases += [(f"{f} x64 dtype={dt}", lambda f=f, dt=dt: check(*_fns(f), 6, 0.25, dtype=dt))
            for f in ("fftfreq", "rfftfreq") for dt in (None, np.float32)]
  check_all(cases)


# ---- frequencies and shifts --------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_freqs(name):
  a, j = _fns(name)
  cases = []
  for n, d in [(1, 1.0), (2, 0.1), (5, 2), (8, np.array(0.25, np.float32))]:
    cases.append((f"n={n} d={d!r}", lambda n=n, d=d: check(a, j, n, d)))
  for dtype in [BF16, np.int32, np.complex64, "float32"]:
    cases.append((f"dtype={dtype}", lambda dtype=dtype: check(a, j, 7, 0.5, dtype=dtype)))
  cases += [("n list", lambda: check(a, j, Raw([4]))),
            ("d list", lambda: check(a, j, 4, Raw([1.0]))),
            ("d tuple", lambda: check(a, j, 4, Raw((1.0, 2.0)))),
            ("n zero", lambda: check(a, j, 0)),
            ("keyword", lambda: check(a, j, n=6, d=0.5))]
  check_all(cases)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts(name):
  rng = np.random.default_rng(6)
  a, j = _fns(name)
  cases = []
  for shape in [(), (1,), (5,), (4,), (3, 4), (2, 0, 3), (2, 3, 5)]:
    x = rand(shape, np.float32, rng)
    cases.append((f"{shape}", lambda x=x: check(a, j, x)))
  x = rand((2, 3, 5), np.float32, rng)
  cases += [(f"axes={ax!r}", lambda ax=ax: check(a, j, x, axes=ax))
            for ax in (-1, 1, (0,), [2, 0], (0, -1), ())]
  for dtype in [np.bool_, np.uint8, BF16, np.complex64]:
    x = rand((3, 5), dtype, rng)
    cases.append((str(dtype), lambda x=x: check(a, j, x)))
  cases += [("scalar", lambda: check(a, j, 3)),
            ("list", lambda: check(a, j, Raw([1, 2, 3]))),
            ("axis out of range", lambda: check(a, j, np.ones((2, 3)), axes=2))]
  check_all(cases)


def test_shift_of_freqs():
  for n in (5, 6):
    np.testing.assert_allclose(anp.fft.fftshift(anp.fft.fftfreq(n)),
                               np.fft.fftshift(np.fft.fftfreq(n)), rtol=1e-6)
    np.testing.assert_allclose(anp.fft.ifftshift(anp.fft.fftshift(anp.fft.fftfreq(n))),
                               np.fft.fftfreq(n), rtol=1e-6)


# ---- transformations ----------------------------------------------------------------------------
def test_jit():
  rng = np.random.default_rng(7)
  x = rand((3, 4, 6), np.float32, rng)
  c = rand((3, 4, 6), np.complex64, rng)

  def many(lib_np):
    def f(x, c):
      fft = lib_np.fft
      return (fft.fft(c, 5, 1, "ortho"), fft.ifft(x), fft.rfft(x, axis=0, norm="forward"),
              fft.irfft(c, 7), fft.hfft(c, axis=1), fft.ihfft(x, 4), fft.fft2(c, (2, 3)),
              fft.ifft2(x, axes=(0, 2)), fft.rfft2(x), fft.irfft2(c, (3, 8)),
              fft.fftn(c, axes=(0, 1, 2)), fft.ifftn(x, (2, 2)), fft.rfftn(x, (3, 4, 5)),
              fft.irfftn(c, axes=(0, 2), norm="ortho"), fft.fftshift(x), fft.ifftshift(c, 1),
              fft.fftfreq(6, 0.5), fft.rfftfreq(7))
    return f

  assert_tree_same(arrax.jit(many(anp))(x, c), jax.jit(many(jnp))(x, c), tol=TOL)


def test_jit_static_n():
  x = rand((2, 6), np.float32, 8)
  f = lambda lib_np, jit: jit(lambda v, n, norm: lib_np.fft.rfft(v, n, norm=norm),
                              static_argnums=(1, 2))
  for n, norm in [(4, "ortho"), (9, None)]:
    assert_tree_same(f(anp, arrax.jit)(x, n, norm), f(jnp, jax.jit)(x, n, norm), tol=TOL)


@pytest.mark.parametrize("in_axes", [1, -1])
def test_vmap(in_axes):
  rng = np.random.default_rng(9)
  x = rand((3, 4, 6), np.float32, rng)

  def f(lib_np):
    def g(v):
      fft = lib_np.fft
      return (fft.rfft(v, 5, axis=0), fft.irfft(fft.rfft(v)), fft.ifftn(v, axes=(1, 0)),
              fft.hfft(v, axis=0), fft.fftshift(v, axes=1))
    return g

  out = arrax.vmap(f(anp), in_axes=in_axes)(x)
  ref = jax.vmap(f(jnp), in_axes=in_axes)(x)
  assert_tree_same(out, ref, tol=TOL)


def test_grad_of_real_losses():
  rng = np.random.default_rng(10)
  x = rand((4, 6), np.float32, rng)
  c = rand((4, 6), np.complex64, rng)

  def losses(lib_np):
    fft = lib_np.fft
    return [
        lambda v: (lib_np.abs(fft.rfft(v)) ** 2).sum(),
        lambda v: fft.irfft(fft.rfft(v) * (1 + 2j), 6).sum() ** 2,
        lambda v: (fft.irfft(v.astype(np.complex64), 7, axis=0) ** 3).sum(),
        lambda v: lib_np.abs(fft.fftn(v, (3, 5), norm="forward")).sum() + fft.fft(v).imag.sum(),
        lambda v: fft.irfft2(fft.rfft2(lib_np.sin(v)), (4, 6)).var(),
        lambda v: (fft.hfft(v) * fft.ihfft(fft.fftshift(v), 6).real.sum()).sum(),
    ]

  cases = []
  for i, (fa, fj) in enumerate(zip(losses(anp), losses(jnp))):
    cases.append((f"loss {i}", lambda fa=fa, fj=fj: assert_tree_same(
        arrax.jit(arrax.grad(fa))(x), jax.jit(jax.grad(fj))(x), tol=1e-3)))
  # Complex inputs: JAX's convention (conjugate of the Wirtinger derivative) through fft/ifft.
  def loss(lib_np):
    return lambda v: (lib_np.abs(lib_np.fft.ifft(lib_np.fft.fft(v) * 2)) ** 2).sum()

  cases.append(("complex input", lambda: assert_tree_same(arrax.grad(loss(anp))(c),
                                                          jax.grad(loss(jnp))(c), tol=1e-3)))
  check_all(cases)


def test_grads_numerically(x64):
  rng = np.random.default_rng(11)
  x = rand((3, 5), np.float64, rng)
  for f in [lambda v: anp.fft.rfft(v, 8, norm="ortho"), lambda v: anp.fft.irfft(v, 6, axis=0),
            lambda v: anp.fft.fftn(v, (2, 4)), lambda v: anp.fft.ihfft(v)]:
    check_grads(f, (x,), order=1, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


# ---- printed jaxprs -----------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda np_: lambda v: np_.fft.fft(v),
    lambda np_: lambda v: np_.fft.fft(v, n=3),
    lambda np_: lambda v: np_.fft.fft(v, n=6, norm="forward"),
    lambda np_: lambda v: np_.fft.ifft(v, axis=0, norm="backward"),
    lambda np_: lambda v: np_.fft.rfft(v, norm="ortho", axis=0),
    lambda np_: lambda v: np_.fft.irfft(v, n=5),
    lambda np_: lambda v: np_.fft.hfft(v),
    lambda np_: lambda v: np_.fft.ihfft(v),
    lambda np_: lambda v: np_.fft.ifft2(v, norm="ortho"),
    lambda np_: lambda v: np_.fft.fftn(v, s=(2, 5)),
    lambda np_: lambda v: np_.fft.rfftn(v[None, None], s=(2, 2, 3, 4)),
    lambda np_: lambda v: np_.fft.irfftn(v[None, None, None]),
    lambda np_: lambda v: np_.fft.fftshift(v),
    lambda np_: lambda v: np_.fft.ifftshift(v, axes=1),
    lambda np_: lambda v: np_.fft.fftfreq(5),
    lambda np_: lambda v: np_.fft.rfftfreq(6, 0.5),
])
def test_jaxprs_print_like_jax(call):
  x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  a = str(arrax.make_jaxpr(call(anp))(x))
  j = str(jax.make_jaxpr(call(jnp))(x))
  assert a == j, f"arrax:\n{a}\nJAX:\n{j}"


def test_grad_jaxpr_prints_like_jax():
  x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  f = lambda lib, np_: lib.grad(lambda v: np_.fft.irfft(np_.fft.rfft(v) * 2).sum())
  assert str(arrax.make_jaxpr(f(arrax, anp))(x)) == str(jax.make_jaxpr(f(jax, jnp))(x))


@pytest.mark.xfail(strict=True, reason="jnp.array of a tracer does not stage JAX's `copy` "
                   "(arrax's creation.array forwards the tracer)")
def test_fftfreq_traced_d_jaxpr():
  x = np.float32(0.5)
  f = lambda np_: lambda d: np_.fft.fftfreq(4, d)
  assert str(arrax.make_jaxpr(f(anp))(x)) == str(jax.make_jaxpr(f(jnp))(x))


def test_fftfreq_traced_d_values():
  f = lambda np_: lambda d: np_.fft.fftfreq(4, d)
  assert_tree_same(arrax.jit(f(anp))(np.float32(0.5)), jax.jit(f(jnp))(np.float32(0.5)))
