"""`jax._src.interpreters` compatibility: JAX's rule-registration interface over arrax's rule
slots (see `arrax/_src/interpreters/registry.py`), so libraries that define their own primitives
(equinox does) can register rules the way JAX's API lets them."""
