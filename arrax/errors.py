"""Errors arrax raises (the same classes as jax.errors)."""
from jaxlib._jax import JaxRuntimeError

from arrax._src.errors import (ConcretizationTypeError, InconclusiveDimensionOperation,
                               JAXIndexError, JaxprTypeError, JAXTypeError, KeyReuseError,
                               NonConcreteBooleanIndexError, TracerArrayConversionError,
                               TracerBoolConversionError, TracerIntegerConversionError,
                               UnexpectedTracerError)

__all__ = ["ConcretizationTypeError", "InconclusiveDimensionOperation", "JAXIndexError",
           "JAXTypeError", "JaxRuntimeError", "JaxprTypeError", "KeyReuseError",
           "NonConcreteBooleanIndexError", "TracerArrayConversionError",
           "TracerBoolConversionError", "TracerIntegerConversionError", "UnexpectedTracerError"]
