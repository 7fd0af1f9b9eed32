"""arrax.experimental.source_mapper.hlo: the HLO passes."""
from arrax._src.source_mapper.hlo import (  # noqa: F401
    HloPass as HloPass, METADATA_REGEX as METADATA_REGEX, _parse_hlo_new_format,
    _parse_hlo_old_format, optimized_generate_dump as optimized_generate_dump,
    original_hlo_generate_dump as original_hlo_generate_dump, parse_hlo_dump as parse_hlo_dump,
    stable_hlo_generate_dump as stable_hlo_generate_dump, trace_and_lower as trace_and_lower)
