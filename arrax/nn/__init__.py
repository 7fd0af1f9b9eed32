"""Common neural-network functions (jax.nn): activations, softmax family, one_hot."""
from arrax.numpy import tanh as tanh
from arrax.nn import initializers as initializers
from arrax._src.nn.functions import (celu, elu, gelu, glu, hard_sigmoid, hard_silu, hard_swish,
                                     hard_tanh, identity, leaky_relu, log1mexp, log_sigmoid,
                                     log_softmax, logmeanexp, logsumexp, mish, one_hot, relu,
                                     relu6, selu, sigmoid, silu, soft_sign, softmax, softplus,
                                     sparse_plus, sparse_sigmoid, squareplus, standardize, swish,
                                     dot_product_attention)
from arrax._src.nn.scaled_matmul import (
    get_scaled_dot_general_config as get_scaled_dot_general_config,
    scaled_dot_general as scaled_dot_general, scaled_matmul as scaled_matmul)

__all__ = [
    "celu", "dot_product_attention", "elu", "gelu", "get_scaled_dot_general_config", "glu",
    "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "identity", "initializers",
    "leaky_relu", "log1mexp", "log_sigmoid", "log_softmax", "logmeanexp", "logsumexp", "mish",
    "one_hot", "relu", "relu6", "scaled_dot_general", "scaled_matmul", "selu", "sigmoid", "silu",
    "soft_sign", "softmax", "softplus", "sparse_plus", "sparse_sigmoid", "squareplus",
    "standardize", "swish", "tanh",
]
