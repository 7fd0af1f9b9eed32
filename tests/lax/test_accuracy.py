"""`accuracy=` of the transcendental lax functions (lax.Tolerance, lax.AccuracyMode) and
`out_dtype=` of lax.mul."""
import numpy as np
import pytest

from tests.oracle import call_with, check, check_jaxpr, check_raises, grad_of, rand, vmapped

NAMES = ["exp", "exp2", "log", "log1p", "expm1", "sqrt", "rsqrt", "cbrt", "tanh", "logistic",
         "sin", "cos", "tan"]
ACCURACIES = {
    "none": lambda lax: None,
    "highest": lambda lax: lax.AccuracyMode.HIGHEST,
    "default": lambda lax: lax.AccuracyMode.DEFAULT,
    "tolerance": lambda lax: lax.Tolerance(atol=1e-5, rtol=1e-5),
}
X = np.abs(rand((3, 4), np.float32)) + 0.25


def _case(name, acc):
  return lambda lax, x: getattr(lax, name)(x, accuracy=ACCURACIES[acc](lax))


@pytest.mark.parametrize("acc", list(ACCURACIES))
@pytest.mark.parametrize("name", NAMES)
def test_values(name, acc):
  check(_case(name, acc), X, build=call_with("lax"), jit=True, tol=1e-5)


@pytest.mark.parametrize("acc", ["highest", "tolerance"])
@pytest.mark.parametrize("name", ["exp", "sin", "log", "tanh"])
def test_transforms(name, acc):
  f = _case(name, acc)
  check(lambda lax, x: f(lax, x).sum(), X, build=call_with("lax"), transform=grad_of(),
        tol=1e-5)
  check(f, X, build=call_with("lax"), transform=vmapped(), tol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_jaxpr(name):
  check_jaxpr(_case(name, "highest"), X, build=call_with("lax"))


def test_dtypes():
  for dt in (np.float16, np.float32, np.complex64):
    check(_case("exp", "highest"), rand((4,), dt), build=call_with("lax"), tol=1e-2)


@pytest.mark.parametrize("bad", [3, "HIGHEST", 1e-3])
def test_bad_accuracy(bad):
  check_raises(lambda lax, x: lax.exp(x, accuracy=bad), X, build=call_with("lax"), jit=True)


def test_tolerance_validation():
  check_raises(lambda lax, x: lax.Tolerance(atol=-1.0), X, build=call_with("lax"))
  check_raises(lambda lax, x: lax.Tolerance(), X, build=call_with("lax"))


MUL_CASES = [(np.int8, np.float16, np.float32), (np.float32, np.float32, np.float16),
             (np.int32, np.int32, np.int8), (np.bfloat16 if hasattr(np, "bfloat16") else
                                             np.float16, np.float32, np.float32)]


@pytest.mark.parametrize("xt,yt,ot", MUL_CASES)
def test_mul_out_dtype(xt, yt, ot):
  x, y = rand((3, 4), xt, seed=1), rand((3, 4), yt, seed=2)
  f = lambda lax, a, b: lax.mul(a, b, out_dtype=ot)   # noqa: E731
  check(f, x, y, build=call_with("lax"), jit=True, tol=1e-2)
  check_jaxpr(f, x, y, build=call_with("lax"))


def test_mul_out_dtype_transforms():
  y = rand((5,), np.float16, seed=3)
  f = lambda lax, v: lax.mul(v, v, out_dtype=np.float32).sum()   # noqa: E731
  check(f, y, build=call_with("lax"), transform=grad_of(), tol=1e-2)
  check_jaxpr(f, y, build=call_with("lax"), transform=grad_of())
  check(lambda lax, v: lax.mul(v, 2 * v, out_dtype=np.float32), y, build=call_with("lax"),
        transform=vmapped(), tol=1e-2)


def test_mul_mixed_types_need_out_dtype():
  check_raises(lambda lax, a, b: lax.mul(a, b), rand((2,), np.float32), rand((2,), np.float16),
               build=call_with("lax"))
