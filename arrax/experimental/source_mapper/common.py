"""arrax.experimental.source_mapper.common: the pass registry."""
from arrax._src.source_mapper.common import (  # noqa: F401
    CompileFn as CompileFn, GenerateDumpFn as GenerateDumpFn, Pass as Pass,
    SourceMapDump as SourceMapDump, _pass_registry, all_passes as all_passes,
    compile_with_env as compile_with_env, filter_passes as filter_passes,
    flag_env as flag_env, register_pass as register_pass)
