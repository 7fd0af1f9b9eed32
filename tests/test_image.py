"""arrax.image against jax.image: resize and scale_and_translate for every method, up- and
downsampling with and without antialiasing, 1-3 spatial dims with batch/channel dims kept,
dtypes (float, half, integer, bool, complex, x64), jit, grad (against JAX and numerically),
vmap, jaxpr text and error classes.
"""
import jax
import numpy as np
import pytest

import arrax
from arrax import test_util as atu
from oracle import (BF16, Raw, assert_same, check_all, check_jaxpr, check_jvp_vjp, check_raises,
                    check_value, check_vmap, grad_of, make_with, rand)

METHODS = ["nearest", "linear", "cubic", "lanczos3", "lanczos5", "cubic-pytorch", "area"]
ALIASES = ["bilinear", "trilinear", "triangle", "bicubic", "tricubic", "bicubic-pytorch"]

# (input shape, output shape): image with leading batch and trailing channel dims; 1-, 2- and
# 3-d spatial resampling; up, down, mixed, identity, to and from size 1.
SHAPES = [
    ((7,), (12,)),
    ((12,), (5,)),
    ((2, 6, 5, 3), (2, 9, 3, 3)),     # batch and channels kept, one axis up, one down
    ((1, 8, 8, 1), (1, 4, 4, 1)),     # 2x downsampling
    ((1, 8, 8, 1), (1, 5, 3, 1)),     # non-integer downsampling
    ((4, 4), (16, 16)),               # 4x upsampling
    ((5, 4), (5, 4)),                 # identity
    ((3, 1, 4), (3, 4, 1)),           # from and to size 1
    ((2, 3, 4, 5), (2, 5, 2, 7)),     # 3 spatial dims
    ((6, 3), (0, 3)),                 # empty output
]


JIT = dict(jit=True, eager=False)   # scale_and_translate is not jitted: one compile per case


def _tol(dtype):
  return {np.dtype(np.float16): 1e-2, BF16: 3e-2, np.dtype(np.float64): 1e-12}.get(
      np.dtype(dtype), 2e-6)


def _resize(shape, method, antialias=True, **kw):
  return lambda top: lambda x: top.image.resize(x, shape, method, antialias, **kw)


def _resize_case(x, shape, method, antialias=True, jit=False, tol=None, **kw):
  return lambda: check_value(_resize(shape, method, antialias, **kw), x, build=make_with("top"),
                             jit=jit, eager=not jit, tol=tol or _tol(x.dtype))


def _sat(shape, dims, method, antialias=True, **kw):
  return lambda top: lambda x, s, t: top.image.scale_and_translate(x, shape, dims, s, t, method,
                                                                   antialias, **kw)


# ---- values -------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [True, False])
def test_resize_shapes(method, antialias):
  cases = []
  for i, (sin, sout) in enumerate(SHAPES):
    x = rand(sin, np.float32, seed=i)
    cases.append((f"{sin}->{sout}", _resize_case(x, sout, method, antialias)))
  check_all(cases)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [np.float16, BF16, np.int8, np.uint8, np.int32, np.bool_,
                                   np.complex64])
def test_resize_dtypes(method, dtype):
  x = rand((2, 5, 6, 3), dtype, seed=1, ints=(-50, 50))
  check_all([(f"{sout} aa={aa}", _resize_case(x, sout, method, aa))
             for sout, aa in [((2, 9, 4, 3), True), ((2, 2, 3, 3), False)]])


@pytest.mark.parametrize("method", METHODS)
def test_resize_x64(method, x64):
  check_all([
      (f"{dt.__name__} {sout}", _resize_case(rand((5, 6), dt, seed=2), sout, method))
      for dt in (np.float64, np.int64) for sout in [(9, 4), (2, 13)]])


@pytest.mark.parametrize("alias", ALIASES)
def test_resize_aliases(alias):
  x = rand((1, 6, 5, 2), np.float32, seed=3)
  check_all([(f"{sout} aa={aa}", _resize_case(x, sout, alias, aa))
             for sout in [(1, 11, 4, 2), (1, 3, 2, 2)] for aa in (True, False)])


@pytest.mark.parametrize("method", list(arrax.image.ResizeMethod))
def test_resize_with_enum_member(method):
  x = rand((3, 7, 2), np.float32, seed=4)
  jmethod = jax.image.ResizeMethod[method.name]
  for sout in [(3, 12, 2), (3, 3, 2)]:
    assert_same(arrax.image.resize(arrax.numpy.asarray(x), sout, method),
                jax.image.resize(jax.numpy.asarray(x), sout, jmethod), tol=2e-6)


def test_resize_special_values():
  # NaN and inf spread through the weights as in JAX; large and tiny magnitudes.
  x = np.array([[0., np.nan, 1., 2., np.inf, 3.], [1e30, -1e30, 1e-30, 0., -0., 5.]],
               np.float32)
  check_all([(f"{m} {s}", _resize_case(x, s, m)) for m in METHODS for s in [(2, 11), (2, 4)]])


def test_resize_precision_and_shape_forms():
  x = rand((4, 6), np.float32, seed=5)
  check_all([
      ("precision DEFAULT", lambda: check_value(
          lambda top: lambda x: top.image.resize(x, (7, 3), "linear",
                                                 precision=top.lax.Precision.DEFAULT),
          x, build=make_with("top"))),
      ("precision string", _resize_case(x, (7, 3), "cubic", precision="highest")),
      ("shape list", _resize_case(x, [8, 9], "lanczos3")),
      ("numpy shape", _resize_case(x, np.array([8, 9]), "linear")),
      ("numpy ints", _resize_case(x, (np.int64(8), np.int32(2)), "linear")),
  ])


def test_resize_python_scalars_and_lists():
  # A Python scalar is a 0-d image (returned promoted, weakly typed, as in JAX); a list is not
  # an array: both libraries fail alike on it.
  resize = lambda top: top.image.resize  # noqa: E731
  sat = lambda top: top.image.scale_and_translate  # noqa: E731
  cases = []
  for m in METHODS:
    for v in (3.0, 2, True):
      cases.append((f"{m} {v!r}", lambda m=m, v=v: check_value(resize, v, (), m, convert=None,
                                                         build=make_with("top"))))
    cases.append((f"{m} list", lambda m=m: check_raises(
        resize, [[1, 2, 3], [4, 5, 6]], (4, 5), m, convert=None, build=make_with("top"))))
    if m != "nearest":
      cases.append((f"{m} sat scalar", lambda m=m: check_raises(
          sat, 3.0, (), (), [], [], m, convert=None, build=make_with("top"))))
  check_all(cases)
  assert arrax.image.resize(3.0, (), "linear").aval.weak_type


@pytest.mark.parametrize("method", METHODS[1:])
def test_scale_and_translate_values(method):
  x = rand((2, 6, 5, 3), np.float32, seed=6)
  cases = []
  for shape, dims, scale, trans in [
      ((2, 9, 5, 3), (1,), [1.5], [0.25]),
      ((2, 9, 4, 3), (1, 2), [1.5, 0.8], [0.0, -0.3]),
      ((2, 4, 4, 3), (2, 1), [0.6, 0.7], [1.0, 0.5]),   # dims in any order
      ((2, 3, 8, 3), (-3, -2), [0.5, 1.6], [0.0, 0.0]),   # negative dims
      ((2, 12, 10, 3), (1, 2), [2.0, 2.0], [-1.5, 3.0]),  # samples partly outside the input
      ((2, 6, 5, 3), (), [], []),                          # nothing to do
      ((2, 6, 5, 3), (1, 2), [1.0, 1.0], [0.0, 0.0]),     # identity
  ]:
    # antialias only changes a downsampled axis
    for aa in (True, False) if min(scale, default=1) < 1 else (True,):
      cases.append((f"{shape} {dims} {scale} {trans} aa={aa}", lambda sh=shape, d=dims, s=scale,
                    t=trans, aa=aa: check_value(_sat(sh, d, method, aa), x,
                                          np.array(s, np.float32), np.array(t, np.float32),
                                          build=make_with("top"), tol=1e-5, **JIT)))
  check_all(cases)


def test_scale_and_translate_eager():
  x = rand((2, 6, 5, 3), np.float32, seed=6)
  for method in ["linear", "area"]:   # every op dispatched on its own: slow, so two methods
    check_value(_sat((2, 9, 4, 3), (1, 2), method), x, np.array([1.5, 0.8], np.float32),
          np.array([0.0, -0.3], np.float32), build=make_with("top"), tol=1e-5)


def test_scale_and_translate_dtypes():
  cases = []
  for xdt in (np.float16, BF16, np.int32, np.uint8, np.complex64):
    for sdt in (np.float32, np.int32, np.float16):
      x = rand((5, 6), xdt, seed=7, ints=(0, 20))
      s = np.array([2, 1], sdt) if sdt == np.int32 else np.array([1.5, 0.5], sdt)
      t = np.array([0, 1], sdt)
      cases.append((f"x {np.dtype(xdt).name} s {np.dtype(sdt).name}",
                    lambda x=x, s=s, t=t: check_value(_sat((7, 4), (0, 1), "linear"), x, s, t,
                                                build=make_with("top"), tol=_tol(x.dtype),
                                                **JIT)))
  # Tuples of Python floats are not arrays: JAX rejects them (eagerly and under jit), as arrax.
  x = rand((5, 6), np.float32, seed=8)
  for jit in (False, True):
    cases.append((f"python floats jit={jit}", lambda jit=jit: check_raises(
        _sat((7, 4), (0, 1), "cubic"), x, (1.5, 0.7), (0.1, 0.2), build=make_with("top"),
        jit=jit)))
  cases.append(("numpy float64", lambda: check_value(_sat((7, 4), (0, 1), "cubic"), x,
                                                Raw(np.array([1.5, 0.7])),
                                                Raw(np.array([0.1, 0.2])),
                                                build=make_with("top"), **JIT)))
  check_all(cases)


def test_scale_and_translate_x64(x64):
  x = rand((2, 6, 5), np.float64, seed=9)
  check_all([(m, lambda m=m: check_value(_sat((2, 8, 3), (1, 2), m), x, np.array([1.3, 0.6]),
                                   np.array([0.2, -0.1]), build=make_with("top"), tol=1e-12,
                                   **JIT))
             for m in METHODS[1:]])


# ---- jit, vmap, grad ----------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_resize_jit(method):
  x = rand((2, 6, 5, 3), np.float32, seed=10)
  check_all([(f"{s}", _resize_case(x, s, method, jit=True)) for s in [(2, 9, 3, 3), (2, 3, 7, 3)]])


def test_scale_and_translate_jit_traced_scale():
  x = rand((6, 5), np.float32, seed=11)
  check_value(_sat((9, 4), (0, 1), "lanczos3"), x, np.array([1.5, 0.8], np.float32),
        np.array([0.3, -0.2], np.float32), build=make_with("top"), jit=True, eager=False,
        tol=1e-5)


@pytest.mark.parametrize("method", METHODS)
def test_resize_vmap(method):
  x = rand((4, 6, 5), np.float32, seed=12)
  check_vmap(lambda top: lambda x: top.image.resize(x, (9, 3), method), x, tol=2e-6)
  check_vmap(lambda top: lambda x: top.image.resize(x, (9, 3), method), x.transpose(1, 0, 2),
             in_axes=1, out_axes=2, tol=2e-6)


def test_scale_and_translate_vmap_over_scale():
  x = rand((6, 5), np.float32, seed=13)
  s = np.array([[1.5, 0.8], [0.5, 2.0], [1.0, 1.0]], np.float32)
  t = np.array([[0.0, 0.3], [1.0, -0.5], [0.0, 0.0]], np.float32)
  f = _sat((7, 6), (0, 1), "cubic")
  check_vmap(f, x, s, t, in_axes=(None, 0, 0), tol=1e-5, jit=True)
  check_vmap(f, np.stack([x, 2 * x]), s[:2], t[:2], tol=1e-5, jit=True)


@pytest.mark.parametrize("method", METHODS[1:])
@pytest.mark.parametrize("sout", [(2, 9, 3), (2, 3, 2)])
def test_resize_grad_vs_jax(method, sout):
  x = rand((2, 6, 5), np.float32, seed=14)
  check_value(lambda top: lambda x: (top.image.resize(x, sout, method) ** 2).sum(), x,
        build=make_with("top"), transform=grad_of(), tol=1e-5)
  check_jvp_vjp(lambda top: lambda x: top.image.resize(x, sout, method, antialias=False), x,
                build=make_with("top"))


def test_resize_nearest_grad_vs_jax():
  x = rand((2, 6, 5), np.float32, seed=15)
  check_jvp_vjp(lambda top: lambda x: top.image.resize(x, (2, 9, 3), "nearest"), x,
                build=make_with("top"))


@pytest.mark.parametrize("method", METHODS[1:])
def test_scale_and_translate_grad_vs_jax(method):
  x = rand((5, 6), np.float32, seed=16)
  s = np.array([1.3, 0.7], np.float32)
  t = np.array([0.2, -0.4], np.float32)
  check_jvp_vjp(_sat((7, 4), (0, 1), method), x, s, t, build=make_with("top"), tol=1e-4)
  check_jvp_vjp(_sat((4, 9), (0, 1), method, False), x, s, t, build=make_with("top"), tol=1e-4)


@pytest.mark.parametrize("method", ["linear", "cubic", "area"])
def test_grads_numerically(method):
  x = arrax.numpy.asarray(rand((5, 6), np.float32, seed=17))
  atu.check_grads(arrax.jit(lambda x: arrax.image.resize(x, (8, 4), method)), (x,), order=2,
                  modes=("fwd", "rev"), atol=2e-2, rtol=2e-2)
  # scale and translation away from the kernels' kinks, so finite differences are smooth.
  s = arrax.numpy.asarray([1.37, 0.71])
  t = arrax.numpy.asarray([0.23, -0.41])
  atu.check_grads(arrax.jit(lambda x, s, t: arrax.image.scale_and_translate(x, (7, 4), (0, 1),
                                                                            s, t, method)),
                  (x, s, t), order=1, modes=("fwd", "rev"), atol=3e-2, rtol=3e-2, eps=1e-3)


# ---- jaxprs -------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_resize_jaxpr(method):
  x = rand((2, 4, 5, 3), np.float32)
  check_jaxpr(_resize((2, 6, 2, 3), method), x, build=make_with("top"))
  check_jaxpr(_resize((2, 6, 2, 3), method, antialias=False), x, build=make_with("top"))


def test_resize_jaxpr_int_input():
  check_jaxpr(_resize((5, 2), "linear"), rand((3, 4), np.int32), build=make_with("top"))
  check_jaxpr(_resize((5, 2), "nearest"), rand((3, 4), np.uint8), build=make_with("top"))


@pytest.mark.parametrize("method", METHODS[1:])
def test_scale_and_translate_jaxpr(method):
  check_jaxpr(_sat((7, 4), (0, 1), method, False), rand((5, 6), np.float32),
              np.array([1.3, 0.7], np.float32), np.array([0.2, -0.4], np.float32),
              build=make_with("top"))


def test_grad_jaxpr():
  x = rand((4, 5), np.float32)
  check_jaxpr(lambda top: top.grad(lambda x: top.image.resize(x, (6, 3), "cubic").sum()), x,
              build=make_with("top"))


# ---- methods and errors ---------------------------------------------------------------------
def test_resize_method_enum():
  A, J = arrax.image.ResizeMethod, jax.image.ResizeMethod
  assert [(m.name, m.value) for m in A] == [(m.name, m.value) for m in J]
  for name in METHODS + ALIASES:
    assert A.from_string(name).name == J.from_string(name).name
  for bad in ["Linear", "gaussian", "", "nearest "]:
    check_raises(lambda top: top.image.ResizeMethod.from_string(bad), build=make_with("top"),
                 match=(f'Unknown resize method "{bad}"',))


def test_errors():
  x = rand((4, 5), np.float32)
  for fn, args in [
      (_resize((4, 5, 1), "linear"), (x,)),          # wrong rank of shape
      (_resize((4,), "nearest"), (x,)),
      (_resize((4, 5), "bogus"), (x,)),               # unknown method name
      (_resize((4, 5), "LINEAR"), (x,)),
      (_resize((4, 5.5), "linear"), (x,)),            # non-integer size
      (_resize((4, 5), 3), (x,)),                     # not a method
      (_sat((4, 5), (0, 1), "nearest"), (x, np.ones(2, np.float32), np.zeros(2, np.float32))),
      (_sat((4, 5, 2), (0, 1), "linear"), (x, np.ones(2, np.float32), np.zeros(2, np.float32))),
      (_sat((4, 5), (0, 1), "nope"), (x, np.ones(2, np.float32), np.zeros(2, np.float32))),
      (_sat((4, 5), (0, 2), "linear"), (x, np.ones(2, np.float32), np.zeros(2, np.float32))),
      (_sat((4, 5), (0, 1), "linear"), (x, np.ones(1, np.float32), np.zeros(2, np.float32))),
  ]:
    check_raises(fn, *args, build=make_with("top"))
  check_raises(_resize((4, 5.5), "linear"), x, build=make_with("top"),
               match=("Shapes must be 1D sequences of concrete values of integer type",))
  # A negative size is not rejected by JAX: the resized axis comes out empty.
  check_value(_resize((4, -5), "linear"), x, build=make_with("top"))
  check_value(_resize((4, -5), "nearest"), x, build=make_with("top"))


def test_public_names():
  names = {n for n in dir(arrax.image) if not n.startswith("_")}
  assert names == {"ResizeMethod", "resize", "scale_and_translate"}
  assert names <= {n for n in dir(jax.image) if not n.startswith("_")}
  assert arrax.image is arrax.__dict__["image"]
