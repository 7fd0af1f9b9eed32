"""jax.experimental.control_deps: XLA control dependencies between operations, as a
side-effecting `control_dep` custom call that XLA's control-dep rewriter turns into control
predecessors."""
from __future__ import annotations

from arrax._src.ffi import ffi_call


def control_dep(src, dst):
  """Make the operation producing `dst` run after the one producing `src`."""
  return ffi_call("control_dep", (), has_side_effect=True)(src, dst)


def schedule(ops):
  """Order the operations producing `ops` as listed (control dependencies between neighbours)."""
  for src, dst in zip(ops[:-1], ops[1:]):
    control_dep(src, dst)
