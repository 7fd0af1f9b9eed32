"""Every code example of the spec documents (/work/shared/seeds): each snippet runs once with
`jax`/`jnp` bound to arrax and once to real JAX; the printed text must be identical.

Where a talk elides a definition the snippet completes it in the simplest faithful way. Random
examples run in the legacy threefry mode the talks used (and restore the default), so their
numbers are the talks' numbers.
"""
import contextlib
import io
import os
import pathlib
import subprocess
import sys
import textwrap

import jax as real_jax
import jax.example_libraries.optimizers  # noqa: F401  (binds real_jax.example_libraries)
import jax.example_libraries.stax  # noqa: F401
import jax.numpy as real_jnp
import numpy as np
import pytest

import arrax
import arrax.example_libraries  # noqa: F401  (binds arrax.example_libraries)
import arrax.numpy as anp
from tests.multidevice import xla_flags

# Not yet runnable (what is missing):
#   * 001 PyTorch and NumPy sides of the spectral-radius comparisons: not JAX code (the JAX side
#     runs, including the (128, 3, 3) batches).
#   * 001 multi-node setup (`jax.lib.xla_extension.get_distributed_runtime_*`,
#     `jax.lib.xla_bridge.register_backend_factory`) and GPU memory preallocation
#     (`XLA_PYTHON_CLIENT_PREALLOCATE`): JAX internals / GPU, outside arrax.
#   * 003 `jit(fnc_jax).lower(1., 1.).compile().as_text()`: arrax's lowering attaches no op names
#     or source locations, so XLA names instructions differently (`exponential.0` for `exp.0`)
#     and prints no metadata or stack-frame tables.
#   * 003 `print(type(arr_jnp))`: the class is arrax's Array, not jaxlib's ArrayImpl (by design).
#   * Not JAX code: timings (`%timeit`, `timeit`; the computations they time are run here),
#     PyTorch/NumPy/C/LLVM code, the pure-Python `create_counter` closure, 001's `maybe_compile`
#     pseudo-code, and 000's illustrative `Tracer` and `IncreaseBrightness` classes.

# Shared by the spectral-radius examples of 001 (legacy threefry mode, as the talk's JAX had).
_SPECTRAL = """
        jax.config.update("jax_threefry_partitionable", False)
        def randn(rng_key, shape, dtype=float):
            rng_key, subkey = jax.random.split(rng_key)
            rands = jax.random.normal(subkey, shape, dtype=dtype)
            return rng_key, rands
        jit_randn = jax.jit(randn, static_argnums=(1, 2))
        def jax_spectral_radius(mat):
            eigvals = jnp.linalg.eigvals(mat)
            spectral_radius = jnp.max(jnp.abs(eigvals))
            return spectral_radius
"""

# The model, optimizer and loss of 001's training examples.
_MLP_SETUP = """
        # The talk's `from jax.example_libraries import stax` / `import optimizers` would import
        # the real module name inside exec, so the snippet reaches them through `jax`.
        stax = jax.example_libraries.stax
        optimizers = jax.example_libraries.optimizers

        rng_key = jax.random.PRNGKey(0)
        input_shape = (2, 2)
        def flatten():
            def init_fun(rng_key, input_shape):
                flattened_size = jnp.prod(jnp.array(list(input_shape)))
                return (flattened_size,), ()
            def apply_fun(params, inputs, **kwargs):
                return inputs.ravel()
            return init_fun, apply_fun
        def build_model(rng_key):
            model_init, model = stax.serial(
                flatten(), stax.Dense(64), stax.Relu, stax.Dense(64), stax.Relu,
                stax.Dense(64), stax.Relu, stax.Dense(1))
            # Handle varying batch sizes.
            model = jax.vmap(model, in_axes=(None, 0))
            rng_key, subkey = jax.random.split(rng_key)
            output_shape, params = model_init(subkey, input_shape)
            assert output_shape == (1,)
            return rng_key, params, model
        def build_opt(params):
            opt_init, update, get_params = optimizers.adam(3e-4)
            opt_state = opt_init(params)
            return opt_state, update, get_params
        rng_key, params, model = build_model(rng_key)
        orig_opt_state, opt_update, get_params = build_opt(params)
        batched_spectral_radius = jax.vmap(jax_spectral_radius)

        def batch_loss(params, batch):
            preds = model(params, batch)
            targets = batched_spectral_radius(batch)
            return jnp.mean(jnp.abs(preds - targets))

        @jax.jit
        def train_batch(step, opt_state, batch):
            params = get_params(opt_state)
            loss, grad = jax.value_and_grad(batch_loss)(params, batch)
            # Conjugate gradient for steepest-descent optimization.
            grad = jax.tree_util.tree_map(jnp.conj, grad)
            opt_state = opt_update(step, grad, opt_state)
            return opt_state, loss

"""

SNIPPETS = {
    # ---- 004, 003 and 000: arrays, jit, make_jaxpr, lowering ----------------------------------
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
        print('This print statement happens **before** the above commands are done.')
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
    # ---- 000: JIT-compilation with JAX ----------------------------------------------------------
    "drop_in_numpy": """
        def quadratic_formula(a, b):
            return (-b + np.sqrt(b**2 - 4*a)) / (2*a)
        print(quadratic_formula(1.0, 4.0))
        def quadratic_formula(a, b):
            return (-b + jnp.sqrt(b**2 - 4*a)) / (2*a)
        print(quadratic_formula(1.0, 4.0))
        print(repr(quadratic_formula(jnp.array([1.0, 2.0]), 4.0)))
    """,
    "grad_vmap_jaxpr": """
        def fun(x):
            return 2 + jnp.sin(x)
        print(jax.make_jaxpr(jax.grad(fun))(jnp.array(1.0)))
        print(repr(jax.jit(jax.vmap(jax.grad(fun)))(jnp.array([1.0, 2.0, 3.0]))))
        print(jax.make_jaxpr(jax.jit(jax.vmap(jax.grad(fun))))(jnp.array([1.0, 2.0, 3.0])))
    """,
    # ---- 001: JAX extended edition --------------------------------------------------------------
    "mutate_eye": """
        x = jnp.eye(2)
        try:
            x[0, 0] = 2
        except TypeError:
            pass
        else:
            raise TypeError('array is mutable')
        x = x.at[0, 0].set(2)
        x = x.at[:, -1].multiply(-3)
        print(repr(x))
    """,
    "randn_keys": """
        jax.config.update("jax_threefry_partitionable", False)
        seed = 0
        rng_key = jax.random.PRNGKey(seed)
        def randn(rng_key, shape, dtype=float):
            rng_key, subkey = jax.random.split(rng_key)
            rands = jax.random.normal(subkey, shape, dtype=dtype)
            return rng_key, rands
        rng_key, rands = randn(rng_key, (2, 3))
        print(repr(rands))
        _, rands = randn(rng_key, (2, 3))
        print(rands)
        rng_key, rands = randn(rng_key, (2, 3))
        print(rands)
        rng_key, rands = randn(rng_key, (2, 3))
        print(rands)
        print(repr(jax.random.split(rng_key, 3)))
        jit_randn = jax.jit(randn, static_argnums=(1, 2))
        randn(rng_key, (100, 100))[1].block_until_ready()
        k, r = jit_randn(rng_key, (100, 100))
        print(repr(k), r.shape, r.dtype, bool((r == randn(rng_key, (100, 100))[1]).all()))
        rng_key, edges = randn(rng_key, (15, 3))
        norm_sum = 0
        for edge in edges:
            norm_sum += jnp.linalg.norm(edge)
        print(norm_sum)
        print(sum(jnp.linalg.norm(edge) for edge in edges))
        print(jnp.sum(jnp.array([jnp.linalg.norm(edge) for edge in edges])))
        norms = jnp.linalg.norm(edges, axis=-1)  # shape: (15,)
        norm_sum = jnp.sum(norms)
        print(repr(norm_sum))
        rng_key, batch = jit_randn(rng_key, (128, 3, 3))
        print(batch.shape, batch[0])
        rng_key, batch = jit_randn(rng_key, (64, 2, 2), dtype=complex)
        print(batch.dtype, batch[0])
        jax.config.update("jax_threefry_partitionable", True)
    """,
    "expo_grads": """
        def expo_fn(x, y):
            return x**4 + 2**y + 3
        x = 1.0
        y = 2.0
        grad_x_fn = jax.grad(expo_fn)
        grad2_x_fn = jax.grad(grad_x_fn)
        grad3_x_fn = jax.grad(grad2_x_fn)
        print(grad_x_fn(x, y).item(), grad2_x_fn(x, y).item(), grad3_x_fn(x, y).item())
        print(repr(jax.grad(jax.grad(jax.grad(expo_fn)))(1.0, 2.0)))
        grad_y_fn = jax.grad(expo_fn, argnums=1)
        grad_xy_fn = jax.grad(expo_fn, argnums=(0, 1))
        print(grad_y_fn(x, y).item(), [g.item() for g in grad_xy_fn(x, y)])
        print(grad_xy_fn(x, y))
        print(jax.make_jaxpr(grad_xy_fn)(x, y))
    """,
    "value_and_grad_aux": """
        def expo_fn(x, y):
            return x**4 + 2**y + 3
        x = 1.0
        y = 2.0
        result_grad_fn = jax.value_and_grad(expo_fn)
        result, grad = result_grad_fn(x, y)
        print(repr(result), repr(grad))
        def poly_fn_and_aux(x, y):
            aux_output = ({'y': y}, 1337)
            return x**4 + (y - 1)**2 + 3, aux_output
        grad_aux_fn = jax.grad(poly_fn_and_aux, has_aux=True)
        grad, aux = grad_aux_fn(x, y)
        print(repr(grad), aux)
        result_aux_grad_fn = jax.value_and_grad(poly_fn_and_aux, has_aux=True)
        (result, aux), grad = result_aux_grad_fn(x, y)
        print(repr(result), aux, repr(grad))
        print(jax.make_jaxpr(result_aux_grad_fn)(x, y))
    """,
    "spectral_radius": _SPECTRAL + """
        def round_tree(tree, decimals):
            if isinstance(tree, list):
                return tuple(round_tree(t, decimals) for t in tree)
            if isinstance(tree, complex):
                return complex(round(tree.real, decimals), round(tree.imag, decimals))
            return round(tree, decimals)
        # Eigenvalues: 1 +- i
        ceig_mat = np.array([[1.0, -1.0], [1.0, 1.0]])
        jax_mat = jnp.array(ceig_mat)
        print(jax_mat.dtype, jax_spectral_radius(jax_mat).item(), np.sqrt(2))
        two_f32 = np.array(2, dtype=np.float32)
        print('{:.16f}'.format(np.sqrt(two_f32)))
        decimals = 3
        jax_grad = jax.grad(jax_spectral_radius)(jax_mat)
        print(round_tree(jax_grad.tolist(), decimals))
        complex_mat = np.array([[1 + 1j, -1], [1, 1]])
        jax_complex_mat = jnp.array(complex_mat)
        print(jax_complex_mat.dtype, jax_spectral_radius(jax_complex_mat).item())
        jax_grad = jax.grad(jax_spectral_radius)(jax_complex_mat)
        jax_conj_grad = jax.tree_util.tree_map(jnp.conj, jax_grad)
        print(round_tree(jax_grad.tolist(), decimals))
        print(round_tree(jax_conj_grad.tolist(), decimals))
        jax.config.update("jax_threefry_partitionable", True)
    """,
    "jit_side_effect": """
        def print_hello():
            print('Hello!')
        jax.jit(print_hello)()
        jit_print_hello = jax.jit(print_hello)
        jit_print_hello()
        jit_print_hello()
        print('... Hello? :(')
    """,
    "jit_static_self": """
        import functools
        class Counter:
            count = 0
            @functools.partial(jax.jit, static_argnums=(0,))
            def inc(self):
                self.count += 1
        a = Counter()
        print(a.count)
        a.inc()
        print(a.count)
        a.inc()
        print(a.count)
        a = Counter()
        print(a.count)
        a.inc()
        print(a.count)
        a.inc()
        print(a.count)
        def partial_jit(*args, **kwargs):
            return jax.jit(*args, static_argnums=(0,), **kwargs)
        class Counter:
            count = 0
            def inc(self):
                self.count += 1
        Counter.inc = partial_jit(Counter.inc)
        b = Counter()
        b.inc()
        b.inc()
        print(b.count)
    """,
    "sum_up": """
        def py_sum_up(limit):
            return sum(range(limit))
        def jax_sum_up(limit):
            return jnp.sum(jnp.arange(limit))
        limit = 50000
        jit_sum_up = jax.jit(jax_sum_up, static_argnums=(0,))
        def sum_up_const(limit):
            # Since we exclude the limit, subtract one instead of adding.
            return limit * (limit - 1) // 2
        print(py_sum_up(limit), jax_sum_up(limit).item(), jit_sum_up(limit).item(),
              sum_up_const(limit))
        print(repr(jit_sum_up(limit)))
    """,
    "vmap_spectral": _SPECTRAL + """
        rng_key = jax.random.PRNGKey(0)
        rng_key, batch = jit_randn(rng_key, (128, 3, 3))
        assert jax_spectral_radius(batch).shape != (128,)
        def looped_spectral_radius(batch):
            return list(map(jax_spectral_radius, batch))
        jit_looped_spectral_radius = jax.jit(looped_spectral_radius)
        batched_spectral_radius = jax.vmap(jax_spectral_radius)
        jit_batched_spectral_radius = jax.jit(batched_spectral_radius)
        def jax_manually_batched_spectral_radius(mat):
            eigvals = jnp.linalg.eigvals(mat)
            spectral_radius = jnp.max(jnp.abs(eigvals), -1)
            return spectral_radius
        jax_jit_manually_batched_spectral_radius = jax.jit(
            jax_manually_batched_spectral_radius)
        print(jnp.stack(looped_spectral_radius(batch))[:6])
        print(jnp.stack(jit_looped_spectral_radius(batch))[:6])
        print(batched_spectral_radius(batch)[:6])
        print(repr(jit_batched_spectral_radius(batch)[-6:]))
        print(jax_manually_batched_spectral_radius(batch)[:6])
        print(jax_jit_manually_batched_spectral_radius(batch).block_until_ready()[-6:])
        np_batch = np.array(batch)
        print(np_batch.shape, np_batch.dtype)
        jax.config.update("jax_threefry_partitionable", True)
    """,
    "mlp_training": _SPECTRAL + _MLP_SETUP + """
        opt_state = orig_opt_state
        batch_size = 64
        batch_shape = (batch_size,) + input_shape
        steps = 6
        log_step_interval = 2
        for step in range(steps):
            rng_key, batch = jit_randn(rng_key, batch_shape, dtype=complex)
            opt_state, loss = train_batch(step, opt_state, batch)
            if step % log_step_interval == 0:
                print('step ', step, '; loss ', loss, sep='')

        world_size = jax.device_count()
        assert batch_size % world_size == 0
        local_batch_size = batch_size // world_size
        batch = batch.reshape((world_size, local_batch_size) + batch.shape[1:])
        print('Training with', world_size, jax.process_count(), batch.shape, batch.dtype)

        params = get_params(opt_state)
        jit_model = jax.jit(model)
        ceig_mat = jnp.array([[1.0, -1.0], [1.0, 1.0]])
        batched_ceig_mat = jnp.expand_dims(ceig_mat, 0)
        print(jax_spectral_radius(ceig_mat).item(), jit_model(params, batched_ceig_mat)[0].item())
        jax.config.update("jax_threefry_partitionable", True)
    """,
    # ---- 003: tracers, JIT compilation and sharp edges -------------------------------------------
    "fn_print_tracer": """
        @jax.jit
        def fn(tuple_arr):
            print(tuple_arr)   # Let's print out the input we passed to the function
            return jnp.sum(tuple_arr ** 2 - tuple_arr ** 3 - tuple_arr)
        print(fn(jnp.ones(100)))
        print(jax.make_jaxpr(fn)(jnp.ones(100)))
        print(fn(jnp.ones(1000)))
        print(fn(jnp.ones(1000)))
    """,
    # ---- 004: overview of JAX --------------------------------------------------------------------
    "bad_functions": """
        import os
        @jax.jit
        def bad_function_1(x):
            w = os.write('temp.txt', 'test') # Don't make side effects
        @jax.jit
        def bad_function_2(x):
            x[2] = 1 # Can't modify x
        try:
            bad_function_1(jnp.arange(3))
        except TypeError as e:
            print(type(e).__name__)
        try:
            bad_function_2(jnp.arange(3))
        except TypeError as e:
            print(type(e).__name__, "x.at[idx].set(y)" in str(e).replace("``", ""))
    """,
    "random_state": """
        jax.config.update("jax_threefry_partitionable", False)
        key = jax.random.key(42) # Create random key.
        print('Random with state `key`: ', jax.random.normal(key))
        print('Random with state `key`: ', jax.random.normal(key))
        key2 = jax.random.fold_in(key, 43) # Introduce additional seed.
        print('Random with state `key2`: ', jax.random.normal(key2))
        new_key, new_key2 = jax.random.split(key) # Generates two new random keys.
        print('Random with state `new_key`: ', jax.random.normal(new_key))
        print('Random with state `new_key2`: ', jax.random.normal(new_key2))
        jax.config.update("jax_threefry_partitionable", True)
        print(jax.random.normal(key), jax.random.normal(key2))
    """,
}


def _run(code, jax_mod, jnp_mod):
  out = io.StringIO()
  try:
    with contextlib.redirect_stdout(out):
      exec(textwrap.dedent(code), {"jax": jax_mod, "jnp": jnp_mod, "np": np})
  finally:   # a failing legacy-mode snippet must not leave that mode on for other tests
    jax_mod.config.update("jax_threefry_partitionable", True)
  return out.getvalue()


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_spec_snippet_prints_like_jax(name):
  expected = _run(SNIPPETS[name], real_jax, real_jnp)
  actual = _run(SNIPPETS[name], arrax, anp)
  assert actual == expected


# ---- 001 section 8: data-parallel training with pmap, on 4 simulated CPU devices -------------
# The main test process has one device, so these run in a fresh interpreter whose XLA_FLAGS ask
# for 4 CPU devices (set before jaxlib is imported), once with each library.
MULTI_DEVICE_SNIPPETS = {
    "distributed_training": _SPECTRAL + _MLP_SETUP + """
        batch_axis = 'batch'
        def distributed_train_batch(step, opt_state, batch):
            params = get_params(opt_state)
            loss, grad = jax.value_and_grad(batch_loss)(params, batch)
            # This is the only line we had to add to `train_batch`.
            loss, grad = jax.lax.pmean((loss, grad), batch_axis)
            # Conjugate gradient for steepest-descent optimization.
            grad = jax.tree_util.tree_map(jnp.conj, grad)
            opt_state = opt_update(step, grad, opt_state)
            return opt_state, loss
        # `pmap` also `jit`s our function.
        pmap_train_batch = jax.pmap(
            distributed_train_batch,
            batch_axis,
            in_axes=(None, None, 0),
            out_axes=(None, None),
        )
        world_size = jax.device_count()
        opt_state = orig_opt_state
        batch_size = 64
        batch_shape = (batch_size,) + input_shape
        assert batch_size % world_size == 0
        local_batch_size = batch_size // world_size
        steps = 6
        log_step_interval = 2
        for step in range(steps):
            rng_key, batch = jit_randn(rng_key, batch_shape, dtype=complex)
            batch = batch.reshape((world_size, local_batch_size) + batch.shape[1:])
            opt_state, loss = pmap_train_batch(step, opt_state, batch)
            if step % log_step_interval == 0:
                print('step ', step, '; loss ', loss, sep='')
        print('Training with', world_size, jax.process_count(), batch.shape, batch.dtype)
        print(loss.shape, loss.dtype, type(loss.sharding).__name__, loss.sharding.spec,
              len(loss.sharding.device_set))
        params = get_params(opt_state)
        print(np.round(np.asarray(params[1][0][0, :4]), 5))
        jit_model = jax.jit(model)
        ceig_mat = jnp.array([[1.0, -1.0], [1.0, 1.0]])
        batched_ceig_mat = jnp.expand_dims(ceig_mat, 0)
        print(round(jit_model(params, batched_ceig_mat)[0].item(), 5))
        jax.config.update("jax_threefry_partitionable", True)
    """,
}

_MULTI_DEVICE_RUNNER = """
import sys
sys.path.insert(0, {root!r})
import tests.test_spec_examples as t
lib = sys.argv[1]
if lib == "jax":
    mods = (t.real_jax, t.real_jnp)
else:
    mods = (t.arrax, t.anp)
sys.stdout.write(t._run(t.MULTI_DEVICE_SNIPPETS[sys.argv[2]], *mods))
"""


@pytest.mark.parametrize("name", sorted(MULTI_DEVICE_SNIPPETS))
def test_spec_multi_device_snippet_prints_like_jax(name):
  root = str(pathlib.Path(__file__).resolve().parents[1])
  env = dict(os.environ, XLA_FLAGS=xla_flags(4),
             PYTHONPATH=root)
  code = _MULTI_DEVICE_RUNNER.format(root=root)
  outs = []
  for lib in ("jax", "arrax"):
    res = subprocess.run([sys.executable, "-c", code, lib, name], capture_output=True, text=True,
                         env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    outs.append(res.stdout)
  assert "Training with 4" in outs[0]
  assert outs[1] == outs[0]
