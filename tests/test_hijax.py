"""jax.experimental.hijax: user-defined primitives (VJPHiPrimitive) and value types (HiType)
against JAX 0.10.2: values eagerly and under jit, their rules under jvp/grad/vmap, the staged
jaxprs, and the errors for missing rules."""
import functools
import importlib
import types

import numpy as np
import pytest

import arrax
from tests.oracle import BF16, check, check_all, check_jaxpr, make_with, rand


@functools.cache
def _lib(top):
  """The same hijax definitions written against `top` (jax or arrax)."""
  hjx = importlib.import_module(top.__name__ + ".experimental.hijax")
  jnp = top.numpy

  class Sin(hjx.VJPHiPrimitive):   # jvp, vjp_fwd/vjp_bwd_retval and batch_dim_rule; a param
    def __init__(self, aval, scale):
      self.in_avals = (aval,)
      self.out_aval = aval
      self.params = dict(scale=scale)
      super().__init__()

    def expand(self, x):
      return jnp.sin(x) * self.scale

    def jvp(self, primals, tangents):
      (x,), (t,) = primals, tangents
      return self(x), jnp.cos(x) * hjx.instantiate_zeros(t) * self.scale

    def vjp_fwd(self, nzs, x):
      return self(x), jnp.cos(x)

    def vjp_bwd_retval(self, res, g):
      return (res * g * self.scale,)

    def batch_dim_rule(self, axis_data, dims):
      return dims[0]

  class MulAdd(hjx.VJPHiPrimitive):   # pytree operands and results; accumulator vjp_bwd
    def __init__(self, in_avals):
      self.in_avals = in_avals
      self.out_aval = (in_avals[0]["a"], in_avals[0]["a"])
      self.params = {}
      super().__init__()

    def expand(self, d, c):
      return d["a"] * d["b"] + c, d["a"] - c

    def jvp(self, primals, tangents):
      (d, c), (dt, ct) = primals, tangents
      z = hjx.instantiate_zeros
      return self(d, c), (z(dt["a"]) * d["b"] + d["a"] * z(dt["b"]) + z(ct),
                          z(dt["a"]) - z(ct))

    def vjp_fwd(self, nzs, d, c):
      return self(d, c), (d["a"], d["b"], nzs)

    def vjp_bwd(self, res, g, d_acc, c_acc):
      a, b, nzs = res
      g0, g1 = (hjx.instantiate_zeros(t) for t in g)
      d_acc["a"].accum(g0 * b + g1)
      d_acc["b"].accum(g0 * a)
      if nzs[1]:
        c_acc.accum(g0 - g1)

  class JvpOnly(hjx.VJPHiPrimitive):
    def __init__(self, aval):
      self.in_avals, self.out_aval, self.params = (aval,), aval, {}
      super().__init__()

    def expand(self, x):
      return x * 3

    def jvp(self, primals, tangents):
      return self(primals[0]), self(tangents[0])

  class ExpandOnly(JvpOnly):
    jvp = hjx.VJPHiPrimitive.jvp

  class Scale(hjx.VJPHiPrimitive):   # linear, with a transpose rule taking accumulators
    def __init__(self, a, b):
      self.in_avals, self.out_aval, self.params = (a, b), a, {}
      super().__init__()

    def expand(self, x, y):
      return x * 3 + y

    def transpose(self, ct, x_acc, y_acc):
      if hasattr(x_acc, "accum"):
        x_acc.accum(ct * 3)
      if hasattr(y_acc, "accum"):
        y_acc.accum(ct)

  class NoAvals(hjx.VJPHiPrimitive):
    def __init__(self):
      self.params = {}
      super().__init__()

  class BothBwd(JvpOnly):
    def vjp_bwd(self, *args):
      pass

    def vjp_bwd_retval(self, *args):
      pass

  class Pair:   # a value type with its hi type
    def __init__(self, a, b):
      self.a, self.b = a, b

    def total(self):
      return get_sum(self)

  class PairTy(hjx.HiType):
    def __init__(self, a, b):
      self.a, self.b = a, b

    def __hash__(self):
      return hash((self.a, self.b))

    def __eq__(self, other):
      return isinstance(other, PairTy) and (self.a, self.b) == (other.a, other.b)

    def str_short(self, short_dtypes=False, **_):
      return f"Pair({self.a.str_short()},{self.b.str_short()})"

    def lo_ty(self):
      return [self.a, self.b]

    def lower_val(self, p):
      return [p.a, p.b]

    def raise_val(self, a, b):
      return Pair(a, b)

    first = hjx.aval_property(lambda self: get_first(self))
    total = hjx.aval_method(Pair.total)

  hjx.register_hitype(Pair, lambda p: PairTy(top.typeof(p.a), top.typeof(p.b)))

  class MakePair(hjx.VJPHiPrimitive):
    def __init__(self, a, b):
      self.in_avals, self.out_aval, self.params = (a, b), PairTy(a, b), {}
      super().__init__()

    def expand(self, a, b):
      return Pair(a, b)

  class GetFirst(hjx.VJPHiPrimitive):
    def __init__(self, p):
      self.in_avals, self.out_aval, self.params = (p,), p.a, {}
      super().__init__()

    def expand(self, p):
      return p.a

  class GetSum(hjx.VJPHiPrimitive):
    def __init__(self, p):
      self.in_avals, self.out_aval, self.params = (p,), p.a, {}
      super().__init__()

    def expand(self, p):
      return p.a + p.b

  get_first = lambda p: GetFirst(top.typeof(p))(p)
  get_sum = lambda p: GetSum(top.typeof(p))(p)
  ns = types.SimpleNamespace(**locals())
  ns.sin = lambda x, scale=2.0: Sin(top.typeof(x), scale)(x)
  ns.muladd = lambda d, c: MulAdd(top.tree.map(top.typeof, (d, c)))(d, c)
  ns.jvp_only = lambda x: JvpOnly(top.typeof(x))(x)
  ns.expand_only = lambda x: ExpandOnly(top.typeof(x))(x)
  ns.scale = lambda x, y: Scale(top.typeof(x), top.typeof(y))(x, y)
  ns.make_pair = lambda a, b: MakePair(top.typeof(a), top.typeof(b))(a, b)
  return ns


def _case(make):
  """A case written as make(top, hijax definitions) -> function."""
  return lambda top: make(top, _lib(top))


def _check(make, *args, **kw):
  return check(_case(make), *args, build=make_with("top"), **kw)


SIN_TRANSFORMS = {
    "plain": lambda top, L: L.sin,
    "grad": lambda top, L: top.grad(lambda x: L.sin(x).sum()),
    "jvp": lambda top, L: lambda x: top.jvp(L.sin, (x,), (x * 0.5 + 1,)),
    "vmap": lambda top, L: top.vmap(L.sin),
    "vmap_grad": lambda top, L: top.vmap(top.grad(lambda x: L.sin(x, 0.5).sum())),
    "grad_vmap": lambda top, L: top.grad(lambda x: top.vmap(L.sin)(x).sum()),
    "vjp": lambda top, L: lambda x: top.vjp(L.sin, x)[1](x),
}


@pytest.mark.parametrize("shape,dtype", [((), np.float32), ((2, 3), np.float32),
                                         ((0, 2), np.float32), ((3, 2), BF16)])
def test_vjp_hi_primitive_rules(shape, dtype):
  x = rand(shape, dtype, seed=1)
  cases = [(name, lambda make=make: _check(make, x, jit=True, tol=1e-2 if dtype is BF16 else None))
           for name, make in SIN_TRANSFORMS.items()
           if not (shape == () and name.startswith(("vmap", "grad_vmap")))]
  check_all(cases)


def test_pytree_operands_and_accumulators():
  d = {"a": rand((3,), seed=2), "b": rand((3,), seed=3)}
  c = rand((3,), seed=4)

  def grad_of(select, argnums):
    return lambda top, L: lambda d, c: top.tree.leaves(
        top.grad(lambda d, c: select(L.muladd(d, c)), argnums=argnums)(d, c))
  check_all([
      ("values", lambda: _check(lambda top, L: L.muladd, d, c, jit=True)),
      ("grad both", lambda: _check(grad_of(lambda o: o[0].sum(), (0, 1)), d, c, jit=True)),
      ("grad one output", lambda: _check(grad_of(lambda o: o[1].sum(), 0), d, c, jit=True)),
      ("grad product", lambda: _check(grad_of(lambda o: (o[0] * o[1]).sum(), (0, 1)), d, c)),
      ("jvp zero tangent", lambda: _check(
          lambda top, L: lambda d, c: top.jvp(lambda c: L.muladd(d, c), (c,), (c,)), d, c)),
      ("jvp", lambda: _check(
          lambda top, L: lambda d, c: top.jvp(L.muladd, (d, c), (d, c)), d, c, jit=True)),
  ])


def test_transpose_rule():
  x, y = rand((3,), seed=10), rand((3,), seed=11)
  check_all([
      ("both linear", lambda: _check(
          lambda top, L: lambda x, y: top.linear_transpose(L.scale, x, y)(x), x, y)),
      ("one linear", lambda: _check(
          lambda top, L: lambda x, y: top.linear_transpose(lambda y: L.scale(x, y), y)(x), x, y)),
      ("same operand twice", lambda: _check(
          lambda top, L: lambda x: top.linear_transpose(lambda y: L.scale(y, y), x)(x), x)),
  ])


def test_jaxprs():
  x = rand((3,), seed=5)
  d = {"a": rand((3,), seed=2), "b": rand((3,), seed=3)}
  check_all([
      ("sin", lambda: check_jaxpr(_case(lambda top, L: L.sin), x, build=make_with("top"))),
      ("grad sin", lambda: check_jaxpr(_case(SIN_TRANSFORMS["grad"]), x,
                                       build=make_with("top"))),
      ("grad muladd", lambda: check_jaxpr(
          _case(lambda top, L: top.grad(lambda d, c: L.muladd(d, c)[0].sum())), d, x,
          build=make_with("top"))),
  ])


def test_missing_rules_raise():
  x = rand((3,), seed=6)
  check_all([
      ("no in_avals", lambda: _check(lambda top, L: lambda x: L.NoAvals(), x)),
      ("both bwd", lambda: _check(lambda top, L: lambda x: L.BothBwd(top.typeof(x)), x)),
      ("expand only: jvp", lambda: _check(
          lambda top, L: lambda x: top.jvp(L.expand_only, (x,), (x,)), x)),
      ("expand only: grad", lambda: _check(
          lambda top, L: top.grad(lambda x: L.expand_only(x).sum()), x)),
      ("expand only: values", lambda: _check(lambda top, L: L.expand_only, x, jit=True)),
      ("jvp only: jvp", lambda: _check(
          lambda top, L: lambda x: top.jvp(L.jvp_only, (x,), (x,)), x)),
      ("jvp only: grad", lambda: _check(
          lambda top, L: top.grad(lambda x: L.jvp_only(x).sum()), x)),
      ("vmap without rule", lambda: _check(lambda top, L: top.vmap(L.jvp_only),
                                           rand((2, 3), seed=7))),
  ])


def test_hi_types():
  a, b = rand((3,), seed=8), rand((3,), seed=9)

  def uses(top, L):
    def f(a, b):
      p = L.make_pair(a, b)
      return p.first * p.total(), top.typeof(p).str_short()
    return f

  def staged(top, L):
    def f(a, b):
      p = L.make_pair(a, b)   # a tracer of the hi type: its aval's property and method
      return p.first * p.total()
    return f
  check_all([
      ("eager", lambda: _check(uses, a, b)),
      ("jit, hi values inside", lambda: _check(staged, a, b, eager=False, jit=True)),
      ("jaxpr", lambda: check_jaxpr(_case(staged), a, b, build=make_with("top"))),
      ("typeof", lambda: _check(lambda top, L: lambda a: (
          isinstance(top.typeof(L.Pair(a, a)), top.experimental.hijax.HiType),
          top.typeof(L.Pair(a, a)) == L.PairTy(top.typeof(a), top.typeof(a))), a)),
  ])


def test_helpers():
  import jax
  from arrax.experimental import hijax as ahjx
  from jax.experimental import hijax as jhjx
  x = arrax.numpy.ones(2)
  assert ahjx.instantiate_zeros(x) is x
  z = ahjx.instantiate_zeros(ahjx.Zero(arrax.typeof(x)))
  jz = jhjx.instantiate_zeros(jhjx.Zero(jax.typeof(jax.numpy.ones(2))))
  assert (z.shape, z.dtype, np.asarray(z).tolist()) == (jz.shape, jz.dtype, [0.0, 0.0])
  assert not ahjx.is_undefined_primal(x) and not jhjx.is_undefined_primal(x)
  assert issubclass(ahjx.HiType, ahjx.AbstractValue)
  assert ahjx.AbstractRef is arrax.ref.AbstractRef
  assert set(vars(ahjx)) - {"__name__", "__doc__", "__package__", "__loader__", "__spec__",
                            "__file__", "__cached__", "__builtins__"} <= set(vars(jhjx))
