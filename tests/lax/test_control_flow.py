"""Differential tests of arrax's control flow (cond, switch, while_loop, fori_loop, scan, map,
associative_scan) against JAX 0.10.2: values, dtypes, shapes and weak types (eagerly and under
jit), printed jaxprs, lowering, error classes and messages, and the unrolled-loop warning.

Each case is written once as `make(lax, jnp) -> function` and built for both libraries.
"""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import functools  # noqa: E402
import warnings  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from jax import lax as jlax  # noqa: E402

import arrax  # noqa: E402
import arrax.numpy as anp  # noqa: E402
from arrax import lax as alax  # noqa: E402
from arrax._src import dispatch  # noqa: E402
from arrax._src.tracing import UnrolledLoopWarning  # noqa: E402
import oracle  # noqa: E402
from oracle import ARRAX, BF16, JAX, assert_same, make_with  # noqa: E402

# Cases are make(lax, jnp) -> function; results are the same pytrees, eagerly and under jit.
check = functools.partial(oracle.check, build=make_with("lax", "np"), jit=True, strict_tree=True)
check_raises = functools.partial(oracle.check_raises, build=make_with("lax", "np"))
check_jaxpr = functools.partial(oracle.check_jaxpr, build=make_with("lax", "np"), typecheck=True)


def arange(shape, dtype=np.float32, start=1):
  n = int(np.prod(shape))
  return (np.arange(n) % 7 + start).reshape(shape).astype(dtype)


X3 = arange((3,))
X5 = arange((5,))
M23 = arange((2, 3))


# ---- cond -----------------------------------------------------------------------------------
COND_CASES = {
    "bool_pred": (lambda L, np_: lambda p, x: L.cond(p, lambda x: x + 1, lambda x: x * 2, x),
                  [(True, X3), (False, X3), (np.bool_(True), X3)]),
    "int_pred": (lambda L, np_: lambda p, x: L.cond(p, lambda x: x + 1, lambda x: x * 2, x),
                 [(3, X3), (0, X3), (np.int8(-2), X3), (np.uint32(0), X3)]),
    "float_pred": (lambda L, np_: lambda p, x: L.cond(p, np_.sin, np_.cos, x),
                   [(0.5, X3), (0.0, X3), (np.float32(-0.0), X3)]),
    "many_operands": (lambda L, np_: lambda p, x, y, z: L.cond(
        p, lambda a, b, c: a * b + c, lambda a, b, c: a - b * c, x, y, z),
        [(True, X3, 2.0, np.float32(3)), (False, X3, 2.0, np.float32(3))]),
    "no_operands": (lambda L, np_: lambda p: L.cond(p, lambda: 1.0, lambda: 2.0),
                    [(True,), (False,)]),
    "pytree": (lambda L, np_: lambda p, t: L.cond(
        p, lambda t: {"s": t[0] + t[1]["a"], "l": [t[1]["b"], t[0]]},
        lambda t: {"s": t[0] - 1, "l": [t[1]["b"] * 2, t[1]["a"]]}, t),
        [(True, (X3, {"a": X3, "b": M23})), (False, (X3, {"a": X3, "b": M23}))]),
    "operand_kw": (lambda L, np_: lambda p, x: L.cond(p, lambda x: -x, lambda x: x,
                                                      operand=x),
                   [(True, X3), (False, X3)]),
    "closure": (lambda L, np_: lambda p, x, y: L.cond(p, lambda x: x + y, lambda x: x * y, x),
                [(True, X3, M23), (False, X3, M23)]),
    "forwarded": (lambda L, np_: lambda p, x, y: L.cond(p, lambda x, y: (x, y + 1),
                                                        lambda x, y: (x, y * 2), x, y),
                  [(True, X3, 1.0), (False, X3, np.float32(1))]),
    "weak_outputs": (lambda L, np_: lambda p: (L.cond(p, lambda: 1.0, lambda: np_.float32(2)),
                                               L.cond(p, lambda: np_.float32(2), lambda: 1.0)),
                     [(True,), (False,)]),
    "old_form": (lambda L, np_: lambda p, x, y: L.cond(p, x, lambda a: a + 1, y, lambda b: b),
                 [(True, X3, X3 * 2), (False, X3, X3 * 2)]),
    "nested": (lambda L, np_: lambda p, q, x: L.cond(
        p, lambda x: L.cond(q, np_.sin, np_.cos, x), lambda x: x, x),
        [(True, False, X3), (True, True, X3), (False, True, X3)]),
}


@pytest.mark.parametrize("name", list(COND_CASES))
def test_cond(name):
  make, arg_sets = COND_CASES[name]
  for args in arg_sets:
    check(make, *args)


DTYPES = [np.bool_, np.int8, np.uint32, np.int32, np.float16, BF16, np.float32, np.complex64]


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3)])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_cond_switch_dtypes(dtype, shape):
  x = arange(shape, dtype)
  flip = lambda L, np_: lambda v: np_.flip(v) if v.ndim else v  # noqa: E731
  eager = shape == (2, 3)   # eager runs compile every op: once per dtype is enough
  check(lambda L, np_: lambda p, v: L.cond(p, flip(L, np_), lambda v: v, v), True, x,
        eager=eager)
  check(lambda L, np_: lambda i, v: L.switch(
      i, [lambda v: v, flip(L, np_), lambda v: np_.zeros_like(v)], v), 1, x, eager=eager)


# ---- switch ---------------------------------------------------------------------------------
def _switch3(L, np_):
  return lambda i, x: L.switch(i, [lambda x: x + 1, lambda x: x * 2, np_.sin], x)


@pytest.mark.parametrize("index", [-5, 0, 1, 2, 7, np.int8(1), np.uint8(200), np.int32(-1)],
                         ids=repr)
def test_switch_clamps(index):
  check(_switch3, index, X3)


def test_switch_variants():
  check(lambda L, np_: lambda i, x: L.switch(i, [np_.sin], x), 4, X3)   # one branch: no cond
  check(lambda L, np_: lambda i, x, y: L.switch(
      i, [lambda a, b: (a, b + 1), lambda a, b: (a * 2, b), lambda a, b: (a, b)], x, y),
      1, X3, 2.0)
  check(lambda L, np_: lambda i, x: L.switch(i, (lambda x: x, lambda x: -x), operand=x), 1, X3)
  check(lambda L, np_: lambda i: L.switch(i, [lambda: {"a": 1}, lambda: {"a": 2}]), 1)


# ---- while_loop -----------------------------------------------------------------------------
WHILE_CASES = {
    "counter": (lambda L, np_: lambda x: L.while_loop(
        lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2), (0, x)), (X3,)),
    "closures": (lambda L, np_: lambda x, y: L.while_loop(
        lambda c: c[0] < y, lambda c: (c[0] + 1.0, c[1] * y), (0.0, x)), (X3, np.float32(4))),
    "weak_promotion": (lambda L, np_: lambda: L.while_loop(
        lambda c: c < 3, lambda c: c + 1.5, 0), ()),
    "forwarded_carry": (lambda L, np_: lambda: L.while_loop(
        lambda c: c[1] < 10, lambda c: (c[0], c[1] + 1), (0, 0)), ()),
    "pytree_carry": (lambda L, np_: lambda x: L.while_loop(
        lambda c: np_.sum(c["v"]) < 100.0,
        lambda c: {"v": c["v"] * 2, "n": [c["n"][0] + 1]}, {"v": x, "n": [0]}), (X3,)),
    "zero_trips": (lambda L, np_: lambda x: L.while_loop(lambda c: False, lambda c: c + 1, x),
                   (X3,)),
    "nested": (lambda L, np_: lambda x: L.while_loop(
        lambda c: c[0] < 3,
        lambda c: (c[0] + 1, L.fori_loop(0, 2, lambda j, v: v + x * j, c[1])), (0, x)),
        (X3,)),
}


@pytest.mark.parametrize("name", list(WHILE_CASES))
def test_while_loop(name):
  make, args = WHILE_CASES[name]
  check(make, *args)


@pytest.mark.parametrize("shape", [(), (0,), (2, 3)])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_loops_dtypes(dtype, shape):
  x = arange(shape, dtype)
  flip = lambda np_, v: np_.flip(v) if v.ndim else v  # noqa: E731
  check(lambda L, np_: lambda v: L.while_loop(
      lambda c: c[0] < 3, lambda c: (c[0] + 1, flip(np_, c[1])), (0, v)), x, eager=not shape)
  if shape and shape[0]:
    check(lambda L, np_: lambda v: L.scan(
        lambda c, a: (np_.maximum(c, a), (c, a)), np_.zeros_like(v[0]), v, reverse=True), x,
        eager=False)


# ---- fori_loop ------------------------------------------------------------------------------
@pytest.mark.parametrize("bounds", [(0, 5), (2, 6), (3, 3), (5, 2), (-2, 1),
                                    (np.int32(1), 4), (0, np.int16(3))], ids=repr)
@pytest.mark.parametrize("unroll", [None, 2, True])
def test_fori_loop_static(bounds, unroll):
  lo, hi = bounds
  check(lambda L, np_: lambda x: L.fori_loop(lo, hi, lambda i, c: c * 2 + i, x, unroll=unroll),
        X3)


def test_fori_loop_traced_bounds():
  body = lambda L: lambda i, c: (c[0] * 2 + i, c[1] + 1)  # noqa: E731
  for lo, hi in [(0, 5), (4, 2), (np.int32(1), 3)]:
    expected = jax.jit(lambda lo, hi, x: jlax.fori_loop(lo, hi, body(jlax), (x, 0)))(
        lo, hi, jnp.asarray(X3))
    actual = arrax.jit(lambda lo, hi, x: alax.fori_loop(lo, hi, body(alax), (x, 0)))(
        lo, hi, anp.asarray(X3))
    assert_same(actual, expected, strict_tree=True)
  # Mixed weak/strong integer bounds promote to the strong one.
  check(lambda L, np_: lambda hi, x: L.fori_loop(0, hi, lambda i, c: c + i, x),
        np.int32(4), np.int32(1))


# ---- scan -----------------------------------------------------------------------------------
def _cumulative(L, np_, **kw):
  return lambda c0, xs: L.scan(lambda c, x: (c + x, c * x), c0, xs, **kw)


SCAN_CASES = {
    "basic": (lambda L, np_: _cumulative(L, np_), (0.0, X5)),
    "reverse": (lambda L, np_: _cumulative(L, np_, reverse=True), (np.float32(1), X5)),
    "unroll2": (lambda L, np_: _cumulative(L, np_, unroll=2), (0.0, X5)),
    "unroll2_reverse": (lambda L, np_: _cumulative(L, np_, unroll=2, reverse=True), (0.0, X5)),
    "unroll3_length6": (lambda L, np_: _cumulative(L, np_, unroll=3), (0.0, arange((6,)))),
    "unroll_true": (lambda L, np_: _cumulative(L, np_, unroll=True), (0.0, X5)),
    "unroll_0": (lambda L, np_: _cumulative(L, np_, unroll=0), (0.0, X5)),
    "unroll_big": (lambda L, np_: _cumulative(L, np_, unroll=9, reverse=True), (0.0, X5)),
    "length_arg": (lambda L, np_: _cumulative(L, np_, length=5), (0.0, X5)),
    "matrix_rows": (lambda L, np_: lambda c0, xs: L.scan(
        lambda c, x: (c @ x, np_.sum(c)), c0, xs), (arange((3,)), arange((4, 3, 3)))),
    "xs_none": (lambda L, np_: lambda c0: L.scan(
        lambda c, _: (c + 1, (c, {"d": c * 2})), c0, None, length=3), (0,)),
    "xs_none_no_ys": (lambda L, np_: lambda c0: L.scan(
        lambda c, _: (c * 2, None), c0, None, length=4), (X3,)),
    "length_zero": (lambda L, np_: lambda xs: L.scan(
        lambda c, x: (c + 1, (c, x)), 0, xs), (np.zeros((0, 2), np.float32),)),
    "pytree": (lambda L, np_: lambda init, xs: L.scan(
        lambda c, x: ({"a": c["a"] + x[0], "b": [c["b"][0] * x[1]]}, (x[1], c["a"])),
        init, xs), ({"a": X3, "b": [1.0]}, (arange((4, 3)), arange((4,))))),
    "consts": (lambda L, np_: lambda w, xs: L.scan(
        lambda c, x: (np_.tanh(w @ c + x), c), np_.zeros(3), xs), (arange((3, 3)) / 10,
                                                                   arange((6, 3)))),
    "forwarded": (lambda L, np_: lambda c0, xs: L.scan(
        lambda c, x: ((c[0], c[1] + x), (x, c[0] * 2)), c0, xs), ((1.0, 0.0), X5)),
    "weak_promotion": (lambda L, np_: lambda xs: L.scan(
        lambda c, x: (c * 1.5, x), 0, xs), (X3,)),
    "python_ints": (lambda L, np_: lambda xs: L.scan(lambda c, x: (c, x), 0, xs), (X3,)),
    "nested": (lambda L, np_: lambda xs: L.scan(
        lambda c, row: L.scan(lambda c2, v: (c2 + v, c2 * v), c, row), 0.0, xs),
        (arange((3, 4)),)),
    "cond_inside": (lambda L, np_: lambda xs, y: L.scan(
        lambda c, a: (L.cond(a > 2, lambda c: c + y, lambda c: c * a, c), c), 1.0, xs),
        (X5, np.float32(2))),
}


@pytest.mark.parametrize("name", list(SCAN_CASES))
def test_scan(name):
  make, args = SCAN_CASES[name]
  check(make, *args)


# ---- map and associative_scan ---------------------------------------------------------------
@pytest.mark.parametrize("batch_size", [None, 0, 1, 2, 3, 5, 8])
def test_map(batch_size):
  eager = batch_size in (None, 2)   # eager map with batches compiles many small ops
  check(lambda L, np_: lambda xs: L.map(lambda x: x * 2 + np_.sum(x), xs, batch_size=batch_size),
        arange((5, 3)), eager=eager)
  check(lambda L, np_: lambda xs: L.map(lambda t: {"p": t[0] * t[1], "q": t[1]}, xs,
                                        batch_size=batch_size), (X5, arange((5, 2))),
        eager=False)


ASSOC_CASES = {
    "add": (lambda L, np_: lambda x: L.associative_scan(np_.add, x), arange((7,))),
    "add_even": (lambda L, np_: lambda x: L.associative_scan(np_.add, x), arange((8,))),
    "one": (lambda L, np_: lambda x: L.associative_scan(np_.add, x), arange((1,))),
    "empty": (lambda L, np_: lambda x: L.associative_scan(np_.add, x), arange((0,))),
    "mul_reverse": (lambda L, np_: lambda x: L.associative_scan(np_.multiply, x, reverse=True),
                    arange((5,), np.int32)),
    "max_axis": (lambda L, np_: lambda x: L.associative_scan(np_.maximum, x, axis=-1),
                 arange((3, 6), np.int32)),
    "bool_or": (lambda L, np_: lambda x: L.associative_scan(np_.logical_or, x),
                np.array([False, False, True, False, True])),
    "pytree": (lambda L, np_: lambda x: L.associative_scan(
        lambda a, b: (a[0] * b[0], a[1] * b[0] + b[1]), (x, x * 2)), arange((6,)) / 4),
    "matmul": (lambda L, np_: lambda x: L.associative_scan(np_.matmul, x),
               arange((5, 2, 2)) / 8),
}


@pytest.mark.parametrize("name", list(ASSOC_CASES))
def test_associative_scan(name):
  make, x = ASSOC_CASES[name]
  # Eagerly every slice/pad/add compiles on its own (in both libraries): one eager case.
  check(make, x, eager=name == "add")


# ---- select (part of the list; defined with the elementwise ops) ---------------------
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_], ids=lambda d: d.__name__)
def test_select(dtype):
  pred = np.array([True, False, True])
  check(lambda L, np_: L.select, pred, arange((3,), dtype), arange((3,), dtype, start=3))


# ---- printed jaxprs -------------------------------------------------------------------------
def _big(x):
  for _ in range(12):
    x = x * 2.0
  return x


JAXPR_CASES = {
    "cond_bool": (lambda L, np_: lambda p, x: L.cond(p, lambda x: x + 1, lambda x: x * 2, x),
                  (True, np.float32(1))),
    "cond_int": (lambda L, np_: lambda p, x: L.cond(p, lambda x: x + 1, lambda x: x * 2, x),
                 (3, np.float32(1))),
    "cond_concrete_closure": (lambda L, np_: lambda p, x: L.cond(
        p, lambda x: x + X3, lambda x: x * X3, x), (True, np.float32(1))),
    "cond_forwarding": (lambda L, np_: lambda p, x, y: L.cond(
        p, lambda x, y: (x, y + 1), lambda x, y: (x, y * 2), x, y), (True, 1.0, 2.0)),
    "cond_all_forwarded": (lambda L, np_: lambda x: L.cond(True, lambda: x, lambda: x),
                           (np.float32(1),)),
    "cond_literal_branch": (lambda L, np_: lambda x: L.cond(x > 0, lambda: 1.0, lambda: x),
                            (np.float32(1),)),
    "cond_big_branch": (lambda L, np_: lambda p, x: L.cond(p, _big, lambda x: x, x),
                        (True, np.float32(1))),
    "switch": (lambda L, np_: lambda i, x: L.switch(i, [lambda x: x + 1, lambda x: x * 2,
                                                        np_.sin], x), (3, np.float32(1))),
    "switch_shared_branch": (lambda L, np_: lambda x: L.switch(2, [_big, _big], x),
                             (np.float32(1),)),
    "while": (lambda L, np_: lambda x: L.while_loop(
        lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2), (0, x)), (np.float32(1),)),
    "while_consts": (lambda L, np_: lambda x: L.while_loop(
        lambda c: c[0] < x, lambda c: (c[0] + 1, c[1] * x), (0., x)), (np.float32(1),)),
    "while_moved_const": (lambda L, np_: lambda x: L.while_loop(
        lambda c: c[1] < 10, lambda c: (c[0], c[1] + 1), (x, 0)), (np.float32(1),)),
    "fori_static": (lambda L, np_: lambda x: L.fori_loop(0, 3, lambda i, c: c * 2 + i, x),
                    (np.float32(1),)),
    "fori_static_unroll": (lambda L, np_: lambda x: L.fori_loop(
        0, 5, lambda i, c: c + x, x, unroll=2), (np.float32(1),)),
    "fori_dynamic": (lambda L, np_: lambda n, x: L.fori_loop(0, n, lambda i, c: c * 2 + i, x),
                     (3, np.float32(1))),
    "scan": (lambda L, np_: lambda x, xs: L.scan(lambda c, a: (c + a, c * a), x, xs),
             (np.float32(1), X3)),
    "scan_xs_none": (lambda L, np_: lambda x: L.scan(lambda c, a: (c + x, None), x, None,
                                                     length=4), (np.float32(1),)),
    "scan_forwarded": (lambda L, np_: lambda x, xs: L.scan(
        lambda c, a: ((c[0], c[1] + 1), (a, a * 2)), (x, x), xs, unroll=True, reverse=True),
        (np.float32(1), X3)),
    "scan_big_body": (lambda L, np_: lambda x: L.scan(lambda c, a: (_big(c), None), x, None,
                                                      length=2), (np.float32(1),)),
    "nested": (lambda L, np_: lambda x, y: L.scan(
        lambda c, a: (L.cond(a > 1, lambda c: c + y, lambda c: c * a, c), np_.sin(c) * y),
        x, np_.arange(4.0)), (X3, 2.0)),
    "map": (lambda L, np_: lambda x: L.map(np_.sin, x, batch_size=2), (X5,)),
    "associative_scan": (lambda L, np_: lambda x: L.associative_scan(np_.add, x), (X5,)),
}


@pytest.mark.parametrize("name", list(JAXPR_CASES))
def test_jaxpr_text(name):
  make, args = JAXPR_CASES[name]
  check_jaxpr(make, *args)


def test_repeated_calls_share_jaxprs():
  # The same branch functions traced twice give one jaxpr object (printed once, as JAX does).
  def make(L, np_):
    def f(p, x):
      y = L.cond(p, _big, np_.sin, x)
      return L.cond(p, _big, np_.sin, y)
    return f
  check_jaxpr(make, True, np.float32(1))


# ---- lowering and eager execution -----------------------------------------------------------
def test_lowering_uses_case_and_while():
  f = arrax.jit(lambda p, x: (alax.cond(p, anp.sin, anp.cos, x),
                              alax.fori_loop(0, 3, lambda i, c: c + 1, x),
                              alax.while_loop(lambda c: c < 5, lambda c: c + 1, x)))
  text = f.lower(True, np.float32(1)).as_text()
  assert "stablehlo.case" in text
  assert text.count("stablehlo.while") == 2


def test_eager_calls_reuse_executables():
  x = anp.asarray(X3)

  def body(i, c):
    return c * 2 + i

  def scan_body(c, a):
    return c + a, c

  calls = [lambda: alax.fori_loop(0, 4, body, x), lambda: alax.cond(True, anp.sin, anp.cos, x),
           lambda: alax.scan(scan_body, 0.0, x), lambda: alax.map(anp.sin, x)]
  for call in calls:
    first = call()
    n = len(dispatch._prim_cache)
    assert_same(call(), first, strict_tree=True)
    assert len(dispatch._prim_cache) == n


def test_concrete_predicate_still_stages_cond():
  # As in JAX, an eager cond with a concrete predicate traces both branches.
  traced = []
  for lib in (JAX, ARRAX):
    _, L, _ = lib
    seen = []
    L.cond(True, lambda x: seen.append("t") or x, lambda x: seen.append("f") or x, 1.0)
    traced.append(sorted(seen))
  assert traced[0] == traced[1] == ["f", "t"]


def test_disable_jit_runs_python():
  for lib, ctx in ((JAX, jax.disable_jit), (ARRAX, arrax.disable_jit)):
    _, L, _ = lib
    seen = []
    with ctx():
      out = L.cond(True, lambda x: seen.append("t") or x, lambda x: seen.append("f") or x, 1.0)
      assert out == 1.0
      assert L.fori_loop(0, 4, lambda i, c: c + i, 0) == 6
      assert float(L.scan(lambda c, x: (c + x, c), 0.0, np.ones(3, np.float32))[0]) == 3.0
      assert L.while_loop(lambda c: c < 3, lambda c: c + 1, 0) == 3
    assert seen == ["t"]


def test_x64(x64):
  check(lambda L, np_: lambda x: L.fori_loop(0, 3, lambda i, c: c * 2 + i, x), arange((3,),
                                                                                   np.float64))
  check(lambda L, np_: lambda xs: L.scan(lambda c, x: (c + x, c), 0, xs), arange((4,), np.int64))
  check(lambda L, np_: lambda p, x: L.cond(p, lambda x: x * 2, lambda x: x, x), 1,
        arange((2,), np.float64))


# ---- errors ---------------------------------------------------------------------------------
def test_cond_predicate_errors():
  branch = lambda L, np_, pred: lambda: L.cond(pred, lambda: 1., lambda: 2.)  # noqa: E731
  check_raises(lambda L, np_: branch(L, np_, np_.array([True, False])), match=["shape (2,)"])
  check_raises(lambda L, np_: branch(L, np_, 1j), match=["complex64"])
  check_raises(lambda L, np_: branch(L, np_, "a"))
  check_raises(lambda L, np_: branch(L, np_, None))
  check_raises(lambda L, np_: lambda p: L.cond(p, lambda: 1., lambda: 2.), np.ones(2, bool),
               jit=True)
  check_raises(lambda L, np_: lambda: L.cond(True, 1.0, lambda: 2.))
  check_raises(lambda L, np_: lambda: L.cond(True, lambda x: x, lambda x: x, 1.0, operand=2.0))


def test_cond_branch_type_errors():
  err = check_raises(lambda L, np_: lambda: L.cond(True, lambda: 1., lambda: np_.ones(3)),
                     match=["float32[]", "float32[3]", "the shapes do not match"])
  assert "true_fun" in str(err) and "false_fun" in str(err)
  check_raises(lambda L, np_: lambda: L.cond(True, lambda: np_.int32(1), lambda: 1.),
               match=["int32[]", "float32[]", "the dtypes do not match"])
  check_raises(lambda L, np_: lambda: L.cond(True, lambda: (1., 2.), lambda: [1., 2.]),
               match=["<class 'tuple'>", "<class 'list'>"])
  check_raises(lambda L, np_: lambda: L.cond(True, lambda: (1., 2.), lambda: (1.,)),
               match=["tuple of length 2", "tuple of length 1"])
  check_raises(lambda L, np_: lambda: L.switch(1, [lambda: 1., lambda: (1.,), lambda: 1.]),
               match=["branch 0", "branch1"])


def test_switch_index_errors():
  check_raises(lambda L, np_: lambda: L.switch(1.0, [lambda: 1., lambda: 2.]),
               match=["Index type must be an integer"])
  check_raises(lambda L, np_: lambda: L.switch(np_.array([1]), [lambda: 1., lambda: 2.]),
               match=["Branch index must be scalar"])
  check_raises(lambda L, np_: lambda: L.switch(1, []))
  check_raises(lambda L, np_: lambda: L.switch(1, [1, 2]))


def test_while_errors():
  check_raises(lambda L, np_: lambda: L.while_loop(lambda c: c, lambda c: c + 1, 0),
               match=["cond_fun must return a boolean scalar", "int32[]"])
  check_raises(lambda L, np_: lambda: L.while_loop(lambda c: (c < 3, c < 2), lambda c: c + 1,
                                                   0))
  check_raises(lambda L, np_: lambda: L.while_loop(lambda c: c < 3, lambda c: c * 1.5,
                                                   np_.int32(0)),
               match=["int32[]", "float32[]"])
  check_raises(lambda L, np_: lambda: L.while_loop(lambda c: c[0] < 3,
                                                   lambda c: (c[0] + 1,), (0, 1)))
  check_raises(lambda L, np_: lambda: L.while_loop(lambda c: c < 3, 1, 0))


def test_fori_loop_errors():
  check_raises(lambda L, np_: lambda: L.fori_loop(np_.int32(0), np_.int16(3),
                                                  lambda i, c: c + 1, 0),
               match=["int32", "int16"])
  check_raises(lambda L, np_: lambda: L.fori_loop(0, 3.0, lambda i, c: c + 1, 0))
  check_raises(lambda L, np_: lambda n: L.fori_loop(0, n, lambda i, c: c + 1, 0, unroll=2), 3,
               jit=True)


def test_scan_errors():
  body = lambda c, x: (c, x)  # noqa: E731
  check_raises(lambda L, np_: lambda: L.scan(body, 0, np_.ones(3), length=4),
               match=["disagrees with leading axis sizes [3]"])
  check_raises(lambda L, np_: lambda: L.scan(body, 0, [np_.ones(3), np_.ones(4)]),
               match=["different leading axis sizes: 3, 4"])
  check_raises(lambda L, np_: lambda: L.scan(body, 0, None), match=["no values to scan over"])
  check_raises(lambda L, np_: lambda: L.scan(body, 0, 1.0), match=["no leading axis"])
  check_raises(lambda L, np_: lambda: L.scan(body, 0, np_.float32(1)))
  check_raises(lambda L, np_: lambda: L.scan(lambda c, x: c, 0., np_.ones(3)),
               match=["scan body output must be a pair"])
  check_raises(lambda L, np_: lambda: L.scan(body, 0, np_.ones(3), unroll=-1))
  check_raises(lambda L, np_: lambda: L.scan(1, 0, np_.ones(3)))
  check_raises(lambda L, np_: lambda n: L.scan(body, 0, None, length=n), 3, jit=True)


def test_scan_carry_type_errors():
  check_raises(lambda L, np_: lambda: L.scan(lambda c, x: ((c[0], c[1] * 1.5), x),
                                             (0, np_.int32(1)), np_.ones(3)),
               match=["carry input and carry output must have equal types",
                      "c[1] has type int32[]", "has type float32[]", "the dtypes do not match"])
  check_raises(lambda L, np_: lambda: L.scan(lambda c, x: (np_.ones(2), x), np_.ones(3),
                                             np_.ones(3)),
               match=["float32[3]", "float32[2]", "the shapes do not match"])
  check_raises(lambda L, np_: lambda: L.scan(lambda c, x: ([c], x), 0., np_.ones(3)),
               match=["must have the same pytree structure", "<class 'list'>"])


def test_associative_scan_errors():
  check_raises(lambda L, np_: lambda: L.associative_scan(np_.add, (np_.ones(3), np_.ones(4))))
  check_raises(lambda L, np_: lambda: L.associative_scan(1, np_.ones(3)))
  check_raises(lambda L, np_: lambda: L.associative_scan(np_.add, np_.ones(3), axis=2))


# ---- the unrolled-loop warning (beyond JAX) -------------------------------------------------
def _unrolled_warnings(fn, *args):
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fn(*args)
  return [w for w in caught if issubclass(w.category, UnrolledLoopWarning)]


def test_unrolled_loop_warns_once():
  def f(x):
    for _ in range(200):
      x = x * 2.0 + 1.0   # the line the warning names
    return x

  found = _unrolled_warnings(arrax.jit(f), anp.ones(3))
  assert len(found) == 1
  w = found[0]
  assert w.filename == __file__
  assert "x = x * 2.0 + 1.0" in str(w.message)
  assert "lax.fori_loop" in str(w.message) and "lax.scan" in str(w.message)
  assert w.lineno == f.__code__.co_firstlineno + 2


def test_unrolled_loop_through_helper_names_loop_line():
  def cell(h):
    return anp.tanh(h * 0.5 + 1.0)

  def f(h):
    for _ in range(200):
      h = cell(h)
    return h

  found = _unrolled_warnings(arrax.make_jaxpr(f), np.float32(1))
  assert len(found) == 1 and found[0].lineno == f.__code__.co_firstlineno + 2


def test_short_or_rolled_loops_do_not_warn():
  def short(x):
    for _ in range(10):
      x = x * 2.0 + 1.0
    return x

  def rolled(x):
    return alax.fori_loop(0, 200, lambda i, c: c * 2.0 + 1.0, x)

  def big_straight_line(x):
    return anp.sum(anp.stack([anp.sin(x)] * 300))

  for fn in (short, rolled, big_straight_line):
    assert not _unrolled_warnings(arrax.jit(fn), anp.ones(3))
  # A Python loop around a jitted call is not unrolled into it.
  g = arrax.jit(lambda x: x + 1.0)

  def outer_loop():
    for i in range(300):
      g(anp.ones(i % 7 + 1))

  assert not _unrolled_warnings(outer_loop)


def test_unrolled_loop_threshold_is_configurable():
  def f(x):
    for _ in range(30):
      x = x * 2.0
    return x

  old = arrax.config.read("arrax_loop_unroll_warning_threshold")
  try:
    arrax.config.update("arrax_loop_unroll_warning_threshold", 16)
    assert len(_unrolled_warnings(arrax.make_jaxpr(f), 1.0)) == 1
    arrax.config.update("arrax_loop_unroll_warning_threshold", 0)
    assert not _unrolled_warnings(arrax.make_jaxpr(f), 1.0)
  finally:
    arrax.config.update("arrax_loop_unroll_warning_threshold", old)
