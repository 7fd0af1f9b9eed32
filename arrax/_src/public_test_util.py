"""Gradient checking against finite differences: check_grads, check_jvp, check_vjp.

The algorithm of `jax.test_util`: derivatives are checked along one random direction. Forward
mode compares `jvp` with a central difference `(f(x + eps t) - f(x - eps t)) / (2 eps)`;
reverse mode checks `vjp` against that numerical JVP through the inner-product identity
<t, vjp(ct)> == <jvp(t), ct>. Higher orders recurse on the JVP / VJP functions themselves.
Tolerances default per dtype (JAX's tables) and scale with the number of elements compared.
"""
from __future__ import annotations

import functools
import operator

import ml_dtypes
import numpy as np

from arrax._src import dtypes
from arrax._src.ad_api import jvp, linearize, vjp
from arrax._src.config import x64_enabled
from arrax._src.tree_util import tree_map, tree_reduce
from arrax._src.ad_api import jvp, vjp
from arrax._src.ad_api import linearize

__all__ = ["check_grads", "check_jvp", "check_vjp"]

EPS = 1e-4


def _opt_dtypes(*names):
  return [np.dtype(getattr(ml_dtypes, n)) for n in names if hasattr(ml_dtypes, n)]


_FP8 = _opt_dtypes("float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
                   "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")
_FP_COARSE = _opt_dtypes("float4_e2m1fn", "float8_e8m0fnu")
_SMALL_INTS = _opt_dtypes("int2", "int4", "uint2", "uint4")
# Floats without a NumPy ufunc loop for everything: compared after a cast to float32.
_UPCAST = set(_FP8) | set(_FP_COARSE) | {dtypes.bfloat16}

# Tolerance of a value comparison per dtype (exact for integers and booleans).
_default_tolerance: dict = {dtypes.float0: 0, np.dtype(np.bool_): 0}
for _t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
  _default_tolerance[np.dtype(_t)] = 0
_default_tolerance.update({d: 0 for d in _SMALL_INTS})
_default_tolerance.update({d: 1e-1 for d in _FP8})
_default_tolerance.update({d: 1e0 for d in _FP_COARSE})
_default_tolerance.update({
    dtypes.bfloat16: 1e-2, dtypes.float16: 1e-3, dtypes.float32: 1e-6, dtypes.float64: 1e-15,
    dtypes.complex64: 1e-6, dtypes.complex128: 1e-15})

# Tolerance of a gradient comparison per dtype (finite differences are not exact).
default_gradient_tolerance: dict = {d: 1e-1 for d in _FP8}
default_gradient_tolerance.update({d: 1e0 for d in _FP_COARSE})
default_gradient_tolerance.update({
    dtypes.bfloat16: 1e-1, dtypes.float16: 1e-2, dtypes.float32: 2e-3, dtypes.float64: 1e-5,
    dtypes.complex64: 1e-3, dtypes.complex128: 1e-5})


def default_tolerance():
  return _default_tolerance


def _dtype(x) -> np.dtype:
  dt = getattr(x, "dtype", None)
  if dt is not None:
    return np.dtype(dt)
  dt = dtypes.python_scalar_dtypes.get(type(x))
  return dt if dt is not None else np.asarray(x).dtype


def is_python_scalar(x) -> bool:
  return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def tolerance(dtype, tol=None):
  """The tolerance for `dtype`: `tol` itself if a number, else looked up (with defaults)."""
  if tol is None:
    tol = {}
  if not isinstance(tol, dict):
    return tol
  table = {np.dtype(k): v for k, v in tol.items()}
  dt = dtypes.canonicalize_dtype(np.dtype(dtype))
  return table[dt] if dt in table else _default_tolerance[dt]


def _allclose(a, b, atol, rtol, err_msg):
  if a.dtype == dtypes.float0 and b.dtype == dtypes.float0:
    np.testing.assert_array_equal(a, b, err_msg=err_msg)
    return

  def widen(x):
    if x.dtype in _UPCAST:
      return x.astype(np.float32)
    if x.dtype in _SMALL_INTS:
      return x.astype(np.int8 if np.iinfo(x.dtype).min < 0 else np.uint8)
    return x

  kwargs = {}
  if atol:
    kwargs["atol"] = atol
  if rtol:
    kwargs["rtol"] = rtol
  with np.errstate(invalid="ignore"):
    np.testing.assert_allclose(widen(a), widen(b), err_msg=err_msg, **kwargs)


def _close_leaf(a, b, atol=None, rtol=None, err_msg=""):
  a, b = np.asarray(a), np.asarray(b)
  assert a.shape == b.shape, f"{err_msg}: shapes differ, {a.shape} vs {b.shape}"
  at = max(tolerance(a.dtype, atol), tolerance(b.dtype, atol))
  rt = max(tolerance(a.dtype, rtol), tolerance(b.dtype, rtol))
  # Tolerances grow with the number of elements (errors accumulate in sums).
  _allclose(a, b, at * a.size, rt * b.size, err_msg)


def check_close(xs, ys, atol=None, rtol=None, err_msg=""):
  """Assert two pytrees are close, leaf by leaf, with per-dtype tolerances."""
  tree_map(functools.partial(_close_leaf, atol=atol, rtol=rtol, err_msg=err_msg), xs, ys)


def _check_dtypes_match(xs, ys):
  def same(x, y):
    dx, dy = _dtype(x), _dtype(y)
    if not x64_enabled():
      dx, dy = dtypes.canonicalize_dtype(dx), dtypes.canonicalize_dtype(dy)
    assert dx == dy, f"dtype mismatch: {dx} vs {dy}"
  tree_map(same, xs, ys)


def inner_prod(xs, ys):
  """Real part of sum(conj(x) * y) over all leaves of two pytrees."""
  def leaf(x, y):
    return np.real(np.dot(np.conj(x).ravel(), np.asarray(y).ravel()))
  return tree_reduce(np.add, tree_map(leaf, xs, ys))


def _keep_type(op):
  """Apply a NumPy binary/unary op; results keep the first argument's dtype (and stay Python
  scalars when all arguments were)."""
  def apply(*args):
    out = np.array(op(*args), dtype=_dtype(args[0]))
    return out.item() if all(is_python_scalar(a) for a in args) else out
  return apply


def add(xs, ys):
  return tree_map(_keep_type(operator.add), xs, ys)


def sub(xs, ys):
  return tree_map(_keep_type(operator.sub), xs, ys)


def conj(xs):
  return tree_map(_keep_type(np.conj), xs)


def safe_sub(xs, ys):
  """x - y with inf - inf == 0 (equal values subtract to an exact zero)."""
  def leaf(x, y):
    dt = _dtype(x)
    with np.errstate(invalid="ignore"):
      return np.where(np.equal(x, y), np.array(0, dt), np.subtract(x, y, dtype=dt))
  return tree_map(leaf, xs, ys)


def scalar_mul(xs, a):
  def leaf(x):
    dt = _dtype(x)
    out = np.multiply(x, np.array(a, dtype=dt), dtype=dt)
    return out.item() if is_python_scalar(x) else out
  return tree_map(leaf, xs)


def rand_like(rng, x):
  """A standard-normal value with the shape and dtype of `x` (complex: both parts random)."""
  shape, dt = np.shape(x), _dtype(x)
  out = np.asarray(rng.randn(*shape), dtype=dt)
  if dtypes.issubdtype(dt, np.complexfloating):
    out = out + dt.type(1j) * np.asarray(rng.randn(*shape), dtype=dt)
  return out.item() if is_python_scalar(x) else out


def numerical_jvp(f, primals, tangents, eps=EPS):
  """Central finite difference of `f` at `primals` along `tangents`."""
  step = scalar_mul(tangents, eps)
  f_plus = f(*add(primals, step))
  f_minus = f(*sub(primals, step))
  return scalar_mul(safe_sub(f_plus, f_minus), 0.5 / eps)


def _merge_tolerance(tol, default):
  if tol is None:
    return default
  if not isinstance(tol, dict):
    return tol
  merged = dict(default)
  merged.update({np.dtype(k): v for k, v in tol.items()})
  return merged


def _msg(err_msg, what):
  return f"{err_msg} {what}" if err_msg else what


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
  """Check `f_jvp(args, tangents)` (e.g. `partial(jax.jvp, f)`) against finite differences
  along one random direction. Raises AssertionError on mismatch."""
  atol = _merge_tolerance(atol, default_gradient_tolerance)
  rtol = _merge_tolerance(rtol, default_gradient_tolerance)
  rng = np.random.RandomState(0)
  tangent = tree_map(functools.partial(rand_like, rng), args)
  v_out, t_out = f_jvp(args, tangent)
  _check_dtypes_match(v_out, t_out)
  v_expected = f(*args)
  _check_dtypes_match(v_out, v_expected)
  t_expected = numerical_jvp(f, args, tangent, eps=eps)
  check_close(v_out, v_expected, atol=atol, rtol=rtol, err_msg=_msg(err_msg, "primal"))
  check_close(t_out, t_expected, atol=atol, rtol=rtol, err_msg=_msg(err_msg, "tangent"))


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
  """Check `f_vjp(*args)` (e.g. `partial(jax.vjp, f)`) against finite differences through
  <t, vjp(ct)> == <jvp(t), ct> for random t and ct. Raises AssertionError on mismatch."""
  atol = _merge_tolerance(atol, default_gradient_tolerance)
  rtol = _merge_tolerance(rtol, default_gradient_tolerance)
  rand = functools.partial(rand_like, np.random.RandomState(0))
  v_out, vjp_fn = f_vjp(*args)
  v_expected = f(*args)
  check_close(v_out, v_expected, atol=atol, rtol=rtol, err_msg=_msg(err_msg, "primal"))
  tangent = tree_map(rand, args)
  tangent_out = numerical_jvp(f, args, tangent, eps=eps)
  cotangent = tree_map(rand, v_out)
  cotangent_in = conj(vjp_fn(conj(cotangent)))
  ip = inner_prod(tangent, cotangent_in)
  ip_expected = inner_prod(tangent_out, cotangent)
  check_close(ip, ip_expected, atol=atol, rtol=rtol,
              err_msg=_msg(err_msg, "cotangent projection"))


def _jvp_from_linearize(f, primals, tangents):
  out, f_lin = linearize(f, *primals)
  return out, f_lin(*tangents)


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
  """Check derivatives of `f` at `args` up to `order` against finite differences.

  Args:
    f: the function to check at `f(*args)`.
    args: tuple of arguments.
    order: derivatives up to this order are checked (higher orders differentiate the
      JVP / VJP functions again).
    modes: which of "fwd" (jvp), "rev" (vjp) and "lin" (linearize) to check.
    atol, rtol: tolerances (a number or a dict dtype -> number); default per dtype.
    eps: finite-difference step (default 1e-4).

  Raises:
    AssertionError: if the derivatives do not match.
  """
  args = tuple(args)
  eps = eps or EPS
  jvp_check = functools.partial(check_jvp, atol=atol, rtol=rtol, eps=eps)
  vjp_check = functools.partial(check_vjp, atol=atol, rtol=rtol, eps=eps)

  def recurse(f, args, order, err_msg=""):
    if "fwd" in modes:
      msg = f"JVP of {err_msg}" if err_msg else "JVP"
      f_jvp = functools.partial(jvp, f)
      jvp_check(f, f_jvp, args, err_msg=msg)
      if order > 1:
        recurse(f_jvp, (args, args), order - 1, msg)
    if "rev" in modes:
      msg = f"VJP of {err_msg}" if err_msg else "VJP"
      vjp_check(f, functools.partial(vjp, f), args, err_msg=msg)
      if order > 1:
        def f_vjp(*xs):
          out, pullback = vjp(f, *xs)
          return pullback(out)
        recurse(f_vjp, args, order - 1, msg)
    if "lin" in modes:
      msg = f"LIN of {err_msg}" if err_msg else "LIN"
      f_lin = functools.partial(_jvp_from_linearize, f)
      jvp_check(f, f_lin, args, err_msg=msg)
      if order > 1:
        recurse(f_lin, (args, args), order - 1, msg)

  recurse(f, args, order)
