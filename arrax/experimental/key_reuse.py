"""arrax.experimental.key_reuse (`jax.experimental.key_reuse`): key-reuse checking of typed PRNG
keys, switched on with the `jax_debug_key_reuse` option (`arrax.debug_key_reuse`). The module
itself exports no public names, as in JAX; reuse is reported with arrax.errors.KeyReuseError.
"""
