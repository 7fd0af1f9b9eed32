"""jax.debug (print, log, callback, effects), jax.effects_barrier: the printed output matches
JAX 0.10.2 line for line, eagerly and under jit, vmap, grad, scan, cond, while and remat."""
import functools
import inspect
import io
import logging

import jax
import numpy as np
import pytest

import arrax
from tests.oracle import assert_prints_like_jax

PRELUDE = """
x = jnp.arange(3.)
def g(x):
  jax.debug.print("g x={}", x)
  y = jnp.sin(x)
  jax.debug.print("g y={}", y)
  return y
def body(c, xi):
  jax.debug.print("scan c={} x={}", c, xi)
  return c + xi, c
def wbody(c):
  jax.debug.print("while c={}", c)
  return c + 1
def tf(x):
  jax.debug.print("T {}", x)
  return x
def ff(x):
  jax.debug.print("F {}", x)
  return -x
"""

CASES = {
    "eager": 'jax.debug.print("x={x} y={}", 1.5, x=x)',
    "jit": 'jax.jit(lambda x: jax.debug.print("x={}", x))(x)',
    "format_spec": 'jax.jit(lambda x: jax.debug.print("x={:.2f} {}", x[0], x.astype(jnp.int32)))(x)',
    "vmap": 'jax.vmap(lambda x: jax.debug.print("v={}", x))(x)',
    "vmap_unbatched_arg": 'jax.vmap(lambda x, y: jax.debug.print("v={} {}", x, y), in_axes=(0, None))(x, 2.)',
    "jit_vmap": 'jax.jit(jax.vmap(lambda x: jax.debug.print("vj={}", x)))(x)',
    "nested_vmap": 'jax.vmap(jax.vmap(lambda x: jax.debug.print("nv={}", x)))(jnp.arange(4.).reshape(2, 2))',
    "vmap_axis1": 'jax.vmap(lambda x: jax.debug.print("row {}", x), in_axes=1)(jnp.arange(6.).reshape(2, 3))',
    "grad": "print(jax.grad(g)(1.))",
    "jit_grad": "print(jax.jit(jax.grad(g))(1.))",
    "vjp": "y, f = jax.vjp(g, 1.); print(f(1.))",
    "jvp": "print(jax.jvp(g, (1.,), (1.,)))",
    "linearize": "y, f = jax.linearize(g, 1.); print(f(2.))",
    "vmap_grad": "print(jax.vmap(jax.grad(g))(x))",
    "hessian": "print(jax.hessian(g)(1.))",
    "scan": "print(jax.lax.scan(body, 0., x))",
    "jit_scan": "print(jax.jit(lambda x: jax.lax.scan(body, 0., x))(x))",
    "scan_grad": "print(jax.grad(lambda x: jax.lax.scan(body, 0., x)[0])(x))",
    "scan_reverse": "print(jax.lax.scan(body, 0., x, reverse=True))",
    "vmap_scan": "print(jax.vmap(lambda x: jax.lax.scan(body, 0., x))(jnp.ones((2, 2))))",
    "cond": "print(jax.lax.cond(True, tf, ff, 1.))",
    "jit_cond": "print(jax.jit(lambda p, x: jax.lax.cond(p, tf, ff, x))(False, 1.))",
    "vmap_cond": "print(jax.vmap(lambda p, x: jax.lax.cond(p, tf, ff, x))(jnp.array([True, False]), jnp.array([1., 2.])))",
    "switch": "print(jax.jit(lambda i, x: jax.lax.switch(i, [tf, ff, tf], x))(1, 3.))",
    "while": "print(jax.lax.while_loop(lambda c: c < 3, wbody, 0))",
    "jit_while": "print(jax.jit(lambda: jax.lax.while_loop(lambda c: c < 3, wbody, 0))())",
    "vmap_while": "print(jax.vmap(lambda c: jax.lax.while_loop(lambda c: c < 3, wbody, c))(jnp.array([0, 1])))",
    "while_cond_prints": """
      def wcond(c):
        jax.debug.print("cond {}", c)
        return c < 3
      print(jax.jit(lambda: jax.lax.while_loop(wcond, wbody, 0))())
      print(jax.lax.while_loop(wcond, wbody, 1))
    """,
    "ordered_while_cond_prints": """
      def wcond(c):
        jax.debug.print("ocond {}", c, ordered=True)
        return c < 2
      def obody(c):
        jax.debug.print("obody {}", c, ordered=True)
        return c + 1
      print(jax.jit(lambda: jax.lax.while_loop(wcond, obody, 0))())
    """,
    "fori": 'print(jax.lax.fori_loop(0, 3, lambda i, c: (jax.debug.print("fori {i} {c}", i=i, c=c), c + i)[1], 0))',
    "ordered": 'jax.jit(lambda x: [jax.debug.print("o{} {}", i, x + i, ordered=True) for i in range(5)])(x)',
    "ordered_scan": 'jax.jit(lambda x: jax.lax.scan(lambda c, xi: (jax.debug.print("os {}", xi, ordered=True), (c, None))[1], 0., x))(x)',
    "ordered_vmap": 'jax.vmap(lambda x: jax.debug.print("ov {}", x, ordered=True))(x)',
    "ordered_two_call": 'jax.jit(lambda x: jax.debug.print(ordered=True)("two {}", x))(x)',
    "mixed_ordered_callbacks": """
      def f(x):
        jax.debug.print("p1 {}", x, ordered=True)
        jax.debug.callback(lambda a: print("cb", a), x * 2, ordered=True)
        jax.debug.print("p2 {}", x + 1, ordered=True)
      jax.jit(f)(1.)
      f(2.)
    """,
    "callback_kwargs_static": 'jax.jit(lambda x: jax.debug.callback(lambda a, s, b=None: print("cb", a, s, b), x, "static", b=x[0]))(x)',
    "callback_two_call": 'jax.debug.callback(ordered=True)(print, x, "static")',
    "callback_vmap": 'jax.vmap(lambda x: jax.debug.callback(lambda a: print("cbv", a), x))(x)',
    "callback_grad": 'print(jax.grad(lambda x: (jax.debug.callback(lambda a: print("cbg", a), x), x ** 2)[1])(3.))',
    "callback_receives_arrays": 'jax.jit(lambda x: jax.debug.callback(lambda a: print(a.dtype, a.shape, a.sum()), x))(jnp.ones((2, 2), jnp.int8))',
    "dtypes": 'jax.jit(lambda: jax.debug.print("{} {} {} {}", jnp.int8(3), jnp.array([True, False]), jnp.array(1+2j, jnp.complex64), jnp.array(np.nan)))()',
    "uint_f16_bf16": 'jax.debug.print("{} {} {}", jnp.uint8(200), jnp.float16(1.5), jnp.ones(2, jnp.bfloat16))',
    "inf_nan": 'jax.jit(lambda x: jax.debug.print("{}", x / 0.))(jnp.array([-1., 0., 1.]))',
    "pytree": 'jax.debug.print("{a} {b}", a={"k": x}, b=(x[0], 2))',
    "pytree_jit": 'jax.jit(lambda x: jax.debug.print("{a[k]} {b[1]}", a={"k": x}, b=(x[0], 2)))(x)',
    "scalar_and_empty": 'jax.jit(lambda: jax.debug.print("{} {}", jnp.float32(2), jnp.zeros((0, 2))))()',
    "large": 'jax.debug.print("{}", jnp.arange(2000.))',
    "print_options": """
      with np.printoptions(precision=2):
        jax.jit(lambda x: jax.debug.print("{}", x / 3))(x)
      jax.jit(lambda x: jax.debug.print("{}", x / 7))(x)
    """,
    "no_placeholders": 'jax.debug.print("no ph", x, 3, "s", skip_format_check=True)',
    "unused_positional": 'jax.debug.print("{}", 1, 2)',
    "unused_keyword": 'jax.debug.print("{a}", a=1, b=2)',
    "missing_argument": 'jax.debug.print("{} {}", 1)',
    "two_call_extra_args": 'jax.debug.print(ordered=True)(1, 2)',
    "two_call_unexpected": 'jax.debug.print(None, 1)',
    "callback_not_callable": "jax.debug.callback(1, 2)",
    "callback_two_call_unexpected": "jax.debug.callback(None, 1)",
    "remat": 'print(jax.make_jaxpr(jax.checkpoint(lambda x: (jax.debug.print("{}", x), jnp.sin(x))[1]))(1.))',
    "remat_grad": 'jax.grad(jax.checkpoint(lambda x: (jax.debug.print("remat {}", x), jnp.sin(x))[1]))(1.)',
    "jaxpr_print": 'print(jax.make_jaxpr(lambda x: jax.debug.print("x={}", x, ordered=True))(x))',
    "jaxpr_grad": 'print(jax.make_jaxpr(jax.grad(lambda x: (jax.debug.print("{}", x), x * 2)[1]))(1.))',
    "jaxpr_vmap": 'print(jax.make_jaxpr(jax.vmap(lambda x: jax.debug.print("{}", x)))(x))',
    "custom_jvp": """
      @jax.custom_jvp
      def f(x):
        jax.debug.print("primal {}", x)
        return x * 2
      @f.defjvp
      def f_jvp(p, t):
        jax.debug.print("jvp {} {}", p[0], t[0])
        return f(p[0]), t[0] * 2
      print(jax.grad(f)(1.), jax.jit(jax.grad(f))(2.))
    """,
    "custom_vjp": """
      @jax.custom_vjp
      def f(x):
        jax.debug.print("primal {}", x)
        return x * 2
      def fwd(x):
        jax.debug.print("fwd {}", x)
        return f(x), x
      def bwd(r, g):
        jax.debug.print("bwd {} {}", r, g)
        return (g * 2,)
      f.defvjp(fwd, bwd)
      print(jax.grad(f)(1.), jax.jit(jax.grad(f))(2.))
    """,
    "effects_barrier": 'jax.jit(lambda x: jax.debug.print("b {}", x))(x); jax.effects_barrier(); print("after")',
    "print_in_pure_callback_scan": """
      print(jax.jit(lambda x: jax.lax.scan(lambda c, xi: (jax.debug.print("c {}", c), (c + xi, None))[1], 0., x)[0])(x))
    """,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_debug_prints_like_jax(name):
  assert_prints_like_jax(CASES[name], PRELUDE)


def test_debug_x64(x64):
  assert_prints_like_jax('jax.jit(lambda x: jax.debug.print("{} {}", x, x.dtype))(jnp.arange(3.))',
                         PRELUDE)


class _Records(logging.Handler):
  def __init__(self):
    super().__init__()
    self.records = []

  def emit(self, record):
    self.records.append(record)


def _log_records(lib, logger_name):
  handler = _Records()
  logger = logging.getLogger(logger_name)
  logger.addHandler(handler)
  old = logger.level
  logger.setLevel(logging.INFO)
  try:
    x = lib.numpy.arange(3.)
    lib.debug.log("logged {}", x)
    lib.jit(lambda x: lib.debug.log("jit {y}", y=x * 2))(x)
    lib.vmap(lambda x: lib.debug.log("v {}", x))(x)
  finally:
    logger.removeHandler(handler)
    logger.setLevel(old)
  return [(r.getMessage(), r.levelname, r.filename) for r in handler.records]


def test_debug_log():
  want = _log_records(jax, "jax._src.debugging")
  got = _log_records(arrax, "arrax._src.debugging")
  assert got == want and len(want) == 5


def test_debug_log_nothing_on_stdout(capsys):
  logging.getLogger("arrax._src.debugging").setLevel(logging.WARNING)
  arrax.debug.log("quiet {}", 1)
  assert capsys.readouterr().out == ""


def test_callback_exception_propagates():
  def boom(x):
    raise KeyError("boom")
  for lib in (jax, arrax):
    with pytest.raises(KeyError):
      lib.debug.callback(boom, 1.)
  with pytest.raises(Exception) as ej:
    jax.jit(lambda x: jax.debug.callback(boom, x))(1.)
  with pytest.raises(Exception) as ea:
    arrax.jit(lambda x: arrax.debug.callback(boom, x))(1.)
  assert type(ea.value).__name__ == type(ej.value).__name__
  assert "KeyError" in str(ea.value)


def test_call_counts_under_jit_cache():
  for lib in (jax, arrax):
    calls = []
    f = lib.jit(lambda x: lib.debug.callback(lambda a: calls.append(float(a)), x))
    f(1.)
    f(2.)
    f(3.)
    assert calls == [1., 2., 3.]


def _params(f):
  return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]


def test_debug_names():
  assert str(arrax.debug.DebugEffect()) == "Debug"
  assert str(arrax.debug.OrderedDebugEffect()) == "OrderedDebug"
  for name in ("print", "log", "callback"):
    assert _params(getattr(arrax.debug, name)) == _params(getattr(jax.debug, name)), name
  assert arrax.effects_barrier() is None


def test_disable_jit_prints():
  code = """
  with jax.disable_jit():
    jax.jit(lambda x: jax.debug.print("dj {}", x))(x)
    print(jax.lax.scan(body, 0., x))
  """
  assert_prints_like_jax(code, PRELUDE)


# ---- jax.debug.breakpoint with commands from a fake stdin ------------------------------------
def _bp_session(lib, fn, cmds, *args, **kw):
  out = io.StringIO()
  try:
    result = fn(lib, *args, stdin=io.StringIO(cmds), stdout=out, **kw)
  except SystemExit:
    result = "exit"
  return out.getvalue().replace("jax.debug", "LIB.debug").replace("arrax.debug", "LIB.debug"), \
      (np.asarray(result).tolist() if result not in (None, "exit") else result)


def _bp_inner(lib, x, stdin, stdout):
  y = lib.numpy.sin(x)
  label = "hello"  # noqa: F841 (inspected by the debugger)
  lib.debug.breakpoint(stdin=stdin, stdout=stdout)
  return y * 2


def _bp_eager(lib, x, stdin, stdout):
  return _bp_inner(lib, lib.numpy.asarray(x), stdin, stdout)


def _bp_jit(lib, x, stdin, stdout):
  return lib.jit(functools.partial(_bp_inner, lib), static_argnames=("stdin", "stdout"))(
      lib.numpy.asarray(x), stdin=stdin, stdout=stdout)


def _bp_vmap(lib, x, stdin, stdout):
  def f(v):
    lib.debug.breakpoint(stdin=stdin, stdout=stdout)
    return v + 1
  return lib.vmap(f)(lib.numpy.asarray(x))


def _bp_token(lib, x, stdin, stdout):
  def f(v):
    t = lib.debug.breakpoint(stdin=stdin, stdout=stdout, token=v)
    return t + 1
  return lib.jit(f)(lib.numpy.asarray(x, np.float32))


@pytest.mark.parametrize("fn,cmds", [
    (_bp_eager, "p x\np y\np label\npp {'a': y}\nx.shape\nbad_name\nl\nw\nc\n"),
    (_bp_jit, "p y\np type(y).__name__ in ('Array', 'ArrayImpl')\nu\nd\nd\nc\n"),
    (_bp_jit, "p x + 1\nll\nc\n"),
    (_bp_vmap, "p v\nc\np v\nc\n"),
    (_bp_token, "p v * 10\nc\n"),
])
def test_breakpoint_session(fn, cmds):
  x = np.arange(3.) if fn is not _bp_token else np.float32(2.)
  want, got = [_bp_session(lib, fn, cmds, x) for lib in (jax, arrax)]   # one calling line
  assert got == want
  assert "Entering jdb:" in got[0]


def test_breakpoint_quit_exits():
  for lib in (jax, arrax):
    with pytest.raises(SystemExit):
      lib.debug.breakpoint(stdin=io.StringIO("q\n"), stdout=io.StringIO())


def test_breakpoint_ordered_and_token_exclusive():
  for lib in (jax, arrax):
    with pytest.raises(ValueError, match="mutually exclusive"):
      lib.debug.breakpoint(ordered=True, token=1.)


def test_cond_without_effects_keeps_the_ordered_token_chain():
  # One token orders every ordered print of the program: a cond between two of them (with no
  # ordered effect of its own) must pass the enclosing token through, not drop it.
  def f(x):
    arrax.debug.print("a {}", x, ordered=True)
    y = arrax.lax.cond(x > 0, lambda z: z + 1, lambda z: z - 1, x)
    arrax.debug.print("b {}", y, ordered=True)
    return y
  assert arrax.jit(f).lower(1.).as_text().count("stablehlo.create_token") == 1
