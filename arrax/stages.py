"""arrax.stages: the stages of a jitted function (Wrapped -> Traced -> Lowered -> Compiled)."""
from arrax._src.jit import (ArgInfo as ArgInfo, Compiled as Compiled,
                            CompilerOptions as CompilerOptions, Lowered as Lowered,
                            Traced as Traced, Wrapped as Wrapped)

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
