"""arrax.experimental.source_mapper.jaxpr: the jaxpr pass."""
from arrax._src.source_mapper.jaxpr import (
    canonicalize_filename as canonicalize_filename, compile_jaxpr as compile_jaxpr,
    make_jaxpr_dump as make_jaxpr_dump)
