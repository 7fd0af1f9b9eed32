"""arrax.experimental.random (jax.experimental.random): a stateful generator."""
from arrax._src.random_stateful import (StatefulPRNG as StatefulPRNG,
                                        stateful_rng as stateful_rng)
