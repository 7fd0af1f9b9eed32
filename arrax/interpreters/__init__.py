"""arrax.interpreters (`jax.interpreters`): JAX's rule-registration tables over arrax's rule
slots, for libraries that define their own primitives."""
from arrax.interpreters import ad as ad, batching as batching, mlir as mlir
from arrax.interpreters import partial_eval as partial_eval, pxla as pxla, xla as xla
