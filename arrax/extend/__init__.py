"""arrax.extend (`jax.extend`): interfaces for libraries that extend the system (their own
primitives, jaxpr manipulation, lowering, backends)."""
from arrax.extend import backend as backend, core as core, linear_util as linear_util
from arrax.extend import source_info_util as source_info_util
from arrax.extend import lowering as lowering, mlir as mlir, random as random
from arrax.extend import pallas as pallas, sharding as sharding, xla as xla
