"""custom_jvp / custom_vjp / closure_convert / custom_gradient, differentially against JAX: the
same programs run on both libraries and must print the same text (values with dtypes and weak
types, jaxprs), raise the same error classes, and nest with jit, vmap and every AD transform."""

import jax as real_jax
import jax.numpy as real_jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from arrax.test_util import check_grads

from oracle import assert_prints_like_jax, assert_same

PRELUDE = """
@jax.custom_jvp
def f(x, y):
  return jnp.sin(x) * y
@f.defjvp
def f_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  return f(x, y), jnp.cos(x) * tx * y + jnp.sin(x) * ty

@jax.custom_vjp
def g(x, y):
  return jnp.sin(x) * y
def g_fwd(x, y):
  return g(x, y), (jnp.cos(x), jnp.sin(x), y)
def g_bwd(res, ct):
  c, s, y = res
  return (c * ct * y, s * ct)
g.defvjp(g_fwd, g_bwd)
x = jnp.array([0.5, 1.0, 2.0]); y = jnp.array([1.0, -2.0, 3.0])
"""


def _same(code):
  return assert_prints_like_jax(code, PRELUDE)


# ---- jaxpr text -----------------------------------------------------------------------------
JAXPRS = {
    "jvp_call": "print(jax.make_jaxpr(f)(1., 2.))",
    "jvp_grad": "print(jax.make_jaxpr(jax.grad(f))(1., 2.))",
    "jvp_jvp": "print(jax.make_jaxpr(lambda x: jax.jvp(f, (x, 2.), (1., 0.)))(1.))",
    "jvp_jit": "print(jax.make_jaxpr(jax.jit(f))(1., 2.))",
    "jvp_vmap": "print(jax.make_jaxpr(jax.vmap(f))(x, y))",
    "vjp_call": "print(jax.make_jaxpr(g)(1., 2.))",
    "vjp_grad": "print(jax.make_jaxpr(jax.grad(g))(1., 2.))",
    "vjp_jvp_custom_lin": "print(jax.make_jaxpr(lambda x: jax.jvp(g, (x, 2.), (1., 0.)))(1.))",
    "vjp_linearize": "print(jax.make_jaxpr(lambda x: jax.linearize(g, x, 2.)[1](1., 0.))(1.))",
    "vjp_vmap": "print(jax.make_jaxpr(jax.vmap(g))(x, y))",
    "closed_over_const": """
        c = jnp.arange(3.)
        @jax.custom_jvp
        def h(x):
          return jnp.sin(x) * c
        h.defjvps(lambda t, ans, x: jnp.cos(x) * t * c)
        print(jax.make_jaxpr(h)(jnp.ones(3)))
        print(jax.make_jaxpr(jax.grad(lambda x: h(x).sum()))(jnp.ones(3)))
    """,
    "defjvps_add_any": """
        @jax.custom_jvp
        def h(x, y): return x * y
        h.defjvps(lambda t, ans, x, y: t * y, lambda t, ans, x, y: t * x * 3.)
        print(jax.make_jaxpr(jax.grad(h, (0, 1)))(2., 3.))
        print(jax.make_jaxpr(lambda x, y: jax.jvp(h, (x, y), (x, y)))(2., 3.))
    """,
    "nondiff_argnums": """
        @partial(jax.custom_jvp, nondiff_argnums=(0,))
        def app(fn, x):
          return fn(x)
        @app.defjvp
        def app_jvp(fn, primals, tangents):
          return app(fn, *primals), 2. * tangents[0]
        print(jax.make_jaxpr(partial(app, jnp.sin))(1.))
        print(jax.make_jaxpr(jax.grad(partial(app, jnp.sin)))(1.))
    """,
    "logaddexp": """
        print(jax.make_jaxpr(lambda x: jnp.logaddexp(x, 2.))(1.))
        print(jax.make_jaxpr(jax.grad(lambda x: jnp.logaddexp(x, 2.)))(1.))
        print(jax.make_jaxpr(jax.grad(lambda x: jnp.logaddexp2(x, 2.)))(1.))
    """,
    "sinc": "print(jax.make_jaxpr(jnp.sinc)(1.))",
}


@pytest.mark.parametrize("name", sorted(JAXPRS))
def test_jaxpr_text_matches_jax(name):
  _same(JAXPRS[name])


# ---- values under nesting ---------------------------------------------------------------------
NESTING = {
    "grad3": "print(repr(jax.grad(jax.grad(jax.grad(lambda x: fn(x, 2.))))(0.7)))",
    "jit_grad": "print(repr(jax.jit(jax.grad(lambda x, y: fn(x, y).sum()))(x, y)))",
    "grad_jit": "print(repr(jax.grad(jax.jit(lambda x, y: fn(x, y).sum()), 1)(x, y)))",
    "jacrev": "print(repr(jax.jacrev(fn)(x, y)), repr(jax.jacrev(fn, 1)(x, y)))",
    "hessian": "print(repr(jax.hessian(lambda x, y: fn(x, y).sum())(x, y)))",
    "jacrev_jacrev": "print(repr(jax.jacrev(jax.jacrev(lambda x: fn(x, y).sum()))(x)))",
    "vmap_grad": "print(repr(jax.vmap(jax.grad(fn))(x, y)))",
    "grad_vmap": "print(repr(jax.grad(lambda x: jax.vmap(fn)(x, y).sum())(x)))",
    "grad_vmap_unbatched_arg": ("print(repr(jax.grad(lambda s: jax.vmap(fn, (0, None))(x, s)"
                                ".sum())(2.)))"),
    "grad_vmap_unbatched_first": ("print(repr(jax.grad(lambda s: jax.vmap(fn, (None, 0))(s, y)"
                                  ".sum())(0.3)))"),
    "jit_vmap_grad": "print(repr(jax.jit(jax.vmap(jax.grad(fn)))(x, y)))",
    "vmap_jit_grad": "print(repr(jax.vmap(jax.jit(jax.grad(fn)))(x, y)))",
    "grad_jit_vmap": "print(repr(jax.grad(lambda x: jax.jit(jax.vmap(fn))(x, y).sum())(x)))",
    "vmap_vmap_grad": "print(repr(jax.vmap(jax.vmap(jax.grad(fn)))(x[None], y[None])))",
    "vmap": "print(repr(jax.vmap(fn)(x, y)), repr(jax.vmap(fn, (0, None))(x, 2.)))",
    "value_and_grad_pytree": ("print(jax.value_and_grad(lambda d: fn(d['a'], d['b']).sum())"
                              "({'a': x, 'b': y}))"),
}


@pytest.mark.parametrize("which", ["f", "g"])
@pytest.mark.parametrize("name", sorted(NESTING))
def test_nesting_values_match_jax(name, which):
  _same(f"fn = {which}\n" + NESTING[name])


def test_custom_jvp_forward_modes_match_jax():
  _same("""
      fn = f
      print(repr(jax.jvp(fn, (x, y), (y, x))))
      print(repr(jax.jvp(jax.vmap(fn), (x, y), (y, x))))
      print(repr(jax.jacfwd(fn)(x, y)))
      print(repr(jax.jacfwd(jax.jacrev(lambda x: fn(x, y).sum()))(x)))
      print(repr(jax.linearize(fn, x, y)[1](y, x)))
  """)


def test_rule_is_used_not_the_function():
  # A deliberately "wrong" rule shows that differentiation uses the rule.
  _same("""
      @jax.custom_jvp
      def h(x): return jnp.sin(x)
      h.defjvps(lambda t, ans, x: 3. * t)
      @jax.custom_vjp
      def k(x): return jnp.sin(x)
      k.defvjp(lambda x: (k(x), None), lambda res, ct: (5. * ct,))
      print(repr(h(1.)), repr(jax.grad(h)(1.)), repr(k(1.)), repr(jax.grad(k)(1.)))
      print(repr(jax.jit(jax.grad(h))(1.)), repr(jax.jit(jax.grad(k))(1.)))
  """)


# ---- features -------------------------------------------------------------------------------
def test_defjvps_kwargs_symbolic_zeros():
  _same("""
      @jax.custom_jvp
      def h(x, y): return x * y
      h.defjvps(lambda t, ans, x, y: t * y, None)
      print(repr(jax.grad(h)(2., 3.)), repr(jax.grad(h, 1)(2., 3.)))
      @jax.custom_jvp
      def k(x, scale=2.0):
        return jnp.sin(x) * scale
      @k.defjvp
      def k_jvp(primals, tangents):
        x, s = primals; tx, ts = tangents
        return k(x, s), jnp.cos(x) * tx * s + jnp.sin(x) * ts
      print(repr(k(1., scale=3.)), repr(jax.grad(lambda x: k(x, scale=3.))(1.)))
      print(repr(jax.grad(k)(1.)), repr(jax.jit(lambda x: k(x, scale=4.))(1.)))
      @jax.custom_jvp
      def sz(x, y):
        return x * y
      @partial(sz.defjvp, symbolic_zeros=True)
      def sz_jvp(primals, tangents):
        x, y = primals; tx, ty = tangents
        print("zeros:", type(tx).__name__ == "SymbolicZero", type(ty).__name__ == "SymbolicZero")
        out = x * 0. if type(tx).__name__ == "SymbolicZero" else tx * y
        if type(ty).__name__ != "SymbolicZero":
          out = out + x * ty
        return sz(x, y), out
      print(repr(jax.grad(sz)(2., 3.)), repr(jax.grad(sz, 1)(2., 3.)))
      print(repr(jax.jvp(sz, (2., 3.), (1., 1.))))
  """)


def test_custom_jvp_integer_output_gets_float0_tangent():
  _same("""
      @jax.custom_jvp
      def h(x, n):
        return x * n, n
      @h.defjvp
      def h_jvp(p, t):
        (x, n), (tx, tn) = p, t
        return h(x, n), (tx * n, tn)
      out, tan = jax.jvp(h, (2., 3), (1., np.zeros((), [('float0', np.void, 0)])))
      print(repr(tan[0]), np.asarray(tan[1]).dtype == np.zeros((), [('float0', np.void, 0)]).dtype)
      print(repr(jax.grad(lambda x: h(x, 3)[0])(2.)))
  """)


def test_custom_vjp_nondiff_pytree_residuals_none_cotangent():
  _same("""
      @partial(jax.custom_vjp, nondiff_argnums=(0,))
      def app(fn, x, y):
        return fn(x) * y
      def app_fwd(fn, x, y):
        return app(fn, x, y), {"x": x, "pair": (y, jnp.cos(x))}
      def app_bwd(fn, res, ct):
        return (res["pair"][1] * ct * res["pair"][0], None)
      app.defvjp(app_fwd, app_bwd)
      h = partial(app, jnp.sin)
      print(repr(jax.grad(h, (0, 1))(1., 2.)))
      print(jax.make_jaxpr(jax.grad(h))(1., 2.))
      print(repr(jax.jit(jax.grad(h))(1., 2.)), repr(jax.grad(jax.jit(h))(1., 2.)))
      print(repr(jax.vmap(jax.grad(h))(jnp.arange(3.), jnp.ones(3))))
      @jax.custom_vjp
      def pt(d):
        return {"out": d["a"] * d["b"]}
      pt.defvjp(lambda d: (pt(d), (d["a"], d["b"])),
                lambda res, ct: ({"a": ct["out"] * res[1], "b": ct["out"] * res[0]},))
      print(jax.grad(lambda d: pt(d)["out"].sum())({"a": jnp.arange(3.), "b": jnp.ones(3)}))
      k = jax.custom_vjp(lambda x: x * 2.)
      k.defvjp(lambda x: (k(x), None), lambda res, ct: [ct * 3.])   # a list is accepted
      print(repr(jax.grad(k)(1.)))
  """)


def test_closure_convert_and_custom_gradient():
  _same("""
      @partial(jax.custom_vjp, nondiff_argnums=(0,))
      def apply(fn, x, *consts):
        return fn(x)
      def apply_fwd(fn, x, *consts):
        return apply(fn, x, *consts), (x, consts)
      def apply_bwd(fn, res, ct):
        x, consts = res
        _, vjp = jax.vjp(fn, x, *consts)
        return vjp(ct)
      apply.defvjp(apply_fwd, apply_bwd)
      def outer(w, x):
        fn = lambda x: jnp.sin(x * w)
        conv, consts = jax.closure_convert(fn, x)
        return apply(conv, x, *consts)
      print(repr(jax.grad(outer, (0, 1))(0.3, 2.0)))
      print(repr(jax.jit(jax.grad(outer, (0, 1)))(0.3, 2.0)))
      @jax.custom_gradient
      def cg(x):
        return jnp.sin(x), lambda g: (g * 10.,)
      print(repr(cg(1.)), repr(jax.grad(cg)(1.)))
  """)


# ---- errors -------------------------------------------------------------------------------------
BWD_ERRORS = {
    "not_a_tuple": "lambda res, ct: ct * 2.",
    "wrong_length": "lambda res, ct: (ct, ct)",
    "wrong_shape": "lambda res, ct: (jnp.ones(3),)",
    "wrong_structure": "lambda res, ct: ({'a': ct},)",
}


@pytest.mark.parametrize("name", sorted(BWD_ERRORS))
def test_bwd_wrong_structure_is_an_error_like_jax(name):
  code = f"""
      @jax.custom_vjp
      def k(x): return x * 2.
      k.defvjp(lambda x: (k(x), None), {BWD_ERRORS[name]})
      jax.grad(k)(1.)
  """
  assert "raised" in _same(code)


def test_bwd_structure_error_message_names_expected_structure():
  @arrax.custom_vjp
  def k(x, y):
    return x * y
  k.defvjp(lambda x, y: (k(x, y), (x, y)), lambda res, ct: ct)
  with pytest.raises(TypeError, match=r"primal input structure PyTreeDef\(\(\*, \*\)\)"):
    arrax.grad(k)(1., 2.)


@pytest.mark.parametrize("code", [
    # no rule defined
    "h = jax.custom_jvp(lambda x: x)\nh(1.)",
    "h = jax.custom_vjp(lambda x: x)\nh(1.)",
    # forward mode through a custom_vjp
    "jax.jvp(g, (1., 2.), (1., 0.))",
    # rules that return the wrong things
    "h = jax.custom_jvp(lambda x: x)\nh.defjvp(lambda p, t: p[0])\njax.jvp(h, (1.,), (1.,))",
    "h = jax.custom_jvp(lambda x: x)\nh.defjvp(lambda p, t: (p[0], jnp.ones(3)))\n"
    "jax.jvp(h, (1.,), (1.,))",
    "h = jax.custom_jvp(lambda x: x)\nh.defjvp(lambda p, t: (p[0], t[0].astype(jnp.int32)))\n"
    "jax.grad(h)(1.)",
    "h = jax.custom_vjp(lambda x: x)\nh.defvjp(lambda x: x, lambda r, c: (c,))\njax.grad(h)(1.)",
    # keyword-only arguments cannot be resolved to positions
    "@jax.custom_jvp\ndef h(x, *, y): return x * y\nh.defjvps(lambda t, a, x: t)\nh(1., y=2.)",
    # a tracer as a non-differentiable argument of a custom_vjp function
    "h = jax.custom_vjp(lambda n, x: x * n, nondiff_argnums=(0,))\n"
    "h.defvjp(lambda n, x: (h(n, x), None), lambda n, r, c: (c * n,))\n"
    "jax.grad(lambda x: h(x, x))(1.)",
    # defjvps with nondiff_argnums
    "h = jax.custom_jvp(lambda n, x: x, nondiff_argnums=(0,))\nh.defjvps(None)",
])
def test_error_classes_match_jax(code):
  assert "raised" in _same(code)


def test_custom_vjp_closed_over_differentiated_value_is_an_error():
  def outer(z):
    @arrax.custom_vjp
    def k(x):
      return x * z
    k.defvjp(lambda x: (k(x), None), lambda r, c: (c,))
    return k(2.0)
  with pytest.raises(Exception, match="closed-over"):
    arrax.grad(outer)(3.0)


# ---- numpy functions defined with custom_jvp -------------------------------------------------
SPECIAL = np.array([1., -np.inf, np.inf, np.nan, 0., -3.], np.float32)
SPECIAL2 = np.array([2., -np.inf, np.inf, 1., 0., np.inf], np.float32)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_values_and_gradients_at_infinities(name):
  a_fn, r_fn = getattr(anp, name), getattr(real_jnp, name)
  assert_same(a_fn(SPECIAL, SPECIAL2), r_fn(SPECIAL, SPECIAL2))
  for argnums in [0, 1]:
    a = arrax.vmap(arrax.grad(a_fn, argnums))(SPECIAL, SPECIAL2)
    r = real_jax.vmap(real_jax.grad(r_fn, argnums))(SPECIAL, SPECIAL2)
    np.testing.assert_allclose(np.asarray(a), np.asarray(r), rtol=1e-6)
  z1 = np.array([1 + 1j, 2 - 3j, -1j], np.complex64)
  z2 = np.array([0.5j, 3., 2 + 2j], np.complex64)
  assert_same(a_fn(z1, z2), r_fn(z1, z2))
  assert_same(a_fn(1, 2), r_fn(1, 2))
  assert_same(a_fn(np.float16(1), 2.), r_fn(np.float16(1), 2.))


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_check_grads(name):
  check_grads(getattr(anp, name), (np.float32([0.3, -1.2]), np.float32([1.5, 0.1])), 2)


def test_sinc_derivatives_at_zero_match_jax():
  a_fn, r_fn = anp.sinc, real_jnp.sinc
  for _ in range(4):
    a_fn, r_fn = arrax.grad(a_fn), real_jax.grad(r_fn)
    assert_same(a_fn(0.0), r_fn(0.0), rtol=1e-5, atol=1e-6)
    assert_same(a_fn(0.5), r_fn(0.5), rtol=1e-4, atol=1e-5)
  xs = np.array([0., 0.5, 1., -2.5], np.float32)
  assert_same(anp.sinc(xs), real_jnp.sinc(xs))
  assert_same(arrax.vmap(arrax.grad(anp.sinc))(xs), real_jax.vmap(real_jax.grad(real_jnp.sinc))(xs))


def test_check_grads_with_custom_rules():
  @arrax.custom_jvp
  def h(x):
    return anp.sin(x)
  h.defjvps(lambda t, ans, x: anp.cos(x) * t)

  @arrax.custom_vjp
  def k(x):
    return anp.sin(x)
  k.defvjp(lambda x: (k(x), anp.cos(x)), lambda c, ct: (c * ct,))
  x = np.float32([0.2, 1.1])
  check_grads(h, (x,), 2)
  check_grads(k, (x,), 2, modes=("rev",))
  # A wrong custom rule is caught.
  bad = arrax.custom_jvp(lambda x: anp.sin(x))
  bad.defjvps(lambda t, ans, x: 2. * t)
  with pytest.raises(AssertionError):
    check_grads(bad, (x,), 1)
