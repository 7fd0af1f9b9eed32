"""arrax.experimental.source_mapper.generate_map: generate_sourcemaps."""
from arrax._src.source_mapper.generate_map import (
    SourceMapGeneratorFn as SourceMapGeneratorFn, generate_sourcemaps as generate_sourcemaps)
