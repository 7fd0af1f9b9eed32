"""Autodiff and batching of `scan` (and of fori_loop, map and associative_scan built on it)
against JAX 0.10.2: jvp / vjp / grad values, dtypes, shapes and weak types (float32, and float64
under x64), finite-difference checks up to second order, vmap with every operand group batched,
nested compositions, checkpointed bodies, and the printed jaxprs of jvp, vmap and grad.

Each case is written once as `make(lax, jnp, top) -> function` and built for both libraries.
"""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import functools  # noqa: E402
import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import arrax  # noqa: E402
from arrax import lax as alax  # noqa: E402
from arrax import test_util as atu  # noqa: E402
import oracle  # noqa: E402
from oracle import ARRAX, JAX, make_with, of_argnums, tangent_for  # noqa: E402


def _tol(dtype):
  """rtol = atol of float results: 1e-10 in float64, 2e-5 below."""
  return 1e-10 if dtype == np.float64 else 2e-5


# Cases are make(lax, jnp, top) -> function, checked under a transform(top, f); results are the
# same pytrees, float values within _tol.
_build = make_with("lax", "np", "top")
check = functools.partial(oracle.check, build=_build, tol=_tol, strict_tree=True)
check_jaxpr = functools.partial(oracle.check_jaxpr, build=_build, convert=None, typecheck=True)


def _is_float(x):
  return np.asarray(x).dtype.kind == "f"


def arange(shape, dtype=np.float32, scale=0.3):
  n = int(np.prod(shape))
  return ((np.arange(n) % 7 - 3) * scale).reshape(shape).astype(dtype)


X5 = arange((5,))
M53 = arange((5, 3))
W33 = (np.eye(3) * 0.5 + arange((3, 3), scale=0.1)).astype(np.float32)


# ---- cases: functions of float (and integer) arrays, differentiated in all float args --------
def _rnn(L, np_, top):
  def f(w, u, h0, xs):
    def cell(h, x):
      h = np_.tanh(h @ w + x @ u)
      return h, h[0]
    h, ys = L.scan(cell, h0, xs)
    return h, ys
  return f


CASES = {
    "basic": (lambda L, np_, top: lambda c0, xs, w: L.scan(
        lambda c, x: (np_.sin(c * w + x), c * x), c0, xs), (np.float32(0.5), X5, 1.3)),
    "reverse_unroll": (lambda L, np_, top: lambda c0, xs, w: L.scan(
        lambda c, x: (np_.sin(c * w + x), c * x), c0, xs, reverse=True, unroll=2),
        (np.float32(0.5), X5, 1.3)),
    "unroll_all": (lambda L, np_, top: lambda c0, xs: L.scan(
        lambda c, x: (np_.cos(c) * x, c), c0, xs, unroll=True), (np.float32(0.5), X5)),
    "pytree": (lambda L, np_, top: lambda a, xs: L.scan(
        lambda c, x: ((c[0] * x["u"] + c[1]["v"], {"v": np_.sin(c[1]["v"]) + x["w"]}),
                      {"y": c[0] * c[1]["v"], "z": [x["u"] ** 2]}),
        (a, {"v": a * 2}), {"u": xs, "w": xs[::-1]}), (np.float32(0.7), X5)),
    "xs_none": (lambda L, np_, top: lambda c0, w: L.scan(
        lambda c, _: (c * w + np_.sin(c), c * 2), c0, None, length=4),
        (arange((3,)), np.float32(0.9))),
    "matrix_rnn": (_rnn, (W33, arange((2, 3), scale=0.2), arange((3,)), M53[:, :2])),
    "forwarded": (lambda L, np_, top: lambda c0, xs, w: L.scan(
        lambda c, x: ((c[0], c[1] * w + x), (x, c[0] * x)), (c0, c0), xs),
        (np.float32(0.5), X5, np.float32(1.1))),
    "loop_invariant": (lambda L, np_, top: lambda w, c0, xs: L.scan(
        lambda c, x: (c * np_.sin(w) + x * np_.cos(w), c * np_.exp(w)), c0, xs),
        (np.float32(0.4), np.float32(1.0), X5)),
    "int_carry_xs": (lambda L, np_, top: lambda c0, ks, w: L.scan(
        lambda c, k: ((c[0] + k, c[1] * w + k * c[1]), c[1] * c[0]), (0, c0), ks),
        (np.float32(0.5), np.arange(4, dtype=np.int32), np.float32(0.7))),
    "length_zero": (lambda L, np_, top: lambda c0, xs, w: L.scan(
        lambda c, x: (c * w + x, c), c0, xs), (np.float32(0.5), X5[:0], np.float32(1.1))),
    "nested": (lambda L, np_, top: lambda c0, xs, w: L.scan(
        lambda c, row: (L.scan(lambda c2, v: (np_.sin(c2 * w + v), c2 * v), c, row)[0], c),
        c0, xs), (np.float32(0.3), M53, np.float32(0.8))),
    "fori_loop": (lambda L, np_, top: lambda x, w: L.fori_loop(
        0, 4, lambda i, c: c * np_.cos(c * w) + i, x), (arange((2,)), np.float32(0.6))),
    "fori_loop_unroll": (lambda L, np_, top: lambda x: L.fori_loop(
        1, 6, lambda i, c: (c[0] * c[1] / i, c[1] + 0.5), (x, x), unroll=2),
        (np.float32(0.6),)),
    "map": (lambda L, np_, top: lambda xs, w: L.map(lambda v: np_.sin(v * w) * v, xs),
            (M53, np.float32(0.6))),
    "map_batch_size": (lambda L, np_, top: lambda xs, w: L.map(
        lambda v: np_.tanh(v * w).sum() * v, xs, batch_size=2), (M53, np.float32(0.6))),
    "associative_scan": (lambda L, np_, top: lambda xs: L.associative_scan(
        np_.multiply, xs, reverse=True), (X5 + 1,)),
    "associative_scan_pair": (lambda L, np_, top: lambda a, b: L.associative_scan(
        lambda x, y: (x[0] * y[0], x[1] * y[0] + y[1]), (a, b), axis=1),
        (arange((2, 5)) + 1, arange((2, 5), scale=0.5))),
    "jit_in_body": (lambda L, np_, top: lambda c0, xs: L.scan(
        top.jit(lambda c, x: (np_.sin(c) * x, c + x)), c0, xs), (np.float32(0.5), X5)),
    "checkpoint_body": (lambda L, np_, top: lambda w, xs: L.scan(
        top.checkpoint(lambda c, x: (np_.sin(c @ w) * x, (c @ w).sum()),
                       policy=top.checkpoint_policies.dots_saveable),
        arange((3,)), M53), (W33, M53)),
    "checkpoint_scan": (lambda L, np_, top: lambda w, xs: top.checkpoint(
        lambda w, xs: L.scan(lambda c, x: (np_.sin(c * w) + x, c), 0.5, xs))(w, xs),
        (np.float32(0.8), X5)),
}


def _outputs_sum(top, f):
  """The scalar loss sum(outputs) (float leaves only)."""
  def loss(*args):
    leaves = top.tree_util.tree_leaves(f(*args))
    return sum(x.sum() for x in leaves if np.dtype(x.dtype).kind == "f")
  return loss


def _float_argnums(args):
  return tuple(i for i, a in enumerate(args) if _is_float(a))


@pytest.mark.parametrize("name", list(CASES))
def test_jvp(name):
  make, args = CASES[name]
  rng = np.random.default_rng(0)
  tangents = tuple(tangent_for(a, rng) for a in args)
  primals = tuple(np.float32(a) if isinstance(a, float) else a for a in args)
  check(make, *primals, transform=lambda top, f: top.jit(lambda *p: top.jvp(f, p, tangents)))


@pytest.mark.parametrize("name", list(CASES))
def test_vjp(name):
  make, args = CASES[name]
  argnums = _float_argnums(args)
  expected_out = _build(make, JAX)(*args)
  rng = np.random.default_rng(1)
  cts = jax.tree_util.tree_map(lambda y: tangent_for(y, rng), expected_out)

  def transform(top, f):
    def run(*args):
      out, pullback = top.vjp(of_argnums(f, args, argnums), *[args[i] for i in argnums])
      return out, pullback(cts)
    return top.jit(run)
  check(make, *args, transform=transform)


@pytest.mark.parametrize("name", list(CASES))
def test_grad_jit(name):
  make, args = CASES[name]
  argnums = _float_argnums(args)
  check(make, *args, transform=lambda top, f: top.jit(top.grad(_outputs_sum(top, f), argnums)))


@pytest.mark.parametrize("name", ["basic", "matrix_rnn"])
def test_partial_tangents(name):
  # Only the last argument (a const of the scan) has a tangent: the carry tangent is a symbolic
  # zero going in, made nonzero by the body (the fixed point), in jvp, linearize and grad.
  make, args = CASES[name]
  head, w = args[:-1], args[-1]
  w_dot = tangent_for(w, np.random.default_rng(2))

  def on_w(top, f):
    return lambda w: f(*head, w)
  check(make, w, transform=lambda top, f: top.jit(lambda w: top.jvp(on_w(top, f), (w,), (w_dot,))))
  check(make, w, transform=lambda top, f: lambda w: top.linearize(on_w(top, f), w)[1](w_dot))
  check(make, w, transform=lambda top, f: top.grad(lambda w: _outputs_sum(top, on_w(top, f))(w)))


@pytest.mark.parametrize("reverse", [False, True])
def test_linear_transpose(reverse):
  # A scan that is linear as written is transposed directly (no partial evaluation first); its
  # const (the closed-over array) is not linear.
  w = np.array([2.0, 3.0], np.float32)
  make = (lambda L, np_, top: lambda c0, xs: L.scan(
      lambda c, x: (c * w[0] + x * w[1], (c - x, x * np.float32(0.5))), c0, xs, reverse=reverse))
  cts = (np.float32(1.0), (arange((4,)), arange((4,), scale=1.0)))
  check(make, np.float32(0), np.zeros(4, np.float32),
        transform=lambda top, f: lambda c0, xs: top.linear_transpose(f, c0, xs)(cts))


def test_grad_of_jit_of_scan():
  make, args = CASES["reverse_unroll"]
  check(make, *args, transform=lambda top, f: top.grad(top.jit(_outputs_sum(top, f)), (0, 1, 2)))


@pytest.mark.parametrize("name", ["basic", "pytree", "int_carry_xs", "nested", "fori_loop",
                                  "checkpoint_body"])
def test_grad_eager(name):
  make, args = CASES[name]
  argnums = _float_argnums(args)
  check(make, *args, transform=lambda top, f: top.grad(_outputs_sum(top, f), argnums))


@pytest.mark.parametrize("name", ["basic", "pytree", "matrix_rnn", "int_carry_xs", "nested"])
def test_grad_x64(name, x64):
  make, args = CASES[name]
  args = tuple(np.asarray(a, np.float64) if _is_float(a) else a for a in args)
  argnums = _float_argnums(args)
  check(make, *args, transform=lambda top, f: top.jit(top.grad(_outputs_sum(top, f), argnums)))


@pytest.mark.parametrize("name,order", [("reverse_unroll", 1), ("pytree", 1), ("nested", 2),
                                        ("loop_invariant", 2)])
def test_check_grads(name, order):
  make, args = CASES[name]
  argnums = _float_argnums(args)
  g = of_argnums(_outputs_sum(arrax, _build(make, ARRAX)), args, argnums)
  diff = tuple(np.asarray(args[i], np.float64) for i in argnums)
  with arrax.enable_x64():
    atu.check_grads(arrax.jit(g), diff, order=order, modes=("fwd", "rev"))


@pytest.mark.parametrize("how", ["jacfwd", "jacrev", "hessian"])
def test_jacobians(how):
  make, args = CASES["basic"]
  check(make, np.float32(1.3),
        transform=lambda top, f: top.jit(getattr(top, how)(lambda w: f(args[0], args[1], w)[1])))


def test_rnn_loss_50_steps():
  # The MLP-style use: grad of a loss computed by scanning an RNN cell over 50 steps.
  rng = np.random.default_rng(3)
  params = {"w": (rng.standard_normal((16, 16)) / 4).astype(np.float32),
            "u": (rng.standard_normal((8, 16)) / 3).astype(np.float32),
            "b": np.zeros(16, np.float32)}
  xs = rng.standard_normal((50, 8)).astype(np.float32)
  target = rng.standard_normal(16).astype(np.float32)

  def make(L, np_, top):
    def loss(p, xs):
      def cell(h, x):
        h = np_.tanh(h @ p["w"] + x @ p["u"] + p["b"])
        return h, np_.mean(h ** 2)
      h, penalties = L.scan(cell, np_.zeros(16, np.float32), xs)
      return np_.sum((h - target) ** 2) + 0.1 * penalties.sum()
    return loss
  check(make, params, xs, transform=lambda top, f: top.jit(top.value_and_grad(f)), tol=1e-4)


# ---- vmap -----------------------------------------------------------------------------------
def _scan3(L, np_, top):
  return lambda c0, xs, w: L.scan(lambda c, x: (np_.sin(c * w + x), c * x), c0, xs)


C4 = arange((4,))
XS34 = arange((3, 4))

VMAP_CASES = {
    "carry_only": (_scan3, (0, None, None), (arange((2, 4)), XS34, np.float32(1.3))),
    "xs_only_axis0": (_scan3, (None, 0, None), (C4, arange((2, 3, 4)), np.float32(1.3))),
    "xs_only_axis1": (_scan3, (None, 1, None), (C4, arange((3, 2, 4)), np.float32(1.3))),
    "xs_only_axis2": (_scan3, (None, 2, None), (C4, arange((3, 4, 2)), np.float32(1.3))),
    "consts_only": (_scan3, (None, None, 0), (C4, XS34, arange((2,)) + 1)),
    "all": (_scan3, (1, 0, 0), (arange((4, 2)), arange((2, 3, 4)), arange((2,)) + 1)),
    "xs_none": (lambda L, np_, top: lambda c0, w: L.scan(
        lambda c, _: (c * w, c), c0, None, length=3), (None, 0), (C4, arange((2,)) + 1)),
    "fori_loop": (lambda L, np_, top: lambda x: L.fori_loop(
        0, 3, lambda i, c: c * 2 + i, x), (0,), (arange((2, 3)),)),
    "map": (lambda L, np_, top: lambda xs: L.map(np_.sin, xs), (1,), (arange((3, 2)),)),
    "map_batch_size": (lambda L, np_, top: lambda xs: L.map(
        lambda v: v.sum() * v, xs, batch_size=2), (0,), (arange((2, 5, 3)),)),
    "associative_scan": (lambda L, np_, top: lambda xs: L.associative_scan(
        np_.add, xs), (1,), (arange((5, 2)),)),
    "nested": (lambda L, np_, top: lambda c0, xs: L.scan(
        lambda c, row: (L.scan(lambda c2, v: (c2 * v + 1, c2), c, row)[0], c), c0, xs),
        (None, 0), (np.float32(0.5), arange((2, 3, 4)))),
}


@pytest.mark.parametrize("name", list(VMAP_CASES))
def test_vmap(name):
  make, in_axes, args = VMAP_CASES[name]
  check(make, *args, transform=lambda top, f: top.vmap(f, in_axes))
  check(make, *args, transform=lambda top, f: top.jit(top.vmap(f, in_axes)))


def test_vmap_collectives_in_body():
  make = (lambda L, np_, top: lambda xs: L.scan(
      lambda c, x: (c + L.psum(x, "i") * L.axis_index("i"), c), 0.0, xs))
  check(make, XS34, transform=lambda top, f: top.vmap(f, in_axes=1, axis_name="i"))


def test_vmap_unbatched_axis_index_carry():
  # Nothing batched goes in, but the carry becomes batched through axis_index.
  make = (lambda L, np_, top: lambda x, xs: L.scan(
      lambda c, v: (c * v + L.axis_index("i"), c), x, xs))
  check(make, np.float32(1.0), X5,
        transform=lambda top, f: top.vmap(f, in_axes=(None, None), axis_size=3, axis_name="i"))


def test_vmap_of_grad_and_grad_of_vmap():
  make = _scan3
  loss = lambda top, f: lambda c0, xs, w: f(c0, xs, w)[1].sum()  # noqa: E731
  check(make, C4, XS34, arange((3,)) + 1,
        transform=lambda top, f: top.vmap(top.grad(loss(top, f), (0, 1, 2)), (None, None, 0)))
  check(make, arange((2, 4)), arange((3, 2, 4)), np.float32(0.9),
        transform=lambda top, f: top.jit(top.vmap(top.grad(loss(top, f), (0, 1, 2)),
                                                  (0, 1, None))))
  check(make, arange((2, 4)), XS34, np.float32(0.9),
        transform=lambda top, f: top.grad(lambda c0, xs, w: top.vmap(f, (0, None, None))(
            c0, xs, w)[0].sum(), (0, 1, 2)))
  check(make, np.float32(0.9),
        transform=lambda top, f: top.jit(top.grad(top.grad(lambda w: loss(top, f)(C4, XS34, w)))))


# ---- printed jaxprs -------------------------------------------------------------------------
JAXPR_CASES = {
    "basic": (CASES["basic"][0], (1.0, X5, 2.0)),
    "loop_invariant": (CASES["loop_invariant"][0], (0.5, 1.0, X5)),
    **{name: CASES[name] for name in ["reverse_unroll", "pytree", "matrix_rnn", "int_carry_xs",
                                      "length_zero", "nested", "fori_loop", "map_batch_size"]},
}


def _loss(top, f):
  # Rank-0 outputs are added as they are (jnp.sum of a scalar prints differently in arrax).
  def loss(*args):
    leaves = top.tree_util.tree_leaves(f(*args))
    return sum(x.sum() if x.ndim else x for x in leaves if np.dtype(x.dtype).kind == "f")
  return loss


@pytest.mark.parametrize("name", list(JAXPR_CASES))
def test_jaxpr_grad(name):
  make, args = JAXPR_CASES[name]
  argnums = _float_argnums(args)
  check_jaxpr(make, *args, transform=lambda top, f: top.grad(_loss(top, f), argnums))


@pytest.mark.parametrize("name", list(JAXPR_CASES))
def test_jaxpr_jvp(name):
  make, args = JAXPR_CASES[name]
  tangents = tuple(tangent_for(a, np.random.default_rng(0)) for a in args)
  check_jaxpr(make, *args, transform=lambda top, f: lambda *a: top.jvp(f, a, tangents))


def test_jaxpr_grad_rnn_zero_state():
  # The initial state is not differentiated: its tangent, a zero the body makes nonzero, is
  # created with the tangent computation (so it appears in the backward part, as in JAX).
  args = CASES["matrix_rnn"][1]
  check_jaxpr(_rnn, *args, transform=lambda top, f: top.grad(_loss(top, f), (0, 1)))


@pytest.mark.parametrize("policy", ["dots_saveable", "nothing_saveable", "everything_saveable",
                                    None])
def test_jaxpr_checkpoint_policy(policy):
  # jax.checkpoint around the body: the policy decides which residuals the forward scan stacks
  # and what the backward scan recomputes, exactly as in JAX.
  def make(L, np_, top):
    pol = getattr(top.checkpoint_policies, policy) if policy else None

    def f(w, c0, xs):
      body = top.checkpoint(lambda c, x: (np_.sin(np_.tanh(c @ w)) * x, (c @ w).sum()),
                            policy=pol)
      return L.scan(body, c0, xs)
    return f
  check_jaxpr(make, W33, arange((3,)), M53,
              transform=lambda top, f: top.grad(_loss(top, f), (0, 1, 2)))


@pytest.mark.parametrize("name", ["carry_only", "xs_only_axis2", "consts_only", "all"])
def test_jaxpr_vmap(name):
  make, in_axes, args = VMAP_CASES[name]
  check_jaxpr(make, *args, transform=lambda top, f: top.vmap(f, in_axes))


def _stable_body(c, x):
  return c * np.float32(0.5) + x * c, c


def test_repeated_eager_grad_reuses_executables():
  # Differentiating the same scan again derives the same jaxprs (so compiled code is reused).
  from arrax._src import dispatch
  f = arrax.grad(lambda c0: alax.scan(_stable_body, c0, X5)[0])
  first = f(np.float32(0.5))
  n = len(dispatch._prim_cache)
  second = f(np.float32(0.5))
  assert len(dispatch._prim_cache) == n
  np.testing.assert_array_equal(np.asarray(first), np.asarray(second))
