"""jnp.einsum and jnp.einsum_path against JAX 0.10.2: values, dtypes, weak types, errors, and
the printed jaxprs (the same chain of dot_general / reduce_sum / transpose / diagonal masks)."""
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

# (subscripts, operand shapes): matmul, batch matmul, traces, diagonals, outer products, sums,
# transposes, ellipses, chains of three and four, repeated labels within one operand, implicit
# outputs, size-1 broadcasting, scalars and empty arrays.
SPECS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bkj->bki", [(2, 3, 4), (2, 5, 4)]),
    ("ii->", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iii->i", [(3, 3, 3)]),
    ("iii", [(3, 3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("iij->ij", [(3, 3, 2)]),
    ("ijij->ij", [(2, 3, 2, 3)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j", [(3,), (4,)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ji", [(3, 4)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 6)]),
    ("...j->...", [(3, 4)]),
    ("i...->...", [(3, 4, 2)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 6)]),
    ("ij,jk,kl", [(2, 3), (3, 50), (50, 4)]),
    ("ij,jk,kl,lm->im", [(2, 3), (3, 4), (4, 5), (5, 6)]),
    ("abc,cd,bd->a", [(2, 3, 4), (4, 5), (3, 5)]),
    ("iij,jk->ik", [(3, 3, 4), (4, 5)]),
    ("iij,ijk->k", [(3, 3, 4), (3, 4, 5)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("ij,ji->", [(3, 4), (4, 3)]),
    ("i,i", [(3,), (3,)]),
    ("ijk,jlk", [(2, 3, 5), (3, 4, 5)]),
    ("ij,kj->ik", [(1, 4), (3, 4)]),
    ("ij,jk->ik", [(3, 1), (4, 5)]),
    ("ij,j->i", [(3, 4), (1,)]),
    ("i,->i", [(3,), ()]),
    (",->", [(), ()]),
    ("->", [()]),
    ("ij,jk", [(0, 4), (4, 5)]),
    ("ij,jk", [(3, 0), (0, 5)]),
    ("ii->i", [(0, 0)]),
]


def _operands(rng, shapes, dtype=F32):
  return [rand(s, dtype, rng) for s in shapes]


def _jaxpr_text(lib, make_jaxpr, spec, args, **kw):
  return str(make_jaxpr(lambda *xs: lib.einsum(spec, *xs, **kw))(*args))


def _same_jaxpr(spec, args, **kw):
  want = _jaxpr_text(jnp, jax.make_jaxpr, spec, args, **kw)
  got = _jaxpr_text(anp, arrax.make_jaxpr, spec, args, **kw)
  assert got == want, f"\narrax:\n{got}\njax:\n{want}"


def test_values_and_jaxprs_match_jax():
  rng = np.random.default_rng(0)
  cases = []
  for spec, shapes in SPECS:
    args = _operands(rng, shapes)
    cases.append((f"{spec} {shapes} values",
                  functools.partial(check, anp.einsum, jnp.einsum, spec, *args, tol=1e-5)))
    cases.append((f"{spec} {shapes} jaxpr", functools.partial(_same_jaxpr, spec, args)))
  check_all(cases)


DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.float16, BF16, F32, np.complex64]
DTYPE_SPECS = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ii->", [(3, 3)]), ("ii->i", [(3, 3)]),
               ("ij->", [(3, 4)]), ("iij,jk->ik", [(3, 3, 4), (4, 5)]),
               ("ij,ij->i", [(3, 4), (3, 4)]), ("i,j", [(3,), (2,)])]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_dtypes(dtype):
  rng = np.random.default_rng(1)
  tol = 5e-2 if np.dtype(dtype).itemsize <= 2 and np.dtype(dtype).kind == "f" else 1e-5
  cases = []
  for spec, shapes in DTYPE_SPECS:
    args = _operands(rng, shapes, dtype)
    cases.append((f"{spec} values",
                  functools.partial(check, anp.einsum, jnp.einsum, spec, *args, tol=tol)))
    cases.append((f"{spec} jaxpr", functools.partial(_same_jaxpr, spec, args)))
  check_all(cases)


def test_mixed_dtypes_and_preferred_element_type():
  rng = np.random.default_rng(2)
  r = functools.partial(rand, seed=rng)
  mm = "ij,jk->ik"
  cases = [
      (mm, [r((3, 4), np.int8), r((4, 5), F32)], {}),
      (mm, [r((3, 4), BF16), r((4, 5), np.float16)], {}),
      (mm, [r((3, 4), np.int32), r((4, 5), np.complex64)], {}),
      (mm, [r((3, 4), np.bool_), r((4, 5), np.int8)], {}),
      (mm, [r((3, 4), np.uint8), r((4, 5), np.int8)], {}),
      (mm, [r((3, 4), np.int8), r((4, 5), np.int8)], {"preferred_element_type": np.int32}),
      (mm, [r((3, 4), BF16), r((4, 5), BF16)], {"preferred_element_type": F32}),
      (mm, [r((3, 4), np.int8), r((4, 5), F32)], {"preferred_element_type": F32}),
      ("ii->", [r((3, 3), BF16)], {"preferred_element_type": F32}),
      ("ij->", [r((3, 3), np.int8)], {"preferred_element_type": np.int32}),
      ("ij->j", [r((3, 3), np.bool_)], {"preferred_element_type": np.int32}),
      ("iij,jk->ik", [r((3, 3, 4), np.int8), r((4, 5), np.int8)], {"preferred_element_type": F32}),
      (mm, [r((3, 4), F32), r((4, 5), F32)], {"precision": "highest"}),
      (mm, [r((3, 4), F32), r((4, 5), F32)], {"precision": ("high", "default")}),
      ("ij,jk,kl", [r((2, 3), F32), r((3, 4), F32), r((4, 5), F32)], {"precision": "highest"}),
  ]
  checks = []
  for spec, args, kw in cases:
    label = f"{spec} {[a.dtype.name for a in args]} {kw}"
    checks.append((label, functools.partial(check, anp.einsum, jnp.einsum, spec, *args,
                                            tol=5e-2, **kw)))
    checks.append((label + " jaxpr", functools.partial(_same_jaxpr, spec, args, **kw)))
  check_all(checks)


def test_python_scalars_and_weak_types():
  x = np.arange(6, dtype=F32).reshape(2, 3)
  i = np.arange(3, dtype=np.int32)
  h = np.ones((3, 3), np.float16)
  check_all([
      ("f32 * 2.0", lambda: check(anp.einsum, jnp.einsum, "ij,->ij", x, 2.0)),
      ("i32 * 2", lambda: check(anp.einsum, jnp.einsum, "i,->i", i, 2)),
      ("i32 * 2.5", lambda: check(anp.einsum, jnp.einsum, "i,->i", i, 2.5)),
      ("f16 trace * 2.0", lambda: check(anp.einsum, jnp.einsum, "ii,->", h, 2.0)),
      ("two scalars", lambda: check(anp.einsum, jnp.einsum, ",->", 2.0, 3)),
      ("one weak scalar", lambda: check(anp.einsum, jnp.einsum, "->", 2.0)),
      ("complex scalar", lambda: check(anp.einsum, jnp.einsum, "i,->i", i, 1j)),
      ("numpy operands", lambda: check(anp.einsum, jnp.einsum, "ij,kj", x, x)),
      ("jaxpr weak scalar", lambda: _same_jaxpr("ij,->ij", [x, 2.0])),
  ])


def test_numpy_constant_operand_jaxpr():
  c = np.arange(20, dtype=F32).reshape(4, 5)
  x = np.ones((3, 4), F32)
  want = str(jax.make_jaxpr(lambda a: jnp.einsum("ij,jk", a, c))(x))
  got = str(arrax.make_jaxpr(lambda a: anp.einsum("ij,jk", a, c))(x))
  assert got == want


def test_nan_and_inf_inputs():
  x = np.array([[np.nan, 1.0], [np.inf, -np.inf]], F32)
  y = np.array([[1.0, 0.0], [2.0, np.inf]], F32)
  check_all([(spec, functools.partial(check, anp.einsum, jnp.einsum, spec, *args))
             for spec, args in [("ij,jk", [x, y]), ("ii", [x]), ("ii->i", [y]), ("ij->", [y]),
                                ("ij,ij->i", [x, y])]])


def test_interleaved_form():
  rng = np.random.default_rng(3)
  x, y = rand((3, 4), F32, rng), rand((4, 5), F32, rng)
  v = rand((4,), F32, rng)
  e = Ellipsis
  forms = [
      (x, [0, 1], y, [1, 2]),
      (x, [0, 1], y, [1, 2], [0, 2]),
      (x, [0, 1], y, [1, 2], [2, 0]),
      (x, (0, 1), (1, 0)),
      (x, [1, 0]),
      (x, [e, 1], [e]),
      (x, [e, 0], v, [0], [e]),
      (x, [0, 1], v, [1]),
      (v, [0], v, [0], []),
      (x, ["a", "b"], y, ["b", "c"]),
      (x, [0, 0]),                        # label sizes disagree: ValueError
  ]
  cases = []
  for args in forms:
    label = " ".join(str(a) if isinstance(a, (list, tuple)) else str(a.shape) for a in args)
    cases.append((label, functools.partial(check, anp.einsum, jnp.einsum, *args, tol=1e-5)))
  check_all(cases)
  _assert_jaxprs(lambda a, b: anp.einsum(a, [0, 1], b, [2, 1], [0, 2]),
                 lambda a, b: jnp.einsum(a, [0, 1], b, [2, 1], [0, 2]), [x, x])


def test_optimize_options_and_paths():
  rng = np.random.default_rng(4)
  args = _operands(rng, [(2, 3), (3, 50), (50, 4)])
  spec = "ij,jk,kl"
  opts = [False, True, "auto", "greedy", "optimal", "dp", "branch-2", [(0, 2), (0, 1)],
          [(1, 2), (0, 1)]]
  cases = []
  for opt in opts:
    cases.append((f"einsum optimize={opt}",
                  functools.partial(check, anp.einsum, jnp.einsum, spec, *args, optimize=opt,
                                    tol=1e-4)))
    cases.append((f"jaxpr optimize={opt}",
                  functools.partial(_same_jaxpr, spec, args, optimize=opt)))
  check_all(cases)


def test_einsum_path():
  rng = np.random.default_rng(5)
  args = _operands(rng, [(2, 3), (3, 50), (50, 4)])
  for opt in [False, True, "auto", "greedy", "optimal"]:
    jpath, jinfo = jnp.einsum_path("ij,jk,kl", *[jnp.asarray(a) for a in args], optimize=opt)
    apath, ainfo = anp.einsum_path("ij,jk,kl", *[anp.asarray(a) for a in args], optimize=opt)
    assert apath == jpath
    assert str(ainfo) == str(jinfo)
  x = np.ones((3, 4), F32)
  assert (anp.einsum_path(x, [0, 1], x, [2, 1])[0]
          == jnp.einsum_path(jnp.asarray(x), [0, 1], jnp.asarray(x), [2, 1])[0])
  # The path found by einsum_path gives einsum's result.
  path, _ = anp.einsum_path("ij,jk,kl", *args, optimize="optimal")
  check(anp.einsum, jnp.einsum, "ij,jk,kl", *args, optimize=path, tol=1e-4)


def test_errors():
  x = np.ones((3, 4), F32)
  y = np.ones((5, 6), F32)
  cases = [
      ("mismatched sizes", ("ij,jk", x, y), {}),
      ("wrong index count", ("ijk,jk", x, y), {}),
      ("missing operand", ("ij,jk", x), {}),
      ("output label not in inputs", ("ij->k", x), {}),
      ("repeated output label", ("ij->ii", x), {}),
      ("bad character", ("i$,jk", x, y), {}),
      ("list operand", ("i", [1.0, 2.0]), {}),
      ("string operand", ("i,i", x[0], "abc"), {}),
      ("out=", ("ij", x), {"out": x}),
      ("three-operand step", ("ij,jk,kl", x, x.T, x), {"optimize": [(0, 1, 2)]}),
      ("numpy-style path", ("ij,jk,kl", x, x.T, x), {"optimize": ["einsum_path", (0, 1), (0, 1)]}),
      ("bad preferred dtype", ("ij", x), {"preferred_element_type": "foo"}),
  ]
  checks = []
  for label, args, kw in cases:
    checks.append((label, functools.partial(check, anp.einsum, jnp.einsum, *args, **kw)))
  check_all(checks)


def test_jit_grad_vmap():
  rng = np.random.default_rng(6)
  specs = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
           ("iij,jk->ik", [(3, 3, 4), (4, 5)]), ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
           ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("i,j->ij", [(3,), (4,)]),
           ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 6)]), ("ij,ij->", [(3, 4), (3, 4)])]
  cases = []
  for spec, shapes in specs:
    args = _operands(rng, shapes)
    n = len(args)

    def grads(lib, ad, spec=spec, n=n):
      def loss(*operands):
        out = lib.einsum(spec, *operands)
        return out if out.ndim == 0 else (out * out).sum()
      return ad.grad(loss, argnums=tuple(range(n)))

    def mapped(lib, ad, spec=spec):
      return ad.vmap(lambda *operands: lib.einsum(spec, *operands))

    jitted = (arrax.jit(lambda *xs, spec=spec: anp.einsum(spec, *xs)),
              jax.jit(lambda *xs, spec=spec: jnp.einsum(spec, *xs)))
    batched = [np.stack([a, 2 * a]) for a in args]
    for tag, (fa, fj), xs in [("jit", jitted, args),
                              ("grad", (grads(anp, arrax), grads(jnp, jax)), args),
                              ("vmap", (mapped(anp, arrax), mapped(jnp, jax)), batched)]:
      cases.append((f"{spec} {tag}", functools.partial(check, fa, fj, *xs, tol=1e-4)))
      cases.append((f"{spec} {tag} jaxpr", functools.partial(
          lambda fa, fj, xs: _assert_jaxprs(fa, fj, xs), fa, fj, xs)))
  check_all(cases)


def _assert_jaxprs(fa, fj, xs):
  want = str(jax.make_jaxpr(fj)(*xs))
  got = str(arrax.make_jaxpr(fa)(*xs))
  assert got == want, f"\narrax:\n{got}\njax:\n{want}"


def test_vmap_in_axes_and_mixed_batching():
  rng = np.random.default_rng(7)
  x, y = rand((3, 4, 2), F32, rng), rand((4, 5), F32, rng)
  fa = arrax.vmap(lambda a, b: anp.einsum("ij,jk->ik", a, b), in_axes=(2, None))
  fj = jax.vmap(lambda a, b: jnp.einsum("ij,jk->ik", a, b), in_axes=(2, None))
  check(fa, fj, x, y, tol=1e-5)
  _assert_jaxprs(fa, fj, [x, y])


def test_x64(x64):
  rng = np.random.default_rng(8)
  a = rand((3, 4), np.float64, rng)
  b = rand((4, 2), np.float32, rng)
  i = rand((3, 3), np.int64, rng)
  check_all([
      ("f64 @ f32", lambda: check(anp.einsum, jnp.einsum, "ij,jk", a, b)),
      ("int64 trace", lambda: check(anp.einsum, jnp.einsum, "ii", i)),
      ("int64 diag * 2", lambda: check(anp.einsum, jnp.einsum, "ii,->i", i, 2)),
      ("f32 * 2.0", lambda: check(anp.einsum, jnp.einsum, "jk,->jk", b, 2.0)),
      ("jaxpr", lambda: _same_jaxpr("ii,jk->ik", [i.astype(np.float64), b])),
  ])


def test_signatures():
  import inspect
  for name in ["einsum", "einsum_path"]:
    params = [[(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()
               if p.name != "_dot_general"]
              for f in (getattr(anp, name), getattr(jnp, name))]
    assert params[0] == params[1], name
  assert "_dot_general" in inspect.signature(anp.einsum).parameters


def test_dot_general_override_and_jax_array_operands():
  rng = np.random.default_rng(9)
  x, y = rand((3, 4), F32, rng), rand((4, 5), F32, rng)
  calls = []

  def doubling(lax):
    def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
      calls.append(dimension_numbers)
      return 2 * lax.dot_general(lhs, rhs, dimension_numbers, precision,
                                 preferred_element_type=preferred_element_type)
    return dot_general

  da, dj = doubling(arrax.lax), doubling(jax.lax)
  check(lambda a, b: anp.einsum("ij,jk,kl", a, b, b.T, _dot_general=da),
        lambda a, b: jnp.einsum("ij,jk,kl", a, b, b.T, _dot_general=dj), x, y, tol=1e-4)
  assert len(calls) == 4 and calls[:2] == calls[2:]

  class Wrapped:
    def __init__(self, value):
      self.value = value

    def __jax_array__(self):
      return self.value

  check(lambda a, b: anp.einsum("ij,jk", Wrapped(a), Wrapped(b)),
        lambda a, b: jnp.einsum("ij,jk", Wrapped(a), Wrapped(b)), x, y, tol=1e-5)
  check(lambda a: anp.einsum(Wrapped(a), [0, 1], [1]),
        lambda a: jnp.einsum(Wrapped(a), [0, 1], [1]), x, tol=1e-5)
