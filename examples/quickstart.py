"""arrax quickstart: jit, make_jaxpr, the compiled HLO, and a timing against NumPy.

Run with `make demo`. The same code runs on JAX with `import jax; import jax.numpy as jnp`.
"""
import time

import numpy as np

import arrax as jax
import arrax.numpy as jnp


@jax.jit
def quadratic_formula(a, b):
  return (-b + jnp.sqrt(b**2 - 4 * a)) / (2 * a)


def main():
  print("devices:", jax.devices(), "backend:", jax.default_backend())

  x = jnp.array([1, 2, 0, 5])
  y = jnp.array([5, 2, 3, 1])
  print("x * 2 =", x * 2)
  print("x @ y =", x @ y)
  print("y[:2] =", y[:2])

  print("\nThe jaxpr of 2 + sin(x):")
  print(jax.make_jaxpr(lambda x: 2 + jnp.sin(x))(jnp.array(1.0)))

  print("\nquadratic_formula(1.0, 4.0) =", quadratic_formula(1.0, 4.0))
  print("\nIts StableHLO:")
  lowered = quadratic_formula.lower(1.0, 4.0)
  print(lowered.as_text())
  print("The optimized HLO XLA compiled (note the fusion):")
  print(lowered.compile().as_text())

  n = 1_000_000
  a_np = np.ones(n, np.float32)
  b_np = np.linspace(3, 5, n, dtype=np.float32)
  a, b = jnp.asarray(a_np), jnp.asarray(b_np)
  quadratic_formula(a, b).block_until_ready()   # compile once

  def timeit(fn, number=20):
    start = time.perf_counter()
    for _ in range(number):
      fn()
    return (time.perf_counter() - start) / number

  t_arrax = timeit(lambda: quadratic_formula(a, b).block_until_ready())
  t_numpy = timeit(lambda: (-b_np + np.sqrt(b_np**2 - 4 * a_np)) / (2 * a_np))
  print(f"quadratic formula on {n:,} elements: arrax jit {t_arrax * 1e3:.2f} ms, "
        f"NumPy {t_numpy * 1e3:.2f} ms ({t_numpy / t_arrax:.1f}x)")
  np.testing.assert_allclose(np.asarray(quadratic_formula(a, b)),
                             (-b_np + np.sqrt(b_np**2 - 4 * a_np)) / (2 * a_np), rtol=1e-5)
  print("results agree with NumPy.")


if __name__ == "__main__":
  main()
