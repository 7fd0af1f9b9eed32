"""arrax.experimental.shard_map: the deprecated home of shard_map (use arrax.shard_map)."""
import warnings as _warnings

from arrax._src import shard_map as _shmap


def _legacy_shard_map(f, mesh, in_specs, out_specs, check_rep=True):
  """Deprecated: use `jax.shard_map` (check_rep is its check_vma)."""
  return _shmap._shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                           axis_names=set(), check_vma=check_rep)


_legacy_shard_map.__name__ = "shard_map"


def __getattr__(name):
  if name == "shard_map":
    _warnings.warn("jax.experimental.shard_map is deprecated in v0.8.0. Used jax.shard_map "
                   "instead.", DeprecationWarning, stacklevel=2)
    return _legacy_shard_map
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
