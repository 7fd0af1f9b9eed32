"""JVP and transpose rules of the structural primitives and the reductions, against JAX.

For each primitive, arrax.jvp / arrax.vjp of one lax call agree with jax.jvp / jax.vjp (values,
dtypes, shapes, weak types) over several shapes and parameters, float32, float64 (x64) and
complex64 where accepted, empty arrays; second derivatives; JAX's conventions for ties of
reduce_max/min and cummax/cummin; float0 tangents of integer outputs; finite differences with
arrax.test_util.check_grads; and the printed jaxprs of grad.
"""
import jax as real_jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import arrax
import arrax.numpy as anp
from arrax import lax as alax
from arrax import test_util as atu
from oracle import (BF16, ad_tol, assert_same, check_jaxpr, check_jvp_vjp, grad_of,
                    make_with, rand)

R = np.random.default_rng(42)
X23 = rand((2, 3), np.float32, R)
X234 = rand((2, 3, 4), np.float32, R)


# ---- structural primitives --------------------------------------------------------------------
SHAPE_CASES = {
    "broadcast_in_dim_new_axes": (lambda l, x: l.broadcast_in_dim(x, (4, 2, 3), (1, 2)), X23),
    "broadcast_in_dim_size1": (lambda l, x: l.broadcast_in_dim(x, (3, 2, 4), (0, 2)),
                               rand((3, 1), np.float32, R)),
    "broadcast_in_dim_scalar": (lambda l, x: l.broadcast_in_dim(x, (2, 3), ()),
                                np.float32(1.5)),
    "broadcast_in_dim_empty": (lambda l, x: l.broadcast_in_dim(x, (0, 3), (1,)),
                               rand((3,), np.float32, R)),
    "broadcast": (lambda l, x: l.broadcast(x, (2,)), X23),
    "expand_dims": (lambda l, x: l.expand_dims(x, (0, -1)), X23),
    "reshape": (lambda l, x: l.reshape(x, (3, 2)), X23),
    "reshape_dimensions": (lambda l, x: l.reshape(x, (4, 6), (2, 0, 1)), X234),
    "reshape_scalar": (lambda l, x: l.reshape(x, (1, 1)), np.float32(2.0)),
    "reshape_empty": (lambda l, x: l.reshape(x, (3, 0)), np.zeros((0, 3), np.float32)),
    "squeeze": (lambda l, x: l.squeeze(x, (0, 2)), rand((1, 3, 1), np.float32, R)),
    "transpose": (lambda l, x: l.transpose(x, (2, 0, 1)), X234),
    "rev": (lambda l, x: l.rev(x, (0, 2)), X234),
    "slice": (lambda l, x: l.slice(x, (0, 1), (2, 3)), X23),
    "slice_strides": (lambda l, x: l.slice(x, (0, 1, 0), (2, 3, 4), (2, 1, 3)), X234),
    "slice_empty": (lambda l, x: l.slice(x, (1, 1), (1, 3)), X23),
    "slice_in_dim": (lambda l, x: l.slice_in_dim(x, -3, None, 2, axis=2), X234),
    "index_in_dim": (lambda l, x: l.index_in_dim(x, 1, 1, keepdims=False), X234),
    "dynamic_slice": (lambda l, x: l.dynamic_slice(x, (1, 2), (1, 2)), X23),
    "dynamic_slice_clamped": (lambda l, x: l.dynamic_slice(x, (np.int32(5), np.int32(-9)),
                                                           (2, 2)), X23),
    "dynamic_index_in_dim": (lambda l, x: l.dynamic_index_in_dim(x, 2, 2), X234),
    "concatenate": (lambda l, x: l.concatenate([x, l.add(x, x), x[:, :1]], 1), X23),
    "concatenate_empty": (lambda l, x: l.concatenate([x, x[:0]], 0), X23),
    "split": (lambda l, x: l.split(x, (1, 0, 2), axis=1), X23),
    "pad": (lambda l, x: l.pad(x, np.asarray(0.5, x.dtype), [(1, 2, 0), (0, 1, 1)]), X23),
    "pad_negative": (lambda l, x: l.pad(x, np.asarray(0, x.dtype), [(-1, 1, 1), (2, -2, 2)]), X23),
    "pad_scalar": (lambda l, x: l.pad(x, np.float32(1.0), []), np.float32(3.0)),
    "pad_empty": (lambda l, x: l.pad(x, np.float32(1.0), [(1, 1, 2), (0, 1, 0)]),
                  np.zeros((0, 2), np.float32)),
}


@pytest.mark.parametrize("name", sorted(SHAPE_CASES))
def test_structural_float32(name):
  fn, x = SHAPE_CASES[name]
  check_jvp_vjp(fn, x, eager=True)


@pytest.mark.parametrize("name", ["broadcast_in_dim_size1", "reshape_dimensions", "transpose",
                                  "slice_strides", "pad_negative", "concatenate", "split",
                                  "dynamic_slice"])
def test_structural_complex64(name):
  fn, x = SHAPE_CASES[name]
  check_jvp_vjp(fn, (np.asarray(x) * (1 + 0.5j)).astype(np.complex64))


@pytest.mark.parametrize("name", ["broadcast_in_dim_new_axes", "reshape", "rev", "slice",
                                  "pad", "concatenate"])
def test_structural_float64(name, x64):
  fn, x = SHAPE_CASES[name]
  check_jvp_vjp(fn, np.asarray(x, np.float64))
  atu.check_grads(lambda v: fn(alax, v), (np.asarray(x, np.float64),), 2)


def test_pad_value_cotangent():
  # The padding value gets the cotangent of every padded position.
  config = [(1, -1, 1), (2, 0, 0)]
  check_jvp_vjp(lambda l, x, v: l.pad(x, v, config), X23, np.float32(0.25))
  # JAX's own rule fails when only the padding value is differentiated (it sums the operand's
  # missing cotangent); arrax gives the padding value's part of the full cotangent.
  ct = rand((3, 5), np.float32, np.random.default_rng(4))
  _, vjp_a = arrax.vjp(lambda v: alax.pad(X23, v, config), np.float32(0.25))
  _, vjp_j = real_jax.vjp(lambda x, v: jlax.pad(x, v, config), X23, np.float32(0.25))
  assert_same(vjp_a(ct)[0], vjp_j(ct)[1], tol=ad_tol)


@pytest.mark.parametrize("argnums", [(0,), (1,), (0, 1)])
def test_dynamic_update_slice(argnums):
  upd = rand((1, 2), np.float32, np.random.default_rng(3))
  check_jvp_vjp(lambda l, x, u: l.dynamic_update_slice(x, u, (1, 2)), X23, upd, argnums=argnums)
  # Out-of-bounds starts are clamped; the update hides the operand where it is written.
  check_jvp_vjp(lambda l, x, u: l.dynamic_update_slice(x, u, (np.int32(7), np.int32(-1))), X23, upd,
                argnums=argnums)


def test_dynamic_slice_traced_index():
  def f(lib, idx):
    return lambda x: lib.lax.dynamic_slice_in_dim(x, idx, 2, axis=1)
  for idx in (0, 1, 2):
    ga = arrax.jit(arrax.grad(lambda x, i: alax.reduce_sum(
        alax.dynamic_slice_in_dim(x, i, 2, axis=1) ** 2, (0, 1))))(X23, idx)
    gj = real_jax.jit(real_jax.grad(lambda x, i: jlax.reduce_sum(
        jlax.dynamic_slice_in_dim(x, i, 2, axis=1) ** 2, (0, 1))))(X23, idx)
    assert_same(ga, gj, tol=ad_tol)


def test_concatenate_constant_operand():
  c = np.ones((2, 1), np.float32)
  check_jvp_vjp(lambda l, x: l.concatenate([c, x, c], 1), X23)


def test_integer_structural_ops_have_float0_tangents():
  xi = np.arange(6, dtype=np.int32).reshape(2, 3)
  check_jvp_vjp(lambda l, x: l.transpose(x, (1, 0)), xi)
  check_jvp_vjp(lambda l, x: l.pad(x, np.int32(0), [(1, 1, 0), (0, 0, 1)]), xi)
  check_jvp_vjp(lambda l, x, y: l.concatenate([l.convert_element_type(x, np.float32), y], 0), xi,
                X23)


def test_structural_bfloat16():
  x = X23.astype(BF16)
  check_jvp_vjp(lambda l, v: l.reshape(l.transpose(v, (1, 0)), (6,)), x)
  check_jvp_vjp(lambda l, v: l.pad(v, np.asarray(0, BF16), [(1, 0, 1), (0, 1, 0)]), x)


def test_weak_typed_operand():
  check_jvp_vjp(lambda l, x: l.broadcast_in_dim(l.add(x, 1.0), (2, 3), ()), 2.0)
  check_jvp_vjp(lambda l, x: l.reshape(l.mul(x, 3.0), (1,)), 2.0)


# ---- reductions -------------------------------------------------------------------------------
REDUCE_CASES = [((2, 3, 4), (1,)), ((2, 3, 4), (0, 2)), ((3, 5), (0, 1)), ((2, 3), ()),
                ((), ()), ((0, 3), (0,))]


@pytest.mark.parametrize("shape,axes", REDUCE_CASES, ids=str)
@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"])
def test_reductions_float32(name, shape, axes):
  x = rand(shape, np.float32, np.random.default_rng(len(shape) + sum(axes)))
  check_jvp_vjp(lambda l, v: getattr(l, name)(v, axes), x)


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod"])
def test_reductions_complex64(name):
  x = rand((3, 4), np.complex64, np.random.default_rng(5))
  check_jvp_vjp(lambda l, v: getattr(l, name)(v, (1,)), x)
  check_jvp_vjp(lambda l, v: getattr(l, name)(v, (0, 1)), x)


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"])
def test_reductions_float64(name, x64):
  x = rand((3, 5), np.float64, np.random.default_rng(6))
  check_jvp_vjp(lambda l, v: getattr(l, name)(v, (1,)), x)
  atu.check_grads(lambda v: getattr(alax, name)(v, (0,)), (x,), 2)


def test_reduce_prod_with_zeros():
  x = np.array([[0., 2., 3.], [0., 0., 4.], [1., 2., 3.]], np.float32)
  check_jvp_vjp(lambda l, v: l.reduce_prod(v, (1,)), x)
  check_jvp_vjp(lambda l, v: l.reduce_prod(v, (0, 1)), x)


@pytest.mark.parametrize("name", ["reduce_max", "reduce_min"])
def test_reduce_max_min_ties_share_the_gradient(name):
  x = np.array([[1., 3., 3.], [2., 2., 2.], [-1., 5., 0.]], np.float32)
  check_jvp_vjp(lambda l, v: getattr(l, name)(v, (1,)), x)
  check_jvp_vjp(lambda l, v: getattr(l, name)(v, (0, 1)), np.full((2, 2), 7., np.float32))
  ga = arrax.grad(lambda v: getattr(alax, name)(v, (0,)))(np.full((4,), 2., np.float32))
  gj = real_jax.grad(lambda v: getattr(jlax, name)(v, (0,)))(np.full((4,), 2., np.float32))
  assert_same(ga, gj, tol=ad_tol)


def test_jnp_max_ties_and_argmax():
  x = np.array([[1., 4., 4., 0.], [3., 3., 1., 2.]], np.float32)
  assert_same(arrax.grad(lambda v: anp.sum(anp.max(v, axis=1)))(x),
              real_jax.grad(lambda v: jnp.sum(jnp.max(v, axis=1)))(x), tol=ad_tol)
  # argmax is not differentiable: its tangent is a float0 zero; using it to index is fine.
  check_jvp_vjp(lambda l, v: l.argmax(v, 1, np.int32), x)

  def pick(np_):
    return lambda v: np_.sum(v[np_.arange(2), np_.argmax(v, axis=1)] ** 2)
  assert_same(arrax.grad(pick(anp))(x), real_jax.grad(pick(jnp))(x), tol=ad_tol)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argminmax_float0(name):
  x = rand((3, 4), np.float32, np.random.default_rng(8))
  check_jvp_vjp(lambda l, v: getattr(l, name)(v, 0, np.int32), x)


@pytest.mark.parametrize("name", ["reduce_and", "reduce_or", "reduce_xor"])
def test_logical_reductions_float0(name):
  x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
  check_jvp_vjp(lambda l, v: getattr(l, name)(v, (1,)), x)


def test_reduce_sum_weak_and_bfloat16():
  check_jvp_vjp(lambda l, v: l.reduce_sum(l.broadcast_in_dim(l.mul(v, 2.0), (3,), ()), (0,)), 1.5)
  check_jvp_vjp(lambda l, v: l.reduce_sum(v, (0,)), X23.astype(BF16))


# ---- cumulative reductions --------------------------------------------------------------------
CUM_CASES = [((5,), 0, False), ((2, 7), 1, True), ((4, 3), 0, False), ((0, 3), 0, False)]


@pytest.mark.parametrize("shape,axis,reverse", CUM_CASES, ids=str)
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
def test_cumulative_float32(name, shape, axis, reverse):
  x = rand(shape, np.float32, np.random.default_rng(sum(shape) + axis))
  check_jvp_vjp(lambda l, v: getattr(l, name)(v, axis, reverse), x)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_cumulative_complex64(name):
  x = rand((2, 5), np.complex64, np.random.default_rng(9))
  check_jvp_vjp(lambda l, v: getattr(l, name)(v, 1), x)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
def test_cumulative_float64(name, x64):
  x = rand((3, 6), np.float64, np.random.default_rng(10))
  check_jvp_vjp(lambda l, v: getattr(l, name)(v, 1, True), x)
  atu.check_grads(lambda v: getattr(alax, name)(v, 1), (x,), 2)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_ties(name):
  # Ties split the tangent the way JAX's scan-tree of max/min splits it.
  check_jvp_vjp(lambda l, v: getattr(l, name)(v, 1), np.ones((2, 7), np.float32))
  check_jvp_vjp(lambda l, v: getattr(l, name)(v, 1, True),
                np.array([[1., 3., 3., 2., 3., 0., 3., 3.]], np.float32))


def test_cumulative_jnp():
  x = rand((3, 4), np.float32, np.random.default_rng(11))
  for name in ("cumsum", "cumprod"):
    assert_same(arrax.jit(arrax.grad(lambda v: anp.sum(getattr(anp, name)(v, axis=1) ** 2)))(x),
                real_jax.jit(real_jax.grad(
                    lambda v: jnp.sum(getattr(jnp, name)(v, axis=1) ** 2)))(x), tol=ad_tol)


# ---- the general reduce ------------------------------------------------------------------------
def test_general_reduce_jvp():
  x = rand((3, 4), np.float32, np.random.default_rng(12))

  def fn(l, v):
    return l.reduce(v, np.float32(1.0), lambda a, b: a * b + 0.0 * a, (1,))
  check_jvp_vjp(fn, x)


def test_general_reduce_nonzero_init_tangent_is_an_error():
  x = rand((3,), np.float32, np.random.default_rng(13))
  for lib, lx in ((arrax, alax), (real_jax, jlax)):
    with pytest.raises(NotImplementedError):
      lib.jvp(lambda v, i: lx.reduce(v, i, lambda a, b: a * b + 0.0 * a, (0,)),
              (x, np.float32(1.0)), (x, np.float32(1.0)))


# ---- higher order and compositions -------------------------------------------------------------
def _hess_both(f_of_lib, x):
  ha = arrax.jit(arrax.grad(lambda v: alax.reduce_sum(arrax.grad(f_of_lib(alax))(v), (0,))))(x)
  hj = real_jax.jit(real_jax.grad(
      lambda v: jlax.reduce_sum(real_jax.grad(f_of_lib(jlax))(v), (0,))))(x)
  return ha, hj


@pytest.mark.parametrize("name", ["reduce_prod", "reduce_max", "cumprod", "cumlogsumexp",
                                  "pad_slice", "reshape_transpose"])
def test_second_order(name):
  x = np.array([0.5, -1.25, 2.0, 1.5], np.float32)
  fs = {
      "reduce_prod": lambda l: lambda v: l.reduce_prod(l.mul(v, v), (0,)),
      "reduce_max": lambda l: lambda v: l.reduce_max(l.mul(v, v), (0,)),
      "cumprod": lambda l: lambda v: l.reduce_sum(l.cumprod(v, 0), (0,)),
      "cumlogsumexp": lambda l: lambda v: l.reduce_sum(l.cumlogsumexp(v, 0, True), (0,)),
      "pad_slice": lambda l: lambda v: l.reduce_sum(l.mul(
          l.slice(l.pad(v, np.float32(2.0), [(1, 1, 1)]), (1,), (8,), (2,)), v), (0,)),
      "reshape_transpose": lambda l: lambda v: l.reduce_sum(l.mul(l.transpose(
          l.reshape(v, (2, 2)), (1, 0)), l.reshape(v, (2, 2))), (0, 1)),
  }
  ha, hj = _hess_both(fs[name], x)
  assert_same(ha, hj, tol=ad_tol)


def test_jnp_compositions():
  x = rand((3, 4), np.float32, np.random.default_rng(14))
  fns = [
      lambda np_: lambda v: np_.sum(np_.concatenate([v, v[:, ::-1] * 2], axis=0) ** 2),
      lambda np_: lambda v: np_.sum(v.reshape(4, 3).T @ v.reshape(4, 3)),
      lambda np_: lambda v: np_.prod(v[:, 1:3] + 2.0),
      lambda np_: lambda v: np_.sum(np_.squeeze(np_.expand_dims(v, 0)[:, 1:], 0) ** 3),
      lambda np_: lambda v: np_.min(np_.abs(v)) + np_.max(v, axis=0).sum(),
  ]
  for mk in fns:
    assert_same(arrax.jit(arrax.grad(mk(anp)))(x), real_jax.jit(real_jax.grad(mk(jnp)))(x),
                tol=ad_tol)


# ---- printed jaxprs ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "sum_axis", "reshape_transpose_slice", "broadcast",
                                  "max", "pad", "concatenate", "dynamic_slice", "rev_squeeze"])
def test_grad_jaxpr_text(name):
  fns = {
      "sum": (lambda np_: lambda v: np_.sum(v), np.ones((2, 3), np.float32)),
      "sum_axis": (lambda np_: lambda v: np_.sum(np_.sum(v, axis=0) ** 2),
                   np.ones((2, 3), np.float32)),
      "reshape_transpose_slice": (lambda np_: lambda v: np_.sum(v.reshape(3, 2).T[1:, ::2]),
                                  np.ones((2, 3), np.float32)),
      "broadcast": (lambda np_: lambda v: np_.sum(np_.broadcast_to(v, (4, 2, 3)) * 2.0),
                    np.ones((1, 3), np.float32)),
      "max": (lambda np_: lambda v: np_.max(v), np.ones((4,), np.float32)),
      "pad": (lambda np_: lambda v: np_.sum(
          (jlax if np_ is jnp else alax).pad(v, np.float32(0), [(1, -1, 1)])),
          np.ones((3,), np.float32)),
      "concatenate": (lambda np_: lambda v: np_.sum(np_.concatenate([v, 2 * v])),
                      np.ones((4,), np.float32)),
      "dynamic_slice": (lambda np_: lambda v: np_.sum(
          (jlax if np_ is jnp else alax).dynamic_slice_in_dim(v, 1, 2)),
          np.ones((4,), np.float32)),
      "rev_squeeze": (lambda np_: lambda v: np_.sum(np_.squeeze(v[::-1], 1) ** 2),
                      np.ones((3, 1), np.float32)),
  }
  fn, x = fns[name]
  check_jaxpr(fn, x, build=make_with("np"), transform=grad_of(0), convert="arrays")
