"""arrax.extend.source_info_util (`jax.extend.source_info_util`)."""
from arrax._src.source_info_util import (
    NameStack as NameStack,
    SourceInfo as SourceInfo,
    current as current,
    current_name_stack as current_name_stack,
    extend_name_stack as extend_name_stack,
    new_name_stack as new_name_stack,
    new_source_info as new_source_info,
    register_exclusion as register_exclusion,
    reset_name_stack as reset_name_stack,
    set_name_stack as set_name_stack,
    summarize as summarize,
    transform_name_stack as transform_name_stack,
    user_context as user_context,
)
