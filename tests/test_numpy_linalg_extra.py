"""The array-API names of jnp.linalg (cross, diagonal, matmul, matrix_transpose, multi_dot,
outer, tensordot, tensorinv, tensorsolve, trace, vecdot) against JAX 0.10.2."""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracle import rand
from oracle import BF16, check, check_all

import arrax
import arrax.numpy as anp

F32 = np.float32
DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.float16, BF16, F32, np.complex64]


def _tol(*arrays):
  small = any(np.dtype(a.dtype).kind == "f" and np.dtype(a.dtype).itemsize <= 2 or
              a.dtype == BF16 for a in arrays if hasattr(a, "dtype"))
  return 5e-2 if small else 1e-4


def _fns(name):
  return getattr(anp.linalg, name), getattr(jnp.linalg, name)


def _case(name, *args, **kw):
  fa, fj = _fns(name)
  label = f"{name}{tuple(getattr(a, 'shape', a) for a in args)} {kw}"
  return label, functools.partial(check, fa, fj, *args, tol=_tol(*args), **kw)


def _assert_jaxprs(fa, fj, xs):
  want = str(jax.make_jaxpr(fj)(*xs))
  got = str(arrax.make_jaxpr(fa)(*xs))
  assert got == want, f"\narrax:\n{got}\njax:\n{want}"


def _jaxpr_case(name, *args, **kw):
  fa, fj = _fns(name)
  label = f"{name}{tuple(a.shape for a in args)} {kw} jaxpr"
  return label, functools.partial(_assert_jaxprs, lambda *xs: fa(*xs, **kw),
                                  lambda *xs: fj(*xs, **kw), args)


def _dtype_cases(rng, dtype):
  r = functools.partial(rand, dtype=dtype, seed=rng)
  return [
      ("cross", (r((4, 3)), r((4, 3))), {}),
      ("cross", (r((3, 2)), r((3, 2))), {"axis": 0}),
      ("diagonal", (r((3, 4)),), {}),
      ("diagonal", (r((2, 4, 3)),), {"offset": -1}),
      ("matmul", (r((3, 4)), r((4, 2))), {}),
      ("matmul", (r((2, 3, 4)), r((4,))), {}),
      ("matrix_transpose", (r((2, 3, 4)),), {}),
      ("outer", (r((3,)), r((4,))), {}),
      ("tensordot", (r((2, 3, 4)), r((3, 4, 5))), {}),
      ("tensordot", (r((2, 3)), r((3, 4))), {"axes": 1}),
      ("trace", (r((3, 3)),), {}),
      ("trace", (r((2, 3, 4)),), {"offset": 1}),
      ("vecdot", (r((2, 3)), r((2, 3))), {}),
      ("vecdot", (r((3, 2)), r((3, 1))), {"axis": 0}),
  ]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_dtypes(dtype):
  rng = np.random.default_rng(0)
  cases = []
  for name, args, kw in _dtype_cases(rng, dtype):
    cases.append(_case(name, *args, **kw))
    if dtype in (F32, np.int32, np.complex64):
      cases.append(_jaxpr_case(name, *args, **kw))
  check_all(cases)


def test_inexact_only_functions():
  rng = np.random.default_rng(1)
  eye = np.eye(6, dtype=F32)
  a = (rand((2, 3, 6), F32, rng) + 4 * eye.reshape(2, 3, 6))
  b = rand((2, 3), F32, rng)
  t = rand((4, 6, 8, 3), F32, rng) + 6 * np.eye(24, dtype=F32).reshape(4, 6, 8, 3)
  moved = np.moveaxis(a, 0, -1)   # (3, 6, 2): axes=(0,) moves axis 0 back to the end
  check_all([
      _case("tensorinv", t),
      _case("tensorinv", t.reshape(24, 2, 12), ind=1),
      _case("tensorinv", (np.eye(4, dtype=np.int32) * 2).reshape(4, 2, 2), ind=1),
      _case("tensorinv", (np.eye(2, dtype=np.complex64) * (1 + 1j)).reshape(2, 1, 2)),
      _case("tensorsolve", a, b),
      _case("tensorsolve", np.moveaxis(a, 0, -1), b, axes=(2,)),
      _case("tensorsolve", moved, b, axes=None),
      _case("tensorsolve", (np.eye(4, dtype=np.int32) * 2).reshape(2, 2, 4), np.ones((2, 2),
                                                                                   np.int32)),
  ])


def test_shapes_and_options():
  rng = np.random.default_rng(2)
  r = functools.partial(rand, dtype=F32, seed=rng)
  x3 = r((3,))
  cases = [
      _case("cross", r((4, 1, 3)), r((5, 3))),
      _case("cross", r((3,)), r((2, 3))),
      _case("cross", r((3, 4)), r((3, 4)), axis=0),
      _case("cross", r((2, 3, 4)), r((2, 3, 4)), axis=-2),
      _case("cross", r((0, 3)), r((0, 3))),
      _case("diagonal", r((4, 3)), offset=1),
      _case("diagonal", r((4, 3)), offset=-3),
      _case("diagonal", r((4, 3)), offset=5),
      _case("diagonal", r((4, 3)), offset=-7),
      _case("diagonal", r((2, 0, 3))),
      _case("diagonal", r((2, 5, 5)), offset=2),
      _case("matmul", x3, x3),
      _case("matmul", x3, r((3, 4))),
      _case("matmul", r((2, 1, 3, 4)), r((5, 4, 2))),
      _case("matmul", r((3, 4)), r((4, 2)), preferred_element_type=np.float32),
      _case("matmul", r((3, 4)), r((4, 2)), precision="highest"),
      _case("matrix_transpose", r((3, 4))),
      _case("matrix_transpose", r((2, 0, 4))),
      _case("outer", r((0,)), r((3,))),
      _case("outer", rand((3,), np.int8, rng), r((2,))),
      _case("tensordot", r((2, 3, 4)), r((4, 3, 5)), axes=((1, 2), (1, 0))),
      _case("tensordot", r((2, 3, 4)), r((4, 3, 5)), axes=([-1], [0])),
      _case("tensordot", r((2, 3, 4)), r((4, 3, 5)), axes=(-1, 0)),
      _case("tensordot", r((2, 3)), r((4, 5)), axes=0),
      _case("tensordot", rand((2, 3), np.int8, rng), rand((3, 2), np.int8, rng), axes=1,
            preferred_element_type=np.int32),
      _case("tensordot", r((2, 3)), r((3, 2)), axes=1, precision="highest"),
      _case("trace", r((2, 3, 4)), offset=-1),
      _case("trace", r((2, 3, 4)), offset=9),
      _case("trace", rand((3, 3), np.int8, rng)),
      _case("trace", rand((3, 3), np.int8, rng), dtype=np.int8),
      _case("trace", r((3, 3)), dtype=np.int32),
      _case("trace", rand((3, 3), np.bool_, rng), dtype=F32),
      _case("vecdot", r((4, 1, 3)), r((5, 3))),
      _case("vecdot", rand((2, 3), np.complex64, rng), rand((2, 3), np.complex64, rng)),
      _case("vecdot", rand((2, 3), np.int8, rng), rand((2, 3), np.int8, rng),
            preferred_element_type=np.int32),
      _case("vecdot", r((2, 3)), rand((2, 3), np.int32, rng)),
      _case("vecdot", r((0, 3)), r((0, 3))),
  ]
  check_all(cases)


def test_multi_dot():
  rng = np.random.default_rng(3)
  r = functools.partial(rand, dtype=F32, seed=rng)
  fa = lambda *xs, **kw: anp.linalg.multi_dot(xs, **kw)
  fj = lambda *xs, **kw: jnp.linalg.multi_dot(xs, **kw)
  chains = [
      [r((3, 4)), r((4, 5))],
      [r((4,)), r((4, 5))],
      [r((3, 4)), r((4,))],
      [r((4,)), r((4,))],
      [r((2, 3)), r((3, 50)), r((50, 4))],
      [r((3,)), r((3, 3)), r((3, 2))],
      [r((2, 3)), r((3, 10)), r((10, 4)), r((4, 1))],
      [r((10,)), r((10, 3)), r((3, 10)), r((10,))],
      [rand((2, 3), np.int32, rng), rand((3, 2), np.int8, rng)],
  ]
  cases = []
  for arrs in chains:
    label = str([a.shape for a in arrs])
    cases.append((label, functools.partial(check, fa, fj, *arrs, tol=1e-4)))
    cases.append((label + " jaxpr", functools.partial(_assert_jaxprs, fa, fj, arrs)))
  cases.append(("precision", functools.partial(check, fa, fj, r((2, 3)), r((3, 4)),
                                               precision="highest", tol=1e-4)))
  cases.append(("list input", functools.partial(
      check, lambda xs: anp.linalg.multi_dot(xs), lambda xs: jnp.linalg.multi_dot(xs),
      [r((2, 3)), r((3, 4))], tol=1e-4)))
  # Errors: too few arrays, wrong ranks, mismatched inner sizes.
  for arrs in ([r((3, 3))], [r((2, 3)), r((3, 4, 1)), r((1, 2))], [r((2, 3)), r((4, 2))],
               [r((3,)), r((2, 3, 3))]):
    cases.append((f"error {[a.shape for a in arrs]}", functools.partial(check, fa, fj, *arrs)))
  check_all(cases)


def test_errors():
  rng = np.random.default_rng(4)
  r = functools.partial(rand, dtype=F32, seed=rng)
  check_all([
      _case("cross", r((2,)), r((2,))),                     # 2-vectors: ValueError
      _case("cross", r((4, 3)), r((4, 2))),
      _case("cross", r((3, 4)), r((3, 4))),                 # axis -1 has size 4
      _case("cross", r((3,)), r((3,)), axis=1),             # IndexError
      _case("cross", rand((3,), np.bool_, rng), rand((3,), np.bool_, rng)),   # bool subtract
      _case("cross", r((2, 3)), r((4, 3))),                 # batch shapes do not broadcast
      _case("diagonal", r((3,))),
      _case("diagonal", r((3, 3)), offset=1.5),
      _case("matmul", r(()), r((3,))),
      _case("matmul", r((3, 4)), r((3, 4))),
      _case("matrix_transpose", r((3,))),
      _case("outer", r((2, 2)), r((2,))),
      _case("outer", 1.0, r((2,))),
      _case("tensordot", r((2, 3)), r((3, 4)), axes=3),
      _case("tensordot", r((2, 3)), r((3, 4)), axes=((0, 1), (0,))),
      _case("tensordot", r((2, 3)), r((3, 4)), axes=(0, (1,))),
      _case("tensordot", r((2, 3)), r((3, 4)), axes="x"),
      _case("tensordot", r((2, 3)), r((3, 4)), axes=(5, 0)),
      _case("tensordot", r((2, 3)), r((2, 4)), axes=1),
      _case("tensorinv", r((2, 3, 2)), ind=1),
      _case("tensorinv", r((2, 2)), ind=0),
      _case("tensorsolve", r((2, 3, 5)), r((2, 3))),
      _case("tensorsolve", r((2, 3, 6)), r((3, 2))),
      _case("trace", r((3,))),
      _case("trace", r((3, 3)), dtype="foo"),
      _case("vecdot", r((2, 3)), r((2, 4))),
      _case("vecdot", r((2, 3)), r((4, 3))),
      ("list operand", functools.partial(check, anp.linalg.outer, jnp.linalg.outer,
                                         [1.0, 2.0], r((2,)))),
  ])


def test_nan_and_inf():
  x = np.array([[np.nan, 1.0, 2.0], [np.inf, -np.inf, 0.0]], F32)
  y = np.array([[1.0, 0.0, 3.0], [2.0, np.inf, 1.0]], F32)
  check_all([
      _case("cross", x, y),
      _case("vecdot", x, y),
      _case("trace", x),
      _case("diagonal", x),
      _case("outer", x[0], y[1]),
      _case("matmul", x, y.T),
      _case("tensordot", x, y, axes=((1,), (1,))),
  ])


def test_jaxprs():
  rng = np.random.default_rng(5)
  r = functools.partial(rand, dtype=F32, seed=rng)
  check_all([
      _jaxpr_case("cross", r((2, 3)), r((2, 3))),
      _jaxpr_case("cross", r((3, 2)), r((3, 2)), axis=0),
      _jaxpr_case("cross", r((4, 1, 3)), r((5, 3))),
      _jaxpr_case("diagonal", r((2, 3, 4))),
      _jaxpr_case("diagonal", r((2, 3, 4)), offset=1),
      _jaxpr_case("diagonal", r((2, 3, 4)), offset=-2),
      _jaxpr_case("diagonal", r((3, 4))),
      _jaxpr_case("matmul", r((3, 3)), r((3, 3))),
      _jaxpr_case("matmul", r((2, 1, 3, 4)), r((5, 4, 2))),
      _jaxpr_case("matrix_transpose", r((2, 3, 4))),
      _jaxpr_case("outer", r((3,)), r((2,))),
      _jaxpr_case("tensordot", r((2, 3, 4)), r((3, 4, 2))),
      _jaxpr_case("tensordot", r((2, 3, 4)), r((4, 2, 3)), axes=([1, 2], [2, 0])),
      _jaxpr_case("trace", r((2, 3, 4))),
      _jaxpr_case("trace", r((2, 3, 4)), offset=1),
      _jaxpr_case("vecdot", r((2, 3)), r((2, 3))),
      _jaxpr_case("vecdot", r((4, 1, 3)), r((5, 3))),
      _jaxpr_case("vecdot", r((3, 2)), r((3, 2)), axis=0),
  ])


# A square 2-D non-bool matrix goes through platform_dependent (a Mosaic branch), as in JAX.
def test_diagonal_square_jaxpr():
  x = np.ones((3, 3), F32)
  _assert_jaxprs(anp.linalg.diagonal, jnp.linalg.diagonal, [x])


GRAD_CASES = [
    ("cross", [(2, 3), (2, 3)], {}),
    ("diagonal", [(2, 3, 4)], {"offset": 1}),
    ("matmul", [(3, 3), (3, 2)], {}),
    ("matrix_transpose", [(2, 3, 4)], {}),
    ("outer", [(3,), (2,)], {}),
    ("tensordot", [(2, 3, 4), (3, 4, 2)], {}),
    ("trace", [(2, 3, 4)], {}),
    ("vecdot", [(2, 3), (2, 3)], {}),
]


def test_jit_grad_vmap():
  rng = np.random.default_rng(6)
  cases = []
  for name, shapes, kw in GRAD_CASES:
    fa, fj = _fns(name)
    args = [rand(s, F32, rng) for s in shapes]
    n = len(args)

    def grads(lib, ad, f, kw=kw, n=n):
      return ad.grad(lambda *ops: (f(*ops, **kw) ** 2).sum(), argnums=tuple(range(n)))

    # (lambdas, not functools.partial: arrax's jit names a partial 'partial', JAX by the
    # function it wraps)
    jitted = (arrax.jit(lambda *xs, fa=fa, kw=kw: fa(*xs, **kw)),
              jax.jit(lambda *xs, fj=fj, kw=kw: fj(*xs, **kw)))
    ga, gj = grads(anp, arrax, fa), grads(jnp, jax, fj)
    va = arrax.vmap(lambda *xs, fa=fa, kw=kw: fa(*xs, **kw))
    vj = jax.vmap(lambda *xs, fj=fj, kw=kw: fj(*xs, **kw))
    batched = [np.stack([a, 2 * a]) for a in args]
    for tag, (f1, f2), xs in [("jit", jitted, args), ("grad", (ga, gj), args),
                              ("vmap", (va, vj), batched)]:
      cases.append((f"{name} {tag}", functools.partial(check, f1, f2, *xs, tol=1e-4)))
      cases.append((f"{name} {tag} jaxpr", functools.partial(_assert_jaxprs, f1, f2, xs)))
  # multi_dot, tensorinv and tensorsolve: values only (the last two go through jnp.linalg.inv
  # and solve, whose jaxprs are those of the existing arrax implementation).
  x = rand((3,), F32, rng)
  m = rand((3, 3), F32, rng) + 3 * np.eye(3, dtype=F32)
  t = m.reshape(3, 3, 1)
  cases += [
      ("multi_dot grad", functools.partial(
          check, arrax.grad(lambda a, b: anp.linalg.multi_dot([a, b, a]), argnums=(0, 1)),
          jax.grad(lambda a, b: jnp.linalg.multi_dot([a, b, a]), argnums=(0, 1)), x, m,
          tol=1e-4)),
      ("tensorinv grad", functools.partial(
          check, arrax.grad(lambda a: anp.linalg.tensorinv(a, ind=1).sum()),
          jax.grad(lambda a: jnp.linalg.tensorinv(a, ind=1).sum()), t, tol=1e-4)),
      ("tensorsolve grad", functools.partial(
          check, arrax.grad(lambda a, b: anp.linalg.tensorsolve(a, b).sum(), argnums=(0, 1)),
          jax.grad(lambda a, b: jnp.linalg.tensorsolve(a, b).sum(), argnums=(0, 1)), m, x,
          tol=1e-4)),
      ("tensorsolve vmap", functools.partial(
          check, arrax.vmap(anp.linalg.tensorsolve), jax.vmap(jnp.linalg.tensorsolve),
          np.stack([m, 2 * m]), np.stack([x, x]), tol=1e-4)),
      ("tensorinv jit", functools.partial(
          check, arrax.jit(anp.linalg.tensorinv), jax.jit(jnp.linalg.tensorinv),
          m.reshape(3, 1, 3), tol=1e-4)),
  ]
  check_all(cases)


def test_traced_offset_for_trace():
  # jnp.linalg.trace takes `offset` as a traced value; jnp.linalg.diagonal needs it static.
  x = np.arange(12, dtype=F32).reshape(3, 4)
  check(arrax.jit(lambda a, k: anp.linalg.trace(a, offset=k)),
        jax.jit(lambda a, k: jnp.linalg.trace(a, offset=k)), x, 1)
  check(arrax.jit(lambda a, k: anp.linalg.diagonal(a, offset=k)),
        jax.jit(lambda a, k: jnp.linalg.diagonal(a, offset=k)), x, 1)


def test_signatures():
  import inspect
  for name in ["cross", "diagonal", "matmul", "matrix_transpose", "multi_dot", "outer",
               "tensordot", "tensorinv", "tensorsolve", "trace", "vecdot"]:
    fa, fj = _fns(name)
    params = [[(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]
              for f in (fa, fj)]
    assert params[0] == params[1], name


def test_x64(x64):
  rng = np.random.default_rng(7)
  a = rand((3, 3), np.float64, rng)
  b = rand((3, 3), np.float32, rng)
  i = rand((3, 3), np.int64, rng)
  check_all([
      _case("cross", a, b),
      _case("trace", i),
      _case("trace", i, offset=1),
      _case("diagonal", i, offset=1),
      _case("vecdot", a, b),
      _case("tensordot", i, a, axes=1),
      _case("outer", a[0], i[0]),
      _jaxpr_case("trace", a, offset=1),
      _jaxpr_case("diagonal", a, offset=1),
  ])


@pytest.mark.parametrize("name", ["eigvals", "eig", "eigh", "svd", "cholesky", "inv", "qr"])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_failed_decomposition_fills_like_jax(name, dtype):
  # A NaN input makes LAPACK fail; results are NaN (nan+nanj for complex), as in JAX.
  a = np.array([[np.nan, 1.0], [1.0, 3.0]], dtype)
  check(*_fns(name), a)
