"""First-order optimizers over pytrees, as ``jax.example_libraries.optimizers``.

An optimizer is an ``(init_fun, update_fun, get_params)`` triple:

* ``init_fun(params) -> opt_state``
* ``update_fun(step, grads, opt_state) -> opt_state`` (``grads`` has the structure of params)
* ``get_params(opt_state) -> params``

``opt_state`` is a pytree (an :class:`OptimizerState`), so it passes through ``jit``, ``vmap``
and friends. Each optimizer below is written for one array and lifted to pytrees by the
:func:`optimizer` decorator. ``step_size`` is a scalar or a schedule ``step -> scalar``.
"""
import functools
from collections import namedtuple
from collections.abc import Callable
from typing import Any, NamedTuple

import arrax.numpy as jnp
from arrax import tree, tree_util

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
# The tree structures are static metadata, not leaves: register the class explicitly so they
# travel in the treedef rather than being flattened like namedtuple fields.
tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

Array = Any
Params = Any
State = Any
Updates = Params
Step = int
Schedule = Callable[[Step], float]
InitFn = Callable[[Params], OptimizerState]
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]


class Optimizer(NamedTuple):
  init_fn: InitFn
  update_fn: UpdateFn
  params_fn: ParamsFn


def _flatten_all(trees):
  """Flatten each tree: (list of leaf lists, list of treedefs)."""
  pairs = [tree.flatten(t) for t in trees]
  return [p[0] for p in pairs], [p[1] for p in pairs]


def _unflatten_all(treedefs, leaf_lists):
  return [tree.unflatten(d, leaves) for d, leaves in zip(treedefs, leaf_lists, strict=True)]


def optimizer(opt_maker):
  """Decorator lifting an optimizer written for single arrays to pytrees of arrays.

  ``opt_maker(*args, **kwargs)`` returns ``(init, update, get_params)`` acting on one array
  (its per-array state may itself be a pytree); the decorated maker returns the same triple
  acting on arbitrary parameter pytrees, with an :class:`OptimizerState` as state.
  """
  @functools.wraps(opt_maker)
  def tree_opt_maker(*args, **kwargs):
    init, update, get_params = opt_maker(*args, **kwargs)

    @functools.wraps(init)
    def tree_init(x0_tree):
      x0_flat, treedef = tree.flatten(x0_tree)
      states_flat, subtrees = _flatten_all([init(x0) for x0 in x0_flat])
      return OptimizerState(states_flat, treedef, subtrees)

    @functools.wraps(update)
    def tree_update(i, grad_tree, opt_state):
      states_flat, treedef, subtrees = opt_state
      grad_flat, grad_treedef = tree.flatten(grad_tree)
      if grad_treedef != treedef:
        raise TypeError("optimizer update function was passed a gradient tree that did not "
                        f"match the parameter tree structure with which it was initialized: "
                        f"parameter tree {treedef} and grad tree {grad_treedef}.")
      states = _unflatten_all(subtrees, states_flat)
      new_states = [update(i, g, s) for g, s in zip(grad_flat, states, strict=True)]
      new_flat, new_subtrees = _flatten_all(new_states)
      for before, after in zip(subtrees, new_subtrees, strict=True):
        if after != before:
          raise TypeError("optimizer update function produced an output structure that did "
                          f"not match its input structure: input {before} and output {after}.")
      return OptimizerState(new_flat, treedef, subtrees)

    @functools.wraps(get_params)
    def tree_get_params(opt_state):
      states_flat, treedef, subtrees = opt_state
      states = _unflatten_all(subtrees, states_flat)
      return tree.unflatten(treedef, [get_params(s) for s in states])

    return Optimizer(tree_init, tree_update, tree_get_params)
  return tree_opt_maker


def _first(state):
  return state[0]


# ---- optimizers ----------------------------------------------------------------------------


@optimizer
def sgd(step_size):
  """Stochastic gradient descent: ``x - step_size(i) * g``."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0

  def update(i, g, x):
    return x - step_size(i) * g

  def get_params(x):
    return x
  return Optimizer(init, update, get_params)


@optimizer
def momentum(step_size: Schedule, mass: float):
  """SGD with (heavy-ball) momentum coefficient ``mass``."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * velocity, velocity
  return init, update, _first


@optimizer
def nesterov(step_size: Schedule, mass: float):
  """SGD with Nesterov momentum coefficient ``mass``."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * (mass * velocity + g), velocity
  return init, update, _first


@optimizer
def adagrad(step_size, momentum=0.9):
  """Adagrad (Duchi et al. 2011) with momentum on the normalized gradient."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, g_sq, m = state
    g_sq = g_sq + jnp.square(g)
    # Coordinates that never saw a gradient get no step (rather than 0 / 0).
    g_sq_inv_sqrt = jnp.where(g_sq > 0, 1. / jnp.sqrt(g_sq), 0.0)
    m = (1. - momentum) * (g * g_sq_inv_sqrt) + momentum * m
    return x - step_size(i) * m, g_sq, m
  return init, update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
  """RMSProp with decay ``gamma``."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0)

  def update(i, g, state):
    x, avg_sq_grad = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1. - gamma)
    return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad
  return init, update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
  """RMSProp with momentum."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, avg_sq_grad, mom = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1. - gamma)
    mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
    return x - mom, avg_sq_grad, mom
  return init, update, _first


def _bias_correction(b, dtype, i):
  # The power is taken in the moments' dtype so float32 state stays float32.
  return 1 - jnp.asarray(b, dtype) ** (i + 1)


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """Adam (Kingma & Ba 2015) with moment decays ``b1``, ``b2``."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, m, v = state
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * jnp.square(g) + b2 * v
    mhat = m / _bias_correction(b1, m.dtype, i)
    vhat = v / _bias_correction(b2, m.dtype, i)
    return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v
  return init, update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """AdaMax: Adam with an exponentially weighted infinity norm in place of ``v``."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, m, u = state
    m = (1 - b1) * g + b1 * m
    u = jnp.maximum(b2 * u, jnp.abs(g))
    x = x - (step_size(i) / _bias_correction(b1, m.dtype, i)) * m / (u + eps)
    return x, m, u
  return init, update, _first


@optimizer
def sm3(step_size, momentum=0.9):
  """SM3 (Anil et al. 2019): one accumulator vector per axis instead of a full one."""
  step_size = make_schedule(step_size)

  def others(ndim, axis):
    return tuple(a for a in range(ndim) if a != axis)

  def init(x0):
    x_shape = x0.shape
    x0 = jnp.atleast_1d(x0)
    vs = [jnp.zeros(size, dtype=x0.dtype) for size in x0.shape]
    return x0, jnp.zeros_like(x0), vs, x_shape

  def update(i, g, state):
    x, m, vs, x_shape = state
    # Each axis accumulator broadcast along the other axes; their min bounds the full one.
    vs = [jnp.expand_dims(v, others(g.ndim, axis)) for axis, v in enumerate(vs)]
    accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
    accum_inv_sqrt = jnp.where(accum > 0, 1. / jnp.sqrt(accum), 0)
    m = (1. - momentum) * (g * accum_inv_sqrt) + momentum * m
    x = x - step_size(i) * m
    vs = [accum.max(others(x.ndim, axis)) for axis in range(x.ndim)]
    return x, m, vs, x_shape

  def get_params(state):
    x, _, _, x_shape = state
    return x.reshape(x_shape)
  return init, update, get_params


# ---- learning-rate schedules: step -> step size --------------------------------------------


def constant(step_size) -> Schedule:
  """The same step size at every step."""
  def schedule(i):
    return step_size
  return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
  """``step_size * decay_rate ** (i / decay_steps)``."""
  def schedule(i):
    return step_size * decay_rate ** (i / decay_steps)
  return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
  """``step_size / (1 + decay_rate * i / decay_steps)``; ``staircase`` floors the ratio."""
  if staircase:
    def schedule(i):
      return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
  else:
    def schedule(i):
      return step_size / (1 + decay_rate * i / decay_steps)
  return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
  """Decay from ``step_size`` to ``final_step_size`` over ``decay_steps`` as a power law."""
  def schedule(step_num):
    step_num = jnp.minimum(step_num, decay_steps)
    step_mult = (1 - step_num / decay_steps) ** power
    return step_mult * (step_size - final_step_size) + final_step_size
  return schedule


def piecewise_constant(boundaries: Any, values: Any):
  """``values[k]`` where ``k`` is the number of ``boundaries`` strictly below the step."""
  boundaries = jnp.array(boundaries)
  values = jnp.array(values)
  if not boundaries.ndim == values.ndim == 1:
    raise ValueError("boundaries and values must be sequences")
  if not boundaries.shape[0] == values.shape[0] - 1:
    raise ValueError("boundaries length must be one shorter than values length")

  def schedule(i):
    return values[jnp.sum(i > boundaries)]
  return schedule


def make_schedule(scalar_or_schedule) -> Schedule:
  """A schedule as is, or a scalar as a constant schedule."""
  if callable(scalar_or_schedule):
    return scalar_or_schedule
  if jnp.ndim(scalar_or_schedule) == 0:
    return constant(scalar_or_schedule)
  raise TypeError(type(scalar_or_schedule))


# ---- utilities -----------------------------------------------------------------------------


def l2_norm(tree_):
  """The l2 norm of all leaves of a pytree taken together."""
  leaves = tree.leaves(tree_)
  return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
  """Scale a gradient pytree down so its l2 norm is at most ``max_norm``."""
  norm = l2_norm(grad_tree)

  def normalize(g):
    return jnp.where(norm < max_norm, g, g * (max_norm / norm))
  return tree.map(normalize, grad_tree)


class JoinPoint:
  """Marks where an inner pytree (one parameter's state) hangs off the parameter tree."""

  def __init__(self, subtree):
    self.subtree = subtree

  def __iter__(self):
    yield self.subtree


def unpack_optimizer_state(opt_state):
  """An :class:`OptimizerState` as the parameter tree with :class:`JoinPoint` leaves holding
  each parameter's state, e.g. for serialization."""
  states_flat, treedef, subtrees = opt_state
  states = _unflatten_all(subtrees, states_flat)
  return tree.unflatten(treedef, [JoinPoint(s) for s in states])


def pack_optimizer_state(marked_pytree):
  """Inverse of :func:`unpack_optimizer_state`."""
  sentinels, treedef = tree.flatten(marked_pytree)
  if not all(isinstance(s, JoinPoint) for s in sentinels):
    raise TypeError("pack_optimizer_state expects a pytree whose leaves are all JoinPoints, "
                    "as returned by unpack_optimizer_state.")
  states_flat, subtrees = _flatten_all([s.subtree for s in sentinels])
  return OptimizerState(states_flat, treedef, subtrees)
