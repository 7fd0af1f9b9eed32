"""jax.stages (Wrapped, Traced, Lowered, Compiled, ArgInfo, CompilerOptions) against JAX 0.10.2:
what each stage reports and how the compiled executable behaves."""
import jax
import jax.stages  # noqa: F401
import pytest

import arrax
from tests.oracle import assert_prints_like_jax

PRELUDE = """
st = jax.stages
f = jax.jit(lambda x, y=1: (x * y, {'a': x}))
t = f.trace(jnp.ones(3), 2.)
l = t.lower()
c = l.compile()
"""

CASES = {
    "types": "print(type(t).__name__, type(l).__name__, type(c).__name__, isinstance(t, st.Traced), isinstance(l, st.Lowered), isinstance(c, st.Compiled), isinstance(f, st.Wrapped))",
    "traced_jaxpr": "print(t.jaxpr)",
    "traced_info": "print(t.out_info); print(t.args_info); print(t.fun_name); print(t.out_avals)",
    "lowered_info": "print(l.args_info, l.out_info)",
    "compiled_args_info": "print(c.args_info)",
    "arg_info": "a = t.args_info[0][0]; print(type(a).__name__, a.shape, a.dtype, a.donated, a)",
    "hlo": """
      print("HloModule" in l.compiler_ir('hlo').as_hlo_text(), "HloModule" in l.as_text('hlo'))
      print(type(l.compiler_ir()).__name__, type(l.compiler_ir('stablehlo')).__name__)
    """,
    # (the HLO instructions are named from the program's locations, as JAX names them)
    "hlo_text": """
      h = jax.jit(lambda x, y: jnp.sum(jnp.dot(x, y) + 1.0, axis=0))
      print(h.lower(jnp.ones((2, 3)), jnp.ones((3, 4))).compiler_ir('hlo').as_hlo_text())
    """,
    "cost_analysis": """
      ca = c.cost_analysis(); print(type(ca).__name__, "flops" in ca, ca["flops"])
      print(type(l.cost_analysis()).__name__, "flops" in l.cost_analysis())
    """,
    "memory_analysis": "m = c.memory_analysis(); print(m.argument_size_in_bytes, m.output_size_in_bytes)",
    "call_compiled": "print(c(jnp.ones(3), 2.)); print(c(jnp.arange(3.), 3.))",
    "call_compiled_wrong_shape": "c(jnp.ones(4), 2.)",
    "call_compiled_wrong_tree": "c(jnp.ones(3), 2., 5.)",
    "lower_shape_dtype_struct": "print(f.lower(jax.ShapeDtypeStruct((2,), jnp.int32), 3).out_info)",
    "compiler_options_alias": "print(st.CompilerOptions)",
    # keep_unused=False (the default): unused arguments leave the program, not the signature
    "unused_args_pruned": """
      g = jax.jit(lambda x, y, z: x * 2 + z)
      lo = g.lower(jnp.ones(3), jnp.ones(4), 1.0)
      print(lo.as_text()); print(lo.args_info)
      cg = lo.compile()
      print(cg.input_shardings); print(cg.output_shardings)
      print(cg.input_formats); print(cg.output_formats)
      print(cg(jnp.ones(3), jnp.ones(4), 2.0))
      cg(jnp.ones(3), jnp.ones(5), 2.0)
    """,
    "unused_args_kept": """
      g = jax.jit(lambda x, y: x, keep_unused=True)
      print(g.lower(jnp.ones(3), jnp.ones(4)).as_text()); print(g(jnp.ones(2), 3))
    """,
    "unused_args_call_and_donation": """
      g = jax.jit(lambda x, y, z: (z, x + 1), donate_argnums=(0, 1))
      a, b = jnp.ones(3), jnp.ones(4)
      print(g(a, b, 5)); print(a.is_deleted(), b.is_deleted())
      print(jax.jit(lambda x, y: y)(jnp.ones(2), 7.0))
      print(jax.jit(lambda x: 3.0)(jnp.ones(2)))
    """,
    "runtime_executable": "print(type(c.runtime_executable()).__name__)",
    "trace_static": """
      g = jax.jit(lambda x, n: x * n, static_argnums=1)
      tr = g.trace(jnp.ones(2), 3)
      print(tr.jaxpr); print(tr.lower().compile()(jnp.ones(2)))
      h = jax.jit(lambda x, n=2: x * n, static_argnames='n')
      ch = h.lower(jnp.ones(2), n=3).compile()
      print(ch(jnp.ones(2)))
      ch(jnp.ones(2), n=3)
    """,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_stages_like_jax(name):
  assert_prints_like_jax(CASES[name], PRELUDE)


def test_public_names():
  assert {n for n in dir(arrax.stages) if not n.startswith("_")} == {
      n for n in dir(jax.stages) if not n.startswith("_")}


def test_compiled_text_is_optimized_hlo():
  c = arrax.jit(lambda x: x * 2 + 1).lower(arrax.numpy.ones(3)).compile()
  assert "HloModule" in c.as_text()
