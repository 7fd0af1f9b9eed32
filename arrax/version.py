"""arrax.version (`jax.version`): the JAX API version arrax implements.

arrax's own release number is `arrax.__arrax_version__`."""


def _version_as_tuple(version):
  return tuple(int(p) for p in version.split("."))


_version = "0.10.2"
__version__ = _version
__version_info__ = _version_as_tuple(_version)
# As JAX 0.10.2 reports it (arrax itself requires jaxlib 0.10.2 exactly).
_minimum_jaxlib_version = "0.10.1"
_minimum_jaxlib_version_info = _version_as_tuple(_minimum_jaxlib_version)
