"""`jax.extend.xla`: user passes over the HLO module inside XLA's compilation pipeline.

jaxlib keeps the registered passes in the process (XLA's CPU compiler runs them), so a pass
registered here also runs when a jax in the same process compiles for the CPU, as it would if
registered through jax."""
from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

import jaxlib._xla as _xla


class PipelineStage(enum.Enum):
  """Where in XLA's pipeline a pass runs: before or after instruction scheduling."""
  PRE_SCHEDULER = 0
  POST_SCHEDULER = 1


def _cpu_in(platforms) -> bool:
  if platforms is None:
    return True
  return "cpu" in ([platforms] if isinstance(platforms, str) else list(platforms))


def _stage(stage):
  if not isinstance(stage, PipelineStage):
    raise TypeError(f"stage must be a PipelineStage enum, got {type(stage)}")
  return stage.value


def register_hlo_module_transformation(callback: Callable[[bytes], bytes | None], *, name: str,
                                       stage: PipelineStage = PipelineStage.PRE_SCHEDULER,
                                       platforms: Sequence[str] | str | None = None) -> None:
  """Run `callback(serialized HloModuleProto) -> new serialized module or None (unchanged)`
  as the compiler pass `name` at `stage` of every later compilation for `platforms` (arrax
  compiles for the CPU only; other platforms are accepted and ignored)."""
  stage_int = _stage(stage)
  if _cpu_in(platforms):
    _xla.register_xla_transform(name, stage_int, callback)


def clear_hlo_module_transformation(name: str,
                                    stage: PipelineStage = PipelineStage.PRE_SCHEDULER,
                                    platforms: Sequence[str] | str | None = None) -> bool:
  """Remove the pass `name` registered at `stage`; whether one was found."""
  stage_int = _stage(stage)
  return bool(_xla.clear_xla_transform(name, stage_int)) if _cpu_in(platforms) else False
