"""arrax.example_libraries (stax, optimizers) against jax.example_libraries."""
import functools

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.example_libraries import optimizers as jopt
from jax.example_libraries import stax as jstax

import arrax
import arrax.numpy as anp
from arrax.example_libraries import optimizers as aopt
from arrax.example_libraries import stax as astax
from oracle import assert_close

# Each library with its own modules, so one builder serves both sides.
JAX = {"jax": jax, "jnp": jjnp, "stax": jstax, "opt": jopt}
ARRAX = {"jax": arrax, "jnp": anp, "stax": astax, "opt": aopt}


# Parameter and state trees: the same structure, shapes, dtypes and values.
_assert_trees = functools.partial(assert_close, tol=(1e-5, 1e-6), strict_tree=True)


def _inputs(shape, seed=0):
  return np.random.RandomState(seed).randn(*shape).astype(np.float32)


# ---- stax ----------------------------------------------------------------------------------

MODELS = {
    "mlp_logsoftmax": (lambda s: s.serial(s.Dense(16), s.Relu, s.Dense(8), s.Tanh, s.Dense(3),
                                          s.LogSoftmax), (5, 7)),
    "activations": (lambda s: s.serial(s.Dense(6), s.Softplus, s.Dense(6), s.Sigmoid,
                                       s.Dense(6), s.Elu, s.Dense(6), s.LeakyRelu, s.Dense(6),
                                       s.Selu, s.Dense(6), s.Gelu, s.Dense(6), s.Exp,
                                       s.Softmax), (4, 5)),
    "custom_inits": (lambda s: s.serial(
        s.Dense(4, W_init=s.randn(0.5), b_init=s.zeros), s.Dense(3, W_init=s.glorot(),
                                                               b_init=s.ones)), (2, 3)),
    "flatten_identity": (lambda s: s.serial(s.Flatten, s.Identity, s.Dense(4)), (3, 2, 5)),
    "residual": (lambda s: s.serial(
        s.Dense(6), s.FanOut(2), s.parallel(s.Dense(6), s.Identity), s.FanInSum,
        s.FanOut(3), s.parallel(s.Dense(2), s.Relu, s.Tanh), s.FanInConcat()), (4, 3)),
    "batchnorm": (lambda s: s.serial(s.Dense(5), s.BatchNorm(axis=0), s.Relu,
                                     s.BatchNorm(axis=(0,), center=False),
                                     s.BatchNorm(axis=0, scale=False)), (6, 3)),
    "shape_dependent": (lambda s: s.serial(
        s.shape_dependent(lambda shape: s.Dense(shape[-1] * 2)), s.Relu), (3, 4)),
}


def _init_apply(lib, name, seed=3):
  build, shape = MODELS[name]
  init_fun, apply_fun = build(lib["stax"])
  out_shape, params = init_fun(lib["jax"].random.PRNGKey(seed), shape)
  return out_shape, params, apply_fun(params, _inputs(shape))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_stax_init_and_apply_match_jax(name):
  j_shape, j_params, j_out = _init_apply(JAX, name)
  a_shape, a_params, a_out = _init_apply(ARRAX, name)
  assert tuple(a_shape) == tuple(j_shape)
  _assert_trees(a_params, j_params, exact=True)   # same key -> bit-identical parameters
  assert a_out.shape == tuple(a_shape)
  _assert_trees(a_out, j_out)


@pytest.mark.parametrize("mode", ["train", "test"])
def test_dropout_matches_jax(mode):
  x = _inputs((4, 6))
  outs = []
  for lib in (JAX, ARRAX):
    s, key = lib["stax"], lib["jax"].random.PRNGKey(7)
    init_fun, apply_fun = s.serial(s.Dense(5), s.Dropout(0.6, mode=mode), s.Relu)
    _, params = init_fun(key, x.shape)
    outs.append(apply_fun(params, x, rng=lib["jax"].random.PRNGKey(2)))
  _assert_trees(outs[1], outs[0])


def test_dropout_without_rng_raises():
  init_fun, apply_fun = astax.Dropout(0.5)
  _, params = init_fun(arrax.random.PRNGKey(0), (2, 3))
  with pytest.raises(ValueError, match="rng"):
    apply_fun(params, anp.ones((2, 3)))


def test_parallel_init_returns_shapes_and_params():
  for lib in (JAX, ARRAX):
    s = lib["stax"]
    shapes, params = lib["stax"].parallel(s.Dense(2), s.Tanh)[0](
        lib["jax"].random.PRNGKey(0), [(3, 4), (3, 5)])
    assert list(shapes) == [(3, 2), (3, 5)] and len(params) == 2


def test_relu_gradient_at_zero_is_zero_like_jax():
  x = np.array([-1., 0., 2.], np.float32)
  grads = [lib["jax"].grad(lambda v, s=lib["stax"]: s.relu(v).sum())(x) for lib in (JAX, ARRAX)]
  _assert_trees(grads[1], grads[0], exact=True)
  np.testing.assert_array_equal(np.asarray(grads[1]), [0., 0., 1.])


def test_activation_gradients_match_jax():
  x = _inputs((3, 4))
  names = ["softmax", "log_softmax", "elu", "selu", "gelu", "softplus", "sigmoid",
           "leaky_relu"]
  for name in names:
    grads = []
    for lib in (JAX, ARRAX):
      f = getattr(lib["stax"], name)
      grads.append(lib["jax"].grad(lambda v, f=f: (f(v) * v).sum())(x))
    _assert_trees(grads[1], grads[0])


# ---- optimizers ----------------------------------------------------------------------------

# Parameters as a nested pytree with a scalar, a vector and a matrix leaf.
PARAMS0 = {"w": np.array([[1.5, -2.0, 0.5], [0.25, 3.0, -1.0]], np.float32),
           "b": (np.array([0.3, -0.7], np.float32), np.float32(2.0))}

OPTIMIZERS = {
    "sgd": lambda o: o.sgd(0.1),
    "momentum": lambda o: o.momentum(0.05, 0.9),
    "nesterov": lambda o: o.nesterov(0.05, mass=0.8),
    "adagrad": lambda o: o.adagrad(0.3),
    "rmsprop": lambda o: o.rmsprop(0.05, gamma=0.8),
    "rmsprop_momentum": lambda o: o.rmsprop_momentum(0.02),
    "adam": lambda o: o.adam(0.1),
    "adamax": lambda o: o.adamax(0.1, b1=0.8),
    "sm3": lambda o: o.sm3(0.2),
    "sgd_exponential_decay": lambda o: o.sgd(o.exponential_decay(0.2, 3, 0.5)),
    "momentum_inverse_time": lambda o: o.momentum(o.inverse_time_decay(0.1, 2, 0.5), 0.5),
    "adam_inverse_time_staircase": lambda o: o.adam(o.inverse_time_decay(0.1, 2, 1.0, True)),
    "nesterov_polynomial": lambda o: o.nesterov(o.polynomial_decay(0.1, 4, 0.01, 2.0), 0.5),
    "adam_piecewise": lambda o: o.adam(o.piecewise_constant([1, 3], [0.2, 0.1, 0.05])),
    "sgd_callable": lambda o: o.sgd(lambda i: 0.1 / (i + 1)),
}


def _quadratic_loss(jnp):
  def loss(params):
    w, (b, c) = params["w"], params["b"]
    return (jnp.sum(jnp.square(w - 1.0) * jnp.arange(1, 7).reshape(2, 3))
            + jnp.sum(jnp.square(b + 0.5)) + 3.0 * jnp.square(c) + jnp.sum(w) * c)
  return loss


def _trajectory(lib, name, jit, steps=5):
  opt_init, opt_update, get_params = OPTIMIZERS[name](lib["opt"])
  grad = lib["jax"].grad(_quadratic_loss(lib["jnp"]))

  def step(i, state):
    return opt_update(i, grad(get_params(state)), state)
  if jit:
    step = lib["jax"].jit(step)
  state = opt_init(PARAMS0)
  params = [get_params(state)]
  for i in range(steps):
    state = step(i, state)
    params.append(get_params(state))
  return params


@pytest.mark.parametrize("name", sorted(set(OPTIMIZERS) - {"sm3"}))
def test_optimizer_trajectory_matches_jax_under_jit(name):
  expected = _trajectory(JAX, name, jit=True)
  actual = _trajectory(ARRAX, name, jit=True)
  _assert_trees(actual, expected)
  # The optimizer really moved the parameters.
  assert not np.allclose(np.asarray(actual[-1]["w"]), PARAMS0["w"])


@pytest.mark.parametrize("name", ["adam", "sm3", "adam_piecewise", "nesterov_polynomial"])
def test_optimizer_trajectory_matches_jax_eagerly(name):
  _assert_trees(_trajectory(ARRAX, name, jit=False, steps=3),
                _trajectory(JAX, name, jit=False, steps=3))


def test_sm3_state_through_jit_raises_type_error_like_jax():
  # SM3 keeps each parameter's shape as ints in its state, so a jitted step traces them.
  for lib in (JAX, ARRAX):
    with pytest.raises(TypeError):
      _trajectory(lib, "sm3", jit=True, steps=1)


SCHEDULES = {
    "constant": lambda o: o.constant(0.3),
    "exponential_decay": lambda o: o.exponential_decay(0.5, 4, 0.3),
    "inverse_time_decay": lambda o: o.inverse_time_decay(0.5, 3, 2.0),
    "inverse_time_staircase": lambda o: o.inverse_time_decay(0.5, 3, 2.0, staircase=True),
    "polynomial_decay": lambda o: o.polynomial_decay(1.0, 5, 0.1, power=0.5),
    "piecewise_constant": lambda o: o.piecewise_constant([2, 5], [1.0, 0.5, 0.1]),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedules_match_jax(name):
  steps = range(8)
  for as_array in (False, True):
    vals = []
    for lib in (JAX, ARRAX):
      schedule = SCHEDULES[name](lib["opt"])
      jitted = lib["jax"].jit(schedule)
      vals.append([jitted(lib["jnp"].asarray(i)) if as_array else schedule(i) for i in steps])
    for a, e in zip(vals[1], vals[0]):
      np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-6)
      assert np.asarray(a).dtype == np.asarray(e).dtype


def test_schedule_errors_match_jax():
  for opt in (jopt, aopt):
    with pytest.raises(ValueError, match="one shorter"):
      opt.piecewise_constant([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="sequences"):
      opt.piecewise_constant(1, [1.0, 2.0])
    with pytest.raises(TypeError):
      opt.make_schedule(np.array([0.1, 0.2]))


def test_l2_norm_and_clip_grads_match_jax():
  grads = {"a": np.array([3.0, -4.0], np.float32), "b": np.array([[12.0]], np.float32)}
  assert np.isclose(float(aopt.l2_norm(grads)), float(jopt.l2_norm(grads)))
  for max_norm in (5.0, 100.0):
    _assert_trees(aopt.clip_grads(grads, max_norm), jopt.clip_grads(grads, max_norm))


def test_optimizer_state_is_a_pytree_with_static_structure():
  state = aopt.adam(0.1)[0](PARAMS0)
  assert isinstance(state, aopt.OptimizerState)
  leaves, treedef = arrax.tree.flatten(state)
  assert len(leaves) == 3 * len(jax.tree.leaves(PARAMS0))   # x, m, v per parameter
  rebuilt = arrax.tree.unflatten(treedef, leaves)
  assert rebuilt.tree_def == state.tree_def and rebuilt.subtree_defs == state.subtree_defs
  # It passes through jit as a value.
  doubled = arrax.jit(lambda s: arrax.tree.map(lambda x: 2 * x, s))(state)
  np.testing.assert_array_equal(np.asarray(aopt.adam(0.1)[2](doubled)["w"]), 2 * PARAMS0["w"])


def test_pack_unpack_optimizer_state_round_trip():
  opt_init, opt_update, _ = aopt.momentum(0.1, 0.9)
  state = opt_update(0, PARAMS0, opt_init(PARAMS0))
  marked = aopt.unpack_optimizer_state(state)
  assert isinstance(marked["b"][0], aopt.JoinPoint)
  repacked = aopt.pack_optimizer_state(marked)
  assert repacked.tree_def == state.tree_def and repacked.subtree_defs == state.subtree_defs
  _assert_trees(repacked.packed_state, state.packed_state, exact=True)


def test_update_with_mismatched_grad_tree_raises_type_error():
  opt_init, opt_update, _ = aopt.sgd(0.1)
  with pytest.raises(TypeError, match="gradient tree"):
    opt_update(0, {"w": PARAMS0["w"]}, opt_init(PARAMS0))


# ---- stax + optimizers, trained under jit --------------------------------------------------


def _train(lib, steps=4):
  jax_, jnp, s, o = lib["jax"], lib["jnp"], lib["stax"], lib["opt"]
  init_fun, apply_fun = s.serial(s.Dense(16), s.Relu, s.Dense(16), s.Tanh, s.Dense(3),
                                 s.LogSoftmax)
  _, params = init_fun(jax_.random.PRNGKey(0), (-1, 4))
  opt_init, opt_update, get_params = o.adam(o.exponential_decay(1e-2, 10, 0.5))
  x, labels = _inputs((8, 4), seed=1), np.eye(3, dtype=np.float32)[np.arange(8) % 3]

  def loss(params):
    return -jnp.mean(jnp.sum(apply_fun(params, x) * labels, axis=-1))

  @jax_.jit
  def update(i, state):
    value, grads = jax_.value_and_grad(loss)(get_params(state))
    return opt_update(i, o.clip_grads(grads, 1.0), state), value

  state, losses = opt_init(params), []
  for i in range(steps):
    state, value = update(i, state)
    losses.append(value)
  return get_params(state), losses


def test_training_loop_under_jit_matches_jax():
  j_params, j_losses = _train(JAX)
  a_params, a_losses = _train(ARRAX)
  _assert_trees(a_losses, j_losses)
  _assert_trees(a_params, j_params)
  assert float(a_losses[-1]) < float(a_losses[0])
