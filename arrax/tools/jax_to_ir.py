"""arrax.tools.jax_to_ir (`jax.tools.jax_to_ir`): a function to serialized HLO, and its CLI
(`python -m arrax.tools.jax_to_ir --fn mod.f --input_shapes ... --ir_dest ...`)."""
from arrax._src.jax_to_ir import (
    _DT as _DT,
    _SHAPE_RE as _SHAPE_RE,
    _run as _run,
    jax_to_hlo as jax_to_hlo,
    jax_to_ir as jax_to_ir,
    jax_to_tf as jax_to_tf,
    main as main,
    parse_shape_str as parse_shape_str,
    set_up_flags as set_up_flags,
    tf_wrap_with_input_names as tf_wrap_with_input_names,
)

__all__ = ["jax_to_hlo", "jax_to_ir", "jax_to_tf", "main", "parse_shape_str", "set_up_flags",
           "tf_wrap_with_input_names"]

if __name__ == "__main__":
  _run()
