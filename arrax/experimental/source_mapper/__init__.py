"""arrax.experimental.source_mapper (`jax.experimental.source_mapper`): source maps from a
function's jaxpr, StableHLO, HLO and optimized HLO back to the Python lines that made them."""
from arrax._src.sourcemap import MappingsGenerator as MappingsGenerator, SourceMap as SourceMap
from arrax.experimental.source_mapper import common as common
from arrax.experimental.source_mapper.common import (
    Pass as Pass, SourceMapDump as SourceMapDump, all_passes as all_passes,
    compile_with_env as compile_with_env, filter_passes as filter_passes,
    register_pass as register_pass)
from arrax.experimental.source_mapper.generate_map import (
    generate_sourcemaps as generate_sourcemaps)
from arrax.experimental.source_mapper.mlir import create_mlir_sourcemap as create_mlir_sourcemap
# (the jaxpr and HLO passes register themselves)
from arrax.experimental.source_mapper import jaxpr as jaxpr
from arrax.experimental.source_mapper.jaxpr import canonicalize_filename as canonicalize_filename
from arrax.experimental.source_mapper import hlo as hlo
