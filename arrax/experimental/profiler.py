"""arrax.experimental.profiler (jax.experimental.profiler)."""
from jaxlib import _profiler


def get_profiled_instructions_proto(tensorboard_dir: str) -> bytes:
  """The serialized ProfiledInstructionsProto of the profile in `tensorboard_dir`
  (`<log_dir>/plugin/profile/<run_dir>/`, as written by `arrax.profiler.trace`); XLA fills it
  only for GPU programs, so on CPU it is empty."""
  return _profiler.get_profiled_instructions_proto(tensorboard_dir)
