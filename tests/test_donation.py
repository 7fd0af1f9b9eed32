"""Buffer donation (jit donate_argnums / donate_argnames), against JAX 0.10.2: the aliasing
attributes of the lowered module, donated arrays deleted after the call, JAX's errors and its
warning for donations XLA cannot use."""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from tests.oracle import assert_prints_like_jax, assert_same

LIBS = [(jax, jnp), (arrax, anp)]


def _lowered(lib, np_, fn, args, kwargs, **jit_kw):
  """(text, warnings) of lowering `fn` with `jit_kw` for arrays made from `args`."""
  conv = lambda t: jax.tree.map(lambda a: np_.asarray(a) if isinstance(a, np.ndarray) else a, t)
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    text = lib.jit(fn, **jit_kw).lower(*conv(args), **conv(kwargs)).as_text()
  return text, [str(x.message) for x in w]


X = np.arange(6.0, dtype=np.float32).reshape(2, 3)
I = np.arange(6, dtype=np.int32).reshape(2, 3)

CASES = {
    "alias_first": (lambda x, y: (x + 1, y * 2), (X, X), {}, dict(donate_argnums=0)),
    "alias_both": (lambda x, y: (x + 1, y * 2), (X, X), {}, dict(donate_argnums=(0, 1))),
    "alias_in_order": (lambda x, y: (y * 2, x + 1), (X, X), {}, dict(donate_argnums=(0, 1))),
    "donor_and_unusable": (lambda x, y: (x.sum(), y.astype(jnp.int32)), (X, X), {},
                           dict(donate_argnums=(0, 1))),
    "unusable": (lambda x: x[0], (X,), {}, dict(donate_argnums=0)),
    "argnames_kw": (lambda x, y: x + y, (X,), {"y": X}, dict(donate_argnames="y")),
    "argnames_pos": (lambda x, y: x + y, (X, X), {}, dict(donate_argnames="y")),
    "argnums_as_kw": (lambda x, y: x + y, (X,), {"y": X}, dict(donate_argnums=1)),
    "pytree": (lambda t: [t[0] * 2, t[1] - 1], ([X, X],), {}, dict(donate_argnums=0)),
    "dtype_mismatch": (lambda x: x.astype(jnp.float32), (I,), {}, dict(donate_argnums=0)),
    "int": (lambda x: x * 3, (I,), {}, dict(donate_argnums=0)),
    "weak_scalar": (lambda x, s: x * s, (X, 2.0), {}, dict(donate_argnums=(0, 1))),
    "negative_ignored": (lambda x: x + 1, (X,), {}, dict(donate_argnums=-1)),
    "with_static": (lambda n, x: x * n, (3, X), {}, dict(static_argnums=0, donate_argnums=1)),
    "scalar_out": (lambda x: (x.sum(), x * 2), (X,), {}, dict(donate_argnums=0)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_lowered_module_like_jax(name):
  fn, args, kwargs, jit_kw = CASES[name]
  (jtext, jwarn), (atext, awarn) = [_lowered(lib, np_, fn, args, kwargs, **jit_kw)
                                    for lib, np_ in LIBS]
  # (the function signature carries the donation; the body is other tests' business)
  main = lambda t: next(line for line in t.splitlines() if "@main" in line)
  assert main(atext) == main(jtext)
  assert awarn == jwarn


@pytest.mark.parametrize("name", list(CASES))
def test_deleted_after_call_like_jax(name):
  fn, args, kwargs, jit_kw = CASES[name]
  results = []
  for lib, np_ in LIBS:
    conv = lambda t, np_=np_: jax.tree.map(lambda a: np_.asarray(a) if isinstance(a, np.ndarray)
                                           else a, t)
    a, k = conv(args), conv(kwargs)
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      out = lib.jit(fn, **jit_kw)(*a, **k)
    leaves = [x for x in jax.tree.leaves((a, k)) if hasattr(x, "is_deleted")]
    results.append((out, [x.is_deleted() for x in leaves]))
  assert_same(results[1][0], results[0][0])
  assert results[1][1] == results[0][1]


def test_aliased_output_reuses_the_buffer():
  x = anp.arange(1024.0)
  ptr = x.unsafe_buffer_pointer()
  y = arrax.jit(lambda x: x * 2, donate_argnums=0)(x)
  assert x.is_deleted() and y.unsafe_buffer_pointer() == ptr
  np.testing.assert_array_equal(np.asarray(y), np.arange(1024.0) * 2)


def test_using_a_donated_array_raises_like_jax():
  # The odd shape keeps JAX's C++ fast path cold for `x + 1`: had an earlier test added a
  # Python scalar to a float32 array of this shape, JAX would report XLA's ValueError instead.
  assert_prints_like_jax("""
  g = jax.jit(lambda a: a * 2, donate_argnums=0)
  x = jnp.arange(3.0).reshape(1, 3, 1)
  print(np.asarray(x))   # (a cached host copy must not survive the donation)
  y = g(x)
  print(x.is_deleted(), y)
  for what, f in [("add", lambda: x + 1), ("repr", lambda: repr(x)),
                  ("np", lambda: np.asarray(x)), ("new jit", lambda: jax.jit(jnp.sin)(x)),
                  ("compiled", lambda: jax.jit(lambda a: a + 1).lower(x).compile()(x))]:
    try:
      f()
    except RuntimeError as e:
      print(what, "raised", type(e).__name__, e)
  print(x.shape, x.dtype)
  """)


def test_jnp_functions_on_a_donated_array_raise():
  # Not compared with JAX: once JAX's C++ fast path holds jnp.sin's (or reduce_sum's)
  # executable (an earlier test used it), JAX raises XLA's ValueError here instead of its
  # RuntimeError.
  g = arrax.jit(lambda a: a * 2, donate_argnums=0)
  x = anp.arange(3.0)
  g(x)
  for f in (lambda: anp.sin(x), lambda: x[0], lambda: arrax.grad(lambda a: a.sum())(x)):
    with pytest.raises(RuntimeError, match="Array has been deleted"):
      f()


def test_calling_again_with_a_donated_array():
  # JAX's C++ fast path reports XLA's ValueError here; arrax raises the RuntimeError every
  # other use of a deleted array gives.
  g = arrax.jit(lambda a: a * 2, donate_argnums=0)
  x = anp.ones(3)
  g(x)
  with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[3\]\."):
    g(x)


def test_donating_host_values_and_shared_scalars():
  for lib in (jax, arrax):
    g = lib.jit(lambda a, s: (a * 2, s + 1), donate_argnums=(0, 1))
    host = np.ones(3, np.float32)
    out = g(host, 1.0)
    np.testing.assert_array_equal(np.asarray(out[0]), [2, 2, 2])
    assert float(out[1]) == 2.0 and host.tolist() == [1, 1, 1]
    # The device copy of the Python scalar 1.0 that eager ops share is intact.
    assert float(lib.numpy.float32(5) + 1.0) == 6.0
    assert float(lib.jit(lambda s: s * 3)(1.0)) == 3.0


def test_same_buffer_donated_and_passed_twice():
  errs = []
  for lib, np_ in LIBS:
    x = np_.ones(3)
    with pytest.raises(Exception) as e:   # noqa: PT011
      lib.jit(lambda a, b: a + b, donate_argnums=0)(x, x)
    errs.append(e.value)
  assert type(errs[1]).__name__ == type(errs[0]).__name__ == "JaxRuntimeError"
  assert "previously donated in the same call" in str(errs[1])


def test_stages_report_donation_like_jax():
  assert_prints_like_jax("""
  import warnings
  warnings.simplefilter("ignore")
  x = jnp.ones((2, 3))
  for kw in [dict(donate_argnums=0), dict(donate_argnames="b"), dict(donate_argnums=(0, 1)),
             dict()]:
    f = jax.jit(lambda a, b=1.0: a * b, **kw)
    print(kw, f.trace(x, 2.0).args_info, f.lower(x, 2.0).args_info)
    print(f.lower(x, b=x).args_info, f.lower(x, b=x).donate_argnums)
    print(f.lower(x, x).compile().args_info)
  g = jax.jit(lambda *a: a[0] + a[1], donate_argnums=1)
  print(g.lower(x, x).args_info, g.lower(x, x).donate_argnums)
  c = jax.jit(lambda a: a + 1, donate_argnums=0).lower(x).compile()
  y = jnp.ones((2, 3))
  print(c(y), y.is_deleted())
  print("input_output_alias={ {0}: (0, {}, may-alias) }" in c.as_text())
  """)


def test_jit_argument_errors_like_jax():
  assert_prints_like_jax("""
  def f(a, b=1.0, *, c=2.0):
    return a * b * c
  def pos(a, /, b):
    return a + b
  for fn, kw in [(f, dict(donate_argnums=0, static_argnums=0)), (f, dict(donate_argnums=5)),
                 (f, dict(donate_argnames="zz")), (f, dict(donate_argnames="c")),
                 (f, dict(donate_argnums=(0, 1), donate_argnames="c")),
                 (f, dict(donate_argnames=("a", "b"), static_argnames="b")),
                 (pos, dict(donate_argnames="a")), (f, dict(donate_argnums=-3)),
                 (lambda *a: a, dict(donate_argnums=9)), (lambda **k: k, dict(donate_argnames="q"))]:
    try:
      jax.jit(fn, **kw)
      print("ok", kw)
    except ValueError as e:
      print("raised", kw, e)
  """)


def test_nested_jit_jaxprs_like_jax():
  assert_prints_like_jax("""
  import warnings
  warnings.simplefilter("ignore")
  g = jax.jit(lambda a, b: a * b, donate_argnums=0)
  x = jnp.ones(3)
  print(jax.make_jaxpr(lambda x: g(x, x))(x))
  print(jax.make_jaxpr(lambda x: g(x, 2.0))(x))
  print(jax.make_jaxpr(jax.vmap(lambda x: g(x, x)))(jnp.ones((2, 3))))
  print(jax.make_jaxpr(lambda x, t: jax.jvp(lambda x: g(x, x), (x,), (t,)))(x, x))
  h = jax.jit(lambda a, b: (a * 2, b), donate_argnums=(0, 1))
  print(jax.make_jaxpr(lambda x: h(x, x)[0])(x))
  def outer(x):
    return g(x, x)
  print(jax.jit(outer).lower(x).as_text().replace('"<lambda>"', "_lambda_"))
  """)


def test_donation_under_transformations_keeps_inputs():
  for lib, np_ in LIBS:
    g = lib.jit(lambda a: a * 2, donate_argnums=0)
    w = np_.ones(3)
    np.testing.assert_array_equal(lib.vmap(g)(w[None]), np.full((1, 3), 2.0))
    assert not w.is_deleted()
    lib.jit(lambda a: g(a))(w)
    assert not w.is_deleted()


def test_debug_nans_turns_donation_off():
  for lib, np_ in LIBS:
    lib.config.update("jax_debug_nans", True)
    try:
      w = np_.ones(3)
      lib.jit(lambda a: a * 2, donate_argnums=0)(w)
      assert not w.is_deleted()
    finally:
      lib.config.update("jax_debug_nans", False)


def test_caches_not_shared_with_undonated_jit():
  def f(a):
    return a + 1
  x = anp.ones(3)
  arrax.jit(f, donate_argnums=0)(anp.ones(3))
  arrax.jit(f)(x)
  assert not x.is_deleted()
  y = anp.ones(3)
  arrax.jit(f, donate_argnums=0)(y)
  assert y.is_deleted()
