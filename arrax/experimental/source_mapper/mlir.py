"""arrax.experimental.source_mapper.mlir: source maps of MLIR text."""
from arrax._src.source_mapper.mlir import (
    CALLSITE_REGEX as CALLSITE_REGEX, LOC_REGEX as LOC_REGEX, Location as Location,
    Redirect as Redirect, SCOPED_REGEX as SCOPED_REGEX, SRC_REGEX as SRC_REGEX,
    create_mlir_sourcemap as create_mlir_sourcemap, parse_mlir_locations as parse_mlir_locations)
