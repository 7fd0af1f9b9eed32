"""The spec documents' examples (those needing no grad/vmap/random/control flow): each snippet runs
once with `jax`/`jnp` bound to arrax and once to real JAX; the printed text must be identical."""
import contextlib
import io
import textwrap

import jax as real_jax
import jax.numpy as real_jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp

SNIPPETS = {
    "arrays": """
        x = jnp.array([1,2,0,5])
        y = jnp.array([5,2,3,1])
        print('x * 2 = ', x * 2)
        print('x @ y = ', x @ y)
        print('y[:2] = ', y[:2])
        z = jnp.array([[1.,2.,3.5], [4.,5.,6.1]])
        print('Shape of z:', z.shape)
        print('Dtype of z:', z.dtype)
    """,
    "async_means": """
        x = jnp.arange(1024)[:, None]
        y = x @ x.T
        w = (x @ x.T + 1)
        print('Result:', y.mean(), w.mean())
    """,
    "my_function": """
        x = jnp.arange(1024)
        y = jnp.arange(1024) - 512
        def my_function(x, y):
            x = x * y
            x = jnp.minimum(x, 0)
            x = x + y
            return x
        my_function_jit = jax.jit(my_function)
        print(repr(my_function(x, y)[:5]), repr(my_function_jit(x, y)[-5:]))
    """,
    "compile_print": """
        x = jnp.arange(4)
        @jax.jit
        def new_function(x):
            print('Function is compiling. X has shape:', x.shape)
            return x @ x.T
        print('Calling function.')
        new_function(x)
        new_function(x)
    """,
    "retrace_on_shape": """
        @jax.jit
        def compile_func(x):
            print('Compiling with input:', x)
        compile_func(jnp.array([1,2,3]))
        compile_func(jnp.array([4,5]))
        compile_func(jnp.array([4,5,6,7]))
        compile_func(jnp.array([4,5,6,9]))
    """,
    "at_set": """
        @jax.jit
        def f(x):
            return x.at[2].set(1)
        print(repr(f(jnp.array([0, 0, 0]))))
        arr_jnp = jnp.array([1,2,3,4])
        arr_jnp = arr_jnp.at[1].set(0)
        print(arr_jnp)
    """,
    "debug_print": """
        @jax.jit
        def f(x):
            print('Compiling function, this will print once.')
            jax.debug.print('Printing value of {arr} during execution', arr=x)
        f(jnp.array([1,2,3]))
        f(jnp.array([4,5,6]))
    """,
    "where": """
        @jax.jit
        def f(x, y):
            return jnp.where(y == 1, x, 10)
        print(repr(f(jnp.array([1,2,3]), jnp.array([1,0,0]))))
    """,
    "quadratic": """
        @jax.jit
        def quadratic_formula(a, b):
            return (-b + jnp.sqrt(b**2 - 4*a)) / (2*a)
        print(quadratic_formula(1.0, 4.0))
        print(jax.make_jaxpr(lambda x: 2 + jnp.sin(x))(jnp.array(1.0)))
    """,
    "fn_jaxpr": """
        def fn(tuple_arr):
            return jnp.sum(tuple_arr ** 2 - tuple_arr ** 3 - tuple_arr)
        print(fn(jnp.ones(100)))
        fn_compiled = jax.jit(fn)
        print(fn_compiled(jnp.ones(100)))
        print(jax.make_jaxpr(fn_compiled)(jnp.ones(100)))
        def fnc_jax(x1, x2):
            return (jnp.divide(x1,x2) - jnp.exp(x2))*(jnp.sin(jnp.divide(x1,x2)) + jnp.divide(x1,x2) - jnp.exp(x2))
        print(jax.make_jaxpr(fnc_jax)(1.0,1.0))
        print(jax.jit(fnc_jax).lower(1., 1.).as_text())
    """,
    "immutable": """
        arr_jnp = jnp.array([1,2,3,4])
        try:
            arr_jnp[1] = 0
        except TypeError as e:
            print(type(e).__name__, "x.at[idx].set(y)" in str(e).replace("``", ""))
    """,
}


def _run(code, jax_mod, jnp_mod):
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    exec(textwrap.dedent(code), {"jax": jax_mod, "jnp": jnp_mod, "np": np})
  return out.getvalue()


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_spec_snippet_prints_like_jax(name):
  expected = _run(SNIPPETS[name], real_jax, real_jnp)
  actual = _run(SNIPPETS[name], arrax, anp)
  assert actual == expected
