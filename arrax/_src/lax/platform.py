"""`platform_dependent`: code chosen by the platform a computation is compiled for.

Every branch is traced and staged, as in JAX: a `platform_index` primitive (the index of the
branch for the compilation platform, resolved when lowering) selects among them through a
`cond` carrying `branches_platforms`, whose lowering keeps only that branch. Run eagerly, the
index is known at once and the chosen branch is called directly. arrax compiles for the CPU.
"""
from __future__ import annotations

import numpy as np

from arrax._src import core, mlir
from arrax._src.core import ShapedArray
from arrax._src.lax.control_flow import conditionals

__all__ = ["platform_dependent"]

platform_index_p = core.Primitive("platform_index")
platform_index_p.def_abstract_eval(lambda *, platforms: ShapedArray((), np.int32))


@platform_index_p.def_lowering
def _platform_index_lower(ctx, *, platforms):
  index = conditionals.platform_branch(platforms, f"platform_index(platforms={platforms})")
  return [mlir.ir_constant(np.int32(index))]


# Nullary: nothing can be batched or carry a tangent.
platform_index_p.def_batch(lambda args, dims, **params: (platform_index_p.bind(**params), None))


def platform_dependent(*args, default=None, **per_platform):
  """per_platform[platform](*args) for the platform the computation runs on ('cpu', 'tpu',
  'cuda', 'rocm', ...), else default(*args). All branches are traced."""
  platforms, branches = [], []
  for name, branch in per_platform.items():
    if not callable(branch):
      raise TypeError(f"lax.platform_dependent: the '{name}' branch must be a callable.")
    if name == "gpu":
      raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
    for names, b in zip(platforms, branches):   # one branch for the platforms sharing it
      if b == branch:
        names.append(name)
        break
    else:
      platforms.append([name])
      branches.append(branch)
  branches_platforms = tuple(tuple(names) for names in platforms)
  if default is not None:
    if not callable(default):
      raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
    branches.append(default)
    branches_platforms += (None,)
  index = platform_index_p.bind(platforms=branches_platforms)
  if core.is_concrete(index):
    return branches[int(np.asarray(index))](*args)
  return conditionals.switch_traced(index, branches, args, branches_platforms=branches_platforms)
