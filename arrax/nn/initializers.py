"""Parameter initializers (jax.nn.initializers): `init(key, shape, dtype=float32) -> Array`."""
from arrax._src.nn.initializers import (Initializer, constant, delta_orthogonal, glorot_normal,
                                        glorot_uniform, he_normal, he_uniform, kaiming_normal,
                                        kaiming_uniform, lecun_normal, lecun_uniform, normal,
                                        ones, orthogonal, truncated_normal, uniform,
                                        variance_scaling, xavier_normal, xavier_uniform, zeros)

__all__ = [
    "Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
    "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
    "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
    "variance_scaling", "xavier_normal", "xavier_uniform", "zeros",
]
