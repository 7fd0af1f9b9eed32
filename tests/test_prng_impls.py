"""Typed keys of every PRNG implementation against JAX: rbg, unsafe_rbg, threefry4x32, philox2x32,
philox4x32, a define_prng_impl implementation and the registered Pallas ones give JAX's key data
and samples, eagerly, under jit, vmap (batched keys) and grad, and through jax_default_prng_impl."""
import contextlib

import jax
import jax.extend as jex
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.extend as aex
import arrax.numpy as anp
from oracle import assert_bits_equal, same_exception, threefry_mode

IMPLS = ["rbg", "unsafe_rbg", "threefry4x32", "philox2x32", "philox4x32"]
TAGS = {"rbg": "rbg", "unsafe_rbg": "urbg", "threefry4x32": "fry4", "philox2x32": "phx2",
        "philox4x32": "phx4"}


def run_both(fn, impl, seed=1, rtol=None):
  """fn(top module, random module, key) in arrax and JAX: the same bits (or, given `rtol`, the
  same values to that tolerance), or the same error."""
  kj = jax.random.key(seed, impl=impl)
  ka = arrax.random.key(seed, impl=impl)
  try:
    expected = fn(jax, jax.random, kj)
  except Exception as e:  # noqa: BLE001
    same_exception(lambda: fn(arrax, arrax.random, ka), e)
    return
  actual = fn(arrax, arrax.random, ka)
  for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected)):
    if rtol is None:
      assert_bits_equal(a, e)
    else:
      assert a.dtype == e.dtype and a.shape == e.shape
      np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=rtol)


CASES = {
    "key": lambda m, r, k: k,
    "split": lambda m, r, k: r.split(k, 3),
    "split_shape": lambda m, r, k: r.split(k, (2, 3)),
    "fold_in": lambda m, r, k: r.fold_in(k, 7),
    "bits": lambda m, r, k: r.bits(k, (5,)),
    "bits_u8": lambda m, r, k: r.bits(k, (3,), np.uint8),
    "uniform": lambda m, r, k: r.uniform(k, (2, 3)),
    "normal": lambda m, r, k: r.normal(k, (4,)),
    "randint": lambda m, r, k: r.randint(k, (6,), -3, 10),
    "permutation": lambda m, r, k: r.permutation(k, 7),
    "choice": lambda m, r, k: r.choice(k, 10, (3,), replace=False),
    "categorical": lambda m, r, k: r.categorical(k, np.zeros(5, np.float32), shape=(4,)),
    "truncated_normal": lambda m, r, k: r.truncated_normal(k, -1., 1., (3,)),
    "gamma": lambda m, r, k: r.gamma(k, np.float32(1.5), (3,)),
    "beta": lambda m, r, k: r.beta(k, 2., 3., (2,)),
    "poisson": lambda m, r, k: r.poisson(k, 3.0, (4,)),   # (JAX: threefry2x32 only)
    "jit": lambda m, r, k: m.jit(lambda k: (r.normal(k, (3,)), r.split(k)))(k),
    "jit_key_out": lambda m, r, k: m.jit(lambda k: r.split(k, 2)[1])(k),
    "vmap": lambda m, r, k: m.vmap(lambda k: r.uniform(k, (2,)))(r.split(k, 3)),
    "vmap_split": lambda m, r, k: m.vmap(lambda k: r.split(k))(r.split(k, 3)),
    "vmap_fold_in": lambda m, r, k: m.vmap(r.fold_in)(r.split(k, 3), np.arange(3, dtype=np.uint32)),
    "vmap_gamma": lambda m, r, k: m.vmap(lambda k: r.gamma(k, 2.0, (2,)))(r.split(k, 2)),
    "grad": lambda m, r, k: m.grad(lambda x, k: (r.normal(k, (3,)) * x).sum())(1.5, k),
    "grad_gamma": lambda m, r, k: m.grad(lambda a, k: r.gamma(k, a, (3,)).sum())(1.5, k),
    "grad_loggamma": lambda m, r, k: m.grad(lambda a, k: r.loggamma(k, a, (3,)).sum())(0.5, k),
    "iter_index": lambda m, r, k: (list(r.split(k, 2)), r.split(k, 4)[1:3].reshape(2, 1)),
    "where_select": lambda m, r, k: (
        m.numpy.where(np.array([True, False, True]), r.split(k, 3), k),
        m.lax.select(np.array([False, True]), r.split(k, 2), r.split(r.fold_in(k, 1), 2))),
    "scan_cond_fori": lambda m, r, k: (
        m.lax.scan(lambda c, _: (r.fold_in(c, 1), r.uniform(c)), k, None, length=3),
        m.lax.cond(True, lambda k: r.split(k)[0], lambda k: k, k),
        m.lax.fori_loop(0, 3, lambda i, k: r.fold_in(k, i), k)),
    "vmap_vmap": lambda m, r, k: m.vmap(m.vmap(lambda k: r.bits(k)))(r.split(k, (2, 2))),
    "at_set_eq": lambda m, r, k: (r.split(k, 3).at[0].set(k), r.split(k, 3) == r.split(k, 3)[::-1]),
    "wrap_key_data": lambda m, r, k: r.wrap_key_data(r.key_data(r.split(k, 2)), impl=r.key_impl(k)),
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", list(CASES))
def test_samples(impl, case):
  # Under the suite's XLA flags (no fusion emitters, -O0) one philox2x32 gamma sample differs
  # from JAX's in its last bits (XLA compiles the gamma loop's float work differently; the key
  # data and bits match, and with default flags so do the samples): compared to 1e-5 there.
  loose = impl == "philox2x32" and "gamma" in case and "loggamma" not in case
  run_both(CASES[case], impl, rtol=1e-5 if loose else None)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", ["split", "fold_in", "normal", "vmap_split"])
def test_samples_legacy_threefry_mode(impl, case):
  # (rbg's split and fold_in hash with threefry, in the jax_threefry_partitionable mode)
  with threefry_mode(False):
    run_both(CASES[case], impl)


@pytest.mark.parametrize("impl", IMPLS)
def test_dtype_repr_and_types(impl):
  ka, kj = arrax.random.key(0, impl=impl), jax.random.key(0, impl=impl)
  ksa, ksj = arrax.random.split(ka, 3), jax.random.split(kj, 3)
  assert repr(ka) == repr(kj)
  assert str(ksa.dtype) == str(ksj.dtype) == str(arrax.random.key_dtype(impl))
  assert arrax.random.key_impl(ka) == jax.random.key_impl(kj) == impl
  assert str(arrax.typeof(ksa)) == str(jax.typeof(ksj))
  assert (str(arrax.eval_shape(lambda k: arrax.random.split(k, 4), ka))
          == str(jax.eval_shape(lambda k: jax.random.split(k, 4), kj)))
  assert ksa.shape == ksj.shape and ksa.ndim == ksj.ndim and ksa[0].shape == ()
  assert_bits_equal(arrax.random.PRNGKey(5, impl=impl), jax.random.PRNGKey(5, impl=impl))


def test_wrap_key_data_checks_the_key_shape():
  data = np.zeros((3, 2), np.uint32)
  with pytest.raises(TypeError) as j:
    jax.random.wrap_key_data(data, impl="rbg")
  same_exception(lambda: arrax.random.wrap_key_data(data, impl="rbg"), j.value,
                 match=("expected key_data.shape to end with (4,)",))
  assert (str(arrax.random.wrap_key_data(np.zeros((2, 4), np.uint32), impl="rbg").dtype)
          == "key<rbg>")


@contextlib.contextmanager
def default_impl(name, how):
  if how == "context":
    with arrax.default_prng_impl(name), jax.default_prng_impl(name):
      yield
    return
  old = (arrax.config.jax_default_prng_impl, jax.config.jax_default_prng_impl)
  arrax.config.update("jax_default_prng_impl", name)
  jax.config.update("jax_default_prng_impl", name)
  try:
    yield
  finally:
    arrax.config.update("jax_default_prng_impl", old[0])
    jax.config.update("jax_default_prng_impl", old[1])


@pytest.mark.parametrize("how", ["update", "context"])
@pytest.mark.parametrize("impl", IMPLS)
def test_default_impl(impl, how):
  with default_impl(impl, how):
    for r in ((arrax.random, jax.random)):
      assert str(r.key(0).dtype) == f"key<{TAGS[impl]}>"
    assert_bits_equal(arrax.random.PRNGKey(3), jax.random.PRNGKey(3))
    # raw keys are read with the default implementation
    assert_bits_equal(arrax.random.normal(arrax.random.PRNGKey(3), (3,)),
                      jax.random.normal(jax.random.PRNGKey(3), (3,)))
    assert_bits_equal(arrax.random.split(arrax.random.key(2)), jax.random.split(jax.random.key(2)))
  assert str(arrax.random.key(0).dtype) == "key<fry>"


def _custom(ext, lib_np, r):
  def seed(s):
    return lib_np.stack([lib_np.uint32(7) + s.astype(lib_np.uint32), lib_np.uint32(3)])

  def split(k, shape):
    n = int(np.prod(shape))
    return lib_np.reshape(lib_np.arange(2 * n, dtype=lib_np.uint32) + k[0], (*shape, 2))

  def random_bits(k, bit_width, shape):
    return r.bits(r.wrap_key_data(k, impl="threefry2x32"), shape, np.dtype(f"uint{bit_width}"))

  return ext.random.define_prng_impl(key_shape=(2,), seed=seed, split=split,
                                     random_bits=random_bits, fold_in=lambda k, d: k ^ d,
                                     name="mine", tag="mn")


def test_define_prng_impl_keys():
  ia, ij = _custom(aex, anp, arrax.random), _custom(jex, jnp, jax.random)
  ka, kj = arrax.random.key(3, impl=ia), jax.random.key(3, impl=ij)
  assert str(ka.dtype) == str(kj.dtype) == "key<mn>"
  assert str(arrax.random.key_impl(ka)) == str(jax.random.key_impl(kj))

  def draws(m, r, k):
    return (k, r.split(k, 3), r.fold_in(k, 5), r.uniform(k, (3,)),
            m.vmap(lambda k: r.normal(k, (2,)))(r.split(k, 2)),
            m.jit(lambda k: r.randint(k, (3,), 0, 9))(k))
  for a, e in zip(draws(arrax, arrax.random, ka), draws(jax, jax.random, kj)):
    assert_bits_equal(a, e)


def test_pallas_impls_registered():
  import arrax.experimental.pallas.ops.tpu.random.threefry  # noqa: F401
  import arrax.experimental.pallas.tpu as apltpu
  import jax.experimental.pallas.ops.tpu.random.threefry  # noqa: F401
  import jax.experimental.pallas.tpu as jpltpu
  ka = arrax.random.key(0, impl="pallas_threefry2x32")
  kj = jax.random.key(0, impl="pallas_threefry2x32")
  assert str(ka.dtype) == str(kj.dtype) == "key<plfry>"
  assert arrax.random.key_impl(ka) == jax.random.key_impl(kj) == "pallas_threefry2x32"
  assert_bits_equal(arrax.random.split(ka), jax.random.split(kj))
  with apltpu.force_tpu_interpret_mode():
    a = arrax.random.bits(ka, (3, 5))
  with jpltpu.force_tpu_interpret_mode():
    e = jax.random.bits(kj, (3, 5))
  assert_bits_equal(a, e)


def test_key_reuse_rbg():
  with arrax.debug_key_reuse(True):
    k = arrax.random.key(0, impl="rbg")
    arrax.random.normal(k)
    with pytest.raises(arrax.errors.KeyReuseError):
      arrax.random.normal(k)
    k2 = arrax.random.key(1, impl="rbg")
    f = arrax.jit(lambda k: (arrax.random.normal(k), arrax.random.uniform(k)))
    with pytest.raises(arrax.errors.KeyReuseError):
      f(k2)


def test_threefry_keys_unchanged():
  ka = arrax.random.key(0)
  assert ka.dtype is arrax.random.key_dtype() and str(ka.dtype) == "key<fry>"
  assert arrax.random.key_dtype("rbg") != ka.dtype
  assert hash(arrax.random.key_dtype("rbg")) == hash(arrax.random.key_dtype("rbg"))


def _two_d(ext, lib_np, r):
  # An implementation whose key data is (1, 2) per key, over threefry keys.
  def one(k):
    return r.wrap_key_data(k[0], impl="threefry2x32")

  return ext.random.define_prng_impl(
      key_shape=(1, 2), seed=lambda s: lib_np.reshape(r.key_data(r.key(s)), (1, 2)),
      split=lambda k, shape: lib_np.reshape(r.key_data(r.split(one(k), shape)), (*shape, 1, 2)),
      fold_in=lambda k, d: lib_np.reshape(r.key_data(r.fold_in(one(k), d)), (1, 2)),
      random_bits=lambda k, bw, shape: r.bits(one(k), shape, np.dtype(f"uint{bw}")),
      name="two_d", tag="2d")


def test_two_dimensional_key_shape():
  ia, ij = _two_d(aex, anp, arrax.random), _two_d(jex, jnp, jax.random)

  def draws(m, r, impl):
    k = r.key(3, impl=impl)
    ks = r.split(k, 3)
    return (ks, ks[1], ks.reshape(3, 1).T, ks == ks[::-1], m.numpy.where(ks == ks, k, ks),
            m.vmap(lambda k: r.uniform(k, (2,)))(ks), m.jit(lambda s: r.key(s, impl=impl))(5),
            r.normal(k, (2,)))
  a, e = draws(arrax, arrax.random, ia), draws(jax, jax.random, ij)
  assert str(a[0].dtype) == str(e[0].dtype) == "key<2d>" and a[0].shape == e[0].shape == (3,)
  for x, y in zip(a, e):
    assert_bits_equal(x, y)
