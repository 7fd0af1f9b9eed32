"""jax.experimental.hijax beyond VJPHiPrimitive (see test_hijax.py): old-style `HiPrimitive`s,
mutable hi types (`MutableHiType`, `AvalQDD`, `cur_qdd`) inside and across `jit`, and the
remaining names, against JAX 0.10.2."""
import dataclasses
import functools
import importlib
import types

import numpy as np
import pytest

import arrax
import jax
from tests.oracle import check, check_all, check_jaxpr, make_with, rand


@functools.cache
def _lib(top):
  """The same hijax definitions written against `top` (jax or arrax)."""
  hjx = importlib.import_module(top.__name__ + ".experimental.hijax")
  cur_qdd = importlib.import_module(top.__name__ + ".experimental").cur_qdd
  jnp = top.numpy

  class Sin(hjx.HiPrimitive):   # a param, a jvp rule that binds itself
    def abstract_eval(self, x, *, scale):
      return x, set()

    def to_lojax(self, x, *, scale):
      return jnp.sin(x) * scale

    def jvp(self, primals, tangents, *, scale):
      (x,), (t,) = primals, tangents
      return sin_p.bind(x, scale=scale), jnp.cos(x) * t * scale
  sin_p = Sin("my_sin")

  class Scale(hjx.HiPrimitive):   # linear: jvp binds itself on the tangent; a transpose rule
    def abstract_eval(self, x, *, c):
      return x, set()

    def to_lojax(self, x, *, c):
      return x * c

    def jvp(self, primals, tangents, *, c):
      return scale_p.bind(*primals, c=c), scale_p.bind(*tangents, c=c)

    def transpose(self, ct, x, *, c):
      return [scale_p.bind(ct, c=c)]
  scale_p = Scale("my_scale")

  class Split(hjx.HiPrimitive):   # several results
    multiple_results = True

    def abstract_eval(self, x):
      return [x, x], set()

    def to_lojax(self, x):
      return [x + 1, x * x]

    def jvp(self, primals, tangents):
      (x,), (t,) = primals, tangents
      return split_p.bind(x), [t, 2 * x * t]
  split_p = Split("my_split")

  class Bare(hjx.HiPrimitive):   # no rules beyond abstract_eval
    def abstract_eval(self, x):
      return x, set()
  bare_p = Bare("bare")

  # ---- a mutable box whose type state is the avals of what it holds
  @dataclasses.dataclass(frozen=True)
  class BoxState:
    avals: tuple

  class BoxTy(hjx.MutableHiType):
    def __hash__(self):
      return hash(BoxTy)

    def __eq__(self, o):
      return isinstance(o, BoxTy)

    def str_short(self, short_dtypes=False, **_):
      return "MyBox"

    def lo_ty_qdd(self, st):
      return list(st.avals)

    def new_from_loval(self, st, *vals):
      return MyBox(list(vals))

    def read_loval(self, st, b):
      return list(b.items)

    def update_from_loval(self, st, b, *vals):
      b.items[:] = vals

    def to_tangent_aval(self):
      return BoxTy()

  class MyBox:
    def __init__(self, items):
      self.items = items

    def cur_qdd(self):
      return BoxState(tuple(top.typeof(x) for x in self.items))
  hjx.register_hitype(MyBox, lambda b: BoxTy())

  class NewBox(hjx.HiPrimitive):
    def abstract_eval(self):
      return hjx.AvalQDD(BoxTy(), BoxState(())), set()

    def to_lojax(self):
      return MyBox([])
  new_p = NewBox("new_box")

  class BoxSet(hjx.HiPrimitive):
    multiple_results = True

    def abstract_eval(self, box_ty, *xs):
      box_ty.mutable_qdd.update(BoxState(tuple(xs)))
      return [], set()

    def to_lojax(self, b, *xs):
      b.items[:] = xs
      return []
  set_p = BoxSet("box_set")

  class BoxGet(hjx.HiPrimitive):
    multiple_results = True

    def abstract_eval(self, box_ty, *, avals):
      return list(avals), set()

    def to_lojax(self, b, *, avals):
      return list(b.items)
  get_p = BoxGet("box_get")

  def get(b):
    return get_p.bind(b, avals=cur_qdd(b).avals)

  # ---- an immutable pair type (as flax's hijax variables), made and read by VJPHiPrimitives
  class PairTy(hjx.HiType):
    def __init__(self, a, b):
      self.a, self.b = a, b

    def __hash__(self):
      return hash((self.a, self.b))

    def __eq__(self, o):
      return isinstance(o, PairTy) and (self.a, self.b) == (o.a, o.b)

    def str_short(self, short_dtypes=False, **_):
      return f"Pair({self.a.str_short()},{self.b.str_short()})"

    def lo_ty(self):
      return [self.a, self.b]

    def lower_val(self, p):
      return [p.a, p.b]

    def raise_val(self, a, b):
      return Pair(a, b)

    # (a tracer of this type answers indexing and `+` with these, as flax's variables do)
    def _getitem(self, tracer, idx):
      return first(tracer)[idx]

    def _add(self, tracer, other):
      return first(tracer) + other

  class Pair:
    def __init__(self, a, b):
      self.a, self.b = a, b
  hjx.register_hitype(Pair, lambda p: PairTy(top.typeof(p.a), top.typeof(p.b)))

  class First(hjx.VJPHiPrimitive):
    def __init__(self, ty):
      self.in_avals, self.out_aval, self.params = (ty,), ty.a, {}
      super().__init__()

    def expand(self, p):
      return p.a

  class MakePair(hjx.VJPHiPrimitive):
    def __init__(self, a, b):
      self.in_avals, self.out_aval, self.params = (a, b), PairTy(a, b), {}
      super().__init__()

    def expand(self, a, b):
      return Pair(a, b)

  def first(p):
    return First(top.typeof(p))(p)

  def mk(a, b):
    return MakePair(top.typeof(a), top.typeof(b))(a, b)

  return types.SimpleNamespace(**locals())


def _case(make):
  return lambda top: make(top, _lib(top))


def _check(make, *args, **kw):
  return check(_case(make), *args, build=make_with("top"), **kw)


def test_hi_primitive():
  x = rand((2, 3), seed=1)
  sin = lambda L: lambda x: L.sin_p.bind(x, scale=2.0)
  check_all([
      ("eager/jit", lambda: _check(lambda top, L: sin(L), x, jit=True)),
      ("0-d", lambda: _check(lambda top, L: sin(L), np.float32(0.5), jit=True)),
      ("jvp", lambda: _check(lambda top, L: lambda x: top.jvp(sin(L), (x,), (x + 1,)), x,
                             jit=True)),
      ("grad", lambda: _check(lambda top, L: top.grad(lambda x: sin(L)(x).sum()), x, jit=True)),
      ("linearize", lambda: _check(
          lambda top, L: lambda x: top.linearize(sin(L), x)[1](x), x)),
      ("grad of linear (transpose)", lambda: _check(
          lambda top, L: top.grad(lambda x: (L.scale_p.bind(x, c=3.0) ** 2).sum()), x,
          jit=True)),
      ("linear_transpose", lambda: _check(
          lambda top, L: lambda x: top.linear_transpose(
              lambda y: L.scale_p.bind(y, c=-2.0), x)(x), x)),
      ("multiple results", lambda: _check(lambda top, L: L.split_p.bind, x, jit=True)),
      ("grad multiple results", lambda: _check(
          lambda top, L: top.grad(lambda x: sum(o.sum() for o in L.split_p.bind(x))), x,
          jit=True)),
      ("in cond", lambda: _check(lambda top, L: top.grad(lambda x: top.lax.cond(
          x.sum() > 0, lambda x: sin(L)(x), lambda x: x, x).sum()), x, jit=True)),
      ("in scan", lambda: _check(lambda top, L: lambda x: top.lax.scan(
          lambda c, _: (sin(L)(c), None), x, None, length=2)[0], x, jit=True)),
      ("grad in fori_loop", lambda: _check(lambda top, L: top.grad(lambda x: top.lax.fori_loop(
          0, 2, lambda i, c: sin(L)(c), x).sum()), x, jit=True)),
      ("vmap: no batching rule", lambda: _check(lambda top, L: top.vmap(sin(L)), x)),
      ("no to_lojax", lambda: _check(lambda top, L: L.bare_p.bind, x)),
      ("no jvp", lambda: _check(lambda top, L: top.grad(lambda x: L.bare_p.bind(x).sum()), x)),
  ])


def test_hi_primitive_jaxprs():
  x = rand((3,), seed=2)
  check_all([
      ("plain", lambda: check_jaxpr(_case(lambda top, L: lambda x: L.sin_p.bind(x, scale=2.0)),
                                    x, build=make_with("top"))),
      ("jit", lambda: check_jaxpr(_case(
          lambda top, L: top.jit(lambda x: L.split_p.bind(x)[1])), x, build=make_with("top"))),
      ("jvp", lambda: check_jaxpr(_case(lambda top, L: lambda x: top.jvp(
          lambda x: L.scale_p.bind(x, c=2.0), (x,), (x,))), x, build=make_with("top"))),
  ])


def _box_program(top, L):
  """A box made inside the function, its type state changing (f32 -> (f32, i32))."""
  def f(x):
    b = L.new_p.bind()
    L.set_p.bind(b, x)
    (y,) = L.get(b)
    L.set_p.bind(b, y, y.astype("int32"))
    u, v = L.get(b)
    return u * 2 + v
  return f


def test_mutable_box_inside():
  x = rand((3,), seed=3) * 5
  check_all([
      ("eager/jit", lambda: _check(_box_program, x, jit=True)),
      ("jaxpr", lambda: check_jaxpr(_case(_box_program), x, build=make_with("top"))),
      ("nested jit", lambda: _check(lambda top, L: top.jit(lambda x: _box_program(top, L)(x)),
                                    x, jit=True)),
  ])


def test_cur_qdd():
  for top in (jax, arrax):
    L = _lib(top)
    b = L.MyBox([top.numpy.ones(3), top.numpy.int8(2)])
    assert str(top.experimental.cur_qdd(b)) == str(_lib(jax).BoxState(
        (jax.typeof(jax.numpy.ones(3)), jax.typeof(jax.numpy.int8(2)))))
  # states while tracing (make_jaxpr and jit) are the same
  results = {}
  for top in (jax, arrax):
    L = _lib(top)
    seen = []

    def f(x, L=L, top=top, seen=seen):
      b = L.new_p.bind()
      seen.append(str(top.experimental.cur_qdd(b)))
      L.set_p.bind(b, x, x.astype("int32"))
      seen.append(str(top.experimental.cur_qdd(b)))
      return L.get(b)[1]
    top.make_jaxpr(f)(np.ones(2, np.float32))
    top.jit(lambda x: f(x))(np.ones(2, np.float32))
    results[top.__name__] = seen
  assert results["arrax"] == results["jax"]
  assert len(results["jax"]) == 4


def _outer(top, L, x):
  """A box made outside passed into jit, read, and set to a new type inside."""
  b = L.MyBox([x])

  @top.jit
  def f(b, y):
    v = L.get(b)[0]
    L.set_p.bind(b, v + y, (v * 2).astype("int32"))
    return v.sum()
  s1 = f(b, 1.0)
  s2 = f(b, 2.0)   # (a new type state on entry: traced again)
  return [s1, s2, *b.items, str(top.experimental.cur_qdd(b))]


def test_mutable_box_into_jit():
  x = rand((3,), seed=4)
  j = _outer(jax, _lib(jax), jax.numpy.asarray(x))
  a = _outer(arrax, _lib(arrax), arrax.numpy.asarray(x))
  assert a[-1] == j[-1]
  assert len(a) == len(j)
  for u, v in zip(a[:-1], j[:-1]):
    assert u.dtype == v.dtype and u.shape == v.shape
    np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-6)


def test_hi_values_across_jit():
  x = rand((3,), seed=5)
  pair = lambda top, L, x: L.Pair(top.numpy.asarray(x), top.numpy.asarray(x) * 2)
  check_all([
      ("in", lambda: _check(lambda top, L: lambda x: top.jit(lambda p: L.first(p) + 1)(
          pair(top, L, x)), x)),
      ("out", lambda: _check(lambda top, L: lambda x: L.first(
          top.jit(lambda x: L.mk(x.astype("int32"), x))(x)), x)),
      ("in and out", lambda: _check(lambda top, L: lambda x: L.first(top.jit(
          lambda p: L.mk(L.first(p) * 3, L.first(p)))(pair(top, L, x))), x)),
      ("inside", lambda: _check(lambda top, L: lambda x: L.first(L.mk(x, x)) - 1, x,
                                jit=True)),
  ])
  check_all([
      ("aval operators", lambda: _check(lambda top, L: lambda x: top.jit(
          lambda p: (p[1:], p + 1.0))(pair(top, L, x)), x)),
      ("aval attributes", lambda: _check(lambda top, L: lambda x: top.jit(
          lambda p: L.first(p) + len(str(p.b)))(pair(top, L, x)), x)),
  ])
  texts = [str(top.make_jaxpr(lambda p, L=_lib(top): L.first(p) + 1)(pair(top, _lib(top), x)))
           for top in (jax, arrax)]
  assert texts[0] == texts[1] and "a:Pair(float32[3],float32[3])" in texts[1]


def test_names():
  from arrax.experimental import hijax as ahjx
  from jax.experimental import hijax as jhjx
  assert sorted(n for n in dir(jhjx) if not n.startswith("_")) == sorted(
      n for n in dir(ahjx) if not n.startswith("_"))
  for top, hjx in ((jax, jhjx), (arrax, ahjx)):
    class MyEff:
      pass
    hjx.control_flow_allowed_effects.add_type(MyEff)
    assert hjx.control_flow_allowed_effects.contains(MyEff())
    assert not hjx.control_flow_allowed_effects.contains(object())
    r = top.new_ref(top.numpy.arange(6.0))
    assert not isinstance(r, hjx.TransformedRef)
    q = hjx.AvalQDD(hjx.ShapedArray((2,), np.float32), None)
    assert q.has_qdd and q.is_high and q == hjx.AvalQDD(hjx.ShapedArray((2,), np.float32), None)
    with pytest.raises(AttributeError):
      q.qdd = 1
  # ref views (arrax's `ref.at[...]`; JAX 0.10.2's eager Ref.at raises NotImplementedError)
  def view(x):
    r = arrax.new_ref(x)
    assert isinstance(r.at[1:3], ahjx.TransformedRef)
    return r[...]
  arrax.make_jaxpr(view)(np.ones(4, np.float32))


def test_primal_tangent_dtype_and_earray():
  out = {}
  for top in (jax, arrax):
    ex = importlib.import_module(top.__name__ + ".experimental")
    dt = ex.primal_tangent_dtype(top.numpy.float32, top.numpy.bfloat16)
    named = ex.primal_tangent_dtype("int8", np.float32, name="x")
    aval = top.core.ShapedArray((3,), dt)
    e = ex.EArray(aval, top.numpy.arange(3.0))
    out[top.__name__] = [
        repr(dt), str(dt), dt.primal_dtype, dt.tangent_dtype, dt.name, repr(named),
        named.primal_dtype, top.numpy.issubdtype(dt, top.dtypes.extended),
        dt == ex.primal_tangent_dtype(np.float32, "bfloat16"), dt == named,
        hash(dt) == hash(ex.primal_tangent_dtype(np.float32, "bfloat16")),
        str(aval), repr(e), e.shape, str(e.dtype), e.ndim, e.size, len(e),
        str(top.typeof(e)), repr(e.copy())]
    with pytest.raises(TypeError):
      len(ex.EArray(top.core.ShapedArray((), dt), top.numpy.float32(1)))
    with pytest.raises(AttributeError):
      dt.name = "y"
  assert out["arrax"] == out["jax"]
