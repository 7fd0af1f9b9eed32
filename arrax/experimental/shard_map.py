"""arrax.experimental.shard_map: the deprecated home of shard_map (use arrax.shard_map)."""
from arrax._src import shard_map as _shmap
from arrax._src.deprecations import deprecation_getattr as _deprecation_getattr


def _legacy_shard_map(f, mesh, in_specs, out_specs, check_rep=True):
  """Deprecated: use `jax.shard_map` (check_rep is its check_vma)."""
  return _shmap._shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                           axis_names=set(), check_vma=check_rep)


_legacy_shard_map.__name__ = "shard_map"


__getattr__ = _deprecation_getattr(__name__, {"shard_map": (
    "jax.experimental.shard_map is deprecated in v0.8.0. Used jax.shard_map instead.",
    _legacy_shard_map)})
