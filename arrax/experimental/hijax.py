"""arrax.experimental.hijax (`jax.experimental.hijax`): operations and value types defined in
terms of arrax's own operations (see arrax/_src/hijax.py for what is supported)."""
from arrax._src.core import AbstractRef as AbstractRef
from arrax._src.hijax import (AbstractValue as AbstractValue, AvalMutableQDD as AvalMutableQDD,
                              AvalQDD as AvalQDD, HiPrimitive as HiPrimitive,
                              HiPspec as HiPspec, HiType as HiType,
                              MutableHiType as MutableHiType, ShapedArray as ShapedArray,
                              VJPHiPrimitive as VJPHiPrimitive, Zero as Zero,
                              aval_method as aval_method, aval_property as aval_property,
                              control_flow_allowed_effects as control_flow_allowed_effects,
                              instantiate_zeros as instantiate_zeros,
                              is_undefined_primal as is_undefined_primal,
                              register_hitype as register_hitype)
from arrax._src.state.primitives import RefView as TransformedRef
