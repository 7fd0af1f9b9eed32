"""arrax.experimental.pjit: the deprecated home of pjit (use arrax.jit)."""
from arrax._src import jit as _jit_mod
from arrax._src.deprecations import deprecation_getattr as _deprecation_getattr


def _pjit(fun, in_shardings=_jit_mod._UNSPECIFIED, out_shardings=_jit_mod._UNSPECIFIED,
          static_argnums=None, static_argnames=None, donate_argnums=None, donate_argnames=None,
          keep_unused=False, device=None, backend=None, inline=False, compiler_options=None):
  """Deprecated: `jax.jit` with the same arguments (here they may also be positional)."""
  return _jit_mod.jit(fun, in_shardings=in_shardings, out_shardings=out_shardings,
                      static_argnums=static_argnums, static_argnames=static_argnames,
                      donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                      keep_unused=keep_unused, device=device, backend=backend, inline=inline,
                      compiler_options=compiler_options)


_pjit.__name__ = _pjit.__qualname__ = "pjit"


__getattr__ = _deprecation_getattr(__name__, {"pjit": (
    "jax.experimental.pjit.pjit has been deprecated. Please use `jax.jit` instead.", _pjit)})
