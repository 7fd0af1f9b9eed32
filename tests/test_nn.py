"""arrax.nn against jax.nn: activations over dtypes and edge values, gradients at the kinks,
jit/vmap, jaxpr text, the softmax family, one_hot, dot_product_attention and bit-exact
initializers in both threefry modes.
"""
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from oracle import assert_bits_equal, assert_same, check_jaxpr, same_exception, threefry_mode

BF16 = np.dtype(ml_dtypes.bfloat16)

ELEMENTWISE = ["relu", "relu6", "sigmoid", "log_sigmoid", "softplus", "sparse_plus",
               "sparse_sigmoid", "soft_sign", "silu", "swish", "elu", "celu", "selu",
               "leaky_relu", "hard_tanh", "hard_sigmoid", "hard_silu", "hard_swish",
               "squareplus", "mish", "tanh", "identity", "gelu"]

# Edge values: the kinks of the piecewise functions, +-inf, nan, signed zero, large values.
EDGES = np.array([-np.inf, -30., -6., -3., -1., -0.5, -0., 0., 0.5, 1., 3., 6., 7., 30.,
                  np.inf, np.nan], np.float32)


def _tol(dtype):
  return {np.dtype(np.float16): 2e-3, BF16: 1e-2, np.dtype(np.float64): 1e-13}.get(
      np.dtype(dtype), 2e-6)


@pytest.mark.parametrize("name", ELEMENTWISE)
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.float16])
def test_elementwise_values(name, dtype):
  x = EDGES.astype(dtype)
  assert_same(getattr(arrax.nn, name)(anp.asarray(x)), getattr(jax.nn, name)(jnp.asarray(x)),
              tol=_tol(dtype))


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_x64(name, x64):
  x = np.concatenate([EDGES.astype(np.float64), np.linspace(-8, 8, 33)])
  assert_same(getattr(arrax.nn, name)(anp.asarray(x)), getattr(jax.nn, name)(jnp.asarray(x)),
              tol=_tol(np.float64))


@pytest.mark.parametrize("name", ["relu", "relu6", "sigmoid", "softplus", "silu", "elu", "gelu",
                                  "leaky_relu", "hard_tanh", "squareplus", "identity"])
@pytest.mark.parametrize("x", [2, 0.5, -1.5, True], ids=["int", "float", "neg", "bool"])
def test_python_scalars_and_ints(name, x):
  """Weak-typed Python scalars stay weak; ints and bools promote (or raise) as in JAX."""
  fa, fj = getattr(arrax.nn, name), getattr(jax.nn, name)
  for xa, xj in ((x, x), (anp.array([-2, 0, 3]), jnp.array([-2, 0, 3]))):
    try:
      e = fj(xj)
    except Exception as exc:  # noqa: BLE001
      same_exception(lambda: fa(xa), exc)
      continue
    assert_same(fa(xa), e)


def test_parameterized_activations():
  x = np.linspace(-4, 4, 17).astype(np.float32)
  cases = [("elu", dict(alpha=0.5)), ("celu", dict(alpha=2.0)),
           ("leaky_relu", dict(negative_slope=0.2)), ("squareplus", dict(b=1.0)),
           ("gelu", dict(approximate=False))]
  for name, kw in cases:
    assert_same(getattr(arrax.nn, name)(anp.asarray(x), **kw),
                getattr(jax.nn, name)(jnp.asarray(x), **kw))
  alpha = np.linspace(0.5, 2, 17).astype(np.float32)
  assert_same(arrax.nn.elu(anp.asarray(x), anp.asarray(alpha)),
              jax.nn.elu(jnp.asarray(x), jnp.asarray(alpha)))


@pytest.mark.parametrize("approximate", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.float16])
def test_gelu(approximate, dtype):
  x = np.linspace(-6, 6, 25).astype(dtype)
  assert_same(arrax.nn.gelu(anp.asarray(x), approximate), jax.nn.gelu(jnp.asarray(x), approximate),
              tol=_tol(dtype))


# ---- gradients at the special points ------------------------------------------------------------

GRAD_POINTS = {
    "relu": [0., -1., 2.], "relu6": [0., 6., 3., 7., -1.], "hard_sigmoid": [-3., 3., 0.],
    "hard_silu": [-3., 3., 0.], "hard_tanh": [-1., 1., 0., 2.], "leaky_relu": [0., -1., 1.],
    "elu": [0., -1., 1.], "celu": [0., -2.], "selu": [0., -1.], "sparse_plus": [-1., 1., 0.],
    "sparse_sigmoid": [-1., 1., 0.], "softplus": [0., -50., 50.], "log_sigmoid": [0., -50.],
    "sigmoid": [0., 40.], "silu": [0., -3.], "mish": [0., 2.], "gelu": [0., -2.],
    "squareplus": [0.], "soft_sign": [0., -2.], "log1mexp": [0.1, 2.],
}


@pytest.mark.parametrize("name", sorted(GRAD_POINTS))
def test_grad_at_special_points(name):
  for p in GRAD_POINTS[name]:
    a = arrax.grad(getattr(arrax.nn, name))(np.float32(p))
    e = jax.grad(getattr(jax.nn, name))(np.float32(p))
    assert_same(a, e, rtol=1e-6, atol=1e-7)


def test_relu_grad_zero_at_zero():
  g = arrax.vmap(arrax.grad(arrax.nn.relu))(anp.array([-1., 0., 1.]))
  np.testing.assert_array_equal(np.asarray(g), [0., 0., 1.])
  g6 = arrax.vmap(arrax.grad(arrax.nn.relu6))(anp.array([0., 6., 3.]))
  np.testing.assert_array_equal(np.asarray(g6), [0., 0., 1.])


@pytest.mark.parametrize("name", ["relu", "gelu", "elu", "softplus"])
def test_check_grads(name):
  from arrax.test_util import check_grads
  x = anp.array([-1.3, -0.4, 0.7, 2.1])
  check_grads(getattr(arrax.nn, name), (x,), order=2, modes=["fwd", "rev"])


# ---- jit / vmap ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["relu", "gelu", "hard_silu", "elu", "softmax", "log_softmax",
                                  "standardize", "glu"])
def test_jit_vmap(name):
  x = np.random.RandomState(0).randn(3, 4, 6).astype(np.float32)
  fa, fj = getattr(arrax.nn, name), getattr(jax.nn, name)
  assert_same(arrax.jit(fa)(anp.asarray(x)), jax.jit(fj)(jnp.asarray(x)), rtol=1e-6, atol=1e-6)
  assert_same(arrax.vmap(fa, in_axes=1)(anp.asarray(x)), jax.vmap(fj, in_axes=1)(jnp.asarray(x)),
              rtol=1e-6, atol=1e-6)


# ---- jaxpr text ---------------------------------------------------------------------------------

@pytest.mark.parametrize("case", [
    ("relu", {}), ("relu6", {}), ("softmax", {}), ("log_softmax", {}), ("gelu", {}),
    ("sigmoid", {}), ("silu", {}), ("elu", {}),
    ("softmax", dict(axis=0)), ("hard_silu", {}),
], ids=lambda c: c[0] + "".join(f"-{k}={v}" for k, v in c[1].items()))
def test_jaxpr_text(case):
  name, kw = case
  x = np.ones((2, 3), np.float32)
  check_jaxpr(lambda v: getattr(arrax.nn, name)(v, **kw), lambda v: getattr(jax.nn, name)(v, **kw),
              x, convert="arrays")


@pytest.mark.parametrize("name", ["relu", "softmax", "log_softmax"])
def test_grad_jaxpr_text(name):
  x = np.ones((3,), np.float32)
  check_jaxpr(arrax.grad(lambda v: getattr(arrax.nn, name)(v)[0]),
              jax.grad(lambda v: getattr(jax.nn, name)(v)[0]), x, convert="arrays")


# ---- softmax family -----------------------------------------------------------------------------

SOFTMAX_INPUTS = {
    "plain": np.array([[1., 2., 3., -1.], [0., 0., 0., 0.]], np.float32),
    "big": np.array([[1000., 999., -1000., 0.], [-np.inf, 0., 1., 2.]], np.float32),
    "allneginf": np.array([[-np.inf] * 4, [1., 2., 3., 4.]], np.float32),
    "posinf": np.array([[np.inf, 0., 1., 2.], [1., 2., 3., 4.]], np.float32),
    "nan": np.array([[np.nan, 0., 1., 2.], [1., 2., 3., 4.]], np.float32),
}
WHERE = np.array([[True, False, True, True], [False, False, True, False]])


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("inp", sorted(SOFTMAX_INPUTS))
@pytest.mark.parametrize("axis", [-1, 0, None, (0, 1)])
@pytest.mark.parametrize("masked", [False, True])
def test_softmax_family(name, inp, axis, masked):
  x = SOFTMAX_INPUTS[inp]
  kw = dict(axis=axis)
  if masked:
    kw["where"] = WHERE
  fa, fj = getattr(arrax.nn, name), getattr(jax.nn, name)
  assert_same(fa(anp.asarray(x), **{**kw, "where": anp.asarray(WHERE)} if masked else kw),
              fj(jnp.asarray(x), **kw), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_grad_and_dtypes(name):
  x = np.random.RandomState(1).randn(3, 5).astype(np.float32)
  fa, fj = getattr(arrax.nn, name), getattr(jax.nn, name)
  ga = arrax.grad(lambda v: (fa(v) * anp.arange(5.)).sum())(anp.asarray(x))
  gj = jax.grad(lambda v: (fj(v) * jnp.arange(5.)).sum())(jnp.asarray(x))
  assert_same(ga, gj, rtol=1e-5, atol=1e-6)
  for dt in (BF16, np.float16):
    assert_same(fa(anp.asarray(x.astype(dt))), fj(jnp.asarray(x.astype(dt))), tol=_tol(dt))


@pytest.mark.parametrize("kw", [dict(), dict(axis=1), dict(axis=(0, 1), keepdims=True),
                                dict(axis=0, b="b"), dict(axis=1, return_sign=True, b="b"),
                                dict(axis=1, where="w")], ids=str)
def test_logsumexp_logmeanexp(kw):
  x = np.array([[1., 2., -np.inf, 4.], [-np.inf, -np.inf, -np.inf, -np.inf]], np.float32)
  b = np.array([[1., -2., 1., 0.5], [1., 1., 1., 1.]], np.float32)
  def run(mod, xp):
    k = dict(kw)
    if k.get("b") == "b":
      k["b"] = xp.asarray(b)
    if k.get("where") == "w":
      k["where"] = xp.asarray(WHERE[:2])
    return mod.nn.logsumexp(xp.asarray(x), **k)
  a, e = run(arrax, anp), run(jax, jnp)
  if isinstance(e, tuple):
    for ai, ei in zip(a, e):
      assert_same(ai, ei)
  else:
    assert_same(a, e)
  mkw = {k: v for k, v in kw.items() if k in ("axis", "keepdims")}
  assert_same(arrax.nn.logmeanexp(anp.asarray(x), **mkw), jax.nn.logmeanexp(jnp.asarray(x), **mkw))
  assert_same(arrax.nn.logmeanexp(anp.asarray(x), axis=1, where=anp.asarray(WHERE)),
              jax.nn.logmeanexp(jnp.asarray(x), axis=1, where=jnp.asarray(WHERE)))


def test_logsumexp_int_and_grad():
  xi = np.array([1, 2, 3], np.int32)
  assert_same(arrax.nn.logsumexp(anp.asarray(xi)), jax.nn.logsumexp(jnp.asarray(xi)))
  x = np.array([1., 2., 3.], np.float32)
  assert_same(arrax.grad(arrax.nn.logsumexp)(anp.asarray(x)),
              jax.grad(jax.nn.logsumexp)(jnp.asarray(x)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kw", [dict(), dict(axis=0), dict(axis=None), dict(algorithm="stable"),
                                dict(epsilon=0.1), dict(where="w"), dict(mean=0.5, variance=2.)],
                         ids=str)
def test_standardize(kw):
  x = np.random.RandomState(2).randn(2, 4).astype(np.float32) * 3 + 1
  def run(mod, xp):
    k = dict(kw)
    if k.get("where") == "w":
      k["where"] = xp.asarray(WHERE)
    return mod.nn.standardize(xp.asarray(x), **k)
  assert_same(run(arrax, anp), run(jax, jnp), rtol=1e-5, atol=1e-6)


def test_standardize_bad_algorithm():
  with pytest.raises(ValueError) as e:
    jax.nn.standardize(jnp.ones(3), algorithm="bogus")
  same_exception(lambda: arrax.nn.standardize(anp.ones(3), algorithm="bogus"), e.value)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_glu(axis):
  x = np.random.RandomState(3).randn(4, 6).astype(np.float32)
  assert_same(arrax.nn.glu(anp.asarray(x), axis), jax.nn.glu(jnp.asarray(x), axis), rtol=1e-6)


# ---- one_hot ------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", [
    (np.array([0, 1, 2, 3, -1, 4]), 4, {}),
    (np.array([[0, 2], [1, 5]], np.int8), 3, {}),
    (np.array([[0, 2], [1, 1]]), 3, dict(axis=0)),
    (np.array([[0, 2], [1, 1]]), 3, dict(axis=1)),
    (np.array([[0, 2], [1, 1]], np.uint8), 3, dict(axis=-2)),
    (np.array([0, 1, 2]), 3, dict(dtype=np.int32)),
    (np.array([0, 1, 2]), 3, dict(dtype=BF16)),
    (np.array([0, 1, 2]), 3, dict(dtype=bool)),
    (np.array(2), 5, {}),
    (np.zeros((0,), np.int32), 3, {}),
], ids=lambda c: f"{c[0].shape}-{c[0].dtype}-{c[1]}-{c[2]}")
def test_one_hot(case):
  x, n, kw = case
  assert_same(arrax.nn.one_hot(anp.asarray(x), n, **kw), jax.nn.one_hot(jnp.asarray(x), n, **kw))


def test_one_hot_float_input_warns_and_jaxpr():
  with pytest.warns(DeprecationWarning):
    a = arrax.nn.one_hot(anp.array([0., 2.]), 3)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    e = jax.nn.one_hot(jnp.array([0., 2.]), 3)
  assert_same(a, e)
  check_jaxpr(lambda v: arrax.nn.one_hot(v, 4), lambda v: jax.nn.one_hot(v, 4),
              np.array([1, 2], np.int32), convert="arrays")


def test_one_hot_named_axis_and_vmap():
  x = np.array([2, 0, 1], np.int32)
  a = arrax.vmap(lambda v: arrax.nn.one_hot(v, 3, axis="i"), axis_name="i")(anp.asarray(x))
  e = jax.vmap(lambda v: jax.nn.one_hot(v, 3, axis="i"), axis_name="i")(jnp.asarray(x))
  assert_same(a, e)
  assert_same(arrax.vmap(lambda v: arrax.nn.one_hot(v, 4))(anp.asarray(x)),
              jax.vmap(lambda v: jax.nn.one_hot(v, 4))(jnp.asarray(x)))
  with pytest.raises(ValueError) as err:
    jax.vmap(lambda v: jax.nn.one_hot(v, 4, axis="i"), axis_name="i")(jnp.asarray(x))
  same_exception(lambda: arrax.vmap(lambda v: arrax.nn.one_hot(v, 4, axis="i"),
                                    axis_name="i")(anp.asarray(x)), err.value)


def test_one_hot_traced_num_classes():
  with pytest.raises(Exception) as err:
    jax.jit(lambda n: jax.nn.one_hot(jnp.array([0]), n))(3)
  same_exception(lambda: arrax.jit(lambda n: arrax.nn.one_hot(anp.array([0]), n))(3), err.value)


# ---- dot_product_attention ---------------------------------------------------------------------

def _attn_inputs(b=2, t=3, s=4, n=4, k=2, h=8, dtype=np.float32):
  r = np.random.RandomState(4)
  q = r.randn(b, t, n, h).astype(dtype)
  kk = r.randn(b, s, k, h).astype(dtype)
  v = r.randn(b, s, k, h).astype(dtype)
  return q, kk, v


@pytest.mark.parametrize("kw", [
    dict(), dict(is_causal=True, scale=0.5), dict(bias="bias", mask="mask"),
    dict(local_window_size=(0, 2)),
    dict(query_seq_lengths=np.array([2, 3], np.int32),
         key_value_seq_lengths=np.array([4, 1], np.int32), local_window_size=1),
    dict(return_residual=True, is_causal=True),
], ids=lambda kw: ",".join(kw) or "plain")
def test_dot_product_attention(kw):
  q, k, v = _attn_inputs()
  r = np.random.RandomState(5)
  extra = {"bias": r.randn(2, 1, 3, 4).astype(np.float32),
           "mask": r.rand(2, 4, 3, 4) > 0.3}
  def run(mod, xp):
    args = {name: xp.asarray(extra[val]) if isinstance(val, str) else val
            for name, val in kw.items()}
    return mod.nn.dot_product_attention(xp.asarray(q), xp.asarray(k), xp.asarray(v), **args)
  a, e = run(arrax, anp), run(jax, jnp)
  if isinstance(e, tuple):
    for ai, ei in zip(a, e):
      assert_same(ai, ei, rtol=1e-5, atol=1e-5)
  else:
    assert_same(a, e, rtol=1e-5, atol=1e-5)


def test_dot_product_attention_3d_bf16_and_grad():
  q, k, v = _attn_inputs(b=1, n=2, k=2)
  q, k, v = q[0], k[0], v[0]
  a = arrax.nn.dot_product_attention(*(anp.asarray(t.astype(BF16)) for t in (q, k, v)))
  e = jax.nn.dot_product_attention(*(jnp.asarray(t.astype(BF16)) for t in (q, k, v)))
  assert_same(a, e, rtol=2e-2, atol=2e-2)
  ga = arrax.grad(lambda x: arrax.nn.dot_product_attention(x, anp.asarray(k), anp.asarray(v))
                  .sum())(anp.asarray(q))
  gj = jax.grad(lambda x: jax.nn.dot_product_attention(x, jnp.asarray(k), jnp.asarray(v))
                .sum())(jnp.asarray(q))
  assert_same(ga, gj, rtol=1e-5, atol=1e-5)


def test_dot_product_attention_errors():
  q, k, v = _attn_inputs(n=3, k=2)
  with pytest.raises(ValueError) as err:
    jax.nn.dot_product_attention(jnp.asarray(q), jnp.asarray(k), jnp.asarray(v))
  same_exception(lambda: arrax.nn.dot_product_attention(anp.asarray(q), anp.asarray(k),
                                                        anp.asarray(v)), err.value)
  q, k, v = _attn_inputs()
  with pytest.raises(ValueError) as err:
    jax.nn.dot_product_attention(jnp.asarray(q), jnp.asarray(k), jnp.asarray(v[..., :4]))
  same_exception(lambda: arrax.nn.dot_product_attention(anp.asarray(q), anp.asarray(k),
                                                        anp.asarray(v[..., :4])), err.value)


# ---- initializers -------------------------------------------------------------------------------

INITS = [
    ("zeros", None, {}), ("ones", None, {}), ("constant", (0.3,), {}),
    ("uniform", (2.0,), {}), ("normal", (0.5,), {}),
    ("truncated_normal", (), dict(lower=-1.0, upper=3.0)),
    ("variance_scaling", (2.0, "fan_in", "normal"), {}),
    ("variance_scaling", (1.0, "fan_out", "truncated_normal"), {}),
    ("variance_scaling", (0.5, "fan_avg", "uniform"), dict(in_axis=0, out_axis=(1, 2))),
    ("variance_scaling", (1.0, "fan_geo_avg", "uniform"), dict(batch_axis=0)),
    ("glorot_normal", (), {}), ("lecun_uniform", (), {}), ("he_normal", (), {}),
    ("orthogonal", (2.0, 0), {}), ("delta_orthogonal", (), {}),
]
ALIASES = [("xavier_uniform", "glorot_uniform"), ("xavier_normal", "glorot_normal"),
           ("kaiming_uniform", "he_uniform"), ("kaiming_normal", "he_normal")]


def _make(mod, name, args, kw):
  f = getattr(mod.nn.initializers, name)
  return f if args is None else f(*args, **kw)


# Every initializer in the default (partitionable) threefry mode; the distinct samplers in legacy.
LEGACY = {"uniform", "normal", "truncated_normal", "orthogonal", "delta_orthogonal"}
INIT_CASES = [(c, True) for c in INITS] + [(c, False) for c in INITS if c[0] in LEGACY]


@pytest.mark.parametrize("case,partitionable", INIT_CASES,
                         ids=lambda c: c if isinstance(c, bool) else
                         f"{c[0]}{c[1] or ''}{c[2] or ''}")
def test_initializers_bit_exact(case, partitionable):
  name, args, kw = case
  shape = (3, 3, 4, 5) if name == "delta_orthogonal" else (3, 4, 5)
  with threefry_mode(partitionable):
    a = _make(arrax, name, args, kw)(arrax.random.key(7), shape)
    e = _make(jax, name, args, kw)(jax.random.key(7), shape)
    assert_bits_equal(a, e)


@pytest.mark.parametrize("name", ["glorot_uniform", "he_normal", "constant", "uniform"])
def test_initializers_bf16_and_aliases(name):
  args = (0.25,) if name == "constant" else ()
  a = getattr(arrax.nn.initializers, name)(*args, dtype=BF16)(arrax.random.key(2), (4, 6))
  e = getattr(jax.nn.initializers, name)(*args, dtype=BF16)(jax.random.key(2), (4, 6))
  assert_bits_equal(a, e)
  for alias, target in ALIASES:
    assert getattr(arrax.nn.initializers, alias) is getattr(arrax.nn.initializers, target)


@pytest.mark.parametrize("name", ["he_uniform", "orthogonal"])
def test_initializers_x64_raw_key_and_jit(name, x64):
  # arrax's CPU qr has no float16/bfloat16 kernel (JAX's has): orthogonal is checked in float64.
  for dtype in (np.float64,) if name == "orthogonal" else (np.float64, np.float16):
    a = getattr(arrax.nn.initializers, name)()(arrax.random.PRNGKey(3), (6, 4), dtype)
    e = getattr(jax.nn.initializers, name)()(jax.random.PRNGKey(3), (6, 4), dtype)
    assert_bits_equal(a, e)
  a = arrax.jit(getattr(arrax.nn.initializers, name)(), static_argnums=(1,))(
      arrax.random.PRNGKey(4), (5, 5))
  e = jax.jit(getattr(jax.nn.initializers, name)(), static_argnums=(1,))(
      jax.random.PRNGKey(4), (5, 5))
  assert_bits_equal(a, e)


@pytest.mark.parametrize("dist", ["uniform", "truncated_normal"])
def test_variance_scaling_complex(dist):
  a = arrax.nn.initializers.variance_scaling(1.0, "fan_in", dist)(
      arrax.random.key(1), (4, 3), np.complex64)
  e = jax.nn.initializers.variance_scaling(1.0, "fan_in", dist)(
      jax.random.key(1), (4, 3), np.complex64)
  assert_same(a, e, rtol=1e-6, atol=1e-6)


def test_initializer_errors():
  cases = [
      lambda m: m.nn.initializers.glorot_uniform()(m.random.key(0), (5,)),
      lambda m: m.nn.initializers.variance_scaling(1.0, "fan_bad", "normal")(
          m.random.key(0), (2, 2)),
      lambda m: m.nn.initializers.variance_scaling(1.0, "fan_in", "cauchy")(
          m.random.key(0), (2, 2)),
      lambda m: m.nn.initializers.orthogonal()(m.random.key(0), (4,)),
      lambda m: m.nn.initializers.delta_orthogonal()(m.random.key(0), (3, 3)),
      lambda m: m.nn.initializers.delta_orthogonal()(m.random.key(0), (3, 5, 2)),
  ]
  for case in cases:
    with pytest.raises(Exception) as err:
      case(jax)
    same_exception(lambda: case(arrax), err.value)
  assert isinstance(arrax.nn.initializers.he_normal(), arrax.nn.initializers.Initializer)
  assert_same(arrax.nn.initializers.orthogonal()(arrax.random.key(0), (0, 3)),
              jax.nn.initializers.orthogonal()(jax.random.key(0), (0, 3)))
