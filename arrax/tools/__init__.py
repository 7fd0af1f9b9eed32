"""arrax.tools (`jax.tools`): command-line tools. JAX's `pgo_nsys_converter` (converting NVIDIA
Nsight Systems GPU profiles for XLA's latency estimator) has no counterpart: arrax runs on the
CPU, where there is no such profile to convert."""
