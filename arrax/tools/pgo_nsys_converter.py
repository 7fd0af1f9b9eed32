"""arrax.tools.pgo_nsys_converter (`jax.tools.pgo_nsys_converter`): a script converting NVIDIA
Nsight Systems profiles for XLA's profile-guided latency estimator
(`python -m arrax.tools.pgo_nsys_converter --profile_path P --pgle_output_path OUT.pbtxt`)."""
from arrax._src.pgo_nsys_converter import _main as _main

if __name__ == "__main__":
  _main()
